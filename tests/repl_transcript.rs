//! Ctrl+O: the session's full transcript in a viewer on the alternate screen — every tool
//! call's whole output, arguments and diff, which the scrollback folds — searchable, left
//! with `q`, the line being typed kept; what a running turn prints meanwhile waits.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use support::pty::{PROMPT, Repl, workspace};
use support::{Reply, Step, texts};

const CTRL_O: &str = "\x0f";
const ENTER_ALT: &str = "\x1b[?1049h";
const LEAVE_ALT: &str = "\x1b[?1049l";

#[test]
fn ctrl_o_shows_every_line_of_output_the_scrollback_folded_and_the_diff() {
    let (ws, server) = workspace(vec![
        Step::from(Reply::tool(
            "Bash",
            serde_json::json!({"command": "seq 1 40 | sed s/^/row/"}),
        )),
        Reply::tool(
            "Write",
            serde_json::json!({"file_path": "notes.txt", "content": "first note\n"}),
        )
        .into(),
        Reply::text("made the **rows**").into(),
        Reply::text("next answer").into(),
    ]);
    let prompt = "ling [bypass] › ";
    let mut repl = Repl::start_with_prompt(&ws, &["--permission-mode", "bypass"], &[], prompt);
    repl.line("list the rows");
    let folded = repl.expect("made the");
    assert!(folded.contains("exit 0, 40 lines"), "{folded:?}");
    assert!(!folded.contains("row17"), "the scrollback folds the output");
    repl.expect(prompt);
    repl.send("half typed");
    repl.expect("half typed");
    repl.send(CTRL_O);
    repl.expect(ENTER_ALT);
    // It opens at the end: the last answer and the status row.
    repl.expect("transcript · lines");
    // Searching finds a row the scrollback never showed, marked.
    repl.send("/row17\r");
    repl.expect("\x1b[7mrow17\x1b[0m");
    // The call's arguments in full, and the diff of the write.
    repl.send("g");
    let top = repl.expect("list the rows");
    assert!(!top.contains("no match"), "{top:?}");
    repl.send("/first note\r");
    let diff = repl.expect("+\x1b[7mfirst note");
    assert!(!diff.contains("no match"), "{diff:?}");
    repl.send("/seq 1 40\r");
    repl.expect("\x1b[7mseq 1 40\x1b[0m");
    repl.send("q");
    repl.expect(LEAVE_ALT);
    // Back at the prompt with the line as it was.
    repl.expect("half typed");
    repl.line(" and more");
    repl.expect("next answer");
    let users = texts(&server.last_chat_request().unwrap(), "user");
    assert_eq!(users.last().unwrap(), "half typed and more");
    repl.line("/quit");
}

/// A turn that keeps printing while the viewer is open does not write over it: its output
/// comes out, in order, once the viewer closes.
#[test]
fn output_of_a_running_turn_waits_for_the_viewer_to_close() {
    let words: Vec<String> = (0..40).map(|i| format!("word{i:02}")).collect();
    let reply = Reply::text(words.join(" "))
        .delta_bytes(8)
        .chunk_delay(Duration::from_millis(40));
    let (ws, _server) = workspace(vec![Step::from(reply)]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("talk slowly");
    repl.expect("word02");
    repl.send(CTRL_O);
    repl.expect(ENTER_ALT);
    repl.expect("transcript · lines");
    // The answer ends (about 1.5 s) while the viewer is open; nothing of it reaches the
    // alternate screen.
    std::thread::sleep(Duration::from_millis(2500));
    repl.send("q");
    let shown = repl.expect(LEAVE_ALT);
    assert!(!shown.contains("word39"), "{shown:?}");
    repl.expect("word39");
    repl.expect(PROMPT);
    repl.line("/quit");
}
