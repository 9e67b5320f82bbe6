//! Anthropic's Messages API (`POST /v1/messages`, streamed as named SSE events). Besides
//! api.anthropic.com, llama.cpp's server speaks it too.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::error::ErrorKind;
use super::http::{Endpoint, FrameProtocol, emit, join_url, json_error_message, truncate_chars};
use super::retry::RetryPolicy;
use super::textcalls::parse_arguments;
use super::{
    ChatMessage, ChatRequest, EventSink, Image, LlmError, Provider, Role, StreamEvent, ToolCall,
    Usage,
};
use crate::config::model::ModelConfig;
use crate::protocol::sse::{SseDecoder, SseEvent};

/// The API version this code speaks; the header is mandatory.
const API_VERSION: &str = "2023-06-01";

/// The API requires a limit. 8192 is what every current Claude model allows without beta
/// headers, and far more than one turn of an agent needs.
const MAX_TOKENS: u32 = 8192;

/// Every current Claude model has a 200k window; used when the config gives none and the
/// URL is Anthropic's own.
const CLAUDE_CONTEXT_WINDOW: u32 = 200_000;

pub struct AnthropicProvider {
    endpoint: Endpoint,
    base_url: String,
    messages_url: String,
    api_key: Option<String>,
    context_window: Option<u32>,
    max_tokens: Option<u32>,
}

impl AnthropicProvider {
    pub fn new(cfg: &ModelConfig, http: reqwest::Client) -> Self {
        let context_window = cfg.context_window.or_else(|| {
            cfg.url
                .contains("api.anthropic.com")
                .then_some(CLAUDE_CONTEXT_WINDOW)
        });
        AnthropicProvider {
            endpoint: Endpoint::for_model(cfg, http),
            base_url: cfg.url.clone(),
            messages_url: messages_url(&cfg.url),
            api_key: cfg.api_key(),
            context_window,
            max_tokens: cfg.max_tokens,
        }
    }

    /// Replaces the default retry policy (tests use a fast one).
    pub fn with_retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.endpoint.set_retry_policy(retry);
        self
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = vec![("anthropic-version", API_VERSION.to_string())];
        if let Some(key) = &self.api_key {
            headers.push(("x-api-key", key.clone()));
        }
        headers
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    async fn chat(&self, request: ChatRequest<'_>, sink: EventSink<'_>) -> Result<(), LlmError> {
        let mut body = request_body(self.endpoint.model(), &request);
        if let Some(n) = self.max_tokens {
            body["max_tokens"] = n.into();
        }
        let mut wire = AnthropicStream::default();
        self.endpoint
            .post_stream(&self.messages_url, &body, &self.headers(), &mut wire, sink)
            .await
    }

    fn describe(&self) -> String {
        format!("{} at {}", self.endpoint.model(), self.base_url)
    }

    async fn context_window(&self) -> Option<u32> {
        self.context_window
    }
}

/// `https://api.anthropic.com` → `.../v1/messages`; a URL already ending in `/v1` (as
/// people copy it from llama.cpp's docs) is not doubled.
pub fn messages_url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/v1") {
        join_url(base, "messages")
    } else {
        join_url(base, "v1/messages")
    }
}

/// The `/v1/messages` body for a streamed request.
pub fn request_body(model: &str, request: &ChatRequest<'_>) -> Value {
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System && !m.content.is_empty())
        .map(|m| m.content.as_str())
        .collect();
    let mut body = json!({
        "model": model,
        "max_tokens": MAX_TOKENS,
        "messages": conversation(request.messages),
        "stream": true,
    });
    if !system.is_empty() {
        body["system"] = Value::String(system.join("\n\n"));
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.parameters,
                })
            })
            .collect();
    }
    body
}

/// Maps the history to content blocks. The API demands alternating roles, so tool results
/// become `tool_result` blocks of a user message and adjacent same-role messages merge.
fn conversation(messages: &[ChatMessage]) -> Vec<Value> {
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message.role {
            Role::System => continue,
            Role::User => {
                // Anthropic reads images best before the text about them.
                let mut blocks = image_blocks(&message.images);
                blocks.extend(text_block(&message.content));
                ("user", blocks)
            }
            Role::Assistant => {
                let mut blocks = text_block(&message.content);
                blocks.extend(message.tool_calls.iter().map(|call| {
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
                }));
                ("assistant", blocks)
            }
            Role::Tool => ("user", vec![tool_result(message)]),
        };
        push_turn(&mut turns, role, blocks);
    }
    turns_json(turns)
}

/// Adds a message's blocks, merged into the previous message when it has the same role:
/// Anthropic and Bedrock both demand alternating roles. Empty messages are dropped (both
/// reject them).
pub(crate) fn push_turn<'a>(
    turns: &mut Vec<(&'a str, Vec<Value>)>,
    role: &'a str,
    blocks: Vec<Value>,
) {
    if blocks.is_empty() {
        return;
    }
    match turns.last_mut() {
        Some((last, last_blocks)) if *last == role => last_blocks.extend(blocks),
        _ => turns.push((role, blocks)),
    }
}

/// `[{"role": …, "content": [blocks]}, …]`.
pub(crate) fn turns_json(turns: Vec<(&str, Vec<Value>)>) -> Vec<Value> {
    turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// A `tool_result` block: its content the text alone, or, with images, text and image
/// blocks (the text names each image where the tool returned it).
fn tool_result(message: &ChatMessage) -> Value {
    let content = if message.images.is_empty() {
        json!(message.content)
    } else {
        let mut blocks = text_block(&message.content);
        blocks.extend(image_blocks(&message.images));
        Value::Array(blocks)
    };
    json!({
        "type": "tool_result",
        "tool_use_id": message.tool_call_id.as_deref().unwrap_or_default(),
        "content": content,
        "is_error": message.is_error,
    })
}

fn image_blocks(images: &[Image]) -> Vec<Value> {
    images
        .iter()
        .map(|image| {
            json!({"type": "image", "source": {
                "type": "base64",
                "media_type": image.format.media_type(),
                "data": image.data,
            }})
        })
        .collect()
}

fn text_block(text: &str) -> Vec<Value> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![json!({"type": "text", "text": text})]
    }
}

/// A `tool_use` block whose input JSON is still arriving.
#[derive(Debug)]
struct PendingToolUse {
    id: String,
    name: String,
    partial_json: String,
    /// The `input` of `content_block_start`: normally `{}`, but a server may put the whole
    /// input there and send no deltas.
    start_input: Value,
}

/// Parses the named SSE events of a streamed message.
#[derive(Debug, Default)]
pub struct AnthropicStream {
    sse: SseDecoder,
    /// Keyed by block index, so calls still open at `message_stop` come out in order.
    tool_uses: BTreeMap<u64, PendingToolUse>,
    usage: Option<Usage>,
}

impl FrameProtocol for AnthropicStream {
    type Decoder = SseDecoder;
    const TERMINATOR: &'static str = "`message_stop`";

    fn decoder(&mut self) -> &mut SseDecoder {
        &mut self.sse
    }

    fn on_frame(&mut self, frame: &SseEvent, sink: &mut EventSink<'_>) -> Result<bool, ErrorKind> {
        self.on_event(frame, sink)
    }
}

impl AnthropicStream {
    /// Handles one event; `true` at `message_stop`.
    fn on_event(&mut self, event: &SseEvent, sink: &mut EventSink<'_>) -> Result<bool, ErrorKind> {
        let data: Value = serde_json::from_str(&event.data).map_err(|e| {
            ErrorKind::Malformed(format!(
                "the data of a `{}` event is not valid JSON ({e}): {}",
                event.event,
                truncate_chars(&event.data, 200)
            ))
        })?;
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
        // The JSON `type` is authoritative; the SSE event name is a fallback for servers
        // that leave it out.
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(&event.event);
        match kind {
            "message_start" => {
                if let Some(usage) = data.pointer("/message/usage") {
                    self.add_usage(usage);
                }
            }
            "content_block_start" => {
                let block = data.get("content_block").unwrap_or(&Value::Null);
                self.on_block_start(index, block, sink);
            }
            "content_block_delta" => {
                let delta = data.get("delta").unwrap_or(&Value::Null);
                self.on_delta(index, delta, sink);
            }
            "content_block_stop" => {
                if let Some(tool_use) = self.tool_uses.remove(&index) {
                    emit_tool_use(tool_use, sink);
                }
            }
            "message_delta" => {
                if let Some(usage) = data.get("usage") {
                    self.add_usage(usage);
                }
                if data.pointer("/delta/stop_reason").and_then(Value::as_str) == Some("max_tokens")
                {
                    emit(sink, StreamEvent::CutShort);
                }
            }
            "message_stop" => {
                for (_, tool_use) in std::mem::take(&mut self.tool_uses) {
                    emit_tool_use(tool_use, sink);
                }
                if let Some(usage) = self.usage.take() {
                    emit(sink, StreamEvent::Usage(usage));
                }
                return Ok(true);
            }
            "error" => {
                let message = json_error_message(&data).unwrap_or_else(|| data.to_string());
                return Err(ErrorKind::Server(message));
            }
            // `ping` and event types added after this was written.
            _ => {}
        }
        Ok(false)
    }

    fn on_block_start(&mut self, index: u64, block: &Value, sink: &mut EventSink<'_>) {
        let text = |key: &str| {
            block
                .get(key)
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_string)
        };
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(text) = text("text") {
                    emit(sink, StreamEvent::Text(text));
                }
            }
            Some("thinking") => {
                if let Some(thinking) = text("thinking") {
                    emit(sink, StreamEvent::Thinking(thinking));
                }
            }
            Some("tool_use") => {
                let tool_use = PendingToolUse {
                    id: text("id").unwrap_or_else(|| format!("toolu_{index}")),
                    name: text("name").unwrap_or_default(),
                    partial_json: String::new(),
                    start_input: block.get("input").cloned().unwrap_or(Value::Null),
                };
                self.tool_uses.insert(index, tool_use);
            }
            // `redacted_thinking` and server-side tool blocks carry nothing to show.
            _ => {}
        }
    }

    fn on_delta(&mut self, index: u64, delta: &Value, sink: &mut EventSink<'_>) {
        let field = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") if !field("text").is_empty() => {
                emit(sink, StreamEvent::Text(field("text").to_string()));
            }
            Some("thinking_delta") if !field("thinking").is_empty() => {
                emit(sink, StreamEvent::Thinking(field("thinking").to_string()));
            }
            Some("input_json_delta") => {
                if let Some(tool_use) = self.tool_uses.get_mut(&index) {
                    tool_use.partial_json.push_str(field("partial_json"));
                }
            }
            // `signature_delta` only matters when thinking blocks are sent back, which we
            // never do; `citations_delta` has no place in a terminal.
            _ => {}
        }
    }

    /// `message_start` carries the input count (cache reads and writes are input too, and
    /// count against the window); `message_delta` the running output count.
    fn add_usage(&mut self, usage: &Value) {
        let count = |key: &str| usage.get(key).and_then(Value::as_u64);
        let current = self.usage.get_or_insert_with(Usage::default);
        let input: u64 = [
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ]
        .iter()
        .filter_map(|key| count(key))
        .sum();
        if input > 0 {
            current.input_tokens = input;
        }
        if let Some(output) = count("output_tokens") {
            current.output_tokens = output;
        }
    }
}

fn emit_tool_use(tool_use: PendingToolUse, sink: &mut EventSink<'_>) {
    let arguments = if tool_use.partial_json.trim().is_empty() {
        match tool_use.start_input {
            input @ Value::Object(_) => input,
            _ => json!({}),
        }
    } else {
        parse_arguments(&tool_use.partial_json)
    };
    emit(
        sink,
        StreamEvent::ToolCall(ToolCall {
            id: tool_use.id,
            name: tool_use.name,
            arguments,
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::ProviderKind;
    use crate::llm::ToolSpec;
    use crate::llm::http::test_server::{Reply, fast_retry, model_config, parse_in_chunks, serve};

    fn parse(input: &str) -> (Vec<StreamEvent>, Result<bool, ErrorKind>) {
        parse_in_chunks::<AnthropicStream>(input)
    }

    fn sse(events: &[Value]) -> String {
        events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
            .collect()
    }

    fn start(index: u64, block: Value) -> Value {
        json!({"type": "content_block_start", "index": index, "content_block": block})
    }

    fn delta(index: u64, kind: &str, key: &str, value: &str) -> Value {
        json!({"type": "content_block_delta", "index": index, "delta": {"type": kind, key: value}})
    }

    fn stop(index: u64) -> Value {
        json!({"type": "content_block_stop", "index": index})
    }

    fn message_start() -> Value {
        json!({"type": "message_start", "message": {"id": "msg_01", "type": "message", "role": "assistant",
               "content": [], "model": "claude-sonnet-4-5", "stop_reason": null,
               "usage": {"input_tokens": 472, "cache_read_input_tokens": 100, "output_tokens": 2}}})
    }

    fn tool_call(id: &str, name: &str, arguments: Value) -> ToolCall {
        let (id, name) = (id.to_string(), name.to_string());
        ToolCall {
            id,
            name,
            arguments,
        }
    }

    fn call(id: &str, name: &str, arguments: Value) -> StreamEvent {
        StreamEvent::ToolCall(tool_call(id, name, arguments))
    }

    #[test]
    fn messages_url_is_not_doubled() {
        let bases = [
            "https://x.io",
            "https://x.io/",
            "http://h:1/v1",
            "http://h:1/v1/",
        ];
        let urls = bases.map(messages_url);
        let expected = ["https://x.io/v1/messages", "http://h:1/v1/messages"];
        assert_eq!(urls, [expected[0], expected[0], expected[1], expected[1]]);
    }

    #[test]
    fn request_body_merges_tool_results_and_same_role_messages() {
        let read = tool_call("toolu_1", "Read", json!({"file_path": "a.rs"}));
        let grep = tool_call("toolu_2", "Grep", json!({"pattern": "x"}));
        let messages = vec![
            ChatMessage::system("You are linggen."),
            ChatMessage::system("Project rules: be brief."),
            ChatMessage::user("Find x."),
            ChatMessage::assistant("Looking.", vec![read.clone(), grep.clone()]),
            ChatMessage::tool_result(&read, "fn a() {}", false),
            ChatMessage::tool_result(&grep, "no such pattern", true),
            ChatMessage::user("Also check b.rs"),
            ChatMessage::assistant("", vec![]),
            ChatMessage::assistant("Done.", vec![]),
        ];
        let tools = vec![ToolSpec {
            name: "Read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object"}),
        }];
        let request = ChatRequest {
            messages: &messages,
            tools: &tools,
            answer_schema: None,
            temperature: None,
        };
        let body = request_body("claude-sonnet-4-5", &request);
        assert_eq!(
            body,
            json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": 8192,
                "stream": true,
                "system": "You are linggen.\n\nProject rules: be brief.",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "Find x."}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Looking."},
                        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.rs"}},
                        {"type": "tool_use", "id": "toolu_2", "name": "Grep", "input": {"pattern": "x"}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "fn a() {}", "is_error": false},
                        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no such pattern", "is_error": true},
                        {"type": "text", "text": "Also check b.rs"},
                    ]},
                    {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
                ],
                "tools": [{"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}}],
            })
        );
        let user_only = &messages[2..3];
        let bare = request_body(
            "m",
            &ChatRequest {
                messages: user_only,
                tools: &[],
                answer_schema: None,
                temperature: None,
            },
        );
        assert!(bare.get("tools").is_none() && bare.get("system").is_none());
    }

    #[test]
    fn images_go_in_tool_results_and_user_messages_as_base64_blocks() {
        let shot = tool_call("toolu_1", "mcp__web__shot", json!({}));
        let png = crate::llm::image::test_png();
        let messages = vec![
            ChatMessage::user("What is this?").with_images(vec![png.clone()]),
            ChatMessage::assistant("", vec![shot.clone()]),
            ChatMessage::tool_result(&shot, "[image image/png, 1 KB]", false)
                .with_images(vec![png.clone()]),
        ];
        let request = ChatRequest {
            messages: &messages,
            tools: &[],
            answer_schema: None,
            temperature: None,
        };
        let body = request_body("m", &request);
        let image = json!({"type": "image", "source": {
            "type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo=",
        }});
        assert_eq!(
            body["messages"][0]["content"],
            json!([image, {"type": "text", "text": "What is this?"}])
        );
        assert_eq!(
            body["messages"][2]["content"][0],
            json!({
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": "[image image/png, 1 KB]"}, image],
                "is_error": false,
            })
        );
    }

    #[test]
    fn text_thinking_tool_use_and_usage() {
        let input = sse(&[
            message_start(),
            start(0, json!({"type": "thinking", "thinking": ""})),
            delta(0, "thinking_delta", "thinking", "I should read "),
            delta(0, "thinking_delta", "thinking", "the file."),
            delta(0, "signature_delta", "signature", "EqQBCgIYAhIM"),
            stop(0),
            json!({"type": "ping"}),
            start(1, json!({"type": "text", "text": ""})),
            delta(1, "text_delta", "text", "Let me look — "),
            delta(1, "text_delta", "text", "at it."),
            stop(1),
            start(
                2,
                json!({"type": "tool_use", "id": "toolu_01A", "name": "Read", "input": {}}),
            ),
            delta(2, "input_json_delta", "partial_json", ""),
            delta(
                2,
                "input_json_delta",
                "partial_json",
                "{\"file_path\": \"sr",
            ),
            delta(2, "input_json_delta", "partial_json", "c/main.rs\"}"),
            stop(2),
            start(
                3,
                json!({"type": "tool_use", "id": "toolu_01B", "name": "get_repo_info", "input": {}}),
            ),
            stop(3),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
                   "usage": {"output_tokens": 89}}),
            json!({"type": "message_stop"}),
        ]);
        let (events, result) = parse(&input);
        assert_eq!(result, Ok(true));
        assert_eq!(
            events,
            vec![
                StreamEvent::Thinking("I should read ".into()),
                StreamEvent::Thinking("the file.".into()),
                StreamEvent::Text("Let me look — ".into()),
                StreamEvent::Text("at it.".into()),
                call("toolu_01A", "Read", json!({"file_path": "src/main.rs"})),
                call("toolu_01B", "get_repo_info", json!({})),
                StreamEvent::Usage(Usage {
                    input_tokens: 572,
                    output_tokens: 89,
                    ..Usage::default()
                }),
            ]
        );
    }

    #[test]
    fn stream_failures() {
        let overloaded = "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n";
        assert_eq!(
            parse(overloaded).1,
            Err(ErrorKind::Server("Overloaded".into()))
        );
        let cut = sse(&[
            message_start(),
            start(0, json!({"type": "text", "text": ""})),
            delta(0, "text_delta", "text", "Hi"),
        ]);
        let (events, result) = parse(&cut);
        assert_eq!(events, vec![StreamEvent::Text("Hi".into())]);
        assert!(matches!(result, Err(ErrorKind::Disconnected(_))));
        let Err(ErrorKind::Malformed(why)) =
            parse("event: content_block_delta\ndata: {\"type\"\n\n").1
        else {
            panic!("expected Malformed")
        };
        assert!(why.contains("`content_block_delta`"), "{why}");
    }

    #[tokio::test]
    async fn talks_to_a_server_over_http() {
        let body = sse(&[
            message_start(),
            start(0, json!({"type": "text", "text": "ok"})),
            stop(0),
            json!({"type": "message_stop"}),
        ]);
        let server = serve(vec![
            Reply::json(529, r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#),
            Reply::stream("text/event-stream", &[&body]),
            Reply::json(400, r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}"#),
        ])
        .await;
        let cfg = model_config(ProviderKind::Anthropic, "claude-sonnet-4-5", server.base());
        let http = crate::llm::http::plain_client();
        let mut provider = AnthropicProvider::new(&cfg, http).with_retry_policy(fast_retry());
        provider.api_key = Some("sk-ant-test".into());
        let messages = [ChatMessage::user("hi")];
        let request = ChatRequest {
            messages: &messages,
            tools: &[],
            answer_schema: None,
            temperature: None,
        };
        let mut events = Vec::new();
        provider
            .chat(request, &mut |e| events.push(e))
            .await
            .expect("retried after 529");
        assert_eq!(events[0], StreamEvent::Text("ok".into()));
        let sent = &server.requests()[1];
        assert!(sent.head.starts_with("POST /v1/messages "));
        assert_eq!(sent.header("x-api-key").as_deref(), Some("sk-ant-test"));
        assert_eq!(
            sent.header("anthropic-version").as_deref(),
            Some("2023-06-01")
        );
        let err = provider.chat(request, &mut |_| {}).await.expect_err("400");
        assert!(
            err.to_string().contains("HTTP 400: max_tokens: too large"),
            "{err}"
        );
        assert_eq!(provider.context_window().await, None);
    }
}
