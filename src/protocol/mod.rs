//! The data every layer shares: the conversation's messages, the tools offered to a model
//! and the images they carry. At the bottom of the module map, so the store, the tools and
//! the frontends read them without depending on the model providers (`llm`) that speak
//! them on the wire, as codex keeps its `protocol` crate. With them, the wire's framing
//! that several layers read: JSON-RPC (`jsonrpc`, for MCP and ACP), lines and NDJSON with
//! their 64 MiB bound (`ndjson`), and server-sent events (`sse`, for the model providers'
//! streams and MCP's HTTP transports).

pub mod image;
pub mod jsonrpc;
pub mod ndjson;
pub mod sse;

use serde::{Deserialize, Serialize};

pub use image::{Image, ImageFileError, ImageFormat};

use crate::shared_text::SharedText;

/// Who wrote a message in the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "system" => Some(Role::System),
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "tool" => Some(Role::Tool),
            _ => None,
        }
    }
}

/// A tool call requested by the model. `arguments` is always a JSON object once it leaves
/// a provider (streamed argument fragments are assembled and parsed there).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: serde_json::Value,
}

/// One message of the provider-neutral conversation history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    /// Shared, not copied, with the events that announce the message (see
    /// [`SharedText`]).
    #[serde(default)]
    pub content: SharedText,
    /// Tool calls made by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For `Role::Tool`: the id of the call this message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For `Role::Tool`: the name of the tool that produced it (Ollama wants it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// For `Role::Tool`: whether the tool failed (Anthropic's `is_error`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Images that go with the text: what a tool returned (the text names each where it
    /// was); a person's attachments later. Sent to models that take images, a note to the
    /// others (see [`image`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    /// The run that recorded the message, for messages loaded from the store (`--continue`):
    /// frontends attribute resumed tool results by it. `None` while a run holds the message
    /// (the run publishes its own id); never sent to a provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

impl ChatMessage {
    pub fn system(content: impl Into<SharedText>) -> Self {
        Self::text(Role::System, content)
    }

    pub fn user(content: impl Into<SharedText>) -> Self {
        Self::text(Role::User, content)
    }

    pub fn assistant(content: impl Into<SharedText>, tool_calls: Vec<ToolCall>) -> Self {
        ChatMessage {
            tool_calls,
            ..Self::text(Role::Assistant, content)
        }
    }

    pub fn tool_result(call: &ToolCall, content: impl Into<SharedText>, is_error: bool) -> Self {
        ChatMessage {
            tool_call_id: Some(call.id.clone()),
            tool_name: Some(call.name.clone()),
            is_error,
            ..Self::text(Role::Tool, content)
        }
    }

    pub fn with_images(mut self, images: Vec<Image>) -> Self {
        self.images = images;
        self
    }

    fn text(role: Role, content: impl Into<SharedText>) -> Self {
        ChatMessage {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
            is_error: false,
            images: Vec::new(),
            run_id: None,
        }
    }
}

/// A tool offered to the model: name, description and a JSON Schema for its arguments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

impl ToolSpec {
    /// The characters of its name, description and parameter schema: what it adds to a
    /// prompt, before any wire format's own punctuation.
    pub fn chars(&self) -> usize {
        self.name.len() + self.description.len() + self.parameters.to_string().len()
    }
}

/// Token counts reported by the server (or estimated when it reports none).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Time spent receiving the model's output (first piece to last), in milliseconds: the
    /// speed a person cares about, without approvals, tools or the wait for the first token.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub generation_ms: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.generation_ms += other.generation_ms;
    }
}
