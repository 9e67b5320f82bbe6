//! Images for a model that takes none: the history as such a model reads it (each image a
//! note saying it was left out) and the provider wrapper that sends it so. The image types
//! themselves are the shared `protocol::image`'s, re-exported here.

use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;

pub use crate::protocol::image::*;

use super::{ChatMessage, ChatRequest, EventSink, LlmError, Provider};

/// The history as a model without images reads it: each message's images replaced by a
/// line saying they were left out and how to send them. Borrowed as it is when there are
/// none.
pub fn as_notes<'a>(messages: &'a [ChatMessage], model_id: &str) -> Cow<'a, [ChatMessage]> {
    if messages.iter().all(|m| m.images.is_empty()) {
        return Cow::Borrowed(messages);
    }
    let owned = messages
        .iter()
        .map(|m| {
            if m.images.is_empty() {
                return m.clone();
            }
            let note = left_out(m.images.len(), model_id);
            let content = match m.content.as_str() {
                "" => note,
                text => format!("{text}\n{note}"),
            };
            ChatMessage {
                content: content.into(),
                images: Vec::new(),
                ..m.clone()
            }
        })
        .collect();
    Cow::Owned(owned)
}

/// The note in place of `count` images.
fn left_out(count: usize, model_id: &str) -> String {
    let what = match count {
        1 => "1 image".to_string(),
        n => format!("{n} images"),
    };
    format!(
        "[{what} not shown: model `{model_id}` is set to take no images \
         (`images = true` on its [[models]] entry in linggen-agent.toml sends them)]"
    )
}

/// A provider for a model that takes no images: requests go to `inner` with each image
/// replaced by a note (see [`as_notes`]). Wrapped around the provider when the router
/// builds it, so every request to the model goes through it, whoever makes it.
pub struct TextOnly {
    inner: Arc<dyn Provider>,
    model_id: String,
}

impl TextOnly {
    pub fn new(inner: Arc<dyn Provider>, model_id: &str) -> TextOnly {
        TextOnly {
            inner,
            model_id: model_id.to_string(),
        }
    }
}

#[async_trait]
impl Provider for TextOnly {
    async fn chat(&self, request: ChatRequest<'_>, sink: EventSink<'_>) -> Result<(), LlmError> {
        let messages = as_notes(request.messages, &self.model_id);
        let request = ChatRequest {
            messages: &messages,
            ..request
        };
        self.inner.chat(request, sink).await
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    async fn context_window(&self) -> Option<u32> {
        self.inner.context_window().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference MCP server's 20×20 logo, cut to its header.
    const PNG_20X20: &str = "iVBORw0KGgoAAAANSUhEUgAAABQAAAAUCAYAAACNiR0N";

    #[test]
    fn a_model_without_images_reads_a_note_and_the_history_keeps_them() {
        let image = Image::from_base64("image/png", PNG_20X20.into()).unwrap();
        let call = super::super::ToolCall {
            id: "c1".into(),
            name: "mcp__s__shot".into(),
            arguments: serde_json::json!({}),
        };
        let plain = vec![ChatMessage::user("look")];
        assert!(matches!(as_notes(&plain, "m"), Cow::Borrowed(_)));
        let history = vec![
            ChatMessage::user("look"),
            ChatMessage::tool_result(&call, "[image image/png, 1 KB]", false)
                .with_images(vec![image.clone(), image]),
        ];
        let sent = as_notes(&history, "qwen");
        assert!(sent.iter().all(|m| m.images.is_empty()));
        assert_eq!(
            sent[1].content,
            "[image image/png, 1 KB]\n[2 images not shown: model `qwen` is set to take no \
             images (`images = true` on its [[models]] entry in linggen-agent.toml sends them)]"
        );
        assert_eq!(sent[1].tool_call_id.as_deref(), Some("c1"));
        assert_eq!(history[1].images.len(), 2);
    }
}
