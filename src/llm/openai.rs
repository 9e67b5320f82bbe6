//! OpenAI-compatible chat completions: OpenAI itself and the local servers that copy its
//! API (llama.cpp's `llama-server`, LM Studio, vLLM). `url` is the base including `/v1`.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::error::ErrorKind;
use super::http::{Endpoint, FrameProtocol, emit, join_url, json_error_message, truncate_chars};
use super::retry::RetryPolicy;
use super::textcalls::parse_arguments;
use super::{
    ChatMessage, ChatRequest, EventSink, LlmError, Provider, Role, StreamEvent, ToolCall, ToolSpec,
    Usage,
};
use crate::config::model::ModelConfig;
use crate::protocol::sse::{SseDecoder, SseEvent};

pub struct OpenAiProvider {
    endpoint: Endpoint,
    base_url: String,
    chat_url: String,
    api_key: Option<String>,
    context_window: Option<u32>,
    max_tokens: Option<u32>,
    http: reqwest::Client,
}

/// How long a local server gets to say its context size (`/props`) at session start.
const PROPS_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(300);

impl OpenAiProvider {
    pub fn new(cfg: &ModelConfig, http: reqwest::Client) -> Self {
        OpenAiProvider {
            endpoint: Endpoint::for_model(cfg, http.clone()),
            base_url: cfg.url.clone(),
            chat_url: join_url(&cfg.url, "chat/completions"),
            api_key: cfg.api_key(),
            context_window: cfg.context_window,
            max_tokens: cfg.max_tokens,
            http,
        }
    }

    /// llama.cpp's server says its context size at `GET /props` (next to `/v1`, not under
    /// it). Asked only of local servers, briefly: anything else is "unknown".
    async fn context_from_props(&self) -> Option<u32> {
        let url = reqwest::Url::parse(&self.base_url).ok()?;
        let local = url.host_str().is_some_and(|h| {
            h == "localhost"
                || h.parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        });
        if !local {
            return None;
        }
        let base = self.base_url.trim_end_matches('/');
        let root = base.strip_suffix("/v1").unwrap_or(base);
        let mut endpoint = Endpoint::new("props", self.http.clone(), PROPS_TIMEOUT);
        endpoint.set_retry_policy(RetryPolicy::none());
        let props = tokio::time::timeout(
            PROPS_TIMEOUT,
            endpoint.fetch_json(&join_url(root, "props"), None),
        )
        .await
        .ok()?
        .ok()?;
        context_from_props(&props)
    }

    /// Replaces the default retry policy (tests use a fast one).
    pub fn with_retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.endpoint.set_retry_policy(retry);
        self
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        match &self.api_key {
            Some(key) => vec![("authorization", format!("Bearer {key}"))],
            None => Vec::new(),
        }
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
    async fn chat(&self, request: ChatRequest<'_>, sink: EventSink<'_>) -> Result<(), LlmError> {
        let mut body = request_body(self.endpoint.model(), &request);
        if let Some(n) = self.max_tokens {
            // `max_tokens` is what llama.cpp, vLLM and LM Studio read; OpenAI still accepts
            // it for chat models.
            body["max_tokens"] = n.into();
        }
        let mut wire = OpenAiStream::default();
        self.endpoint
            .post_stream(&self.chat_url, &body, &self.headers(), &mut wire, sink)
            .await
    }

    fn describe(&self) -> String {
        format!("{} at {}", self.endpoint.model(), self.base_url)
    }

    async fn context_window(&self) -> Option<u32> {
        match self.context_window {
            Some(n) => Some(n),
            None => self.context_from_props().await,
        }
    }
}

/// `n_ctx` from llama.cpp's `/props` (`default_generation_settings.n_ctx`; some builds
/// also put it at the top level).
fn context_from_props(props: &Value) -> Option<u32> {
    props
        .pointer("/default_generation_settings/n_ctx")
        .or_else(|| props.get("n_ctx"))
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
        .map(|n| n.min(u64::from(u32::MAX)) as u32)
}

/// The `/chat/completions` body for a streamed request.
pub fn request_body(model: &str, request: &ChatRequest<'_>) -> Value {
    let messages = messages_json(request.messages);
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        // Without this OpenAI and vLLM report no token counts for streamed answers.
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        body["tools"] = function_tools(request.tools);
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(schema) = request.answer_schema {
        // Not `strict`: OpenAI's strict mode limits schemas; llama.cpp, vLLM and LM Studio
        // turn this into a grammar either way.
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": {"name": "action", "schema": schema},
        });
    }
    body
}

/// Tools in the `{"type": "function", "function": {...}}` shape, which Ollama's API copies.
pub fn function_tools(tools: &[ToolSpec]) -> Value {
    tools
        .iter()
        .map(|tool| {
            json!({
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                }
            })
        })
        .collect()
}

/// The history as chat messages. A `tool` message carries text only, so the images of
/// tool results follow as one `user` message after the last result of the batch: the API
/// wants every call answered before any other message.
fn messages_json(messages: &[ChatMessage]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    let mut result_images: Vec<Value> = Vec::new();
    for message in messages {
        if message.role != Role::Tool && !result_images.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(&mut result_images)}));
        }
        if message.role == Role::Tool && !message.images.is_empty() {
            let call = message.tool_call_id.as_deref().unwrap_or_default();
            let tool = message.tool_name.as_deref().unwrap_or("tool");
            let label = format!("The images of the result of call {call} ({tool}):");
            result_images.push(json!({"type": "text", "text": label}));
            result_images.extend(image_parts(&message.images));
        }
        out.push(message_json(message));
    }
    if !result_images.is_empty() {
        out.push(json!({"role": "user", "content": result_images}));
    }
    out
}

fn image_parts(images: &[super::Image]) -> impl Iterator<Item = Value> + '_ {
    images
        .iter()
        .map(|image| json!({"type": "image_url", "image_url": {"url": image.data_url()}}))
}

fn message_json(message: &ChatMessage) -> Value {
    match message.role {
        Role::User if !message.images.is_empty() => {
            let mut parts = Vec::with_capacity(message.images.len() + 1);
            if !message.content.is_empty() {
                parts.push(json!({"type": "text", "text": message.content}));
            }
            parts.extend(image_parts(&message.images));
            json!({"role": "user", "content": parts})
        }
        Role::System | Role::User => {
            json!({"role": message.role.as_str(), "content": message.content})
        }
        Role::Assistant if message.tool_calls.is_empty() => {
            json!({"role": "assistant", "content": message.content})
        }
        Role::Assistant => {
            let calls: Vec<Value> = message.tool_calls.iter().map(tool_call_json).collect();
            // OpenAI wants null rather than "" next to tool calls; llama.cpp takes both.
            let content = if message.content.is_empty() {
                Value::Null
            } else {
                Value::String(message.content.to_string())
            };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": message.tool_call_id.as_deref().unwrap_or_default(),
            "content": message.content,
        }),
    }
}

fn tool_call_json(call: &ToolCall) -> Value {
    json!({
        "id": call.id,
        "type": "function",
        "function": {
            "name": call.name,
            // The API carries arguments as a JSON *string*.
            "arguments": call.arguments.to_string(),
        }
    })
}

/// A tool call whose name and argument fragments are still arriving.
#[derive(Debug, Default)]
struct PartialCall {
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
}

/// A stream chunk as nearly all of them are: text, reasoning or tool-call deltas in the
/// first choice, maybe a finish reason and the usage. Other keys are skipped without being
/// stored. A chunk with an error is left to the general path.
#[derive(Debug, serde::Deserialize)]
struct TextChunk {
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    usage: Option<ChunkUsage>,
    #[serde(default)]
    choices: Option<Vec<TextChoice>>,
}

#[derive(Debug, serde::Deserialize)]
struct ChunkUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

#[derive(Debug, serde::Deserialize)]
struct TextChoice {
    #[serde(default)]
    delta: Option<TextDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
struct TextDelta {
    #[serde(default)]
    content: Option<String>,
    /// llama.cpp, vLLM and DeepSeek.
    #[serde(default)]
    reasoning_content: Option<String>,
    /// OpenRouter and newer vLLM.
    #[serde(default)]
    reasoning: Option<String>,
    /// Each call's delta as a general value, for [`OpenAiStream::merge_call`] (their shape
    /// varies between servers).
    #[serde(default)]
    tool_calls: Option<Vec<Value>>,
}

/// Parses the `data:` chunks of a streamed chat completion.
#[derive(Debug, Default)]
pub struct OpenAiStream {
    sse: SseDecoder,
    calls: Vec<PartialCall>,
    usage: Option<Usage>,
    /// Reasoning a local model wrote into the content as `<think>…</think>`.
    think: super::think::ThinkSplitter,
}

impl FrameProtocol for OpenAiStream {
    type Decoder = SseDecoder;
    const TERMINATOR: &'static str = "`data: [DONE]`";

    fn decoder(&mut self) -> &mut SseDecoder {
        &mut self.sse
    }

    fn on_frame(&mut self, frame: &SseEvent, sink: &mut EventSink<'_>) -> Result<bool, ErrorKind> {
        self.on_event(frame, sink)
    }
}

impl OpenAiStream {
    /// Handles one SSE event; `true` at the `[DONE]` terminator.
    fn on_event(&mut self, event: &SseEvent, sink: &mut EventSink<'_>) -> Result<bool, ErrorKind> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.think.finish(&mut |e| emit(sink, e));
            self.flush_calls(sink);
            if let Some(usage) = self.usage.take() {
                emit(sink, StreamEvent::Usage(usage));
            }
            return Ok(true);
        }
        // Read into a typed chunk, a delta costs a third of a general JSON value (whose
        // objects are ordered maps). What the typed shape does not hold (an error, a field
        // of another type) takes the general path below, which reads the chunk again.
        if let Ok(chunk) = serde_json::from_str::<TextChunk>(data)
            && chunk.error.is_none()
        {
            self.on_text_chunk(chunk, sink);
            return Ok(false);
        }
        let mut chunk: Value = serde_json::from_str(data).map_err(|e| {
            ErrorKind::Malformed(format!(
                "a stream chunk is not valid JSON ({e}): {}",
                truncate_chars(data, 200)
            ))
        })?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let message = json_error_message(&chunk).unwrap_or_else(|| error.to_string());
            return Err(ErrorKind::Server(message));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Some(Usage {
                input_tokens: count("prompt_tokens"),
                output_tokens: count("completion_tokens"),
                ..Usage::default()
            });
        }
        // Only the first choice matters: we never ask for more than one.
        let Some(choice) = chunk.pointer_mut("/choices/0") else {
            return Ok(false);
        };
        if let Some(delta) = choice.get_mut("delta") {
            self.on_delta(delta, sink);
        }
        if choice
            .get("finish_reason")
            .is_some_and(|reason| !reason.is_null())
        {
            self.flush_calls(sink);
        }
        if choice.get("finish_reason").and_then(Value::as_str) == Some("length") {
            emit(sink, StreamEvent::CutShort);
        }
        Ok(false)
    }

    /// [`Self::on_event`] for a chunk without an error.
    fn on_text_chunk(&mut self, chunk: TextChunk, sink: &mut EventSink<'_>) {
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens.unwrap_or(0),
                output_tokens: usage.completion_tokens.unwrap_or(0),
                ..Usage::default()
            });
        }
        let Some(choice) = chunk.choices.and_then(|c| c.into_iter().next()) else {
            return;
        };
        if let Some(delta) = choice.delta {
            let texts = [delta.reasoning_content, delta.reasoning];
            for text in texts.into_iter().flatten().filter(|t| !t.is_empty()) {
                emit(sink, StreamEvent::Thinking(text));
            }
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                self.think.push_owned(text, &mut |e| emit(sink, e));
            }
            for call in delta.tool_calls.iter().flatten() {
                self.merge_call(call);
            }
        }
        if let Some(reason) = choice.finish_reason {
            self.flush_calls(sink);
            if reason == "length" {
                emit(sink, StreamEvent::CutShort);
            }
        }
    }

    fn on_delta(&mut self, delta: &mut Value, sink: &mut EventSink<'_>) {
        // Texts are moved out of the parsed chunk, not copied: one event can carry a
        // whole long answer.
        let mut take = |key: &str| match delta.get_mut(key).map(Value::take) {
            Some(Value::String(text)) if !text.is_empty() => Some(text),
            _ => None,
        };
        // llama.cpp, vLLM and DeepSeek say `reasoning_content`; OpenRouter and newer vLLM
        // say `reasoning`.
        for key in ["reasoning_content", "reasoning"] {
            if let Some(text) = take(key) {
                emit(sink, StreamEvent::Thinking(text));
            }
        }
        if let Some(text) = take("content") {
            self.think.push_owned(text, &mut |e| emit(sink, e));
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                self.merge_call(call);
            }
        }
    }

    /// Adds a tool-call delta to the call it continues. Calls are matched by `index`; a
    /// server that omits it continues the last call unless the delta brings a new `id`.
    fn merge_call(&mut self, delta: &Value) {
        let index = delta.get("index").and_then(Value::as_u64);
        let id = delta
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        let position = match index {
            Some(index) => self.calls.iter().position(|c| c.index == Some(index)),
            None => match (self.calls.last(), id) {
                (Some(last), Some(id)) if !last.id.is_empty() && last.id != id => None,
                (Some(_), _) => Some(self.calls.len() - 1),
                (None, _) => None,
            },
        };
        let position = position.unwrap_or_else(|| {
            self.calls.push(PartialCall {
                index,
                ..PartialCall::default()
            });
            self.calls.len() - 1
        });
        let call = &mut self.calls[position];
        if let Some(id) = id
            && call.id.is_empty()
        {
            call.id = id.to_string();
        }
        let function = delta.get("function").unwrap_or(&Value::Null);
        if let Some(name) = function.get("name").and_then(Value::as_str) {
            // Some servers repeat the name in every delta; others stream it in pieces.
            if call.name != name {
                call.name.push_str(name);
            }
        }
        match function.get("arguments") {
            Some(Value::String(fragment)) => call.arguments.push_str(fragment),
            // Not per spec, but seen: the whole arguments object instead of a string.
            Some(value @ Value::Object(_)) => call.arguments = value.to_string(),
            _ => {}
        }
    }

    /// Emits the assembled calls, in the order the model made them.
    fn flush_calls(&mut self, sink: &mut EventSink<'_>) {
        for (n, call) in std::mem::take(&mut self.calls).into_iter().enumerate() {
            // A call without a name cannot be run or even reported sensibly.
            if call.name.is_empty() {
                continue;
            }
            let id = if call.id.is_empty() {
                format!("call_{n}")
            } else {
                call.id
            };
            emit(
                sink,
                StreamEvent::ToolCall(ToolCall {
                    id,
                    name: call.name,
                    arguments: parse_arguments(&call.arguments),
                }),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::ProviderKind;
    use crate::llm::ToolSpec;
    use crate::llm::http::test_server::{Reply, model_config, parse_in_chunks, serve};

    fn parse(input: &str) -> (Vec<StreamEvent>, Result<bool, ErrorKind>) {
        parse_in_chunks::<OpenAiStream>(input)
    }

    fn sse(chunks: &[Value]) -> String {
        let mut out: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        out.push_str("data: [DONE]\n\n");
        out
    }

    fn delta(delta: Value) -> Value {
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    }

    fn finish(reason: &str) -> Value {
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    }

    fn call(id: &str, name: &str, arguments: Value) -> StreamEvent {
        StreamEvent::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        })
    }

    fn history() -> Vec<ChatMessage> {
        let read = ToolCall {
            id: "call_1".into(),
            name: "Read".into(),
            arguments: json!({"file_path": "src/main.rs"}),
        };
        vec![
            ChatMessage::system("You are linggen."),
            ChatMessage::user("What does main do?"),
            ChatMessage::assistant("", vec![read.clone()]),
            ChatMessage::tool_result(&read, "fn main() {}", false),
            ChatMessage::assistant("It does nothing.", vec![]),
        ]
    }

    /// A `tool` message carries text only: the images of a batch of results follow the
    /// batch as one `user` message (every call is answered first), each labelled with its
    /// call; a person's images are content parts of their message.
    #[test]
    fn images_of_tool_results_follow_the_batch_as_a_user_message() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "mcp__web__shot".into(),
            arguments: json!({}),
        };
        let (a, b) = (call("call_a"), call("call_b"));
        let png = crate::llm::image::test_png();
        let messages = vec![
            ChatMessage::user("Compare these").with_images(vec![png.clone()]),
            ChatMessage::assistant("", vec![a.clone(), b.clone()]),
            ChatMessage::tool_result(&a, "[image image/png, 1 KB]", false)
                .with_images(vec![png.clone()]),
            ChatMessage::tool_result(&b, "no image", false),
            ChatMessage::assistant("Same.", vec![]),
        ];
        let request = ChatRequest {
            messages: &messages,
            tools: &[],
            answer_schema: None,
            temperature: None,
        };
        let body = request_body("gpt-4o", &request);
        let url = json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}});
        let sent = body["messages"].as_array().unwrap();
        assert_eq!(
            sent[0],
            json!({"role": "user", "content": [{"type": "text", "text": "Compare these"}, url]})
        );
        let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(
            roles,
            ["user", "assistant", "tool", "tool", "user", "assistant"]
        );
        assert_eq!(sent[2]["content"], "[image image/png, 1 KB]");
        assert_eq!(
            sent[4]["content"],
            json!([
                {"type": "text", "text": "The images of the result of call call_a (mcp__web__shot):"},
                url,
            ])
        );
    }

    /// Auto mode: the answer's schema goes as `response_format`, which OpenAI, llama.cpp,
    /// vLLM and LM Studio read; without one there is none.
    #[test]
    fn an_answer_schema_becomes_the_response_format() {
        let messages = history();
        let schema = json!({"type": "object", "anyOf": []});
        let request = |answer_schema| ChatRequest {
            messages: &messages,
            tools: &[],
            answer_schema,
            temperature: None,
        };
        assert!(
            request_body("m", &request(None))
                .get("response_format")
                .is_none()
        );
        assert_eq!(
            request_body("m", &request(Some(&schema)))["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "action", "schema": schema}})
        );
    }

    #[test]
    fn request_body_maps_history_and_tools() {
        let messages = history();
        let tools = vec![ToolSpec {
            name: "Read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"file_path": {"type": "string"}}}),
        }];
        let body = request_body(
            "qwen",
            &ChatRequest {
                messages: &messages,
                tools: &tools,
                answer_schema: None,
                temperature: None,
            },
        );
        assert_eq!(
            body,
            json!({
                "model": "qwen",
                "stream": true,
                "stream_options": {"include_usage": true},
                "messages": [
                    {"role": "system", "content": "You are linggen."},
                    {"role": "user", "content": "What does main do?"},
                    {"role": "assistant", "content": null, "tool_calls": [{
                        "id": "call_1", "type": "function",
                        "function": {"name": "Read", "arguments": "{\"file_path\":\"src/main.rs\"}"}
                    }]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "fn main() {}"},
                    {"role": "assistant", "content": "It does nothing."},
                ],
                "tools": [{"type": "function", "function": {
                    "name": "Read", "description": "Read a file",
                    "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}}
                }}],
            })
        );
        let no_tools = request_body(
            "qwen",
            &ChatRequest {
                messages: &messages,
                tools: &[],
                answer_schema: None,
                temperature: None,
            },
        );
        assert!(no_tools.get("tools").is_none());
    }

    #[test]
    fn text_thinking_and_usage() {
        let input = sse(&[
            delta(json!({"role": "assistant", "content": ""})),
            delta(json!({"reasoning_content": "The user wants"})),
            delta(json!({"reasoning": " a greeting."})),
            delta(json!({"content": "Hel"})),
            delta(json!({"content": "lo — 你好"})),
            finish("stop"),
            json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}}),
        ]);
        let (events, result) = parse(&input);
        assert_eq!(result, Ok(true));
        assert_eq!(
            events,
            vec![
                StreamEvent::Thinking("The user wants".into()),
                StreamEvent::Thinking(" a greeting.".into()),
                StreamEvent::Text("Hel".into()),
                StreamEvent::Text("lo — 你好".into()),
                StreamEvent::Usage(Usage {
                    input_tokens: 12,
                    output_tokens: 5,
                    ..Usage::default()
                }),
            ]
        );
    }

    /// Chunks of unusual shape are read as before: a field of another type is skipped (on
    /// the general path), a tool call beside text is merged, `length` still cuts short.
    #[test]
    fn odd_chunks_take_the_general_path() {
        let input = sse(&[
            json!({"choices": [{"delta": {"content": ["not", "text"]}}], "usage": null}),
            json!({"choices": [{"delta": {"content": "a", "tool_calls": [
                {"index": 0, "id": "c1", "function": {"name": "Read", "arguments": "{}"}}
            ]}}]}),
            json!({"choices": [{"delta": {"content": "b", "tool_calls": null}, "finish_reason": "length"}]}),
        ]);
        let (events, result) = parse(&input);
        assert_eq!(result, Ok(true));
        assert_eq!(
            events,
            vec![
                StreamEvent::Text("a".into()),
                StreamEvent::Text("b".into()),
                call("c1", "Read", json!({})),
                StreamEvent::CutShort,
            ]
        );
    }

    #[test]
    fn parallel_tool_calls_split_across_deltas() {
        let input = sse(&[
            delta(
                json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "Read", "arguments": ""}}]}),
            ),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"file_"}}]})),
            delta(
                json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "Grep", "arguments": ""}}]}),
            ),
            delta(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "path\": \"a.rs\"}"}}]}),
            ),
            delta(
                json!({"tool_calls": [{"index": 1, "function": {"arguments": "{\"pattern\":\"x\"}"}}]}),
            ),
            finish("tool_calls"),
            json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}}),
        ]);
        let (events, result) = parse(&input);
        assert_eq!(result, Ok(true));
        assert_eq!(
            events,
            vec![
                call("call_a", "Read", json!({"file_path": "a.rs"})),
                call("call_b", "Grep", json!({"pattern": "x"})),
                StreamEvent::Usage(Usage {
                    input_tokens: 3,
                    output_tokens: 4,
                    ..Usage::default()
                }),
            ]
        );
    }

    #[test]
    fn calls_without_index_and_odd_arguments() {
        let input = sse(&[
            delta(
                json!({"tool_calls": [{"id": "x1", "function": {"name": "get_repo_info", "arguments": ""}}]}),
            ),
            delta(
                json!({"tool_calls": [{"id": "x2", "function": {"name": "Bash", "arguments": "{\"command\": "}}]}),
            ),
            delta(json!({"tool_calls": [{"function": {"arguments": "\"ls\"}"}}]})),
            delta(
                json!({"tool_calls": [{"id": "x3", "function": {"name": "Glob", "arguments": {"pattern": "*.rs"}}}]}),
            ),
        ]);
        let (events, result) = parse(&input);
        assert_eq!(result, Ok(true));
        assert_eq!(
            events,
            vec![
                call("x1", "get_repo_info", json!({})),
                call("x2", "Bash", json!({"command": "ls"})),
                call("x3", "Glob", json!({"pattern": "*.rs"})),
            ]
        );
        let broken = sse(&[delta(
            json!({"tool_calls": [{"index": 0, "function": {"name": "Bash", "arguments": "{\"command\": \"ls"}}]}),
        )]);
        assert_eq!(
            parse(&broken).0,
            vec![call(
                "call_0",
                "Bash",
                json!({"_raw": "{\"command\": \"ls"})
            )]
        );
    }

    #[test]
    fn stream_failures() {
        let error = "data: {\"error\":{\"message\":\"the request exceeds the available context size\",\"type\":\"exceed_context_size_error\"}}\n\n";
        assert_eq!(
            parse(error).1,
            Err(ErrorKind::Server(
                "the request exceeds the available context size".into()
            ))
        );
        let cut = format!("data: {}\n\n", delta(json!({"content": "Hi"})));
        let (events, result) = parse(&cut);
        assert_eq!(events, vec![StreamEvent::Text("Hi".into())]);
        assert!(matches!(result, Err(ErrorKind::Disconnected(_))));
        let garbage = "data: {\"choices\": [\n\n";
        let Err(ErrorKind::Malformed(why)) = parse(garbage).1 else {
            panic!("expected Malformed")
        };
        assert!(
            why.contains("not valid JSON") && why.contains("{\"choices\": ["),
            "{why}"
        );
    }

    #[tokio::test]
    async fn talks_to_a_server_over_http() {
        let body = sse(&[delta(json!({"content": "ok"})), finish("stop")]);
        let server = serve(vec![
            Reply::json(
                400,
                r#"{"error":{"message":"model 'nope' not found","type":"invalid_request_error"}}"#,
            ),
            Reply::stream("text/event-stream", &[&body[..20], &body[20..]]),
        ])
        .await;
        let url = format!("{}/v1", server.base());
        let cfg = ModelConfig {
            context_window: Some(32_768),
            ..model_config(ProviderKind::Openai, "qwen", url)
        };
        let mut provider = OpenAiProvider::new(&cfg, crate::llm::http::plain_client());
        provider.api_key = Some("sk-test".into());
        let messages = [ChatMessage::user("hi")];
        let request = ChatRequest {
            messages: &messages,
            tools: &[],
            answer_schema: None,
            temperature: None,
        };
        let mut events = Vec::new();
        let err = provider.chat(request, &mut |e| events.push(e)).await;
        let Err(err) = err else {
            panic!("400 must fail")
        };
        assert!(
            err.to_string().contains("HTTP 400: model 'nope' not found"),
            "{err}"
        );
        provider
            .chat(request, &mut |e| events.push(e))
            .await
            .expect("second call streams");
        assert_eq!(events, vec![StreamEvent::Text("ok".into())]);
        let sent = &server.requests()[1];
        assert!(sent.head.starts_with("POST /v1/chat/completions "));
        assert_eq!(
            sent.header("authorization").as_deref(),
            Some("Bearer sk-test")
        );
        assert_eq!(sent.json()["model"], "qwen");
        assert_eq!(provider.context_window().await, Some(32_768));
    }
}
