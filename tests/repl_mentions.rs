//! `@file` in the shell says what it attached (lines and size), or why a mention that reads
//! as a path was not, before the answer comes; a mention like `@ling` says nothing.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::pty::{Repl, workspace};
use support::{Reply, Step, texts};

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
