//! A stored conversation made sendable again, whatever ended the process that wrote it.
//!
//! The cloud APIs (OpenAI, Anthropic, Bedrock) reject a history in which a tool call is not
//! followed, at once, by its result. A process killed while a call ran (or waited for an
//! approval) stored the call and never its result; an older linggen with two writers on one
//! session could store results after someone else's turn. Local servers accept both, which
//! is why such a session looks fine until it is resumed against the cloud. The store keeps
//! what was written; this module only shapes what is sent.

use std::collections::HashMap;

use crate::llm::{ChatMessage, Role};

/// The result a call gets when its own never reached the store.
pub const INTERRUPTED: &str = "interrupted: linggen stopped before this call finished (it may or \
     may not have taken effect; check before repeating it)";

/// Puts each call's result right after the message that made the call, in call order, and
/// gives an [`INTERRUPTED`] result to a call that has none. A result that answers no call of
/// the history is dropped (no provider accepts it). Call ids must already be unique
/// (`call_ids::make_unique`). Returns how many calls got an interrupted result.
pub fn pair_tool_results(history: &mut Vec<ChatMessage>) -> usize {
    let mut results: HashMap<String, ChatMessage> = HashMap::new();
    let mut rest = Vec::with_capacity(history.len());
    for msg in history.drain(..) {
        match (&msg.role, &msg.tool_call_id) {
            // The first result stored for a call is the one its turn saw.
            (Role::Tool, Some(id)) => {
                results.entry(id.clone()).or_insert(msg);
            }
            (Role::Tool, None) => {}
            _ => rest.push(msg),
        }
    }
    let mut interrupted = 0;
    let mut paired = Vec::with_capacity(rest.len() + results.len());
    for msg in rest {
        let calls = msg.tool_calls.clone();
        let run_id = msg.run_id.clone();
        paired.push(msg);
        for call in &calls {
            let result = results.remove(&call.id).unwrap_or_else(|| {
                interrupted += 1;
                let mut lost = ChatMessage::tool_result(call, INTERRUPTED, true);
                lost.run_id = run_id.clone();
                lost
            });
            paired.push(result);
        }
    }
    *history = paired;
    interrupted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "Bash".into(),
            arguments: serde_json::json!({"command": "ls"}),
        }
    }

    fn result(id: &str, text: &str) -> ChatMessage {
        ChatMessage::tool_result(&call(id), text, false)
    }

    fn shape(history: &[ChatMessage]) -> Vec<String> {
        history
            .iter()
            .map(|m| match m.role {
                Role::Tool => format!(
                    "tool {} {}",
                    m.tool_call_id.as_deref().unwrap_or(""),
                    m.content
                ),
                Role::Assistant if !m.tool_calls.is_empty() => format!(
                    "calls {}",
                    m.tool_calls
                        .iter()
                        .map(|c| c.id.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                role => format!("{} {}", role.as_str(), m.content),
            })
            .collect()
    }

    #[test]
    fn a_complete_history_is_left_as_it_is() {
        let mut history = vec![
            ChatMessage::user("task"),
            ChatMessage::assistant("", vec![call("a"), call("b")]),
            result("a", "one"),
            result("b", "two"),
            ChatMessage::assistant("done", vec![]),
        ];
        let before = history.clone();
        assert_eq!(pair_tool_results(&mut history), 0);
        assert_eq!(history, before);
    }

    #[test]
    fn a_call_killed_mid_run_gets_an_interrupted_result_in_order() {
        let mut history = vec![
            ChatMessage::user("task"),
            ChatMessage::assistant("", vec![call("a"), call("b")]),
            result("a", "one"),
        ];
        assert_eq!(pair_tool_results(&mut history), 1);
        let shape = shape(&history);
        assert_eq!(shape[2], "tool a one");
        assert!(shape[3].starts_with("tool b interrupted:"), "{shape:?}");
        assert!(history[3].is_error);
        assert_eq!(history[3].tool_name.as_deref(), Some("Bash"));
    }

    #[test]
    fn results_separated_from_their_calls_are_brought_back_and_strays_dropped() {
        let mut history = vec![
            ChatMessage::user("one"),
            ChatMessage::assistant("", vec![call("a")]),
            ChatMessage::user("two"),
            ChatMessage::assistant("answer", vec![]),
            result("a", "late"),
            result("zzz", "answers nothing"),
        ];
        assert_eq!(pair_tool_results(&mut history), 0);
        assert_eq!(
            shape(&history),
            [
                "user one",
                "calls a",
                "tool a late",
                "user two",
                "assistant answer"
            ]
        );
    }
}
