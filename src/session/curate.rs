//! Curated reads (`[context] curate_reads`, the design's file curator): a `Read` of a whole
//! file longer than `curate_min_lines` first asks a small curator — no tools, at most two
//! answers, a low temperature, its own model (a local one by default) — which line ranges
//! matter for the conversation, and the model gets those ranges with their line numbers, a
//! one-line summary and how to read the rest. Whatever goes wrong (no answer, a bad one, a
//! range outside the file, nothing left out), the plain read is returned instead.

use std::time::Duration;

use serde::Deserialize;

use super::run::RunCtx;
use super::{Choice, Conversation, TurnShared};
use crate::llm::routing::Signal;
use crate::llm::{ChatMessage, ChatRequest, Role, StreamEvent};
use crate::tools::ToolOutput;

/// The curator's whole budget for one read: a slow curator must not cost more time than
/// the plain read would cost tokens.
const CURATOR_TIMEOUT: Duration = Duration::from_secs(60);
/// Characters of the conversation the curator is told about.
const QUESTION_CHARS: usize = 1_500;

const CURATOR_PROMPT: &str = "You pick the parts of a file that matter for a conversation. \
You get what the conversation is about and the file with numbered lines. Answer with one \
JSON object and nothing else: {\"summary\": \"what the file is, in one line\", \"ranges\": \
[[first, last], ...]} where each range is 1-based and inclusive. Choose the few ranges \
that answer the conversation, with enough context to read them (whole functions), at most \
a third of the file.";

/// What the curator answers: the file in a line, and the ranges to show.
#[derive(Debug, Deserialize)]
struct Picked {
    summary: String,
    ranges: Vec<(usize, usize)>,
}

/// The plain read's output, curated when the settings, the file and the curator allow;
/// otherwise `plain` unchanged.
pub(crate) async fn curated(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &Conversation,
    rel: &str,
    plain: ToolOutput,
) -> ToolOutput {
    if !shared.curate.enabled || plain.is_error {
        return plain;
    }
    let lines = numbered_lines(&plain.model);
    if lines.len() <= shared.curate.min_lines {
        return plain;
    }
    let question = question(conv);
    let file = plain.model.as_str();
    let asked = tokio::time::timeout(CURATOR_TIMEOUT, ask(shared, ctx, &question, rel, file));
    let choice = match asked.await {
        Ok(Ok(choice)) => choice,
        Ok(Err(_)) | Err(_) => return plain,
    };
    match shape(rel, &lines, choice) {
        Some(output) => output,
        None => plain,
    }
}

/// The read's `N\ttext` lines, by number.
fn numbered_lines(model: &str) -> Vec<(usize, &str)> {
    model
        .lines()
        .filter_map(|line| {
            let (number, text) = line.split_once('\t')?;
            Some((number.trim().parse().ok()?, text))
        })
        .collect()
}

/// What the conversation is about: the person's last message, and the model's last words
/// before this read.
fn question(conv: &Conversation) -> String {
    let last = |role: Role| {
        conv.history
            .iter()
            .rev()
            .find(|m| m.role == role && !m.content.trim().is_empty())
            .map(|m| m.content.chars().take(QUESTION_CHARS).collect::<String>())
            .unwrap_or_default()
    };
    format!(
        "The person asked: {}\nThe assistant said before reading: {}",
        last(Role::User),
        last(Role::Assistant)
    )
}

/// Asks the curator, twice at most: a second time when the first answer was not the JSON
/// asked for.
async fn ask(
    shared: &TurnShared,
    ctx: &RunCtx,
    question: &str,
    rel: &str,
    file: &str,
) -> Result<Picked, String> {
    let mut messages = vec![
        ChatMessage::system(CURATOR_PROMPT),
        ChatMessage::user(format!("{question}\n\nThe file {rel}:\n{file}")),
    ];
    let mut last = String::new();
    for _ in 0..2 {
        let answer = complete(shared, ctx, &messages).await?;
        match parse(&answer) {
            Some(choice) => return Ok(choice),
            None => {
                messages.push(ChatMessage::assistant(answer.clone(), Vec::new()));
                messages.push(ChatMessage::user(
                    "Answer with the JSON object only: {\"summary\": \"…\", \"ranges\": [[first, last]]}",
                ));
                last = answer;
            }
        }
    }
    Err(format!("the curator did not answer with ranges: {last}"))
}

/// The first `{…}` of an answer read as the curator's JSON.
fn parse(answer: &str) -> Option<Picked> {
    let start = answer.find('{')?;
    let end = answer.rfind('}')?;
    serde_json::from_str(answer.get(start..=end)?).ok()
}

/// The curator's model: `curator_model`, else a local one, else the run's own.
fn route(shared: &TurnShared, ctx: &RunCtx) -> Choice {
    let wanted = shared.curate.model.as_deref().unwrap_or("local");
    match shared.models.check_hint(wanted) {
        Ok(()) => Choice::Hint(wanted.to_string()),
        Err(_) => ctx.route.clone(),
    }
}

/// The answer's shape, sent as a schema: OpenAI-compatible servers and Ollama constrain
/// their decoding to it, which is what lets a small local model answer with valid JSON,
/// and the bounds keep one from writing ranges until its output limit (measured: a 135M
/// model without them ran into the curator's time limit on 3 files of 4).
fn answer_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "summary": {"type": "string", "maxLength": 200},
            "ranges": {
                "type": "array",
                "minItems": 1,
                "maxItems": 8,
                "items": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}
            }
        },
        "required": ["summary", "ranges"]
    })
}

/// One quiet answer (nothing is streamed to the person), from the first model of the plan
/// that gives one.
async fn complete(
    shared: &TurnShared,
    ctx: &RunCtx,
    messages: &[ChatMessage],
) -> Result<String, String> {
    let schema = answer_schema();
    let router = &shared.models;
    let plan = router.plan(&route(shared, ctx), &Signal::default());
    let mut failure = String::from("no model to ask");
    for (index, _) in &plan.order {
        let model = router.model(*index);
        let (member, slot) = tokio::select! {
            taken = model.slot(&[]) => taken,
            _ = ctx.cancel.cancelled() => return Err("cancelled".into()),
        };
        let mut text = String::new();
        let request = ChatRequest {
            messages,
            tools: &[],
            answer_schema: Some(&schema),
            temperature: Some(0.1),
        };
        let mut sink = |e: StreamEvent| {
            if let StreamEvent::Text(t) = e {
                text.push_str(&t);
            }
        };
        let answered = tokio::select! {
            r = member.provider.chat(request, &mut sink) => r,
            _ = ctx.cancel.cancelled() => return Err("cancelled".into()),
        };
        drop(slot);
        match answered {
            Ok(()) if !text.trim().is_empty() => return Ok(text),
            Ok(()) => failure = format!("model `{}` answered nothing", model.id()),
            Err(e) => failure = e.to_string(),
        }
    }
    Err(failure)
}

/// The curated output: the chosen ranges (merged, inside the file) with their numbers, or
/// `None` when the choice leaves nothing out or holds nothing usable.
fn shape(rel: &str, lines: &[(usize, &str)], choice: Picked) -> Option<ToolOutput> {
    let total = lines.len();
    let first = lines.first()?.0;
    let last = lines.last()?.0;
    let mut ranges: Vec<(usize, usize)> = choice
        .ranges
        .into_iter()
        .map(|(a, b)| (a.min(b).max(first), a.max(b).min(last)))
        .filter(|(a, b)| a <= b)
        .collect();
    ranges.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (a, b) in ranges {
        match merged.last_mut() {
            Some(prev) if a <= prev.1 + 1 => prev.1 = prev.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    let shown: usize = merged.iter().map(|(a, b)| b - a + 1).sum();
    if merged.is_empty() || shown >= total {
        return None;
    }
    let list: Vec<String> = merged.iter().map(|(a, b)| format!("{a}-{b}")).collect();
    let summary = crate::text::one_line(&choice.summary, 200);
    let (gap_start, gap_end) = first_gap(&merged, first, last);
    let mut model = format!(
        "{rel}: {total} lines, curated for this conversation: {summary}\n\
         Shown: lines {} ({shown} of {total}). For the rest, Read with a line_range, e.g. \
         {{\"path\": \"{rel}\", \"line_range\": [{gap_start}, {gap_end}]}}.\n",
        list.join(", ")
    );
    for (i, (a, b)) in merged.iter().enumerate() {
        if i > 0 {
            model.push_str("…\n");
        }
        for (n, text) in lines.iter().filter(|(n, _)| n >= a && n <= b) {
            model.push_str(&format!("{n}\t{text}\n"));
        }
    }
    let person = format!("curated: lines {} ({shown} of {total})", list.join(", "));
    Some(ToolOutput::ok(model, person))
}

/// The first lines not shown, for the example of how to read the rest.
fn first_gap(shown: &[(usize, usize)], first: usize, last: usize) -> (usize, usize) {
    let mut next = first;
    for (a, b) in shown {
        if *a > next {
            return (next, a - 1);
        }
        next = b + 1;
    }
    (next.min(last), last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(n: usize) -> String {
        (1..=n).map(|i| format!("{i}\tline {i}\n")).collect()
    }

    #[test]
    fn ranges_are_merged_kept_inside_and_numbered() {
        let text = file(200);
        let lines = numbered_lines(&text);
        let choice = Picked {
            summary: "A list of lines.\nSecond line ignored".into(),
            ranges: vec![(50, 40), (45, 60), (190, 400), (0, 0)],
        };
        let out = shape("big.txt", &lines, choice).unwrap();
        assert!(out.model.starts_with(
            "big.txt: 200 lines, curated for this conversation: A list of lines.…\nShown: lines 40-60, 190-200 (32 of 200)."
        ), "{}", out.model);
        assert!(out.model.contains("\n40\tline 40\n"), "{}", out.model);
        assert!(
            out.model.contains("60\tline 60\n…\n190\tline 190\n"),
            "{}",
            out.model
        );
        assert!(!out.model.contains("\n61\t"));
        assert_eq!(out.summary, "curated: lines 40-60, 190-200 (32 of 200)");
        assert!(
            out.model.contains("\"line_range\": [1, 39]"),
            "{}",
            out.model
        );
        assert_eq!(first_gap(&[(1, 3), (10, 12)], 1, 50), (4, 9));
        assert_eq!(first_gap(&[(1, 3)], 1, 50), (4, 50));
    }

    #[test]
    fn a_choice_of_everything_or_nothing_is_no_curation() {
        let text = file(150);
        let lines = numbered_lines(&text);
        let all = Picked {
            summary: "x".into(),
            ranges: vec![(1, 150)],
        };
        assert!(shape("f", &lines, all).is_none());
        let none = Picked {
            summary: "x".into(),
            ranges: vec![(300, 400)],
        };
        assert!(shape("f", &lines, none).is_none());
    }

    #[test]
    fn the_answer_is_read_from_prose_around_it() {
        let choice =
            parse("Sure! {\"summary\": \"s\", \"ranges\": [[3, 9]]} hope it helps").unwrap();
        assert_eq!(choice.ranges, [(3, 9)]);
        assert!(parse("lines 3 to 9").is_none());
    }
}
