//! A long answer through the real binary: printed whole, stored once (the audit trail's
//! outcome names the answer's message instead of copying it), shown by `linggen runs show`,
//! and resumed whole by `--continue`. Memory figures live in benches/memory.rs.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::Value;
use support::{Protocol, Reply, ScriptedServer, TEST_KEY_ENV, Workspace, run, texts};

/// Longer than the store's threshold for writing a message's text in place (256 KiB).
fn long_answer() -> String {
    let mut text = String::from("The whole report, first line.\n\n");
    let mut n = 0;
    while text.len() < 400 * 1024 {
        text.push_str(&format!("- item {n}: naïve café \"quoted\" text\n"));
        n += 1;
    }
    text.push_str("The end.");
    text
}

fn run_id(stream_json: &str) -> String {
    stream_json
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "RunStarted")
        .and_then(|e| e["run_id"].as_str().map(str::to_string))
        .unwrap()
}

#[test]
fn a_long_answer_is_printed_stored_once_shown_and_resumed() {
    let answer = long_answer();
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Reply::text(answer.clone()).delta_bytes(64),
            Reply::text("short"),
        ],
    );
    let ws = Workspace::new();
    // A window the long answer fits in, so that `--continue` sends it as it is.
    let config = format!(
        "[[models]]\nid = \"test\"\nprovider = \"openai\"\nmodel = \"scripted\"\n\
         url = \"{}\"\napi_key_env = \"{TEST_KEY_ENV}\"\ncontext_window = 1000000\n",
        server.url()
    );
    std::fs::write(ws.home().join("linggen-agent.toml"), config).unwrap();

    let r = run(
        &ws,
        &["-q", "-p", "write it", "--output-format", "stream-json"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let result: Value = serde_json::from_str(r.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(result["result"].as_str(), Some(answer.as_str()));
    let id = run_id(&r.stdout);

    // Stored once: the outcome entry names the message and holds no copy.
    let db = rusqlite::Connection::open(ws.home().join("linggen.db")).unwrap();
    let (detail, message_id): (Option<String>, Option<i64>) = db
        .query_row(
            "SELECT detail, message_id FROM run_log WHERE run_id = ?1 AND kind = 'outcome'",
            [&id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!(detail, None);
    let stored: String = db
        .query_row(
            "SELECT CAST(body AS TEXT) FROM messages WHERE id = ?1",
            [message_id.unwrap()],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(stored, answer);
    drop(db);

    let shown = run(&ws, &["runs", "show", &id[..8]]);
    assert_eq!(shown.code, Some(0), "{}", shown.stderr);
    assert!(
        shown
            .stdout
            .contains("outcome: completed — The whole report, first line."),
        "{}",
        shown.stdout
    );

    let next = run(&ws, &["-q", "-p", "--continue", "and now?"]);
    assert_eq!(next.code, Some(0), "{}", next.stderr);
    let resumed = texts(&server.last_chat_request().unwrap(), "assistant");
    assert_eq!(resumed, [answer]);
}
