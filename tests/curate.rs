//! Curated reads (`[context] curate_reads`) through the binary: a whole read of a long
//! file first asks the curator (no tools, a low temperature, the answer's schema), and the
//! model gets the chosen ranges with their numbers; a short file, a read with a range, or a
//! curator that fails all give the plain read.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::{Fault, Protocol, Reply, ScriptedServer, Step, Workspace, run, texts};

fn workspace(script: Vec<Step>) -> (Workspace, ScriptedServer) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, script);
    let ws = Workspace::new();
    support::write_config_with(
        ws.home(),
        Protocol::OpenAi,
        &server.url(),
        "\n[context]\ncurate_reads = true\n",
    );
    let text: String = (1..=300).map(|i| format!("line {i}\n")).collect();
    ws.write("big.txt", &text);
    ws.write("small.txt", "one\ntwo\n");
    (ws, server)
}

fn tool_result(server: &ScriptedServer) -> String {
    texts(&server.last_chat_request().unwrap(), "tool")
        .pop()
        .unwrap()
}

#[test]
fn a_long_file_read_whole_is_curated() {
    let (ws, server) = workspace(vec![
        Step::from(Reply::tool("Read", json!({"path": "big.txt"}))),
        Reply::text(r#"{"summary": "Numbered lines.", "ranges": [[10, 20], [18, 25]]}"#).into(),
        Reply::text("Lines 10 to 25 matter.").into(),
    ]);
    let out = run(&ws, &["-p", "what is around line 15?"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let result = tool_result(&server);
    assert!(
        result.starts_with("big.txt: 300 lines, curated for this conversation: Numbered lines.\nShown: lines 10-25 (16 of 300)."),
        "{result}"
    );
    assert!(
        result.contains("\n10\tline 10\n") && result.contains("\n25\tline 25\n"),
        "{result}"
    );
    assert!(
        !result.contains("\tline 26\n") && !result.contains("\tline 9\n"),
        "{result}"
    );
    // The curator's request: the file and the question, no tools, low temperature, a schema.
    let requests = server.chat_requests();
    let curator: &Value = &requests[1];
    assert!(curator.get("tools").is_none(), "{curator}");
    assert_eq!(
        curator["temperature"].as_f64().map(|t| (t * 10.0).round()),
        Some(1.0)
    );
    assert!(
        curator["response_format"]["json_schema"]["schema"]["required"]
            == json!(["summary", "ranges"])
    );
    let asked = texts(curator, "user").join("\n");
    assert!(
        asked.contains("what is around line 15?") && asked.contains("300\tline 300"),
        "{asked}"
    );
}

#[test]
fn short_files_ranges_and_a_failing_curator_give_the_plain_read() {
    let (ws, server) = workspace(vec![
        Step::from(Reply::tools(vec![
            ("Read", json!({"path": "small.txt"})),
            ("Read", json!({"path": "big.txt", "line_range": [1, 200]})),
        ])),
        Reply::tool("Read", json!({"path": "big.txt"})).into(),
        // The curator's request is refused (not retried): the plain read it is.
        Step::from(Fault::api_error(400, "curator refused")),
        Reply::text("Read them all.").into(),
    ]);
    let out = run(&ws, &["-p", "read them"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let results = texts(&server.last_chat_request().unwrap(), "tool");
    assert_eq!(results[0], "1\tone\n2\ttwo\n");
    assert!(
        results[1].starts_with("  1\tline 1\n") && !results[1].contains("curated"),
        "{}",
        results[1]
    );
    assert!(
        results[2].starts_with("  1\tline 1\n") && results[2].contains("300\tline 300"),
        "{}",
        results[2]
    );
}
