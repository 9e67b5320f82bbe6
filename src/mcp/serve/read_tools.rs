//! The tools `linggen mcp serve` lists: `task`, then linggen's read-only tools under their
//! own names and schemas, run directly in the sessions' tool context.

use crate::mcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::TASK_TOOL;
use crate::tools::{self, Access, ToolContext, ToolName};

/// The tools offered as they are: each only reads inside the root. The session's own tools
/// (`Skill`, `delegate_to_agent`, `lock_paths`…) also prepare as reads, so being a read is
/// not enough to be offered: only these names are.
const READ_ONLY: [ToolName; 4] = [
    ToolName::Read,
    ToolName::Grep,
    ToolName::Glob,
    ToolName::RepoInfo,
];

/// The read-only tools' names, as listed.
pub(super) fn names() -> Vec<&'static str> {
    READ_ONLY.iter().map(|tool| tool.name()).collect()
}

/// Whether `name` is one of the read-only tools offered (exactly; no aliases).
pub(super) fn offers(name: &str) -> bool {
    READ_ONLY.iter().any(|tool| tool.name() == name)
}

/// Every tool, `task` first.
pub(super) fn listed() -> Vec<Tool> {
    let mut listed = vec![task_tool()];
    listed.extend(
        tools::specs()
            .into_iter()
            .filter(|spec| offers(&spec.name))
            .map(|spec| Tool {
                name: spec.name,
                title: None,
                description: Some(spec.description),
                input_schema: schema(spec.parameters),
                annotations: Some(read_only_hints()),
            }),
    );
    listed
}

fn task_tool() -> Tool {
    let parameters = json!({
        "type": "object",
        "properties": {
            "prompt": {
                "type": "string",
                "description": "The task, as `linggen -p` takes it: plain text, `/skill args`, \
                                or `@agent text`."
            },
            "agent": {
                "type": "string",
                "description": "The agent the session starts with (as `--agent`); default: ling."
            }
        },
        "required": ["prompt"],
        "additionalProperties": false
    });
    let description = "Run a task in this workspace with linggen, as `linggen -p` runs one: \
                       a new session each call, the same safety floor and permission rules, \
                       and calls that need a person's approval are asked through elicitation \
                       when the client supports it, else denied. Returns the final \
                       answer and the files the task changed.";
    Tool {
        name: TASK_TOOL.into(),
        title: None,
        description: Some(description.into()),
        input_schema: schema(parameters),
        annotations: None,
    }
}

fn read_only_hints() -> ToolAnnotations {
    ToolAnnotations {
        title: None,
        read_only_hint: Some(true),
        destructive_hint: Some(false),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
    }
}

/// A tool's schema as MCP lists one. Every schema here is an object; anything else would
/// be a bug in a tool's spec, and then the tool takes any object rather than failing the
/// list.
fn schema(parameters: Value) -> JsonObject {
    match parameters {
        Value::Object(schema) => schema,
        _ => JsonObject::from_iter([("type".to_string(), Value::from("object"))]),
    }
}

/// Runs read-only tool `name` (one that [`offers`] names) as a session would: arguments
/// validated and paths confined by [`tools::prepare`], and refused unless the call only
/// reads. `cancel` (the client cancelled the call) stops it.
pub(super) async fn call(
    ctx: &ToolContext,
    name: &str,
    arguments: JsonObject,
    cancel: &CancellationToken,
) -> CallToolResult {
    let prepared = match tools::prepare_off_runtime(ctx, name, &Value::Object(arguments)).await {
        Ok(prepared) => prepared,
        Err(refused) => return text_result(refused.model, true),
    };
    if prepared.access != Access::Read || !offers(prepared.tool.name()) {
        return text_result(format!("`{name}` is not a read-only tool"), true);
    }
    tokio::select! {
        output = tools::run(ctx, &prepared) => text_result(output.model, output.is_error),
        () = cancel.cancelled() => text_result(format!("`{name}` was cancelled"), true),
    }
}

fn text_result(text: String, is_error: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(text)];
    match is_error {
        true => CallToolResult::error(content),
        false => CallToolResult::success(content),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arguments(value: Value) -> JsonObject {
        value.as_object().cloned().unwrap()
    }

    fn text(result: &CallToolResult) -> String {
        result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect()
    }

    #[test]
    fn task_comes_first_then_the_read_only_tools_with_their_schemas() {
        let listed = listed();
        let names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["task", "get_repo_info", "Glob", "Read", "Grep"]);
        let read = listed.iter().find(|t| t.name == "Read").unwrap();
        assert!(read.input_schema.contains_key("properties"));
        assert_eq!(
            read.annotations.as_ref().and_then(|a| a.read_only_hint),
            Some(true)
        );
    }

    #[tokio::test]
    async fn reads_inside_the_root_and_refuses_what_is_not_a_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.txt"), "hello\n").unwrap();
        let ctx = ToolContext::new(&root);
        let cancel = CancellationToken::new();

        let read = call(&ctx, "Read", arguments(json!({"path": "a.txt"})), &cancel).await;
        assert_eq!(read.is_error, Some(false));
        assert!(text(&read).contains("hello"));

        let outside = call(
            &ctx,
            "Read",
            arguments(json!({"path": "/etc/hostname"})),
            &cancel,
        );
        assert_eq!(outside.await.is_error, Some(true));

        // Never offered, and refused even when asked for by name.
        assert!(!offers("Write") && !offers("Bash") && !offers("delegate_to_agent"));
        let write = arguments(json!({"path": "b.txt", "content": "x"}));
        let refused = call(&ctx, "Write", write, &cancel).await;
        assert_eq!(refused.is_error, Some(true));
        assert!(!root.join("b.txt").exists());
    }
}
