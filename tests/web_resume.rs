//! A resumed session on the web page: the transcript it replays names every tool call by a
//! distinct id and every message by the run that recorded it, so the page attaches each
//! tool result to its own call (before, a provider's repeated `call_1` piled every result
//! under the first call). Also: a message posted by the page attaches `@file` mentions
//! through the same line grammar as the shell and `-p`.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use support::web_client::Serve;
use support::{Protocol, Reply, ScriptedServer, Step, Workspace, run_with_timeout, texts};

const TIMEOUT: Duration = Duration::from_secs(60);

#[test]
fn a_resumed_transcript_keeps_calls_and_runs_apart() {
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Reply::tool("Read", json!({"path": "a.txt"})).call_id("call_1")),
            Reply::tool("Read", json!({"path": "b.txt"}))
                .call_id("call_1")
                .into(),
            Reply::text("done").into(),
            Reply::text("seen").into(),
        ],
    );
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    ws.write("a.txt", "alpha\n");
    ws.write("b.txt", "bravo\n");
    let out = run_with_timeout(ws.cmd().args(["-p", "read both"]), TIMEOUT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

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

    let session = serve.session();
    let messages: Vec<&Value> = session["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "Message")
        .collect();
    let calls: Vec<String> = messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(calls.len(), 2, "{session:#}");
    assert_eq!(calls.iter().collect::<HashSet<_>>().len(), 2, "{calls:?}");
    let results: Vec<(String, String)> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].0, calls[0]);
    assert!(results[0].1.contains("alpha"), "{results:?}");
    assert_eq!(results[1].0, calls[1]);
    assert!(results[1].1.contains("bravo"), "{results:?}");
    // Every resumed message names the run that recorded it.
    let runs: HashSet<&str> = messages
        .iter()
        .map(|m| m["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(runs.len(), 1, "one turn, one run: {runs:?}");
    assert!(!runs.contains(""), "{session:#}");

    // A message from the page with an `@file` mention: the model receives the file.
    serve.send("compare @a.txt");
    let deadline = std::time::Instant::now() + TIMEOUT;
    let user = loop {
        let sent = server.last_chat_request().map(|r| texts(&r, "user"));
        if let Some(user) = sent.filter(|u| u.len() == 2) {
            break user;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the message reached the model"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(user[1], "compare @a.txt\n\na.txt:\n```\nalpha\n```");
}
