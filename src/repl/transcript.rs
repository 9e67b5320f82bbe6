//! The whole session as a person reads it behind Ctrl+O: every message, every tool call
//! with its full arguments, its full output and its diff — what the scrollback folds to
//! one line. Built from the store, so a resumed session's earlier turns and what a
//! compaction replaced are there too, and delegated runs show under their parent's call.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::printer::Hold;
use super::render::paint::{Ink, Span, char_width, paint};
use super::render::{MarkdownStream, RenderStyle, render_diff, tool_line, tool_result_line};
use super::view::Shared;
use crate::llm::{ChatMessage, Role};
use crate::session::lock;
use crate::store::{LogEntry, Store, StoreError};
use crate::tools::terminal_text::strip_controls;

/// Delegated runs are indented this much per level.
const INDENT: &str = "  ";

/// The session's transcript as finished terminal lines, none wider than `width`.
pub fn lines(
    home: &Path,
    session_id: &str,
    style: &RenderStyle,
    width: u16,
) -> Result<Vec<String>, StoreError> {
    let store = Store::open(home)?;
    let messages = store.session_transcript(session_id)?;
    let runs = store.runs(session_id)?;
    let mut book = Book {
        style,
        width: usize::from(width.max(20)),
        out: Vec::new(),
        trails: HashMap::new(),
        depth: HashMap::new(),
        agents: HashMap::new(),
    };
    for run in &runs {
        book.agents.insert(run.id.clone(), run.agent_id.clone());
        book.trails
            .insert(run.id.clone(), Trail::of(store.run_log(&run.id)?));
    }
    for run in &runs {
        let mut depth = 0;
        let mut parent = run.parent_id.as_deref();
        while let Some(p) = parent.filter(|_| depth < 16) {
            depth += 1;
            parent = runs
                .iter()
                .find(|r| r.id == p)
                .and_then(|r| r.parent_id.as_deref());
        }
        book.depth.insert(run.id.clone(), depth);
    }
    for message in &messages {
        book.message(message);
    }
    if book.out.is_empty() {
        book.out.push(style.dim("nothing in this session yet"));
    }
    Ok(book.out)
}

/// The line being typed when Ctrl+O was pressed, and its cursor: the read ends to show the
/// transcript and starts again with them.
pub type Request = Arc<Mutex<Option<(String, usize)>>>;

/// What the editor thread needs to show the transcript (it owns the terminal between two
/// reads, so the viewer runs there).
pub struct Viewer {
    pub home: PathBuf,
    /// The workspace, for the rewind picker's checkpoints.
    pub root: PathBuf,
    /// Esc Esc at an empty prompt: the read ended for the rewind picker.
    pub rewind: Arc<std::sync::atomic::AtomicBool>,
    pub shared: Arc<Shared>,
    pub style: RenderStyle,
    /// Output held while the viewer has the screen.
    pub hold: Hold,
    pub request: Request,
}

impl Viewer {
    /// The line to read again if the read just ended for Ctrl+O; consumes the request.
    pub fn take_request(&self) -> Option<(String, usize)> {
        lock(&self.request).take()
    }

    /// Whether the read just ended for the rewind picker; consumes the request.
    pub fn take_rewind(&self) -> bool {
        self.rewind.swap(false, std::sync::atomic::Ordering::SeqCst)
    }

    /// The rewind picker (Esc Esc): the `/rewind` line for what the person picked.
    pub fn pick_rewind(&self) -> Option<String> {
        let session = lock(&self.shared.session_id).clone();
        self.hold.set(true);
        let line = super::rewind::pick(&self.home, &self.root, session.as_deref());
        self.hold.set(false);
        line
    }

    /// Shows the transcript until the person leaves it. Output of a running turn waits
    /// meanwhile and comes out, in order, when the viewer closes.
    pub fn show(&self) {
        let session = lock(&self.shared.session_id).clone();
        self.hold.set(true);
        let shown = super::pager::run("transcript", |width| {
            let Some(session) = session.as_deref() else {
                return vec![self.style.dim("nothing in this session yet")];
            };
            lines(&self.home, session, &self.style, width).unwrap_or_else(|e| {
                vec![self.style.error(&format!("cannot read the session: {e}"))]
            })
        });
        self.hold.set(false);
        if let Err(e) = shown {
            eprintln!("linggen: the transcript cannot be shown: {e}");
        }
    }
}

/// A run's audit trail, from which calls take their one-line summaries and results their
/// summaries and diffs (the messages hold what the model saw, not what a person was shown).
#[derive(Default)]
struct Trail {
    calls: Vec<LogEntry>,
    results: Vec<LogEntry>,
}

impl Trail {
    fn of(entries: Vec<LogEntry>) -> Trail {
        let mut trail = Trail::default();
        for entry in entries {
            match entry.kind.as_str() {
                "call" => trail.calls.push(entry),
                "result" => trail.results.push(entry),
                _ => {}
            }
        }
        trail
    }

    /// The logged call with these arguments (calls are logged with them), first come.
    fn call(&mut self, args: &serde_json::Value) -> Option<LogEntry> {
        let found = self.calls.iter().position(|c| {
            c.detail
                .as_deref()
                .and_then(|d| serde_json::from_str::<serde_json::Value>(d).ok())
                .is_some_and(|logged| &logged == args)
        })?;
        Some(self.calls.remove(found))
    }

    /// The next logged result of `tool` (results are logged as `tool: summary`).
    fn result(&mut self, tool: &str) -> Option<LogEntry> {
        let found = self
            .results
            .iter()
            .position(|r| r.text.split_once(": ").is_some_and(|(t, _)| t == tool))?;
        Some(self.results.remove(found))
    }
}

struct Book<'a> {
    style: &'a RenderStyle,
    width: usize,
    out: Vec<String>,
    trails: HashMap<String, Trail>,
    depth: HashMap<String, usize>,
    agents: HashMap<String, String>,
}

impl Book<'_> {
    fn message(&mut self, message: &ChatMessage) {
        let run = message.run_id.clone().unwrap_or_default();
        let depth = self.depth.get(&run).copied().unwrap_or(0);
        let pad = INDENT.repeat(depth);
        match message.role {
            Role::User if depth == 0 => {
                self.out.push(String::new());
                let text = format!("› {}", message.content.trim_end());
                for line in text.lines() {
                    self.push(&pad, &self.style.prompt(line));
                }
            }
            Role::User => {
                let agent = self.agents.get(&run).cloned().unwrap_or_default();
                let head = format!("↳ {agent} · run {run}");
                self.push(&pad[INDENT.len()..], &self.style.prompt(&head));
                self.plain_block(&pad, message.content.trim_end(), Ink::default());
            }
            Role::Assistant => {
                self.answer(&pad, &message.content);
                for call in &message.tool_calls {
                    self.call(&pad, &run, call);
                }
            }
            Role::Tool => self.result(&pad, &run, message),
            Role::System => {}
        }
    }

    fn answer(&mut self, pad: &str, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        let width = self.width.saturating_sub(pad.len()).max(10);
        let mut markdown = MarkdownStream::new(self.style.clone(), width as u16);
        let mut lines = markdown.push(text);
        lines.extend(markdown.finish());
        for line in lines {
            self.push(pad, &line);
        }
    }

    fn call(&mut self, pad: &str, run: &str, call: &crate::llm::ToolCall) {
        let logged = self
            .trails
            .get_mut(run)
            .and_then(|t| t.call(&call.arguments));
        let summary = logged.map_or_else(|| call.name.clone(), |entry| entry.text);
        self.push(pad, &tool_line(&summary, self.style));
        let args = match &call.arguments {
            serde_json::Value::Object(map) if map.is_empty() => return,
            args => serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string()),
        };
        let dim = self
            .style
            .theme()
            .map_or_else(Ink::default, |t| Ink::fg(t.colors.dim));
        self.plain_block(&format!("{pad}    "), &args, dim);
    }

    fn result(&mut self, pad: &str, run: &str, message: &ChatMessage) {
        let tool = message.tool_name.as_deref().unwrap_or("tool");
        let logged = self.trails.get_mut(run).and_then(|t| t.result(tool));
        let ok = !message.is_error && logged.as_ref().is_none_or(|l| l.ok != Some(false));
        let summary = logged
            .as_ref()
            .and_then(|l| l.text.split_once(": ").map(|(_, s)| s.to_string()))
            .unwrap_or_else(|| format!("{} lines", message.content.lines().count()));
        self.push(pad, &tool_result_line(&summary, ok, self.style));
        let output_pad = format!("{pad}    ");
        let ink = match (ok, self.style.theme()) {
            (false, Some(t)) => Ink::fg(t.colors.tool_error),
            _ => Ink::default(),
        };
        self.plain_block(&output_pad, message.content.trim_end(), ink);
        let diff = logged
            .and_then(|l| l.detail)
            .filter(|d| d.starts_with("---") || d.starts_with("diff ") || d.starts_with("@@"));
        if let Some(diff) = diff {
            for line in render_diff(&diff, self.style, usize::MAX) {
                self.push(&output_pad, &line);
            }
        }
    }

    /// Text shown as it is (no markdown): each line in `ink`, broken at the width.
    fn plain_block(&mut self, pad: &str, text: &str, ink: Ink) {
        let text = strip_controls(text);
        for line in text.lines() {
            let line = line.replace('\t', "    ");
            let painted = match self.style.theme() {
                Some(_) => paint(&[Span::new(line, ink)]),
                None => line,
            };
            self.push(pad, &painted);
        }
    }

    /// One line after `pad`, broken into rows that fit the width.
    fn push(&mut self, pad: &str, line: &str) {
        let width = self.width.saturating_sub(pad.len()).max(10);
        for row in fold(line, width) {
            self.out.push(format!("{pad}{row}"));
        }
    }
}

/// `line` (with SGR escape codes) broken into rows of at most `width` columns; each row ends
/// with the attributes reset and the next starts with the ones in effect, so a row can be
/// drawn on its own.
pub fn fold(line: &str, width: usize) -> Vec<String> {
    let mut rows = Vec::new();
    let mut row = String::new();
    let mut used = 0;
    // The SGR sequences since the last reset: what a continued row must start with.
    let mut active = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            let mut seq = String::from(c);
            for next in chars.by_ref() {
                seq.push(next);
                if next.is_ascii_alphabetic() {
                    break;
                }
            }
            if seq == "\x1b[0m" || seq == "\x1b[m" {
                active.clear();
            } else if seq.ends_with('m') {
                active.push_str(&seq);
            }
            row.push_str(&seq);
            continue;
        }
        let w = char_width(c);
        if used + w > width && used > 0 {
            if !active.is_empty() {
                row.push_str("\x1b[0m");
            }
            rows.push(std::mem::take(&mut row));
            row.push_str(&active);
            used = 0;
        }
        row.push(c);
        used += w;
    }
    rows.push(row);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_keeps_every_character_and_the_colour_across_rows() {
        let line = "\x1b[31mabcdef\x1b[0mgh";
        let rows = fold(line, 4);
        assert_eq!(rows, ["\x1b[31mabcd\x1b[0m", "\x1b[31mef\x1b[0mgh"]);
        assert_eq!(fold("", 4), [""]);
        // Wide characters never straddle the edge.
        assert_eq!(fold("日本語", 5), ["日本", "語"]);
    }
}
