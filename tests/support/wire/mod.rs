//! How each protocol puts a scripted reply on the wire: routes, streamed events, complete
//! (non-streaming) bodies and error shapes, byte for byte like the real servers.

mod anthropic;
pub mod bedrock;
mod ollama;
mod openai;
mod pairing;

use std::collections::BTreeMap;

use serde_json::Value;

use super::ServerOptions;
use super::http::HttpRequest;
use super::script::{Protocol, Reply, Usage};

/// Everything a renderer needs to answer one chat request.
pub(super) struct Turn<'a> {
    pub reply: &'a Reply,
    pub request: &'a Value,
    /// The model the request named, echoed back like real servers do.
    pub model: String,
    pub response_id: String,
    /// One id per tool call (empty for Ollama, which has none).
    pub tool_ids: Vec<String>,
    pub usage: Usage,
    pub created_unix: u64,
}

/// A rendered stream: encoded events in order, terminator included.
pub(super) struct Stream {
    pub events: Vec<Vec<u8>>,
    /// How many events precede the first content event (role chunk, `message_start`, ...).
    pub prelude: usize,
}

/// What a request path means to a protocol.
pub(super) enum Route {
    Chat,
    Json(Value),
    Text(&'static str),
    NotFound,
}

pub(super) fn route(
    protocol: Protocol,
    method: &str,
    path: &str,
    body: &Value,
    options: &ServerOptions,
) -> Route {
    match protocol {
        Protocol::OpenAi => openai::route(method, path, options),
        Protocol::Ollama => ollama::route(method, path, body, options),
        Protocol::Anthropic => anthropic::route(method, path, options),
        Protocol::Bedrock => bedrock::route(method, path, options),
    }
}

/// Whether a chat path is one this protocol serves; used to pick chat bodies out of a log.
pub(super) fn is_chat_path(path: &str) -> bool {
    path.ends_with("/chat/completions")
        || path.ends_with("/api/chat")
        || path.ends_with("/v1/messages")
        || path.ends_with("/converse-stream")
}

/// Rejects requests the real server would reject before generating anything.
pub(super) fn validate(
    protocol: Protocol,
    request: &HttpRequest,
    body: &Value,
) -> Result<(), String> {
    if !body.get("messages").is_some_and(Value::is_array) {
        return Err("messages: field required (an array)".to_string());
    }
    match protocol {
        Protocol::Anthropic => {
            anthropic::validate(&request.headers, body)?;
            pairing::anthropic(body)
        }
        Protocol::Bedrock => bedrock::validate(request, body),
        Protocol::OpenAi => pairing::openai(body),
        Protocol::Ollama => Ok(()),
    }
}

/// Whether the request asked for a streamed answer, with each protocol's default.
pub(super) fn wants_stream(protocol: Protocol, request: &Value) -> bool {
    let stream = request.get("stream").and_then(Value::as_bool);
    match protocol {
        Protocol::Ollama => stream != Some(false),
        Protocol::OpenAi | Protocol::Anthropic => stream == Some(true),
        // The path says it: only `converse-stream` is routed.
        Protocol::Bedrock => true,
    }
}

pub(super) fn stream(protocol: Protocol, turn: &Turn) -> Stream {
    match protocol {
        Protocol::OpenAi => openai::stream(turn),
        Protocol::Ollama => ollama::stream(turn),
        Protocol::Anthropic => anthropic::stream(turn),
        Protocol::Bedrock => bedrock::stream(turn),
    }
}

pub(super) fn complete(protocol: Protocol, turn: &Turn) -> Value {
    match protocol {
        Protocol::OpenAi => openai::complete(turn),
        Protocol::Ollama => ollama::complete(turn),
        Protocol::Anthropic => anthropic::complete(turn),
        Protocol::Bedrock => bedrock::complete(turn),
    }
}

pub(super) fn stream_content_type(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::OpenAi | Protocol::Anthropic => "text/event-stream; charset=utf-8",
        Protocol::Ollama => "application/x-ndjson",
        Protocol::Bedrock => "application/vnd.amazon.eventstream",
    }
}

pub(super) fn error_body(protocol: Protocol, status: u16, message: &str) -> Value {
    match protocol {
        Protocol::OpenAi => openai::error_body(status, message),
        Protocol::Ollama => ollama::error_body(message),
        Protocol::Anthropic => anthropic::error_body(status, message),
        Protocol::Bedrock => bedrock::error_body(message),
    }
}

pub(super) fn stream_error_event(protocol: Protocol, message: &str) -> Vec<u8> {
    match protocol {
        Protocol::OpenAi => openai::stream_error_event(message),
        Protocol::Ollama => ollama::stream_error_event(message),
        Protocol::Anthropic => anthropic::stream_error_event(message),
        Protocol::Bedrock => bedrock::stream_error_event(message),
    }
}

pub(super) fn malformed_event(protocol: Protocol) -> Vec<u8> {
    match protocol {
        Protocol::OpenAi => b"data: {\"id\":\"chatcmpl-broken\",\"choices\":[{\"delta\":{\"content\":\"oops\n\n".to_vec(),
        Protocol::Ollama => b"{\"model\":\"scripted\",\"message\":{\"role\":\"assistant\",\"content\":\"oops\n".to_vec(),
        Protocol::Bedrock => bedrock::malformed_event(),
        Protocol::Anthropic => {
            b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_del\n\n"
                .to_vec()
        }
    }
}

/// The response id and tool call ids, shaped like each vendor's. Deterministic in `seed`
/// so snapshots stay stable.
pub(super) fn response_id(protocol: Protocol, seed: u64) -> String {
    match protocol {
        Protocol::OpenAi => format!("chatcmpl-{}", alnum(seed, 29)),
        Protocol::Anthropic => format!("msg_01{}", alnum(seed, 22)),
        Protocol::Ollama | Protocol::Bedrock => String::new(),
    }
}

pub(super) fn tool_call_id(protocol: Protocol, seed: u64) -> Option<String> {
    match protocol {
        Protocol::OpenAi => Some(format!("call_{}", alnum(seed, 24))),
        Protocol::Anthropic => Some(format!("toolu_01{}", alnum(seed, 22))),
        Protocol::Bedrock => Some(format!("tooluse_{}", alnum(seed, 22))),
        Protocol::Ollama => None,
    }
}

/// The request-id header each vendor attaches to every response.
pub(super) fn request_id_header(protocol: Protocol, seed: u64) -> Vec<(&'static str, String)> {
    match protocol {
        Protocol::OpenAi => vec![("x-request-id", format!("req_{}", alnum(seed, 32)))],
        Protocol::Anthropic => vec![("request-id", format!("req_01{}", alnum(seed, 22)))],
        Protocol::Bedrock => vec![("x-amzn-requestid", alnum(seed, 36))],
        Protocol::Ollama => Vec::new(),
    }
}

fn alnum(seed: u64, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut state = seed;
    (0..len)
        .map(|_| {
            // splitmix64: cheap, well mixed, deterministic.
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            char::from(ALPHABET[(z % ALPHABET.len() as u64) as usize])
        })
        .collect()
}

/// Why a reply stopped, in a protocol's three words for cut short, done and calling tools.
fn stop_word<'a>(turn: &Turn, [cut, done, tools]: [&'a str; 3]) -> &'a str {
    if turn.reply.truncated {
        cut
    } else if turn.reply.tool_calls.is_empty() {
        done
    } else {
        tools
    }
}

/// Longest piece of text the default splitter puts in one delta.
const MAX_TOKEN_BYTES: usize = 16;

/// Splits text into content deltas: fixed-size pieces when `delta_bytes` is set, else
/// tokenizer-like pieces (a piece ends after whitespace, long runs cut at 16 bytes), so
/// words and markdown markers arrive whole but separately.
pub(super) fn deltas(text: &str, delta_bytes: Option<usize>) -> Vec<&str> {
    if let Some(bytes) = delta_bytes {
        return split_bytes(text, bytes);
    }
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut previous_was_space = false;
    for (i, c) in text.char_indices() {
        let word_starts = previous_was_space && !c.is_whitespace();
        if i > start && (word_starts || i - start >= MAX_TOKEN_BYTES) {
            pieces.push(&text[start..i]);
            start = i;
        }
        previous_was_space = c.is_whitespace();
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// Tool arguments arrive in pieces this small, so any client that parses before the call
/// is complete fails visibly.
const ARGUMENT_FRAGMENT_BYTES: usize = 7;

pub(super) fn argument_fragments(arguments: &str) -> Vec<&str> {
    split_bytes(arguments, ARGUMENT_FRAGMENT_BYTES)
}

/// Pieces of about `bytes` bytes, never splitting a char.
fn split_bytes(text: &str, bytes: usize) -> Vec<&str> {
    let bytes = bytes.max(1);
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + bytes).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(&text[start..end]);
        start = end;
    }
    pieces
}

/// The arguments as a JSON value for protocols that send objects; text that is not JSON
/// is sent as a string, which is what a confused server would do.
fn arguments_value(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_string()))
}

fn sse_data(value: &Value) -> Vec<u8> {
    format!("data: {value}\n\n").into_bytes()
}

fn sse_event(name: &str, value: &Value) -> Vec<u8> {
    format!("event: {name}\ndata: {value}\n\n").into_bytes()
}

fn ndjson(value: &Value) -> Vec<u8> {
    format!("{value}\n").into_bytes()
}
