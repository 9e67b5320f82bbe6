//! `linggen -p --input-format stream-json --output-format stream-json`: the turns come on
//! stdin, one JSON message a line as Claude Code's SDK writes them
//! (`{"type":"user","message":{"role":"user","content":"…"}}`, content as a string or as
//! text blocks), and each is answered in the same session as it arrives, with its events
//! and a `result` line per turn on stdout. A client may wait for a turn's result before it
//! writes the next; linggen ends once stdin closed and every turn it read has its result.
//!
//! A line that is not such a message is one error line on stderr (its number and what was
//! wrong); the lines around it still run.

use std::io::BufRead as _;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::run::PrintOptions;
use super::{Finished, OutputFormat, Printer};
use crate::app::signals::{Ending, Signals, next_ending};
use crate::app::{Failure, LiveSession, Workspace, exit, load_workspace, off_runtime};
use crate::session::Input;
use crate::session::bus::Subscription;

/// What the stdin reader hands the session.
enum Fed {
    Turn(String),
    Bad { line: usize, why: String },
    End,
}

/// Runs every turn stdin brings; `first` (the prompt argument, if any) goes first.
pub async fn run(options: PrintOptions, first: Option<String>) -> i32 {
    match try_run(&options, first).await {
        Ok(code) => code,
        Err(f) => {
            eprintln!("linggen: error: {}", f.message);
            f.code
        }
    }
}

async fn try_run(options: &PrintOptions, first: Option<String>) -> Result<i32, Failure> {
    if options.format != OutputFormat::StreamJson {
        return Err(Failure {
            code: exit::USAGE,
            message: "--input-format stream-json needs --output-format stream-json (as in \
                      Claude Code): each turn's events and result go to stdout as JSON lines"
                .into(),
        });
    }
    let start = options.start.clone();
    let ws = Arc::new(off_runtime(move || load_workspace(&start)).await?);
    if let Some(note) = ws.trust.note() {
        eprintln!("linggen: note: {note}");
    }
    let mut live = LiveSession::start(&options.start, &ws, false).await?;
    let printer =
        Printer::new(options.format, options.quiet, &live.session_id).with_shape(options.shape);
    let (finished_tx, mut finished) = mpsc::unbounded_channel();
    let printing = spawn_printer(printer, live.take_events(), finished_tx);
    let mut fed = spawn_reader(first);

    let mut turns = Turns::default();
    let mut ended_by = None;
    let mut signals = Some(Signals::all());
    while !(turns.eof && turns.answered >= turns.sent) {
        tokio::select! {
            item = fed.recv() => turns.feed(item.unwrap_or(Fed::End), &ws, &live).await,
            Some(done) = finished.recv() => {
                turns.answered += 1;
                turns.last = Some(done);
            }
            signal = next_ending(&mut signals) => {
                ended_by = Some(signal);
                let _ = live.handle.inputs.send(Input::Cancel).await;
                if let Some(signals) = signals.take() {
                    signals.second_quits(|| {});
                }
                break;
            }
        }
    }
    let saved = live.stop().await;
    let _ = printing.await;
    Ok(turns.exit_code(ended_by, saved))
}

/// The turns so far: how many were sent and answered, how many lines were bad, and the
/// last turn's outcome (the exit code is its).
#[derive(Default)]
struct Turns {
    sent: usize,
    answered: usize,
    bad: usize,
    /// Stdin closed: no turn comes after those sent.
    eof: bool,
    last: Option<Finished>,
}

impl Turns {
    /// One item from the stdin reader: a turn goes to the session, a bad line is told.
    async fn feed(&mut self, item: Fed, ws: &Arc<Workspace>, live: &LiveSession) {
        match item {
            Fed::Turn(text) => {
                let ws = Arc::clone(ws);
                let message = off_runtime(move || {
                    ws.read_line(&text, "cli").map_err(|e| Failure {
                        code: exit::USAGE,
                        message: e.to_string(),
                    })
                })
                .await;
                match message {
                    Ok(message) => {
                        self.sent += 1;
                        let _ = live.handle.inputs.send(Input::UserMessage(message)).await;
                    }
                    Err(f) => {
                        self.bad += 1;
                        eprintln!("linggen: error: {}", f.message);
                    }
                }
            }
            Fed::Bad { line, why } => {
                self.bad += 1;
                eprintln!("linggen: error: stdin line {line}: {why}");
            }
            Fed::End => self.eof = true,
        }
    }

    /// The last turn's exit code (a signal's when none finished); a bad line fails a run
    /// that otherwise succeeded, and so does a session that could not be saved.
    fn exit_code(&self, ended_by: Option<Ending>, saved: bool) -> i32 {
        let code = match (&self.last, ended_by) {
            (Some(done), _) => done.exit_code(ended_by),
            (None, Some(signal)) => signal.exit_code(),
            (None, None) if self.bad > 0 => exit::USAGE,
            (None, None) => exit::SUCCESS,
        };
        match code {
            exit::SUCCESS if self.bad > 0 => exit::FAILURE,
            exit::SUCCESS if !saved => exit::NOT_SAVED,
            code => code,
        }
    }
}

/// Prints every event on a thread of its own (see `run::spawn_printer`), a `result` line
/// after each turn, and hands each turn's outcome on. Ends when the session's bus closes.
fn spawn_printer(
    mut printer: Printer,
    mut events: Subscription,
    finished: mpsc::UnboundedSender<Finished>,
) -> tokio::task::JoinHandle<()> {
    tokio::task::spawn_blocking(move || {
        while let Some(envelope) = events.blocking_recv() {
            if let Some(done) = printer.on_event(&envelope.event) {
                printer.finish(&done);
                let _ = finished.send(done);
            }
        }
    })
}

/// Reads stdin a line at a time on a plain thread (a read blocked on a pipe must not hold
/// the runtime open at exit).
fn spawn_reader(first: Option<String>) -> mpsc::UnboundedReceiver<Fed> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        if let Some(first) = first {
            let _ = tx.send(Fed::Turn(first));
        }
        for (n, line) in std::io::stdin().lock().lines().enumerate() {
            let item = match line {
                Ok(line) => match parse_turn(&line) {
                    Ok(Some(text)) => Fed::Turn(text),
                    Ok(None) => continue,
                    Err(why) => Fed::Bad { line: n + 1, why },
                },
                Err(e) => Fed::Bad {
                    line: n + 1,
                    why: format!("cannot read it: {e}"),
                },
            };
            if tx.send(item).is_err() {
                return;
            }
        }
        let _ = tx.send(Fed::End);
    });
    rx
}

/// One stdin line: `Ok(None)` for a blank line, the turn's text for a user message.
fn parse_turn(line: &str) -> Result<Option<String>, String> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("not JSON ({e})"))?;
    if value["type"] != "user" {
        return Err(format!(
            "expected {{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":…}}}}, \
             got type {}",
            value["type"]
        ));
    }
    let content = &value["message"]["content"];
    let text = match content {
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return Err("`message.content` is neither text nor a list of blocks".into()),
    };
    if text.trim().is_empty() {
        return Err("the message has no text".into());
    }
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use super::parse_turn;

    #[test]
    fn turns_are_read_as_claude_codes_sdk_writes_them() {
        let plain = r#"{"type":"user","message":{"role":"user","content":"hi"}}"#;
        assert_eq!(parse_turn(plain), Ok(Some("hi".into())));
        let blocks = r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}"#;
        assert_eq!(parse_turn(blocks), Ok(Some("a\nb".into())));
        assert_eq!(parse_turn("  "), Ok(None));
        assert!(parse_turn("hello").unwrap_err().starts_with("not JSON"));
        assert!(
            parse_turn(r#"{"type":"control_request"}"#)
                .unwrap_err()
                .contains("got type \"control_request\"")
        );
    }
}
