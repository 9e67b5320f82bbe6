//! What a [`ScriptedServer`](super::ScriptedServer) answers: one [`Step`] per chat request,
//! served in the order the requests arrive.

use std::time::Duration;

use serde_json::Value;

/// The wire protocol a scripted server speaks, one per provider family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OpenAI chat completions (also llama.cpp, LM Studio, vLLM).
    OpenAi,
    Ollama,
    /// Anthropic Messages.
    Anthropic,
    /// AWS Bedrock ConverseStream (not in `ALL`: it needs AWS credentials set up).
    Bedrock,
}

impl Protocol {
    pub const ALL: [Protocol; 3] = [Protocol::OpenAi, Protocol::Ollama, Protocol::Anthropic];

    /// The `provider` value of a `[[models]]` entry reached by this protocol.
    pub fn provider(self) -> &'static str {
        match self {
            Protocol::OpenAi => "openai",
            Protocol::Ollama => "ollama",
            Protocol::Anthropic => "anthropic",
            Protocol::Bedrock => "bedrock",
        }
    }

    /// Whether a `[[models]]` entry for this protocol names an API key variable.
    pub fn uses_api_key(self) -> bool {
        match self {
            Protocol::OpenAi | Protocol::Anthropic => true,
            Protocol::Ollama | Protocol::Bedrock => false,
        }
    }
}

/// One tool call in a scripted reply. `arguments` is the raw JSON text the model "writes",
/// so a test can also script arguments that are not valid JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: String,
    /// The id the server sends for this call; `None`: a fresh vendor-shaped one. Ignored
    /// for Ollama, whose wire has no ids.
    pub id: Option<String>,
}

/// Token counts reported for a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u32,
    pub output_tokens: u32,
}

/// One scripted model response. Build it with the constructors (`Reply::text`,
/// `Reply::tool`, ...) and adjust it with the `with_*`/knob methods; every protocol renders
/// the same reply in its own wire format.
///
/// Order on the wire: reasoning, then text, then tool calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    pub reasoning: Option<String>,
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    /// Stop because of the token limit (`length` / `max_tokens`) instead of a normal stop.
    pub truncated: bool,
    /// Reported token counts; when `None` they are derived from the request and reply sizes.
    pub usage: Option<Usage>,
    /// Bytes of text per content delta; when `None`, text is split like a tokenizer would:
    /// word by word, long runs cut at 16 bytes.
    pub delta_bytes: Option<usize>,
    /// Maximum bytes per HTTP chunk (and TCP write) of a streamed body: the encoded stream
    /// is cut regardless of event, line or UTF-8 boundaries, and every piece is its own
    /// chunk, so the client's body stream yields pieces of at most this size whatever TCP
    /// does. When `None`, one chunk per event. Costs a few µs per piece: 1 MB of text with
    /// default deltas is ~42 MB of SSE, so pair tiny writes with large `delta_bytes` when
    /// the volume is big.
    pub write_bytes: Option<usize>,
    /// Pause before every streamed event after the first.
    pub chunk_delay: Option<Duration>,
}

impl Reply {
    /// A plain text answer, streamed in several deltas.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply {
            text: text.into(),
            ..Reply::default()
        }
    }

    /// A text answer whose streamed body reaches the client in pieces of at most
    /// `chunk_bytes` bytes (see [`Reply::write_bytes`]); content deltas stay token-like.
    pub fn text_chunked(text: impl Into<String>, chunk_bytes: usize) -> Reply {
        Reply::text(text).write_bytes(chunk_bytes)
    }

    /// Reasoning (`reasoning_content` / `thinking`) followed by a text answer.
    pub fn thinking(reasoning: impl Into<String>, text: impl Into<String>) -> Reply {
        Reply::text(text).with_reasoning(reasoning)
    }

    /// A single tool call with no text.
    pub fn tool(name: impl Into<String>, arguments: Value) -> Reply {
        Reply::default().with_tool(name, arguments)
    }

    /// Several tool calls in one response, in order.
    pub fn tools<N: Into<String>>(calls: impl IntoIterator<Item = (N, Value)>) -> Reply {
        calls
            .into_iter()
            .fold(Reply::default(), |reply, (name, args)| {
                reply.with_tool(name, args)
            })
    }

    /// Some text, then one tool call.
    pub fn text_then_tool(
        text: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> Reply {
        Reply::text(text).with_tool(name, arguments)
    }

    /// Some text, then several tool calls.
    pub fn text_then_tools<N: Into<String>>(
        text: impl Into<String>,
        calls: impl IntoIterator<Item = (N, Value)>,
    ) -> Reply {
        Reply {
            text: text.into(),
            ..Reply::tools(calls)
        }
    }

    /// A tool call whose arguments are sent verbatim, e.g. truncated or invalid JSON.
    pub fn tool_raw(name: impl Into<String>, raw_arguments: impl Into<String>) -> Reply {
        let mut reply = Reply::default();
        reply.tool_calls.push(ToolCall {
            name: name.into(),
            arguments: raw_arguments.into(),
            id: None,
        });
        reply
    }

    /// Adds reasoning before the text.
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Reply {
        self.reasoning = Some(reasoning.into());
        self
    }

    /// Appends a tool call after the text and any earlier calls.
    pub fn with_tool(mut self, name: impl Into<String>, arguments: Value) -> Reply {
        self.tool_calls.push(ToolCall {
            name: name.into(),
            arguments: arguments.to_string(),
            id: None,
        });
        self
    }

    /// Sends `id` for every tool call of this reply, as a provider that restarts its
    /// numbering per response would (the session must still keep calls apart).
    pub fn call_id(mut self, id: impl Into<String>) -> Reply {
        let id = id.into();
        for call in &mut self.tool_calls {
            call.id = Some(id.clone());
        }
        self
    }

    /// Stops with `length` / `max_tokens` instead of a normal stop.
    pub fn truncated(mut self) -> Reply {
        self.truncated = true;
        self
    }

    /// Reports exactly these token counts.
    pub fn usage(mut self, input_tokens: u32, output_tokens: u32) -> Reply {
        self.usage = Some(Usage {
            input_tokens,
            output_tokens,
        });
        self
    }

    /// Fixed-size content deltas of `bytes` bytes (rounded up to a char boundary).
    pub fn delta_bytes(mut self, bytes: usize) -> Reply {
        self.delta_bytes = Some(bytes.max(1));
        self
    }

    /// Streamed body cut into pieces of at most `bytes` bytes (see the field).
    pub fn write_bytes(mut self, bytes: usize) -> Reply {
        self.write_bytes = Some(bytes.max(1));
        self
    }

    /// Pause between streamed events, for tests that act while a stream is in flight.
    pub fn chunk_delay(mut self, delay: Duration) -> Reply {
        self.chunk_delay = Some(delay);
        self
    }

    /// Bytes of output the model "generated", the basis of the default output token count.
    pub(super) fn output_bytes(&self) -> usize {
        let reasoning = self.reasoning.as_deref().map_or(0, str::len);
        let calls: usize = self
            .tool_calls
            .iter()
            .map(|call| call.name.len() + call.arguments.len())
            .sum();
        reasoning + self.text.len() + calls
    }
}

/// A failure served instead of a reply. Each is rendered in the protocol's own error shape.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// This status with this body, verbatim (`Content-Type: application/json`).
    Status(u16, String),
    /// This status with `message` in the protocol's native error body
    /// (`{"error":{"message":..}}`, `{"type":"error","error":{..}}`, `{"error":".."}`).
    ApiError { status: u16, message: String },
    /// 429 with a `Retry-After` header and a native error body.
    RateLimited { retry_after_secs: u64 },
    /// Headers and the first couple of events, then the connection closes without the
    /// stream terminator (and without the final HTTP chunk).
    DisconnectMidStream,
    /// One event whose data is not JSON, amid otherwise valid events; the stream then ends
    /// normally.
    MalformedChunk,
    /// An error event inside a 200 stream (`data: {"error":..}`, `event: error`,
    /// `{"error":".."}`), after which the stream ends.
    StreamError(String),
    /// Headers and the first couple of events, then silence with the connection open.
    StallMidStream,
    /// The request is read and recorded, and never answered.
    Hang,
}

impl Fault {
    /// A native error body with this status and message.
    pub fn api_error(status: u16, message: impl Into<String>) -> Fault {
        Fault::ApiError {
            status,
            message: message.into(),
        }
    }

    /// A 429 asking the client to retry after `secs` seconds.
    pub fn rate_limited(secs: u64) -> Fault {
        Fault::RateLimited {
            retry_after_secs: secs,
        }
    }
}

/// One entry of a script.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Reply(Reply),
    Fault(Fault),
    /// Serves this reply to this and every later chat request; the script never runs out.
    /// Meant for benchmarks that send the same request many times.
    Repeat(Reply),
}

impl Step {
    pub fn repeat(reply: Reply) -> Step {
        Step::Repeat(reply)
    }
}

impl From<Reply> for Step {
    fn from(reply: Reply) -> Step {
        Step::Reply(reply)
    }
}

impl From<Fault> for Step {
    fn from(fault: Fault) -> Step {
        Step::Fault(fault)
    }
}
