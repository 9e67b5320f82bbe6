//! Model server failures: each gives one clear line naming the model and its URL, the
//! documented exit code, no panic, no hang — and the session database stays intact.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Fault, Protocol, Reply, Run, ScriptedServer, Step, Workspace, run};

/// The error is one `linggen: error:` line naming the model and the URL, with no panic.
fn assert_one_clear_line(r: &Run, url: &str, needle: &str) {
    let errors: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("linggen: error:"))
        .collect();
    assert_eq!(errors.len(), 1, "stderr: {}", r.stderr);
    assert!(errors[0].contains(url), "no URL in: {}", errors[0]);
    assert!(errors[0].contains("scripted"), "no model in: {}", errors[0]);
    assert!(
        errors[0].contains(needle),
        "expected {needle:?} in: {}",
        errors[0]
    );
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert_eq!(r.stdout, "", "nothing on stdout for a failed task");
}

/// After a failure the database still opens, lists the session and holds the user's message.
fn assert_database_intact(ws: &Workspace) {
    let r = run(ws, &["sessions"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.lines().count(), 2, "{}", r.stdout);
    assert!(r.stdout.contains("the task"), "{}", r.stdout);
}

#[test]
fn server_down() {
    let ws = Workspace::new();
    // A port nothing listens on: bind, note it, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    ws.configure(Protocol::OpenAi, &url);
    let started = Instant::now();
    let r = run(&ws, &["-p", "the task"]);
    assert_eq!(r.code, Some(1));
    assert_one_clear_line(&r, &url, "is the server running?");
    // Connect errors are retried with a bounded backoff, not forever.
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_database_intact(&ws);
}

#[test]
fn http_500_shows_the_servers_message() {
    for protocol in [Protocol::OpenAi, Protocol::Ollama, Protocol::Anthropic] {
        let server = ScriptedServer::start_background(
            protocol,
            vec![
                Step::from(Fault::api_error(500, "model exploded")),
                Fault::api_error(500, "model exploded").into(),
                Fault::api_error(500, "model exploded").into(),
                Fault::api_error(500, "model exploded").into(),
            ],
        );
        let ws = Workspace::new();
        ws.configure(protocol, &server.url());
        let r = run(&ws, &["-p", "the task"]);
        assert_eq!(r.code, Some(1), "{protocol:?}");
        assert_one_clear_line(&r, &server.url(), "model exploded");
        assert!(r.stderr.contains("HTTP 500"), "{}", r.stderr);
        // 5xx is retried a bounded number of times.
        assert_eq!(server.chat_requests().len(), 4, "{protocol:?}");
        assert_database_intact(&ws);
    }
}

#[test]
fn http_400_is_not_retried() {
    let server = ScriptedServer::start_background(
        Protocol::Anthropic,
        vec![Step::from(Fault::api_error(400, "max_tokens: too large"))],
    );
    let ws = Workspace::new();
    ws.configure(Protocol::Anthropic, &server.url());
    let r = run(&ws, &["-p", "the task"]);
    assert_eq!(r.code, Some(1));
    assert_one_clear_line(&r, &server.url(), "max_tokens: too large");
    assert_eq!(server.chat_requests().len(), 1);
}

#[test]
fn rate_limit_honours_retry_after() {
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Fault::rate_limited(1)),
            Reply::text("after the wait").into(),
        ],
    );
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    let started = Instant::now();
    let r = run(&ws, &["-p", "the task"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, "after the wait\n");
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "Retry-After was not honoured"
    );
    assert_eq!(server.chat_requests().len(), 2);
}

/// An answer that breaks off is asked for once more (announced); when that breaks off too,
/// the error stands.
#[test]
fn disconnect_mid_stream() {
    for protocol in [Protocol::OpenAi, Protocol::Ollama, Protocol::Anthropic] {
        let server = ScriptedServer::start_background(
            protocol,
            vec![
                Step::from(Fault::DisconnectMidStream),
                Fault::DisconnectMidStream.into(),
            ],
        );
        let ws = Workspace::new();
        ws.configure(protocol, &server.url());
        let r = run(&ws, &["-p", "the task"]);
        assert_eq!(r.code, Some(1), "{protocol:?}: {}", r.stderr);
        assert_one_clear_line(&r, &server.url(), "closed the connection");
        assert!(
            r.stderr.contains("broke off the answer; asking it again"),
            "{protocol:?}: {}",
            r.stderr
        );
        assert_eq!(server.chat_requests().len(), 2, "{protocol:?}");
        assert_database_intact(&ws);
    }
}

/// The answer asked for again replaces what had streamed before the break: streamed text
/// is never joined to the new answer.
#[test]
fn a_broken_off_answer_is_asked_for_again() {
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Fault::DisconnectMidStream),
            Reply::text("the whole answer").into(),
        ],
    );
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    let r = run(&ws, &["-p", "the task"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, "the whole answer\n");
    assert!(r.stderr.contains("asking it again"), "{}", r.stderr);
    assert_eq!(server.chat_requests().len(), 2);
}

#[test]
fn malformed_chunk() {
    for protocol in [Protocol::OpenAi, Protocol::Ollama, Protocol::Anthropic] {
        let server =
            ScriptedServer::start_background(protocol, vec![Step::from(Fault::MalformedChunk)]);
        let ws = Workspace::new();
        ws.configure(protocol, &server.url());
        let r = run(&ws, &["-p", "the task"]);
        assert_eq!(r.code, Some(1), "{protocol:?}: {}", r.stderr);
        assert_one_clear_line(&r, &server.url(), "malformed");
        assert_database_intact(&ws);
    }
}

#[test]
fn error_inside_the_stream() {
    let server = ScriptedServer::start_background(
        Protocol::Anthropic,
        vec![Step::from(Fault::StreamError("Overloaded".into()))],
    );
    let ws = Workspace::new();
    ws.configure(Protocol::Anthropic, &server.url());
    let r = run(&ws, &["-p", "the task", "--output-format", "json"]);
    assert_eq!(r.code, Some(1));
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["is_error"], true);
    assert_eq!(v["subtype"], "error_during_execution");
    assert!(v["result"].as_str().unwrap().contains("Overloaded"), "{v}");
}

#[test]
fn silent_server_times_out() {
    let server =
        ScriptedServer::start_background(Protocol::OpenAi, vec![Step::from(Fault::StallMidStream)]);
    let ws = Workspace::new();
    support::write_config_with(
        ws.home(),
        Protocol::OpenAi,
        &server.url(),
        "timeout_secs = 1",
    );
    let started = Instant::now();
    let r = run(&ws, &["-p", "the task"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_one_clear_line(&r, &server.url(), "sent nothing for 1 s");
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn sigint_cancels_cleanly_with_130() {
    let server = ScriptedServer::start_background(Protocol::OpenAi, vec![Step::from(Fault::Hang)]);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    let mut child = ws
        .cmd()
        .args(["-p", "the task"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_request(&server);
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "linggen did not stop after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    assert_database_intact(&ws);
}

#[test]
fn kill_9_mid_turn_keeps_completed_messages() {
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Reply::tool("Read", json!({"path": "a.txt"}))),
            Fault::Hang.into(),
        ],
    );
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    ws.write("a.txt", "alpha\n");
    let mut child = ws.cmd().args(["-p", "the task"]).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.chat_requests().len() < 2 {
        assert!(Instant::now() < deadline, "second request never came");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // user, assistant (tool call), tool result: all committed before the reply in flight.
    let r = run(&ws, &["sessions"]);
    let row = r.stdout.lines().nth(1).unwrap_or_default().to_string();
    let msgs: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(msgs.get(3), Some(&"3"), "{}", r.stdout);
}

fn wait_for_request(server: &ScriptedServer) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.chat_requests().is_empty() {
        assert!(Instant::now() < deadline, "no request arrived");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn broken_database_is_a_clear_error() {
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, "http://127.0.0.1:9/v1");
    std::fs::write(ws.home().join("linggen.db"), vec![b'x'; 4096]).unwrap();
    let r = run(&ws, &["-p", "the task"]);
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("linggen.db") && r.stderr.contains("move it aside"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"));
}

#[test]
fn config_errors_exit_2_naming_file_and_line() {
    let ws = Workspace::new();
    std::fs::write(
        ws.root().join("linggen-agent.toml"),
        "[agent]\nmax_iters = -4\n",
    )
    .unwrap();
    let r = run(&ws, &["-p", "the task"]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains("linggen-agent.toml") && r.stderr.contains("line 2"),
        "{}",
        r.stderr
    );

    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, "http://127.0.0.1:9/v1");
    let r = run(&ws, &["-p", "x", "--model", "nope"]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr
            .contains("--model: model `nope` is not configured; configured models: test"),
        "{}",
        r.stderr
    );
    let r = run(&ws, &["-p", "x", "--permission-mode", "yolo"]);
    assert_eq!(r.code, Some(2));
    let r = run(&ws, &["-p", "x", "--allowed-tools", "Bash(ls"]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("missing `)`"), "{}", r.stderr);
}

#[test]
fn locked_database_is_a_clear_error() {
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, "http://127.0.0.1:9/v1");
    // Create the database, then hold its write lock from another connection.
    let r = run(&ws, &["sessions"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let holder = rusqlite::Connection::open(ws.home().join("linggen.db")).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let r = run(&ws, &["-p", "the task"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("locked by another process"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"));
    holder.execute_batch("ROLLBACK").unwrap();
}

/// A `-p` whose stdout nobody reads (a stalled pipe) does not stop the session: the answer
/// is stored while the printer waits, and once the reader drains the pipe every streamed
/// piece is there, in order, and the exit is clean.
#[test]
fn a_stalled_stdout_does_not_stop_the_session() {
    use std::io::Read;
    // Far more than a pipe holds (64 KiB on Linux), in many deltas.
    let answer: String = (0..40_000).map(|i| format!("w{i} ")).collect();
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![Step::from(Reply::text(answer.clone()))],
    );
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    let mut child = ws
        .cmd()
        .args(["-p", "--output-format", "stream-json", "the task"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Nobody reads stdout yet; the session must still get to its stored answer.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = run(&ws, &["sessions"]);
        let row = r.stdout.lines().nth(1).unwrap_or_default().to_string();
        if row.split_whitespace().nth(3) == Some("2") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the answer was not stored while stdout stalled: {}",
            r.stdout
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "linggen ended before its stdout was read"
    );
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let streamed: String = out
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "Token" && e["thinking"] == false)
        .filter_map(|e| e["token"].as_str().map(str::to_string))
        .collect();
    assert_eq!(streamed, answer);
}
