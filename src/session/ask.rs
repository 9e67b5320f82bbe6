//! One model response, streamed: its pieces shown as they come (a token batch a frame),
//! the terminal setting the pace of a fast stream, and the person told what linggen waits
//! for when the model is silent. The call around it (which model, fallback) is
//! `model_call`; what the run does with the answer is `run`.

use std::sync::atomic::{AtomicU64, Ordering};

use super::event::{AgentState, Event};
use super::input::TurnMode;
use super::run::{Response, RunCtx, Step, status};
use super::tokens::{self, TokenBatcher};
use super::{Conversation, TurnShared, auto};
use crate::llm::{ChatRequest, LlmError, Provider, StreamEvent, ToolSpec};

impl Response {
    /// Adds a piece of the stream, showing text as it comes.
    fn take(&mut self, event: StreamEvent, batcher: &TokenBatcher<'_>, auto_mode: bool) {
        match event {
            StreamEvent::Text(t) => {
                // An auto-mode answer is an action, not prose for the person: it streams
                // as thinking, and the run's summary is the answer shown.
                batcher.push(&t, auto_mode);
                // The first piece is kept as it came: one piece can be a whole answer.
                if self.text.is_empty() {
                    self.text = t;
                } else {
                    self.text.push_str(&t);
                }
            }
            StreamEvent::Thinking(t) => batcher.push(&t, true),
            StreamEvent::ToolCall(call) => self.tool_calls.push(call),
            StreamEvent::Usage(u) => self.usage = u,
            StreamEvent::CutShort => self.cut_short = true,
        }
    }
}

/// Who a model call waits for, and after how much silence the person is told so.
pub(crate) struct Patience<'a> {
    pub model: &'a str,
    /// `[llm] stall_secs`.
    pub after: std::time::Duration,
}

/// When the model last said something, shared between the sink (which the provider calls
/// while it holds it) and the loop that watches for silence.
struct Heard {
    start: std::time::Instant,
    /// Milliseconds from `start` to the first and the latest piece of output; `u64::MAX`
    /// for the first until there is one.
    first_ms: AtomicU64,
    last_ms: AtomicU64,
}

impl Heard {
    fn new() -> Heard {
        Heard {
            start: std::time::Instant::now(),
            first_ms: AtomicU64::new(u64::MAX),
            last_ms: AtomicU64::new(0),
        }
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn output(&self) {
        let now = self.now_ms();
        let _ = self
            .first_ms
            .compare_exchange(u64::MAX, now, Ordering::Relaxed, Ordering::Relaxed);
        self.last_ms.store(now, Ordering::Relaxed);
    }

    /// From the first piece of output to the last: the generation time tok/s is over.
    fn generation_ms(&self) -> u64 {
        match self.first_ms.load(Ordering::Relaxed) {
            u64::MAX => 0,
            first => self.last_ms.load(Ordering::Relaxed).saturating_sub(first),
        }
    }
}

/// Streams one response of `provider`, publishing tokens as they arrive.
pub(crate) async fn ask_model(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &Conversation,
    tools: &[ToolSpec],
    provider: &dyn Provider,
    patience: &Patience<'_>,
) -> Step {
    let mut response = Response::default();
    let auto_mode = ctx.mode == TurnMode::Auto;
    let schema = auto_mode.then(|| auto::answer_schema(shared, ctx));
    let bus = &shared.bus;
    let batcher = TokenBatcher::new(bus, &ctx.id, &ctx.agent.name);
    let heard = Heard::new();
    let result = {
        let mut sink = |event: StreamEvent| {
            if matches!(
                event,
                StreamEvent::Text(_) | StreamEvent::Thinking(_) | StreamEvent::ToolCall(_)
            ) {
                heard.output();
            }
            response.take(event, &batcher, auto_mode);
        };
        let request = ChatRequest {
            messages: &conv.history,
            tools,
            answer_schema: schema.as_ref(),
            temperature: None,
        };
        let chat = provider.chat(request, &mut sink);
        follow(shared, ctx, chat, &batcher, &heard, patience).await
    };
    batcher.flush();
    bus.publish(Event::Token {
        run_id: ctx.id.clone(),
        agent_id: ctx.agent.name.clone(),
        token: String::new(),
        thinking: false,
        done: true,
    });
    response.usage.generation_ms = heard.generation_ms();
    match result {
        None => Step::Cancelled(response),
        Some(Err(e)) => Step::Failed(e),
        Some(Ok(())) => {
            // Talk mode offers no tools; a tool call typed out as text stays text there.
            if response.tool_calls.is_empty() && !tools.is_empty() {
                recover_text_calls(&mut response, tools);
            }
            Step::Done(response)
        }
    }
}

/// Drives a response to its end (`None`: cancelled). Every frame, text that arrived is
/// shown; while the terminal is behind, the response is not read (see `bus`); after
/// `patience.after` without output, and again after each further stretch, the person is
/// told what linggen waits for (the shell's status line, a line from `-p`).
async fn follow(
    shared: &TurnShared,
    ctx: &RunCtx,
    chat: impl std::future::Future<Output = Result<(), LlmError>>,
    batcher: &TokenBatcher<'_>,
    heard: &Heard,
    patience: &Patience<'_>,
) -> Option<Result<(), LlmError>> {
    let bus = &shared.bus;
    tokio::pin!(chat);
    let mut frame = tokio::time::interval(tokens::FRAME);
    frame.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let after = patience.after.as_millis() as u64;
    // Waiting for our own terminal is not the model's silence.
    let mut resumed_ms = 0;
    let mut told_ms = 0;
    loop {
        let behind = bus.is_behind();
        let quiet_from = heard.last_ms.load(Ordering::Relaxed).max(resumed_ms);
        let tell_at = heard.start
            + std::time::Duration::from_millis(quiet_from.max(told_ms).saturating_add(after));
        tokio::select! {
            r = &mut chat, if !behind => return Some(r),
            _ = ctx.cancel.cancelled() => return None,
            // Text that arrived and then paused is shown within a frame.
            _ = frame.tick() => batcher.flush(),
            // The terminal draws slower than a fast server streams: the response is not
            // read further until it catches up, rather than queued in memory.
            () = bus.caught_up(), if behind => resumed_ms = heard.now_ms(),
            () = tokio::time::sleep_until(tell_at.into()), if !behind => {
                told_ms = heard.now_ms();
                let silent = told_ms.saturating_sub(quiet_from) / 1000;
                let waiting = format!(
                    "waiting for `{}`: nothing received for {silent} s",
                    patience.model
                );
                status(shared, ctx, AgentState::Thinking, Some(waiting));
            }
        }
    }
}

/// Small local models often print a tool call as text instead of using native tool calling;
/// turning it into a real call is what makes them usable at all.
fn recover_text_calls(response: &mut Response, offered: &[crate::llm::ToolSpec]) {
    let known = |name: &str| {
        crate::tools::canonical_name(name).is_some() || offered.iter().any(|t| t.name == name)
    };
    if let Some((text, calls)) = crate::llm::textcalls::recover(&response.text, known) {
        response.text = text;
        response.tool_calls = calls;
    }
}
