//! One model call as the routing policy plans it: measure the call (complexity), take the
//! plan's first model that has a free slot (or wait for one), say where it goes
//! (`ModelRouted`), and when the model fails in a way another one can help with, move on
//! down the plan with a warning. A pool's other servers are tried before another model.

use super::event::{AgentState, Event};
use super::run::{self, RunCtx, Step};
use super::{Conversation, TurnShared};
use crate::config::routing::WhenBusy;
use crate::llm::retry;
use crate::llm::routing::{self, Plan, Signal};

/// Makes the run's next model call.
pub(crate) async fn call(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &mut Conversation,
    calls_made: u32,
) -> Step {
    let router = &shared.models;
    // Sized with the tokenizer of the model the policy would try first.
    let likely = router.likely(&ctx.route);
    let estimate = |tools_chars| {
        conv.ledger
            .estimate(likely, router.model(likely), &conv.history, tools_chars)
    };
    let mut signal = Signal {
        prompt_tokens: estimate(0),
        tool_calls: calls_made,
        delegation_depth: ctx.depth,
        hint: None,
    };
    // The tools depend on the model's window (the skill catalog is sized to it), and the
    // prompt's size on the tools: plan without them, then again with them.
    let draft = router.plan(&ctx.route, &signal);
    let window = router.model(draft.order[0].0).context_window().await;
    let tools = run::offered_tools(shared, ctx, window);
    let tools_chars = serde_json::to_string(&tools).map_or(0, |t| t.len());
    signal.prompt_tokens = estimate(tools_chars);
    let plan = router.plan(&ctx.route, &signal);
    let estimated = signal.prompt_tokens;
    super::usage::report_request(shared, ctx, conv, &tools, tools_chars, estimated, window);
    let step = walk(shared, ctx, conv, &tools, &plan).await;
    if let Step::Done(response) = &step {
        notice_truncation(shared, signal.prompt_tokens, response);
    }
    step
}

/// Ollama does not reject a prompt longer than its window (`num_ctx`): it silently drops
/// the start of it, system prompt and tool definitions first, and the model then answers
/// without its instructions. When the prompt sent was larger than the window, say so once
/// a session, with the fix.
fn notice_truncation(shared: &TurnShared, sent_tokens: u64, response: &run::Response) {
    use std::sync::atomic::Ordering;
    let (Some(index), Some(window)) = (response.served_by, response.context_window) else {
        return;
    };
    let model = shared.models.model(index);
    if model.config.provider != crate::config::ProviderKind::Ollama
        || sent_tokens <= u64::from(window)
        || model.truncation_told.swap(true, Ordering::Relaxed)
    {
        return;
    }
    shared.bus.publish(Event::Warning {
        message: format!(
            "the prompt was about {sent_tokens} tokens but `{}` runs with a window of {window} \
             (Ollama's num_ctx), so Ollama cut off its start, instructions and tool \
             definitions first; set context_window = {} for this model in linggen-agent.toml \
             (it needs more memory), or start a new session with /clear",
            model.id(),
            (sent_tokens * 2).next_power_of_two().max(8192)
        ),
    });
}

async fn walk(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &mut Conversation,
    tools: &[crate::llm::ToolSpec],
    plan: &Plan,
) -> Step {
    let router = &shared.models;
    // Why the model being tried is not the plan's first (busy, or a fallback).
    let mut detour: Option<String> = None;
    let mut position = 0;
    loop {
        let (index, why) = &plan.order[position];
        let model = router.model(*index);
        let is_last = position + 1 == plan.order.len();
        // The servers of this model that failed during this call.
        let mut failed_servers: Vec<String> = Vec::new();
        loop {
            let Some((member, slot)) = (match model.try_slot(&failed_servers) {
                Some(taken) => Some(taken),
                None if !is_last
                    && failed_servers.is_empty()
                    && router.when_busy() == WhenBusy::Next
                    && plan.order[position + 1..]
                        .iter()
                        .any(|(i, _)| router.model(*i).has_free_slot()) =>
                {
                    None
                }
                None => {
                    let waiting = format!("waiting for {}", model.id());
                    run::status(shared, ctx, AgentState::Thinking, Some(waiting));
                    tokio::select! {
                        taken = model.slot(&failed_servers) => Some(taken),
                        _ = ctx.cancel.cancelled() => return Step::Cancelled(Default::default()),
                    }
                }
            }) else {
                detour = Some(format!("`{}` is busy", model.id()));
                break;
            };
            let reason = match &detour {
                Some(d) => format!("{d}; {why} · {}", plan.assessed),
                None => format!("{why} · {}", plan.assessed),
            };
            shared.bus.publish(Event::ModelRouted {
                run_id: ctx.id.clone(),
                model_id: model.id().to_string(),
                policy: plan.policy.clone(),
                complexity: plan.complexity,
                reason,
            });
            // With somewhere else to go, a refused connection is not waited out.
            let elsewhere = !is_last || model.others(&failed_servers).len() > 1;
            let ask = run::ask_model(shared, ctx, conv, tools, &*member.provider);
            let step = retry::FALLBACK_READY.scope(elsewhere, ask).await;
            drop(slot);
            let error = match step {
                Step::Done(mut response) => {
                    member.server.recovered();
                    let counted = response.usage.input_tokens;
                    super::usage::learning(shared, model, || {
                        conv.ledger.counted(*index, model, &conv.history, counted)
                    });
                    response.context_window = model.context_window().await;
                    response.served_by = Some(*index);
                    return Step::Done(response);
                }
                Step::Failed(error) => error,
                cancelled => return cancelled,
            };
            // A rejection that says how long the prompt was is as good as a count.
            if let Some(tokens) = super::compact::rejected_tokens(&error) {
                super::usage::learning(shared, model, || {
                    conv.ledger.counted(*index, model, &conv.history, tokens)
                });
            }
            let Some(what) = routing::falls_back(&error) else {
                return Step::Failed(error);
            };
            member.server.cool_down(router.cooldown());
            failed_servers.push(member.url.clone());
            // A pool: the same model on another server first.
            if let Some(next) = model.others(&failed_servers).first() {
                shared.bus.publish(Event::Warning {
                    message: format!(
                        "model `{}` at {} {what}; trying its server {}",
                        model.id(),
                        member.url,
                        next.url
                    ),
                });
                continue;
            }
            if is_last {
                return Step::Failed(error);
            }
            let next = router.model(plan.order[position + 1].0).id();
            shared.bus.publish(Event::Warning {
                message: format!(
                    "model `{}` {what}: {}; falling back to `{next}`",
                    model.id(),
                    error.kind_summary()
                ),
            });
            detour = Some(format!("fallback: `{}` {what}", model.id()));
            break;
        }
        position += 1;
    }
}
