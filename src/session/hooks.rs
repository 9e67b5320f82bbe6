//! The session's side of hooks ([`crate::hooks`]): when each event fires, what its handlers
//! read, and what their answer may change. Every handler run is published as a `HookRan`
//! (the audit trail), every notice as a `Warning`.
//!
//! The floor holds whatever a hook says: an `allow` skips a question, never a deny rule,
//! plan mode, a sandbox escape or a write to a folder that grants power (see
//! [`may_skip_question`]); `updatedInput` goes through the same checks as the model's own
//! arguments.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::event::Event;
use super::run::RunCtx;
use super::{Conversation, TurnShared};
use crate::config::PermissionMode;
use crate::hooks::input::{claude_tool_input, claude_tool_name};
use crate::hooks::{HookEvent, Outcome, Runner};
use crate::llm::{ChatMessage, ToolCall};
use crate::tools::{Access, Prepared, ToolOutput};

/// How often one turn's `Stop` (or a delegated run's `SubagentStop`) hooks may send the
/// agent back to work; Claude Code relies on hooks reading `stop_hook_active`, linggen
/// also stops counting.
pub(super) const MAX_STOP_CONTINUATIONS: u32 = 3;

/// Where a hook fires: the run it belongs to (none for the session's own events), the
/// conversation its transcript shows, and the permission mode it reads.
pub(super) struct Site<'a> {
    pub run_id: Option<&'a str>,
    pub history: &'a [ChatMessage],
    pub mode: PermissionMode,
}

impl<'a> Site<'a> {
    /// The session's own events, outside any run.
    pub fn session(conv: &'a Conversation) -> Site<'a> {
        Site {
            run_id: None,
            history: &conv.history,
            mode: conv.permissions.mode,
        }
    }

    pub fn run(ctx: &'a RunCtx, conv: &'a Conversation) -> Site<'a> {
        Site {
            run_id: Some(&ctx.id),
            history: &conv.history,
            mode: conv.permissions.mode,
        }
    }
}

/// Fires `event` and publishes what ran; the default outcome when no hook listens.
pub(super) async fn fire(
    shared: &TurnShared,
    site: Site<'_>,
    event: HookEvent,
    query: &[&str],
    fields: Map<String, Value>,
) -> Outcome {
    match &shared.hooks {
        Some(runner) if runner.listens(event) => {
            fire_with(runner, &shared.bus, site, event, query, fields).await
        }
        _ => Outcome::default(),
    }
}

/// [`fire`] without a `TurnShared` (the session's start and end).
pub(super) async fn fire_with(
    runner: &Runner,
    bus: &super::EventBus,
    site: Site<'_>,
    event: HookEvent,
    query: &[&str],
    fields: Map<String, Value>,
) -> Outcome {
    let fired = runner
        .fire(event, query, fields, site.history, site.mode)
        .await;
    for run in fired.runs {
        bus.publish(Event::HookRan {
            run_id: site.run_id.map(str::to_string),
            event: run.event.name().to_string(),
            command: run.command,
            file: run.file.display().to_string(),
            result: run.result,
            ok: run.ok,
            duration_ms: run.duration_ms,
        });
    }
    for notice in &fired.outcome.notices {
        bus.publish(Event::Warning {
            message: notice.clone(),
        });
    }
    // Where Claude Code shows a block's stderr to the person: events with nothing to block.
    if let Some(reason) = fired
        .outcome
        .block
        .as_ref()
        .filter(|_| shown_to_person(event))
    {
        bus.publish(Event::Warning {
            message: format!("{} hook: {reason}", event.name()),
        });
    }
    fired.outcome
}

/// Whether an exit 2's stderr is for the person: the events it cannot block.
fn shown_to_person(event: HookEvent) -> bool {
    matches!(
        event,
        HookEvent::SessionStart
            | HookEvent::SessionEnd
            | HookEvent::Notification
            | HookEvent::PreCompact
            | HookEvent::PostCompact
    )
}

/// The fields of a tool event: the tool as Claude Code names it, its input with Claude
/// Code's argument names, and the call's id.
pub(super) fn tool_fields(shared: &TurnShared, call: &ToolCall, tool: &str) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("tool_name".into(), json!(claude_tool_name(tool)));
    fields.insert(
        "tool_input".into(),
        claude_tool_input(tool, &call.arguments, &shared.tools.root),
    );
    fields.insert("tool_use_id".into(), json!(call.id));
    fields
}

/// The names a tool event's matchers are tried against: Claude Code's and linggen's.
pub(super) fn tool_query(tool: &str) -> Vec<&str> {
    let claude = claude_tool_name(tool);
    if claude == tool {
        vec![tool]
    } else {
        vec![claude, tool]
    }
}

/// Whether a hook's `allow` may stand in for the person's answer to this call's question.
/// Not for a command that would leave the sandbox (only a person lifts the floor), nor a
/// write to a folder whose files grant power (no flag or rule lifts that either).
pub(super) fn may_skip_question(prepared: &Prepared) -> bool {
    let unconfined = matches!(
        &prepared.access,
        Access::Command {
            unconfined: Some(_),
            ..
        }
    );
    !unconfined && !super::permissions::writes_grant_path(prepared)
}

/// Adds what `PostToolUse` (or `PostToolUseFailure`) hooks said to the model's view of the
/// call: a block's reason and any context.
pub(super) fn after_tool(output: &mut ToolOutput, event: HookEvent, outcome: &Outcome) {
    if let Some(reason) = &outcome.block {
        output
            .model
            .push_str(&format!("\n\n{} hook: {reason}", event.name()));
    }
    if let Some(context) = outcome.context_text() {
        output.model.push_str(&format!("\n\n{context}"));
    }
}

/// Tells the `Notification` hooks that a person is needed, without making anyone wait
/// for them.
pub(super) fn notify(shared: &TurnShared, site: Site<'_>, message: String, kind: &'static str) {
    let Some(runner) = shared.hooks.clone() else {
        return;
    };
    if !runner.listens(HookEvent::Notification) {
        return;
    }
    let (bus, history, mode) = (shared.bus.clone(), site.history.to_vec(), site.mode);
    let run_id = site.run_id.map(str::to_string);
    tokio::spawn(async move {
        notify_now(
            &runner,
            &bus,
            run_id.as_deref(),
            &history,
            mode,
            message,
            kind,
        )
        .await;
    });
}

/// Runs the `Notification` hooks and waits for them.
pub(super) async fn notify_now(
    runner: &Arc<Runner>,
    bus: &super::EventBus,
    run_id: Option<&str>,
    history: &[ChatMessage],
    mode: PermissionMode,
    message: String,
    kind: &'static str,
) {
    let mut fields = Map::new();
    fields.insert("message".into(), json!(message));
    fields.insert("notification_type".into(), json!(kind));
    let site = Site {
        run_id,
        history,
        mode,
    };
    fire_with(runner, bus, site, HookEvent::Notification, &[kind], fields).await;
}

/// One field, for the events that have few.
pub(super) fn fields<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}
