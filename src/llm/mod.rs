//! Model providers. Every provider speaks its own wire protocol but turns it into the same
//! provider-neutral stream of [`StreamEvent`]s, so the turn loop never knows which one it
//! is talking to.

pub mod anthropic;
pub mod bedrock;
pub mod discover;
pub mod error;
pub mod http;
pub mod image;
pub mod ollama;
pub mod openai;
pub mod retry;
pub mod router;
pub mod routing;
pub mod textcalls;
pub mod think;

use async_trait::async_trait;

pub use error::LlmError;
pub use image::{Image, ImageFormat};
// The conversation's types live in `protocol` (the bottom of the map); the providers and
// the session name them through here as before.
pub use crate::protocol::{ChatMessage, Role, ToolCall, ToolSpec, Usage};

/// What a provider reports while a response streams in.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A piece of the visible answer.
    Text(String),
    /// A piece of reasoning ("thinking") output.
    Thinking(String),
    /// A complete tool call (arguments fully assembled).
    ToolCall(ToolCall),
    /// Token usage for this response.
    Usage(Usage),
    /// The response stopped because it reached the output-token limit (`max_tokens`), not
    /// because the model was done.
    CutShort,
}

/// Everything a provider needs for one request.
#[derive(Debug, Clone, Copy)]
pub struct ChatRequest<'a> {
    /// The full history, system prompt first.
    pub messages: &'a [ChatMessage],
    pub tools: &'a [ToolSpec],
    /// A JSON schema the answer must follow (auto mode's actions). OpenAI-compatible
    /// servers and Ollama constrain their decoding to it, which is what lets a small local
    /// model answer with a valid action at all; the others only have the instructions.
    pub answer_schema: Option<&'a serde_json::Value>,
    /// Sampling temperature; `None`: the server's default. Low for answers that must be
    /// exact rather than varied (the read curator's line ranges).
    pub temperature: Option<f32>,
}

/// The sink a provider pushes [`StreamEvent`]s into as they arrive.
pub type EventSink<'a> = &'a mut (dyn FnMut(StreamEvent) + Send);

/// A chat model behind some wire protocol.
#[async_trait]
pub trait Provider: Send + Sync {
    /// Streams one response into `sink`. Returns once the response is complete.
    /// Dropping the future aborts the request.
    async fn chat(&self, request: ChatRequest<'_>, sink: EventSink<'_>) -> Result<(), LlmError>;

    /// A short description for error messages: the model name and its URL.
    fn describe(&self) -> String;

    /// The context window in tokens, when the provider knows it (configured or discovered,
    /// e.g. Ollama's `/api/show`). Used for `ContextUsage` reporting.
    async fn context_window(&self) -> Option<u32> {
        None
    }
}
