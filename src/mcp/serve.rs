//! `linggen mcp serve`, the protocol side: linggen as an MCP server on stdin/stdout, for
//! other agents and editors. It offers `task` (a task run in a new session of this
//! workspace, as `linggen -p` runs one) and linggen's read-only tools (`Read`, `Grep`,
//! `Glob`, `get_repo_info`).
//!
//! This module knows MCP and nothing of sessions: what a task is run with comes through
//! [`TaskRunner`], which the app implements with its session machinery. rmcp serves every
//! request on a task of its own, and nothing here holds a lock across a call, so concurrent
//! `task` calls run concurrently, each in its own session.
//!
//! stdout is the transport: nothing but the protocol may be written to it.

pub mod caller;
mod read_tools;
mod report;
mod stdin;

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

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
    #[error("the MCP client did not complete the handshake: {0}")]
    Handshake(String),
    #[error("the MCP server stopped unexpectedly: {0}")]
    Crashed(String),
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
    // A closed stdin is how an MCP client says it is done (the stdio transport's shutdown):
    // the running tasks are cancelled at once rather than when rmcp's drain gives up.
    let runs = stop.child_token();
    let in_flight = Arc::new(InFlight::default());
    let server = LinggenServer {
        runner,
        runs: runs.clone(),
        in_flight: Arc::clone(&in_flight),
    };
    let (read, write) = rmcp::transport::io::stdio_pipes();
    let read = stdin::EndWatch::new(read, runs.clone());
    let served = match server.serve_with_ct((read, write), stop).await {
        Ok(service) => service
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| ServeError::Crashed(e.to_string())),
        Err(e) => Err(ServeError::Handshake(e.to_string())),
    };
    runs.cancel();
    in_flight.all_done().await;
    served
}

/// The MCP server: lists the tools and dispatches calls.
struct LinggenServer {
    runner: Arc<dyn TaskRunner>,
    /// Fires when the server stops: every run is cancelled.
    runs: CancellationToken,
    in_flight: Arc<InFlight>,
}

impl ServerHandler for LinggenServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("linggen", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(read_tools::listed()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        if name == TASK_TOOL {
            let caller = caller::McpCaller::of(&context);
            return Ok(self
                .task(request.arguments, context.ct, caller)
                .await
                .into());
        }
        if read_tools::offers(name) {
            let ctx = self.runner.read_tool_context();
            let arguments = request.arguments.unwrap_or_default();
            return Ok(read_tools::call(ctx, name, arguments, &context.ct)
                .await
                .into());
        }
        // The request cannot be routed: a protocol error, as the MCP specification asks.
        Err(ErrorData::invalid_params(
            format!(
                "unknown tool `{name}`; linggen offers {TASK_TOOL}, {}",
                read_tools::names().join(", ")
            ),
            None,
        ))
    }
}

impl LinggenServer {
    /// Runs one `task` call. A bad argument is a tool error, which the caller's model reads
    /// and can fix; a protocol error would reach it as an opaque failure.
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
            // The client cancelled the call: the run ends as a cancelled one (saved).
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
