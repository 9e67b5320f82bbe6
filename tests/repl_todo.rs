//! The todo list the agent keeps (`TodoWrite`, in Claude Code's arguments), as a person sees
//! it in the shell through a real pseudo-terminal: printed under the call that changed it,
//! the item in progress under the answer while the turn runs, the whole list on Ctrl+T, and
//! a bad call answered to the model with what to fix.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::pty::{PROMPT, Repl, workspace};
use support::{Reply, Step};

fn list(statuses: [&str; 3]) -> Value {
    let items = [
        ("Read the code", "Reading the code"),
        ("Run the tests", "Running the tests"),
        ("Ship it", "Shipping it"),
    ];
    let todos: Vec<Value> = items
        .iter()
        .zip(statuses)
        .map(|((content, active), status)| {
            json!({"content": content, "status": status, "activeForm": active, "id": content})
        })
        .collect();
    json!({ "todos": todos })
}

/// The tool results of the last request, in order.
fn tool_results(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn the_agents_todo_list_shows_updates_and_answers_ctrl_t() {
    let slow = Reply::text("Reading now, one piece at a time, slowly enough to watch.")
        .delta_bytes(4)
        .chunk_delay(Duration::from_millis(100));
    let (ws, server) = workspace(vec![
        Step::from(Reply::tool(
            "TodoWrite",
            list(["in_progress", "pending", "pending"]),
        )),
        slow.into(),
        Reply::tool("TodoWrite", list(["completed", "in_progress", "pending"])).into(),
        Reply::tool(
            "TodoWrite",
            json!({"todos": [{"content": "Oops", "status": "doing"}]}),
        )
        .into(),
        Reply::text("Tests next.").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);

    // Before any list, Ctrl+T says there is none.
    repl.send("\x14");
    repl.expect("no todo list in this session");

    repl.line("plan it");
    // Printed under the call, the item in progress bold (its own escape codes around it).
    repl.expect("⎿ ☐ ");
    repl.expect("Read the code");
    repl.expect("Ship it");
    // While the turn runs, the live area names the item in progress.
    repl.expect("☐ 1/3 · Reading the code");
    repl.expect("slowly enough to watch.");
    repl.expect(PROMPT);
    let offered: Vec<String> = server.chat_requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(offered.iter().any(|n| n == "TodoWrite"), "{offered:?}");

    repl.line("go on");
    repl.expect("Tests next.");
    repl.expect(PROMPT);
    // The second list replaced the first; the bad call changed nothing.
    repl.send("\x14");
    repl.expect("todo list · 1 completed, 1 in progress, 1 pending");
    repl.expect("☒ ");
    repl.expect("Read the code");
    repl.expect("Run the tests");

    // The model read what each call did: the counts, then what to fix.
    let results = tool_results(&server.last_chat_request().unwrap());
    assert_eq!(
        results[results.len() - 2],
        "todo list updated: 1 completed, 1 in progress, 1 pending"
    );
    let bad = results.last().unwrap();
    assert!(
        bad.contains("item 1 has status `doing`") && bad.contains("in_progress"),
        "{bad}"
    );
    repl.line("/quit");
}

/// Without colours (`NO_COLOR`) the states still read apart: completed items struck through
/// (an attribute, not a colour), and no colour code anywhere in the list.
#[test]
fn the_list_reads_without_colours() {
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool(
            "TodoWrite",
            list(["completed", "in_progress", "pending"]),
        )),
        Reply::text("Listed.").into(),
    ]);
    let mut repl = Repl::start_with_env(&ws, &[], &[("NO_COLOR", "1")]);
    repl.line("plan it");
    repl.expect("Listed.");
    repl.expect(PROMPT);
    repl.send("\x14");
    repl.expect("todo list · ");
    let shown = repl.expect("Ship it");
    assert!(shown.contains("☒ \x1b[9mRead the code"), "{shown:?}");
    assert!(shown.contains("☐ \x1b[1mRun the tests"), "{shown:?}");
    assert!(
        !shown.contains("\x1b[38;"),
        "a colour under NO_COLOR: {shown:?}"
    );
    repl.line("/quit");
}

/// `linggen -c` resumes the list too: Ctrl+T shows what the last `TodoWrite` left.
#[test]
fn a_resumed_session_shows_its_list_on_ctrl_t() {
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool(
            "TodoWrite",
            list(["completed", "in_progress", "pending"]),
        )),
        Reply::text("Listed.").into(),
    ]);
    let out = support::run(&ws, &["-p", "plan it"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let mut repl = Repl::start(&ws, &["-c"]);
    repl.send("\x14");
    repl.expect("todo list · 1 completed, 1 in progress, 1 pending");
    repl.expect("Ship it");
    repl.line("/quit");
}

/// The list changes no file: no approval, even in plan mode or without a person (`-p`).
#[test]
fn a_todo_write_needs_no_approval_even_in_plan_mode() {
    let (ws, server) = workspace(vec![
        Step::from(Reply::tool(
            "TodoWrite",
            list(["in_progress", "pending", "pending"]),
        )),
        Reply::text("Planned.").into(),
    ]);
    let out = support::run(&ws, &["-p", "plan it", "--permission-mode", "plan"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        support::pty::last_tool_result(&server),
        "todo list updated: 1 in progress, 2 pending"
    );
}
