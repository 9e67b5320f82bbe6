//! Tool-call ids that are unique across a session. Providers number calls per response
//! (Ollama's `call_0` restarts every time, some servers always say `call_1`), yet the
//! history, the store and every frontend pair a tool result with its call by id: a repeated
//! id piles every result under the first call. So the session names calls itself when it
//! records a response, and sends those names back; the vendors that want ids (OpenAI,
//! Anthropic, Bedrock) only require that a result names a call of the same history, and
//! `call_` + hex digits fits all their formats (`^[a-zA-Z0-9_-]+$`, at most 40 characters).

use std::collections::{HashMap, HashSet, VecDeque};

use super::ids;
use crate::llm::{ChatMessage, Role, ToolCall};

/// A fresh id for one tool call.
pub(crate) fn fresh() -> String {
    format!("call_{}", ids::new_id())
}

/// Renames the calls of one response before it is recorded.
pub(crate) fn assign(calls: &mut [ToolCall]) {
    for call in calls {
        call.id = fresh();
    }
}

/// Makes the call ids of a stored conversation unique (a session recorded before the
/// session named its calls may repeat them). A repeated id is renamed, and each tool
/// result follows the call it answered: the earliest unanswered call of that id in the
/// latest assistant message, which is how the provider paired them when it ran.
pub fn make_unique(history: &mut [ChatMessage]) {
    let mut seen: HashSet<String> = HashSet::new();
    // Original id → the ids its calls now have, not yet answered.
    let mut open: HashMap<String, VecDeque<String>> = HashMap::new();
    for msg in history.iter_mut() {
        match msg.role {
            Role::Assistant if !msg.tool_calls.is_empty() => {
                open.clear();
                for call in &mut msg.tool_calls {
                    let original = call.id.clone();
                    if original.is_empty() || seen.contains(&original) {
                        call.id = fresh();
                    }
                    seen.insert(call.id.clone());
                    open.entry(original).or_default().push_back(call.id.clone());
                }
            }
            Role::Tool => {
                let renamed = msg
                    .tool_call_id
                    .as_ref()
                    .and_then(|id| open.get_mut(id))
                    .and_then(VecDeque::pop_front);
                if let Some(id) = renamed {
                    msg.tool_call_id = Some(id);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            arguments: json!({}),
        }
    }

    #[test]
    fn repeated_ids_of_a_stored_session_are_renamed_with_their_results() {
        let read = call("call_1", "Read");
        let bash = call("call_1", "Bash");
        let mut history = vec![
            ChatMessage::user("go"),
            ChatMessage::assistant("", vec![read.clone()]),
            ChatMessage::tool_result(&read, "file text", false),
            ChatMessage::assistant("", vec![bash.clone()]),
            ChatMessage::tool_result(&bash, "ls output", false),
        ];
        make_unique(&mut history);
        let first = history[1].tool_calls[0].id.clone();
        let second = history[3].tool_calls[0].id.clone();
        assert_eq!(first, "call_1", "an id seen once is kept");
        assert_ne!(first, second);
        assert_eq!(history[2].tool_call_id.as_deref(), Some(first.as_str()));
        assert_eq!(history[4].tool_call_id.as_deref(), Some(second.as_str()));
    }

    #[test]
    fn repeated_ids_within_one_response_pair_in_order() {
        let a = call("call_0", "Read");
        let b = call("call_0", "Grep");
        let mut history = vec![
            ChatMessage::assistant("", vec![a.clone(), b.clone()]),
            ChatMessage::tool_result(&a, "a", false),
            ChatMessage::tool_result(&b, "b", false),
        ];
        make_unique(&mut history);
        let ids: Vec<_> = history[0].tool_calls.iter().map(|c| c.id.clone()).collect();
        assert_ne!(ids[0], ids[1]);
        assert_eq!(history[1].tool_call_id.as_ref(), Some(&ids[0]));
        assert_eq!(history[2].tool_call_id.as_ref(), Some(&ids[1]));
    }

    #[test]
    fn fresh_ids_fit_every_vendor_format() {
        let id = fresh();
        assert!(id.len() <= 40);
        assert!(
            id.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }
}
