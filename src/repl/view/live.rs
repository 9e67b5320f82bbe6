//! The live area: the few rows right above the prompt that are redrawn in place while a
//! turn runs — the row of the answer still filling, the queue, the todo item in progress
//! (`☐ 2/5 · Running the tests`), and a busy line
//! (`⠋ Working… 12s · esc to interrupt`) until the turn ends. Everything else the view
//! prints is permanent and goes above it.
//!
//! Each print erases the live area (the printer writes from where the prompt began, and
//! the live rows are right above it), writes the new permanent lines, and draws the live
//! area again, so it always sits at the bottom. A line the person submits while it shows
//! lands between it and the next prompt; [`View::submitted`] counts those rows so the next
//! print erases them too (the line then shows in the queue, and in the transcript when it
//! runs).

use std::time::Instant;

use super::View;
use crate::repl::render::str_width;
use crate::session::lock;

/// Where a line the person submitted during a turn shows again once its echo is erased.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Echo {
    /// Right away, above the live area (it takes effect now).
    Now,
    /// In the transcript when its turn starts (a queued message).
    WhenItRuns,
    /// Not here: it shows itself when it runs (a deferred command), or there is nothing
    /// to show (Ctrl+C on an empty line).
    Never,
}

/// How often the live area is redrawn while a turn runs.
pub const SPINNER_FRAME: std::time::Duration = std::time::Duration::from_millis(100);
const SPINNER: &[char] = &['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// What the live area holds and how many rows of it are on screen.
#[derive(Default)]
pub(super) struct Live {
    /// Rows drawn by the last print, right above the prompt.
    rows: usize,
    /// What they show, so a tick that would draw the same leaves the screen alone.
    shown: Vec<String>,
    /// The width they were drawn at, and whether the terminal reflows them when it gets
    /// narrower (see `RenderStyle::terminal_reflows`): a row wider than the new width then
    /// takes several, and the erase must count them all or the top ones stay as stale rows.
    drawn_width: usize,
    pub(super) reflows: bool,
    /// Rows of a line the person submitted below them (erased with them).
    detached: usize,
    /// When the turn's own run started: the busy line's clock.
    pub turn_started: Option<Instant>,
    /// Commands typed during the turn, run when it ends (shown as waiting).
    deferred: Vec<String>,
    /// Lines the person submitted during the turn whose echo was erased: shown in the
    /// transcript when their turn starts.
    pub echo_owed: Vec<String>,
    /// A submitted line whose echo is erased with the live area and written again at once
    /// (a command, an answer: they take effect now, not when a turn starts).
    echo_now: Option<String>,
}

impl Live {
    pub(super) fn new(reflows: bool) -> Self {
        Live {
            reflows,
            ..Live::default()
        }
    }
}

impl View {
    /// Writes `lines` as permanent output, then the live area below them. With nothing to
    /// write and a live area that looks the same, writes nothing.
    pub(super) fn print(&mut self, lines: Vec<String>) {
        let live = self.live_lines();
        self.print_with(lines, live);
    }

    fn print_with(&mut self, lines: Vec<String>, live: Vec<String>) {
        if lines.is_empty() && live.is_empty() && self.live.rows == 0 && self.live.detached == 0 {
            return;
        }
        let mut text = self.erase_live();
        self.live.shown.clear();
        if let Some(echo) = self.live.echo_now.take() {
            text.push_str(&echo);
            text.push('\n');
        }
        for line in lines.iter().chain(&live) {
            text.push_str(line);
            text.push('\n');
        }
        self.live.rows = live.len();
        self.live.drawn_width = usize::from(self.width);
        let erase_only = lines.is_empty() && live.is_empty();
        self.live.shown = live;
        if erase_only {
            // Only an erase: the editor adds a newline to a print that does not end in one,
            // so go up one row more and let the newline bring the cursor back.
            text.push_str("\x1b[1A\n");
        }
        // The prompt is redrawn after each print; one call per batch keeps that cheap.
        let _ = self.printer.print(text);
    }

    /// Called every [`SPINNER_FRAME`]: redraws the live area (the busy line's clock moves).
    pub fn tick(&mut self) {
        let live = self.live_lines();
        if live != self.live.shown || self.live.detached > 0 {
            self.print_with(Vec::new(), live);
        }
    }

    /// The person submitted `line` at `prompt`: the editor left it on screen below the live
    /// area, so the next print erases it with the live area. A message that waits for the
    /// turn (`queued`) then shows in the queue, and in the transcript when it runs; any
    /// other line is written again right away, above the live area.
    pub fn submitted(&mut self, prompt: &str, line: &str, width: u16, echo: Echo) {
        if self.live.rows == 0 {
            return;
        }
        let width = usize::from(width.max(1));
        let text = format!("{prompt}{line}");
        let rows: usize = text
            .split('\n')
            .map(|row| str_width(row).div_ceil(width).max(1))
            .sum();
        self.live.detached += rows;
        match echo {
            Echo::WhenItRuns => self.live.echo_owed.push(line.trim().to_string()),
            Echo::Now => {
                let text = crate::tools::terminal_text::strip_controls(&text).into_owned();
                self.live.echo_now = Some(text);
            }
            Echo::Never => {}
        }
    }

    /// Whether this session has run a turn (resumed ones count: they have history).
    pub fn has_turns(&self) -> bool {
        !self.session.runs.is_empty() || self.resumed
    }

    /// Ctrl+C on the empty prompt: the editor left the prompt row below the live area.
    pub fn interrupted(&mut self, prompt: &str, width: u16) {
        self.submitted(prompt, "", width, Echo::Never);
    }

    /// A command typed during the turn, to run when it ends (shown as waiting until then).
    pub fn defer(&mut self, line: &str) {
        self.live.deferred.push(line.trim().to_string());
    }

    /// The commands deferred to the end of the turn, in order (they run now).
    pub fn take_deferred(&mut self) -> Vec<String> {
        std::mem::take(&mut self.live.deferred)
    }

    /// A line typed during the turn starts its own turn now: it shows where it runs.
    pub(super) fn echo_if_owed(&mut self, content: &str) -> Option<String> {
        let at = self
            .live
            .echo_owed
            .iter()
            .position(|l| l == content.trim())?;
        let line = self.live.echo_owed.remove(at);
        Some(self.style.dim(&format!("› {line}")))
    }

    /// Escape codes that take the cursor to the top of the live area (and a submitted line
    /// below it) and clear from there down.
    fn erase_live(&mut self) -> String {
        let rows = self.live_rows_on_screen() + std::mem::take(&mut self.live.detached);
        self.live.rows = 0;
        if rows == 0 {
            String::new()
        } else {
            format!("\r\x1b[{rows}A\x1b[J")
        }
    }

    /// Rows the live area takes on screen now: one per row drawn, unless a row was wider
    /// than the terminal when drawn (the answer's row still filling keeps the width its
    /// first rows were wrapped at when the window narrows mid-line) and took more, or the
    /// terminal narrowed since and reflowed the rows that no longer fit.
    fn live_rows_on_screen(&self) -> usize {
        let drawn = self.live.drawn_width.max(1);
        let now = match self.live.reflows {
            true => usize::from(self.width).clamp(1, drawn),
            false => drawn,
        };
        self.live
            .shown
            .iter()
            .map(|row| {
                let text = crate::tools::terminal_text::strip_controls(row);
                str_width(&text).div_ceil(now).max(1)
            })
            .sum()
    }

    /// The live area as it should look now; empty in plain mode (no escape codes there).
    fn live_lines(&self) -> Vec<String> {
        if self.style.is_plain() {
            return Vec::new();
        }
        let width = usize::from(self.width).saturating_sub(1).max(10);
        let mut lines = self
            .markdown
            .as_ref()
            .map(|stream| stream.tail())
            .unwrap_or_default();
        let mut waiting: Vec<String> = self.session.queue.clone();
        waiting.extend(self.live.deferred.iter().cloned());
        if !waiting.is_empty() {
            let line = format!("⏳ queued: {}", waiting.join(" · "));
            lines.push(self.style.dim(&cut(&line, width)));
        }
        lines.extend(self.menu_lines(width));
        // The item in progress goes with the busy line (not under an approval's question).
        if let Some(busy) = self.busy_line(width) {
            lines.extend(self.todo_live_row(width));
            lines.push(busy);
        }
        // Rows that scrolled off the top could not be erased (the cursor stops at the top
        // row): on a short screen the answer's first rows still filling wait out of sight;
        // they are printed once final like the rest.
        let room = usize::from(self.height).saturating_sub(1).max(1);
        if lines.len() > room {
            lines.drain(..lines.len() - room);
        }
        lines
    }

    /// `⠋ Working… 12s · esc to interrupt` while the turn runs and nobody is asked for an
    /// approval (the question is the last thing on screen then).
    fn busy_line(&self, width: usize) -> Option<String> {
        let started = self.live.turn_started?;
        if self.menu.is_some() || lock(&self.shared.approval).is_some() {
            return None;
        }
        let elapsed = started.elapsed();
        let frame =
            SPINNER[(elapsed.as_millis() / SPINNER_FRAME.as_millis()) as usize % SPINNER.len()];
        let what = match (&self.waiting_for, self.waiting_since.is_some()) {
            _ if self.waiting_detail.is_some() => {
                let detail = self.waiting_detail.as_deref().unwrap_or_default();
                let mut chars = detail.chars();
                let first = chars.next().map(|c| c.to_uppercase().to_string());
                format!("{}{}", first.unwrap_or_default(), chars.as_str())
            }
            (Some(agent), _) => format!("{agent} working"),
            (None, true) => "Thinking".to_string(),
            (None, false) => "Working".to_string(),
        };
        let line = format!("{frame} {what}… {}s · esc to interrupt", elapsed.as_secs());
        Some(self.style.dim(&cut(&line, width)))
    }
}

/// `text` cut to `width` columns with an ellipsis (a live row must not wrap: it is erased
/// by counting rows).
pub(super) fn cut(text: &str, width: usize) -> String {
    if str_width(text) <= width {
        return text.to_string();
    }
    let mut out = String::new();
    for c in text.chars() {
        if str_width(&out) + 2 > width {
            break;
        }
        out.push(c);
    }
    out.push('…');
    out
}
