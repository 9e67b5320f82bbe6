//! Compaction: when a conversation nears the model's window (or a server rejects it as too
//! long, or the person asks with `/compact`), the older part is replaced by a hand-off
//! summary the model writes, and the most recent exchanges stay as they were. The summary
//! request itself must fit: a history larger than the window is summarised in pieces, then
//! the pieces' summaries together. A compaction that cannot bring the conversation under
//! the threshold stops with a message instead of trying again.

use super::event::Event;
use super::run::RunCtx;
use super::{Conversation, TurnShared, usage};
use crate::hooks::HookEvent;
use crate::llm::routing::{Model, Signal, falls_back};
use crate::llm::{ChatMessage, ChatRequest, Role, StreamEvent};

/// The share of the window the kept recent exchanges may take.
const KEEP_SHARE: f64 = 0.25;
/// The share of the window one piece of history sent for summary may take (the rest is
/// the instructions and the summary being written).
const PIECE_SHARE: f64 = 0.4;
/// The share of the window one summary may take.
const SUMMARY_SHARE: f64 = 0.1;
/// A tool result is shown to the summariser up to this many characters.
const TOOL_RESULT_CHARS: usize = 1_500;
/// Summaries of summaries, at most this deep.
const MAX_ROUNDS: usize = 3;
/// The tokens a summary is expected to take, for deciding whether compacting can help.
const SUMMARY_ALLOWANCE: u64 = 600;
/// Without a known window, compaction (on demand) works as for this one.
const DEFAULT_WINDOW: u32 = 8_192;

const SUMMARY_PROMPT: &str = "\
You write hand-off notes. Another assistant will continue this coding session from your \
notes alone, without the conversation. Write concise markdown with these sections: \
Goal; Durable facts (a list of `- ` lines: conventions of this project, commands that \
work, decisions that hold beyond this task; none if there are none); Decisions; Files \
touched (paths and what changed); Errors and fixes; Open tasks; Next step; The user's own \
words (requests and preferences, quoted where they matter). Keep facts, names, paths and \
commands exact. Do not invent anything.";

/// The first line of the message that carries a summary in the new history.
pub const SUMMARY_HEADER: &str =
    "[Hand-off summary of the conversation so far: earlier messages were compacted]";

/// How many tokens the next request would take and how many the window holds, with the
/// model the policy would try first.
pub(crate) async fn pressure(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &Conversation,
) -> (u64, Option<u32>) {
    let router = &shared.models;
    let index = router.likely(&ctx.route);
    let model = router.model(index);
    let window = model.context_window().await;
    let tools = tools_chars(shared, ctx, window);
    let used = conv.ledger.estimate(index, model, &conv.history, tools);
    (used, window)
}

/// The tool definitions ride along with every request.
fn tools_chars(shared: &TurnShared, ctx: &RunCtx, window: Option<u32>) -> usize {
    serde_json::to_string(&super::strategy::Strategy::tools(shared, ctx, window))
        .map_or(0, |t| t.len())
}

/// Why a compaction is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Why {
    /// The next request would pass `compact_at`: compact when it helps, else send as is.
    Full,
    /// The server rejected the request as too long: compact what can be, and say so when
    /// nothing can.
    Needed,
    /// The person asked (`/compact`): as [`Why::Needed`].
    Asked,
}

impl Why {
    /// Claude Code's `trigger` for the compaction hooks.
    fn trigger(self) -> &'static str {
        match self {
            Why::Asked => "manual",
            Why::Full | Why::Needed => "auto",
        }
    }
}

/// Compacts `conv` (whose first message is the system prompt); `Ok(Some((before, after)))`
/// in tokens, `Ok(None)` when there is nothing worth compacting. `Err` says why it could
/// not, and leaves the conversation as it was.
pub(in crate::session) async fn compact(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &mut Conversation,
    instructions: Option<&str>,
    why: Why,
) -> Result<Option<(u64, u64)>, String> {
    let router = &shared.models;
    let index = router.likely(&ctx.route);
    let model = router.model(index);
    let known_window = model.context_window().await;
    // The tool definitions ride along with the new history as with the old.
    let tools = tools_chars(shared, ctx, known_window);
    let before = conv.ledger.estimate(index, model, &conv.history, tools);
    let window = known_window.unwrap_or(DEFAULT_WINDOW);
    let keep_chars = model.chars_for(f64::from(window) * KEEP_SHARE);
    let body = &conv.history[1..];
    let cut = keep_from(body, keep_chars);
    last_fits(body, model, window, why)?;
    if cut == 0 {
        return Ok(None);
    }
    // Worth a summary only when replacing the older part can bring the conversation under
    // the threshold; otherwise the request goes as it is (a server that rejects it gets
    // one compaction more, and a clear error if that does not help).
    let threshold = (f64::from(window) * shared.compact_at) as u64;
    let old = model.estimate(usage::chars(&body[..cut]));
    if why == Why::Full && summary_cannot_help(before, old, window, threshold) {
        return Ok(None);
    }
    let asked = (
        "custom_instructions",
        serde_json::json!(instructions.unwrap_or_default()),
    );
    compaction_hook(shared, ctx, conv, HookEvent::PreCompact, why, asked).await;
    let older = transcript(&body[..cut]);
    let summary = summarise_rounds(shared, ctx, model, window, older, instructions).await?;
    let history = with_summary(&conv.history, cut, &summary);
    let mut ledger = conv.ledger.clone();
    ledger.compacted();
    let after = ledger.estimate(index, model, &history, tools);
    // The summary requests taught the estimate the tokenizer: measure the old history again
    // with what is known now, so that both sides are counted alike.
    let before = conv.ledger.estimate(index, model, &conv.history, tools);
    if after >= before && why == Why::Full {
        // Sent as it is after all; a server that rejects it gets the `Needed` compaction.
        return Ok(None);
    }
    if after >= before {
        return Err(format!(
            "compaction did not make the conversation fit ({before} → {after} tokens of a \
             {window}-token window, compacting at {threshold}); start a new session with /clear"
        ));
    }
    remember_durable_facts(shared, &summary).await;
    shared.bus.publish(Event::Compacted {
        run_id: ctx.id.clone(),
        before_tokens: before,
        after_tokens: after,
        history: history[1..].to_vec(),
    });
    conv.history = history;
    conv.ledger = ledger;
    after_compaction(shared, ctx, conv, why, &summary).await;
    Ok(Some((before, after)))
}

/// Whether replacing the older part (`old` of the request's `before` tokens) by a summary
/// leaves the request above `threshold`. (A request larger than the window is compacted
/// anyway when that shrinks it: sent as it is, it would fail.)
fn summary_cannot_help(before: u64, old: u64, window: u32, threshold: u64) -> bool {
    old <= SUMMARY_ALLOWANCE
        || (before <= u64::from(window)
            && before.saturating_sub(old) + SUMMARY_ALLOWANCE > threshold)
}

/// Fails when the part of the history that is always kept (the last message and the tool
/// results after it) alone is larger than the window, unless compaction is only an attempt
/// (`Why::Full`).
fn last_fits(body: &[ChatMessage], model: &Model, window: u32, why: Why) -> Result<(), String> {
    let last = body
        .iter()
        .rposition(|m| m.role != Role::Tool)
        .map_or(0, |i| model.estimate(usage::chars(&body[i..])));
    if last > u64::from(window) && why != Why::Full {
        return Err(format!(
            "the conversation cannot be made to fit: its last message alone is about {last} \
             tokens of a {window}-token window; start a new session with /clear, or use a \
             model with a larger window"
        ));
    }
    Ok(())
}

/// The summary of `text` (the older part's transcript): summarised in pieces that fit the
/// window, then the pieces' summaries together, at most `MAX_ROUNDS` deep.
async fn summarise_rounds(
    shared: &TurnShared,
    ctx: &RunCtx,
    model: &Model,
    window: u32,
    mut text: String,
    instructions: Option<&str>,
) -> Result<String, String> {
    let piece_chars = model.chars_for(f64::from(window) * PIECE_SHARE);
    // A summary may take a tenth of the window: small models ramble up to their output
    // limit, and a summary that does not fit defeats its purpose.
    let summary_chars = model.chars_for(f64::from(window) * SUMMARY_SHARE).max(800);
    let mut summary = String::new();
    for round in 0..MAX_ROUNDS {
        let pieces = split(&text, piece_chars);
        let mut summaries = Vec::new();
        for piece in &pieces {
            summaries.push(summarise(shared, ctx, piece, instructions, summary_chars).await?);
        }
        summary = summaries.join("\n\n");
        if pieces.len() == 1 {
            break;
        }
        if round + 1 == MAX_ROUNDS {
            return Err(format!(
                "the summary is still larger than the window after {MAX_ROUNDS} rounds; start a \
                 new session with /clear"
            ));
        }
        // The pieces' summaries, summarised together.
        text = format!("Partial hand-off notes, in order:\n\n{summary}");
    }
    Ok(summary)
}

/// The compacted history: the system prompt, the summary (with the todo list it replaces,
/// if any) as a user message, then the kept recent messages from `cut` on.
fn with_summary(history: &[ChatMessage], cut: usize, summary: &str) -> Vec<ChatMessage> {
    let body = &history[1..];
    let mut compacted = vec![history[0].clone()];
    let mut summary_message = format!("{SUMMARY_HEADER}\n\n{}", summary.trim());
    if let Some(todos) = todos_note(body, &body[cut..]) {
        summary_message.push_str(&format!("\n\n{todos}"));
    }
    compacted.push(ChatMessage::user(summary_message));
    compacted.extend(body[cut..].iter().cloned());
    compacted
}

/// The todo list, when the `TodoWrite` call that set it is among the messages summarised
/// (`body` minus `kept`): the summary message carries it, so the model keeps its plan.
fn todos_note(body: &[ChatMessage], kept: &[ChatMessage]) -> Option<String> {
    use crate::tools::todo;
    if todo::last_in(kept).is_some() {
        return None;
    }
    let todos = todo::last_in(body).filter(|t| !t.is_empty())?;
    Some(format!(
        "Your todo list (TodoWrite) when the conversation was summarised:\n{}",
        todo::as_text(&todos)
    ))
}

/// `PostCompact`, then `SessionStart` with source `compact` (as Claude Code starts its
/// conversation again after a compaction): the context the latter adds joins the summary.
async fn after_compaction(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &mut Conversation,
    why: Why,
    summary: &str,
) {
    let summary_field = ("summary", serde_json::json!(summary));
    compaction_hook(
        shared,
        ctx,
        conv,
        HookEvent::PostCompact,
        why,
        summary_field,
    )
    .await;
    let fields = super::hooks::fields([("source", serde_json::json!("compact"))]);
    let site = super::hooks::Site::run(ctx, conv);
    let outcome =
        super::hooks::fire(shared, site, HookEvent::SessionStart, &["compact"], fields).await;
    if let (Some(context), Some(summary)) = (outcome.context_text(), conv.history.get_mut(1)) {
        summary.content = format!("{}\n\n{context}", summary.content.as_str()).into();
    }
}

/// `PreCompact` or `PostCompact`, matched on the trigger, with one field of their own.
async fn compaction_hook(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &Conversation,
    event: HookEvent,
    why: Why,
    (name, value): (&str, serde_json::Value),
) {
    let fields =
        super::hooks::fields([("trigger", serde_json::json!(why.trigger())), (name, value)]);
    let site = super::hooks::Site::run(ctx, conv);
    super::hooks::fire(shared, site, event, &[why.trigger()], fields).await;
}

/// The summary's "Durable facts" go to the project's memory (those not there yet), so the
/// next session starts knowing them even though this conversation was compacted away.
async fn remember_durable_facts(shared: &TurnShared, summary: &str) {
    let Some(memory) = shared.memory.clone() else {
        return;
    };
    let facts = durable_facts(summary);
    if facts.is_empty() {
        return;
    }
    let saved = tokio::task::spawn_blocking(move || {
        let known = memory.entries();
        for fact in facts {
            if !known.iter().any(|k| k.eq_ignore_ascii_case(&fact)) {
                memory.remember(&fact)?;
            }
        }
        Ok::<(), crate::durable::WriteError>(())
    });
    if let Ok(Err(e)) = saved.await {
        shared.bus.publish(Event::Warning {
            message: format!("cannot add the summary's durable facts to the memory: {e}"),
        });
    }
}

/// The `- ` lines under a "Durable facts" heading of a summary.
fn durable_facts(summary: &str) -> Vec<String> {
    let mut facts = Vec::new();
    let mut inside = false;
    for line in summary.lines() {
        let trimmed = line.trim();
        let heading = trimmed
            .trim_start_matches(['#', '*', ' '])
            .trim_end_matches(['*', ':']);
        if heading.eq_ignore_ascii_case("durable facts") {
            inside = true;
            continue;
        }
        if inside
            && (trimmed.starts_with('#')
                || (trimmed.starts_with("**") && !trimmed.starts_with("- ")))
        {
            break;
        }
        if inside
            && let Some(fact) = trimmed
                .strip_prefix("- ")
                .or_else(|| trimmed.strip_prefix("* "))
        {
            let fact = fact.trim();
            if !fact.is_empty() && !fact.eq_ignore_ascii_case("none") && fact.len() <= 300 {
                facts.push(fact.to_string());
            }
        }
    }
    facts
}

/// Whether a failed request was the server saying the prompt does not fit.
pub(crate) fn is_context_error(error: &crate::llm::LlmError) -> bool {
    server_message(error).is_some_and(crate::llm::routing::is_context_rejection)
}

/// The prompt's tokens as a server's context rejection states them.
pub(crate) fn rejected_tokens(error: &crate::llm::LlmError) -> Option<u64> {
    server_message(error).and_then(crate::llm::routing::rejected_prompt_tokens)
}

/// What the server said, for an error the server answered with.
fn server_message(error: &crate::llm::LlmError) -> Option<&str> {
    use crate::llm::error::ErrorKind;
    match &error.kind {
        ErrorKind::Http { message, .. } | ErrorKind::Server(message) => Some(message),
        _ => None,
    }
}

/// Where the kept part of `body` starts: the earliest message from which the rest fits
/// `keep_chars` and that begins a unit (a user message, or an assistant message with the
/// results of its calls after it), so that a tool call is never separated from its result.
/// Within a long turn of many tool calls, its older calls can go too. At least the last
/// unit is kept; 0 means there is nothing before it to compact away.
fn keep_from(body: &[ChatMessage], keep_chars: usize) -> usize {
    let starts_unit = |m: &ChatMessage| m.role != Role::Tool && !usage::is_summary(m);
    let mut kept = 0;
    let mut start = None;
    for (i, m) in body.iter().enumerate().rev() {
        kept += usage::chars(std::slice::from_ref(m));
        if kept > keep_chars && start.is_some() {
            break;
        }
        if starts_unit(m) {
            start = Some(i);
            if kept > keep_chars {
                break;
            }
        }
    }
    start.unwrap_or(0)
}

/// The messages as plain text for the summariser.
fn transcript(messages: &[ChatMessage]) -> String {
    let mut out = String::new();
    for m in messages {
        match m.role {
            Role::System => {}
            Role::User => out.push_str(&format!("## user\n{}\n\n", m.content)),
            Role::Assistant => {
                out.push_str("## assistant\n");
                if !m.content.trim().is_empty() {
                    out.push_str(&format!("{}\n", m.content));
                }
                for call in &m.tool_calls {
                    out.push_str(&format!("[called {} {}]\n", call.name, call.arguments));
                }
                out.push('\n');
            }
            Role::Tool => {
                let name = m.tool_name.as_deref().unwrap_or("tool");
                let content = crate::text::prefix_bytes(&m.content, TOOL_RESULT_CHARS);
                let cut = if content.len() < m.content.len() {
                    " [… cut]"
                } else {
                    ""
                };
                out.push_str(&format!("## {name} result\n{content}{cut}\n\n"));
            }
        }
    }
    out
}

/// A summary cut to `max` bytes at a line end, saying so.
fn cut_summary(summary: &str, max: usize) -> String {
    let summary = summary.trim();
    if summary.len() <= max {
        return summary.to_string();
    }
    format!(
        "{}[… summary cut to fit]",
        super::fit::take_lines(summary, max)
    )
}

/// `text` in pieces of at most `max` bytes, at line ends where possible.
fn split(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1_000);
    let mut pieces = Vec::new();
    let mut current = String::new();
    for line in text.split_inclusive('\n') {
        let mut line = line;
        while !line.is_empty() {
            let room = max - current.len();
            if line.len() <= room {
                current.push_str(line);
                break;
            }
            if !current.is_empty() {
                pieces.push(std::mem::take(&mut current));
                continue;
            }
            let head = crate::text::prefix_bytes(line, max);
            pieces.push(head.to_string());
            line = &line[head.len()..];
        }
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// Asks the run's model for a summary of `text`; not streamed to the person.
/// A piece of history summarised. A piece the server rejects as too long (our estimate of
/// its tokenizer was off) is halved and each half summarised, up to three times.
async fn summarise(
    shared: &TurnShared,
    ctx: &RunCtx,
    piece: &str,
    instructions: Option<&str>,
    summary_chars: usize,
) -> Result<String, String> {
    const MAX_HALVINGS: u32 = 3;
    let mut pending = std::collections::VecDeque::from([(piece.to_string(), 0)]);
    let mut summaries = Vec::new();
    while let Some((text, halvings)) = pending.pop_front() {
        let ask = match instructions {
            Some(extra) => format!("{text}\n\nWhen you summarise, also: {extra}"),
            None => text.clone(),
        };
        match complete(shared, ctx, &ask, summary_chars).await {
            Ok(written) => summaries.push(cut_summary(&written, summary_chars)),
            Err(Failure::TooLong(_)) if halvings < MAX_HALVINGS && text.len() > 2_000 => {
                for half in split(&text, text.len().div_ceil(2)).into_iter().rev() {
                    pending.push_front((half, halvings + 1));
                }
            }
            Err(Failure::TooLong(message) | Failure::Other(message)) => return Err(message),
        }
    }
    Ok(summaries.join("\n\n"))
}

/// Why a summary request gave no summary.
enum Failure {
    /// The server said the request does not fit its window.
    TooLong(String),
    Other(String),
}

async fn complete(
    shared: &TurnShared,
    ctx: &RunCtx,
    text: &str,
    max_chars: usize,
) -> Result<String, Failure> {
    let router = &shared.models;
    let plan = router.plan(&ctx.route, &Signal::default());
    let system = format!("{SUMMARY_PROMPT} Use at most {} words.", max_chars / 6);
    let messages = [ChatMessage::system(system), ChatMessage::user(text)];
    // No tools ride along: the server's count of this request teaches the tokenizer well.
    let sent_chars = usage::chars(&messages);
    let mut last_error = Failure::Other(String::new());
    for (index, _) in &plan.order {
        let model = router.model(*index);
        let (member, slot) = tokio::select! {
            taken = model.slot(&[]) => taken,
            _ = ctx.cancel.cancelled() => return Err(Failure::Other("cancelled".to_string())),
        };
        let mut summary = String::new();
        let mut counted = 0;
        let request = ChatRequest {
            messages: &messages,
            tools: &[],
            answer_schema: None,
            temperature: None,
        };
        let mut sink = |e: StreamEvent| match e {
            StreamEvent::Text(t) => summary.push_str(&t),
            StreamEvent::Usage(u) => counted = u.input_tokens,
            _ => {}
        };
        let answered = tokio::select! {
            r = member.provider.chat(request, &mut sink) => r,
            _ = ctx.cancel.cancelled() => return Err(Failure::Other("cancelled".to_string())),
        };
        drop(slot);
        if let Some(tokens) = answered.as_ref().err().and_then(rejected_tokens) {
            counted = tokens;
        }
        usage::learning(shared, model, || model.calibrate(sent_chars, counted));
        match answered {
            Ok(()) if !summary.trim().is_empty() => return Ok(summary),
            Ok(()) => {
                last_error =
                    Failure::Other(format!("model `{}` wrote an empty summary", model.id()))
            }
            Err(e) => {
                let message = format!("the summary request failed: {e}");
                if is_context_error(&e) {
                    // Another model may have a larger window, but halving is surer.
                    return Err(Failure::TooLong(message));
                }
                last_error = Failure::Other(message);
                if falls_back(&e).is_none() {
                    break;
                }
            }
        }
    }
    Err(last_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "Read".into(),
            arguments: serde_json::json!({"path": "a"}),
        }
    }

    #[test]
    fn the_todo_list_rides_with_the_summary_when_its_call_is_summarised() {
        let todo_call = ToolCall {
            id: "t".into(),
            name: "TodoWrite".into(),
            arguments: serde_json::json!({"todos": [
                {"content": "Read the code", "status": "completed", "activeForm": "Reading"},
                {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing"},
            ]}),
        };
        let body = vec![
            ChatMessage::user("task"),
            ChatMessage::assistant("", vec![todo_call.clone()]),
            ChatMessage::tool_result(&todo_call, "todo list updated", false),
            ChatMessage::assistant("planned", vec![]),
            ChatMessage::user("go on"),
        ];
        let note = todos_note(&body, &body[4..]).unwrap();
        assert!(
            note.ends_with("- [x] Read the code\n- [ ] Fix the bug (in progress)"),
            "{note}"
        );
        // Still in the kept part: the model sees the call itself.
        assert_eq!(todos_note(&body, &body[1..]), None);
        assert_eq!(todos_note(&body[..1], &body[..0]), None);
    }

    #[test]
    fn the_kept_part_starts_at_a_user_message_within_the_budget() {
        let big = "x".repeat(500);
        let body = vec![
            ChatMessage::user("first task"),
            ChatMessage::assistant("", vec![call("1")]),
            ChatMessage::tool_result(&call("1"), big.clone(), false),
            ChatMessage::assistant("done", vec![]),
            ChatMessage::user("second task"),
            ChatMessage::assistant("", vec![call("2")]),
            ChatMessage::tool_result(&call("2"), big.clone(), false),
            ChatMessage::assistant("done again", vec![]),
        ];
        // From the first task's closing answer on, everything fits.
        assert_eq!(keep_from(&body, 700), 3);
        assert_eq!(keep_from(&body, 5_000), 0);
        // Not even the last unit fits: it is kept whole anyway.
        assert_eq!(keep_from(&body, 5), 7);
    }

    #[test]
    fn durable_facts_are_the_list_under_their_heading() {
        let summary = "## Goal\n- fix the build\n\n## Durable facts\n- run `make check` before committing\n                       - tabs, not spaces\n\n## Next step\n- none yet";
        assert_eq!(
            durable_facts(summary),
            ["run `make check` before committing", "tabs, not spaces"]
        );
        assert!(durable_facts("**Durable facts:**\n- none\n").is_empty());
        assert!(durable_facts("## Goal\n- x").is_empty());
    }

    #[test]
    fn transcripts_split_at_lines_and_cut_long_results() {
        let body = vec![
            ChatMessage::user("read it"),
            ChatMessage::assistant("", vec![call("1")]),
            ChatMessage::tool_result(&call("1"), "y".repeat(5_000), false),
        ];
        let text = transcript(&body);
        assert!(text.contains("[called Read {\"path\":\"a\"}]"));
        assert!(text.contains("[… cut]"));
        assert!(text.len() < 2_000);
        let pieces = split(&"line\n".repeat(1_000), 1_000);
        assert_eq!(pieces.len(), 5);
        assert!(pieces.iter().all(|p| p.len() <= 1_000 && p.ends_with('\n')));
        assert_eq!(pieces.concat(), "line\n".repeat(1_000));
    }
}
