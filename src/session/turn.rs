//! One turn: the user's message, then model → tool calls → observations → model … until a
//! plain answer, an error, cancellation or `max_iters`.

use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::event::{Event, OutcomeStatus};
use super::tokens::{self, TokenBatcher};
use super::{Conversation, TurnShared, ids, tool_call};
use crate::llm::{ChatMessage, ChatRequest, LlmError, StreamEvent, ToolCall, Usage};

/// What the model produced in one response.
#[derive(Default)]
struct Response {
    text: String,
    tool_calls: Vec<ToolCall>,
    usage: Usage,
}

enum Step {
    Done(Response),
    Failed(LlmError),
    Cancelled(Response),
}

/// Files written in a run are listed in one `ChangeReport`; past this many only a count.
const CHANGE_REPORT_MAX_FILES: usize = 50;

pub(super) async fn run_turn(
    shared: &TurnShared,
    conv: &mut Conversation,
    content: String,
    from: String,
    cancel: CancellationToken,
) {
    let started = Instant::now();
    let run_id = ids::new_id();
    let bus = &shared.bus;
    let agent = &shared.agent_id;
    bus.publish(Event::RunStarted {
        run_id: run_id.clone(),
        parent_id: None,
        agent_id: agent.clone(),
        task: content.clone(),
    });
    push(shared, conv, &run_id, &from, ChatMessage::user(content));

    let tools = crate::tools::specs();
    let mut usage = Usage::default();
    let mut changed: Vec<String> = Vec::new();
    let mut iterations = 0;
    let (outcome, result) = loop {
        if iterations == shared.max_iters {
            break (
                OutcomeStatus::MaxIters,
                format!(
                    "stopped after {} model calls (max_iters); raise it with --max-iters or [agent] max_iters",
                    shared.max_iters
                ),
            );
        }
        iterations += 1;
        status(shared, &run_id, "thinking", None);
        let step = ask_model(shared, conv, &run_id, &tools, &cancel).await;
        let response = match step {
            Step::Done(r) => r,
            Step::Failed(e) => {
                let message = e.to_string();
                bus.publish(Event::Error {
                    message: message.clone(),
                });
                break (OutcomeStatus::Error, message);
            }
            Step::Cancelled(partial) => {
                usage.add(partial.usage);
                if !partial.text.is_empty() {
                    let text = format!("{}\n\n[cancelled]", partial.text);
                    push(
                        shared,
                        conv,
                        &run_id,
                        "",
                        ChatMessage::assistant(text, Vec::new()),
                    );
                }
                break (OutcomeStatus::Cancelled, partial.text);
            }
        };
        usage.add(response.usage);
        report_context(shared, conv, &run_id, &response);
        let Response {
            text, tool_calls, ..
        } = response;
        let calls = tool_calls.clone();
        push(
            shared,
            conv,
            &run_id,
            "",
            ChatMessage::assistant(text.clone(), tool_calls),
        );
        if calls.is_empty() {
            break (OutcomeStatus::Completed, text);
        }
        for call in &calls {
            // Every call gets a result, even after a cancel: providers reject a history
            // where a tool call has no answer, and `--continue` must be able to resume it.
            let output = if cancel.is_cancelled() {
                crate::tools::ToolOutput::error("not run: the user cancelled the turn")
            } else {
                tool_call::execute(shared, conv, &run_id, call, &cancel, &mut changed).await
            };
            let msg = ChatMessage::tool_result(call, output.model, output.is_error);
            push(shared, conv, &run_id, "", msg);
        }
        if cancel.is_cancelled() {
            break (OutcomeStatus::Cancelled, String::new());
        }
    };

    if !changed.is_empty() {
        let truncated_count = changed.len().saturating_sub(CHANGE_REPORT_MAX_FILES);
        changed.truncate(CHANGE_REPORT_MAX_FILES);
        bus.publish(Event::ChangeReport {
            run_id: run_id.clone(),
            files: changed,
            truncated_count,
        });
    }
    status(shared, &run_id, "idle", None);
    bus.publish(Event::Outcome {
        run_id,
        status: outcome,
        result,
        num_turns: iterations,
        usage,
        duration_ms: started.elapsed().as_millis() as u64,
    });
}

/// Streams one model response, publishing tokens as they arrive.
async fn ask_model(
    shared: &TurnShared,
    conv: &Conversation,
    run_id: &str,
    tools: &[crate::llm::ToolSpec],
    cancel: &CancellationToken,
) -> Step {
    let mut response = Response::default();
    let bus = &shared.bus;
    let batcher = TokenBatcher::new(bus, run_id, &shared.agent_id);
    let result = {
        let mut sink = |event: StreamEvent| match event {
            StreamEvent::Text(t) => {
                batcher.push(&t, false);
                response.text.push_str(&t);
            }
            StreamEvent::Thinking(t) => batcher.push(&t, true),
            StreamEvent::ToolCall(call) => response.tool_calls.push(call),
            StreamEvent::Usage(u) => response.usage = u,
        };
        let request = ChatRequest {
            messages: &conv.history,
            tools,
        };
        let chat = shared.provider.chat(request, &mut sink);
        tokio::pin!(chat);
        let mut frame = tokio::time::interval(tokens::FRAME);
        frame.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                r = &mut chat => break Some(r),
                _ = cancel.cancelled() => break None,
                // Text that arrived and then paused is shown within a frame.
                _ = frame.tick() => batcher.flush(),
            }
        }
    };
    batcher.flush();
    bus.publish(Event::Token {
        run_id: run_id.to_string(),
        agent_id: shared.agent_id.clone(),
        token: String::new(),
        thinking: false,
        done: true,
    });
    match result {
        None => Step::Cancelled(response),
        Some(Err(e)) => Step::Failed(e),
        Some(Ok(())) => {
            if response.tool_calls.is_empty() {
                recover_text_calls(&mut response);
            }
            Step::Done(response)
        }
    }
}

/// Small local models often print a tool call as text instead of using native tool calling;
/// turning it into a real call is what makes them usable at all.
fn recover_text_calls(response: &mut Response) {
    let known = |name: &str| crate::tools::canonical_name(name).is_some();
    if let Some((text, calls)) = crate::llm::textcalls::recover(&response.text, known) {
        response.text = text;
        response.tool_calls = calls;
    }
}

fn report_context(shared: &TurnShared, conv: &Conversation, run_id: &str, r: &Response) {
    let (input, output) = if r.usage.input_tokens > 0 {
        (r.usage.input_tokens, r.usage.output_tokens)
    } else {
        // The server reported no usage: estimate at ~4 characters per token.
        let chars: usize = conv.history.iter().map(|m| m.content.len()).sum();
        (chars as u64 / 4, r.text.len() as u64 / 4)
    };
    shared.bus.publish(Event::ContextUsage {
        run_id: run_id.to_string(),
        used_tokens: input + output,
        context_window: shared.context_window,
        input_tokens: input,
        output_tokens: output,
    });
}

pub(super) fn status(shared: &TurnShared, run_id: &str, status: &str, detail: Option<String>) {
    shared.bus.publish(Event::AgentStatus {
        run_id: run_id.to_string(),
        agent_id: shared.agent_id.clone(),
        status: status.to_string(),
        detail,
    });
}

/// Appends to the history and announces it (the store persists it from the event).
fn push(shared: &TurnShared, conv: &mut Conversation, run_id: &str, from: &str, msg: ChatMessage) {
    shared
        .bus
        .publish(Event::message(run_id, &shared.agent_id, from, &msg));
    conv.history.push(msg);
}
