//! `linggen mcp serve`, the protocol side: linggen as an MCP server on stdin/stdout, for
//! other agents and editors. It offers `task` (a task run in a new session of this
//! workspace, as `linggen -p` runs one) and linggen's read-only tools (`Read`, `Grep`,
//! `Glob`, `get_repo_info`).
//!
//! This module knows MCP and nothing of sessions: what a task is run with comes through
//! [`TaskRunner`], which the app implements with its session machinery. Every request is
//! answered on a task of its own, and nothing here holds a lock across a call, so concurrent
//! `task` calls run concurrently, each in its own session.
//!
//! stdout is the transport: nothing but the protocol may be written to it.

pub mod caller;
mod read_tools;
mod report;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::model::{CallToolResult, ContentBlock, Implementation, JsonObject, PROTOCOL_VERSIONS};
use crate::protocol::jsonrpc::{self, Incoming, Line, Peer, RpcError, code};
use crate::sync::lock;
use crate::tools::ToolContext;

/// The name of the tool that runs a task.
pub const TASK_TOOL: &str = "task";

/// What the server tells a client about itself at the handshake.
const INSTRUCTIONS: &str = "linggen, a coding agent, working in one workspace. `task` runs \
a task there as `linggen -p` does (a new session each call; a call that needs a person's \
approval is put to you through elicitation when your client supports it, else denied) and \
returns the answer and the files it changed. `Read`, `Grep`, \
`Glob` and `get_repo_info` read the workspace directly, confined as linggen's own tools are.";

/// One `task` call's arguments.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRequest {
    /// The task, read as `linggen -p` reads its prompt (`/skill args`, `@agent …`, text).
    pub prompt: String,
    /// The agent the session starts with (`--agent`); `None`: the server's own.
    #[serde(default)]
    pub agent: Option<String>,
}

impl TaskRequest {
    /// The call's arguments as a task, or what is wrong with them, for the caller to fix.
    fn parse(arguments: Option<JsonObject>) -> Result<TaskRequest, String> {
        let arguments = serde_json::Value::Object(arguments.unwrap_or_default());
        let task: TaskRequest = serde_json::from_value(arguments)
            .map_err(|e| format!("invalid arguments for `{TASK_TOOL}`: {e}"))?;
        if task.prompt.trim().is_empty() {
            return Err(format!(
                "`{TASK_TOOL}` needs a non-empty `prompt`: the task to run, as `linggen -p` takes it"
            ));
        }
        Ok(task)
    }
}

/// How a task's run ended; the names are `-p --output-format json`'s `status` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Completed,
    Error,
    Cancelled,
    /// The most model calls a task may make were made before a final answer.
    MaxIters,
    /// A limit stopped the run (the same call failing again and again, no progress, the
    /// `[auto]` time or token budget).
    Stopped,
}

/// What a finished task reports back to the client.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskReport {
    /// The session the task ran in (`linggen --resume ID` continues it).
    pub session_id: String,
    pub status: TaskStatus,
    /// The final answer, or what went wrong.
    pub answer: String,
    /// The files the task wrote, its delegated runs' included.
    pub files_changed: Vec<String>,
    /// Files changed beyond those listed (the session lists a bounded number).
    pub more_files_changed: usize,
    /// Whether all of the session was stored (else `--resume` will not find it).
    pub saved: bool,
}

/// Why a task could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The task, or the agent it names, is not one linggen can run.
    #[error("{0}")]
    Invalid(String),
    /// The session could not start (no model, an unreachable one, the database).
    #[error("the session could not start: {0}")]
    Start(String),
    /// The session stopped before its run had an outcome.
    #[error("the session ended without an outcome")]
    NoOutcome,
}

/// Why serving ended in failure.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot read the MCP client's messages from stdin: {0}")]
    Stdin(std::io::Error),
}

/// What the server runs things with: the app's sessions and the workspace's tools.
#[async_trait]
pub trait TaskRunner: Send + Sync {
    /// Runs `task` in a new session of this workspace until its run's outcome. When
    /// `cancel` fires (the client cancelled the call, or the server is stopping) the run is
    /// cancelled as Ctrl+C cancels one, and its report is still returned.
    /// `caller` is the client that asked: approvals go to it when it can answer them, and
    /// it hears how the run goes.
    async fn run_task(
        &self,
        task: TaskRequest,
        cancel: CancellationToken,
        caller: Arc<dyn caller::Caller>,
    ) -> Result<TaskReport, TaskError>;

    /// Where the read-only tools run: the sessions' own tool context (root, sandbox,
    /// `$LINGGEN_HOME`), so they may read exactly what a session's tools may.
    fn read_tool_context(&self) -> &ToolContext;
}

/// Serves MCP on stdin/stdout until the client closes stdin or `stop` fires, then waits
/// until every task it started has ended (cancelled, and its session saved).
pub async fn serve_stdio(
    runner: Arc<dyn TaskRunner>,
    stop: CancellationToken,
) -> Result<(), ServeError> {
    let (peer, writer) = Peer::new(tokio::io::stdout());
    let server = Arc::new(LinggenServer {
        runner,
        runs: stop.child_token(),
        in_flight: Arc::default(),
        peer: peer.clone(),
        elicitation: Mutex::new(false),
        calls: Mutex::default(),
    });
    let mut lines = crate::protocol::ndjson::BoundedLines::new(tokio::io::stdin());
    // A closed stdin is how an MCP client says it is done (the stdio transport's shutdown):
    // the running tasks are cancelled at once; a task can run for minutes.
    let read = loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) => server.take(&line),
                Ok(None) => break Ok(()),
                Err(e) => break Err(ServeError::Stdin(e)),
            },
            () = stop.cancelled() => break Ok(()),
        }
    };
    server.runs.cancel();
    server.in_flight.all_done().await;
    peer.close();
    drop((server, peer));
    // Every answer is written before exit; a task still holding the connection does not
    // keep the process alive.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), writer).await;
    read
}

/// The MCP server: answers the handshake, lists the tools and dispatches calls. Each
/// request is answered on a task of its own, and nothing holds a lock across a call, so
/// concurrent `task` calls run concurrently, each in its own session.
struct LinggenServer {
    runner: Arc<dyn TaskRunner>,
    /// Fires when the server stops: every run is cancelled.
    runs: CancellationToken,
    in_flight: Arc<InFlight>,
    peer: Peer,
    /// Whether the client said at `initialize` that it can put questions to a person.
    elicitation: Mutex<bool>,
    /// The running `tools/call` requests by id, each with the token its client's
    /// `notifications/cancelled` fires.
    calls: Mutex<HashMap<String, CancellationToken>>,
}

/// `tools/call`'s parameters.
#[derive(Deserialize)]
struct CallParams {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(default, rename = "_meta")]
    meta: Option<JsonObject>,
}

impl LinggenServer {
    /// Acts on one line from the client.
    fn take(self: &Arc<Self>, line: &str) {
        match jsonrpc::parse(line) {
            Line::Incoming(Incoming::Request { id, method, params }) => {
                // Registered before the task starts, so a cancellation that follows at once
                // finds the call.
                let cancelled = CancellationToken::new();
                if method == "tools/call" {
                    lock(&self.calls).insert(id.to_string(), cancelled.clone());
                }
                let server = Arc::clone(self);
                tokio::spawn(async move {
                    let result = server.answer(&method, params, cancelled.clone()).await;
                    lock(&server.calls).remove(&id.to_string());
                    // A call its client cancelled gets no answer, as the specification
                    // asks; one whose task the server's stop cancelled does.
                    if !cancelled.is_cancelled() {
                        server.peer.respond(id, result);
                    }
                });
            }
            Line::Incoming(Incoming::Notification { method, params }) => {
                if method == "notifications/cancelled"
                    && let Some(id) = params.get("requestId")
                    && let Some(call) = lock(&self.calls).get(&id.to_string())
                {
                    call.cancel();
                }
            }
            Line::Response { id, result } => self.peer.deliver(id, result),
            Line::Invalid { id, error } => self.peer.respond(id, Err(error)),
            Line::Ignored => {}
        }
    }

    async fn answer(
        &self,
        method: &str,
        params: Value,
        cancel: CancellationToken,
    ) -> Result<Value, RpcError> {
        match method {
            "initialize" => Ok(self.initialize(&params)),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({ "tools": read_tools::listed() })),
            "tools/call" => {
                let call: CallParams = serde_json::from_value(params)
                    .map_err(|e| RpcError::invalid_params(format!("tools/call: {e}")))?;
                let result = self.call_tool(call, cancel).await?;
                serde_json::to_value(result).map_err(|e| RpcError::internal(e.to_string()))
            }
            _ => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("linggen does not serve the method `{method}`"),
            )),
        }
    }

    /// The handshake: the protocol version the client asked for when linggen speaks it
    /// (else the newest), and what linggen offers.
    fn initialize(&self, params: &Value) -> Value {
        let asked = params["protocolVersion"].as_str().unwrap_or_default();
        let version = PROTOCOL_VERSIONS
            .into_iter()
            .find(|v| *v == asked)
            .unwrap_or(PROTOCOL_VERSIONS[0]);
        *lock(&self.elicitation) = params["capabilities"].get("elicitation").is_some();
        json!({
            "protocolVersion": version,
            "capabilities": { "tools": {} },
            "serverInfo": Implementation::linggen(),
            "instructions": INSTRUCTIONS,
        })
    }

    async fn call_tool(
        &self,
        call: CallParams,
        cancel: CancellationToken,
    ) -> Result<CallToolResult, RpcError> {
        let name = call.name.as_str();
        if name == TASK_TOOL {
            let progress = call.meta.and_then(|mut meta| meta.remove("progressToken"));
            let elicitation = *lock(&self.elicitation);
            let caller = caller::McpCaller::new(self.peer.clone(), elicitation, progress);
            return Ok(self.task(call.arguments, cancel, caller).await);
        }
        if read_tools::offers(name) {
            let ctx = self.runner.read_tool_context();
            let arguments = call.arguments.unwrap_or_default();
            return Ok(read_tools::call(ctx, name, arguments, &cancel).await);
        }
        // The request cannot be routed: a protocol error, as the MCP specification asks.
        Err(RpcError::invalid_params(format!(
            "unknown tool `{name}`; linggen offers {TASK_TOOL}, {}",
            read_tools::names().join(", ")
        )))
    }

    /// Runs one `task` call. A bad argument is a tool error, which the caller's model reads
    /// and can fix; a protocol error would reach it as an opaque failure. When the client
    /// cancels the call (`call`) or the server stops, the run ends as a cancelled one
    /// (saved). A read-only tool's call is not cancelled by the stop: it is short, and its
    /// answer is still written before the server exits.
    async fn task(
        &self,
        arguments: Option<JsonObject>,
        call: CancellationToken,
        caller: Arc<dyn caller::Caller>,
    ) -> CallToolResult {
        let task = match TaskRequest::parse(arguments) {
            Ok(task) => task,
            Err(message) => return tool_error(message),
        };
        // Counted before the check, so that stopping either sees this call or stops it.
        let _running = self.in_flight.enter();
        if self.runs.is_cancelled() {
            return tool_error("linggen is shutting down; the task was not started".into());
        }
        let cancel = self.runs.child_token();
        let run = self.runner.run_task(task, cancel.clone(), caller);
        tokio::pin!(run);
        let result = tokio::select! {
            result = &mut run => result,
            () = call.cancelled() => {
                cancel.cancel();
                run.await
            }
        };
        match result {
            Ok(report) => report::tool_result(&report),
            Err(e) => tool_error(format!("linggen could not run the task: {e}")),
        }
    }
}

fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// How many calls are running, so that stopping waits for them all.
struct InFlight(watch::Sender<usize>);

impl Default for InFlight {
    fn default() -> Self {
        InFlight(watch::Sender::new(0))
    }
}

impl InFlight {
    fn enter(self: &Arc<Self>) -> InFlightGuard {
        self.0.send_modify(|n| *n += 1);
        InFlightGuard(Arc::clone(self))
    }

    async fn all_done(&self) {
        let mut count = self.0.subscribe();
        // The sender lives in `self`, so the channel cannot close while this waits.
        let _ = count.wait_for(|n| *n == 0).await;
    }
}

/// One running call; dropping it (the call ended, or its task was dropped) counts it out.
struct InFlightGuard(Arc<InFlight>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.0.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn arguments(value: serde_json::Value) -> Option<JsonObject> {
        value.as_object().cloned()
    }

    #[test]
    fn a_task_needs_a_prompt_and_names_a_mistyped_argument() {
        let task = TaskRequest::parse(arguments(json!({"prompt": "fix it", "agent": "coder"})));
        assert_eq!(
            task,
            Ok(TaskRequest {
                prompt: "fix it".into(),
                agent: Some("coder".into())
            })
        );
        let missing = TaskRequest::parse(None).unwrap_err();
        assert!(missing.contains("missing field `prompt`"), "{missing}");
        let typo = TaskRequest::parse(arguments(json!({"promt": "x"}))).unwrap_err();
        assert!(typo.contains("unknown field `promt`"), "{typo}");
        let empty = TaskRequest::parse(arguments(json!({"prompt": "  "}))).unwrap_err();
        assert!(empty.contains("non-empty `prompt`"), "{empty}");
    }

    #[tokio::test]
    async fn stopping_waits_for_every_running_call() {
        let in_flight = Arc::new(InFlight::default());
        let running = in_flight.enter();
        let waiter = Arc::clone(&in_flight);
        let done = tokio::spawn(async move { waiter.all_done().await });
        tokio::task::yield_now().await;
        assert!(!done.is_finished());
        drop(running);
        done.await.unwrap();
        // Nothing running: returns at once.
        in_flight.all_done().await;
    }
}
