//! The agent's todo list on the web: a `TodoWrite` reaches the page's event stream as
//! `TodosUpdated` and the late joiner's snapshot as `state.todos` (the session's one
//! projection), and a session resumed from the store has its list back.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::web_client::Serve;
use support::{Protocol, Reply, ScriptedServer, Step, Workspace, run};

const WAIT: Duration = Duration::from_secs(30);

fn todos() -> Value {
    json!({"todos": [
        {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
        {"content": "Run <b>the</b> tests", "status": "in_progress", "activeForm": "Running the tests"},
    ]})
}

/// The list as events and the snapshot publish it.
fn published() -> Value {
    json!([
        {"content": "Read the code", "status": "completed", "active_form": "Reading the code"},
        {"content": "Run <b>the</b> tests", "status": "in_progress", "active_form": "Running the tests"},
    ])
}

fn workspace(script: Vec<Step>) -> (Workspace, ScriptedServer) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, script);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    (ws, server)
}

#[test]
fn a_todo_write_reaches_the_stream_and_the_snapshot() {
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool("TodoWrite", todos())),
        Reply::text("Planned.").into(),
    ]);
    let serve = Serve::start(ws.cmd().arg("serve"));
    assert_eq!(serve.session()["state"]["todos"], json!([]));
    let mut stream = serve.events(None);
    serve.send("plan it");
    let seen = stream.until(WAIT, |e| e.kind() == "TodosUpdated");
    assert_eq!(seen.last().unwrap().data["todos"], published());
    stream.until(WAIT, |e| e.kind() == "Outcome");

    let snapshot = serve.session();
    assert_eq!(snapshot["state"]["todos"], published(), "{snapshot:#}");
    // State, like the queue: not repeated in the transcript.
    let transcript = snapshot["transcript"].as_array().unwrap();
    assert!(
        transcript.iter().all(|e| e["type"] != "TodosUpdated"),
        "{transcript:#?}"
    );
}

#[test]
fn a_resumed_session_has_its_list_back() {
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool("TodoWrite", todos())),
        Reply::text("Planned.").into(),
    ]);
    let out = run(&ws, &["-p", "plan it"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);

    let serve = Serve::start(ws.cmd().arg("serve"));
    let list = serve.get("/api/sessions").json();
    let stored = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["message_count"].as_u64() > Some(0))
        .unwrap_or_else(|| panic!("the -p session is listed: {list:#}"))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let opened = serve.post("/api/sessions", &json!({"session_id": stored}));
    assert_eq!(opened.status, 200, "{}", opened.text());
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let snapshot = serve.session();
        if snapshot["state"]["todos"] == published() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the resumed session's list: {snapshot:#}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
