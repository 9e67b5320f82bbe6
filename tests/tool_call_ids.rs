//! Tool-call ids are the session's own: a provider that repeats an id across responses
//! (Ollama's `call_0` per response, a server that always says `call_1`) must not make two
//! calls share one, neither in the events, nor in the history sent back, nor after
//! `--continue`. Through the real binary and the scripted wire protocols.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde_json::{Value, json};
use support::{Protocol, Reply, ScriptedServer, Step, Workspace, run_with_timeout};

const TIMEOUT: Duration = Duration::from_secs(60);

fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

/// An id and what goes with it.
type Pair = (String, String);

/// (call id, the `path` argument) of every tool call in a request body, and (result id,
/// result text) of every tool result, whatever the protocol.
fn calls_and_results(protocol: Protocol, body: &Value) -> (Vec<Pair>, Vec<Pair>) {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let (mut calls, mut results) = (Vec::new(), Vec::new());
    for m in &messages {
        match protocol {
            Protocol::Anthropic => {
                for block in m["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_use" {
                        let path = block["input"]["path"].as_str().unwrap_or_default();
                        calls.push((block["id"].as_str().unwrap().to_string(), path.to_string()));
                    }
                    if block["type"] == "tool_result" {
                        let text = match &block["content"] {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        results.push((block["tool_use_id"].as_str().unwrap().to_string(), text));
                    }
                }
            }
            _ => {
                for call in m["tool_calls"].as_array().into_iter().flatten() {
                    let args = &call["function"]["arguments"];
                    let args: Value = match args {
                        Value::String(s) => serde_json::from_str(s).unwrap(),
                        other => other.clone(),
                    };
                    let path = args["path"].as_str().unwrap_or_default().to_string();
                    calls.push((call["id"].as_str().unwrap_or_default().to_string(), path));
                }
                if m["role"] == "tool" {
                    let id = m["tool_call_id"].as_str().unwrap_or_default().to_string();
                    results.push((id, m["content"].as_str().unwrap_or_default().to_string()));
                }
            }
        }
    }
    (calls, results)
}

/// Every call id in `body` is distinct and each result names the call that produced it:
/// the result of reading `x.txt` holds x's text.
fn assert_paired(protocol: Protocol, body: &Value, contents: &HashMap<&str, &str>) {
    let (calls, results) = calls_and_results(protocol, body);
    assert_eq!(results.len(), calls.len(), "{body}");
    // Ollama's wire has no ids: it pairs results with calls by order.
    let by_order = protocol == Protocol::Ollama;
    if !by_order {
        let ids: HashSet<&String> = calls.iter().map(|(id, _)| id).collect();
        assert_eq!(ids.len(), calls.len(), "repeated call ids in {calls:?}");
    }
    for (i, (id, path)) in calls.iter().enumerate() {
        let (_, text) = if by_order {
            &results[i]
        } else {
            results
                .iter()
                .find(|(rid, _)| rid == id)
                .unwrap_or_else(|| panic!("no result for call {id} in {body}"))
        };
        let expected = contents[path.as_str()];
        assert!(text.contains(expected), "result of {path} is {text:?}");
    }
}

fn repeated_ids_stay_apart(protocol: Protocol) {
    // Ollama's wire has no ids: the provider numbers calls per response, so both say call_0.
    let server = ScriptedServer::start_background(
        protocol,
        vec![
            Step::from(Reply::tool("Read", json!({"path": "a.txt"})).call_id("call_1")),
            Reply::tool("Read", json!({"path": "b.txt"}))
                .call_id("call_1")
                .into(),
            Reply::text("done").into(),
            Reply::tool("Read", json!({"path": "c.txt"}))
                .call_id("call_1")
                .into(),
            Reply::text("done again").into(),
        ],
    );
    let ws = Workspace::new();
    ws.configure(protocol, &server.url());
    ws.write("a.txt", "alpha\n");
    ws.write("b.txt", "bravo\n");
    ws.write("c.txt", "charlie\n");
    let contents = HashMap::from([("a.txt", "alpha"), ("b.txt", "bravo"), ("c.txt", "charlie")]);
    let out = run_with_timeout(
        ws.cmd()
            .args(["-p", "read both", "--output-format", "stream-json"]),
        TIMEOUT,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The events: two calls, two ids, each finished call and result under its own id.
    let events = events(&stdout);
    let started: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "ToolCallStarted")
        .map(|e| e["call_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(started.len(), 2, "{stdout}");
    assert_ne!(started[0], started[1], "{stdout}");
    let finished: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "ToolCallFinished")
        .map(|e| e["call_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(finished, started);
    let in_messages: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "Message")
        .flat_map(|e| e["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(in_messages, started);
    let answered: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "Message" && e["role"] == "tool")
        .map(|e| e["tool_call_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(answered, started);

    // The history sent back pairs each result with its own call.
    assert_paired(protocol, &server.last_chat_request().unwrap(), &contents);

    // Resumed, the earlier calls and a new one that repeats the id again stay apart.
    let out = run_with_timeout(ws.cmd().args(["-p", "and c", "--continue"]), TIMEOUT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = server.last_chat_request().unwrap();
    assert_paired(protocol, &last, &contents);
    assert_eq!(calls_and_results(protocol, &last).0.len(), 3);
}

#[test]
fn openai_repeated_call_ids_stay_apart() {
    repeated_ids_stay_apart(Protocol::OpenAi);
}

#[test]
fn anthropic_repeated_call_ids_stay_apart() {
    repeated_ids_stay_apart(Protocol::Anthropic);
}

#[test]
fn ollama_repeated_call_ids_stay_apart() {
    repeated_ids_stay_apart(Protocol::Ollama);
}
