//! `--output-format stream-json --stream-shape claude`: the session's events as the
//! messages Claude Code's `stream-json` prints, for tools written to parse those:
//!
//! - `{"type":"system","subtype":"init", session_id, cwd, model, tools, permissionMode}`
//!   when the session starts;
//! - `{"type":"assistant","message":{role, content:[text | tool_use]}, parent_tool_use_id,
//!   session_id}` for each model answer, tools and their arguments named as Claude Code
//!   names them;
//! - `{"type":"user","message":{role, content:[tool_result]}, …}` for each tool result;
//! - then the same `result` line as linggen's own shape.
//!
//! A delegated agent's messages carry the `tool_use` id of the `Task` (`delegate_to_agent`)
//! call that started it as `parent_tool_use_id`, as Claude Code's subagents do. Other events
//! (tokens, statuses, approvals) have no counterpart and are not printed.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Value, json};

use crate::hooks::input::{claude_mode, claude_tool_input, claude_tool_name};
use crate::llm::Role;
use crate::session::Event;

/// Turns events into Claude Code's stream messages.
#[derive(Default)]
pub struct ClaudeShape {
    session_id: String,
    root: String,
    /// The last `delegate_to_agent` call of each run, for the run it starts.
    pending_delegation: HashMap<String, String>,
    /// Each delegated run's parent call.
    parent_call: HashMap<String, String>,
}

impl ClaudeShape {
    /// The message `event` becomes, if it has one.
    pub fn convert(&mut self, event: &Event) -> Option<Value> {
        match event {
            Event::SessionStarted {
                session_id,
                model,
                root,
                permission_mode,
                tools,
                ..
            } => {
                self.session_id = session_id.clone();
                self.root = root.clone();
                let tools: Vec<&str> = tools.iter().map(|t| claude_tool_name(t)).collect();
                Some(json!({
                    "type": "system", "subtype": "init", "session_id": session_id,
                    "cwd": root, "model": model, "tools": tools,
                    "permissionMode": claude_mode(*permission_mode),
                }))
            }
            Event::RunStarted {
                run_id,
                parent_id: Some(parent),
                ..
            } => {
                if let Some(call) = self.pending_delegation.remove(parent) {
                    self.parent_call.insert(run_id.clone(), call);
                }
                None
            }
            Event::Message {
                run_id,
                role: Role::Assistant,
                content,
                tool_calls,
                ..
            } => {
                let mut blocks = Vec::new();
                if !content.trim().is_empty() {
                    blocks.push(json!({"type": "text", "text": content.as_str()}));
                }
                for call in tool_calls {
                    if call.name == "delegate_to_agent" {
                        self.pending_delegation
                            .insert(run_id.clone(), call.id.clone());
                    }
                    let input =
                        claude_tool_input(&call.name, &call.arguments, Path::new(&self.root));
                    blocks.push(json!({
                        "type": "tool_use", "id": call.id,
                        "name": claude_tool_name(&call.name), "input": input,
                    }));
                }
                Some(self.message(run_id, "assistant", Value::Array(blocks)))
            }
            Event::Message {
                run_id,
                role: Role::Tool,
                content,
                tool_call_id,
                is_error,
                ..
            } => {
                let block = json!({
                    "type": "tool_result",
                    "tool_use_id": tool_call_id.clone().unwrap_or_default(),
                    "content": content.as_str(),
                    "is_error": is_error,
                });
                Some(self.message(run_id, "user", json!([block])))
            }
            _ => None,
        }
    }

    fn message(&self, run_id: &str, role: &str, content: Value) -> Value {
        json!({
            "type": role,
            "message": {"role": role, "content": content},
            "parent_tool_use_id": self.parent_call.get(run_id),
            "session_id": self.session_id,
        })
    }
}
