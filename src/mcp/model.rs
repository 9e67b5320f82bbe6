//! The MCP messages linggen reads and writes, as the specification's schema names them
//! (camelCase on the wire): tools, their results, prompts and the handshake. Only what
//! linggen uses is typed; a field it does not read is skipped, and a content block of a
//! kind it does not know reads as [`ContentBlock::Unknown`] rather than failing the result.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON object: a tool's arguments, a schema.
pub type JsonObject = serde_json::Map<String, Value>;

/// The protocol versions linggen speaks, newest first. A client gets the version it asked
/// for when it is one of these, else the newest (the specification's negotiation).
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The newest protocol version linggen speaks.
pub const LATEST_PROTOCOL_VERSION: &str = PROTOCOL_VERSIONS[0];

/// A program's name and version, as each side introduces itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Implementation {
    pub name: String,
    #[serde(default)]
    pub version: String,
}

impl Implementation {
    pub fn linggen() -> Implementation {
        Implementation {
            name: "linggen".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// The server's answer to `initialize`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    #[serde(default)]
    pub protocol_version: String,
    /// What the server offers (`tools`, `prompts`, …): only which keys exist matters here.
    #[serde(default)]
    pub capabilities: JsonObject,
    #[serde(default)]
    pub server_info: Option<Implementation>,
    /// How to use its tools and resources, for the model's system prompt.
    #[serde(default)]
    pub instructions: Option<String>,
}

/// One tool a server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments' JSON Schema; always an object (`{"type": "object"}` when a server
    /// left it out, so that a model's API takes the tool).
    #[serde(default = "any_object")]
    pub input_schema: JsonObject,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
}

fn any_object() -> JsonObject {
    JsonObject::from_iter([("type".to_string(), Value::from("object"))])
}

/// What a tool says of itself; hints, never trusted for safety. A hint of the wrong type
/// (`"yes"`) reads as no hint: it must not cost the server its whole tool list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub title: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub read_only_hint: Option<bool>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub destructive_hint: Option<bool>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub idempotent_hint: Option<bool>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub open_world_hint: Option<bool>,
}

/// `T`, or `None` when the value is of another type.
fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).ok())
}

/// A `tools/call` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
}

impl CallToolResult {
    pub fn success(content: Vec<ContentBlock>) -> CallToolResult {
        CallToolResult {
            content,
            structured_content: None,
            is_error: Some(false),
        }
    }

    pub fn error(content: Vec<ContentBlock>) -> CallToolResult {
        CallToolResult {
            content,
            structured_content: None,
            is_error: Some(true),
        }
    }
}

/// One piece of a result or a prompt message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text(TextContent),
    Image(MediaContent),
    Audio(MediaContent),
    ResourceLink(ResourceLink),
    Resource(EmbeddedResource),
    /// A kind this version of linggen does not read.
    #[serde(other)]
    Unknown,
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> ContentBlock {
        ContentBlock::Text(TextContent { text: text.into() })
    }

    pub fn as_text(&self) -> Option<&TextContent> {
        match self {
            ContentBlock::Text(text) => Some(text),
            _ => None,
        }
    }

    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> ContentBlock {
        ContentBlock::Image(MediaContent {
            data: data.into(),
            mime_type: mime_type.into(),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    pub text: String,
}

/// An image or an audio clip: base64 data and its media type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MediaContent {
    pub data: String,
    #[serde(default)]
    pub mime_type: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceLink {
    pub uri: String,
    #[serde(default)]
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    pub resource: ResourceContents,
}

/// A resource's contents: text, or base64 bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    Text {
        uri: String,
        text: String,
        #[serde(default, rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    Blob {
        uri: String,
        blob: String,
        #[serde(default, rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
}

/// One resource a server lists (`resources/list`): data it offers by URI, read with
/// `resources/read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    pub uri: String,
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// A `resources/read` result.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ReadResourceResult {
    #[serde(default)]
    pub contents: Vec<ResourceContents>,
}

/// One prompt a server offers (a `/mcp__SERVER__PROMPT` command).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptArgument {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

/// A `prompts/get` result.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct GetPromptResult {
    #[serde(default)]
    pub messages: Vec<PromptMessage>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PromptMessage {
    pub content: ContentBlock,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_read_every_kind_and_skip_what_is_unknown() {
        let result: CallToolResult = serde_json::from_value(json!({
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "file:///a", "name": "a"},
                {"type": "resource", "resource": {"uri": "file:///b", "text": "b"}},
                {"type": "resource", "resource": {"uri": "file:///c", "blob": "Yw=="}},
                {"type": "hologram", "depth": 3}
            ],
            "isError": true
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(result.content[0], ContentBlock::text("hi"));
        assert_eq!(result.content[1], ContentBlock::image("AAAA", "image/png"));
        assert!(matches!(&result.content[3], ContentBlock::Resource(r)
            if matches!(&r.resource, ResourceContents::Text { text, .. } if text == "b")));
        assert!(matches!(&result.content[4], ContentBlock::Resource(r)
            if matches!(r.resource, ResourceContents::Blob { .. })));
        assert_eq!(result.content[5], ContentBlock::Unknown);
        assert_eq!(result.is_error, Some(true));
    }

    #[test]
    fn a_hint_of_the_wrong_type_is_no_hint_and_keeps_the_tool() {
        let tool: Tool = serde_json::from_value(json!({
            "name": "weird",
            "annotations": {"readOnlyHint": "yes", "destructiveHint": true, "title": 3}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            Value::Object(tool.input_schema.clone()),
            json!({"type": "object"})
        );
        let hints = tool.annotations.unwrap_or_default();
        assert_eq!(hints.read_only_hint, None);
        assert_eq!(hints.destructive_hint, Some(true));
        assert_eq!(hints.title, None);
    }

    #[test]
    fn a_tool_is_written_as_the_specification_names_its_fields() {
        let tool = Tool {
            name: "Read".into(),
            title: None,
            description: Some("reads".into()),
            input_schema: JsonObject::new(),
            annotations: Some(ToolAnnotations {
                read_only_hint: Some(true),
                ..Default::default()
            }),
        };
        let written = serde_json::to_value(&tool).unwrap_or_default();
        assert_eq!(
            written,
            json!({"name": "Read", "description": "reads", "inputSchema": {},
                   "annotations": {"readOnlyHint": true}})
        );
    }
}
