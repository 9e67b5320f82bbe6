//! Ollama's native API: `POST /api/chat` streaming newline-delimited JSON, `/api/tags` to
//! list installed models, `/api/show` to learn a model's context window.

use std::time::Duration;

use async_trait::async_trait;
use reqwest::Client;
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use super::error::ErrorKind;
use super::http::{Endpoint, FrameProtocol, emit, join_url, json_error_message, truncate_chars};
use super::retry::RetryPolicy;
use super::textcalls::normalize_arguments;
use super::{
    ChatMessage, ChatRequest, EventSink, LlmError, Provider, Role, StreamEvent, ToolCall, Usage,
};
use crate::config::model::ModelConfig;
use crate::protocol::ndjson::NdjsonDecoder;

/// Used when the server says nothing about the model's window; Ollama's own default is
/// smaller (2048–4096), which silently truncates the long prompts a coding agent sends.
pub const DEFAULT_NUM_CTX: u32 = 8192;

/// Ceiling for a window taken from the model's metadata. Many models advertise 128k, but
/// Ollama allocates the KV cache for the whole `num_ctx` up front: for a 7–8B model at
/// 128k that is 8–16 GB on top of the weights, more than a typical laptop has, and the
/// model would fail to load or spill to the CPU. 32k fits and is plenty for a session; a
/// larger window can still be set explicitly with `context_window`.
pub const MAX_DISCOVERED_NUM_CTX: u32 = 32_768;

pub struct OllamaProvider {
    endpoint: Endpoint,
    /// `/api/show` gets no retries: if the server is down the chat request that follows
    /// retries and reports it anyway.
    discovery: Endpoint,
    base_url: String,
    configured_window: Option<u32>,
    discovered_window: OnceCell<u32>,
    max_tokens: Option<u32>,
}

impl OllamaProvider {
    pub fn new(cfg: &ModelConfig, http: Client) -> Self {
        let mut discovery = Endpoint::for_model(cfg, http.clone());
        discovery.set_retry_policy(RetryPolicy::none());
        OllamaProvider {
            endpoint: Endpoint::for_model(cfg, http),
            discovery,
            base_url: cfg.url.clone(),
            configured_window: cfg.context_window,
            discovered_window: OnceCell::new(),
            max_tokens: cfg.max_tokens,
        }
    }

    /// Replaces the default retry policy of chat requests (tests use a fast one).
    pub fn with_retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.endpoint.set_retry_policy(retry);
        self
    }

    /// The `num_ctx` sent with every request: the configured `context_window`, else what
    /// `/api/show` says (asked once, then cached), else [`DEFAULT_NUM_CTX`]. A failed
    /// lookup is not cached, so the next request asks again.
    pub async fn num_ctx(&self) -> u32 {
        if let Some(window) = self.configured_window {
            return window;
        }
        let discovered = self
            .discovered_window
            .get_or_try_init(|| async {
                let url = join_url(&self.base_url, "api/show");
                let body = json!({ "model": self.endpoint.model() });
                let show = self.discovery.fetch_json(&url, Some(&body)).await?;
                Ok::<u32, LlmError>(context_from_show(&show).unwrap_or(DEFAULT_NUM_CTX))
            })
            .await;
        discovered.map_or(DEFAULT_NUM_CTX, |window| *window)
    }
}

#[async_trait]
impl Provider for OllamaProvider {
    async fn chat(&self, request: ChatRequest<'_>, sink: EventSink<'_>) -> Result<(), LlmError> {
        let num_ctx = self.num_ctx().await;
        let mut body = request_body(self.endpoint.model(), &request, num_ctx);
        if let Some(n) = self.max_tokens {
            body["options"]["num_predict"] = n.into();
        }
        let url = join_url(&self.base_url, "api/chat");
        let mut wire = OllamaStream::default();
        self.endpoint
            .post_stream(&url, &body, &[], &mut wire, sink)
            .await
    }

    fn describe(&self) -> String {
        format!("{} at {}", self.endpoint.model(), self.base_url)
    }

    async fn context_window(&self) -> Option<u32> {
        Some(self.num_ctx().await)
    }
}

/// Names of the models installed on the Ollama server at `base_url` (`GET /api/tags`),
/// in the server's order. No retries: discovery should fail fast when nothing listens.
pub async fn list_models(
    http: &Client,
    base_url: &str,
    timeout: Duration,
) -> Result<Vec<String>, LlmError> {
    let mut endpoint = Endpoint::new("ollama", http.clone(), timeout);
    endpoint.set_retry_policy(RetryPolicy::none());
    let url = join_url(base_url, "api/tags");
    let tags = endpoint.fetch_json(&url, None).await?;
    let Some(models) = tags.get("models").and_then(Value::as_array) else {
        let why = "the answer to /api/tags has no `models` list (is this an Ollama server?)";
        return Err(endpoint.error(&url, ErrorKind::Malformed(why.into())));
    };
    Ok(models
        .iter()
        .filter_map(|m| m.get("name").or_else(|| m.get("model")))
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect())
}

/// The context window an `/api/show` answer implies: an explicit `num_ctx` parameter of
/// the model (its Modelfile) wins; otherwise the trained length from `model_info`, capped
/// at [`MAX_DISCOVERED_NUM_CTX`].
pub fn context_from_show(show: &Value) -> Option<u32> {
    let parameter = show
        .get("parameters")
        .and_then(Value::as_str)
        .and_then(|parameters| {
            parameters.lines().find_map(|line| {
                let mut words = line.split_whitespace();
                (words.next() == Some("num_ctx")).then(|| words.next()?.parse().ok())?
            })
        });
    if parameter.is_some() {
        return parameter;
    }
    let info = show.get("model_info")?.as_object()?;
    let by_architecture = info
        .get("general.architecture")
        .and_then(Value::as_str)
        .and_then(|arch| info.get(&format!("{arch}.context_length")));
    let length = by_architecture
        .or_else(|| {
            info.iter()
                .find(|(key, _)| key.ends_with(".context_length"))
                .map(|(_, value)| value)
        })?
        .as_u64()?;
    Some(length.min(u64::from(MAX_DISCOVERED_NUM_CTX)) as u32)
}

/// The `/api/chat` body for a streamed request.
pub fn request_body(model: &str, request: &ChatRequest<'_>, num_ctx: u32) -> Value {
    let messages: Vec<Value> = request.messages.iter().map(message_json).collect();
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "options": {"num_ctx": num_ctx},
    });
    if !request.tools.is_empty() {
        body["tools"] = super::openai::function_tools(request.tools);
    }
    if let Some(schema) = request.answer_schema {
        body["format"] = schema.clone();
    }
    if let Some(t) = request.temperature {
        body["options"]["temperature"] = json!(t);
    }
    body
}

fn message_json(message: &ChatMessage) -> Value {
    let mut json = json!({"role": message.role.as_str(), "content": message.content});
    if !message.images.is_empty() {
        // Bare base64, on the message they belong to (a tool result's too).
        json["images"] = message.images.iter().map(|i| json!(i.data)).collect();
    }
    match message.role {
        Role::Assistant if !message.tool_calls.is_empty() => {
            // Ollama has no call ids and takes arguments as an object, not a string.
            json["tool_calls"] = message
                .tool_calls
                .iter()
                .map(|call| json!({"function": {"name": call.name, "arguments": call.arguments}}))
                .collect();
        }
        Role::Tool => {
            if let Some(name) = &message.tool_name {
                json["tool_name"] = Value::String(name.clone());
            }
        }
        _ => {}
    }
    json
}

/// Parses the NDJSON lines of a streamed `/api/chat` answer.
#[derive(Debug, Default)]
pub struct OllamaStream {
    lines: NdjsonDecoder,
    calls_seen: usize,
    /// Reasoning a model wrote into the content as `<think>…</think>`.
    think: super::think::ThinkSplitter,
}

impl FrameProtocol for OllamaStream {
    type Decoder = NdjsonDecoder;
    const TERMINATOR: &'static str = "the line with \"done\": true";

    fn decoder(&mut self) -> &mut NdjsonDecoder {
        &mut self.lines
    }

    fn on_frame(&mut self, frame: &String, sink: &mut EventSink<'_>) -> Result<bool, ErrorKind> {
        self.on_line(frame, sink)
    }
}

/// The non-empty string at `key`, moved out of the parsed chunk rather than copied.
fn take_text(message: &mut Value, key: &str) -> Option<String> {
    match message.get_mut(key).map(Value::take) {
        Some(Value::String(text)) if !text.is_empty() => Some(text),
        _ => None,
    }
}

impl OllamaStream {
    /// Handles one line; `true` at the final `"done": true` line.
    fn on_line(&mut self, line: &str, sink: &mut EventSink<'_>) -> Result<bool, ErrorKind> {
        let mut chunk: Value = serde_json::from_str(line).map_err(|e| {
            ErrorKind::Malformed(format!(
                "a stream line is not valid JSON ({e}): {}",
                truncate_chars(line, 200)
            ))
        })?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let message = json_error_message(&chunk).unwrap_or_else(|| error.to_string());
            return Err(ErrorKind::Server(message));
        }
        if let Some(message) = chunk.get_mut("message") {
            self.on_message(message, sink);
        }
        if chunk.get("done").and_then(Value::as_bool) != Some(true) {
            return Ok(false);
        }
        self.think.finish(&mut |e| emit(sink, e));
        let count = |key: &str| chunk.get(key).and_then(Value::as_u64);
        let (input, output) = (count("prompt_eval_count"), count("eval_count"));
        if input.is_some() || output.is_some() {
            emit(
                sink,
                StreamEvent::Usage(Usage {
                    input_tokens: input.unwrap_or(0),
                    output_tokens: output.unwrap_or(0),
                    ..Usage::default()
                }),
            );
        }
        if chunk.get("done_reason").and_then(Value::as_str) == Some("length") {
            emit(sink, StreamEvent::CutShort);
        }
        Ok(true)
    }

    fn on_message(&mut self, message: &mut Value, sink: &mut EventSink<'_>) {
        if let Some(thinking) = take_text(message, "thinking") {
            emit(sink, StreamEvent::Thinking(thinking));
        }
        if let Some(content) = take_text(message, "content") {
            self.think.push_owned(content, &mut |e| emit(sink, e));
        }
        let calls = message.get("tool_calls").and_then(Value::as_array);
        // Ollama sends each call complete, so it can be passed on at once.
        for call in calls.into_iter().flatten() {
            let function = call.get("function").unwrap_or(&Value::Null);
            let Some(name) = function.get("name").and_then(Value::as_str) else {
                continue;
            };
            let id = match call.get("id").and_then(Value::as_str) {
                Some(id) if !id.is_empty() => id.to_string(),
                _ => format!("call_{}", self.calls_seen),
            };
            self.calls_seen += 1;
            let arguments = normalize_arguments(function.get("arguments").unwrap_or(&Value::Null));
            emit(
                sink,
                StreamEvent::ToolCall(ToolCall {
                    id,
                    name: name.to_string(),
                    arguments,
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
        parse_in_chunks::<OllamaStream>(input)
    }

    fn lines(values: &[Value]) -> String {
        values.iter().map(|v| format!("{v}\n")).collect()
    }

    fn message(message: Value) -> Value {
        json!({"model": "qwen3:8b", "created_at": "2025-05-01T10:00:00Z", "message": message, "done": false})
    }

    fn done() -> Value {
        json!({"model": "qwen3:8b", "message": {"role": "assistant", "content": ""}, "done": true,
               "done_reason": "stop", "total_duration": 1_000_000, "prompt_eval_count": 26, "eval_count": 9})
    }

    fn config(url: String, context_window: Option<u32>) -> ModelConfig {
        let base = model_config(ProviderKind::Ollama, "qwen3:8b", url);
        ModelConfig {
            context_window,
            ..base
        }
    }

    #[test]
    fn request_body_maps_history_and_tools() {
        let call = ToolCall {
            id: "call_0".into(),
            name: "Read".into(),
            arguments: json!({"file_path": "Cargo.toml"}),
        };
        let messages = vec![
            ChatMessage::system("Be brief."),
            ChatMessage::user("Which edition?"),
            ChatMessage::assistant("Let me look.", vec![call.clone()]),
            ChatMessage::tool_result(&call, "edition = \"2024\"", false),
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
        assert_eq!(
            request_body("qwen3:8b", &request, 16_384),
            json!({
                "model": "qwen3:8b",
                "stream": true,
                "options": {"num_ctx": 16_384},
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Which edition?"},
                    {"role": "assistant", "content": "Let me look.", "tool_calls": [
                        {"function": {"name": "Read", "arguments": {"file_path": "Cargo.toml"}}}
                    ]},
                    {"role": "tool", "content": "edition = \"2024\"", "tool_name": "Read"},
                ],
                "tools": [{"type": "function", "function": {
                    "name": "Read", "description": "Read a file", "parameters": {"type": "object"}
                }}],
            })
        );
        let bare = ChatRequest {
            messages: &messages,
            tools: &[],
            answer_schema: None,
            temperature: None,
        };
        assert!(request_body("m", &bare, 8192).get("tools").is_none());
        assert!(request_body("m", &bare, 8192).get("format").is_none());
        // Auto mode: Ollama constrains the answer to the schema given as `format`.
        let schema = json!({"type": "object", "required": ["type"]});
        let constrained = ChatRequest {
            answer_schema: Some(&schema),
            temperature: None,
            ..bare
        };
        assert_eq!(request_body("m", &constrained, 8192)["format"], schema);
    }

    #[test]
    fn images_ride_on_their_message_as_bare_base64() {
        let call = ToolCall {
            id: "call_0".into(),
            name: "mcp__web__shot".into(),
            arguments: json!({}),
        };
        let png = crate::llm::image::test_png();
        let messages = vec![
            ChatMessage::user("Look").with_images(vec![png.clone()]),
            ChatMessage::tool_result(&call, "[image image/png, 1 KB]", false)
                .with_images(vec![png.clone(), png]),
        ];
        let request = ChatRequest {
            messages: &messages,
            tools: &[],
            answer_schema: None,
            temperature: None,
        };
        let body = request_body("llava", &request, 8192);
        assert_eq!(body["messages"][0]["images"], json!(["iVBORw0KGgo="]));
        assert_eq!(
            body["messages"][1],
            json!({"role": "tool", "content": "[image image/png, 1 KB]",
                   "tool_name": "mcp__web__shot", "images": ["iVBORw0KGgo=", "iVBORw0KGgo="]})
        );
    }

    #[test]
    fn text_thinking_tool_calls_and_usage() {
        let input = lines(&[
            message(json!({"role": "assistant", "content": "", "thinking": "Need the file."})),
            message(json!({"role": "assistant", "content": "Reading "})),
            message(
                json!({"role": "assistant", "content": "it — 好", "tool_calls": [
                    {"function": {"name": "Read", "arguments": {"file_path": "a.rs"}}},
                    {"function": {"index": 1, "name": "Bash", "arguments": "{\"command\": \"ls\"}"}},
                    {"id": "call_xyz", "function": {"name": "get_repo_info", "arguments": {}}},
                ]}),
            ),
            done(),
        ]);
        let (events, result) = parse(&input);
        assert_eq!(result, Ok(true));
        let call = |id: &str, name: &str, arguments: Value| {
            StreamEvent::ToolCall(ToolCall {
                id: id.into(),
                name: name.into(),
                arguments,
            })
        };
        assert_eq!(
            events,
            vec![
                StreamEvent::Thinking("Need the file.".into()),
                StreamEvent::Text("Reading ".into()),
                StreamEvent::Text("it — 好".into()),
                call("call_0", "Read", json!({"file_path": "a.rs"})),
                call("call_1", "Bash", json!({"command": "ls"})),
                call("call_xyz", "get_repo_info", json!({})),
                StreamEvent::Usage(Usage {
                    input_tokens: 26,
                    output_tokens: 9,
                    ..Usage::default()
                }),
            ]
        );
    }

    #[test]
    fn stream_failures() {
        let error = "{\"error\":\"model runner has unexpectedly stopped, this may be due to resource limitations\"}\n";
        let (_, result) = parse(error);
        assert_eq!(
            result,
            Err(ErrorKind::Server(
                "model runner has unexpectedly stopped, this may be due to resource limitations"
                    .into()
            ))
        );
        let cut = lines(&[message(json!({"content": "Hel"}))]);
        let (events, result) = parse(&cut);
        assert_eq!(events, vec![StreamEvent::Text("Hel".into())]);
        assert!(matches!(result, Err(ErrorKind::Disconnected(_))));
        let Err(ErrorKind::Malformed(why)) = parse("{\"message\":\n").1 else {
            panic!("expected Malformed")
        };
        assert!(why.contains("not valid JSON"), "{why}");
        // A final line without a newline still counts.
        assert_eq!(parse(&done().to_string()).1, Ok(true));
    }

    #[test]
    fn context_window_from_show() {
        let parameters = json!({"parameters": "stop                           \"<|im_start|>\"\nnum_ctx                        65536",
                                "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}});
        assert_eq!(context_from_show(&parameters), Some(65_536));
        let large = json!({"model_info": {"general.architecture": "llama", "llama.context_length": 131072}});
        assert_eq!(context_from_show(&large), Some(MAX_DISCOVERED_NUM_CTX));
        let small = json!({"model_info": {"general.architecture": "gemma3", "gemma3.context_length": 8192}});
        assert_eq!(context_from_show(&small), Some(8192));
        let no_arch = json!({"model_info": {"phi3.context_length": 4096}});
        assert_eq!(context_from_show(&no_arch), Some(4096));
        assert_eq!(context_from_show(&json!({"modelfile": "FROM x"})), None);
    }

    #[tokio::test]
    async fn asks_show_once_and_sends_num_ctx() {
        let stream = lines(&[message(json!({"content": "hi"})), done()]);
        let server = serve(vec![
            Reply::json(
                200,
                r#"{"model_info":{"general.architecture":"qwen3","qwen3.context_length":40960}}"#,
            ),
            Reply::stream("application/x-ndjson", &[&stream]),
            Reply::stream("application/x-ndjson", &[&stream]),
        ])
        .await;
        let provider = OllamaProvider::new(
            &config(server.base(), None),
            crate::llm::http::plain_client(),
        );
        let messages = [ChatMessage::user("hello")];
        let request = ChatRequest {
            messages: &messages,
            tools: &[],
            answer_schema: None,
            temperature: None,
        };
        let mut events = Vec::new();
        for _ in 0..2 {
            provider
                .chat(request, &mut |e| events.push(e))
                .await
                .expect("chat");
        }
        assert_eq!(provider.context_window().await, Some(32_768));
        let requests = server.requests();
        assert_eq!(requests.len(), 3);
        assert!(requests[0].head.starts_with("POST /api/show "));
        assert_eq!(requests[0].json(), json!({"model": "qwen3:8b"}));
        assert!(requests[1].head.starts_with("POST /api/chat "));
        assert_eq!(requests[2].json()["options"], json!({"num_ctx": 32_768}));
        assert_eq!(events[0], StreamEvent::Text("hi".into()));
    }

    #[tokio::test]
    async fn configured_window_skips_show_and_missing_model_is_reported() {
        let server = serve(vec![Reply::json(
            404,
            r#"{"error":"model \"qwen3:8b\" not found, try pulling it first"}"#,
        )])
        .await;
        let provider = OllamaProvider::new(
            &config(server.base(), Some(4096)),
            crate::llm::http::plain_client(),
        );
        let messages = [ChatMessage::user("hello")];
        let request = ChatRequest {
            messages: &messages,
            tools: &[],
            answer_schema: None,
            temperature: None,
        };
        let err = provider.chat(request, &mut |_| {}).await.expect_err("404");
        let text = err.to_string();
        assert!(
            text.contains("HTTP 404: model \"qwen3:8b\" not found, try pulling it first"),
            "{text}"
        );
        assert_eq!(server.requests()[0].json()["options"]["num_ctx"], 4096);
    }

    #[tokio::test]
    async fn failed_show_falls_back_without_caching() {
        let server = serve(vec![
            Reply::json(500, r#"{"error":"busy"}"#),
            Reply::json(200, r#"{"parameters":"num_ctx 12288"}"#),
        ])
        .await;
        let provider = OllamaProvider::new(
            &config(server.base(), None),
            crate::llm::http::plain_client(),
        );
        assert_eq!(provider.num_ctx().await, DEFAULT_NUM_CTX);
        assert_eq!(provider.num_ctx().await, 12_288);
        assert_eq!(provider.num_ctx().await, 12_288);
        assert_eq!(server.requests().len(), 2);
    }

    #[tokio::test]
    async fn lists_installed_models() {
        let tags = r#"{"models":[{"name":"qwen2.5-coder:7b","model":"qwen2.5-coder:7b","size":4683087332},{"name":"llama3.2:latest"}]}"#;
        let server = serve(vec![Reply::json(200, tags), Reply::json(200, "{}")]).await;
        let timeout = Duration::from_secs(2);
        let models = list_models(&crate::llm::http::plain_client(), &server.base(), timeout).await;
        assert_eq!(
            models,
            Ok(vec![
                "qwen2.5-coder:7b".to_string(),
                "llama3.2:latest".to_string()
            ])
        );
        assert!(server.requests()[0].head.starts_with("GET /api/tags "));
        let err = list_models(&crate::llm::http::plain_client(), &server.base(), timeout).await;
        assert!(matches!(
            err.map_err(|e| e.kind),
            Err(ErrorKind::Malformed(_))
        ));
    }
}
