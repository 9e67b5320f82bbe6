//! Running a schedule: `linggen -p TASK` in the schedule's workspace, as a process of its
//! own, so a scheduled run is exactly a one-shot run (nothing asks: what would ask is
//! denied, and the model is told so) and a crash or a hang in it never takes `linggen
//! serve` down. Its events come back as `stream-json`, read for the session, the result
//! and the calls that were denied.

use std::io::BufRead as _;
use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

use crate::tools::launch::{Confinement, Env, Launch, Lifetime, Program};

/// How one run went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// The session it ran in (in `linggen sessions`), when it got that far.
    pub session_id: Option<String>,
    pub ok: bool,
    /// One line: `completed: …`, `error: …`, with the denied calls counted.
    pub line: String,
    /// The calls that were denied because they needed a person's approval.
    pub denied: Vec<String>,
}

/// What to run, and where: a schedule's fields, or the heartbeat's.
pub struct RunSpec<'a> {
    /// linggen's home: the run reads the same settings and database.
    pub home: &'a Path,
    pub root: &'a str,
    pub task: &'a str,
    pub agent: Option<&'a str>,
    pub model: Option<&'a str>,
}

impl RunOutcome {
    /// `LABEL: completed: … (session S)`: what a person is told of a run.
    pub fn told(&self, label: &str) -> String {
        let session = self
            .session_id
            .as_deref()
            .map(|s| format!(" (session {s})"))
            .unwrap_or_default();
        format!("{label}: {}{session}", self.line)
    }
}

/// Runs `spec` to its end. Blocking: call from a thread of its own.
pub fn run(spec: &RunSpec<'_>) -> RunOutcome {
    match spawn_and_read(spec) {
        Ok(outcome) => outcome,
        Err(why) => RunOutcome {
            session_id: None,
            ok: false,
            line: format!("did not run: {why}"),
            denied: Vec::new(),
        },
    }
}

fn spawn_and_read(s: &RunSpec<'_>) -> Result<RunOutcome, String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find linggen's own program: {e}"))?;
    let launch = Launch {
        program: Program::Path(&exe),
        // The run calls the person's models with their keys, as their own `-p` would.
        env: Env::Person,
        confinement: Confinement::Unconfined(
            "linggen itself, running a schedule as `-p`: it confines what the model runs",
        ),
        lifetime: Lifetime::Tied,
    };
    let mut cmd = launch.command().map_err(|e| e.to_string())?;
    // The task goes on stdin, not the command line: no length limit, and not in `ps`.
    cmd.args(["--output-format", "stream-json", "--root", s.root])
        .current_dir(s.root)
        .env("LINGGEN_HOME", s.home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(agent) = s.agent {
        cmd.args(["--agent", agent]);
    }
    if let Some(model) = s.model {
        cmd.args(["--model", model]);
    }
    cmd.arg("-p");
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        let task = s.task.to_string();
        // A thread of its own: a task larger than the pipe waits for the child to read it.
        std::thread::spawn(move || {
            use std::io::Write as _;
            let _ = stdin.write_all(task.as_bytes());
        });
    }
    // stderr is read beside stdout so neither pipe fills while the other is read.
    let stderr = child.stderr.take().map(|err| {
        std::thread::spawn(move || {
            let lines: Vec<String> = std::io::BufReader::new(err)
                .lines()
                .map_while(Result::ok)
                .collect();
            lines
        })
    });
    let mut reading = Reading::default();
    if let Some(out) = child.stdout.take() {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            reading.line(&line);
        }
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    let stderr = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    Ok(reading.outcome(status.code(), &stderr))
}

/// What the run's `stream-json` said so far.
#[derive(Debug, Default)]
struct Reading {
    session_id: Option<String>,
    result: Option<(bool, String)>,
    denied: Vec<String>,
}

impl Reading {
    fn line(&mut self, line: &str) {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let text = |key: &str| event[key].as_str().unwrap_or_default().to_string();
        match event["type"].as_str() {
            Some("SessionStarted") => self.session_id = Some(text("session_id")),
            Some("ToolCallFinished")
                if event["ok"] == false
                    && text("summary").starts_with("not run: ")
                    && text("summary").contains("needs the user's approval") =>
            {
                self.denied.push(text("summary"));
            }
            Some("result") => {
                let ok = event["is_error"] == false;
                self.result = Some((ok, text("result")));
                if self.session_id.is_none() {
                    self.session_id = Some(text("session_id")).filter(|s| !s.is_empty());
                }
            }
            _ => {}
        }
    }

    fn outcome(self, code: Option<i32>, stderr: &[String]) -> RunOutcome {
        let (ok, line) = match (self.result, code) {
            (Some((true, result)), _) => (true, format!("completed: {}", first_line(&result))),
            (Some((false, result)), _) => (false, format!("error: {}", first_line(&result))),
            (None, code) => {
                let why = stderr
                    .iter()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .cloned()
                    .unwrap_or_else(|| format!("exit {}", code.unwrap_or(-1)));
                (false, format!("error: {}", first_line(&why)))
            }
        };
        let line = match self.denied.len() {
            0 => line,
            n => format!(
                "{line} · {} denied (needed approval)",
                crate::text::plural(n, "call", "calls")
            ),
        };
        RunOutcome {
            session_id: self.session_id,
            ok,
            line,
            denied: self.denied,
        }
    }
}

fn first_line(text: &str) -> String {
    crate::text::one_line(text, 200)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_gives_the_session_the_result_and_the_denials() {
        let mut reading = Reading::default();
        for line in [
            r#"{"type":"SessionStarted","session_id":"s1"}"#,
            r#"{"type":"ToolCallFinished","ok":false,"summary":"not run: `Bash: touch x` needs the user's approval (writes), and nobody can approve"}"#,
            r#"{"type":"ToolCallFinished","ok":false,"summary":"exit 1, 2 lines"}"#,
            "not json",
            r#"{"type":"result","is_error":false,"result":"Done.\nmore","session_id":"s1"}"#,
        ] {
            reading.line(line);
        }
        let outcome = reading.outcome(Some(0), &[]);
        assert_eq!(outcome.session_id.as_deref(), Some("s1"));
        assert!(outcome.ok);
        assert_eq!(
            outcome.line,
            "completed: Done.… · 1 call denied (needed approval)"
        );
        assert_eq!(outcome.denied.len(), 1);
        let crashed = Reading::default().outcome(Some(2), &["linggen: error: no model".into()]);
        assert_eq!(
            (crashed.ok, crashed.line.as_str()),
            (false, "error: linggen: error: no model")
        );
    }
}
