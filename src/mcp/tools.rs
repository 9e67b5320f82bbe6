//! An MCP server's tools as registered tools: each is offered to the model as
//! `mcp__SERVER__TOOL` with the server's schema, and a call goes to the server (started
//! again first if it had stopped). Results become what a model can read.

use std::sync::Arc;

use super::model::{CallToolResult, ContentBlock, ResourceContents, Tool};
use serde_json::Value;

use super::server::Server;
use super::tool_name;
use crate::protocol::{Image, ToolSpec};
use crate::tools::{AccessClass, ToolEntry, ToolHandler, ToolHints, ToolOutput};

/// Characters of one result handed to the model; the rest is cut with a note, like a
/// command's output.
const RESULT_CHARS: usize = 30_000;

/// One server's tool, as registered.
#[derive(Debug)]
pub struct McpTool {
    server: Arc<Server>,
    /// The tool's own name on its server (without the `mcp__SERVER__` prefix).
    tool: String,
}

/// The registry entry for `tool` of `server`.
pub fn entry(server: &Arc<Server>, tool: &Tool) -> ToolEntry {
    let annotations = tool.annotations.clone().unwrap_or_default();
    let hints = ToolHints {
        read_only: annotations.read_only_hint.unwrap_or(false),
        destructive: annotations.destructive_hint.unwrap_or(false),
        open_world: annotations.open_world_hint.unwrap_or(false),
    };
    let description = tool
        .description
        .as_deref()
        .or(tool.title.as_deref())
        .unwrap_or_default();
    ToolEntry {
        spec: ToolSpec {
            name: tool_name(server.name(), &tool.name),
            description: description.to_string(),
            parameters: Value::Object(tool.input_schema.clone()),
        },
        // A server may do anything its program or service does: no class is assumed.
        class: AccessClass::Other,
        hints,
        origin: format!("MCP server {}", server.name()),
        handler: Arc::new(McpTool {
            server: server.clone(),
            tool: tool.name.to_string(),
        }),
    }
}

#[async_trait::async_trait]
impl ToolHandler for McpTool {
    fn summarize(&self, name: &str, args: &Value) -> Result<String, ToolOutput> {
        let Value::Object(map) = args else {
            return Err(ToolOutput::error(format!(
                "`{name}` takes a JSON object of arguments"
            )));
        };
        let shown: Vec<String> = map
            .iter()
            .take(3)
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                format!("{k}={}", crate::text::one_line(&v, 40))
            })
            .collect();
        Ok(format!("{name} {}", shown.join(" ")).trim_end().to_string())
    }

    async fn run(&self, _name: &str, args: &Value) -> ToolOutput {
        let args = match args {
            Value::Object(map) => map.clone(),
            _ => Default::default(),
        };
        // A notification the server sent before this answer (its tool list changed) was
        // acted on before the answer was handed over (see `client::inbound`).
        match self.server.call(&self.tool, args).await {
            Ok(result) => output(&self.tool, result),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

/// A result as the model reads it: the text blocks in order, structured content when there
/// is no text, each image named where it was (and passed on with the text: models that take
/// images see it, see `llm::image`), a note for each audio clip and resource link.
fn output(tool: &str, result: CallToolResult) -> ToolOutput {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for block in result.content {
        match block {
            ContentBlock::Text(text) => parts.push(text.text),
            ContentBlock::Image(image) => {
                parts.push(image_part(image.mime_type, image.data, &mut images))
            }
            ContentBlock::Audio(audio) => {
                parts.push(format!("[audio {} — not shown]", audio.mime_type))
            }
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[resource {} ({})]", link.uri, link.name))
            }
            ContentBlock::Resource(embedded) => parts.push(embedded_text(&embedded.resource)),
            _ => parts.push("[content of a kind linggen does not read yet]".into()),
        }
    }
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = crate::text::cut_chars(&parts.join("\n"), RESULT_CHARS);
    let failed = result.is_error.unwrap_or(false);
    let summary = summary(tool, &text, failed, images.len());
    if failed {
        ToolOutput::error(text)
            .with_summary(summary)
            .with_images(images)
    } else {
        ToolOutput::ok(text, summary).with_images(images)
    }
}

/// An image a server sent (base64 `data` of `media_type`): kept in `images` for models that
/// take images, and named where it was; one it cannot pass on is a note saying why.
pub(super) fn image_part(media_type: String, data: String, images: &mut Vec<Image>) -> String {
    let size = (data.len() / 4 * 3).div_ceil(1024);
    match Image::from_base64(&media_type, data) {
        Ok(image) => {
            let named = format!("[image {}]", image.describe());
            images.push(image);
            named
        }
        Err(why) => format!("[image {media_type} ({size} KB) — not shown: {why}]"),
    }
}

/// `tool: 3 lines, 1 image`, or `tool failed: …`.
fn summary(tool: &str, text: &str, failed: bool, images: usize) -> String {
    let lines = crate::text::plural(text.lines().count(), "line", "lines");
    match (failed, images) {
        (true, _) => format!("{tool} failed: {}", crate::text::one_line(text, 80)),
        (false, 0) => format!("{tool}: {lines}"),
        (false, n) => format!(
            "{tool}: {lines}, {}",
            crate::text::plural(n, "image", "images")
        ),
    }
}

fn embedded_text(resource: &ResourceContents) -> String {
    match resource {
        ResourceContents::Text { uri, text, .. } => format!("[resource {uri}]\n{text}"),
        ResourceContents::Blob { uri, .. } => format!("[resource {uri} (binary, not shown)]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_joins_and_errors_stay_errors() {
        let ok = CallToolResult::success(vec![
            ContentBlock::text("Echo: hi"),
            ContentBlock::text("second"),
        ]);
        let out = output("echo", ok);
        assert_eq!(out.model, "Echo: hi\nsecond");
        assert!(!out.is_error);
        assert_eq!(out.summary, "echo: 2 lines");
        let failed = CallToolResult::error(vec![ContentBlock::text("no such repo")]);
        let out = output("get", failed);
        assert!(out.is_error);
        assert_eq!(out.summary, "get failed: no such repo");
    }

    #[test]
    fn images_go_with_the_text_that_names_them_and_bad_ones_become_notes() {
        let png = "iVBORw0KGgoAAAANSUhEUgAAABQAAAAUCAYAAACNiR0N";
        let result = CallToolResult::success(vec![
            ContentBlock::text("Here it is:"),
            ContentBlock::image(png, "image/png"),
            ContentBlock::image("PHN2Zz4=", "image/svg+xml"),
        ]);
        let out = output("shot", result);
        assert_eq!(
            out.model,
            "Here it is:\n[image image/png, 1 KB]\n[image image/svg+xml (1 KB) — not shown: \
             models take PNG, JPEG, GIF or WebP images, not image/svg+xml]"
        );
        assert_eq!(out.images.len(), 1);
        assert_eq!(out.images[0].data, png);
        assert_eq!(out.summary, "shot: 3 lines, 1 image");
    }

    #[test]
    fn structured_content_is_used_when_there_is_no_text() {
        let mut result = CallToolResult::success(Vec::new());
        result.structured_content = Some(serde_json::json!({"sum": 5}));
        assert_eq!(output("add", result).model, "{\"sum\":5}");
    }
}
