//! The line editor: rustyline with one helper for completion, hints, highlighting and
//! validation, plus the key bindings the shell promises (Ctrl+C, Ctrl+J, Alt+Enter,
//! Shift+Enter).

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rustyline::completion::{Completer, Pair};
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};

use crate::repl::modified_keys::ModifiedKeys;
use crate::repl::popup::Popup;
use crate::repl::view::MenuKey;
use rustyline::{
    Cmd, ConditionalEventHandler, Context, Event, EventContext, EventHandler, Helper, KeyCode,
    KeyEvent, Modifiers, Movement, RepeatCount,
};

/// Completion: `(line, cursor) -> (start of the replaced word, candidates)`.
pub type CompleteFn = dyn Fn(&str, usize) -> (usize, Vec<Pair>) + Send + Sync;
/// A dim hint after the cursor (e.g. a command's argument hint).
pub type HintFn = dyn Fn(&str, usize) -> Option<String> + Send + Sync;

pub struct LineHelper {
    complete: Box<CompleteFn>,
    hint: Box<HintFn>,
    /// Whether the line being edited is empty; read when an approval arrives, so text the
    /// person was already typing is treated as their next message, not as the answer.
    line_empty: Arc<AtomicBool>,
    /// Keeps the line as drawn, for a read begun again under a new prompt.
    typed: Arc<crate::repl::reprompt::Reprompt>,
    color: bool,
}

impl LineHelper {
    pub fn new(
        complete: Box<CompleteFn>,
        hint: Box<HintFn>,
        line_empty: Arc<AtomicBool>,
        typed: Arc<crate::repl::reprompt::Reprompt>,
        color: bool,
    ) -> Self {
        LineHelper {
            complete,
            hint,
            line_empty,
            typed,
            color,
        }
    }
}

impl Completer for LineHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        Ok((self.complete)(line, pos))
    }
}

impl Hinter for LineHelper {
    type Hint = String;

    fn hint(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> Option<String> {
        // Called on every refresh of the line, which makes it the one place that always
        // knows whether the person is mid-typing.
        self.line_empty.store(line.is_empty(), Ordering::Relaxed);
        self.typed.record(line, pos);
        (self.hint)(line, pos)
    }
}

impl Highlighter for LineHelper {
    /// Dim, but for the popup's chosen row, which is bold (see `popup`).
    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        if !self.color {
            return Cow::Borrowed(hint);
        }
        let rows: Vec<String> = hint
            .split('\n')
            .map(|row| {
                if row.is_empty() {
                    String::new()
                } else if row.starts_with(crate::repl::popup::CHOSEN) {
                    format!("\x1b[1m{row}\x1b[0m")
                } else {
                    format!("\x1b[2m{row}\x1b[0m")
                }
            })
            .collect();
        Cow::Owned(rows.join("\n"))
    }

    fn highlight_char(&self, line: &str, pos: usize, _kind: CmdKind) -> bool {
        // Asked on every cursor move (the hint only when the text changes): where the cursor
        // stands, for a read begun again under a new prompt.
        self.typed.record(line, pos);
        false
    }
}

impl Validator for LineHelper {
    /// A trailing `\` continues the line, as in a shell.
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        if ctx.input().ends_with('\\') {
            Ok(ValidationResult::Incomplete)
        } else {
            Ok(ValidationResult::Valid(None))
        }
    }
}

impl Helper for LineHelper {}

/// Ctrl+C clears a non-empty line; on an empty line it interrupts (the REPL then cancels a
/// running turn, or hints, or exits on the second press).
struct CtrlC(Arc<crate::repl::reprompt::Reprompt>);

impl ConditionalEventHandler for CtrlC {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        if ctx.line().is_empty() {
            self.0.person_interrupts();
            Some(Cmd::Interrupt)
        } else {
            Some(Cmd::Kill(Movement::WholeBuffer))
        }
    }
}

/// Ctrl+O: ends the read, keeping the line and cursor, so the editor thread can show the
/// transcript (see `transcript::Viewer`); the read then starts again with them.
struct OpenTranscript(crate::repl::transcript::Request);

impl ConditionalEventHandler for OpenTranscript {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        *crate::session::lock(&self.0) = Some((ctx.line().to_string(), ctx.pos()));
        Some(Cmd::Interrupt)
    }
}

/// Two presses of Esc within this long are one "Esc Esc".
pub const ESC_AGAIN: std::time::Duration = std::time::Duration::from_millis(1500);

/// Esc: with the popup open, close it; on an approval menu (empty line), deny; while a turn
/// runs, to the shell (interrupt; again: drop the queue too); at an empty prompt, twice in a
/// row, the rewind picker — the read ends, with `rewind` set, for the editor thread to show
/// it.
struct EscKey {
    popup: Popup,
    busy: Arc<AtomicBool>,
    keys: tokio::sync::mpsc::UnboundedSender<Key>,
    menu: MenuActive,
    last_idle: Mutex<Option<std::time::Instant>>,
    rewind: Arc<AtomicBool>,
}

impl ConditionalEventHandler for EscKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        if self.popup.close(ctx.line()) {
            return Some(Cmd::Repaint);
        }
        if ctx.line().is_empty() && (self.menu)().is_some() {
            let _ = self.keys.send(Key::Menu(MenuKey::Deny));
        } else if self.busy.load(Ordering::Relaxed) {
            let _ = self.keys.send(Key::Esc);
        } else if ctx.line().is_empty() {
            let mut last = crate::session::lock(&self.last_idle);
            if last.is_some_and(|at| at.elapsed() < ESC_AGAIN) {
                *last = None;
                self.rewind.store(true, Ordering::SeqCst);
                return Some(Cmd::Interrupt);
            }
            *last = Some(std::time::Instant::now());
        }
        Some(Cmd::Noop)
    }
}

/// Keys the shell acts on while the person keeps editing their line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// Esc while a turn runs: interrupt it (the line being typed stays).
    Esc,
    /// Shift+Tab: the next permission mode.
    CycleMode,
    /// A key for the approval menu (see `view::menu`).
    Menu(crate::repl::view::MenuKey),
    /// Ctrl+T: print the agent's todo list.
    ShowTodos,
}

/// Whether the approval menu takes keys now (a request waits and the person is not in the
/// middle of typing a message): `Some(once_only)` then, `once_only` when only "once" and
/// "no" can answer it.
pub type MenuActive = Arc<dyn Fn() -> Option<bool> + Send + Sync>;

/// Sends a [`Key`] to the shell and leaves the line as it is (Shift+Tab, Ctrl+T; Esc has
/// its own handler, [`EscKey`]).
struct SendKey {
    key: Key,
    keys: tokio::sync::mpsc::UnboundedSender<Key>,
}

impl ConditionalEventHandler for SendKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, _: &EventContext) -> Option<Cmd> {
        let _ = self.keys.send(self.key);
        Some(Cmd::Noop)
    }
}

/// A key that moves in or takes from the popup while it shows (↑↓, Enter), goes to the
/// approval menu while it takes keys and the line is empty, and does what it always does
/// otherwise (arrows walk the history, Enter submits, a digit or letter is typed: after the
/// first character, the line is a reason).
struct MenuOrDefault {
    key: MenuKey,
    menu: MenuActive,
    keys: tokio::sync::mpsc::UnboundedSender<Key>,
    popup: Popup,
}

impl ConditionalEventHandler for MenuOrDefault {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        let in_popup = match self.key {
            MenuKey::Up => self.popup.step(ctx.line(), -1).then_some(Cmd::Repaint),
            MenuKey::Down => self.popup.step(ctx.line(), 1).then_some(Cmd::Repaint),
            MenuKey::Enter => take_from(&self.popup, ctx),
            _ => None,
        };
        if in_popup.is_some() {
            return in_popup;
        }
        let answers = match ((self.menu)(), self.key) {
            (None, _) => false,
            // `a` and `p` are no answer to a request only "once" can answer: they start a
            // reason like any other letter.
            (Some(once_only), MenuKey::Letter(c)) => !once_only || matches!(c, 'y' | 'n'),
            (Some(_), _) => true,
        };
        if ctx.line().is_empty() && answers {
            let _ = self.keys.send(Key::Menu(self.key));
            Some(Cmd::Noop)
        } else {
            None
        }
    }
}

/// Tab: the popup's chosen entry into the line while it shows, completion otherwise.
struct TabKey(Popup);

impl ConditionalEventHandler for TabKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        take_from(&self.0, ctx)
    }
}

/// Completion, which offers only the popup's chosen entry while it shows (see
/// `Popup::take`): the editor then puts it in place of the word and the cursor after it.
fn take_from(popup: &Popup, ctx: &EventContext) -> Option<Cmd> {
    popup.shown(ctx.line()).then_some(Cmd::Complete)
}

/// An escape sequence rustyline does not know: maybe a modified key's report (see
/// `modified_keys`), else ignored, as rustyline would.
struct UnknownSequence(ModifiedKeys);

impl ConditionalEventHandler for UnknownSequence {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, _: &EventContext) -> Option<Cmd> {
        Some(self.0.unknown_sequence())
    }
}

/// A character: the rest of a modified key's report when one was cut short (see
/// `modified_keys`), else what `then` makes of it (an approval's choice for 1–4), else what
/// the key always does.
struct MaybeReport {
    keys: ModifiedKeys,
    then: Option<Box<dyn ConditionalEventHandler>>,
}

impl ConditionalEventHandler for MaybeReport {
    fn handle(
        &self,
        evt: &Event,
        n: RepeatCount,
        positive: bool,
        ctx: &EventContext,
    ) -> Option<Cmd> {
        let typed = match evt.get(0) {
            Some(KeyEvent(KeyCode::Char(c), _)) => Some(*c),
            _ => None,
        };
        if let Some(command) = typed.and_then(|c| self.keys.feed(c)) {
            return Some(command);
        }
        self.then
            .as_ref()
            .and_then(|then| then.handle(evt, n, positive, ctx))
    }
}

/// How long a lone Esc waits for the rest of an escape sequence (arrow keys and the like
/// arrive as Esc plus more bytes, within microseconds even over SSH).
pub const ESC_TIMEOUT_MS: u16 = 50;

/// What the key bindings act on.
pub struct Bound {
    /// Whether a turn runs (Esc interrupts it then).
    pub busy: Arc<AtomicBool>,
    /// Where Esc, Shift+Tab, Ctrl+T and the menu's keys go.
    pub keys: tokio::sync::mpsc::UnboundedSender<Key>,
    pub menu: MenuActive,
    /// Ctrl+O's request for the transcript viewer.
    pub transcript: crate::repl::transcript::Request,
    /// Esc Esc's request for the rewind picker.
    pub rewind: Arc<AtomicBool>,
    pub popup: Popup,
    /// Told when Ctrl+C is the person's (see `reprompt`).
    pub reprompt: Arc<crate::repl::reprompt::Reprompt>,
}

/// Installs the shell's key bindings.
pub fn bind_keys<H: Helper, I: rustyline::history::History>(
    editor: &mut rustyline::Editor<H, I>,
    bound: Bound,
) {
    let Bound {
        busy,
        keys,
        menu,
        transcript,
        rewind,
        popup,
        reprompt,
    } = bound;
    editor.bind_sequence(
        KeyEvent(KeyCode::Char('O'), Modifiers::CTRL),
        EventHandler::Conditional(Box::new(OpenTranscript(transcript))),
    );
    editor.bind_sequence(
        KeyEvent(KeyCode::Esc, Modifiers::NONE),
        EventHandler::Conditional(Box::new(EscKey {
            popup: popup.clone(),
            busy,
            keys: keys.clone(),
            menu: menu.clone(),
            last_idle: Mutex::new(None),
            rewind: rewind.clone(),
        })),
    );
    editor.bind_sequence(
        KeyEvent(KeyCode::BackTab, Modifiers::NONE),
        EventHandler::Conditional(Box::new(SendKey {
            key: Key::CycleMode,
            keys: keys.clone(),
        })),
    );
    let reports = ModifiedKeys::default();
    bind_modified_keys(editor, &reports);
    bind_menu_keys(editor, &menu, &keys, &popup, &reports);
    editor.bind_sequence(
        KeyEvent(KeyCode::Tab, Modifiers::NONE),
        EventHandler::Conditional(Box::new(TabKey(popup))),
    );
    // Ctrl+T: the todo list, at any time (rustyline's transpose-characters gives way).
    editor.bind_sequence(
        KeyEvent(KeyCode::Char('T'), Modifiers::CTRL),
        EventHandler::Conditional(Box::new(SendKey {
            key: Key::ShowTodos,
            keys: keys.clone(),
        })),
    );
    editor.bind_sequence(
        KeyEvent(KeyCode::Char('C'), Modifiers::CTRL),
        EventHandler::Conditional(Box::new(CtrlC(reprompt))),
    );
    editor.bind_sequence(
        KeyEvent(KeyCode::Char('J'), Modifiers::CTRL),
        EventHandler::Simple(Cmd::Newline),
    );
    editor.bind_sequence(
        KeyEvent(KeyCode::Enter, Modifiers::ALT),
        EventHandler::Simple(Cmd::Newline),
    );
}

/// Modified keys' reports (see `modified_keys`): the unknown sequence they begin as, and the
/// characters that may finish one — digits, `;`, `~` and, through `Event::Any`, every key
/// bound to nothing else. The digits 1–4 are bound with the approval menu's keys.
fn bind_modified_keys<H: Helper, I: rustyline::history::History>(
    editor: &mut rustyline::Editor<H, I>,
    keys: &ModifiedKeys,
) {
    editor.bind_sequence(
        KeyEvent(KeyCode::UnknownEscSeq, Modifiers::NONE),
        EventHandler::Conditional(Box::new(UnknownSequence(keys.clone()))),
    );
    let tail = ['0', '5', '6', '7', '8', '9', '~']
        .map(|c| Event::from(KeyEvent(KeyCode::Char(c), Modifiers::NONE)));
    for event in tail.into_iter().chain([Event::Any]) {
        editor.bind_sequence(
            event,
            EventHandler::Conditional(Box::new(MaybeReport {
                keys: keys.clone(),
                then: None,
            })),
        );
    }
}

/// The keys that move in and answer an approval's menu while one is shown (arrows, Enter,
/// a digit, a letter); otherwise each does what it always does. A digit may first be part
/// of a modified key's report (see `modified_keys`).
fn bind_menu_keys<H: Helper, I: rustyline::history::History>(
    editor: &mut rustyline::Editor<H, I>,
    menu: &MenuActive,
    keys: &tokio::sync::mpsc::UnboundedSender<Key>,
    popup: &Popup,
    reports: &ModifiedKeys,
) {
    let mut menu_keys = vec![
        (KeyEvent(KeyCode::Up, Modifiers::NONE), MenuKey::Up),
        (KeyEvent(KeyCode::Down, Modifiers::NONE), MenuKey::Down),
        (KeyEvent(KeyCode::Enter, Modifiers::NONE), MenuKey::Enter),
    ];
    for n in 1..=4u8 {
        let digit = char::from(b'0' + n);
        menu_keys.push((
            KeyEvent(KeyCode::Char(digit), Modifiers::NONE),
            MenuKey::Pick(usize::from(n)),
        ));
    }
    for letter in ['y', 'a', 'p', 'n'] {
        menu_keys.push((
            KeyEvent(KeyCode::Char(letter), Modifiers::NONE),
            MenuKey::Letter(letter),
        ));
    }
    for (event, key) in menu_keys {
        let menu_key: Box<dyn ConditionalEventHandler> = Box::new(MenuOrDefault {
            key,
            menu: menu.clone(),
            keys: keys.clone(),
            popup: popup.clone(),
        });
        let handler: Box<dyn ConditionalEventHandler> = match key {
            MenuKey::Pick(_) => Box::new(MaybeReport {
                keys: reports.clone(),
                then: Some(menu_key),
            }),
            _ => menu_key,
        };
        editor.bind_sequence(event, EventHandler::Conditional(handler));
    }
}

/// A submitted line with `\`-newline continuations turned into plain newlines.
pub fn join_continuations(line: &str) -> String {
    line.replace("\\\n", "\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn continuations_become_newlines() {
        assert_eq!(super::join_continuations("a \\\nb"), "a \nb");
        assert_eq!(super::join_continuations("a\nb"), "a\nb");
    }
}
