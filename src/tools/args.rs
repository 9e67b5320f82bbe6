//! Argument handling shared by every tool. Small models are sloppy with arguments: they send
//! the object as a JSON string, use another tool's field names, quote numbers, or pass one
//! string where a list is expected. We accept all of that, and when we cannot, the error
//! names the field and shows the expected shape so the next call can be right.

use serde_json::{Map, Value};

use super::ToolOutput;

/// The spellings each tool accepts for its arguments, the first being Claude Code's where it
/// has one. Shared with whatever shows a call in Claude Code's names (hooks' `tool_input`,
/// `--stream-shape claude`), so a spelling added here is understood there too.
pub mod keys {
    pub const PATH: &[&str] = &["file_path", "path", "file", "filepath", "filename"];
    pub const CONTENT: &[&str] = &["content", "contents", "text", "file_text", "data"];
    pub const OLD_STRING: &[&str] = &[
        "old_string",
        "old",
        "old_text",
        "oldText",
        "oldString",
        "old_str",
        "search",
        "from",
    ];
    pub const NEW_STRING: &[&str] = &[
        "new_string",
        "new",
        "new_text",
        "newText",
        "newString",
        "new_str",
        "replace",
        "to",
    ];
    pub const REPLACE_ALL: &[&str] = &["replace_all", "replaceAll", "all"];
    pub const COMMAND: &[&str] = &["command", "cmd", "script", "commandLine"];
    pub const TIMEOUT: &[&str] = &["timeout", "timeout_ms", "timeoutMs"];
    pub const OFFSET: &[&str] = &["offset", "start_line", "start"];
    /// `Glob`'s patterns.
    pub const GLOBS: &[&str] = &["pattern", "globs", "glob", "patterns", "include"];
    /// `Grep`'s query; `pattern` is the query only when none of the others is given
    /// (otherwise it is a glob).
    pub const QUERY: &[&str] = &["query", "regex", "q", "search"];
    /// `delegate_to_agent`'s agent (Claude Code's `Task` says `subagent_type`).
    pub const AGENT: &[&str] = &[
        "target_agent_id",
        "subagent_type",
        "agent",
        "agent_id",
        "target",
    ];
    /// `delegate_to_agent`'s task (Claude Code's `Task` says `prompt`).
    pub const TASK: &[&str] = &["task", "prompt", "message", "instructions"];
}

/// Turns whatever the model sent into an argument object.
///
/// Accepts an object, `null` (a call without arguments), or a string holding a JSON object.
pub(in crate::tools) fn normalize(args: &Value) -> Result<Value, String> {
    match args {
        Value::Object(_) => Ok(args.clone()),
        Value::Null => Ok(Value::Object(Map::new())),
        Value::String(text) => {
            let text = text.trim();
            if text.is_empty() {
                return Ok(Value::Object(Map::new()));
            }
            match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(map)) => Ok(Value::Object(map)),
                Ok(other) => Err(shape_error(&other)),
                Err(e) => Err(format!(
                    "arguments are not valid JSON ({e}); send a JSON object such as {{\"path\": \"src/main.rs\"}}"
                )),
            }
        }
        other => Err(shape_error(other)),
    }
}

fn shape_error(value: &Value) -> String {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    format!(
        "arguments must be a JSON object such as {{\"path\": \"src/main.rs\"}}, not {kind}; put each argument under its name"
    )
}

/// The first of `names` present (and not null) in `args`, with the name that matched.
fn field<'a>(args: &'a Value, names: &[&'static str]) -> Option<(&'static str, &'a Value)> {
    names.iter().find_map(|name| match args.get(name) {
        Some(Value::Null) | None => None,
        Some(value) => Some((*name, value)),
    })
}

/// An optional string argument. Numbers and booleans are accepted as their text, because a
/// model that writes `{"path": 123}` means the file `123`.
pub fn string(args: &Value, names: &[&'static str]) -> Result<Option<String>, ToolOutput> {
    match field(args, names) {
        None => Ok(None),
        Some((_, Value::String(s))) => Ok(Some(s.clone())),
        Some((_, Value::Number(n))) => Ok(Some(n.to_string())),
        Some((_, Value::Bool(b))) => Ok(Some(b.to_string())),
        Some((name, _)) => Err(ToolOutput::error(format!(
            "`{name}` must be a string; send it as \"{name}\": \"...\""
        ))),
    }
}

/// A required string argument; `example` shows a complete call for the error message.
pub fn required_string(
    args: &Value,
    names: &[&'static str],
    tool: &str,
    example: &str,
) -> Result<String, ToolOutput> {
    string(args, names)?.ok_or_else(|| missing(names[0], tool, example))
}

/// The error for a missing required argument.
pub fn missing(name: &str, tool: &str, example: &str) -> ToolOutput {
    ToolOutput::error(format!(
        "{tool} needs `{name}`; call it like {tool}({example})"
    ))
}

/// An optional non-negative integer; numeric strings such as `"20"` are accepted.
pub fn uint(args: &Value, names: &[&'static str]) -> Result<Option<u64>, ToolOutput> {
    let Some((name, value)) = field(args, names) else {
        return Ok(None);
    };
    let parsed = match value {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    parsed.map(Some).ok_or_else(|| {
        ToolOutput::error(format!(
            "`{name}` must be a non-negative integer, e.g. \"{name}\": 100"
        ))
    })
}

/// An optional boolean; `"true"`/`"false"` strings and 0/1 are accepted.
pub fn boolean(args: &Value, names: &[&'static str]) -> Result<Option<bool>, ToolOutput> {
    let Some((name, value)) = field(args, names) else {
        return Ok(None);
    };
    let parsed = match value {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => n.as_u64().filter(|n| *n <= 1).map(|n| n == 1),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => Some(true),
            "false" | "no" | "0" => Some(false),
            _ => None,
        },
        _ => None,
    };
    parsed
        .map(Some)
        .ok_or_else(|| ToolOutput::error(format!("`{name}` must be true or false")))
}

/// An optional list of strings. A single string is a one-element list, and a string that
/// holds a JSON array (`"[\"*.rs\"]"`) is unpacked.
pub fn string_list(
    args: &Value,
    names: &[&'static str],
) -> Result<Option<Vec<String>>, ToolOutput> {
    let Some((name, value)) = field(args, names) else {
        return Ok(None);
    };
    let bad = || {
        ToolOutput::error(format!(
            "`{name}` must be a list of strings, e.g. \"{name}\": [\"src/**/*.rs\"]"
        ))
    };
    match value {
        Value::String(s) => {
            let trimmed = s.trim();
            if trimmed.starts_with('[')
                && let Ok(Value::Array(items)) = serde_json::from_str::<Value>(trimmed)
            {
                return strings_of(&items).map(Some).ok_or_else(bad);
            }
            Ok(Some(vec![s.clone()]))
        }
        Value::Array(items) => strings_of(items).map(Some).ok_or_else(bad),
        _ => Err(bad()),
    }
}

fn strings_of(items: &[Value]) -> Option<Vec<String>> {
    items
        .iter()
        .map(|item| item.as_str().map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalize_accepts_objects_strings_and_null() {
        assert_eq!(normalize(&json!({"a": 1})), Ok(json!({"a": 1})));
        assert_eq!(normalize(&json!("{\"a\": 1}")), Ok(json!({"a": 1})));
        assert_eq!(normalize(&Value::Null), Ok(json!({})));
        assert_eq!(normalize(&json!("  ")), Ok(json!({})));
    }

    #[test]
    fn normalize_rejects_other_shapes_with_a_hint() {
        let err = normalize(&json!([1, 2])).unwrap_err();
        assert!(
            err.contains("JSON object") && err.contains("an array"),
            "{err}"
        );
        let err = normalize(&json!("[1]")).unwrap_err();
        assert!(err.contains("an array"), "{err}");
        let err = normalize(&json!("{oops")).unwrap_err();
        assert!(err.contains("not valid JSON"), "{err}");
        assert!(normalize(&json!(3)).is_err());
    }

    #[test]
    fn fields_accept_aliases_and_loose_types() {
        let args = json!({"file": "a.rs", "limit": "20", "all": "true", "globs": "*.rs"});
        assert_eq!(
            string(&args, &["path", "file"]).unwrap(),
            Some("a.rs".into())
        );
        assert_eq!(uint(&args, &["limit"]).unwrap(), Some(20));
        assert_eq!(boolean(&args, &["all"]).unwrap(), Some(true));
        assert_eq!(
            string_list(&args, &["globs"]).unwrap(),
            Some(vec!["*.rs".to_string()])
        );
        let packed = json!({"globs": "[\"a\", \"b\"]"});
        assert_eq!(
            string_list(&packed, &["globs"]).unwrap(),
            Some(vec!["a".to_string(), "b".to_string()])
        );
    }

    #[test]
    fn wrong_types_name_the_field() {
        let args = json!({"limit": "many", "path": ["x"], "globs": [1]});
        assert!(
            uint(&args, &["limit"])
                .unwrap_err()
                .model
                .contains("`limit`")
        );
        assert!(
            string(&args, &["path"])
                .unwrap_err()
                .model
                .contains("`path`")
        );
        assert!(
            string_list(&args, &["globs"])
                .unwrap_err()
                .model
                .contains("`globs`")
        );
        let err = required_string(&json!({}), &["path"], "Read", "{\"path\": \"a\"}").unwrap_err();
        assert!(err.model.contains("Read needs `path`"), "{}", err.model);
    }
}
