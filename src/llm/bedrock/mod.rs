//! AWS Bedrock's Converse API, streamed (`POST /model/{id}/converse-stream`), answered in
//! AWS's binary event-stream framing. Authenticated by a Bedrock API key (bearer) or by
//! SigV4 from the standard credential sources, signed for the configured region.

pub mod credentials;
pub mod eventstream;
pub mod sigv4;

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::anthropic::{push_turn, turns_json};
use super::error::ErrorKind;
use super::http::{Endpoint, WireStream, emit, json_error_message, truncate_chars};
use super::retry::RetryPolicy;
use super::textcalls::parse_arguments;
use super::{
    ChatMessage, ChatRequest, EventSink, LlmError, Provider, Role, StreamEvent, ToolCall, Usage,
};
use crate::config::model::ModelConfig;
use credentials::Auth;

/// The name Bedrock Runtime is signed under.
const SERVICE: &str = "bedrock";

pub struct BedrockProvider {
    endpoint: Endpoint,
    id: String,
    base_url: String,
    region: String,
    /// The bearer key's variable; `None` when the entry's credentials are withheld (a
    /// project's own model, until the person trusts the file).
    bearer_env: Option<String>,
    context_window: Option<u32>,
    max_tokens: Option<u32>,
}

impl BedrockProvider {
    pub fn new(cfg: &ModelConfig, http: reqwest::Client) -> Self {
        BedrockProvider {
            endpoint: Endpoint::for_model(cfg, http),
            id: cfg.id.clone(),
            base_url: cfg.url.trim_end_matches('/').to_string(),
            region: cfg.region.clone().unwrap_or_else(|| "us-east-1".into()),
            bearer_env: cfg.api_key_env.clone(),
            context_window: cfg.context_window,
            max_tokens: cfg.max_tokens,
        }
    }

    /// Replaces the default retry policy (tests use a fast one).
    pub fn with_retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.endpoint.set_retry_policy(retry);
        self
    }

    /// The request path as sent: the model id is one path segment, percent-encoded as the
    /// AWS SDKs encode it (`:` as `%3A`, `/` of an ARN as `%2F`).
    fn path(&self) -> String {
        let base_path = self
            .base_url
            .split_once("://")
            .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
            .unwrap_or("");
        format!(
            "{base_path}/model/{}/converse-stream",
            sigv4::encode(self.endpoint.model().as_bytes())
        )
    }

    /// The `Host` header the HTTP client sends for the base URL (no default port).
    fn host(&self) -> String {
        let (scheme, rest) = self.base_url.split_once("://").unwrap_or(("https", ""));
        let authority = rest.split('/').next().unwrap_or_default();
        let default_port = if scheme == "https" { ":443" } else { ":80" };
        authority
            .strip_suffix(default_port)
            .unwrap_or(authority)
            .to_string()
    }

    fn headers(&self, auth: &Auth, path: &str, body: &[u8]) -> Vec<(&'static str, String)> {
        let mut headers = vec![("content-type", "application/json".to_string())];
        match auth {
            Auth::Bearer(token) => headers.push(("authorization", format!("Bearer {token}"))),
            Auth::SigV4(creds) => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let amz_date = sigv4::amz_date(now);
                headers.push(("x-amz-date", amz_date.clone()));
                if let Some(token) = &creds.session_token {
                    headers.push(("x-amz-security-token", token.clone()));
                }
                let mut signed = headers.clone();
                signed.push(("host", self.host()));
                let authorization = sigv4::authorization(
                    creds,
                    &sigv4::Scope {
                        region: &self.region,
                        service: SERVICE,
                        amz_date: &amz_date,
                    },
                    &sigv4::Request {
                        method: "POST",
                        path,
                        query: "",
                        headers: &signed,
                        payload: body,
                    },
                );
                headers.push(("authorization", authorization));
            }
        }
        headers.push(("accept", "application/vnd.amazon.eventstream".to_string()));
        headers
    }
}

#[async_trait]
impl Provider for BedrockProvider {
    async fn chat(&self, request: ChatRequest<'_>, sink: EventSink<'_>) -> Result<(), LlmError> {
        let url = format!("{}{}", origin(&self.base_url), self.path());
        let Some(bearer_env) = &self.bearer_env else {
            return Err(self.endpoint.error(
                &self.base_url,
                ErrorKind::NoModel(format!(
                    "model `{}` comes from the project's linggen-agent.toml, and its requests \
                     would carry your AWS credentials: trust the file first (/trust), or \
                     configure the model in $LINGGEN_HOME/linggen-agent.toml",
                    self.id
                )),
            ));
        };
        let env = |name: &str| std::env::var(name).ok();
        let auth = credentials::find(Some(bearer_env), &env).map_err(|why| {
            self.endpoint.error(
                &self.base_url,
                ErrorKind::NoModel(format!("model `{}`: {why}", self.id)),
            )
        })?;
        let mut body = request_body(&request);
        if let Some(n) = self.max_tokens {
            body["inferenceConfig"]["maxTokens"] = json!(n);
        }
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        let headers = self.headers(&auth, &self.path(), &bytes);
        let mut wire = ConverseStream::default();
        self.endpoint
            .post_stream_bytes(&url, &bytes, &headers, &mut wire, sink)
            .await
    }

    fn describe(&self) -> String {
        format!("{} at {}", self.endpoint.model(), self.base_url)
    }

    async fn context_window(&self) -> Option<u32> {
        self.context_window
    }
}

/// `https://host:port` of a base URL (its path is added by [`BedrockProvider::path`]).
fn origin(base: &str) -> String {
    match base.split_once("://") {
        Some((scheme, rest)) => format!("{scheme}://{}", rest.split('/').next().unwrap_or("")),
        None => base.to_string(),
    }
}

/// The Converse request body: system prompt, alternating messages of content blocks, and
/// the tools. Without tools, Bedrock rejects tool blocks in the history, so earlier calls
/// and results are written out as text then.
pub fn request_body(request: &ChatRequest<'_>) -> Value {
    let with_tools = !request.tools.is_empty();
    let system: Vec<Value> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System && !m.content.trim().is_empty())
        .map(|m| json!({ "text": m.content }))
        .collect();
    let mut body = json!({ "messages": conversation(request.messages, with_tools) });
    if let Some(t) = request.temperature {
        body["inferenceConfig"] = json!({ "temperature": t });
    }
    if !system.is_empty() {
        body["system"] = Value::Array(system);
    }
    if with_tools {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"toolSpec": {
                    "name": t.name,
                    "description": t.description,
                    "inputSchema": { "json": t.parameters },
                }})
            })
            .collect();
        body["toolConfig"] = json!({ "tools": tools });
    }
    body
}

fn conversation(messages: &[ChatMessage], with_tools: bool) -> Vec<Value> {
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message.role {
            Role::System => continue,
            Role::User => {
                let mut blocks = text(&message.content);
                blocks.extend(image_blocks(&message.images));
                ("user", blocks)
            }
            Role::Assistant => {
                let mut blocks = text(&message.content);
                for call in &message.tool_calls {
                    blocks.push(if with_tools {
                        json!({"toolUse": {"toolUseId": call.id, "name": call.name, "input": call.arguments}})
                    } else {
                        json!({"text": format!("[called {} with {}]", call.name, call.arguments)})
                    });
                }
                ("assistant", blocks)
            }
            Role::Tool => ("user", tool_result(message, with_tools)),
        };
        push_turn(&mut turns, role, blocks);
    }
    turns_json(turns)
}

/// A tool result: a `toolResult` block of its text and images, or, in a request without
/// tools, the text and the images as they are.
fn tool_result(message: &ChatMessage, with_tools: bool) -> Vec<Value> {
    // Bedrock rejects blank text blocks; an image alone is a whole result.
    let content = match message.content.trim() {
        "" if message.images.is_empty() => "(no output)",
        "" => "",
        _ => message.content.as_str(),
    };
    if !with_tools {
        let mut blocks = vec![json!({"text": format!("[result]\n{content}")})];
        blocks.extend(image_blocks(&message.images));
        return blocks;
    }
    let mut blocks = text(content);
    blocks.extend(image_blocks(&message.images));
    vec![json!({"toolResult": {
        "toolUseId": message.tool_call_id.as_deref().unwrap_or_default(),
        "content": blocks,
        "status": if message.is_error { "error" } else { "success" },
    }})]
}

/// Image blocks; the JSON API takes their bytes base64-encoded.
fn image_blocks(images: &[super::Image]) -> Vec<Value> {
    images
        .iter()
        .map(|image| {
            json!({"image": {
                "format": image.format.short_name(),
                "source": {"bytes": image.data},
            }})
        })
        .collect()
}

fn text(content: &str) -> Vec<Value> {
    if content.trim().is_empty() {
        Vec::new()
    } else {
        vec![json!({ "text": content })]
    }
}

/// A tool call whose input is still arriving.
#[derive(Debug)]
struct PendingToolUse {
    id: String,
    name: String,
    input: String,
}

/// Parses ConverseStream's events into [`StreamEvent`]s.
#[derive(Debug, Default)]
pub struct ConverseStream {
    decoder: eventstream::Decoder,
    tool_uses: BTreeMap<u64, PendingToolUse>,
    stopped: bool,
}

impl WireStream for ConverseStream {
    fn feed(&mut self, bytes: &[u8], mut sink: EventSink<'_>) -> Result<bool, ErrorKind> {
        let messages = self.decoder.push(bytes).map_err(ErrorKind::Malformed)?;
        for message in &messages {
            if self.on_message(message, &mut sink)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn finish(&mut self, mut sink: EventSink<'_>) -> Result<bool, ErrorKind> {
        // `metadata` (usage) normally ends the stream; after `messageStop` the answer is
        // complete without it.
        if self.stopped && self.decoder.pending() == 0 {
            self.flush_tools(&mut sink);
            return Ok(true);
        }
        Err(ErrorKind::Disconnected(
            "the stream ended before `messageStop`".into(),
        ))
    }
}

impl ConverseStream {
    /// Handles one message; `true` at the end of the answer.
    fn on_message(
        &mut self,
        message: &eventstream::Message,
        sink: &mut EventSink<'_>,
    ) -> Result<bool, ErrorKind> {
        let data: Value = serde_json::from_slice(&message.payload).map_err(|e| {
            ErrorKind::Malformed(format!(
                "an event's payload is not JSON ({e}): {}",
                truncate_chars(&String::from_utf8_lossy(&message.payload), 200)
            ))
        })?;
        if matches!(message.header(":message-type"), Some("exception" | "error")) {
            let kind = message
                .header(":exception-type")
                .or_else(|| message.header(":error-code"))
                .unwrap_or("exception");
            let text = json_error_message(&data).unwrap_or_else(|| data.to_string());
            return Err(exception(kind, text));
        }
        let index = data
            .get("contentBlockIndex")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        match message.header(":event-type").unwrap_or_default() {
            "contentBlockStart" => {
                if let Some(tool) = data.pointer("/start/toolUse") {
                    let field = |k: &str| tool.get(k).and_then(Value::as_str).unwrap_or("");
                    self.tool_uses.insert(
                        index,
                        PendingToolUse {
                            id: field("toolUseId").to_string(),
                            name: field("name").to_string(),
                            input: String::new(),
                        },
                    );
                }
            }
            "contentBlockDelta" => {
                let delta = data.get("delta").unwrap_or(&Value::Null);
                let field = |path: &str| delta.pointer(path).and_then(Value::as_str);
                if let Some(t) = field("/text").filter(|t| !t.is_empty()) {
                    emit(sink, StreamEvent::Text(t.to_string()));
                } else if let Some(t) = field("/reasoningContent/text").filter(|t| !t.is_empty()) {
                    emit(sink, StreamEvent::Thinking(t.to_string()));
                } else if let Some(input) = field("/toolUse/input")
                    && let Some(tool) = self.tool_uses.get_mut(&index)
                {
                    tool.input.push_str(input);
                }
            }
            "contentBlockStop" => {
                if let Some(tool) = self.tool_uses.remove(&index) {
                    emit_tool_use(tool, sink);
                }
            }
            "messageStop" => {
                self.flush_tools(sink);
                if data.get("stopReason").and_then(Value::as_str) == Some("max_tokens") {
                    emit(sink, StreamEvent::CutShort);
                }
                self.stopped = true;
            }
            "metadata" => {
                let count = |k: &str| data.pointer(k).and_then(Value::as_u64).unwrap_or(0);
                emit(
                    sink,
                    StreamEvent::Usage(Usage {
                        input_tokens: count("/usage/inputTokens"),
                        output_tokens: count("/usage/outputTokens"),
                        generation_ms: 0,
                    }),
                );
                self.flush_tools(sink);
                return Ok(true);
            }
            // `messageStart` and event types added after this was written.
            _ => {}
        }
        Ok(false)
    }

    fn flush_tools(&mut self, sink: &mut EventSink<'_>) {
        for (_, tool) in std::mem::take(&mut self.tool_uses) {
            emit_tool_use(tool, sink);
        }
    }
}

/// An in-stream exception as the HTTP error it stands for, so that retries and fallback
/// treat it like the same failure before the stream began.
fn exception(kind: &str, message: String) -> ErrorKind {
    let status = match kind {
        "throttlingException" => 429,
        "serviceUnavailableException" => 503,
        "internalServerException" | "modelStreamErrorException" => 500,
        "validationException" => 400,
        _ => return ErrorKind::Server(format!("{kind}: {message}")),
    };
    ErrorKind::Http {
        status,
        message: format!("{kind}: {message}"),
        retry_after: None,
    }
}

fn emit_tool_use(tool: PendingToolUse, sink: &mut EventSink<'_>) {
    let arguments = parse_arguments(&tool.input);
    emit(
        sink,
        StreamEvent::ToolCall(ToolCall {
            id: tool.id,
            name: tool.name,
            arguments,
        }),
    );
}

#[cfg(test)]
mod tests;
