//! The interactive shell through a real pseudo-terminal, against the scripted model server:
//! completion, rendered streaming, approvals, Ctrl+C and type-ahead.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use expectrl::{Expect, Session};
use serde_json::json;
use support::{Protocol, Reply, ScriptedServer, Step, Workspace};

const PROMPT: &str = "ling › ";

struct Repl {
    session: expectrl::session::OsSession,
}

impl Repl {
    fn start(ws: &Workspace, args: &[&str]) -> Repl {
        let mut cmd = ws.cmd();
        // The pty becomes the child's stdio only where the command does not say otherwise.
        cmd.args(args)
            .env("TERM", "xterm-256color")
            .stdin(std::process::Stdio::inherit())
            .stdout(std::process::Stdio::inherit())
            .stderr(std::process::Stdio::inherit());
        let mut session = Session::spawn(cmd).expect("spawn linggen in a pty");
        session.set_expect_timeout(Some(Duration::from_secs(20)));
        let mut repl = Repl { session };
        repl.expect(PROMPT);
        repl
    }

    /// Waits for `needle`; returns everything printed up to and including it.
    fn expect(&mut self, needle: &str) -> String {
        match self.session.expect(needle) {
            Ok(found) => String::from_utf8_lossy(found.before()).into_owned() + needle,
            Err(e) => panic!("waiting for {needle:?}: {e}"),
        }
    }

    fn send(&mut self, text: &str) {
        self.session.send(text).unwrap();
    }

    fn line(&mut self, text: &str) {
        self.send(text);
        self.send("\r");
    }
}

fn workspace(script: Vec<Step>) -> (Workspace, ScriptedServer) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, script);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    (ws, server)
}

fn last_tool_result(server: &ScriptedServer) -> String {
    let body = server.last_chat_request().unwrap();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

#[test]
fn tab_completes_commands_and_agents() {
    let (ws, _server) = workspace(vec![]);
    let mut repl = Repl::start(&ws, &[]);
    repl.send("/he\t");
    repl.expect("/help");
    repl.send("\r");
    repl.expect("Commands:");
    repl.expect(PROMPT);
    repl.send("@co\t");
    repl.expect("@coder");
    repl.send("\x15"); // Ctrl+U clears the line
    repl.line("/quit");
}

#[test]
fn a_streamed_answer_is_rendered() {
    let answer =
        "Here is **bold** text.\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\nDone.\n";
    let (ws, _server) = workspace(vec![Step::from(Reply::text(answer).delta_bytes(3))]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("show me");
    let out = repl.expect("Done.");
    let tail = out.rsplit("show me").next().unwrap_or_default();
    assert!(!tail.contains("**"), "raw emphasis markers: {tail:?}");
    assert!(!tail.contains("```"), "raw fences: {tail:?}");
    assert!(tail.contains("bold"), "{tail:?}");
    assert!(tail.contains("println!"), "{tail:?}");
    // Bold and highlighted code come out as terminal escape sequences.
    assert!(tail.contains("\x1b[1m"), "no bold: {tail:?}");
    assert!(tail.contains("\x1b[38;"), "no highlighted code: {tail:?}");
    repl.line("/quit");
}

fn write(path: &str, content: &str) -> Reply {
    Reply::tool("Write", json!({"path": path, "content": content}))
}

#[test]
fn approvals_yes_always_no_and_reason() {
    let (ws, server) = workspace(vec![
        Step::from(write("a.txt", "A")),
        Reply::text("wrote a").into(),
        write("b.txt", "B").into(),
        write("b.txt", "BB").into(),
        Reply::text("wrote b twice").into(),
        write("c.txt", "C").into(),
        Reply::text("ok, not c").into(),
        write("d.txt", "D").into(),
        Reply::text("ok, not d").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);

    repl.line("write a");
    repl.expect("Allow Write");
    repl.expect("type a reason");
    repl.line("y");
    repl.expect("wrote a");
    assert_eq!(ws.read("a.txt"), "A");

    repl.line("write b twice");
    repl.expect("Allow Write");
    repl.expect("type a reason");
    repl.line("a");
    repl.expect("wrote b twice");
    assert_eq!(
        ws.read("b.txt"),
        "BB",
        "the second write ran without asking"
    );

    repl.line("write c");
    repl.expect("Allow Write");
    repl.expect("type a reason");
    repl.line("n");
    repl.expect("ok, not c");
    assert!(!ws.root().join("c.txt").exists());

    repl.line("write d");
    repl.expect("Allow Write");
    repl.expect("type a reason");
    repl.line("use e.txt instead");
    repl.expect("ok, not d");
    assert!(!ws.root().join("d.txt").exists());
    assert!(last_tool_result(&server).contains("use e.txt instead"));
    repl.line("/quit");
}

#[test]
fn ctrl_c_cancels_a_slow_stream_and_type_ahead_is_sent_next() {
    let slow = Reply::text("tick tick\n\n".repeat(400))
        .delta_bytes(5)
        .chunk_delay(Duration::from_millis(20));
    let (ws, server) = workspace(vec![Step::from(slow), Reply::text("second answer").into()]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("go slowly");
    repl.expect("tick tick");
    // Typed while the answer streams: queued, sent after this turn.
    repl.line("the next question");
    repl.expect("queued");
    let started = Instant::now();
    repl.send("\x03"); // Ctrl+C on the (empty) line: cancel the turn
    repl.expect("cancelled");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "cancel took {:?}",
        started.elapsed()
    );
    repl.expect("second answer");
    let last = server.last_chat_request().unwrap();
    assert!(last.to_string().contains("the next question"));
    repl.line("/quit");
}

#[test]
fn a_spinner_shows_elapsed_time_until_the_first_token() {
    let slow_start = Reply::text("late answer\n").chunk_delay(Duration::from_millis(1500));
    let (ws, _server) = workspace(vec![Step::from(slow_start)]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("take your time");
    let out = repl.expect("late answer");
    assert!(out.contains("thinking… 0."), "no spinner: {out:?}");
    repl.line("/quit");
}
