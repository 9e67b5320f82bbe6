//! The HTTP plumbing every provider shares: concurrency limit, retries before the body is
//! read, how long a server may stay silent (`timeout_secs` until the answer starts,
//! `[llm] stall_secs` once it has), and turning HTTP failures into [`LlmError`]s that carry
//! the server's own explanation.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use reqwest::{Client, Response, StatusCode};
use serde_json::Value;

use super::error::{ErrorKind, LlmError};
use super::retry::{RetryPolicy, parse_retry_after};
use super::{EventSink, StreamEvent};
use crate::config::model::ModelConfig;
use crate::protocol::ndjson::{NdjsonDecoder, TooLong};
use crate::protocol::sse::{SseDecoder, SseEvent};

/// How long establishing a TCP (and TLS) connection may take. Local servers answer in
/// milliseconds; a hosted API that needs longer than this is unreachable in practice.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Error bodies longer than this are cut: they are for a one-line message, and a
/// misconfigured proxy can answer with megabytes of HTML.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// How much of a non-JSON error body is shown to the person.
const RAW_MESSAGE_CHARS: usize = 300;

/// Sets the process's TLS crypto provider, once: `ring`, so that no client anywhere falls
/// back to looking for another (aws-lc would compile C). Called before every client is made ([`client`], [`plain_client`]), so no
/// path can make one first.
pub fn install_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// `builder` trusting the machine's own certificate authorities (`/etc/ssl/certs`, or
/// `SSL_CERT_FILE`) besides the built-in roots: for servers a person configured (MCP
/// servers and their sign-in), which may sit behind a company's root. Read once, when the
/// first such client is made: never on the way to a model's first byte.
pub fn with_system_roots(builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    static ROOTS: std::sync::OnceLock<Vec<reqwest::Certificate>> = std::sync::OnceLock::new();
    let roots = ROOTS.get_or_init(|| {
        rustls_native_certs::load_native_certs()
            .certs
            .iter()
            .filter_map(|der| reqwest::Certificate::from_der(der.as_ref()).ok())
            .collect()
    });
    roots.iter().fold(builder, |builder, root| {
        builder.add_root_certificate(root.clone())
    })
}

/// A client with reqwest's defaults (for a probe or a test).
pub fn plain_client() -> Client {
    install_tls_provider();
    Client::new()
}

/// The client providers are meant to share. There is deliberately no overall request
/// timeout: a long answer legitimately streams for minutes, so providers enforce an idle
/// timeout between received bytes instead.
pub fn client() -> Result<Client, reqwest::Error> {
    install_tls_provider();
    Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_keepalive(Duration::from_secs(30))
        .build()
}

/// A wire protocol's stream parser: decodes body bytes into [`StreamEvent`]s.
pub trait WireStream: Send {
    /// Handles a chunk of the body; returns `true` once the protocol's terminator arrived.
    fn feed(&mut self, bytes: &[u8], sink: EventSink<'_>) -> Result<bool, ErrorKind>;

    /// The body ended without a terminator: flush what is buffered and return `Ok(true)`
    /// if it contained the terminator after all, otherwise `Err(Disconnected)`.
    fn finish(&mut self, sink: EventSink<'_>) -> Result<bool, ErrorKind>;
}

/// Splits a byte stream into frames (SSE events, NDJSON lines).
pub trait FrameDecoder: Send {
    type Frame;
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Self::Frame>, TooLong>;
    /// What is left when the body ends.
    fn finish(&mut self) -> Vec<Self::Frame>;
}

impl FrameDecoder for SseDecoder {
    type Frame = SseEvent;
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, TooLong> {
        SseDecoder::push(self, bytes)
    }
    fn finish(&mut self) -> Vec<SseEvent> {
        SseDecoder::finish(self)
    }
}

impl FrameDecoder for NdjsonDecoder {
    type Frame = String;
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<String>, TooLong> {
        NdjsonDecoder::push(self, bytes)
    }
    fn finish(&mut self) -> Vec<String> {
        NdjsonDecoder::finish(self)
    }
}

/// A wire protocol seen frame by frame; the byte-level [`WireStream`] comes with it.
pub trait FrameProtocol: Send {
    type Decoder: FrameDecoder;
    /// How the protocol ends a response, for the message when a stream stops short.
    const TERMINATOR: &'static str;
    fn decoder(&mut self) -> &mut Self::Decoder;
    /// Handles one frame; `true` at the terminator (what follows it is ignored).
    fn on_frame(
        &mut self,
        frame: &<Self::Decoder as FrameDecoder>::Frame,
        sink: &mut EventSink<'_>,
    ) -> Result<bool, ErrorKind>;

    fn until_done(
        &mut self,
        frames: Vec<<Self::Decoder as FrameDecoder>::Frame>,
        sink: &mut EventSink<'_>,
    ) -> Result<bool, ErrorKind> {
        // By value: each frame is freed once handled, not when the last one is.
        for frame in frames {
            if self.on_frame(&frame, sink)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl<P: FrameProtocol> WireStream for P {
    fn feed(&mut self, bytes: &[u8], mut sink: EventSink<'_>) -> Result<bool, ErrorKind> {
        let frames = self
            .decoder()
            .push(bytes)
            .map_err(|e| ErrorKind::Malformed(e.to_string()))?;
        self.until_done(frames, &mut sink)
    }

    fn finish(&mut self, mut sink: EventSink<'_>) -> Result<bool, ErrorKind> {
        let frames = self.decoder().finish();
        if self.until_done(frames, &mut sink)? {
            return Ok(true);
        }
        Err(ErrorKind::Disconnected(format!(
            "the stream ended before {}",
            Self::TERMINATOR
        )))
    }
}

/// A whole body of at most `limit` bytes; `Ok(None)` as soon as it is longer (nothing more
/// is read). For answers whose size a server could make unbounded (OAuth's, MCP's).
pub async fn body_within(
    response: &mut Response,
    limit: usize,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if chunk.len() > limit - body.len() {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// One model server's connection settings, shared by all of its requests. How many
/// requests may run at once is decided above it, process-wide (`routing::capacity`).
#[derive(Debug)]
pub struct Endpoint {
    model: String,
    http: Client,
    /// Silence allowed until the answer starts (`timeout_secs`).
    idle: Duration,
    /// Silence allowed once it has (`[llm] stall_secs`), if shorter than `idle`.
    stall: Duration,
    retry: RetryPolicy,
}

impl Endpoint {
    pub fn new(model: &str, http: Client, idle: Duration) -> Self {
        Endpoint {
            model: model.to_string(),
            http,
            idle,
            stall: idle,
            retry: RetryPolicy::default(),
        }
    }

    pub fn for_model(cfg: &ModelConfig, http: Client) -> Self {
        let idle = Duration::from_secs(cfg.timeout_secs.max(1));
        let mut endpoint = Self::new(&cfg.model, http, idle);
        endpoint.set_stall(Duration::from_secs(cfg.stall_secs.max(1)));
        endpoint
    }

    /// How long a stream that has started may stay silent before it counts as dropped.
    pub fn set_stall(&mut self, stall: Duration) {
        self.stall = stall;
    }

    pub fn set_retry_policy(&mut self, retry: RetryPolicy) {
        self.retry = retry;
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn error(&self, url: &str, kind: ErrorKind) -> LlmError {
        LlmError::new(&self.model, url, kind)
    }

    /// POSTs `body` as JSON and streams the answer through `wire` into `sink`.
    pub async fn post_stream(
        &self,
        url: &str,
        body: &Value,
        headers: &[(&str, String)],
        wire: &mut dyn WireStream,
        sink: EventSink<'_>,
    ) -> Result<(), LlmError> {
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        self.post_stream_bytes(url, &bytes, headers, wire, sink)
            .await
    }

    /// POSTs exactly `body` (a signed request must send the bytes it signed) and streams
    /// the answer through `wire` into `sink`.
    ///
    /// Until the answer has started (the first text, reasoning, tool call or usage the wire
    /// decodes) the server may be silent for `timeout_secs`: a local CPU model can read a
    /// long prompt for minutes, and some servers send their headers, or a role-only first
    /// chunk, before they do. Once it has, silence for `stall_secs` is a broken stream.
    pub async fn post_stream_bytes(
        &self,
        url: &str,
        body: &[u8],
        headers: &[(&str, String)],
        wire: &mut dyn WireStream,
        sink: EventSink<'_>,
    ) -> Result<(), LlmError> {
        let mut response = self.send_bytes(url, Some(body), headers).await?;
        let started = AtomicBool::new(false);
        let mut watched = |event: StreamEvent| {
            started.store(true, Ordering::Relaxed);
            sink(event);
        };
        loop {
            let chunk = if started.load(Ordering::Relaxed) && self.stall < self.idle {
                self.next_chunk_within(url, &mut response, self.stall, ErrorKind::Stalled)
                    .await?
            } else {
                self.next_chunk(url, &mut response).await?
            };
            let Some(chunk) = chunk else { break };
            if wire
                .feed(&chunk, &mut watched)
                .map_err(|k| self.error(url, k))?
            {
                return Ok(());
            }
            // A fast server's body is always ready: give the task's other work (the
            // frame's token flush, a paused reader, cancellation) its turn now and then.
            tokio::task::coop::consume_budget().await;
        }
        wire.finish(&mut watched).map_err(|k| self.error(url, k))?;
        Ok(())
    }

    /// Sends a request (POST with `body`, GET without) and waits for a success status,
    /// retrying as the policy allows. Nothing of the body has been read when this returns,
    /// which is what makes the retries safe.
    pub async fn send(
        &self,
        url: &str,
        body: Option<&Value>,
        headers: &[(&str, String)],
    ) -> Result<Response, LlmError> {
        let bytes = body.map(|b| serde_json::to_vec(b).unwrap_or_default());
        self.send_bytes(url, bytes.as_deref(), headers).await
    }

    /// [`Self::send`] with the body's bytes as they are (JSON, by content type).
    pub async fn send_bytes(
        &self,
        url: &str,
        body: Option<&[u8]>,
        headers: &[(&str, String)],
    ) -> Result<Response, LlmError> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let kind = match self.send_once(url, body, headers).await {
                Ok(response) => return Ok(response),
                Err(kind) => kind,
            };
            match self.retry.delay_before_retry(attempts, &kind) {
                Some(delay) => {
                    super::retry::notify(super::retry::Retrying {
                        attempt: attempts + 1,
                        max_attempts: self.retry.max_attempts,
                        delay,
                        reason: super::retry::reason(&kind),
                    });
                    tokio::time::sleep(delay).await
                }
                None => return Err(self.error(url, kind)),
            }
        }
    }

    async fn send_once(
        &self,
        url: &str,
        body: Option<&[u8]>,
        headers: &[(&str, String)],
    ) -> Result<Response, ErrorKind> {
        let typed = headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("content-type"));
        let mut request = match body {
            Some(body) if typed => self.http.post(url).body(body.to_vec()),
            Some(body) => self
                .http
                .post(url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_vec()),
            None => self.http.get(url),
        };
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        // A server busy with a long prompt may hold back even the headers; that wait counts
        // against the same idle limit as the body.
        let response = match tokio::time::timeout(self.idle, request.send()).await {
            Err(_) => return Err(ErrorKind::Timeout(self.idle)),
            Ok(Err(e)) => return Err(classify_send_error(&e, self.idle)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let body = self.read_error_body(response).await;
        Err(ErrorKind::Http {
            status: status.as_u16(),
            message: server_message(&body, status),
            retry_after,
        })
    }

    /// Reads an error body as far as it comes; a failure here must not hide the status.
    async fn read_error_body(&self, mut response: Response) -> Vec<u8> {
        let mut body = Vec::new();
        while body.len() < ERROR_BODY_LIMIT {
            match tokio::time::timeout(self.idle, response.chunk()).await {
                Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
                _ => break,
            }
        }
        body
    }

    /// The next piece of the body, or `None` at its end. No byte within the idle limit is a
    /// timeout.
    pub async fn next_chunk(
        &self,
        url: &str,
        response: &mut Response,
    ) -> Result<Option<Bytes>, LlmError> {
        self.next_chunk_within(url, response, self.idle, ErrorKind::Timeout)
            .await
    }

    /// [`Self::next_chunk`] with `limit` of silence, reported as `silent(limit)`.
    async fn next_chunk_within(
        &self,
        url: &str,
        response: &mut Response,
        limit: Duration,
        silent: fn(Duration) -> ErrorKind,
    ) -> Result<Option<Bytes>, LlmError> {
        match tokio::time::timeout(limit, response.chunk()).await {
            Err(_) => Err(self.error(url, silent(limit))),
            Ok(Err(e)) => Err(self.error(url, ErrorKind::Disconnected(error_chain(&e)))),
            Ok(Ok(chunk)) => Ok(chunk),
        }
    }

    /// Sends a small request and parses the whole answer as JSON (discovery calls).
    pub async fn fetch_json(&self, url: &str, body: Option<&Value>) -> Result<Value, LlmError> {
        let mut response = self.send(url, body, &[]).await?;
        let mut bytes = Vec::new();
        while let Some(chunk) = self.next_chunk(url, &mut response).await? {
            bytes.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            self.error(
                url,
                ErrorKind::Malformed(format!("the answer is not JSON ({e})")),
            )
        })
    }
}

/// Pushes an event; a tiny helper so stream parsers read as a list of what they emit.
pub fn emit(sink: &mut EventSink<'_>, event: StreamEvent) {
    (*sink)(event);
}

/// Joins a base URL and a path without doubling or dropping the slash between them.
pub fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

fn classify_send_error(e: &reqwest::Error, idle: Duration) -> ErrorKind {
    if e.is_timeout() {
        ErrorKind::Timeout(idle)
    } else if e.is_connect() {
        ErrorKind::Connect(root_cause(e))
    } else if error_chain(e).contains("connection closed before message completed") {
        // A kept-alive connection the server had just closed (llama.cpp does after an
        // error): nothing was answered, so asking again on a fresh one is safe.
        ErrorKind::Connect("the server closed the connection before answering".to_string())
    } else {
        ErrorKind::Disconnected(format!("no answer to the request: {}", error_chain(e)))
    }
}

/// The innermost cause ("Connection refused (os error 111)"): for a failed connect that is
/// all a person needs, and the layers above it only repeat "client error (Connect)".
fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}

/// `error`'s own words and, when it has one, its innermost cause: reqwest says only "error
/// sending request", not that a certificate was refused or a connection reset.
pub fn with_root_cause(error: &dyn std::error::Error) -> String {
    match error.source() {
        Some(_) => format!("{error}: {}", root_cause(error)),
        None => error.to_string(),
    }
}

/// Every cause under `error`, each said once: reqwest's own message is "error sending
/// request for url (...)"; the useful part ("Connection refused") is in the sources.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut source = error.source();
    while let Some(err) = source {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = err.source();
    }
    if parts.is_empty() {
        error.to_string()
    } else {
        parts.join(": ")
    }
}

/// The server's own explanation of an HTTP error: the message field of the JSON shapes the
/// APIs use, otherwise the start of the raw body, otherwise the status's reason.
pub fn server_message(body: &[u8], status: StatusCode) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if let Ok(value) = serde_json::from_str::<Value>(text)
        && let Some(message) = json_error_message(&value)
    {
        return message;
    }
    if text.is_empty() {
        return status
            .canonical_reason()
            .unwrap_or("no message")
            .to_string();
    }
    truncate_chars(text, RAW_MESSAGE_CHARS)
}

/// Finds the message in `{"error":{"message":..}}`, `{"error":".."}`, `{"message":..}` or
/// `{"detail":".."}` (FastAPI-based servers).
pub fn json_error_message(value: &Value) -> Option<String> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    match value.get("error") {
        Some(Value::String(message)) => return Some(message.clone()),
        Some(error @ Value::Object(_)) => {
            if let Some(message) = text(error.get("message")) {
                return Some(message);
            }
        }
        _ => {}
    }
    text(value.get("message")).or_else(|| text(value.get("detail")))
}

pub fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod test_server;

#[cfg(test)]
mod tests {
    use super::test_server::{Reply, serve};
    use super::*;
    use serde_json::json;

    fn fast_endpoint(idle_ms: u64) -> Endpoint {
        let mut endpoint = Endpoint::new("m", plain_client(), Duration::from_millis(idle_ms));
        endpoint.set_retry_policy(RetryPolicy {
            base_delay: Duration::from_millis(1),
            ..RetryPolicy::default()
        });
        endpoint
    }

    #[test]
    fn error_messages_come_from_the_server() {
        let status = StatusCode::BAD_REQUEST;
        let cases = [
            (
                r#"{"error":{"message":"context too long","type":"x"}}"#,
                "context too long",
            ),
            (
                r#"{"error":"model \"q\" not found, try pulling it first"}"#,
                "model \"q\" not found, try pulling it first",
            ),
            (
                r#"{"object":"error","message":"bad tool schema"}"#,
                "bad tool schema",
            ),
            (r#"{"detail":"Not Found"}"#, "Not Found"),
            ("upstream connect error", "upstream connect error"),
            ("", "Bad Request"),
        ];
        for (body, expected) in cases {
            assert_eq!(server_message(body.as_bytes(), status), expected);
        }
        let html = format!("<html>{}</html>", "x".repeat(1000));
        let message = server_message(html.as_bytes(), status);
        assert_eq!(message.chars().count(), RAW_MESSAGE_CHARS + 1);
        assert!(message.ends_with('…'));
    }

    #[test]
    fn urls_join_with_exactly_one_slash() {
        assert_eq!(join_url("http://h:1/v1/", "/chat"), "http://h:1/v1/chat");
        assert_eq!(join_url("http://h:1", "api/chat"), "http://h:1/api/chat");
    }

    #[tokio::test]
    async fn retries_5xx_and_429_then_succeeds() {
        let server = serve(vec![
            Reply::json(503, r#"{"error":"loading model"}"#),
            Reply::json(429, r#"{"error":"slow down"}"#).header("Retry-After", "0"),
            Reply::json(200, r#"{"ok":true}"#),
        ])
        .await;
        let value = fast_endpoint(2000)
            .fetch_json(&server.url("/x"), Some(&json!({"a":1})))
            .await;
        assert_eq!(value, Ok(json!({"ok": true})));
        assert_eq!(server.requests().len(), 3);
    }

    #[tokio::test]
    async fn client_errors_are_not_retried_and_keep_the_server_message() {
        let server = serve(vec![Reply::json(
            401,
            r#"{"error":{"message":"invalid x-api-key"}}"#,
        )])
        .await;
        let err = fast_endpoint(2000)
            .fetch_json(&server.url("/x"), None)
            .await
            .err();
        let kind = err.map(|e| e.kind);
        assert_eq!(
            kind,
            Some(ErrorKind::Http {
                status: 401,
                message: "invalid x-api-key".into(),
                retry_after: None
            })
        );
        assert_eq!(server.requests().len(), 1);
    }

    #[tokio::test]
    async fn persistent_5xx_gives_up_after_the_last_attempt() {
        let replies = (0..4).map(|_| Reply::json(502, "bad gateway")).collect();
        let server = serve(replies).await;
        let err = fast_endpoint(2000)
            .fetch_json(&server.url("/x"), None)
            .await;
        assert!(matches!(
            err.map_err(|e| e.kind),
            Err(ErrorKind::Http { status: 502, .. })
        ));
        assert_eq!(server.requests().len(), 4);
    }

    #[tokio::test]
    async fn refused_connection_is_a_connect_error() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await;
        let port = listener.map(|l| l.local_addr().map(|a| a.port()));
        let Ok(Ok(port)) = port else {
            panic!("no free port")
        };
        // The listener is dropped here, so the port refuses connections.
        let url = format!("http://127.0.0.1:{port}/x");
        let err = fast_endpoint(2000).fetch_json(&url, None).await;
        let Err(err) = err else {
            panic!("expected an error")
        };
        assert!(matches!(err.kind, ErrorKind::Connect(_)), "{err:?}");
        assert!(err.to_string().contains("is the server running?"));
    }

    #[tokio::test]
    async fn silence_in_the_body_is_a_timeout() {
        let server = serve(vec![
            Reply::stream("application/json", &["{\"partial\":"]).hang(),
        ])
        .await;
        let err = fast_endpoint(300).fetch_json(&server.url("/x"), None).await;
        assert_eq!(
            err.map_err(|e| e.kind),
            Err(ErrorKind::Timeout(Duration::from_millis(300)))
        );
    }

    async fn stream_until_silent(endpoint: &Endpoint, first_chunk: &str) -> ErrorKind {
        let server = serve(vec![
            Reply::stream("text/event-stream", &[first_chunk]).hang(),
        ])
        .await;
        let mut wire = super::super::openai::OpenAiStream::default();
        let mut events = Vec::new();
        let result = endpoint
            .post_stream(&server.url("/x"), &json!({}), &[], &mut wire, &mut |e| {
                events.push(e)
            })
            .await;
        result
            .err()
            .map(|e| e.kind)
            .unwrap_or(ErrorKind::NoModel("no error".into()))
    }

    /// Once the answer has started, `stall` of silence breaks it off; before that (a
    /// role-only first chunk, as some servers send before reading the prompt) the model's
    /// own, longer limit applies.
    #[tokio::test]
    async fn silence_after_the_answer_started_is_a_stall() {
        let mut endpoint = fast_endpoint(1500);
        endpoint.set_stall(Duration::from_millis(200));
        let started = "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n";
        let began = std::time::Instant::now();
        assert_eq!(
            stream_until_silent(&endpoint, started).await,
            ErrorKind::Stalled(Duration::from_millis(200))
        );
        assert!(began.elapsed() < Duration::from_millis(1400));
        let role_only = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n";
        assert_eq!(
            stream_until_silent(&endpoint, role_only).await,
            ErrorKind::Timeout(Duration::from_millis(1500))
        );
    }
}
