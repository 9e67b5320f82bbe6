//! What a handler reads: the JSON on its stdin, in Claude Code's shape, and the transcript
//! file it may open.
//!
//! linggen's tools take many spellings of their arguments (a small model's `path`, codex's
//! `cmd`); a hook written for Claude Code reads Claude Code's (`file_path`, `command`,
//! `old_string`), so [`claude_tool_input`] renames them, and gives file paths absolute as
//! Claude Code does. `delegate_to_agent` is reported as Claude Code's `Task`.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::config::PermissionMode;
use crate::protocol::{ChatMessage, Role};

/// For each tool, each of Claude Code's argument names and linggen's spellings of it (the
/// tools' own lists, so a spelling a tool learns is renamed here too).
fn renames(tool: &str) -> &'static [(&'static str, &'static [&'static str])] {
    use crate::tools::args::keys;
    match tool {
        "Bash" => &[("command", keys::COMMAND), ("timeout", keys::TIMEOUT)],
        "Read" => &[("file_path", keys::PATH), ("offset", keys::OFFSET)],
        "Write" => &[("file_path", keys::PATH), ("content", keys::CONTENT)],
        "Edit" => &[
            ("file_path", keys::PATH),
            ("old_string", keys::OLD_STRING),
            ("new_string", keys::NEW_STRING),
            ("replace_all", keys::REPLACE_ALL),
        ],
        "Glob" => &[("pattern", keys::GLOBS)],
        "Grep" => &[
            ("pattern", GREP_PATTERN),
            ("glob", &["glob", "globs", "include"]),
        ],
        "delegate_to_agent" => &[("subagent_type", keys::AGENT), ("prompt", keys::TASK)],
        _ => &[],
    }
}

/// `Grep`'s query: one of its query names, else `pattern`.
const GREP_PATTERN: &[&str] = &["query", "regex", "q", "search", "pattern"];

/// The name a hook sees for a linggen tool (Claude Code's where they differ).
pub fn claude_tool_name(tool: &str) -> &str {
    match tool {
        "delegate_to_agent" => "Task",
        other => other,
    }
}

/// `args` with Claude Code's argument names, file paths absolute under `root`.
pub fn claude_tool_input(tool: &str, args: &Value, root: &Path) -> Value {
    let Some(object) = args.as_object() else {
        return args.clone();
    };
    let mut out = Map::new();
    let mut taken: Vec<&str> = Vec::new();
    for (claude, spellings) in renames(tool) {
        if let Some((name, value)) = spellings
            .iter()
            .find_map(|s| object.get(*s).filter(|v| !v.is_null()).map(|v| (*s, v)))
        {
            out.insert(claude.to_string(), claude_value(claude, value, root));
            taken.extend(spellings.iter().copied().filter(|s| *s == name));
        }
    }
    for (key, value) in object {
        if !taken.contains(&key.as_str()) && !out.contains_key(key) {
            out.insert(key.clone(), value.clone());
        }
    }
    Value::Object(out)
}

fn claude_value(name: &str, value: &Value, root: &Path) -> Value {
    match (name, value) {
        ("file_path", Value::String(path)) => {
            let path = Path::new(path.trim());
            Value::String(root.join(path).display().to_string())
        }
        // Claude Code's `Glob` takes one pattern.
        ("pattern" | "glob", Value::Array(items)) if items.len() == 1 => items[0].clone(),
        _ => value.clone(),
    }
}

/// Claude Code's spelling of a permission mode.
pub fn claude_mode(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Default => "default",
        PermissionMode::AcceptEdits => "acceptEdits",
        PermissionMode::Plan => "plan",
        PermissionMode::Bypass => "bypassPermissions",
    }
}

/// The fields every event's input has.
pub struct Common<'a> {
    pub session_id: &'a str,
    pub transcript_path: &'a Path,
    pub cwd: &'a Path,
    pub permission_mode: PermissionMode,
}

/// The whole stdin object: the common fields, the event's name and its own fields.
pub fn stdin_json(
    common: &Common<'_>,
    event: super::HookEvent,
    fields: &Map<String, Value>,
) -> Value {
    let mut object = Map::new();
    object.insert("session_id".into(), json!(common.session_id));
    object.insert(
        "transcript_path".into(),
        json!(common.transcript_path.display().to_string()),
    );
    object.insert("cwd".into(), json!(common.cwd.display().to_string()));
    object.insert(
        "permission_mode".into(),
        json!(claude_mode(common.permission_mode)),
    );
    object.insert("hook_event_name".into(), json!(event.name()));
    for (key, value) in fields {
        object.insert(key.clone(), value.clone());
    }
    Value::Object(object)
}

/// The conversation as JSON lines in the shape Claude Code's transcripts have (one object
/// per message: `type` `user` or `assistant`, `message` with `role` and `content` blocks —
/// `text`, `tool_use`, `tool_result` —, `sessionId`, `cwd`, `uuid`, `parentUuid`). The
/// system prompt is left out, as Claude Code leaves it out.
pub fn transcript(history: &[ChatMessage], session_id: &str, cwd: &Path) -> String {
    let mut out = String::new();
    let mut parent: Option<String> = None;
    for (i, message) in history.iter().enumerate() {
        let (kind, content) = match message.role {
            Role::System => continue,
            Role::User => (
                "user",
                json!([{"type": "text", "text": message.content.as_str()}]),
            ),
            Role::Tool => (
                "user",
                json!([{
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id.clone().unwrap_or_default(),
                    "content": message.content.as_str(),
                    "is_error": message.is_error,
                }]),
            ),
            Role::Assistant => {
                let mut blocks = Vec::new();
                if !message.content.as_str().is_empty() {
                    blocks.push(json!({"type": "text", "text": message.content.as_str()}));
                }
                for call in &message.tool_calls {
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": claude_tool_name(&call.name),
                        "input": call.arguments,
                    }));
                }
                ("assistant", Value::Array(blocks))
            }
        };
        let role = if kind == "assistant" {
            "assistant"
        } else {
            "user"
        };
        let uuid = format!("{session_id}-{i}");
        let line = json!({
            "type": kind,
            "sessionId": session_id,
            "cwd": cwd.display().to_string(),
            "uuid": uuid,
            "parentUuid": parent,
            "message": {"role": role, "content": content},
        });
        out.push_str(&line.to_string());
        out.push('\n');
        parent = Some(uuid);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_input_uses_claude_codes_names_and_absolute_paths() {
        let root = Path::new("/work/p");
        let edit = claude_tool_input(
            "Edit",
            &json!({"path": "src/a.rs", "old": "x", "new": "y"}),
            root,
        );
        assert_eq!(
            edit,
            json!({"file_path": "/work/p/src/a.rs", "old_string": "x", "new_string": "y"})
        );
        let bash = claude_tool_input("Bash", &json!({"cmd": "ls", "description": "list"}), root);
        assert_eq!(bash, json!({"command": "ls", "description": "list"}));
        let absolute = claude_tool_input(
            "Write",
            &json!({"file_path": "/etc/x", "content": ""}),
            root,
        );
        assert_eq!(absolute["file_path"], "/etc/x");
        let glob = claude_tool_input("Glob", &json!({"globs": ["**/*.rs"]}), root);
        assert_eq!(glob, json!({"pattern": "**/*.rs"}));
        assert_eq!(claude_tool_name("delegate_to_agent"), "Task");
        let mcp = json!({"a": 1});
        assert_eq!(claude_tool_input("mcp__s__t", &mcp, root), mcp);
    }
}
