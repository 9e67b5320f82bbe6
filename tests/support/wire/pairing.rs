//! The pairing rules OpenAI's and Anthropic's APIs enforce on a conversation: every tool
//! call is answered, in the very next message(s), and every answer names a call of the
//! message just before it. Local servers accept anything, which is how a history that only
//! the cloud rejects goes unnoticed; the scripted server enforces the rules as the real
//! APIs do (same conditions, messages worded like theirs).

use std::collections::BTreeSet;

use serde_json::Value;

/// Chat Completions: an assistant message with `tool_calls` must be followed by one `tool`
/// message per call id before any other message, and a `tool` message must answer a call
/// of the assistant message it follows.
pub(super) fn openai(body: &Value) -> Result<(), String> {
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let mut open: BTreeSet<String> = BTreeSet::new();
    let mut answerable: BTreeSet<String> = BTreeSet::new();
    for (i, msg) in messages.iter().enumerate() {
        let role = msg["role"].as_str().unwrap_or_default();
        if role == "tool" {
            let id = msg["tool_call_id"].as_str().unwrap_or_default();
            if !answerable.contains(id) {
                return Err(format!(
                    "Invalid parameter: messages with role 'tool' must be a response to a \
                     preceeding message with 'tool_calls'. (messages[{i}], tool_call_id {id:?})"
                ));
            }
            open.remove(id);
            continue;
        }
        if !open.is_empty() {
            return Err(unanswered_openai(&open));
        }
        answerable.clear();
        if role == "assistant" {
            for call in msg["tool_calls"].as_array().into_iter().flatten() {
                let id = call["id"].as_str().unwrap_or_default().to_string();
                open.insert(id.clone());
                answerable.insert(id);
            }
        }
    }
    if open.is_empty() {
        Ok(())
    } else {
        Err(unanswered_openai(&open))
    }
}

fn unanswered_openai(open: &BTreeSet<String>) -> String {
    let ids: Vec<&str> = open.iter().map(String::as_str).collect();
    format!(
        "An assistant message with 'tool_calls' must be followed by tool messages responding \
         to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
        ids.join(", ")
    )
}

/// Messages API: every `tool_use` block must have its `tool_result` block in the next
/// message, and every `tool_result` must answer a `tool_use` of the previous message. (The
/// API merges consecutive messages of one role, so it is the next message of the other
/// role that counts.)
pub(super) fn anthropic(body: &Value) -> Result<(), String> {
    let ids = |blocks: &[Value], kind: &str| {
        let field = if kind == "tool_use" {
            "id"
        } else {
            "tool_use_id"
        };
        blocks
            .iter()
            .filter(|b| b["type"] == kind)
            .filter_map(|b| b[field].as_str().map(str::to_string))
            .collect()
    };
    blocks_paired(body, ids)
}

/// Bedrock's Converse API: the same rule, with `toolUse` / `toolResult` blocks.
pub(super) fn bedrock(body: &Value) -> Result<(), String> {
    let ids = |blocks: &[Value], kind: &str| {
        let key = if kind == "tool_use" {
            "toolUse"
        } else {
            "toolResult"
        };
        blocks
            .iter()
            .filter_map(|b| b[key]["toolUseId"].as_str().map(str::to_string))
            .collect()
    };
    blocks_paired(body, ids)
}

/// The pairing of block-structured conversations; `ids(blocks, "tool_use" | "tool_result")`
/// lists the call ids the blocks of that kind carry.
fn blocks_paired(body: &Value, ids: impl Fn(&[Value], &str) -> Vec<String>) -> Result<(), String> {
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let turns = merged_turns(messages);
    let mut asked: Vec<String> = Vec::new();
    for (i, (role, blocks)) in turns.iter().enumerate() {
        let results: Vec<String> = ids(blocks, "tool_result");
        let missing: Vec<&str> = asked
            .iter()
            .filter(|id| !results.contains(id))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "messages.{i}: `tool_use` ids were found without `tool_result` blocks \
                 immediately after: {}. Each `tool_use` block must have a corresponding \
                 `tool_result` block in the next message.",
                missing.join(", ")
            ));
        }
        if let Some(stray) = results.iter().find(|id| !asked.contains(id)) {
            return Err(format!(
                "messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: \
                 {stray}. Each `tool_result` block must have a corresponding `tool_use` block in \
                 the previous message."
            ));
        }
        asked = if role == "assistant" {
            ids(blocks, "tool_use")
        } else {
            Vec::new()
        };
    }
    if asked.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "messages: `tool_use` ids were found without `tool_result` blocks immediately \
             after: {}. Each `tool_use` block must have a corresponding `tool_result` block in \
             the next message.",
            asked.join(", ")
        ))
    }
}

/// Consecutive messages of one role as one turn of content blocks (a string content is one
/// text block).
fn merged_turns(messages: &[Value]) -> Vec<(String, Vec<Value>)> {
    let mut turns: Vec<(String, Vec<Value>)> = Vec::new();
    for msg in messages {
        let role = msg["role"].as_str().unwrap_or_default().to_string();
        let blocks = match &msg["content"] {
            Value::Array(blocks) => blocks.clone(),
            other => vec![serde_json::json!({"type": "text", "text": other})],
        };
        match turns.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
}
