//! What the shell tells you about a message on its way: what each `@file` attached (or why
//! a mention that reads as a path was not), a dim line while a call is retried, and that
//! the configuration it runs with changed on disk.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::pty::{Repl, workspace};
use support::{Fault, Protocol, Reply, Step, texts, write_config_with};

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

/// An edit of `linggen-agent.toml` while the shell runs is read with the next line: a
/// check allowed only now runs; a file broken meanwhile is one line, and the shell goes on
/// with what it had.
#[test]
fn a_config_edit_is_picked_up_with_the_next_line() {
    let (ws, server) = workspace(vec![Step::from(Reply::text("hi"))]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("/check true");
    repl.expect("`true` is not an allowed check");
    // mtimes can be coarse: make sure the edit lands in a later tick.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    write_config_with(
        ws.home(),
        Protocol::OpenAi,
        &server.url(),
        "[checks]\nallow = [\"true\"]\n",
    );
    repl.line("/check true");
    repl.expect("linggen-agent.toml changed: read again");
    repl.expect("Bash:\u{1b}[0m true");
    repl.expect("exit 0");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(ws.home().join("linggen-agent.toml"), "[[models]\nid = 1\n").unwrap();
    repl.line("hello");
    repl.expect("linggen-agent.toml");
    repl.expect("the shell keeps the configuration it had");
    repl.expect("hi");
    repl.line("/quit");
}
