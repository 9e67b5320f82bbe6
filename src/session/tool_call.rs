//! One tool call: validate, check permissions (asking a person when needed), run, report.

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::event::{Decision, Event};
use super::permissions::Verdict;
use super::{Conversation, TurnShared, ids, lock, turn};
use crate::llm::ToolCall;
use crate::tools::{self, Access, Prepared, ToolOutput};

pub(super) async fn execute(
    shared: &TurnShared,
    conv: &mut Conversation,
    run_id: &str,
    call: &ToolCall,
    cancel: &CancellationToken,
    changed: &mut Vec<String>,
) -> ToolOutput {
    let prepared = unparsable_arguments(call).map_or_else(
        || tools::prepare(&shared.tools, &call.name, &call.arguments),
        Err,
    );
    let summary = match &prepared {
        Ok(p) => p.summary.clone(),
        Err(_) => call.name.clone(),
    };
    let tool = prepared.as_ref().map_or(call.name.as_str(), |p| p.tool);
    shared.bus.publish(Event::ToolCallStarted {
        run_id: run_id.to_string(),
        call_id: call.id.clone(),
        tool: tool.to_string(),
        args: call.arguments.clone(),
        summary,
    });
    let output = match prepared {
        Ok(prepared) => match authorize(shared, conv, run_id, &prepared, cancel).await {
            Ok(()) => run(shared, run_id, &prepared, cancel, changed).await,
            Err(denied) => denied,
        },
        Err(invalid) => invalid,
    };
    shared.bus.publish(Event::ToolCallFinished {
        run_id: run_id.to_string(),
        call_id: call.id.clone(),
        tool: tool.to_string(),
        ok: !output.is_error,
        summary: output.summary.clone(),
        diff: output.diff.clone(),
    });
    output
}

/// Providers hand over arguments they could not parse as `{"_raw": "..."}`.
fn unparsable_arguments(call: &ToolCall) -> Option<ToolOutput> {
    let raw = call.arguments.as_object()?.get("_raw")?.as_str()?;
    Some(ToolOutput::error(format!(
        "the arguments for `{}` were not valid JSON: {raw}\nSend the arguments as one JSON object.",
        call.name
    )))
}

async fn run(
    shared: &TurnShared,
    run_id: &str,
    prepared: &Prepared,
    cancel: &CancellationToken,
    changed: &mut Vec<String>,
) -> ToolOutput {
    turn::status(
        shared,
        run_id,
        "running_tool",
        Some(prepared.summary.clone()),
    );
    let output = tokio::select! {
        out = tools::run(&shared.tools, prepared) => out,
        // Dropping the tool future kills a running command's whole process group.
        _ = cancel.cancelled() => ToolOutput::error("cancelled by the user"),
    };
    if let (Access::Write { rel, .. }, false) = (&prepared.access, output.is_error)
        && !changed.contains(rel)
    {
        changed.push(rel.clone());
    }
    output
}

/// `Ok(())` when the call may run; otherwise the observation that tells the model why not.
async fn authorize(
    shared: &TurnShared,
    conv: &mut Conversation,
    run_id: &str,
    prepared: &Prepared,
    cancel: &CancellationToken,
) -> Result<(), ToolOutput> {
    let reason = match conv.permissions.check(prepared) {
        Verdict::Allow => return Ok(()),
        Verdict::Deny { reason } => {
            return Err(ToolOutput::error(format!(
                "permission denied: {reason}. Do not retry this call; tell the user or take another way."
            )));
        }
        Verdict::Ask { reason } => reason,
    };
    if !shared.interactive {
        return Err(ToolOutput::error(format!(
            "not run: `{}` needs the user's approval ({reason}), and nobody can approve in this \
             non-interactive run. Do not retry; tell the user they can rerun with \
             --permission-mode or --allowed-tools.",
            prepared.summary
        )));
    }
    let (decision, by) = ask_person(shared, run_id, prepared, &reason, cancel).await?;
    match decision {
        Decision::AllowOnce => Ok(()),
        Decision::AllowSession => {
            conv.permissions.allow_for_session(prepared);
            Ok(())
        }
        Decision::AllowProject => {
            // The person said yes; failing to save that for next time must not undo it.
            if let Err(e) = conv
                .permissions
                .allow_for_project(&shared.tools.root, prepared)
            {
                shared.bus.publish(Event::Error {
                    message: format!("approved for this session only; {e}"),
                });
            }
            Ok(())
        }
        Decision::Deny { reason } => Err(ToolOutput::error(match reason {
            Some(r) if !r.trim().is_empty() => {
                format!("the user ({by}) denied this call and said: {r}")
            }
            _ => format!("the user ({by}) denied this call. Do not retry it."),
        })),
    }
}

async fn ask_person(
    shared: &TurnShared,
    run_id: &str,
    prepared: &Prepared,
    reason: &str,
    cancel: &CancellationToken,
) -> Result<(Decision, String), ToolOutput> {
    let id = ids::new_id();
    let (tx, rx) = oneshot::channel();
    lock(&shared.pending).insert(id.clone(), tx);
    let diff = match &prepared.access {
        Access::Write { preview_diff, .. } => preview_diff.clone(),
        _ => None,
    };
    shared.bus.publish(Event::ApprovalRequested {
        id: id.clone(),
        run_id: run_id.to_string(),
        tool: prepared.tool.to_string(),
        summary: prepared.summary.clone(),
        reason: reason.to_string(),
        diff,
    });
    turn::status(
        shared,
        run_id,
        "waiting_approval",
        Some(prepared.summary.clone()),
    );
    let answer = tokio::select! {
        answer = rx => answer.ok(),
        _ = cancel.cancelled() => None,
    };
    lock(&shared.pending).remove(&id);
    let Some((decision, by)) = answer else {
        return Err(ToolOutput::error("not run: the user cancelled the turn"));
    };
    shared.bus.publish(Event::ApprovalResolved {
        id,
        decision: decision.clone(),
        by: by.clone(),
    });
    Ok((decision, by))
}
