//! What the shell tells you about a message on its way: what each `@file` attached (or why
//! a mention that reads as a path was not), and a dim line while a call is retried.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::pty::{Repl, workspace};
use support::{Fault, Reply, Step, texts};

#[test]
fn an_at_file_mention_says_what_it_attached_or_why_not() {
    let (ws, server) = workspace(vec![Step::from(Reply::text("read them"))]);
    ws.write(
        "src/lib.rs",
        "pub fn a() {}\npub fn b() {}\npub fn c() {}\n",
    );
    std::fs::create_dir_all(ws.root().join("docs")).unwrap();
    let mut repl = Repl::start(&ws, &[]);
    repl.line("explain @src/lib.rs, @nope/x.rs, @docs and ask @ling");
    let shown = repl.expect("read them");
    assert!(shown.contains("⎿ src/lib.rs · 3 lines, 1 KB"), "{shown:?}");
    assert!(
        shown.contains("⎿ @nope/x.rs: no such file, sent as text"),
        "{shown:?}"
    );
    assert!(
        shown.contains("⎿ @docs is a folder, not attached"),
        "{shown:?}"
    );
    assert!(
        !shown.contains("@ling:") && !shown.contains("@ling not"),
        "{shown:?}"
    );
    let request = server.last_chat_request().unwrap();
    let user = texts(&request, "user").join("\n");
    assert!(user.contains("pub fn b() {}"), "{user}");
    repl.line("/quit");
}

/// A 429 is retried after the server's `Retry-After`; meanwhile a dim line says so.
#[test]
fn a_retried_call_shows_a_line_while_it_waits() {
    let (ws, _server) = workspace(vec![
        Step::Fault(Fault::rate_limited(1)),
        Reply::text("made it").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("hello");
    let shown = repl.expect("made it");
    assert!(
        shown.contains("↻ test: 429") && shown.contains("retrying in 1.0 s (attempt 2 of 4)"),
        "{shown:?}"
    );
    repl.line("/quit");
}
