//! Background commands through the real binary: a command the model starts with
//! `run_in_background` is approved like any command, keeps running when the turn ends, shows
//! in `/tasks`, is read by a later `BashOutput`, stops with `/tasks stop`, and is gone when
//! linggen ends — by `/quit`, at the end of `-p`, and by `kill -9`.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use support::pty::{PROMPT, Repl, last_tool_result, workspace};
use support::{
    Protocol, Reply, ScriptedServer, Step, Workspace, run_with_timeout, sandbox_available, texts,
};

/// A command that says it is ready, then appends to `alive.txt` ten times a second.
fn write_loop(ws: &Workspace) {
    let path = ws.write(
        "loop.sh",
        "#!/bin/sh\necho ready\nwhile :; do echo x >> alive.txt; sleep 0.1; done\n",
    );
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether the file still grows: its size now and 1.2 s later differ.
fn still_growing(path: &Path) -> bool {
    let size = || std::fs::metadata(path).map_or(0, |m| m.len());
    let before = size();
    std::thread::sleep(Duration::from_millis(1200));
    size() != before
}

fn offered(request: &serde_json::Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_background_command_outlives_its_turn_and_dies_with_linggen() {
    if !sandbox_available() {
        return;
    }
    let (ws, server) = workspace(vec![
        Step::from(Reply::tool(
            "Bash",
            json!({"command": "./loop.sh", "run_in_background": true}),
        )),
        Reply::text("Started the loop.").into(),
        Reply::tool("BashOutput", json!({"bash_id": "bash_1"})).into(),
        Reply::text("It is still going.").into(),
    ]);
    write_loop(&ws);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("start the loop in the background");
    // Asked exactly as the command would be, saying it keeps running.
    repl.expect("(in the background: it keeps running)");
    repl.send("y");
    repl.expect("Started the loop.");
    repl.expect(PROMPT);
    let alive = ws.root().join("alive.txt");
    wait_for("the loop to start", || alive.exists());
    assert!(still_growing(&alive), "the loop stopped with its turn");
    // No read tool until there is something to read; then it is offered.
    let requests = server.chat_requests();
    assert!(!offered(&requests[0]).contains(&"BashOutput".to_string()));
    assert!(offered(&requests[1]).contains(&"BashOutput".to_string()));

    repl.line("/tasks");
    repl.expect("bash_1  running for");
    repl.expect("./loop.sh");
    repl.expect("⎿ ready");
    repl.expect(PROMPT);

    repl.line("how is it doing?");
    repl.expect("It is still going.");
    repl.expect(PROMPT);
    let read = last_tool_result(&server);
    assert!(read.starts_with("running for "), "{read}");
    assert!(read.contains("\nready"), "{read}");

    // kill -9: no handler of linggen's runs, and the loop stops all the same.
    let pid = repl.session.get_process().pid().as_raw();
    // SAFETY: kill sends a signal to our own child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !still_growing(&alive),
        "the loop outlived linggen's kill -9"
    );
}

#[test]
fn a_person_stops_one_with_tasks_stop_and_quitting_stops_the_rest() {
    if !sandbox_available() {
        return;
    }
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tools(vec![
            (
                "Bash",
                json!({"command": "./loop.sh", "run_in_background": true}),
            ),
            (
                "Bash",
                json!({"command": "sleep 0.2; echo finished", "run_in_background": true}),
            ),
        ])),
        Reply::text("Two started.").into(),
        Step::from(Reply::tool(
            "Bash",
            json!({"command": "./loop.sh", "run_in_background": true}),
        )),
        Reply::text("Again.").into(),
    ]);
    write_loop(&ws);
    let prompt = "ling [bypass] › ";
    let mut repl = Repl::start_with_prompt(&ws, &["--permission-mode", "bypass"], &[], prompt);
    repl.line("start both");
    repl.expect("Two started.");
    // The short one ends by itself, and says so.
    repl.expect("background bash_2 ended: exit 0");
    let alive = ws.root().join("alive.txt");
    wait_for("the loop to start", || alive.exists());

    repl.line("/tasks stop bash_9");
    repl.expect("no background command `bash_9`; there are: bash_1, bash_2");
    repl.line("/tasks stop");
    repl.expect("stopped bash_1");
    repl.line("/tasks");
    repl.expect("bash_1  stopped after");
    repl.expect("bash_2  exit 0 after");
    repl.expect("⎿ finished");
    assert!(!still_growing(&alive), "/tasks stop left it running");

    repl.line("once more");
    repl.expect("Again.");
    repl.expect(prompt);
    std::fs::remove_file(&alive).unwrap();
    wait_for("the loop to run again", || alive.exists());
    repl.line("/quit");
    let pid = repl.session.get_process().pid().as_raw();
    wait_for("linggen to end", || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| s.contains(") Z"))
    });
    assert!(!still_growing(&alive), "the loop outlived /quit");
}

/// `-p` ends its session when the answer is printed, and the command with it; the model
/// read its output in between, and a bad id is answered with the ones there are.
#[test]
fn a_one_shot_run_reads_its_background_command_and_leaves_nothing_behind() {
    if !sandbox_available() {
        return;
    }
    let ws = Workspace::new();
    write_loop(&ws);
    let server = ScriptedServer::start_background(
        Protocol::Ollama,
        vec![
            Step::from(Reply::tool(
                "Bash",
                json!({"command": "./loop.sh", "run_in_background": true}),
            )),
            Reply::tool("Bash", json!({"command": "sleep 0.5"})).into(),
            Reply::tool("BashOutput", json!({"bash_id": "bash_1", "filter": "^rea"})).into(),
            Reply::tool("KillShell", json!({"shell_id": "bash_7"})).into(),
            Reply::text("done").into(),
        ],
    );
    ws.configure(Protocol::Ollama, &server.url());
    let out = run_with_timeout(
        ws.cmd().args(["-p", "go", "--permission-mode", "bypass"]),
        Duration::from_secs(90),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = texts(&server.last_chat_request().unwrap(), "tool");
    assert!(
        results[0].starts_with("started in the background as bash_1"),
        "{results:?}"
    );
    assert!(
        results[2].starts_with("running for") && results[2].ends_with("\nready"),
        "{results:?}"
    );
    assert!(results[3].contains("there are: bash_1"), "{results:?}");
    let alive = ws.root().join("alive.txt");
    assert!(alive.exists(), "the loop never ran");
    assert!(!still_growing(&alive), "the loop outlived linggen -p");
}

/// `linggen serve`: the event stream and the late joiner's snapshot carry the command, and
/// `POST /api/task-stop` stops it once; a second stop is the session's refusal (409), an
/// unknown id a 404.
#[test]
fn the_web_api_lists_and_stops_a_background_command() {
    use support::web_client::Serve;
    if !sandbox_available() {
        return;
    }
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Reply::tool(
                "Bash",
                json!({"command": "echo ready; sleep 60", "run_in_background": true}),
            )),
            Reply::text("Started.").into(),
        ],
    );
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    let serve = Serve::start(ws.cmd().arg("serve"));
    let mut stream = serve.events(None);
    serve.send("start it");
    let wait = Duration::from_secs(30);
    // Asked like the same command in the foreground, and answered from the page's route.
    let asked = stream.until(wait, |e| e.kind() == "ApprovalRequested");
    let id = asked.last().unwrap().data["id"]
        .as_str()
        .unwrap()
        .to_string();
    let allow = json!({"decision": "allow_once"});
    let answered = serve.post(&format!("/api/approvals/{id}"), &allow);
    assert_eq!(answered.status, 202, "{}", answered.text());
    let seen = stream.until(wait, |e| e.kind() == "TaskUpdated");
    let task = &seen.last().unwrap().data["task"];
    assert_eq!(
        (task["id"].as_str(), task["state"].as_str()),
        (Some("bash_1"), Some("running"))
    );
    stream.until(wait, |e| e.kind() == "Outcome");
    let snapshot = serve.session();
    assert_eq!(
        snapshot["state"]["tasks"][0]["command"],
        "echo ready; sleep 60"
    );
    let transcript = snapshot["transcript"].as_array().unwrap();
    assert!(transcript.iter().all(|e| e["type"] != "TaskUpdated"));

    let stop = json!({"task_id": "bash_1"});
    let stopped = serve.post("/api/task-stop", &stop);
    assert_eq!(stopped.status, 202, "{}", stopped.text());
    assert_eq!(serve.session()["state"]["tasks"][0]["state"], "stopped");
    let again = serve.post("/api/task-stop", &stop);
    assert_eq!(again.status, 409, "{}", again.text());
    assert!(
        again.text().contains("is not running (stopped)"),
        "{}",
        again.text()
    );
    // One the session never started is not there: 404, with the ones it knows.
    let unknown = serve.post("/api/task-stop", &json!({"task_id": "bash_9"}));
    assert_eq!(unknown.status, 404, "{}", unknown.text());
    assert!(
        unknown.text().contains("no background command `bash_9`"),
        "{}",
        unknown.text()
    );
    serve.stop();
}

/// The user messages of a chat request, in order.
fn user_texts(request: &serde_json::Value) -> Vec<String> {
    texts(request, "user")
}

/// `-p`: the parent's call returns at once, its turn ends, and the child's answer arrives
/// as a message that opens a turn of its own, whose answer is the run's.
#[test]
fn a_background_agents_answer_arrives_as_a_message_and_p_waits_for_it() {
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Reply::tool(
                "delegate_to_agent",
                json!({"target_agent_id": "coder", "task": "count the files", "background": true}),
            )),
            // The parent's next answer and the child's, in whichever order they ask.
            Reply::text("There are 3 files.").into(),
            Reply::text("There are 3 files.").into(),
            Reply::text("Coder counted 3 files.").into(),
        ],
    );
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    let out = run_with_timeout(
        ws.cmd().args(["-p", "count in the background"]),
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.trim_end().ends_with("Coder counted 3 files."),
        "{stdout}"
    );
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 4, "{requests:#?}");
    let last = requests.last().unwrap();
    let delegated = texts(last, "tool");
    assert!(
        delegated[0].contains("is working on it in the background (run "),
        "{delegated:?}"
    );
    let users = user_texts(last);
    assert_eq!(users[0], "count in the background");
    assert!(
        users[1].starts_with("Background agent `coder` (the task \"count the files\") finished. Its answer:\nThere are 3 files."),
        "{users:?}"
    );
}

/// In the shell the turn that started it ends; the answer arrives later, says so in one
/// line, and the agent goes on with it unasked.
#[test]
fn in_the_shell_a_background_agents_answer_opens_a_turn() {
    let (ws, server) = workspace(vec![
        Step::from(Reply::tool(
            "delegate_to_agent",
            json!({"target_agent_id": "coder", "task": "count the files", "run_in_background": true}),
        )),
        Reply::text("Coder is on it.").into(),
        Reply::text("Coder is on it.").into(),
        Reply::text("Coder says there are 3 files.").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("count in the background");
    // The child's line replaces the planned call's, as for any delegation.
    let before = repl.expect("(background) ← count the files");
    assert!(!before.contains("delegate to coder"), "{before}");
    repl.expect("[background] Background agent `coder` (the task \"count the files\") finished.");
    repl.expect("Coder says there are 3 files.");
    repl.expect(PROMPT);
    assert_eq!(server.chat_requests().len(), 4);
    repl.line("/runs");
    repl.expect("coder");
    repl.expect(PROMPT);
    repl.line("/quit");
}

/// A background agent is cancelled by its run id (the page's tab, `/api/agent-cancel`), not
/// with the turn that started it; its end still reaches the conversation.
#[test]
fn a_background_agent_is_cancelled_by_its_run_id() {
    use support::web_client::Serve;
    let slow = || {
        Reply::text("word ".repeat(200))
            .delta_bytes(5)
            .chunk_delay(Duration::from_millis(20))
    };
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Reply::tool(
                "delegate_to_agent",
                json!({"target_agent_id": "coder", "task": "write an essay", "background": true}),
            )),
            slow().into(),
            slow().into(),
            Reply::text("Understood, it was cancelled.").into(),
        ],
    );
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    let serve = Serve::start(ws.cmd().arg("serve"));
    let mut stream = serve.events(None);
    serve.send("essay in the background");
    let wait = Duration::from_secs(30);
    let spawned = stream.until(wait, |e| e.kind() == "SubagentSpawned");
    let child = spawned.last().unwrap().data.clone();
    assert_eq!(child["background"], true, "{child}");
    let run_id = child["subagent_id"].as_str().unwrap().to_string();
    stream.until(wait, |e| {
        e.kind() == "Token" && e.data["run_id"] == run_id.as_str()
    });
    let cancelled = serve.post("/api/agent-cancel", &json!({"run_id": run_id}));
    assert_eq!(cancelled.status, 202, "{}", cancelled.text());
    let ended = stream.until(wait, |e| e.kind() == "SubagentResult");
    assert_eq!(ended.last().unwrap().data["outcome"], "cancelled");
    let answered = stream.until(wait, |e| {
        e.kind() == "Outcome" && e.data["result"] == "Understood, it was cancelled."
    });
    assert!(!answered.is_empty());
    let users = user_texts(&server.last_chat_request().unwrap());
    assert!(
        users
            .last()
            .unwrap()
            .ends_with("was cancelled before it finished."),
        "{users:?}"
    );
    serve.stop();
}
