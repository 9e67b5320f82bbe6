//! The shell while it works, through a real pseudo-terminal: what a person sees as an answer
//! streams (a paragraph shows before it ends, a busy line until the turn ends), and that
//! nothing typed is lost (a burst of lines, type-ahead during a turn, Esc).

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use support::pty::{PROMPT, Repl, workspace};
use support::{Reply, Step, texts};

/// Two lines arriving in one read (a fast typist, a laggy link, a paste without bracketed
/// paste) are both sent: the second is not dropped with the editor's read buffer.
#[test]
fn a_burst_of_two_lines_sends_both() {
    let (ws, server) = workspace(vec![
        Step::from(Reply::text("answer one")),
        Reply::text("answer two").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    repl.send("echo A\recho B\r");
    repl.expect("answer one");
    repl.expect("answer two");
    let users = texts(&server.last_chat_request().unwrap(), "user");
    assert_eq!(users, ["echo A", "echo B"]);
    repl.line("/quit");
}

/// A long paragraph without a newline shows while it streams, not only when it ends.
#[test]
fn a_long_paragraph_shows_before_it_ends() {
    let words: Vec<String> = (0..60).map(|i| format!("word{i:02}")).collect();
    let paragraph = words.join(" ");
    let reply = Reply::text(paragraph.clone())
        .delta_bytes(8)
        .chunk_delay(Duration::from_millis(60));
    let (ws, _server) = workspace(vec![Step::from(reply)]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("talk");
    // word05 is on the first row; the answer takes about 3 s to stream.
    let early = repl.expect("word05");
    assert!(!early.contains("word59"), "{early:?}");
    repl.expect("word59");
    repl.expect(PROMPT);
    repl.line("/quit");
}

/// While a turn runs, a busy line says so and how to stop it, even while a command runs
/// with nothing streaming.
#[test]
fn a_busy_line_shows_until_the_turn_ends() {
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool(
            "Bash",
            serde_json::json!({"command": "sleep 2"}),
        )),
        Reply::text("slept").into(),
    ]);
    let mut repl = Repl::start(&ws, &["--permission-mode", "bypass"]);
    repl.line("nap");
    repl.expect("esc to interrupt");
    repl.expect("slept");
    repl.line("/quit");
}
