//! `TodoWrite`: the todo list the agent keeps for multi-step work, in Claude Code's format
//! (`{"todos": [{"content", "status", "activeForm"}]}`), so a model trained on it calls it
//! as it would there. Each call replaces the whole list. The tool touches no file: the
//! session publishes the list (`Event::TodosUpdated`) and every frontend shows it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ToolName, ToolOutput, args};
use crate::protocol::ToolSpec;

/// Most items a list may hold: a plan, not a dump of every line of a file.
pub const MAX_TODOS: usize = 100;
/// Longest item, in characters; a longer one is a paragraph, not a step.
const MAX_CONTENT_CHARS: usize = 500;

const EXAMPLE: &str = r#"{"todos": [{"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"}]}"#;

/// Where an item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

/// One item of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Todo {
    /// What to do, imperative: `Run the tests`.
    pub content: String,
    pub status: TodoStatus,
    /// The same in the present continuous, shown while it is in progress: `Running the
    /// tests` (the content when the model gave none).
    pub active_form: String,
}

/// Parses a call's arguments into the new list; an `Err` goes back to the model.
pub fn parse(a: &Value) -> Result<(Vec<Todo>, String), ToolOutput> {
    let tool = ToolName::TodoWrite.name();
    let items = match a.get("todos") {
        Some(Value::Array(items)) => items.clone(),
        // Sent as a JSON string, as small models sometimes do.
        Some(Value::String(text)) => match serde_json::from_str(text) {
            Ok(Value::Array(items)) => items,
            _ => return Err(bad(&format!("`todos` must be a list; e.g. {EXAMPLE}"))),
        },
        Some(_) => return Err(bad(&format!("`todos` must be a list; e.g. {EXAMPLE}"))),
        None => return Err(args::missing("todos", tool, EXAMPLE)),
    };
    if items.len() > MAX_TODOS {
        return Err(bad(&format!(
            "{} items is too many (at most {MAX_TODOS}); keep one item per step",
            items.len()
        )));
    }
    let todos = items
        .iter()
        .enumerate()
        .map(|(i, item)| todo(i + 1, item))
        .collect::<Result<Vec<Todo>, ToolOutput>>()?;
    let summary = format!("{} {}", ToolName::TodoWrite.name(), counts(&todos));
    Ok((todos, summary))
}

/// One item; `n` counts from 1, for the error. `id` and `priority` (older clients') are
/// accepted and ignored.
fn todo(n: usize, item: &Value) -> Result<Todo, ToolOutput> {
    if !item.is_object() {
        return Err(bad(&format!("item {n} is not an object; e.g. {EXAMPLE}")));
    }
    let content = args::string(item, &["content", "task", "text", "title"])?.unwrap_or_default();
    let content = content.trim();
    if content.is_empty() {
        return Err(bad(&format!("item {n} has no `content`; e.g. {EXAMPLE}")));
    }
    if content.chars().count() > MAX_CONTENT_CHARS {
        return Err(bad(&format!(
            "item {n} is longer than {MAX_CONTENT_CHARS} characters; one short step per item"
        )));
    }
    let status = args::string(item, &["status", "state"])?.unwrap_or_default();
    let status = match status
        .trim()
        .to_ascii_lowercase()
        .replace('-', "_")
        .as_str()
    {
        "pending" => TodoStatus::Pending,
        "in_progress" => TodoStatus::InProgress,
        "completed" => TodoStatus::Completed,
        "" => {
            return Err(bad(&format!(
                "item {n} has no `status`; use pending, in_progress or completed"
            )));
        }
        other => {
            return Err(bad(&format!(
                "item {n} has status `{other}`; use pending, in_progress or completed"
            )));
        }
    };
    let active_form = args::string(item, &["activeForm", "active_form"])?
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| content.to_string());
    Ok(Todo {
        content: content.to_string(),
        status,
        active_form,
    })
}

fn bad(why: &str) -> ToolOutput {
    ToolOutput::error(format!("{}: {why}", ToolName::TodoWrite.name()))
}

/// `1 completed, 1 in progress, 3 pending` (the kinds there are), or `empty`.
pub fn counts(todos: &[Todo]) -> String {
    let parts: Vec<String> = [
        (TodoStatus::Completed, "completed"),
        (TodoStatus::InProgress, "in progress"),
        (TodoStatus::Pending, "pending"),
    ]
    .into_iter()
    .filter_map(|(status, name)| {
        let n = todos.iter().filter(|t| t.status == status).count();
        (n > 0).then(|| format!("{n} {name}"))
    })
    .collect();
    if parts.is_empty() {
        "empty".to_string()
    } else {
        parts.join(", ")
    }
}

/// What the model reads back: the counts, so it knows the call took.
pub fn confirmation(todos: &[Todo]) -> ToolOutput {
    let counts = counts(todos);
    ToolOutput::ok(
        format!("todo list updated: {counts}"),
        format!("todos: {counts}"),
    )
}

/// The list as plain lines for the model (`- [x] Run the tests`), where the call that set
/// it is no longer in the conversation (see `session::compact`).
pub fn as_text(todos: &[Todo]) -> String {
    todos
        .iter()
        .map(|t| match t.status {
            TodoStatus::Completed => format!("- [x] {}", t.content),
            TodoStatus::InProgress => format!("- [ ] {} (in progress)", t.content),
            TodoStatus::Pending => format!("- [ ] {}", t.content),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The list the last successful `TodoWrite` of `history` set, for a resumed session.
pub fn last_in(history: &[crate::protocol::ChatMessage]) -> Option<Vec<Todo>> {
    use crate::protocol::Role;
    let is_todo = |name: &str| ToolName::resolve(name) == Some(ToolName::TodoWrite);
    history.iter().rev().find_map(|msg| {
        if msg.role != Role::Tool || msg.is_error {
            return None;
        }
        let call_id = msg.tool_call_id.as_deref()?;
        if !msg.tool_name.as_deref().is_some_and(is_todo) {
            return None;
        }
        let call = history
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .flat_map(|m| &m.tool_calls)
            .find(|c| c.id == call_id && is_todo(&c.name))?;
        let args = args::normalize(&call.arguments).ok()?;
        parse(&args).ok().map(|(todos, _)| todos)
    })
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: ToolName::TodoWrite.name().into(),
        description: "A todo list for multi-step tasks; each call replaces it. One item in_progress at a time.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"todos": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string"},
                    "status": {"enum": ["pending", "in_progress", "completed"]},
                    "activeForm": {"type": "string"}
                },
                "required": ["content", "status", "activeForm"]
            }}},
            "required": ["todos"]
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_arguments_parse_and_bad_ones_say_why() {
        let (todos, summary) = parse(&json!({"todos": [
            {"content": "Read", "status": "completed", "activeForm": "Reading", "id": "1"},
            {"content": "Test", "status": "in-progress", "priority": "high"},
            {"content": "Ship", "status": "pending", "activeForm": "Shipping"},
        ]}))
        .unwrap();
        assert_eq!(todos[1].status, TodoStatus::InProgress);
        assert_eq!(todos[1].active_form, "Test");
        assert_eq!(summary, "TodoWrite 1 completed, 1 in progress, 1 pending");
        let error = |a: Value| parse(&a).unwrap_err().model;
        assert!(error(json!({})).contains("todos"));
        assert!(
            error(json!({"todos": [{"content": "x", "status": "doing"}]}))
                .contains("item 1 has status `doing`")
        );
        assert!(
            error(json!({"todos": [{"content": " ", "status": "pending"}]})).contains("content")
        );
        let many: Vec<Value> = (0..=MAX_TODOS)
            .map(|i| json!({"content": format!("step {i}"), "status": "pending"}))
            .collect();
        assert!(error(json!({ "todos": many })).contains("too many"));
        assert_eq!(parse(&json!({"todos": []})).unwrap().1, "TodoWrite empty");
    }

    /// A resumed session's list is its last successful call's; a refused call changed nothing.
    #[test]
    fn the_last_successful_call_of_a_history_is_the_list() {
        use crate::protocol::{ChatMessage, ToolCall};
        let call = |id: &str, status: &str| ToolCall {
            id: id.into(),
            name: "TodoWrite".into(),
            arguments: json!({"todos": [{"content": "Test", "status": status}]}),
        };
        let (good, bad) = (call("c1", "completed"), call("c2", "doing"));
        let history = vec![
            ChatMessage::user("go"),
            ChatMessage::assistant("", vec![good.clone()]),
            ChatMessage::tool_result(&good, "todo list updated", false),
            ChatMessage::assistant("", vec![bad.clone()]),
            ChatMessage::tool_result(&bad, "TodoWrite: item 1 has status `doing`", true),
        ];
        let todos = last_in(&history).unwrap();
        assert_eq!(todos[0].status, TodoStatus::Completed);
        assert_eq!(last_in(&history[..1]), None);
    }
}
