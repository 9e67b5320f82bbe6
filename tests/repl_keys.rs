//! Keys for a new line in the same message: Shift+Enter and Ctrl+Enter as a terminal reports
//! them under xterm's modifyOtherKeys (which the shell asks for while it reads a line), beside
//! Ctrl+J and Alt+Enter.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use expectrl::Expect;

use support::pty::{PROMPT, Repl, last_message, workspace};
use support::{Reply, Step};

/// What the shell writes to ask for modified keys' reports, and to give them up.
const ASK: &str = "\x1b[>4;1m";
const GIVE_UP: &str = "\x1b[>4m";

/// Shift+Enter, Ctrl+Enter and Ctrl+Tab as xterm reports them under modifyOtherKeys.
const SHIFT_ENTER: &str = "\x1b[27;2;13~";
const CTRL_ENTER: &str = "\x1b[27;5;13~";
const CTRL_TAB: &str = "\x1b[27;5;9~";
/// The same keys as tmux 3.3 and the kitty protocol report them (`CSI code ; modifiers u`).
const SHIFT_ENTER_U: &str = "\x1b[13;2u";
const CTRL_ENTER_U: &str = "\x1b[13;5u";
const CTRL_TAB_U: &str = "\x1b[9;5u";

#[test]
fn shift_enter_reported_by_the_terminal_starts_a_new_line() {
    let (ws, server) = workspace(vec![
        Step::from(Reply::text("first answer")),
        Reply::text("second answer").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    assert!(
        repl.before_prompt.contains(ASK),
        "the shell did not ask for modified keys: {:?}",
        repl.before_prompt
    );
    // Digits and `~` typed by hand stay; Ctrl+Tab has no use and types nothing.
    repl.send(&format!(
        "one 12~{SHIFT_ENTER}two{CTRL_ENTER}three{CTRL_TAB}\x0afour\x1b\rfive{SHIFT_ENTER_U}\
         six{CTRL_TAB_U}{CTRL_ENTER_U}seven\r"
    ));
    let printed = repl.expect("first answer");
    assert!(
        printed.contains(GIVE_UP),
        "the request was not taken back when the line was read: {printed:?}"
    );
    assert_eq!(
        last_message(&server, "user"),
        "one 12~\ntwo\nthree\nfour\nfive\nsix\nseven"
    );
    repl.expect(PROMPT);

    // A sequence the editor does not know and that is no report (Shift+F5), then a digit
    // typed by hand later: the digit is typed, not taken as part of a report.
    repl.send("\x1b[15;2~");
    std::thread::sleep(Duration::from_millis(300));
    repl.send("5~\r");
    repl.expect("second answer");
    assert_eq!(last_message(&server, "user"), "5~");
    repl.expect(PROMPT);
    repl.line("/quit");
    let rest = repl.expect("resume this session");
    let after = repl.session.expect(expectrl::Eof).unwrap();
    let tail = rest + &String::from_utf8_lossy(after.before());
    assert!(
        tail.rfind(GIVE_UP) > tail.rfind(ASK),
        "the terminal was left reporting modified keys: {tail:?}"
    );
}

#[test]
fn a_dumb_terminal_is_not_asked_for_modified_keys() {
    let (ws, _server) = workspace(vec![]);
    let mut repl = Repl::start_with_env(&ws, &[], &[("TERM", "dumb")]);
    repl.line("/quit");
    let after = repl.session.expect(expectrl::Eof).unwrap();
    let printed = repl.before_prompt.clone() + &String::from_utf8_lossy(after.before());
    assert!(!printed.contains("\x1b[>4"), "{printed:?}");
}
