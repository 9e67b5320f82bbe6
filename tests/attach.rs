//! One live session, however it is opened: a terminal attaches to the workspace's running
//! `linggen serve` (`--attach`, or `--continue` of a session the server has open) instead of
//! opening a copy of its own, and the page and the terminal are two windows on one session.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::pty::{PROMPT, Repl};
use support::web_client::Serve;
use support::{Protocol, Reply, ScriptedServer, Step, Workspace, texts, wait_until};

const TIMEOUT: Duration = Duration::from_secs(20);

fn workspace(script: Vec<Step>) -> (Workspace, ScriptedServer) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, script);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    (ws, server)
}

/// The conversation's messages as the server's session holds them: `(role, content)`.
fn transcript(serve: &Serve) -> Vec<(String, String)> {
    serve.session()["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "Message")
        .map(|m| {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
            (text(&m["role"]), text(&m["content"]))
        })
        .collect()
}

#[test]
fn a_terminal_attached_to_serve_and_its_page_share_one_session_turn_after_turn() {
    let (ws, server) = workspace(vec![
        Reply::text("answer one").into(),
        Reply::text("answer two").into(),
        Reply::text("answer three").into(),
    ]);
    let serve = Serve::start(ws.cmd().arg("serve"));
    let mut repl = Repl::start(&ws, &["--attach"]);
    let before = repl.before_prompt.clone();
    repl.expect_unless_in(&before, "attached to linggen serve");

    repl.line("first from the terminal");
    repl.expect("answer one");
    wait_until(
        "the page's session has the terminal's turn",
        TIMEOUT,
        || transcript(&serve).len() >= 2,
    );
    assert_eq!(
        transcript(&serve),
        [
            ("user".into(), "first from the terminal".into()),
            ("assistant".into(), "answer one".into())
        ]
    );

    serve.send("second from the page");
    repl.expect("[web] second from the page");
    repl.expect("answer two");
    // One session: the model saw the terminal's turn before the page's message.
    let request = server.last_chat_request().unwrap();
    assert_eq!(
        texts(&request, "user"),
        ["first from the terminal", "second from the page"]
    );
    assert_eq!(texts(&request, "assistant"), ["answer one"]);
    assert_eq!(server.chat_requests().len(), 2);

    // Restarting the session is the owner's business, and the terminal says so.
    repl.line("/clear");
    repl.expect("works on a session of this terminal's own");

    // Stored as one session, one turn after the other: the next run resumes both. (Stopped
    // as a person stops it: a `kill -9` right after the answer may come before the store
    // has written it.)
    serve.stop();
    repl.expect("detached from linggen serve");
    let out = support::run(&ws, &["-p", "--continue", "and now?"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let request = server.last_chat_request().unwrap();
    assert_eq!(
        texts(&request, "user"),
        [
            "first from the terminal",
            "second from the page",
            "and now?"
        ]
    );
    assert_eq!(texts(&request, "assistant"), ["answer one", "answer two"]);
}

#[test]
fn continue_attaches_to_the_server_that_has_the_session_open() {
    let (ws, _server) = workspace(vec![
        Reply::text("from the page's turn").into(),
        Reply::text("from the terminal's turn").into(),
    ]);
    let serve = Serve::start(ws.cmd().arg("serve"));
    serve.send("hello from the page");
    wait_until("the page's turn ended", TIMEOUT, || {
        transcript(&serve).len() >= 2
    });

    let mut repl = Repl::start(&ws, &["--continue"]);
    let before = repl.before_prompt.clone();
    repl.expect_unless_in(&before, "attached to linggen serve");
    repl.expect_unless_in(&before, "from the page's turn");
    repl.line("and from here");
    repl.expect("from the terminal's turn");
    wait_until("the server's session has both turns", TIMEOUT, || {
        transcript(&serve).len() >= 4
    });
}

#[test]
fn an_approval_asked_in_serve_is_answered_in_the_attached_terminal() {
    let (ws, _server) = workspace(vec![
        Reply::tool("Write", json!({"file_path": "note.txt", "content": "hi\n"})).into(),
        Reply::text("written").into(),
    ]);
    let _serve = Serve::start(ws.cmd().arg("serve"));
    let mut repl = Repl::start(&ws, &["--attach"]);
    repl.line("write the note");
    repl.expect("Allow Write");
    repl.line("y");
    let shown = repl.expect("written");
    // The server knows who answered: this terminal, not the page.
    assert!(shown.contains("allowed once"), "{shown}");
    assert!(!shown.contains("in web"), "{shown}");
    assert_eq!(ws.read("note.txt"), "hi\n");
}

#[test]
fn the_page_cannot_open_a_session_a_terminal_runs_and_is_told_which_process_has_it() {
    let (ws, _server) = workspace(vec![Reply::text("hi").into()]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("hello");
    repl.expect("hi");
    let serve = Serve::start(ws.cmd().arg("serve"));
    let listed = serve.get("/api/sessions").json();
    let held = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["message_count"].as_u64() > Some(0))
        .unwrap_or_else(|| panic!("the terminal's session is listed: {listed:#}"))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let opened = serve.post("/api/sessions", &json!({ "session_id": held }));
    assert!(opened.status >= 400, "{}", opened.text());
    let why = opened.json()["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(why.contains("in use by another linggen (pid"), "{why}");
}

#[test]
fn attach_without_a_server_says_so_and_exits() {
    let (ws, _server) = workspace(vec![]);
    let mut repl = Repl::start_with_prompt(&ws, &["--attach"], &[], "no `linggen serve` runs");
    repl.expect("linggen serve");
    let status = repl.session.get_process_mut().wait().unwrap();
    assert!(
        matches!(status, expectrl::process::unix::WaitStatus::Exited(_, 1)),
        "{status:?}"
    );
}

#[test]
fn the_terminal_is_told_and_ends_when_the_server_it_is_attached_to_stops() {
    let (ws, _server) = workspace(vec![]);
    let serve = Serve::start(ws.cmd().arg("serve"));
    let mut repl = Repl::start(&ws, &["--attach"]);
    drop(serve);
    repl.expect("detached from linggen serve");
    let status = repl.session.get_process_mut().wait().unwrap();
    assert!(
        matches!(status, expectrl::process::unix::WaitStatus::Exited(_, _)),
        "{status:?}"
    );
    let _ = PROMPT;
}

#[test]
fn a_second_terminal_continues_a_shared_terminal_session_by_attaching_to_it() {
    let (ws, server) = workspace(vec![
        Reply::text("first answer").into(),
        Reply::text("second answer").into(),
    ]);
    let mut owner = Repl::start(&ws, &[]);
    owner.line("hello");
    owner.expect("first answer");
    owner.line("/share");
    owner.expect_share_link();

    let mut second = Repl::start(&ws, &["--continue"]);
    let before = second.before_prompt.clone();
    second.expect_unless_in(&before, "attached to a terminal's /share (pid");
    second.line("from the second terminal");
    second.expect("second answer");
    owner.expect("[attached] from the second terminal");
    owner.expect("second answer");
    let request = server.last_chat_request().unwrap();
    assert_eq!(
        texts(&request, "user"),
        ["hello", "from the second terminal"]
    );
}
