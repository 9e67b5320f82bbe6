//! `-p` output: the final answer on stdout, progress on stderr, or JSON for tools.
//! The printer is one more subscriber of the session's events.

use std::io::Write;

use clap::ValueEnum;
use serde::Serialize;

mod claude_shape;
pub mod run;
pub mod stream_input;

use crate::app::exit;
use crate::llm::Usage;
use crate::session::view::SessionView;
use crate::session::{AgentState, Event, OutcomeStatus};
use crate::shared_text::SharedText;
use crate::tools::terminal_text::strip_controls;

/// How `-p` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OutputFormat {
    /// The final answer only.
    #[default]
    Text,
    /// One JSON object when done.
    Json,
    /// One JSON event per line as it happens, then a `result` line.
    StreamJson,
}

/// Which messages `stream-json` prints: linggen's events, or Claude Code's message shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum StreamShape {
    /// linggen's events (doc/events.md), then the `result` line.
    #[default]
    Linggen,
    /// Claude Code's `system` / `assistant` / `user` messages, then the `result` line.
    Claude,
}

/// What the run ended with.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    pub status: OutcomeStatus,
    /// The answer the outcome carried, shared with it rather than copied.
    pub result: SharedText,
    pub num_turns: u32,
    pub usage: Usage,
    pub duration_ms: u64,
}

impl Finished {
    /// The exit code; `ended_by` is the signal that cancelled the run, if one did.
    pub fn exit_code(&self, ended_by: Option<crate::app::signals::Ending>) -> i32 {
        match (self.status, ended_by) {
            (OutcomeStatus::Cancelled, Some(signal)) => signal.exit_code(),
            (OutcomeStatus::Completed, _) => exit::SUCCESS,
            (OutcomeStatus::Error, _) => exit::FAILURE,
            (OutcomeStatus::MaxIters, _) => exit::MAX_ITERS,
            (OutcomeStatus::Stopped, _) => exit::STOPPED,
            (OutcomeStatus::Cancelled, None) => exit::FAILURE,
        }
    }

    /// Claude Code's `subtype` values, so existing tooling reads our JSON.
    fn subtype(&self) -> &'static str {
        match self.status {
            OutcomeStatus::Completed => "success",
            OutcomeStatus::MaxIters => "error_max_turns",
            OutcomeStatus::Error | OutcomeStatus::Cancelled | OutcomeStatus::Stopped => {
                "error_during_execution"
            }
        }
    }
}

pub struct Printer {
    format: OutputFormat,
    quiet: bool,
    session_id: String,
    /// stdout went away (e.g. `| head`): stop writing, keep running to a clean end.
    stdout_closed: bool,
    /// The session's projection: how deep each delegated run is, so its progress lines are
    /// indented under its parent.
    session: SessionView,
    /// `--stream-shape claude`: the converter to Claude Code's messages.
    claude: Option<claude_shape::ClaudeShape>,
}

impl Printer {
    pub fn new(format: OutputFormat, quiet: bool, session_id: &str) -> Self {
        Printer {
            format,
            quiet,
            session_id: session_id.to_string(),
            stdout_closed: false,
            session: SessionView::default(),
            claude: None,
        }
    }

    /// Prints `stream-json` in `shape`.
    pub fn with_shape(mut self, shape: StreamShape) -> Self {
        self.claude = (shape == StreamShape::Claude).then(claude_shape::ClaudeShape::default);
        self
    }

    /// Whether stdout was closed by the reader (e.g. `| head`): nobody reads the rest.
    pub fn stdout_closed(&self) -> bool {
        self.stdout_closed
    }

    /// Shows one event. Returns the outcome when the run is over.
    pub fn on_event(&mut self, event: &Event) -> Option<Finished> {
        if self.format == OutputFormat::StreamJson {
            match self.claude.as_mut() {
                Some(shape) => {
                    if let Some(message) = shape.convert(event) {
                        self.stdout_json(&message);
                    }
                }
                None => self.stdout_json(event),
            }
        }
        self.progress(event);
        match event {
            // A background agent's answer is still to come: it opens a turn of its own,
            // whose outcome is the run's. A cancelled run does not wait for it.
            Event::Outcome { status, .. }
                if *status != OutcomeStatus::Cancelled && self.session.background.waiting() > 0 =>
            {
                None
            }
            Event::Outcome {
                status,
                result,
                num_turns,
                usage,
                duration_ms,
                ..
            } => Some(Finished {
                status: *status,
                result: result.clone(),
                num_turns: *num_turns,
                usage: *usage,
                duration_ms: *duration_ms,
            }),
            _ => None,
        }
    }

    /// Progress lines on stderr. Errors are shown even with `-q`: silence must not hide why
    /// a script failed.
    fn progress(&mut self, event: &Event) {
        self.session.apply(event);
        let indent = |run_id: &str| "  ".repeat(self.session.depth(run_id));
        let line = match event {
            Event::Error { message } => Some(format!("linggen: error: {message}")),
            Event::Warning { message } => Some(format!("linggen: warning: {message}")),
            _ if self.quiet => None,
            Event::Retrying { .. } => event.retry_line().map(|line| format!("linggen: {line}")),
            Event::Compacted {
                run_id,
                before_tokens,
                after_tokens,
                ..
            } => Some(format!(
                "{}⎿ compacted: {before_tokens} → {after_tokens} tokens",
                indent(run_id)
            )),
            Event::ToolCallStarted {
                run_id, summary, ..
            } => Some(format!("{}⏺ {summary}", indent(run_id))),
            // What a silent wait is for (a busy model, a model that says nothing yet), so
            // a script's log does not just stop.
            Event::AgentStatus {
                run_id,
                status: AgentState::Thinking,
                detail: Some(detail),
                ..
            } => Some(format!("{}linggen: {detail}", indent(run_id))),
            Event::ToolCallFinished {
                run_id,
                ok,
                summary,
                excerpt,
                ..
            } => {
                let pad = indent(run_id);
                let mut text = if *ok {
                    format!("{pad}  ⎿ {summary}")
                } else {
                    format!("{pad}  ⎿ ✗ {summary}")
                };
                // A failed command's first lines, so the reader sees how it failed.
                for line in excerpt.iter().flat_map(|e| e.lines()) {
                    text.push_str(&format!("\n{pad}    {line}"));
                }
                Some(text)
            }
            Event::SubagentResult {
                subagent_id,
                agent_id,
                outcome,
                ..
            } => Some(format!(
                "{}  ⎿ {agent_id} {}",
                indent(subagent_id),
                outcome.run_status()
            )),
            _ => None,
        };
        if let Some(line) = line {
            stderr_line(&line);
        }
    }

    /// Writes the final answer / result object.
    pub fn finish(&mut self, done: &Finished) {
        match self.format {
            OutputFormat::Text => {
                if done.status == OutcomeStatus::Completed {
                    // The answer is the model's text, and stdout is often a terminal.
                    let text = strip_controls(done.result.trim_end());
                    self.stdout_line(&text);
                } else if done.status != OutcomeStatus::Error {
                    // Errors were already printed from their `Error` event.
                    stderr_line(&format!("linggen: {}", self.ending(done)));
                }
            }
            OutputFormat::Json | OutputFormat::StreamJson => {
                if !self.stdout_closed {
                    let line = result_line(&self.session_id, done);
                    self.stdout_closed = json_line(&line).is_err();
                }
            }
        }
    }

    fn ending(&self, done: &Finished) -> String {
        match done.status {
            OutcomeStatus::Cancelled => "cancelled".to_string(),
            _ => done.result.to_string(),
        }
    }

    fn stdout_line(&mut self, line: &str) {
        if self.stdout_closed {
            return;
        }
        let mut out = std::io::stdout().lock();
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            self.stdout_closed = true;
        }
    }

    fn stdout_json(&mut self, value: &impl Serialize) {
        if !self.stdout_closed {
            self.stdout_closed = json_line(value).is_err();
        }
    }
}

/// One JSON line on stdout, serialized straight into it: an event or a result carrying a
/// long answer is never also held as one long `String`.
fn json_line(value: &impl Serialize) -> std::io::Result<()> {
    // stdout's own buffer is line-sized; serde writes many small pieces.
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    serde_json::to_writer(&mut out, value)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// One progress line on stderr. Lines quote the model (tool summaries, errors, agent names),
/// so control sequences are stripped: only JSON output, which escapes them, keeps them.
fn stderr_line(line: &str) {
    // stderr gone too: nothing left to tell anyone.
    let _ = writeln!(std::io::stderr().lock(), "{}", strip_controls(line));
}

/// The last line of `json` / `stream-json` output. A struct, not a JSON map, so the fields
/// come out in Claude Code's order (`type` first) for tools that read the line as text.
#[derive(Serialize)]
struct ResultLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    subtype: &'static str,
    status: OutcomeStatus,
    is_error: bool,
    result: &'a str,
    session_id: &'a str,
    num_turns: u32,
    duration_ms: u64,
    usage: Usage,
}

/// The `result` line of `json` / `stream-json` output.
fn result_line<'a>(session_id: &'a str, done: &'a Finished) -> ResultLine<'a> {
    ResultLine {
        kind: "result",
        subtype: done.subtype(),
        status: done.status,
        is_error: done.status != OutcomeStatus::Completed,
        result: &done.result,
        session_id,
        num_turns: done.num_turns,
        duration_ms: done.duration_ms,
        usage: done.usage,
    }
}

/// The result line for failures that happen before the session starts.
pub fn error_json(session_id: &str, message: &str) -> String {
    let failed = Finished {
        status: OutcomeStatus::Error,
        result: message.into(),
        num_turns: 0,
        usage: Usage::default(),
        duration_ms: 0,
    };
    // A struct of strings and numbers always serializes.
    serde_json::to_string(&result_line(session_id, &failed)).unwrap_or_default()
}
