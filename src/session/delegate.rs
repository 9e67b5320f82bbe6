//! Child runs: `delegate_to_agent`, and skills with `context: fork`. A child starts from a
//! fresh history (its agent's system prompt and the task; the parent's context is not
//! copied in), uses its own agent spec and tool gates, asks for approvals like the parent
//! (and what the person allows for the session carries both ways), and its final answer
//! comes back to the parent. Cancelling the parent cancels the child through its token.
//!
//! A child started with `background: true` runs on its own task instead: the parent's call
//! returns at once with the child's run id, and the child's answer arrives in the
//! session's conversation as a message from [`BACKGROUND_SENDER`] when it ends (the session
//! queues it like a typed one, so an idle session starts a turn on it). It is cancelled by
//! its run id (`/runs`, the page's tab) and by the session's end, not by cancelling the
//! turn that started it.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Choice;
use super::event::{Event, OutcomeStatus};
use super::run::{self, RunCtx, RunEnd};
use super::{Conversation, TurnShared, ids};
use crate::agents::AgentSpec;
use crate::llm::ChatMessage;
use crate::session::UserMessage;
use crate::session::permissions::Rule;
use crate::tools::ToolOutput;

/// Who a background child's answer is from, in the conversation and on every screen.
pub const BACKGROUND_SENDER: &str = "background";

/// The background children of one session: where their answers go, and what stops them
/// when the session ends.
pub(crate) struct Background {
    answers: mpsc::UnboundedSender<UserMessage>,
    stop: CancellationToken,
}

impl Background {
    /// The session's side, and the receiver its loop reads answers from. Unbounded: one
    /// message per child, and children are started one tool call at a time.
    pub fn new() -> (Arc<Background>, mpsc::UnboundedReceiver<UserMessage>) {
        let (answers, received) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        (Arc::new(Background { answers, stop }), received)
    }

    /// The session ends: every background child is cancelled.
    pub fn stop_all(&self) {
        self.stop.cancel();
    }
}

/// What a child run should do.
pub(crate) struct ChildTask {
    pub agent: AgentSpec,
    pub route: Choice,
    /// The instructions the child starts from (its first user message).
    pub task: String,
    /// Shown in `RunStarted`/`SubagentSpawned` and `/runs`.
    pub label: String,
    pub skill_rules: Vec<Rule>,
    /// Images that go with the task (a forked skill the person invoked with some).
    pub images: Vec<crate::llm::Image>,
}

/// `Err(why)` when `parent` may not start another level of runs.
pub(in crate::session) fn check_depth(shared: &TurnShared, parent: &RunCtx) -> Result<(), String> {
    if parent.depth >= shared.max_delegation_depth {
        return Err(format!(
            "delegation depth limit reached: this run is {} level(s) deep and [agent] max_delegation_depth is {}. Do the task yourself or report back",
            parent.depth, shared.max_delegation_depth
        ));
    }
    Ok(())
}

/// Runs `child` under `parent` and returns how it ended.
pub(crate) async fn run_child(
    shared: &TurnShared,
    parent: &RunCtx,
    conv: &mut Conversation,
    child: ChildTask,
    changed: &mut Vec<String>,
) -> RunEnd {
    let spawn = Spawn {
        id: ids::new_id(),
        background: false,
    };
    announce(shared, parent, &child, &spawn);
    run_child_as(shared, parent, conv, child, changed, spawn).await
}

/// `SubagentSpawned`: published by the parent before the child runs, so every frontend
/// knows the child (and places its lines) before its first event, and a background child
/// is announced before the call that started it returns.
fn announce(shared: &TurnShared, parent: &RunCtx, child: &ChildTask, spawn: &Spawn) {
    shared.bus.publish(Event::SubagentSpawned {
        parent_id: parent.id.clone(),
        subagent_id: spawn.id.clone(),
        agent_id: child.agent.name.clone(),
        task: child.label.clone(),
        background: spawn.background,
    });
}

/// The child run's id, and whether the parent went on without it.
struct Spawn {
    id: String,
    background: bool,
}

/// Starts `child` on a task of its own and returns its run id at once; its answer comes
/// back as a message (see the module's comment).
pub(crate) fn start_background(
    shared: &TurnShared,
    parent: &RunCtx,
    conv: &Conversation,
    child: ChildTask,
) -> String {
    let id = ids::new_id();
    let shared = Arc::new(shared.with_settings(shared.choice.clone(), shared.max_iters));
    let mut parent = parent.clone();
    // Its own life: the session's end cancels it, the turn that started it does not, and a
    // fault in it stops it alone.
    parent.cancel = shared.background.stop.child_token();
    parent.halt = Default::default();
    let mut conv = Conversation {
        history: Vec::new(),
        permissions: conv.permissions.clone(),
        ledger: Default::default(),
    };
    let spawn = Spawn {
        id: id.clone(),
        background: true,
    };
    announce(&shared, &parent, &child, &spawn);
    tokio::spawn(async move {
        let (agent, task) = (child.agent.name.clone(), child.label.clone());
        let mut changed = Vec::new();
        let end = run_child_as(&shared, &parent, &mut conv, child, &mut changed, spawn).await;
        let answer = background_answer(&agent, &task, &end);
        let _ = shared
            .background
            .answers
            .send(UserMessage::new(answer, BACKGROUND_SENDER));
    });
    id
}

/// The message a background child's end becomes in the conversation.
fn background_answer(agent: &str, task: &str, end: &RunEnd) -> String {
    let task = crate::text::one_line(task, 200);
    let how = match end.status {
        OutcomeStatus::Completed => format!("finished. Its answer:\n{}", end.result),
        OutcomeStatus::Cancelled => "was cancelled before it finished.".to_string(),
        OutcomeStatus::MaxIters | OutcomeStatus::Error | OutcomeStatus::Stopped => {
            format!("failed: {}", end.result)
        }
    };
    format!("Background agent `{agent}` (the task \"{task}\") {how}")
}

async fn run_child_as(
    shared: &TurnShared,
    parent: &RunCtx,
    conv: &mut Conversation,
    child: ChildTask,
    changed: &mut Vec<String>,
    spawn: Spawn,
) -> RunEnd {
    let mut ctx = RunCtx {
        id: spawn.id,
        parent_id: Some(parent.id.clone()),
        depth: parent.depth + 1,
        // A child works the way its own agent does, else like its parent.
        mode: child.agent.mode.unwrap_or(parent.mode),
        mark: parent.mark.clone(),
        agent: child.agent,
        route: child.route,
        cancel: parent.cancel.child_token(),
        skill_rules: child.skill_rules,
        writes: 0,
        halt: parent.halt.clone(),
    };
    let system = super::compose_prompt(shared, &ctx).await;
    let mut child_conv = Conversation {
        history: vec![ChatMessage::system(system)],
        permissions: conv.permissions.clone(),
        ledger: Default::default(),
    };
    let from = parent.agent.name.clone();
    // The child's own files, for its own ChangeReport; the parent's list gets them too.
    let mut own = Vec::new();
    let end = run::run(
        shared,
        &mut ctx,
        &mut child_conv,
        ChatMessage::user(child.task).with_images(child.images),
        child.label,
        &from,
        &mut own,
    )
    .await;
    super::turn::merge(changed, own.clone());
    super::turn::report_changes(shared, &ctx.id, &ctx.agent.name, own);
    // Approvals the person gave inside the child ("always in this session") hold for the
    // parent too.
    conv.permissions = child_conv.permissions;
    shared.bus.publish(Event::SubagentResult {
        parent_id: parent.id.clone(),
        subagent_id: ctx.id.clone(),
        agent_id: ctx.agent.name.clone(),
        outcome: end.status,
        result: end.result.clone(),
    });
    end
}

/// Several `delegate_to_agent` calls of one response, run at once: each child gets the
/// parent's approvals as they are, and what the person allows inside any of them holds
/// for the parent afterwards. Outputs come back in the calls' order.
pub(crate) async fn side_by_side(
    shared: &TurnShared,
    parent: &RunCtx,
    conv: &mut Conversation,
    calls: &[crate::llm::ToolCall],
    changed: &mut Vec<String>,
) -> Vec<ToolOutput> {
    let runs = calls.iter().map(|call| {
        let mut ctx = parent.clone();
        let mut own = Conversation {
            history: Vec::new(),
            permissions: conv.permissions.clone(),
            ledger: Default::default(),
        };
        async move {
            let mut own_changed = Vec::new();
            let output = super::tool_call::execute(
                shared,
                &mut ctx,
                &mut own,
                call,
                &mut own_changed,
                super::tool_call::Caller::Model,
            )
            .await;
            (output, own.permissions, own_changed)
        }
    });
    let mut outputs = Vec::new();
    for (output, permissions, own_changed) in futures_util::future::join_all(runs).await {
        conv.permissions.absorb(&permissions);
        for file in own_changed {
            if !changed.contains(&file) {
                changed.push(file);
            }
        }
        outputs.push(output);
    }
    outputs
}

/// The tool result a parent sees for a child's end.
pub(crate) fn as_tool_output(agent: &str, end: &RunEnd) -> ToolOutput {
    match end.status {
        OutcomeStatus::Completed => ToolOutput::ok(
            format!("Agent `{agent}` finished. Its answer:\n{}", end.result),
            format!(
                "{agent} finished ({})",
                crate::text::plural(end.iterations as usize, "model call", "model calls")
            ),
        ),
        OutcomeStatus::Cancelled => {
            ToolOutput::error(format!("agent `{agent}` was cancelled before it finished"))
        }
        OutcomeStatus::MaxIters | OutcomeStatus::Error | OutcomeStatus::Stopped => {
            ToolOutput::error(format!("agent `{agent}` failed: {}", end.result))
        }
    }
}
