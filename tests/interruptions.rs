//! Whatever ends linggen — `kill -9`, SIGTERM, SIGHUP — at whatever stage of a turn, the
//! session can be continued against the cloud APIs, whose pairing rules the scripted
//! server enforces as the real ones do (every tool call answered, at once, in order).
//! SIGTERM and SIGHUP end the turn as Ctrl+C does and exit 143 / 129; nothing linggen
//! started outlives it; and two processes never write one session at once.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::Read as _;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::pty::Repl;
use support::{
    Fault, Protocol, Reply, ScriptedServer, ServerOptions, Step, Workspace, run, run_with_timeout,
    sandbox_available,
};

#[derive(Debug, Clone, Copy)]
enum Kill {
    Nine,
    Term,
    Hup,
}

impl Kill {
    const ALL: [Kill; 3] = [Kill::Nine, Kill::Term, Kill::Hup];

    fn signal(self) -> i32 {
        match self {
            Kill::Nine => libc::SIGKILL,
            Kill::Term => libc::SIGTERM,
            Kill::Hup => libc::SIGHUP,
        }
    }

    /// The exit code a handled signal gives; `None` for `kill -9` (killed by the signal).
    fn code(self) -> Option<i32> {
        match self {
            Kill::Nine => None,
            Kill::Term => Some(143),
            Kill::Hup => Some(129),
        }
    }

    fn send(self, pid: u32) {
        // SAFETY: kill(2) with a pid we started and a valid signal number.
        assert_eq!(unsafe { libc::kill(pid as i32, self.signal()) }, 0);
    }
}

/// `linggen ARGS` started with piped output, read on threads so a full pipe never blocks it.
struct Running {
    child: Child,
    stderr: std::sync::mpsc::Receiver<String>,
}

impl Running {
    fn start(ws: &Workspace, args: &[&str]) -> Running {
        let mut child = ws
            .cmd()
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut pipe = child.stderr.take().unwrap();
        let (tx, stderr) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            let _ = tx.send(text);
        });
        Running { child, stderr }
    }

    /// Waits (at most 30 s) for the end: the exit code (`None`: killed by a signal) and stderr.
    fn finish(mut self) -> (Option<i32>, String) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let stderr = self.stderr.recv().unwrap_or_default();
                return (status.code(), stderr);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("linggen did not end within 30 s of the signal");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Processes whose command line contains `token`.
fn processes_with(token: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        cmdline.contains(token).then_some(pid)
    })
    .collect()
}

fn wait_for(what: &str, done: impl FnMut() -> bool) {
    support::wait_until(what, Duration::from_secs(20), done)
}

/// Continues the workspace's session against a fresh server for `protocol` (which enforces
/// the pairing rules); returns the request it was sent.
fn continue_against(ws: &Workspace, protocol: Protocol) -> Value {
    let server = ScriptedServer::start_background(protocol, vec![Reply::text("resumed fine")]);
    ws.configure(protocol, &server.url());
    let r = run(ws, &["-p", "--continue", "go on"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.trim_end(), "resumed fine");
    server.last_chat_request().unwrap()
}

/// The cloud protocols, each with the signal it is tried with this time (every signal
/// meets every protocol over the stages).
fn cases() -> Vec<(Protocol, Kill)> {
    let mut cases = Vec::new();
    for (i, kill) in Kill::ALL.into_iter().enumerate() {
        let protocol = [Protocol::OpenAi, Protocol::Anthropic][i % 2];
        cases.push((protocol, kill));
        cases.push((
            [Protocol::Anthropic, Protocol::OpenAi][i % 2],
            Kill::ALL[(i + 1) % 3],
        ));
    }
    cases
}

#[test]
fn killed_while_a_tool_runs_the_session_continues_and_nothing_is_left_running() {
    if !sandbox_available() {
        return;
    }
    for (protocol, kill) in cases() {
        let token = format!("37.{}", 100 + kill as u32 * 10 + protocol as u32);
        let server = ScriptedServer::start_background(
            protocol,
            vec![Reply::tool(
                "Bash",
                json!({"command": format!("sleep {token}; echo done > after.txt")}),
            )],
        );
        let ws = Workspace::new();
        ws.configure(protocol, &server.url());
        let running = Running::start(
            &ws,
            &["-p", "--permission-mode", "bypass", "run the slow thing"],
        );
        let pid = running.child.id();
        wait_for("the command to start", || {
            !processes_with(&token).is_empty()
        });
        kill.send(pid);
        let (code, stderr) = running.finish();
        assert_eq!(code, kill.code(), "{kill:?} {protocol:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        wait_for("the command to end with linggen", || {
            processes_with(&token).is_empty()
        });
        assert!(!ws.root().join("after.txt").exists());

        let sent = continue_against(&ws, protocol);
        let text = sent.to_string();
        let answered = match kill {
            // Nothing ran to record a result: the resume gives it one.
            Kill::Nine => "interrupted: linggen stopped before this call finished",
            // Handled as Ctrl+C: the cancelled call has its result.
            Kill::Term | Kill::Hup => "cancelled",
        };
        assert!(text.contains(answered), "{kill:?} {protocol:?}: {text}");
    }
}

#[test]
fn killed_while_streaming_the_session_continues() {
    for (protocol, kill) in cases() {
        let server =
            ScriptedServer::start_background(protocol, vec![Step::from(Fault::StallMidStream)]);
        let ws = Workspace::new();
        ws.configure(protocol, &server.url());
        let running = Running::start(&ws, &["-p", "tell me a story"]);
        wait_for("the stream to start", || server.chat_requests().len() == 1);
        // The first events are on their way; the stream then stays open and silent.
        std::thread::sleep(Duration::from_millis(300));
        kill.send(running.child.id());
        let (code, stderr) = running.finish();
        assert_eq!(code, kill.code(), "{kill:?} {protocol:?}: {stderr}");
        let sent = continue_against(&ws, protocol);
        assert!(sent.to_string().contains("tell me a story"), "{sent}");
    }
}

/// The shell ended as `kill` ends it: the documented code, or killed by SIGKILL.
fn assert_ended_by(repl: &Repl, kill: Kill) {
    let pid = repl.session.get_process().pid().as_raw();
    // Dead (a zombie until waited for) within the time limit, so `wait` cannot hang.
    wait_for("the shell to end", || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_or(true, |stat| stat.contains(") Z"))
    });
    // `Exited(Pid(N), CODE)` or `Signaled(Pid(N), SIGKILL, _)`, as nix prints them.
    let status = format!("{:?}", repl.session.get_process().wait().unwrap());
    let expected = match kill.code() {
        Some(code) => format!(", {code})"),
        None => "SIGKILL".to_string(),
    };
    assert!(status.contains(&expected), "{kill:?}: {status}");
}

/// The shell waiting for the person's approval of a command, then ended.
#[test]
fn killed_while_an_approval_waits_the_session_continues() {
    for (protocol, kill) in cases() {
        let server = ScriptedServer::start_background(
            protocol,
            vec![Reply::tool(
                "Bash",
                json!({"command": "touch approved.txt"}),
            )],
        );
        let ws = Workspace::new();
        ws.configure(protocol, &server.url());
        let mut repl = Repl::start(&ws, &[]);
        repl.line("make the file");
        repl.expect("Allow Bash");
        let pid = repl.session.get_process().pid().as_raw() as u32;
        kill.send(pid);
        assert_ended_by(&repl, kill);
        assert!(!ws.root().join("approved.txt").exists());
        let sent = continue_against(&ws, protocol);
        assert!(sent.to_string().contains("make the file"), "{sent}");
    }
}

/// Compaction's summary request hangs (`/compact`), and the shell is ended meanwhile.
#[test]
fn killed_while_compacting_the_session_continues() {
    for (protocol, kill) in cases() {
        let server = ScriptedServer::start_background(
            protocol,
            vec![
                Step::from(Reply::tool("Read", json!({"file_path": "notes.txt"}))),
                Reply::text("read it").into(),
                Reply::text("hi").into(),
                Fault::Hang.into(),
            ],
        );
        let ws = Workspace::new();
        // Larger than the share of the window compaction keeps, so the first turn goes.
        let notes: String = (0..400)
            .map(|n| format!("note {n}: words words\n"))
            .collect();
        ws.write("notes.txt", &notes);
        ws.configure(protocol, &server.url());
        let mut repl = Repl::start(&ws, &[]);
        repl.line("read the notes");
        repl.expect("read it");
        repl.line("hello");
        repl.expect("hi");
        repl.line("/compact");
        wait_for("the summary request", || server.chat_requests().len() == 4);
        let pid = repl.session.get_process().pid().as_raw() as u32;
        kill.send(pid);
        assert_ended_by(&repl, kill);
        let sent = continue_against(&ws, protocol);
        assert!(sent.to_string().contains("read the notes"), "{sent}");
    }
}

/// Answers a task with one Bash call, and the call's result with a plain answer: the same
/// whichever process asks, in whatever order they come.
fn call_then_answer(body: &Value) -> Option<Reply> {
    let messages = body["messages"].as_array()?;
    let last = messages.last()?;
    let answered_a_call = last["role"] == "tool"
        || last["content"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"));
    Some(if answered_a_call {
        Reply::text("noted")
    } else {
        Reply::tool("Bash", json!({"command": "echo step"}))
    })
}

/// Five `-c` runs at once on one session: they take turns (the later ones say whom they wait
/// for), and the history keeps each task with its own call and result.
#[test]
fn continues_at_once_take_turns_and_never_interleave() {
    if !sandbox_available() {
        return;
    }
    let mut options = ServerOptions::new(Protocol::OpenAi);
    options.responder = Some(call_then_answer);
    let server = ScriptedServer::start_with(options, Vec::<Step>::new());
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    let first = run(&ws, &["-p", "--permission-mode", "bypass", "task 0"]);
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let runs: Vec<Running> = (1..=5)
        .map(|k| {
            Running::start(
                &ws,
                &[
                    "-p",
                    "-c",
                    "--permission-mode",
                    "bypass",
                    &format!("task {k}"),
                ],
            )
        })
        .collect();
    let mut waited = 0;
    for running in runs {
        let (code, stderr) = running.finish();
        assert_eq!(code, Some(0), "{stderr}");
        if stderr.contains("is in use by another linggen (pid") {
            waited += 1;
        }
    }
    assert!(
        waited >= 1,
        "nobody waited: the runs cannot all have been alone"
    );
    let sent = continue_against(&ws, Protocol::OpenAi);
    // Each task is followed by its own call, its result and its answer.
    let roles: Vec<String> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect();
    let expected: Vec<&str> = (0..6)
        .flat_map(|_| ["user", "assistant", "tool", "assistant"])
        .chain(["user"])
        .collect();
    assert_eq!(roles, expected);
}

/// A session open in the shell is not written by a `-p -c` meanwhile: one line names the
/// shell's process, exit 1. Once the shell is gone, `-c` works (no stale lock).
#[test]
fn a_session_in_use_by_the_shell_is_refused_by_name() {
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![Reply::text("first answer"), Reply::text("second answer")],
    );
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    let mut repl = Repl::start(&ws, &[]);
    repl.line("hello");
    repl.expect("first answer");
    let pid = repl.session.get_process().pid().as_raw();
    let out = run_with_timeout(
        ws.cmd().args(["-p", "-c", "me too"]),
        Duration::from_secs(20),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("in use by another linggen (pid {pid}")),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    Kill::Nine.send(pid as u32);
    let _ = repl.session.get_process().wait();
    let r = run(&ws, &["-p", "-c", "now me"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.trim_end(), "second answer");
}
