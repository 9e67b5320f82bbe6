//! A context window enforced as llama.cpp's server enforces it: the prompt is counted,
//! and one over `n_ctx` tokens is answered `400` with llama.cpp's own error body instead of
//! an answer. The count is the server's, not the client's: text at `chars_per_token`
//! characters a token, plus a few tokens per message for the chat template, the tool
//! definitions included only when `counts_tools` (llama.cpp leaves them out for a model whose
//! template has no tools). Answers report that count as their usage, as llama.cpp does.

use serde_json::Value;

#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub n_ctx: u32,
    pub chars_per_token: f64,
    pub counts_tools: bool,
}

/// The chat template's tokens around each message (`<|im_start|>role\n … <|im_end|>\n`).
const TEMPLATE_TOKENS_PER_MESSAGE: u64 = 5;

impl Window {
    /// A window of `n_ctx` tokens counting 3 characters a token (closer to code and numbers
    /// than the usual 4, so a client that assumes 4 underestimates) and the tools.
    pub fn llama_cpp(n_ctx: u32) -> Window {
        Window {
            n_ctx,
            chars_per_token: 3.0,
            counts_tools: true,
        }
    }

    /// The prompt tokens of a chat request body (OpenAI's shape).
    pub fn count(&self, body: &Value) -> u64 {
        let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
        let mut chars = messages.iter().map(text_chars).sum::<usize>();
        if self.counts_tools {
            chars += body.get("tools").map_or(0, |t| t.to_string().len());
        }
        (chars as f64 / self.chars_per_token).ceil() as u64
            + TEMPLATE_TOKENS_PER_MESSAGE * messages.len() as u64
    }

    /// llama.cpp's answer to a prompt over the window, byte for byte in its fields.
    pub fn rejection(&self, tokens: u64) -> String {
        serde_json::json!({"error": {
            "code": 400,
            "message": format!(
                "request ({tokens} tokens) exceeds the available context size ({} tokens), try increasing it",
                self.n_ctx
            ),
            "type": "exceed_context_size_error",
            "n_prompt_tokens": tokens,
            "n_ctx": self.n_ctx,
        }})
        .to_string()
    }
}

/// The characters of every string in a message: content, tool calls' names and arguments.
fn text_chars(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len(),
        Value::Array(items) => items.iter().map(text_chars).sum(),
        Value::Object(map) => map
            .iter()
            .filter(|(key, _)| key.as_str() != "role" && key.as_str() != "id")
            .map(|(_, v)| text_chars(v))
            .sum(),
        _ => 0,
    }
}
