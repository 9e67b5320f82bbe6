//! `linggen mcp serve` driven by a real MCP client (rmcp's) over the child's stdin and
//! stdout, against a scripted model: the tools it lists, `task` answering as `-p` would
//! (approvals denied, changes reported), concurrent tasks in sessions of their own, the
//! read-only tools confined as a session's, and a prompt exit when stdin closes.

// Test code may unwrap: a failure there is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::future::Future;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceError, ServiceExt};
use serde_json::{Value, json};
use support::{
    Fault, Protocol, Reply, ScriptedServer, Step, Workspace, texts, write_config, write_config_with,
};
use tokio::io::AsyncReadExt;
use tokio::process::Child;

/// Long enough for a debug build on a busy machine; a hang fails instead of blocking.
const LIMIT: Duration = Duration::from_secs(60);

/// A running `linggen mcp serve` and the client connected to it.
struct Served<H: ClientHandler = ()> {
    client: RunningService<RoleClient, H>,
    child: Child,
    stderr: Arc<Mutex<String>>,
    /// Reads stderr until the server (and whatever inherited it) closed it.
    stderr_reader: tokio::task::JoinHandle<()>,
}

/// Starts `linggen [FLAGS] mcp serve` in `ws` (with `env` set) and connects to it.
async fn serve(ws: &Workspace, flags: &[&str], env: &[(&str, &std::path::Path)]) -> Served {
    serve_as(ws, flags, env, ()).await
}

/// As [`serve`], with a client that handles what the server asks with `handler`.
async fn serve_as<H: ClientHandler>(
    ws: &Workspace,
    flags: &[&str],
    env: &[(&str, &std::path::Path)],
    handler: H,
) -> Served<H> {
    let mut cmd = tokio::process::Command::from(ws.cmd());
    cmd.args(flags)
        .args(["mcp", "serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (name, value) in env {
        cmd.env(name, value);
    }
    let mut child = cmd.spawn().expect("spawn linggen mcp serve");
    let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let mut err = child.stderr.take().unwrap();
    // Drained all along: a full stderr pipe would stop the server.
    let stderr = Arc::new(Mutex::new(String::new()));
    let collected = Arc::clone(&stderr);
    let stderr_reader = tokio::spawn(async move {
        let mut chunk = [0u8; 4096];
        while let Ok(n @ 1..) = err.read(&mut chunk).await {
            collected
                .lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&chunk[..n]));
        }
    });
    let client = within(handler.serve((stdout, stdin)))
        .await
        .unwrap_or_else(|e| panic!("handshake failed: {e}\n{}", stderr.lock().unwrap()));
    Served {
        client,
        child,
        stderr,
        stderr_reader,
    }
}

impl<H: ClientHandler> Served<H> {
    async fn call(&self, tool: &str, arguments: Value) -> Result<CallToolResult, ServiceError> {
        call(&self.client, tool, arguments).await
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Closes the server's stdin (the client leaves) and returns how it exited.
    async fn close(self) -> (std::process::ExitStatus, String) {
        let Served {
            client,
            mut child,
            stderr,
            stderr_reader,
        } = self;
        let _ = within(client.cancel()).await;
        let waited = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
        // All of stderr, once nothing holds it open any more: what was left running would.
        let _ = tokio::time::timeout(Duration::from_secs(5), stderr_reader).await;
        let stderr = stderr.lock().unwrap().clone();
        let status = waited
            .unwrap_or_else(|_| panic!("still running 10 s after stdin closed\n{stderr}"))
            .unwrap();
        (status, stderr)
    }
}

async fn call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    let arguments: JsonObject = arguments.as_object().cloned().unwrap();
    let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
    within(client.call_tool(params)).await
}

async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .expect("linggen mcp serve did not answer in time")
}

/// Calls `task` on a model that never answers; returns once the model was asked.
async fn start_waiting_task(
    served: &Served,
    server: &ScriptedServer,
) -> tokio::task::JoinHandle<Result<CallToolResult, ServiceError>> {
    let peer = served.client.peer().clone();
    let running = tokio::spawn(async move {
        let params = CallToolRequestParams::new("task")
            .with_arguments(json!({"prompt": "wait"}).as_object().cloned().unwrap());
        peer.call_tool(params).await
    });
    let deadline = tokio::time::Instant::now() + LIMIT;
    while server.chat_requests().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{}",
            served.stderr()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    running
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

fn workspace(script: Vec<Step>) -> (Workspace, ScriptedServer) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, script);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    (ws, server)
}

#[tokio::test]
async fn lists_task_and_the_read_only_tools() {
    let (ws, _server) = workspace(vec![]);
    let served = serve(&ws, &[], &[]).await;
    let info = served.client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "linggen");
    let tools = within(served.client.list_all_tools()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["task", "get_repo_info", "Glob", "Read", "Grep"]);
    let task = &tools[0];
    assert_eq!(task.input_schema["required"], json!(["prompt"]));
    let (status, stderr) = served.close().await;
    assert!(status.success(), "{status:?}\n{stderr}");
}

#[tokio::test]
async fn a_task_returns_the_answer_of_its_session() {
    let (ws, server) = workspace(vec![Reply::text("The answer is 42.").into()]);
    let served = serve(&ws, &[], &[]).await;
    let result = served
        .call("task", json!({"prompt": "what is the answer?"}))
        .await
        .unwrap();
    let answer = text(&result);
    assert_eq!(result.is_error, Some(false), "{answer}");
    assert!(
        answer.starts_with("The answer is 42.\n\nNo files changed.\nSession "),
        "{answer}"
    );
    let request = server.last_chat_request().unwrap();
    assert!(
        texts(&request, "user")
            .iter()
            .any(|t| t.contains("what is the answer?"))
    );
    let (status, stderr) = served.close().await;
    assert!(status.success(), "{status:?}\n{stderr}");
}

#[tokio::test]
async fn a_task_whose_model_reads_a_file_answers_from_it() {
    let (ws, server) = workspace(vec![
        Reply::tool("Read", json!({"path": "notes.txt"})).into(),
        Reply::text("The notes say hello.").into(),
    ]);
    ws.write("notes.txt", "hello from the notes\n");
    let served = serve(&ws, &[], &[]).await;
    let result = served
        .call("task", json!({"prompt": "what do the notes say?"}))
        .await
        .unwrap();
    assert!(
        text(&result).starts_with("The notes say hello."),
        "{result:?}"
    );
    let request = server.last_chat_request().unwrap();
    let results = texts(&request, "tool");
    assert!(
        results.iter().any(|t| t.contains("hello from the notes")),
        "{results:?}"
    );
    served.close().await;
}

/// As in `-p`, nobody can approve: a write that needs approval is denied, and the task
/// still ends with the model's answer.
#[tokio::test]
async fn a_write_that_needs_approval_is_denied() {
    let (ws, server) = workspace(vec![
        Reply::tool("Write", json!({"path": "out.txt", "content": "x"})).into(),
        Reply::text("I was not allowed to write.").into(),
    ]);
    let served = serve(&ws, &[], &[]).await;
    let result = served
        .call("task", json!({"prompt": "write out.txt"}))
        .await
        .unwrap();
    let answer = text(&result);
    assert!(
        answer.starts_with("I was not allowed to write."),
        "{answer}"
    );
    assert!(answer.contains("No files changed."), "{answer}");
    assert!(!ws.root().join("out.txt").exists());
    let results = texts(&server.last_chat_request().unwrap(), "tool");
    assert!(
        !results.is_empty() && !results[0].contains("Wrote"),
        "{results:?}"
    );
    served.close().await;
}

/// A client that can ask its person (MCP elicitation) and answers every approval with
/// `decision`, keeping the questions it was asked.
#[derive(Clone)]
struct Asker {
    decision: &'static str,
    asked: Arc<Mutex<Vec<String>>>,
    progress: Arc<Mutex<Vec<String>>>,
}

impl Asker {
    fn new(decision: &'static str) -> Asker {
        Asker {
            decision,
            asked: Arc::default(),
            progress: Arc::default(),
        }
    }
}

impl ClientHandler for Asker {
    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let rmcp::model::ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            panic!("a form was expected");
        };
        let schema = serde_json::to_string(&requested_schema).unwrap();
        self.asked
            .lock()
            .unwrap()
            .push(format!("{message}\n{schema}"));
        let mut result = rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept);
        result.content = Some(json!({"decision": self.decision}));
        Ok(result)
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .unwrap()
            .push(params.message.unwrap_or_default());
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        // As a client declares it on the wire (the SDK's builder is a server-side feature).
        let capabilities = serde_json::from_value(json!({"elicitation": {}})).unwrap();
        rmcp::model::ClientConfig::new(capabilities, rmcp::model::Implementation::new("asker", "1"))
    }
}

/// A client that can ask its person gets the approval (elicitation) and its answer counts:
/// allowed, the write happens; denied, it does not. The call's progress token hears each
/// tool call.
#[tokio::test]
async fn a_client_that_can_ask_answers_the_approval() {
    for (decision, written) in [("allow_once", true), ("deny", false)] {
        let (ws, _server) = workspace(vec![
            Reply::tool("Write", json!({"path": "out.txt", "content": "x"})).into(),
            Reply::text("Finished.").into(),
        ]);
        let asker = Asker::new(decision);
        let served = serve_as(&ws, &[], &[], asker.clone()).await;
        let params = CallToolRequestParams::new("task").with_arguments(
            json!({"prompt": "write out.txt"})
                .as_object()
                .cloned()
                .unwrap(),
        );
        let request =
            rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
        let handle = served
            .client
            .send_cancellable_request(request, {
                let mut options = rmcp::service::PeerRequestOptions::no_options();
                let mut meta = rmcp::model::RequestMetaObject::default();
                meta.set_progress_token(rmcp::model::ProgressToken(
                    rmcp::model::NumberOrString::Number(7),
                ));
                options.meta = Some(meta);
                options
            })
            .await
            .unwrap();
        let response = within(handle.await_response()).await.unwrap();
        let rmcp::model::ServerResult::CallToolResult(result) = response else {
            panic!("{response:?}");
        };
        let answer = text(&result);
        assert!(
            answer.starts_with("Finished."),
            "{answer}\n{}",
            served.stderr()
        );
        assert_eq!(
            ws.root().join("out.txt").exists(),
            written,
            "{decision}: {answer}"
        );
        let asked = asker.asked.lock().unwrap().join("\n---\n");
        assert!(asked.contains("out.txt"), "{asked}");
        assert!(asked.contains("allow_session"), "{asked}");
        let progress = asker.progress.lock().unwrap().join("\n");
        assert!(progress.contains("out.txt"), "{progress:?}");
        served.close().await;
    }
}

/// Flags before `mcp serve` apply to every task, as they do to `-p`: here a mode that lets
/// edits run, so the answer comes with its change report.
#[tokio::test]
async fn the_change_report_lists_the_files_a_task_wrote() {
    let (ws, _server) = workspace(vec![
        Reply::tool("Write", json!({"path": "notes.md", "content": "# Notes\n"})).into(),
        Reply::text("Wrote the notes.").into(),
    ]);
    let served = serve(&ws, &["--permission-mode", "accept-edits"], &[]).await;
    let result = served
        .call("task", json!({"prompt": "write notes.md"}))
        .await
        .unwrap();
    let answer = text(&result);
    assert!(
        answer.starts_with("Wrote the notes.\n\nFiles changed (1):\n- notes.md\n"),
        "{answer}"
    );
    let structured = result.structured_content.unwrap();
    assert_eq!(structured["files_changed"], json!(["notes.md"]));
    assert_eq!(ws.read("notes.md"), "# Notes\n");
    served.close().await;
}

#[tokio::test]
async fn concurrent_tasks_run_at_once_each_in_its_own_session() {
    // Slow answers, so that the second request arrives while the first is still streaming.
    let slow = || {
        Reply::text("Done in my own session.")
            .delta_bytes(2)
            .chunk_delay(Duration::from_millis(60))
    };
    let server = ScriptedServer::start_background(Protocol::OpenAi, vec![slow(), slow()]);
    let ws = Workspace::new();
    // Two request slots: one process's sessions share a model's `max_inflight` (1 unless
    // configured), and on one slot their model calls would take turns.
    write_config_with(
        ws.home(),
        Protocol::OpenAi,
        &server.url(),
        "max_inflight = 2",
    );
    let served = serve(&ws, &[], &[]).await;
    let (first, second) = tokio::join!(
        served.call("task", json!({"prompt": "task one"})),
        served.call("task", json!({"prompt": "task two"})),
    );
    let (first, second) = (first.unwrap(), second.unwrap());
    for result in [&first, &second] {
        assert!(
            text(result).starts_with("Done in my own session."),
            "{result:?}"
        );
    }
    let session = |r: &CallToolResult| r.structured_content.as_ref().unwrap()["session_id"].clone();
    assert_ne!(session(&first), session(&second));
    assert_eq!(server.max_concurrent_chats(), 2);
    // Each prompt went to a conversation of its own.
    let mut conversations: Vec<String> = server
        .chat_requests()
        .iter()
        .map(|r| texts(r, "user").join("\n"))
        .collect();
    conversations.sort_by_key(|c| c.contains("task two"));
    assert!(
        conversations.len() == 2
            && conversations[0].contains("task one")
            && !conversations[0].contains("task two")
            && conversations[1].contains("task two")
            && !conversations[1].contains("task one"),
        "{conversations:?}"
    );
    served.close().await;

    // Both sessions were stored in this workspace.
    let listed = support::run(&ws, &["sessions"]);
    for result in [&first, &second] {
        let id = session(result);
        assert!(listed.stdout.contains(id.as_str().unwrap()), "{listed:?}");
    }
}

/// The read-only tools read what a session's tools may: the workspace, but not
/// `$LINGGEN_HOME` even inside the root, nor anything outside it.
#[tokio::test]
async fn read_only_tools_are_confined_as_a_sessions() {
    let server = ScriptedServer::start_background(Protocol::OpenAi, Vec::<Step>::new());
    let ws = Workspace::new();
    let home = ws.root().join("home");
    write_config(&home, Protocol::OpenAi, &server.url());
    ws.write("src/lib.rs", "pub fn answer() -> u32 { 42 }\n");
    let served = serve(&ws, &[], &[("LINGGEN_HOME", &home)]).await;

    let read = served
        .call("Read", json!({"path": "src/lib.rs"}))
        .await
        .unwrap();
    assert_eq!(read.is_error, Some(false), "{read:?}");
    assert!(text(&read).contains("pub fn answer() -> u32 { 42 }"));
    let grep = served
        .call("Grep", json!({"query": "answer"}))
        .await
        .unwrap();
    assert!(text(&grep).contains("src/lib.rs"), "{grep:?}");

    for path in ["home/linggen-agent.toml", "/etc/passwd"] {
        let refused = served.call("Read", json!({"path": path})).await.unwrap();
        assert_eq!(refused.is_error, Some(true), "{path}: {refused:?}");
        assert!(!text(&refused).contains("[[models]]"), "{refused:?}");
    }

    // Not offered, whatever it is called: a protocol error naming what is.
    let write = served
        .call("Write", json!({"path": "x.txt", "content": "x"}))
        .await;
    let error = write.unwrap_err().to_string();
    assert!(error.contains("unknown tool `Write`"), "{error}");
    assert!(!ws.root().join("x.txt").exists());

    // A task without a prompt is a tool error the caller's model can read.
    let missing = served.call("task", json!({"agent": "ling"})).await.unwrap();
    assert_eq!(missing.is_error, Some(true));
    assert!(
        text(&missing).contains("missing field `prompt`"),
        "{missing:?}"
    );
    let (status, stderr) = served.close().await;
    assert!(status.success(), "{status:?}\n{stderr}");
}

/// Closing stdin ends the server promptly with exit 0, even while a task runs: the task is
/// cancelled and its session saved, nothing is left running.
#[tokio::test]
async fn closing_stdin_ends_the_server_even_mid_task() {
    let (ws, server) = workspace(vec![Fault::Hang.into()]);
    let served = serve(&ws, &[], &[]).await;
    let running = start_waiting_task(&served, &server).await;
    let started = std::time::Instant::now();
    let (status, stderr) = served.close().await;
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(5), "{stderr}");
    let _ = running.await;
    // The cancelled task's session was stored.
    let listed = support::run(&ws, &["sessions"]);
    assert_eq!(listed.stdout.lines().count(), 2, "{listed:?}");
}

/// SIGTERM ends the server as it ends `-p`: the running task is cancelled (its caller
/// still gets the cancelled result), and the exit code is 128 + 15.
#[tokio::test]
async fn sigterm_cancels_the_running_task_and_ends_the_server() {
    let (ws, server) = workspace(vec![Fault::Hang.into()]);
    let mut served = serve(&ws, &[], &[]).await;
    let running = start_waiting_task(&served, &server).await;
    let pid = served.child.id().unwrap().to_string();
    let killed = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(killed.success());
    let result = within(running).await.unwrap().unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).contains("the task was cancelled"),
        "{result:?}"
    );
    let status = within(served.child.wait()).await.unwrap();
    assert_eq!(status.code(), Some(143), "{}", served.stderr());
}

/// A call the client cancels (rmcp sends `notifications/cancelled` when the call is
/// dropped) cancels its task: the session's run ends as cancelled, and the server goes on.
#[tokio::test]
async fn a_cancelled_call_cancels_its_task() {
    let (ws, server) = workspace(vec![Fault::Hang.into(), Reply::text("Still here.").into()]);
    let served = serve(&ws, &[], &[]).await;
    let running = start_waiting_task(&served, &server).await;
    running.abort();
    let deadline = std::time::Instant::now() + LIMIT;
    loop {
        let runs = support::run(&ws, &["runs"]);
        if runs.stdout.contains("cancelled") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{runs:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let result = served
        .call("task", json!({"prompt": "next"}))
        .await
        .unwrap();
    assert!(text(&result).starts_with("Still here."), "{result:?}");
    let (status, stderr) = served.close().await;
    assert!(status.success(), "{status:?}\n{stderr}");
}

/// Trust is `-p`'s: what the folder's own files grant is withheld, with a note on stderr,
/// until the person trusts the folder.
#[tokio::test]
async fn a_workspaces_grants_wait_for_trust() {
    let write = || -> Vec<Step> {
        vec![
            Reply::tool("Write", json!({"path": "notes.md", "content": "# Notes\n"})).into(),
            Reply::text("Done.").into(),
        ]
    };
    let (ws, server) = workspace(write());
    ws.write(
        "linggen-agent.toml",
        "[permissions]\nallow = [\"Write(notes.md)\"]\n",
    );
    let served = serve(&ws, &[], &[]).await;
    let result = served
        .call("task", json!({"prompt": "notes"}))
        .await
        .unwrap();
    assert!(text(&result).starts_with("Done."), "{result:?}");
    assert!(!ws.root().join("notes.md").exists());
    let results = texts(&server.last_chat_request().unwrap(), "tool").join("\n");
    assert!(results.contains("needs the user's approval"), "{results}");
    let (_, stderr) = served.close().await;
    assert!(stderr.contains("not trusted"), "{stderr}");
    assert!(stderr.contains("allow Write(notes.md)"), "{stderr}");

    let trusted = support::run(&ws, &["trust", "--yes"]);
    assert_eq!(trusted.code, Some(0), "{}", trusted.stderr);
    let server = ScriptedServer::start_background(Protocol::OpenAi, write());
    ws.configure(Protocol::OpenAi, &server.url());
    let served = serve(&ws, &[], &[]).await;
    let result = served
        .call("task", json!({"prompt": "notes"}))
        .await
        .unwrap();
    assert!(
        text(&result).contains("Files changed (1):\n- notes.md\n"),
        "{result:?}"
    );
    let (_, stderr) = served.close().await;
    assert!(!stderr.contains("not trusted"), "{stderr}");
}

/// A client that sends its calls and closes stdin at once (a script piping requests in)
/// still gets the read-only tools' answers, and one line per answer on stdout: closing
/// stdin cancels tasks, not the short reads already asked for.
#[tokio::test]
async fn reads_asked_for_before_stdin_closes_are_answered() {
    let server = ScriptedServer::start_background(Protocol::OpenAi, Vec::<Step>::new());
    let ws = Workspace::new();
    let home = ws.root().join("home");
    write_config(&home, Protocol::OpenAi, &server.url());
    ws.write("notes.txt", "remember the milk\n");
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "pipe", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "Read", "arguments": {"path": "notes.txt"}}}),
    ];
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let mut child = ws
        .cmd()
        .args(["mcp", "serve"])
        .env("LINGGEN_HOME", &home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, input.as_bytes()).unwrap();
    drop(stdin);
    let out = within(tokio::task::spawn_blocking(move || {
        child.wait_with_output()
    }))
    .await
    .unwrap()
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let answer = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|m| m["id"] == 2)
        .unwrap_or_else(|| panic!("no answer to the Read call: {stdout}"));
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("remember the milk"),
        "{answer}"
    );
}

/// A client that sends a line without end: the server reads no more than 64 MiB of it and
/// ends with one line saying why, instead of keeping all of it.
#[test]
fn a_client_line_without_end_ends_the_server_with_one_line() {
    let (ws, _server) = workspace(vec![]);
    let out = support::feed_endless_line(ws.cmd().args(["mcp", "serve"]), LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("it sent a message over 64 MiB without ending it"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}
