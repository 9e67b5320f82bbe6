//! The line editor's side of the shell: rustyline runs on a thread of its own (it blocks
//! while it reads), with the helper that completes, hints and draws the popup and footer,
//! and the keys the shell binds. Lines go to the shell's loop over a channel; after each,
//! the editor waits to be told whether to read another.

use std::sync::Arc;

use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{Config, Editor};
use tokio::sync::mpsc;

use super::catalog::Catalog;
use super::editor::{self, LineHelper};
use super::footer::Footer;
use super::printer::Out;
use super::reprompt::Reprompt;
use super::transcript::Viewer;
use super::tty::{terminal_size, terminal_width};
use super::view::Shared;
use crate::app::Workspace;
use crate::session::lock;

/// What the editor thread reports.
pub(super) enum Typed {
    Line(String),
    Interrupted,
    Eof,
}

/// The editor thread's channels.
pub(super) struct EditorIo {
    pub typed: mpsc::UnboundedSender<Typed>,
    pub printer: std::sync::mpsc::Sender<Out>,
    /// After each line: read another (`true`) or stop (`false`).
    pub again: std::sync::mpsc::Receiver<bool>,
    pub prompt: Arc<std::sync::Mutex<String>>,
    /// Whether a turn runs (Esc interrupts only then).
    pub busy: Arc<std::sync::atomic::AtomicBool>,
    /// Esc and Shift+Tab, for the shell.
    pub keys: mpsc::UnboundedSender<editor::Key>,
    /// Asks for the prompt to be drawn again while a line is read.
    pub reprompt: Arc<Reprompt>,
    /// Ctrl+O's full-screen transcript.
    pub viewer: Viewer,
    pub footer: Footer,
}

/// Runs rustyline on its own thread; hands back its external printer first.
pub(super) fn spawn_editor(
    ws: &Workspace,
    shared: &Arc<Shared>,
    catalog: &Catalog,
    color: bool,
    io: EditorIo,
) {
    let history = super::history::History::new(&ws.home, &ws.root);
    let shared = shared.clone();
    let catalog = catalog.clone();
    super::modified_keys::listen();
    std::thread::spawn(move || {
        let Ok(mut editor) = Editor::<LineHelper, FileHistory>::with_config(editor_config()) else {
            return;
        };
        let popup = super::popup::Popup::default();
        let helper = LineHelper::new(
            complete_fn(catalog.clone(), popup.clone()),
            hint_fn(catalog, popup.clone(), io.footer.clone()),
            shared.line_empty.clone(),
            io.reprompt.clone(),
            color,
        );
        editor.set_helper(Some(helper));
        editor::bind_keys(&mut editor, bindings(&shared, &io, popup));
        for line in history.load() {
            let _ = editor.add_history_entry(line);
        }
        let printer = printer(&mut editor, &io);
        let _ = io.printer.send(printer);
        read_lines(&mut editor, &history, &shared, &io);
    });
}

/// The editor's settings: completion as a list, a short Esc timeout, de-duplicated history
/// that the shell adds to itself.
fn editor_config() -> Config {
    // Lines are added to the history here, not by the editor: approval answers are not
    // history.
    let builder = Config::builder()
        .auto_add_history(false)
        .keyseq_timeout(Some(editor::ESC_TIMEOUT_MS))
        .completion_type(rustyline::CompletionType::List);
    // History is de-duplicated; the builder only fails for a zero history size.
    match builder
        .clone()
        .max_history_size(super::history::KEPT)
        .and_then(|b| b.history_ignore_dups(true))
    {
        Ok(b) => b.build(),
        Err(_) => builder.build(),
    }
}

/// Tab: the popup's chosen entry when the popup is open, else the catalog's completion.
fn complete_fn(catalog: Catalog, popup: super::popup::Popup) -> Box<editor::CompleteFn> {
    Box::new(move |line, pos| match popup.take(line, pos) {
        Some((start, replacement)) => {
            let display = replacement.clone();
            (
                start,
                vec![rustyline::completion::Pair {
                    display,
                    replacement,
                }],
            )
        }
        None => catalog.complete(line, pos),
    })
}

/// What shows under the line: the popup's rows, or the argument hint when there are none,
/// in the footer.
fn hint_fn(catalog: Catalog, popup: super::popup::Popup, footer: Footer) -> Box<editor::HintFn> {
    Box::new(move |line, pos| {
        let candidates = || catalog.candidates(line, pos);
        let version = || catalog.version();
        let rows = popup.rows(line, pos, version, candidates, terminal_size());
        // The list says more than the argument hint (`/` alone lists commands).
        let hint = if rows.is_empty() {
            catalog.hint(line, pos)
        } else {
            None
        };
        footer.under(hint, rows)
    })
}

/// What the key bindings act on; the menu is active while an approval (not type-ahead)
/// waits.
fn bindings(shared: &Arc<Shared>, io: &EditorIo, popup: super::popup::Popup) -> editor::Bound {
    let waiting = shared.clone();
    let menu: editor::MenuActive = Arc::new(move || {
        lock(&waiting.approval)
            .as_ref()
            .filter(|p| !p.typeahead)
            .map(|p| p.once_only)
    });
    editor::Bound {
        busy: io.busy.clone(),
        keys: io.keys.clone(),
        menu,
        transcript: io.viewer.request.clone(),
        rewind: io.viewer.rewind.clone(),
        popup,
        reprompt: io.reprompt.clone(),
    }
}

/// Where output goes: the editor's external printer, or plain stdout for a terminal the
/// editor cannot drive (`TERM=dumb`: Emacs' shell, some IDE consoles), where the editor
/// reads without editing.
fn printer(editor: &mut Editor<LineHelper, FileHistory>, io: &EditorIo) -> Out {
    match editor.create_external_printer() {
        Ok(p) => {
            // Only an editor that reads in raw mode wants Enter kept as `\r`; a
            // plain line reader (`TERM=dumb`) needs the usual translation.
            super::tty::keep_enter();
            Out::Editor(Box::new(p))
        }
        Err(_) => {
            io.reprompt.plain_reads();
            Out::Plain(super::printer::Stdout {
                prompt: io.prompt.clone(),
                reading: io.reprompt.reading.clone(),
                owed: false,
            })
        }
    }
}

/// Reads lines and hands each to the shell until it says stop or the input ends; a line
/// typed as a message (not an approval's answer) goes into the history.
fn read_lines(
    editor: &mut Editor<LineHelper, FileHistory>,
    history: &super::history::History,
    shared: &Shared,
    io: &EditorIo,
) {
    loop {
        let read = read_line(editor, io);
        // The line left the editor: until the next keystroke, nothing is being typed
        // (an approval arriving now must not take the next line for type-ahead).
        shared
            .line_empty
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let event = match read {
            Ok(line) => {
                let answering = lock(&shared.approval)
                    .as_ref()
                    .is_some_and(|p| !p.typeahead);
                if !answering && !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                    // A lost history line is not worth interrupting the person for.
                    let _ = history.append(&line);
                }
                Typed::Line(line)
            }
            Err(ReadlineError::Interrupted) => Typed::Interrupted,
            Err(_) => Typed::Eof,
        };
        let eof = matches!(event, Typed::Eof);
        if io.typed.send(event).is_err() || eof {
            break;
        }
        if !io.again.recv().unwrap_or(false) {
            break;
        }
    }
}

/// One line, read again under the new prompt each time the shell asks for one (see
/// `reprompt`), with the text and cursor as the person left them.
fn read_line(
    editor: &mut Editor<LineHelper, FileHistory>,
    io: &EditorIo,
) -> rustyline::Result<String> {
    use std::sync::atomic::Ordering;
    let mut initial: Option<(String, usize)> = None;
    loop {
        // In this order: a change of prompt made from here on interrupts this read.
        io.reprompt.reading.store(true, Ordering::SeqCst);
        io.reprompt.begin_read();
        let prompt = lock(&io.prompt).clone();
        super::tty::report_modified_keys(true);
        let read = match &initial {
            Some((line, pos)) => editor.readline_with_initial(&prompt, line.split_at(*pos)),
            None => editor.readline(&prompt),
        };
        super::tty::report_modified_keys(false);
        io.reprompt.reading.store(false, Ordering::SeqCst);
        let interrupted = matches!(read, Err(ReadlineError::Interrupted));
        let footer_rows = io.footer.rows();
        if interrupted && let Some(typed) = io.viewer.take_request() {
            // Erased first, at the width it was drawn at: the terminal may be resized while
            // the viewer is open, and rows reflowed then could no longer be counted.
            super::reprompt::erase(&prompt, &typed.0, footer_rows, terminal_width());
            io.viewer.show();
            initial = Some(typed);
            continue;
        }
        if interrupted && io.viewer.take_rewind() {
            super::reprompt::erase(&prompt, "", footer_rows, terminal_width());
            match io.viewer.pick_rewind() {
                // Shown as if typed, and run like it.
                Some(line) => {
                    use std::io::Write;
                    let mut out = std::io::stdout().lock();
                    let _ = write!(out, "{prompt}{line}\r\n");
                    let _ = out.flush();
                    return Ok(line);
                }
                None => continue,
            }
        }
        if interrupted && io.reprompt.take_after_read() {
            io.reprompt.erase(&prompt, footer_rows, terminal_width());
            initial = Some(io.reprompt.typed());
            continue;
        }
        if interrupted && footer_rows > 0 {
            // Ctrl+C left the footer on screen under the line: it goes, and what the shell
            // prints next takes its row.
            super::footer::erase_below();
        }
        return read;
    }
}
