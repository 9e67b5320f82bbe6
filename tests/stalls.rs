//! A silent model through the real binary, with `[llm] stall_secs = 2`: an answer that
//! starts and then goes silent is a dropped stream (asked for again, then the next model),
//! and a model that has not answered yet keeps its `timeout_secs` but the person is told
//! what linggen waits for — a stderr line from `-p`, an `AgentStatus` in stream-json, the
//! shell's status line. The bounds are generous: without `stall_secs` these runs would sit
//! for the 30 s (or default 300 s) model timeout.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use support::{Fault, Protocol, Reply, ScriptedServer, Step, Workspace, run};

const STALL: &str = "timeout_secs = 30\n[llm]\nstall_secs = 2\n";

/// Well above the 2 s of `stall_secs` on a loaded machine, far below `timeout_secs`.
const PROMPTLY: Duration = Duration::from_secs(15);

fn workspace(steps: Vec<Step>) -> (ScriptedServer, Workspace) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, steps);
    let ws = Workspace::new();
    support::write_config_with(ws.home(), Protocol::OpenAi, &server.url(), STALL);
    (server, ws)
}

#[test]
fn a_stalled_answer_is_asked_for_again() {
    let (server, ws) = workspace(vec![
        Fault::StallMidStream.into(),
        Reply::text("the answer after the stall").into(),
    ]);
    let started = Instant::now();
    let r = run(&ws, &["-p", "the task"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(started.elapsed() < PROMPTLY, "{:?}", started.elapsed());
    assert_eq!(r.stdout, "the answer after the stall\n");
    assert!(
        r.stderr
            .contains("went silent mid-answer for 2 s; asking it again"),
        "{}",
        r.stderr
    );
    assert_eq!(server.chat_requests().len(), 2);
}

#[test]
fn a_model_that_stalls_twice_is_left_for_the_next() {
    let silent = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![Fault::StallMidStream, Fault::StallMidStream],
    );
    let backup = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![Reply::text("the backup answered")],
    );
    let ws = Workspace::new();
    let toml = format!(
        "[[models]]\nid = \"first\"\nprovider = \"openai\"\nmodel = \"m1\"\nurl = \"{}\"\n\
         [[models]]\nid = \"second\"\nprovider = \"openai\"\nmodel = \"m2\"\nurl = \"{}\"\n\
         [routing]\n[llm]\nstall_secs = 2\n",
        silent.url(),
        backup.url()
    );
    std::fs::write(ws.home().join("linggen-agent.toml"), toml).unwrap();
    let started = Instant::now();
    let r = run(&ws, &["-p", "hi"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(started.elapsed() < PROMPTLY, "{:?}", started.elapsed());
    assert_eq!(r.stdout, "the backup answered\n");
    assert!(r.stderr.contains("asking it again"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("model `first` went silent mid-answer for 2 s")
            && r.stderr.contains("falling back to `second`"),
        "{}",
        r.stderr
    );
    silent.assert_script_consumed();
}

/// Reads `stream` line by line on a thread, sending each line with the time it arrived.
fn lines_of(stream: impl std::io::Read + Send + 'static) -> mpsc::Receiver<(Instant, String)> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
    rx
}

/// The first line from `lines` containing `needle`, and when it came.
fn wait_for_line(lines: &mpsc::Receiver<(Instant, String)>, needle: &str) -> (Instant, String) {
    let deadline = Instant::now() + PROMPTLY;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok((at, line)) if line.contains(needle) => return (at, line),
            Ok(_) => {}
            Err(_) => panic!("no line with {needle:?} within {PROMPTLY:?}"),
        }
    }
}

#[test]
fn a_model_that_has_not_answered_yet_is_waited_for_and_named() {
    let (server, ws) = workspace(vec![Fault::Hang.into()]);
    let started = Instant::now();
    let mut child = ws
        .cmd()
        .args(["-p", "the task"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = lines_of(child.stderr.take().unwrap());
    let (at, line) = wait_for_line(&lines, "waiting for");
    assert_eq!(
        line, "linggen: waiting for `test`: nothing received for 2 s",
        "{line}"
    );
    assert!(at - started >= Duration::from_secs(2), "{:?}", at - started);
    // Still waiting, as `timeout_secs` allows: the next notice, no retry, no error.
    let (_, line) = wait_for_line(&lines, "waiting for");
    assert!(line.ends_with("nothing received for 4 s"), "{line}");
    assert!(child.try_wait().unwrap().is_none(), "gave up too soon");
    assert_eq!(server.chat_requests().len(), 1);
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn stream_json_says_it_with_an_agent_status_and_quiet_says_nothing() {
    let (_server, ws) = workspace(vec![Fault::Hang.into()]);
    let mut child = ws
        .cmd()
        .args(["-q", "-p", "the task", "--output-format", "stream-json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = lines_of(child.stdout.take().unwrap());
    let stderr = lines_of(child.stderr.take().unwrap());
    let (_, line) = wait_for_line(&stdout, "waiting for");
    let event: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(event["type"], "AgentStatus", "{line}");
    assert_eq!(event["status"], "thinking", "{line}");
    assert_eq!(
        event["detail"], "waiting for `test`: nothing received for 2 s",
        "{line}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    // The reader ends with the killed process's stderr.
    let said: Vec<String> = stderr.iter().map(|(_, l)| l).collect();
    assert!(said.iter().all(|l| !l.contains("waiting for")), "{said:?}");
}

#[test]
fn the_shell_status_line_names_the_model_it_waits_for() {
    let (_server, ws) = workspace(vec![Fault::Hang.into()]);
    let mut repl = support::pty::Repl::start(&ws, &[]);
    repl.line("the task");
    repl.expect("Waiting for `test`: nothing received for 2 s");
    repl.send("\x03");
}
