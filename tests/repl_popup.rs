//! The live list under the line while a `/` command or an `@` mention is typed: it follows
//! each keystroke, ↑↓ choose, Tab or Enter takes the chosen entry into the line, Esc closes
//! it, and the arrows walk the history again where nothing is being completed.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use support::pty::{Repl, workspace};
use support::{Reply, Step, texts};

const DOWN: &str = "\x1b[B";
const UP: &str = "\x1b[A";
const ESC: &str = "\x1b";

#[test]
fn slash_lists_commands_as_you_type_and_takes_the_chosen_one() {
    let (ws, _server) = workspace(vec![]);
    let mut repl = Repl::start(&ws, &[]);
    repl.send("/mo");
    repl.expect("› /mo");
    let list = repl.expect("❯ /model <id>");
    assert!(!list.contains("/help"), "only what matches: {list:?}");
    repl.expect("/mode [chat|auto|talk]");
    repl.send(DOWN);
    repl.expect("❯ /mode [chat|auto|talk]");
    // Enter takes the entry into the line rather than sending `/mo`.
    repl.send("\r");
    repl.send("auto\r");
    repl.expect("mode auto");
    // A command typed whole sends on the first Enter, and Up recalls it rather than
    // moving in a list.
    repl.line("/help");
    repl.expect("/rewind");
    repl.expect("ling [auto] › ");
    repl.send(UP);
    repl.send(UP);
    repl.send("\r");
    repl.expect("mode auto");
    repl.line("/quit");
}

#[test]
fn esc_closes_the_list_and_enter_sends_the_line_as_typed() {
    let (ws, _server) = workspace(vec![]);
    let mut repl = Repl::start(&ws, &[]);
    repl.send("/hel");
    repl.expect("❯ /help");
    repl.send(ESC);
    // Esc waits for the rest of a possible key sequence before it counts as Esc.
    std::thread::sleep(std::time::Duration::from_millis(300));
    repl.send("\r");
    repl.expect("Did you mean /help?");
    repl.line("/quit");
}

/// While a turn runs, the list offers what can run meanwhile, and Esc closes the list
/// instead of interrupting the turn.
#[test]
fn esc_on_the_list_during_a_turn_leaves_the_turn_running() {
    let words: Vec<String> = (0..60).map(|i| format!("word{i:02}")).collect();
    let slow = Reply::text(words.join(" "))
        .delta_bytes(7)
        .chunk_delay(Duration::from_millis(40));
    let (ws, _server) = workspace(vec![Step::from(slow)]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("talk slowly");
    repl.expect("word01");
    repl.send("/c");
    let list = repl.expect("❯ /context");
    assert!(!list.contains("/clear"), "not while busy: {list:?}");
    repl.send(ESC);
    std::thread::sleep(Duration::from_millis(300));
    // The turn goes on to its end; nothing was interrupted.
    let rest = repl.expect("word59");
    assert!(!rest.contains("cancelled"), "{rest:?}");
    repl.send("\x15"); // Ctrl+U
    repl.line("/quit");
}

#[test]
fn at_lists_workspace_files_and_tab_attaches_the_chosen_one() {
    let (ws, server) = workspace(vec![Step::from(Reply::text("read it"))]);
    ws.write("notes/plan.md", "step one: measure\n");
    ws.write("notes/other.md", "unrelated\n");
    let mut repl = Repl::start(&ws, &[]);
    repl.send("summarize @plan");
    repl.expect("❯ @notes/plan.md");
    repl.send("\t");
    repl.send("please\r");
    repl.expect("read it");
    let request = server.last_chat_request().unwrap();
    let user = texts(&request, "user").join("\n");
    assert!(user.contains("summarize @notes/plan.md please"), "{user}");
    assert!(user.contains("step one: measure"), "{user}");
    repl.line("/quit");
}
