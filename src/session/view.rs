//! The one projection of a session's state. Every frontend that needs to know "what holds
//! now" (the settings, busy or idle, the runs, the open approvals, the answer being
//! streamed, the context used, the queue) folds the event stream through [`SessionView`]
//! instead of keeping its own copies, so the terminal, the mirror's late-joiner snapshot
//! and the `-p` printer cannot disagree about it.

use serde::Serialize;

use super::event::{ContextStage, Event, OutcomeStatus, SessionStatus};
use super::input::TurnMode;
use super::usage::Breakdown;
use crate::config::PermissionMode;
use crate::llm::Role;

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    /// Running, and one of its tool calls waits for a person.
    WaitingApproval,
    Completed,
    Error,
    Cancelled,
    MaxIters,
    Stopped,
}

impl RunStatus {
    pub fn ended(outcome: OutcomeStatus) -> RunStatus {
        match outcome {
            OutcomeStatus::Completed => RunStatus::Completed,
            OutcomeStatus::Error => RunStatus::Error,
            OutcomeStatus::Cancelled => RunStatus::Cancelled,
            OutcomeStatus::MaxIters => RunStatus::MaxIters,
            OutcomeStatus::Stopped => RunStatus::Stopped,
        }
    }

    pub fn is_running(self) -> bool {
        matches!(self, RunStatus::Running | RunStatus::WaitingApproval)
    }

    /// The status as the `runs` table and the mirror's snapshot spell it: a run waiting
    /// for a person is still `running`, and every failure is `failed`.
    pub fn stored(self) -> &'static str {
        match self {
            RunStatus::Running | RunStatus::WaitingApproval => "running",
            RunStatus::Completed => "completed",
            RunStatus::Error | RunStatus::MaxIters | RunStatus::Stopped => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }
}

/// The session's settings, as they hold for the next turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Settings {
    pub model: String,
    pub root: String,
    pub agent_id: String,
    pub mode: TurnMode,
    pub permission_mode: PermissionMode,
    pub max_iters: u32,
}

impl Settings {
    /// The configured model id the label starts with (`local` of `local (qwen @ url)`).
    pub fn model_id(&self) -> &str {
        self.model.split(" (").next().unwrap_or_default()
    }
}

/// One run (one agent working on one task).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunState {
    pub run_id: String,
    pub parent_id: Option<String>,
    pub agent_id: String,
    pub task: String,
    pub status: RunStatus,
    /// The model its latest call went to (`ModelRouted`).
    pub model: Option<String>,
}

/// A response still being streamed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Streaming {
    pub run_id: String,
    pub agent_id: String,
    /// The end of the text so far: at most [`STREAMED_TEXT_LIMIT`] bytes of it.
    pub text: String,
    pub thinking: bool,
    /// Bytes at the start of the response that `text` no longer holds.
    #[serde(skip_serializing_if = "is_zero")]
    pub skipped_bytes: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// How much of a response in flight a view keeps. A late joiner sees the end of a longer
/// one (and the whole answer once its message arrives); the turn holds the text anyway,
/// and a view holding a second full copy made memory grow with the answer.
pub const STREAMED_TEXT_LIMIT: usize = 256 * 1024;

impl Streaming {
    /// Appends a piece, dropping the oldest half of the kept text when it outgrows the
    /// limit (halving, not trimming each time, keeps the cost per byte constant).
    fn push(&mut self, piece: &str) {
        // Of a piece longer than the limit only the end would stay: copy just that.
        let mut start = if piece.len() > STREAMED_TEXT_LIMIT {
            piece.len() - STREAMED_TEXT_LIMIT / 2
        } else {
            0
        };
        while !piece.is_char_boundary(start) {
            start += 1;
        }
        if start > 0 {
            self.skipped_bytes += self.text.len() + start;
            self.text.clear();
        }
        let piece = &piece[start..];
        self.text.push_str(piece);
        if self.text.len() <= STREAMED_TEXT_LIMIT {
            return;
        }
        let mut cut = self.text.len() - STREAMED_TEXT_LIMIT / 2;
        while !self.text.is_char_boundary(cut) {
            cut += 1;
        }
        self.text.drain(..cut);
        self.text.shrink_to(STREAMED_TEXT_LIMIT);
        self.skipped_bytes += cut;
    }
}

/// How full the context is, as the last `ContextUsage` of a turn's own run said.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ContextState {
    pub stage: ContextStage,
    pub used_tokens: u64,
    pub estimated_tokens: u64,
    pub token_limit: Option<u32>,
    pub message_count: usize,
    pub compressed: bool,
    pub summary_count: u32,
    /// What the last request was made of.
    pub breakdown: Option<Breakdown>,
}

/// The state of a session, folded from its events.
#[derive(Debug, Clone, Default)]
pub struct SessionView {
    pub settings: Settings,
    /// `None` until the first `StateUpdated`.
    pub status: Option<SessionStatus>,
    pub runs: Vec<RunState>,
    /// The `ApprovalRequested` events still waiting for an answer, oldest first.
    pub pending: Vec<Event>,
    /// The responses being streamed, when this view keeps them (see
    /// [`SessionView::keeping_streamed_text`]); empty otherwise.
    pub streaming: Vec<Streaming>,
    /// The last usage a turn's own run reported.
    pub context: Option<ContextState>,
    pub queue: Vec<String>,
    /// What "always" answers allowed in this session, oldest first (`/permissions`).
    pub grants: Vec<SessionGrant>,
    /// The agent's todo list as its last `TodoWrite` left it (empty until one).
    pub todos: Vec<crate::tools::todo::Todo>,
    /// Background agents started and their answers delivered (`-p` waits for them all).
    pub background: BackgroundAgents,
    /// The session's background commands, in the order they started (`/tasks`).
    pub tasks: Vec<crate::tools::background::TaskInfo>,
    /// The tokens the servers reported, per model, delegated runs included (`/cost`), in
    /// the order the models were first used.
    pub tokens: Vec<ModelTokens>,
    /// Whether `streaming` gathers the text of responses in flight.
    keeps_streamed_text: bool,
}

/// Children started with `background: true`, and how many of their answers reached the
/// conversation (each as a message from `background`, at the start of the turn it opens).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackgroundAgents {
    pub started: usize,
    pub answered: usize,
}

impl BackgroundAgents {
    /// Started, with an answer still to come.
    pub fn waiting(&self) -> usize {
        self.started.saturating_sub(self.answered)
    }
}

/// A rule an "always" answer added for the rest of the session, and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionGrant {
    /// `Bash(cargo test*)`, `Write(src/main.rs)`.
    pub rule: String,
    /// The call it was asked for, as its tool line read (`Bash cargo test`).
    pub call: String,
    /// Who answered: `terminal`, `web`, `attached`.
    pub by: String,
    /// Also saved for the project (`.linggen/permissions.toml`).
    pub project: bool,
}

/// What one model's servers reported for this session's calls to it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelTokens {
    /// The configured model id (`ModelRouted`'s).
    pub model_id: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Responses counted.
    pub calls: u32,
}

impl SessionView {
    /// A view of a session whose agent is known before its first event.
    pub fn new(agent_id: &str) -> SessionView {
        let mut view = SessionView::default();
        view.settings.agent_id = agent_id.to_string();
        view
    }

    /// This view also gathers each response's text while it streams, for a viewer who
    /// arrives mid-answer (the web mirror's snapshot). Only a view that shows it should: the
    /// printer and the shell render tokens as they pass, and the store writes the finished
    /// message, so a copy of a long answer in each of their views was memory for nothing.
    pub fn keeping_streamed_text(mut self) -> SessionView {
        self.keeps_streamed_text = true;
        self
    }

    /// The rules an "always" answer to `request` added, with their origin.
    fn remember_grants(&mut self, request: &Event, decision: &super::Decision, by: &str) {
        let project = match decision {
            super::Decision::AllowSession => false,
            super::Decision::AllowProject => true,
            _ => return,
        };
        let Event::ApprovalRequested {
            summary,
            always,
            once_only: false,
            ..
        } = request
        else {
            return;
        };
        for rule in always {
            self.grants.retain(|g| &g.rule != rule);
            self.grants.push(SessionGrant {
                rule: rule.clone(),
                call: summary.clone(),
                by: by.to_string(),
                project,
            });
        }
    }

    /// Forgets a grant the person revoked (the session stopped allowing it).
    pub fn revoke(&mut self, rule: &str) {
        self.grants.retain(|g| g.rule != rule);
    }

    pub fn is_busy(&self) -> bool {
        self.status == Some(SessionStatus::Running)
    }

    /// A turn's own run has started and has not ended (delegated runs end inside it).
    pub fn turn_running(&self) -> bool {
        self.runs
            .iter()
            .any(|r| r.parent_id.is_none() && r.status.is_running())
    }

    /// No turn running, no approval open.
    pub fn is_idle(&self) -> bool {
        !self.is_busy() && self.pending.is_empty()
    }

    pub fn is_pending(&self, approval_id: &str) -> bool {
        self.pending
            .iter()
            .any(|e| matches!(e, Event::ApprovalRequested { id, .. } if id == approval_id))
    }

    pub fn run(&self, run_id: &str) -> Option<&RunState> {
        self.runs.iter().find(|r| r.run_id == run_id)
    }

    /// How many delegations deep a run is: 0 for a turn's own run (and runs not seen).
    pub fn depth(&self, run_id: &str) -> usize {
        let mut depth = 0;
        let mut run = self.run(run_id);
        // Bounded by the number of runs, so a malformed parent cycle cannot loop forever.
        while let Some(parent) = run.and_then(|r| r.parent_id.as_deref())
            && depth < self.runs.len()
        {
            depth += 1;
            run = self.run(parent);
        }
        depth
    }

    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::SessionStarted { .. }
            | Event::SettingsUpdated { .. }
            | Event::StateUpdated { .. } => self.on_settings(event),
            Event::QueueUpdated { queued } => self.queue = queued.clone(),
            Event::TodosUpdated { todos } => self.todos = todos.clone(),
            Event::TaskUpdated { task } => match self.tasks.iter_mut().find(|t| t.id == task.id) {
                Some(known) => *known = task.clone(),
                None => self.tasks.push(task.clone()),
            },
            Event::ContextUsage { .. } => self.on_context_usage(event),
            Event::Token {
                run_id,
                agent_id,
                token,
                thinking,
                done,
            } => self.on_token(run_id, agent_id, token, *thinking, *done),
            Event::Message {
                run_id, role, from, ..
            } => self.on_message(run_id, *role, from),
            Event::RunStarted {
                run_id,
                parent_id,
                agent_id,
                task,
            } => self.add_run(run_id, parent_id.as_deref(), agent_id, task),
            // Announced by the parent before the child's `RunStarted`: known from here on,
            // so that the child's first lines are already placed under its parent.
            Event::SubagentSpawned {
                parent_id,
                subagent_id,
                agent_id,
                task,
                background,
            } => {
                self.background.started += usize::from(*background);
                self.add_run(subagent_id, Some(parent_id), agent_id, task)
            }
            Event::SubagentResult {
                subagent_id,
                outcome,
                ..
            } => self.set_status(subagent_id, RunStatus::ended(*outcome)),
            Event::Outcome { run_id, status, .. } => self.on_outcome(run_id, *status),
            Event::ApprovalRequested { run_id, .. } => {
                self.pending.push(event.clone());
                self.set_status(run_id, RunStatus::WaitingApproval);
            }
            Event::ApprovalResolved { id, decision, by } => {
                self.on_approval_resolved(id, decision, by)
            }
            Event::ModelRouted {
                run_id, model_id, ..
            } => {
                if let Some(run) = self.runs.iter_mut().find(|r| &r.run_id == run_id) {
                    run.model = Some(model_id.clone());
                }
            }
            Event::AgentStatus { .. }
            | Event::Compacted { .. }
            | Event::ToolCallStarted { .. }
            | Event::ToolCallFinished { .. }
            | Event::ChangeReport { .. }
            | Event::CheckpointCreated { .. }
            | Event::CheckpointClosed { .. }
            | Event::Error { .. }
            | Event::Warning { .. }
            | Event::Retrying { .. }
            | Event::HookRan { .. }
            | Event::Notification { .. } => {}
        }
    }

    /// `SessionStarted`, `SettingsUpdated`, `StateUpdated`: what the next turn will use.
    fn on_settings(&mut self, event: &Event) {
        let s = &mut self.settings;
        match event {
            Event::SessionStarted {
                model,
                root,
                agent_id,
                permission_mode,
                max_iters,
                mode,
                ..
            } => {
                s.model = model.clone();
                s.root = root.clone();
                s.agent_id = agent_id.clone();
                s.permission_mode = *permission_mode;
                s.max_iters = *max_iters;
                s.mode = *mode;
            }
            Event::SettingsUpdated {
                agent_id,
                mode,
                model,
                permission_mode,
                max_iters,
            } => {
                s.agent_id = agent_id.clone();
                s.mode = *mode;
                s.model = model.clone();
                s.permission_mode = *permission_mode;
                s.max_iters = *max_iters;
            }
            Event::StateUpdated {
                status,
                agent_id,
                mode,
            } => {
                s.agent_id = agent_id.clone();
                s.mode = *mode;
                self.status = Some(*status);
            }
            _ => {}
        }
    }

    /// A count of the context: every run's tokens add up; the session's context is its
    /// turns' (a delegated run's context is its own).
    fn on_context_usage(&mut self, event: &Event) {
        let Event::ContextUsage {
            run_id,
            stage,
            used_tokens,
            estimated_tokens,
            token_limit,
            message_count,
            compressed,
            summary_count,
            breakdown,
            input_tokens,
            output_tokens,
            ..
        } = event
        else {
            return;
        };
        if *stage == ContextStage::Response {
            self.count_tokens(run_id, *input_tokens, *output_tokens);
        }
        if self.depth(run_id) > 0 {
            return;
        }
        // A response's count keeps the breakdown of the request it answered.
        let breakdown = breakdown.or(self.context.and_then(|c| c.breakdown));
        self.context = Some(ContextState {
            stage: *stage,
            used_tokens: *used_tokens,
            estimated_tokens: *estimated_tokens,
            token_limit: *token_limit,
            message_count: *message_count,
            compressed: *compressed,
            summary_count: *summary_count,
            breakdown,
        })
    }

    fn on_message(&mut self, run_id: &str, role: Role, from: &str) {
        if role == Role::Assistant {
            self.streaming.retain(|s| s.run_id != run_id);
        }
        if role == Role::User && from == super::delegate::BACKGROUND_SENDER {
            self.background.answered += 1;
        }
    }

    fn on_outcome(&mut self, run_id: &str, status: OutcomeStatus) {
        self.set_status(run_id, RunStatus::ended(status));
        self.streaming.retain(|s| s.run_id != run_id);
        // A turn that ended (cancelled, say) leaves no request waiting; those that were
        // open get no `ApprovalResolved`.
        self.pending.clear();
        for run in &mut self.runs {
            if run.status == RunStatus::WaitingApproval {
                run.status = RunStatus::Running;
            }
        }
    }

    fn on_approval_resolved(&mut self, id: &str, decision: &super::Decision, by: &str) {
        let mut answered = None;
        let mut request = None;
        self.pending.retain(|e| match e {
            Event::ApprovalRequested {
                id: open, run_id, ..
            } if open == id => {
                answered = Some(run_id.clone());
                request = Some(e.clone());
                false
            }
            _ => true,
        });
        if let Some(request) = &request {
            self.remember_grants(request, decision, by);
        }
        let Some(run_id) = answered else { return };
        let still_waiting = self
            .pending
            .iter()
            .any(|e| matches!(e, Event::ApprovalRequested { run_id: r, .. } if *r == run_id));
        if !still_waiting && self.run(&run_id).map(|r| r.status) == Some(RunStatus::WaitingApproval)
        {
            self.set_status(&run_id, RunStatus::Running);
        }
    }

    fn on_token(&mut self, run_id: &str, agent_id: &str, token: &str, thinking: bool, done: bool) {
        if done || !self.keeps_streamed_text {
            self.streaming.retain(|s| s.run_id != run_id);
            return;
        }
        match self
            .streaming
            .iter_mut()
            .find(|s| s.run_id == run_id && s.thinking == thinking)
        {
            Some(s) => s.push(token),
            None => {
                let mut s = Streaming {
                    run_id: run_id.to_string(),
                    agent_id: agent_id.to_string(),
                    text: String::new(),
                    thinking,
                    skipped_bytes: 0,
                };
                s.push(token);
                self.streaming.push(s);
            }
        }
    }

    /// A run began (or was announced by its parent); a second announcement changes nothing.
    fn add_run(&mut self, run_id: &str, parent_id: Option<&str>, agent_id: &str, task: &str) {
        if self.run(run_id).is_some() {
            return;
        }
        self.runs.push(RunState {
            run_id: run_id.to_string(),
            parent_id: parent_id.map(str::to_string),
            agent_id: agent_id.to_string(),
            task: task.to_string(),
            status: RunStatus::Running,
            model: None,
        });
    }

    /// Adds a response's counts to the model its run's latest call went to (the session's
    /// model when no routing was announced).
    fn count_tokens(&mut self, run_id: &str, input_tokens: u64, output_tokens: u64) {
        let model_id = match self.run(run_id).and_then(|r| r.model.clone()) {
            Some(model) => model,
            None => self.settings.model_id().to_string(),
        };
        if !self.tokens.iter().any(|t| t.model_id == model_id) {
            self.tokens.push(ModelTokens {
                model_id: model_id.clone(),
                ..ModelTokens::default()
            });
        }
        let Some(entry) = self.tokens.iter_mut().find(|t| t.model_id == model_id) else {
            return;
        };
        entry.input_tokens += input_tokens;
        entry.output_tokens += output_tokens;
        entry.calls += 1;
    }

    fn set_status(&mut self, run_id: &str, status: RunStatus) {
        if let Some(run) = self.runs.iter_mut().find(|r| r.run_id == run_id) {
            run.status = status;
        }
    }
}

#[cfg(test)]
mod tests;
