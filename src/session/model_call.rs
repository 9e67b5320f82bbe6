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
    if ctx.mode == super::input::TurnMode::Chat {
        // MCP servers still starting: their tools belong in this request.
        shared.tools.registry.settled().await;
    }
    let tools = super::strategy::Strategy::tools(shared, ctx, window);
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
    // Why the model being tried is not the plan's first (busy, or a fallback).
    let mut detour: Option<String> = None;
    let mut position = 0;
    loop {
        let at = Position {
            plan,
            position,
            detour: detour.as_deref(),
        };
        match try_model(shared, ctx, conv, tools, &at).await {
            Tried::Ended(step) => return step,
            Tried::Next(why) => detour = Some(why),
        }
        position += 1;
    }
}

/// The plan's model being tried, and why it is not the first.
struct Position<'a> {
    plan: &'a Plan,
    position: usize,
    detour: Option<&'a str>,
}

impl Position<'_> {
    fn is_last(&self) -> bool {
        self.position + 1 == self.plan.order.len()
    }
}

/// What trying one model of the plan came to.
enum Tried {
    /// The call's result: an answer, the failure to report, or a cancel.
    Ended(Step),
    /// On to the plan's next model, for this reason.
    Next(String),
}

/// One model's servers during one call: those that failed, and those asked again after
/// their answer broke off (once each).
#[derive(Default)]
struct Attempts {
    failed: Vec<String>,
    asked_again: Vec<String>,
}

/// Tries the model at `at`: a free server of it (waiting for one, unless a later model is
/// free and the policy says go there), the same server once more after a broken-off answer,
/// then the pool's other servers.
async fn try_model(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &mut Conversation,
    tools: &[crate::llm::ToolSpec],
    at: &Position<'_>,
) -> Tried {
    let (index, why) = &at.plan.order[at.position];
    let model = shared.models.model(*index);
    let mut attempts = Attempts::default();
    loop {
        let (member, slot) = match take_slot(shared, ctx, at, &attempts.failed).await {
            Ok(Some(taken)) => taken,
            Ok(None) => return Tried::Next(format!("`{}` is busy", model.id())),
            Err(cancelled) => return Tried::Ended(cancelled),
        };
        let reason = match at.detour {
            Some(d) => format!("{d}; {why} · {}", at.plan.assessed),
            None => format!("{why} · {}", at.plan.assessed),
        };
        shared.bus.publish(Event::ModelRouted {
            run_id: ctx.id.clone(),
            model_id: model.id().to_string(),
            policy: at.plan.policy.clone(),
            complexity: at.plan.complexity,
            reason,
        });
        // With somewhere else to go, a refused connection is not waited out.
        let elsewhere = !at.is_last() || model.others(&attempts.failed).len() > 1;
        let patience = super::ask::Patience {
            model: model.id(),
            after: std::time::Duration::from_secs(model.config.stall_secs.max(1)),
        };
        let ask = super::ask::ask_model(shared, ctx, conv, tools, &*member.provider, &patience);
        let step = retry::ON_RETRY
            .scope(retry_notice(shared, ctx, model.id()), async {
                retry::FALLBACK_READY.scope(elsewhere, ask).await
            })
            .await;
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
                return Tried::Ended(Step::Done(response));
            }
            Step::Failed(error) => error,
            cancelled => return Tried::Ended(cancelled),
        };
        // A rejection that says how long the prompt was is as good as a count.
        if let Some(tokens) = super::compact::rejected_tokens(&error) {
            super::usage::learning(shared, model, || {
                conv.ledger.counted(*index, model, &conv.history, tokens)
            });
        }
        if let Some(end) = after_failure(shared, at, member, error, &mut attempts) {
            return end;
        }
    }
}

/// Publishes each retry of a call to `model` as a `Retrying` event (a dim line while the
/// person waits).
fn retry_notice(shared: &TurnShared, ctx: &RunCtx, model: &str) -> retry::RetryNotice {
    let (bus, run_id, model_id) = (shared.bus.clone(), ctx.id.clone(), model.to_string());
    std::sync::Arc::new(move |r: retry::Retrying| {
        bus.publish(Event::Retrying {
            run_id: run_id.clone(),
            model_id: model_id.clone(),
            attempt: r.attempt,
            max_attempts: r.max_attempts,
            delay_ms: u64::try_from(r.delay.as_millis()).unwrap_or(u64::MAX),
            reason: r.reason,
        });
    })
}

/// A free server of the model at `at`; `Ok(None)` when it is busy and the call goes to a
/// later model instead, `Err` when the run was cancelled while waiting.
async fn take_slot<'m>(
    shared: &'m TurnShared,
    ctx: &RunCtx,
    at: &Position<'_>,
    failed: &[String],
) -> Result<Option<(&'m routing::Member, routing::capacity::Slot)>, Step> {
    let router = &shared.models;
    let model = router.model(at.plan.order[at.position].0);
    if let Some(taken) = model.try_slot(failed) {
        return Ok(Some(taken));
    }
    let later_free = || {
        at.plan.order[at.position + 1..]
            .iter()
            .any(|(i, _)| router.model(*i).has_free_slot())
    };
    if !at.is_last() && failed.is_empty() && router.when_busy() == WhenBusy::Next && later_free() {
        return Ok(None);
    }
    let waiting = format!("waiting for {}", model.id());
    run::status(shared, ctx, AgentState::Thinking, Some(waiting));
    tokio::select! {
        taken = model.slot(failed) => Ok(Some(taken)),
        _ = ctx.cancel.cancelled() => Err(Step::Cancelled(Default::default())),
    }
}

/// Where a failed attempt leads, announced: `None` to try again (the same server once
/// after a broken-off answer, else the pool's next server), or how trying this model ends.
fn after_failure(
    shared: &TurnShared,
    at: &Position<'_>,
    member: &routing::Member,
    error: crate::llm::LlmError,
    attempts: &mut Attempts,
) -> Option<Tried> {
    let router = &shared.models;
    let model = router.model(at.plan.order[at.position].0);
    let Some(what) = routing::falls_back(&error) else {
        return Some(Tried::Ended(Step::Failed(error)));
    };
    let warn = |message: String| shared.bus.publish(Event::Warning { message });
    if routing::asks_again(&error) && !attempts.asked_again.contains(&member.url) {
        attempts.asked_again.push(member.url.clone());
        warn(format!(
            "model `{}` at {} {what}; asking it again",
            model.id(),
            member.url
        ));
        return None;
    }
    member.server.cool_down(router.cooldown());
    attempts.failed.push(member.url.clone());
    // A pool: the same model on another server first.
    if let Some(next) = model.others(&attempts.failed).first() {
        warn(format!(
            "model `{}` at {} {what}; trying its server {}",
            model.id(),
            member.url,
            next.url
        ));
        return None;
    }
    if at.is_last() {
        return Some(Tried::Ended(Step::Failed(error)));
    }
    let next = router.model(at.plan.order[at.position + 1].0).id();
    warn(format!(
        "model `{}` {what}: {}; falling back to `{next}`",
        model.id(),
        error.kind_summary()
    ));
    Some(Tried::Next(format!("fallback: `{}` {what}", model.id())))
}
