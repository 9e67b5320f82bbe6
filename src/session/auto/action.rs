//! Reading one auto-mode action out of a model's answer. Small local models wrap JSON in
//! code fences, put a sentence before it, write `"tool_call"` for `"tool"` or leave raw
//! newlines inside a diff string; each of those is read as meant. What cannot be read gets
//! an error that says what was wrong, which the model sees once before the run gives up.

use serde_json::{Map, Value};

/// One step of the structured loop.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Run a tool: `{"type":"tool","tool":"Read","args":{…}}`.
    Tool { tool: String, args: Value },
    /// Apply a unified diff: `{"type":"patch","diff":"…"}`.
    Patch { diff: String },
    /// End the task: `{"type":"finalize_task","summary":"…"}`.
    Finalize { summary: String },
}

/// The first JSON object in `text`, read as an action.
pub(in crate::session) fn parse(text: &str) -> Result<Action, String> {
    let object = first_object(text)?;
    let kind = string_field(&object, &["type", "action", "kind"]).unwrap_or_default();
    let kind = kind.trim().to_ascii_lowercase().replace(['-', ' '], "_");
    let tool = string_field(&object, &["tool", "name", "tool_name"]);
    match kind.as_str() {
        "tool" | "tool_call" | "call" | "use_tool" => tool_action(&object, tool),
        "patch" | "apply_patch" | "diff" => patch_action(&object),
        "finalize_task" | "finalize" | "final" | "finish" | "done" | "final_answer" => {
            finalize_action(&object)
        }
        // No type: what the fields say.
        "" if tool.is_some() => tool_action(&object, tool),
        "" if object.contains_key("diff") || object.contains_key("patch") => patch_action(&object),
        "" if object.contains_key("summary") => finalize_action(&object),
        "" => Err(format!("the object has no \"type\"; {EXPECTED}")),
        other => Err(format!("unknown action type \"{other}\"; {EXPECTED}")),
    }
}

/// What every error ends with, so the model knows the three shapes.
pub const EXPECTED: &str = "answer with exactly one JSON object: \
{\"type\":\"tool\",\"tool\":NAME,\"args\":{…}}, {\"type\":\"patch\",\"diff\":UNIFIED_DIFF} \
or {\"type\":\"finalize_task\",\"summary\":TEXT}";

fn tool_action(object: &Map<String, Value>, tool: Option<String>) -> Result<Action, String> {
    let Some(tool) = tool.filter(|t| !t.trim().is_empty()) else {
        return Err(format!(
            "a tool action needs \"tool\" (the tool's name); {EXPECTED}"
        ));
    };
    let args = ["args", "arguments", "input", "parameters", "params"]
        .iter()
        .find_map(|k| object.get(*k))
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    // Arguments sent as a JSON string (as OpenAI's wire format does) are read inside.
    let args = match args {
        Value::String(s) => serde_json::from_str(&s)
            .map_err(|e| format!("\"args\" of `{tool}` is a string that is not JSON: {e}"))?,
        Value::Null => Value::Object(Map::new()),
        other => other,
    };
    if !args.is_object() {
        return Err(format!("\"args\" of `{tool}` must be an object"));
    }
    Ok(Action::Tool {
        tool: tool.trim().to_string(),
        args,
    })
}

fn patch_action(object: &Map<String, Value>) -> Result<Action, String> {
    match string_field(object, &["diff", "patch"]) {
        Some(diff) if !diff.trim().is_empty() => Ok(Action::Patch { diff }),
        _ => Err(format!(
            "a patch action needs \"diff\": a unified diff as one string; {EXPECTED}"
        )),
    }
}

fn finalize_action(object: &Map<String, Value>) -> Result<Action, String> {
    match string_field(object, &["summary", "result", "answer", "message"]) {
        Some(summary) if !summary.trim().is_empty() => Ok(Action::Finalize {
            summary: summary.trim().to_string(),
        }),
        _ => Err(format!(
            "finalize_task needs \"summary\": what was done and the result; {EXPECTED}"
        )),
    }
}

fn string_field(object: &Map<String, Value>, names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|n| object.get(*n))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The first balanced `{…}` in `text` that parses as a JSON object (fences and prose
/// around it ignored). Raw control characters inside strings are escaped first: models
/// often put a diff's newlines into a string as they are.
fn first_object(text: &str) -> Result<Map<String, Value>, String> {
    let mut first_error = None;
    for (start, _) in text.match_indices('{') {
        let Some(end) = balanced_end(&text[start..]) else {
            continue;
        };
        let candidate = &text[start..start + end];
        match serde_json::from_str::<Value>(&escape_controls(candidate)) {
            Ok(Value::Object(object)) => return Ok(object),
            Ok(_) => {}
            Err(e) => {
                first_error.get_or_insert_with(|| format!("the JSON does not parse: {e}"));
            }
        }
    }
    Err(match first_error {
        Some(e) => format!("{e}; {EXPECTED}"),
        None if text.trim().is_empty() => format!("the answer was empty; {EXPECTED}"),
        None => format!("no JSON object in the answer; {EXPECTED}"),
    })
}

/// The length of the object starting at `text[0] == '{'`, counting braces outside strings.
fn balanced_end(text: &str) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in text.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Escapes newlines, tabs and other control characters that appear inside JSON strings.
fn escape_controls(json: &str) -> String {
    let (mut out, mut in_string, mut escaped) = (String::with_capacity(json.len()), false, false);
    for c in json.chars() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                '\n' => {
                    out.push_str("\\n");
                    continue;
                }
                '\r' => {
                    out.push_str("\\r");
                    continue;
                }
                '\t' => {
                    out.push_str("\\t");
                    continue;
                }
                c if (c as u32) < 0x20 => {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                    continue;
                }
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_three_actions_parse() {
        assert_eq!(
            parse(r#"{"type":"tool","tool":"Read","args":{"path":"a.rs"}}"#),
            Ok(Action::Tool {
                tool: "Read".into(),
                args: json!({"path": "a.rs"})
            })
        );
        assert_eq!(
            parse(r#"{"type":"patch","diff":"--- a/x\n+++ b/x\n"}"#),
            Ok(Action::Patch {
                diff: "--- a/x\n+++ b/x\n".into()
            })
        );
        assert_eq!(
            parse(r#"{"type":"finalize_task","summary":" done "}"#),
            Ok(Action::Finalize {
                summary: "done".into()
            })
        );
    }

    #[test]
    fn fences_prose_aliases_and_raw_newlines_are_read() {
        let fenced = "Sure, here it is:\n```json\n{\"type\": \"tool_call\", \"name\": \"Glob\", \"arguments\": \"{\\\"pattern\\\": \\\"*.rs\\\"}\"}\n```\n";
        assert_eq!(
            parse(fenced),
            Ok(Action::Tool {
                tool: "Glob".into(),
                args: json!({"pattern": "*.rs"})
            })
        );
        let raw = "{\"type\":\"patch\",\"diff\":\"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b {\n\"}";
        assert_eq!(
            parse(raw),
            Ok(Action::Patch {
                diff: "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b {\n".into()
            })
        );
        assert_eq!(
            parse(r#"{"tool":"Read","args":{"path":"x"}}"#),
            Ok(Action::Tool {
                tool: "Read".into(),
                args: json!({"path": "x"})
            })
        );
        assert_eq!(
            parse(r#"{"type":"Finalize-Task","result":"ok"}"#),
            Ok(Action::Finalize {
                summary: "ok".into()
            })
        );
    }

    #[test]
    fn what_cannot_be_read_says_why() {
        let err = parse("I will read the file now.").unwrap_err();
        assert!(err.starts_with("no JSON object"), "{err}");
        assert!(err.contains("finalize_task"), "{err}");
        let err = parse(r#"{"type":"tool","args":{}}"#).unwrap_err();
        assert!(err.contains("needs \"tool\""), "{err}");
        let err = parse(r#"{"type":"explode"}"#).unwrap_err();
        assert!(err.contains("unknown action type \"explode\""), "{err}");
        let err = parse(r#"{"type":"finalize_task"}"#).unwrap_err();
        assert!(err.contains("needs \"summary\""), "{err}");
        let err = parse(r#"{"type":"tool","tool":"Read","args":{"path":}}"#).unwrap_err();
        assert!(err.contains("does not parse"), "{err}");
    }
}
