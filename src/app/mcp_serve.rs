//! `linggen mcp serve`: linggen as an MCP server on stdin/stdout (issue 24, point 4). The
//! protocol is [`crate::mcp::serve`]'s; this file gives it the workspace. Each `task` call
//! runs in a new session exactly as `linggen -p` runs one: unattended (calls that need
//! approval are denied, or put to the client's person through MCP elicitation when the
//! client can ask), with only what the person trusted of the folder's grants. The
//! read-only tools run in the tool context a session of this workspace gets.
//!
//! stdout is the transport: no session printer runs here, and what `-p` would print as
//! progress (warnings, errors) goes to stderr.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::signals::{Ending, Signals, next_ending};
use super::{Failure, LiveSession, Start, Workspace, exit, load_workspace, off_runtime};
use crate::config::ConfigError;
use crate::mcp::serve::caller::{Answer, Caller, Question};
use crate::mcp::serve::{TaskError, TaskReport, TaskRequest, TaskRunner, TaskStatus};
use crate::session::{Decision, Event, Input, OutcomeStatus, UserMessage};
use crate::shared_text::SharedText;
use crate::tools::ToolContext;
use crate::tools::terminal_text::strip_controls;

/// Serves until the client closes stdin (exit 0) or a signal ends it (128 + the signal).
pub async fn run(start: Start) -> i32 {
    match load(start).await {
        Ok(sessions) => serve(Arc::new(sessions)).await,
        Err(f) => {
            eprintln!("linggen: error: {}", f.message);
            f.code
        }
    }
}

/// The workspace, loaded once for every session this server starts.
async fn load(start: Start) -> Result<WorkspaceSessions, Failure> {
    let loading = start.clone();
    // The configuration files, and the sandbox probing what the kernel offers: off the
    // runtime.
    let (ws, tools) = off_runtime(move || {
        let ws = load_workspace(&loading)?;
        let config = ws.config.for_session(&loading.overrides);
        let tools = super::live::workspace_tools(&config, &ws);
        Ok((ws, tools))
    })
    .await?;
    // Nobody can be asked here, so nothing is trusted implicitly (as in `-p`).
    if let Some(note) = ws.trust.note() {
        eprintln!("linggen: note: {note}");
    }
    Ok(WorkspaceSessions {
        start,
        ws: Arc::new(ws),
        tools,
    })
}

/// Serves, and stops on Ctrl+C, SIGTERM or SIGHUP as `-p` does: the running tasks are
/// cancelled and their sessions saved; a second signal quits at once.
async fn serve(sessions: Arc<WorkspaceSessions>) -> i32 {
    let stop = CancellationToken::new();
    let serving = crate::mcp::serve::serve_stdio(sessions, stop.clone());
    tokio::pin!(serving);
    let mut signals = Some(Signals::all());
    let mut ended_by: Option<Ending> = None;
    loop {
        tokio::select! {
            served = &mut serving => {
                return match (served, ended_by) {
                    (_, Some(signal)) => signal.exit_code(),
                    (Ok(()), None) => exit::SUCCESS,
                    (Err(e), None) => {
                        eprintln!("linggen: error: {e}");
                        exit::FAILURE
                    }
                };
            }
            signal = next_ending(&mut signals) => {
                ended_by = Some(signal);
                eprintln!("linggen: {}; stopping (send it again to quit now)", signal.describe());
                stop.cancel();
                if let Some(signals) = signals.take() {
                    signals.second_quits(|| {});
                }
            }
        }
    }
}

/// Runs each task in a new session of the workspace.
struct WorkspaceSessions {
    start: Start,
    ws: Arc<Workspace>,
    /// The read-only tools' context: a session's, built once.
    tools: ToolContext,
}

#[async_trait]
impl TaskRunner for WorkspaceSessions {
    async fn run_task(
        &self,
        task: TaskRequest,
        cancel: CancellationToken,
        caller: Arc<dyn Caller>,
    ) -> Result<TaskReport, TaskError> {
        let start = self.task_start(task.agent);
        let message = self.message(task.prompt).await?;
        // As in `-p`, calls that need approval are denied, unless the caller's person can
        // be asked (MCP elicitation).
        let started = if caller.answers_approvals() {
            LiveSession::start_answered_elsewhere(&start, &self.ws).await
        } else {
            LiveSession::start(&start, &self.ws, false).await
        };
        let mut live = started.map_err(|f| match f.code {
            exit::USAGE => TaskError::Invalid(f.message),
            _ => TaskError::Start(f.message),
        })?;
        let session_id = live.session_id.clone();
        let _ = live.handle.inputs.send(Input::UserMessage(message)).await;
        let ended = follow(&mut live, &cancel, &caller).await;
        // Everything is persisted once the writer has drained the closed bus.
        let saved = live.stop().await;
        let ended = ended.ok_or(TaskError::NoOutcome)?;
        Ok(ended.report(session_id, saved))
    }

    fn read_tool_context(&self) -> &ToolContext {
        &self.tools
    }
}

impl WorkspaceSessions {
    /// What a task's session starts from: always a new session (the server's `--continue`
    /// or `--resume` would make concurrent tasks wait for one another's session), with the
    /// agent the call names, else the server's.
    fn task_start(&self, agent: Option<String>) -> Start {
        let mut start = self.start.clone();
        start.resume = None;
        start.continue_session = false;
        if agent.is_some() {
            start.agent = agent;
        }
        start
    }

    /// The prompt as a message, read by the core's line grammar as `-p` reads its task.
    async fn message(&self, prompt: String) -> Result<UserMessage, TaskError> {
        let ws = Arc::clone(&self.ws);
        // Attaching `@file` mentions reads files: off the runtime.
        off_runtime(move || {
            ws.read_line(&prompt, "mcp")
                .map_err(|e| Failure::from(ConfigError::Usage(e.to_string())))
        })
        .await
        .map_err(|f| TaskError::Invalid(f.message))
    }
}

/// How the task's run ended, and what the runs of the session changed.
struct Ended {
    run_id: String,
    status: OutcomeStatus,
    result: SharedText,
    /// Each run's change report by run id: (files, how many more).
    changes: HashMap<String, (Vec<String>, usize)>,
}

impl Ended {
    fn report(mut self, session_id: String, saved: bool) -> TaskReport {
        // The top-level run's report lists its delegated runs' files too.
        let (files_changed, more_files_changed) =
            self.changes.remove(&self.run_id).unwrap_or_default();
        TaskReport {
            session_id,
            status: task_status(self.status),
            answer: self.result.to_string(),
            files_changed,
            more_files_changed,
            saved,
        }
    }
}

fn task_status(status: OutcomeStatus) -> TaskStatus {
    match status {
        OutcomeStatus::Completed => TaskStatus::Completed,
        OutcomeStatus::Error => TaskStatus::Error,
        OutcomeStatus::Cancelled => TaskStatus::Cancelled,
        OutcomeStatus::MaxIters => TaskStatus::MaxIters,
        OutcomeStatus::Stopped => TaskStatus::Stopped,
    }
}

/// Follows the session's events to its run's outcome, cancelling the run when `cancel`
/// fires; approvals go to `caller`, and it hears each tool call. `None` when the session
/// ended first.
async fn follow(
    live: &mut LiveSession,
    cancel: &CancellationToken,
    caller: &Arc<dyn Caller>,
) -> Option<Ended> {
    let mut events = live.take_events();
    let mut changes = HashMap::new();
    let mut cancelled = false;
    loop {
        tokio::select! {
            envelope = events.recv() => match &envelope?.event {
                Event::ChangeReport { run_id, files, truncated_count, .. } => {
                    changes.insert(run_id.clone(), (files.clone(), *truncated_count));
                }
                Event::Outcome { run_id, status, result, .. } => {
                    return Some(Ended {
                        run_id: run_id.clone(),
                        status: *status,
                        result: result.clone(),
                        changes,
                    });
                }
                Event::ApprovalRequested { id, summary, display, reason, always, once_only, .. } => {
                    let question = Question {
                        summary: summary.clone(),
                        display: display.clone(),
                        reason: reason.clone(),
                        always: always.clone(),
                        once_only: *once_only,
                    };
                    ask(caller, &live.handle.inputs, id.clone(), question);
                }
                Event::ToolCallStarted { summary, .. } => caller.progress(summary).await,
                Event::Warning { message } => progress(&live.session_id, "warning", message),
                Event::Error { message } => progress(&live.session_id, "error", message),
                _ => {}
            },
            () = cancel.cancelled(), if !cancelled => {
                cancelled = true;
                let _ = live.handle.inputs.send(Input::Cancel).await;
            }
        }
    }
}

/// Puts one approval to the caller's person without holding up the events; the answer
/// goes back to the session (the first answer wins, and a cancelled run answers itself).
fn ask(caller: &Arc<dyn Caller>, inputs: &crate::session::Inputs, id: String, question: Question) {
    let (caller, inputs) = (Arc::clone(caller), inputs.clone());
    tokio::spawn(async move {
        let decision = match caller.approve(&question).await {
            Answer::AllowOnce => Decision::AllowOnce,
            Answer::AllowSession => Decision::AllowSession,
            Answer::Deny => Decision::Deny {
                reason: Some("the person who asked for the task said no".into()),
            },
        };
        let from = "mcp".to_string();
        let _ = inputs.send(Input::Approval { id, decision, from }).await;
    });
}

/// What `-p` would print as progress, on stderr and naming the session: several tasks may
/// run at once. Control sequences are stripped: the text quotes the model.
fn progress(session_id: &str, kind: &str, message: &str) {
    eprintln!(
        "linggen: session {session_id}: {kind}: {}",
        strip_controls(message)
    );
}
