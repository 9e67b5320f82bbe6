//! The tools as a model with a small context window is offered them. On a 2k window the
//! full schemas took more than half of it before the person said anything, so a model
//! whose window is under [`SMALL_WINDOW_TOKENS`] gets the same tools, under the same names
//! and with the same required arguments (the tool contract, which the calls are checked
//! against whatever was offered), described in one short line, without the arguments'
//! descriptions, and with only the optional arguments a small model reaches for. Four tools
//! a small model does better without are left out (see [`LEFT_OUT`]). What the guard and the
//! sandbox enforce does not depend on any of this text.

use serde_json::{Map, Value};

use super::ToolName;
use crate::protocol::ToolSpec;

/// A window under this many tokens is small: the fixed prompt would take a fifth of it
/// or more.
pub const SMALL_WINDOW_TOKENS: u32 = 8_192;

/// Whether a model with this window gets the compact prompt and tools. An unknown window
/// gets the full ones.
pub fn is_small(window: Option<u32>) -> bool {
    window.is_some_and(|tokens| tokens < SMALL_WINDOW_TOKENS)
}

/// Not offered on a small window: the patch tools (Edit and Write do the same in calls a
/// small model gets right more often), the lock tools (for runs working side by side, which
/// a small window does not hold) and `TodoWrite` (a list that costs a call per step). They
/// still run when called, as an agent allows.
pub const LEFT_OUT: [ToolName; 5] = [
    ToolName::ProposePatch,
    ToolName::ApplyPatch,
    ToolName::LockPaths,
    ToolName::UnlockPaths,
    ToolName::TodoWrite,
];

/// `tools` as a small window gets them: [`LEFT_OUT`] left out, the others [`shrink`]ed.
pub fn for_small_window(tools: Vec<ToolSpec>) -> Vec<ToolSpec> {
    tools
        .into_iter()
        .filter(|spec| ToolName::from_name(&spec.name).is_none_or(|name| !LEFT_OUT.contains(&name)))
        .map(shrink)
        .collect()
}

/// A built-in tool's short line and the optional arguments it keeps (the tools in
/// [`LEFT_OUT`] need none).
struct Short {
    tool: ToolName,
    line: &'static str,
    keep: &'static [&'static str],
}

const SHORT: &[Short] = &[
    short(ToolName::RepoInfo, "Root, platform and git state.", &[]),
    short(
        ToolName::Glob,
        "List files matching globs, e.g. [\"**/*.rs\"].",
        &["path"],
    ),
    short(
        ToolName::Read,
        "Read a file as numbered lines; line_range [start, end] for a part.",
        &["line_range"],
    ),
    short(
        ToolName::Grep,
        "Regex search in files; returns path:line:text.",
        &["globs", "path"],
    ),
    short(ToolName::Write, "Create or overwrite a whole file.", &[]),
    short(
        ToolName::Edit,
        "Replace old_string (exact, found once) with new_string.",
        &[],
    ),
    short(
        ToolName::Bash,
        "Run one command line in the root, sandboxed, no network.",
        &[],
    ),
    short(
        ToolName::BashOutput,
        "New output of a background command.",
        &[],
    ),
    short(ToolName::KillShell, "Stop a background command.", &[]),
    short(
        ToolName::Screenshot,
        "PNG screenshot of a local web page; returns its path.",
        &[],
    ),
    short(ToolName::Skill, "Load a skill, then follow it:", &["args"]),
    short(
        ToolName::Delegate,
        "Hand a task, with every detail, to an agent:",
        &[],
    ),
];

const fn short(tool: ToolName, line: &'static str, keep: &'static [&'static str]) -> Short {
    Short { tool, line, keep }
}

/// The longest entry of a catalog (a skill or an agent and the first sentence of what it
/// is for) on a small window.
const CATALOG_ENTRY_CHARS: usize = 72;

/// `spec` as a small window gets it. A tool linggen does not know (an MCP server's) keeps
/// its first sentence and every argument, without their descriptions. The lists in
/// `Skill`'s and `delegate_to_agent`'s descriptions (the catalog) stay, each entry cut to
/// its first sentence and at most [`CATALOG_ENTRY_CHARS`].
pub fn shrink(spec: ToolSpec) -> ToolSpec {
    let known = ToolName::from_name(&spec.name)
        .and_then(|name| SHORT.iter().find(|short| short.tool == name));
    let first_line = spec.description.lines().next().unwrap_or_default();
    let line = known.map_or_else(|| first_sentence(first_line), |short| short.line);
    let mut description = line.to_string();
    for entry in spec.description.lines().filter(|l| l.starts_with("- ")) {
        description.push('\n');
        description.push_str(&crate::text::one_line(
            first_sentence(entry),
            CATALOG_ENTRY_CHARS,
        ));
    }
    let parameters = slim(&spec.parameters, known.map(|short| short.keep));
    ToolSpec {
        name: spec.name,
        description,
        parameters,
    }
}

/// The start of `text` up to its first full stop (one followed by a space or the end; an
/// `e.g.` or `i.e.` is not one).
fn first_sentence(text: &str) -> &str {
    let mut from = 0;
    while let Some(at) = text[from..].find(". ").map(|i| from + i) {
        let before = &text[..at];
        if !(before.ends_with("e.g") || before.ends_with("i.e")) {
            return &text[..=at];
        }
        from = at + 2;
    }
    text
}

/// The parameters' schema without descriptions; with `keep`, only the required arguments
/// and those named.
fn slim(parameters: &Value, keep: Option<&[&str]>) -> Value {
    let mut schema = strip_descriptions(parameters);
    let Some(keep) = keep else { return schema };
    let required: Vec<String> = schema["required"]
        .as_array()
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties
            .retain(|name, _| required.iter().any(|r| r == name) || keep.contains(&name.as_str()));
    }
    schema
}

/// A JSON Schema without its `description` keywords. Only schema positions are walked, so
/// an argument that happens to be called `description` stays.
fn strip_descriptions(schema: &Value) -> Value {
    let Value::Object(object) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in object {
        let value = match (key.as_str(), value) {
            ("description", _) => continue,
            ("properties" | "$defs" | "definitions", Value::Object(schemas)) => Value::Object(
                schemas
                    .iter()
                    .map(|(name, s)| (name.clone(), strip_descriptions(s)))
                    .collect(),
            ),
            ("items" | "additionalProperties" | "not", _) => strip_descriptions(value),
            ("anyOf" | "oneOf" | "allOf", Value::Array(schemas)) => {
                Value::Array(schemas.iter().map(strip_descriptions).collect())
            }
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_tool_a_small_window_is_offered_has_a_short_line() {
        let names: Vec<ToolName> = ToolName::FILE_TOOLS
            .into_iter()
            .chain(ToolName::BACKGROUND_TOOLS)
            .chain(ToolName::SESSION_TOOLS)
            .filter(|name| !LEFT_OUT.contains(name))
            .collect();
        for name in names {
            assert!(
                SHORT.iter().any(|short| short.tool == name),
                "{name:?} has no short line"
            );
        }
    }

    #[test]
    fn required_arguments_stay_and_descriptions_go() {
        let full = crate::tools::read::spec();
        let small = shrink(full.clone());
        assert_eq!(small.name, "Read");
        assert_eq!(small.parameters["required"], full.parameters["required"]);
        let properties = small.parameters["properties"].as_object().unwrap();
        assert!(properties.contains_key("path") && properties.contains_key("line_range"));
        assert!(!properties.contains_key("max_bytes"));
        assert!(!small.parameters.to_string().contains("description"));
        assert!(small.chars() * 4 < full.chars() * 3, "{small:?}");
    }

    #[test]
    fn an_unknown_tool_keeps_its_arguments_and_one_sentence() {
        let spec = ToolSpec {
            name: "mcp__notes__add".into(),
            description: "Add a note, e.g. a todo. It is saved at once.\nMore text.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string", "description": "The note."},
                    "tags": {"type": "array", "items": {"type": "string", "description": "x"}}
                },
                "required": ["description"]
            }),
        };
        let small = shrink(spec);
        assert_eq!(small.description, "Add a note, e.g. a todo.");
        assert_eq!(
            small.parameters,
            json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["description"]
            })
        );
    }

    #[test]
    fn a_catalog_keeps_each_entry_cut_to_a_sentence() {
        let spec = crate::tools::session_tools::skill_spec(&format!(
            "- review: Review a diff. Use when asked.\n- explain: Explain a file\n- long: {}",
            "word ".repeat(30)
        ));
        let small = shrink(spec);
        let lines: Vec<&str> = small.description.lines().collect();
        assert_eq!(
            lines[..3],
            [
                "Load a skill, then follow it:",
                "- review: Review a diff.",
                "- explain: Explain a file"
            ]
        );
        assert!(
            lines[3].starts_with("- long: word") && lines[3].ends_with('…'),
            "{lines:?}"
        );
        assert_eq!(lines[3].chars().count(), CATALOG_ENTRY_CHARS);
    }

    #[test]
    fn a_small_window_leaves_out_the_patch_lock_and_todo_tools() {
        let mut tools = crate::tools::specs();
        tools.push(crate::tools::todo::spec());
        tools.push(crate::tools::session_tools::lock_spec());
        let names: Vec<String> = for_small_window(tools)
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(
            names,
            [
                "get_repo_info",
                "Glob",
                "Read",
                "Grep",
                "Write",
                "Edit",
                "Bash",
                "capture_screenshot"
            ]
        );
    }

    #[test]
    fn small_means_under_8k_and_known() {
        assert!(is_small(Some(2_048)) && is_small(Some(8_191)));
        assert!(!is_small(Some(8_192)) && !is_small(None));
    }
}
