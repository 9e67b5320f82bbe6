//! Streamable HTTP (MCP 2025-03-26 and later): every message linggen sends is a POST to
//! the server's one URL. The server answers a notification or a response with 202 and no
//! body, and a request with either one JSON message (or a batch) or an event stream whose
//! `message` events carry the answer and whatever the server sends meanwhile. The session
//! id the server gives in its answer to `initialize` goes back on every later message, and
//! a 404 for it means the session is gone. A GET on the same URL opens a stream for what
//! the server sends unasked; a server that offers none answers 405.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{RequestBuilder, Response, StatusCode};
use tokio::sync::mpsc;

use super::inbound::{Events, Inbound, Sent};
use super::{Connection, Link, McpError, Started};
use crate::llm::http::{body_within, with_root_cause};
use crate::mcp::config::ServerConfig;
use crate::protocol::jsonrpc::Peer;
use crate::protocol::ndjson::{MAX_LINE_BYTES, TooLong};
use crate::protocol::sse::SseDecoder;
use crate::sync::lock;

const SESSION_ID: &str = "Mcp-Session-Id";
const PROTOCOL_VERSION: &str = "MCP-Protocol-Version";
const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";

/// Why a bearer token could not be had: one line, never the token.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(in crate::mcp) struct TokenError(pub String);

/// The access token of a sign-in (`linggen mcp login`), sent as `Authorization: Bearer`.
#[async_trait::async_trait]
pub(in crate::mcp) trait AccessToken: Send + Sync {
    /// The current token, refreshed first when it has expired.
    async fn token(&self) -> Result<String, TokenError>;
    /// A new token, after the server refused `rejected` (unless another request already
    /// has a newer one).
    async fn refresh(&self, rejected: &str) -> Result<String, TokenError>;
}

#[async_trait::async_trait]
impl AccessToken for crate::mcp::oauth::Bearer {
    async fn token(&self) -> Result<String, TokenError> {
        self.access_token()
            .await
            .map_err(|e| TokenError(e.to_string()))
    }

    async fn refresh(&self, rejected: &str) -> Result<String, TokenError> {
        self.refresh_after_rejection(rejected)
            .await
            .map_err(|e| TokenError(e.to_string()))
    }
}

/// Why a POST (or the GET stream) did not carry its message.
#[derive(Debug)]
enum Failure {
    /// 401, and no token (or no refreshed one) that the server takes.
    Unauthorized(String),
    /// 404 for the session linggen holds: the server forgot it.
    Expired,
    /// The server could not be reached, or its stream broke off.
    Unreachable(String),
    /// Any other answer that is not a success.
    Status(StatusCode),
    /// A message without end (see `MAX_LINE_BYTES`).
    TooLong(TooLong),
}

/// A JSON body, up to [`MAX_LINE_BYTES`] (a server could send one without end).
async fn read_bounded(mut response: Response) -> Result<String, Failure> {
    let body = body_within(&mut response, MAX_LINE_BYTES)
        .await
        .map_err(|e| {
            Failure::Unreachable(format!("its answer broke off: {}", with_root_cause(&e)))
        })?
        .ok_or(Failure::TooLong(TooLong(MAX_LINE_BYTES)))?;
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// A streamable HTTP session, shared by the tasks that post its messages.
struct Session {
    client: reqwest::Client,
    url: String,
    token: Option<Arc<dyn AccessToken>>,
    /// `Mcp-Session-Id`, once the server gave one.
    id: Mutex<Option<String>>,
    /// `MCP-Protocol-Version`, once the server answered `initialize`.
    version: Mutex<Option<String>>,
    /// A 401 no token cured: the person must sign in.
    signed_out: AtomicBool,
    inbound: Inbound,
}

/// Reaches `url` with streamable HTTP and completes the handshake.
pub(super) async fn open(
    server: &ServerConfig,
    url: &str,
    headers: &BTreeMap<String, String>,
    events: Events,
) -> Result<Connection, McpError> {
    let start_error = |reason: String| McpError::Start {
        server: server.name.clone(),
        reason,
    };
    let client = client(headers).map_err(|e| start_error(e.to_string()))?;
    let sends_own = headers
        .keys()
        .any(|name| name.eq_ignore_ascii_case("authorization"));
    // A token from `linggen mcp login`, unless the entry sends its own `Authorization`.
    let bearer = match sends_own {
        true => None,
        false => crate::mcp::oauth::Bearer::load(&server.name, url)
            .await
            .map_err(|e| start_error(format!("its sign-in could not be used: {e}")))?,
    };
    let signed_in = bearer.is_some();
    let token = bearer.map(|bearer| Arc::new(bearer) as Arc<dyn AccessToken>);
    let (session, started) = start(client, url, token, events);
    match started.handshake(server).await {
        Err(_) if session.signed_out.load(Ordering::Relaxed) => Err(McpError::NeedsLogin {
            server: server.name.clone(),
            // With a sign-in that no longer works, the person is told to sign in again.
            again: if signed_in { " again" } else { "" },
        }),
        opened => opened,
    }
}

/// The session's tasks started: one posts what linggen sends, in order (a request's
/// answer is read on a task of its own, so a long call holds up nothing); once the
/// handshake is done, one listens on the GET stream.
fn start(
    client: reqwest::Client,
    url: &str,
    token: Option<Arc<dyn AccessToken>>,
    events: Events,
) -> (Arc<Session>, Started) {
    let (peer, unsent) = Peer::unsent();
    let session = Arc::new(Session {
        client,
        url: url.to_string(),
        token,
        id: Mutex::default(),
        version: Mutex::default(),
        signed_out: AtomicBool::new(false),
        inbound: Inbound::new(peer.clone(), events),
    });
    let poster = tokio::spawn(post_all(session.clone(), unsent));
    let ending = session.clone();
    let started = Started {
        peer,
        link: Link {
            tasks: vec![poster.abort_handle()],
            child: None,
            goodbye: Some(Box::new(move || ending.end())),
        },
        stderr: Arc::default(),
    };
    (session, started)
}

/// Posts every message linggen sends. Notifications and responses are posted one after
/// the other (the server answers them at once), so `initialized` arrives before the
/// requests that follow it.
async fn post_all(session: Arc<Session>, mut unsent: mpsc::UnboundedReceiver<String>) {
    let mut requests = tokio::task::JoinSet::new();
    while let Some(message) = unsent.recv().await {
        while requests.try_join_next().is_some() {}
        let sent = Sent::of(&message);
        let initialized = sent.method.as_deref() == Some("notifications/initialized");
        if sent.is_request() {
            let session = session.clone();
            requests.spawn(async move { session.post(&message, &sent).await });
        } else {
            session.post(&message, &sent).await;
        }
        if initialized {
            let listener = session.clone();
            requests.spawn(async move { listener.listen().await });
        }
    }
}

impl Session {
    /// Posts one message and hands in what comes back.
    async fn post(&self, message: &str, sent: &Sent) {
        let Err(failure) = self.exchange(message, sent).await else {
            return;
        };
        let reason = match failure {
            Failure::Unauthorized(reason) => {
                self.signed_out.store(true, Ordering::Relaxed);
                reason
            }
            Failure::Expired => {
                self.inbound.closed();
                "its session ended".to_string()
            }
            // The server went away: during the handshake the person is told why; after
            // it, the call says the server stopped, and the next one reconnects.
            Failure::Unreachable(reason) => {
                if lock(&self.version).is_none() {
                    self.inbound.failed(sent, reason);
                }
                self.inbound.closed();
                return;
            }
            Failure::Status(status) => format!("it answered HTTP {status}"),
            Failure::TooLong(too_long) => {
                self.inbound.broke(too_long);
                return;
            }
        };
        self.inbound.failed(sent, reason);
    }

    async fn exchange(&self, message: &str, sent: &Sent) -> Result<(), Failure> {
        let had_session = self.id().is_some();
        let response = self
            .send(|| {
                self.with_session(self.client.post(&self.url))
                    .header(ACCEPT, format!("{JSON}, {EVENT_STREAM}"))
                    .header(CONTENT_TYPE, JSON)
                    .body(message.to_string())
            })
            .await?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(());
        }
        if status == StatusCode::NOT_FOUND && had_session {
            return Err(Failure::Expired);
        }
        let initialize = sent.method.as_deref() == Some("initialize");
        if initialize
            && status.is_success()
            && let Some(id) = header(&response, SESSION_ID)
        {
            *lock(&self.id) = Some(id);
        }
        // An error status may still carry a JSON-RPC error: read it first.
        self.read(response, initialize).await?;
        if !status.is_success() {
            return Err(Failure::Status(status));
        }
        // A request whose answer the body did not carry; one it did stands.
        self.inbound
            .failed(sent, "it ended its answer without a response");
        Ok(())
    }

    /// Hands in the messages of a body: one JSON message or batch, or an event stream.
    async fn read(&self, response: Response, initialize: bool) -> Result<(), Failure> {
        let kind = header(&response, CONTENT_TYPE.as_str()).unwrap_or_default();
        if kind.starts_with(EVENT_STREAM) {
            return self.read_events(response, initialize).await;
        }
        if kind.starts_with(JSON) {
            let body = read_bounded(response).await?;
            self.hand_in(&body, initialize);
        }
        Ok(())
    }

    /// Hands in each `message` event of an event stream, until it ends.
    async fn read_events(&self, mut response: Response, initialize: bool) -> Result<(), Failure> {
        let mut decoder = SseDecoder::new();
        loop {
            let chunk = response.chunk().await.map_err(|e| {
                Failure::Unreachable(format!(
                    "its event stream broke off: {}",
                    with_root_cause(&e)
                ))
            })?;
            let events = match &chunk {
                Some(chunk) => decoder.push(chunk).map_err(Failure::TooLong)?,
                None => decoder.finish(),
            };
            for event in events {
                // Events with no data prime a stream for resuming; linggen does not resume.
                if matches!(event.event.as_str(), "" | "message") && !event.data.trim().is_empty() {
                    self.hand_in(&event.data, initialize);
                }
            }
            if chunk.is_none() {
                return Ok(());
            }
        }
    }

    /// Hands a message in; the answer to `initialize` first sets the protocol version
    /// every later message names.
    fn hand_in(&self, message: &str, initialize: bool) {
        if initialize
            && let Ok(answer) = serde_json::from_str::<serde_json::Value>(message)
            && let Some(version) = answer["result"]["protocolVersion"].as_str()
        {
            *lock(&self.version) = Some(version.to_string());
        }
        self.inbound.take(message);
    }

    /// The GET stream of what the server sends unasked (a changed tool list, say), for as
    /// long as the session lasts. A server that offers none (405, or an answer that is not
    /// an event stream) sends everything in its answers. A stream that ends or breaks is
    /// opened again — proxies end idle streams, and a server restarts — after a pause that
    /// doubles with each stream that did not last (see [`ListenPause`]).
    async fn listen(&self) {
        let mut pause = ListenPause::default();
        loop {
            let opened = self
                .send(|| {
                    self.with_session(self.client.get(&self.url))
                        .header(ACCEPT, EVENT_STREAM)
                })
                .await;
            match opened {
                Ok(response) if response.status().is_success() && is_event_stream(&response) => {
                    let began = std::time::Instant::now();
                    if let Err(Failure::TooLong(too_long)) = self.read_events(response, false).await
                    {
                        return self.inbound.broke(too_long);
                    }
                    pause.after_stream(began.elapsed());
                }
                // Not reached, or a proxy's 502 or 503: the server may be restarting.
                Err(Failure::Unreachable(_)) => pause.after_stream(Duration::ZERO),
                Ok(response) if response.status().is_server_error() => {
                    pause.after_stream(Duration::ZERO);
                }
                // No stream offered, a sign-in needed, or the session gone: the POSTs
                // say so when it matters.
                Ok(_) | Err(_) => return,
            }
            if self.inbound.is_closed() {
                return;
            }
            tokio::time::sleep(pause.next()).await;
        }
    }

    /// Sends what `build` makes, with the signed-in token when there is one; a token the
    /// server refuses is refreshed once and the request sent again.
    async fn send(&self, build: impl Fn() -> RequestBuilder) -> Result<Response, Failure> {
        let unreachable = |e: reqwest::Error| {
            Failure::Unreachable(format!("cannot reach it: {}", with_root_cause(&e)))
        };
        let Some(token) = &self.token else {
            let response = build().send().await.map_err(unreachable)?;
            return refused(response);
        };
        let unauthorized = |e: TokenError| Failure::Unauthorized(format!("its sign-in: {e}"));
        let bearer = token.token().await.map_err(unauthorized)?;
        let response = build()
            .bearer_auth(&bearer)
            .send()
            .await
            .map_err(unreachable)?;
        if response.status() != StatusCode::UNAUTHORIZED {
            return Ok(response);
        }
        let bearer = token.refresh(&bearer).await.map_err(unauthorized)?;
        let response = build()
            .bearer_auth(bearer)
            .send()
            .await
            .map_err(unreachable)?;
        refused(response)
    }

    fn with_session(&self, request: RequestBuilder) -> RequestBuilder {
        let mut request = request;
        if let Some(id) = self.id() {
            request = request.header(SESSION_ID, id);
        }
        if let Some(version) = lock(&self.version).clone() {
            request = request.header(PROTOCOL_VERSION, version);
        }
        request
    }

    fn id(&self) -> Option<String> {
        lock(&self.id).clone()
    }

    /// Tells the server the session is over (DELETE), without waiting: best effort, as the
    /// specification asks of a client that leaves.
    fn end(self: Arc<Self>) {
        let Some(id) = self.id() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let _ = self
                .send(|| self.client.delete(&self.url).header(SESSION_ID, &id))
                .await;
        });
    }
}

/// A 401 as the failure it is; any other answer as it came.
fn refused(response: Response) -> Result<Response, Failure> {
    if response.status() == StatusCode::UNAUTHORIZED {
        return Err(Failure::Unauthorized(
            "it asks for a sign-in (HTTP 401)".into(),
        ));
    }
    Ok(response)
}

fn is_event_stream(response: &Response) -> bool {
    header(response, CONTENT_TYPE.as_str()).is_some_and(|kind| kind.starts_with(EVENT_STREAM))
}

/// How long to wait before opening the GET stream again: a second after a stream that
/// lasted a minute or more, doubling up to a minute while each one ends (or fails) sooner —
/// a server that ends every stream at once is not asked again and again.
#[derive(Debug)]
struct ListenPause(Duration);

impl ListenPause {
    const FIRST: Duration = Duration::from_secs(1);
    const LONGEST: Duration = Duration::from_secs(60);
    const LASTED: Duration = Duration::from_secs(60);

    fn after_stream(&mut self, lasted: Duration) {
        if lasted >= Self::LASTED {
            self.0 = Self::FIRST;
        }
    }

    /// The pause to take now; the one after it is twice as long.
    fn next(&mut self) -> Duration {
        let now = self.0;
        self.0 = (self.0 * 2).min(Self::LONGEST);
        now
    }
}

impl Default for ListenPause {
    fn default() -> Self {
        ListenPause(Self::FIRST)
    }
}

fn header(response: &Response, name: &str) -> Option<String> {
    let value = response.headers().get(name)?.to_str().ok()?;
    Some(value.to_string())
}

/// An entry's header that HTTP cannot carry.
#[derive(Debug, thiserror::Error)]
pub(in crate::mcp) enum ClientError {
    // Never the value: it may be a secret.
    #[error("header `{0}` is not a valid HTTP header")]
    Header(String),
    #[error("{0}")]
    Build(String),
}

/// An HTTP client that sends the entry's `headers` with every request.
pub(in crate::mcp) fn client(
    headers: &BTreeMap<String, String>,
) -> Result<reqwest::Client, ClientError> {
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        let (Ok(header), Ok(value)) = (
            reqwest::header::HeaderName::from_bytes(name.as_bytes()),
            reqwest::header::HeaderValue::from_str(value),
        ) else {
            return Err(ClientError::Header(name.clone()));
        };
        map.insert(header, value);
    }
    crate::llm::http::install_tls_provider();
    crate::llm::http::with_system_roots(reqwest::Client::builder())
        .default_headers(map)
        // No idle connections kept, as the SDKs' clients: a server or proxy that closes
        // each connection after its answer would otherwise have the next message sent on
        // a socket it is closing (a reset, read as the server gone).
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| ClientError::Build(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::client::tests::{config, events};
    use crate::mcp::model::JsonObject;
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

    /// One request the scripted server received.
    #[derive(Debug, Clone)]
    struct Heard {
        verb: String,
        /// Header names in lower case.
        headers: BTreeMap<String, String>,
        body: Value,
    }

    impl Heard {
        fn method(&self) -> &str {
            self.body["method"].as_str().unwrap_or_default()
        }
    }

    /// What the scripted server answers: status, extra headers, body.
    type Answer = (u16, Vec<(&'static str, String)>, String);

    fn json_answer(message: Value) -> Answer {
        (
            200,
            vec![("Content-Type", JSON.into())],
            message.to_string(),
        )
    }

    fn sse_answer(messages: &[Value]) -> Answer {
        // A priming event with no data first, as servers that can resume send.
        let mut body = String::from("id: 0\ndata: \n\n");
        for message in messages {
            body.push_str(&format!("event: message\ndata: {message}\n\n"));
        }
        (200, vec![("Content-Type", EVENT_STREAM.into())], body)
    }

    fn accepted() -> Answer {
        (202, Vec::new(), String::new())
    }

    /// An HTTP server answering each request with `answer`, one connection a request;
    /// returns its URL and what it heard.
    async fn scripted(
        answer: impl Fn(&Heard) -> Answer + Send + Sync + 'static,
    ) -> (String, Arc<Mutex<Vec<Heard>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let url = format!(
            "http://{}/mcp",
            listener.local_addr().unwrap_or_else(|e| panic!("{e}"))
        );
        let heard = Arc::new(Mutex::new(Vec::new()));
        let log = heard.clone();
        let answer = Arc::new(answer);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (log, answer) = (log.clone(), answer.clone());
                tokio::spawn(async move {
                    let mut stream = BufReader::new(stream);
                    let Some(request) = read_request(&mut stream).await else {
                        return;
                    };
                    lock(&log).push(request.clone());
                    let (status, headers, body) = answer(&request);
                    let mut head = format!("HTTP/1.1 {status} X\r\nConnection: close\r\n");
                    // A length the body falls short of breaks the answer off.
                    if !headers.iter().any(|(name, _)| *name == "Content-Length") {
                        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
                    }
                    for (name, value) in headers {
                        head.push_str(&format!("{name}: {value}\r\n"));
                    }
                    let reply = format!("{head}\r\n{body}");
                    let _ = stream.get_mut().write_all(reply.as_bytes()).await;
                });
            }
        });
        (url, heard)
    }

    async fn read_request(stream: &mut BufReader<tokio::net::TcpStream>) -> Option<Heard> {
        let mut line = String::new();
        stream.read_line(&mut line).await.ok()?;
        let verb = line.split(' ').next()?.to_string();
        let mut headers = BTreeMap::new();
        loop {
            let mut line = String::new();
            stream.read_line(&mut line).await.ok()?;
            let Some((name, value)) = line.trim_end().split_once(": ") else {
                break;
            };
            headers.insert(name.to_ascii_lowercase(), value.to_string());
        }
        let length = headers
            .get("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        stream.read_exact(&mut body).await.ok()?;
        let body = serde_json::from_slice(&body).unwrap_or_default();
        Some(Heard {
            verb,
            headers,
            body,
        })
    }

    fn initialize_answer(heard: &Heard) -> Answer {
        let mut answer = json_answer(json!({"jsonrpc": "2.0", "id": heard.body["id"], "result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "web", "version": "3"}}}));
        answer.1.push(("Mcp-Session-Id", "session-7".into()));
        answer
    }

    async fn connect(
        url: &str,
        token: Option<Arc<dyn AccessToken>>,
    ) -> (Arc<Session>, Result<Connection, McpError>) {
        let client = client(&BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
        let (session, started) = start(client, url, token, events());
        (session, started.handshake(&config("web")).await)
    }

    /// Connects to `url` (the handshake must succeed) and calls `echo`, waiting at most
    /// `wait` for its answer.
    async fn call_echo(
        url: &str,
        wait: Duration,
    ) -> (Arc<Session>, Connection, Result<(), McpError>) {
        let (session, connection) = connect(url, None).await;
        let connection = connection.unwrap_or_else(|e| panic!("{e}"));
        let called = connection
            .call("echo", JsonObject::new(), wait)
            .await
            .map(|_| ());
        (session, connection, called)
    }

    /// Waits (briefly) until the server heard a request that `matches`.
    async fn heard_one(heard: &Mutex<Vec<Heard>>, matches: impl Fn(&Heard) -> bool) -> Heard {
        for _ in 0..500 {
            if let Some(found) = lock(heard).iter().find(|h| matches(h)) {
                return found.clone();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("never heard it: {:#?}", lock(heard));
    }

    #[tokio::test]
    async fn json_event_stream_and_202_answers_all_reach_linggen_with_the_session_echoed() {
        let (url, heard) = scripted(|heard| {
            let id = heard.body["id"].clone();
            match (heard.verb.as_str(), heard.method()) {
                ("POST", "initialize") => initialize_answer(heard),
                ("POST", "tools/list") => sse_answer(&[
                    json!({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}),
                    json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
                        {"name": "echo", "inputSchema": {"type": "object"}}]}}),
                ]),
                ("POST", "tools/call") => json_answer(json!([{"jsonrpc": "2.0", "id": id,
                    "result": {"content": [{"type": "text", "text": "Echo: hi"}]}}])),
                ("GET", _) => (405, Vec::new(), String::new()),
                _ => accepted(),
            }
        })
        .await;
        let (_session, connection) = connect(&url, None).await;
        let connection = connection.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(connection.server_version().as_deref(), Some("web 3"));
        let tools = connection.tools(Duration::from_secs(5)).await;
        let tools = tools.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(tools[0].name, "echo");
        let mut args = JsonObject::new();
        args.insert("message".into(), json!("hi"));
        let result = connection.call("echo", args, Duration::from_secs(5)).await;
        let result = result.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            result.content,
            vec![crate::mcp::model::ContentBlock::text("Echo: hi")]
        );

        // The server's ping, asked on the event stream, is answered by a POST of its own.
        let pong = heard_one(&heard, |h| h.body["id"] == "srv-1").await;
        assert_eq!(pong.body["result"], json!({}));
        let heard = lock(&heard).clone();
        let initialize = &heard[0];
        assert_eq!(initialize.method(), "initialize");
        assert_eq!(
            initialize.headers["accept"],
            "application/json, text/event-stream"
        );
        assert_eq!(initialize.headers["content-type"], "application/json");
        assert!(!initialize.headers.contains_key("mcp-session-id"));
        for later in &heard[1..] {
            assert_eq!(later.headers["mcp-session-id"], "session-7", "{later:?}");
            assert_eq!(
                later.headers["mcp-protocol-version"], "2025-06-18",
                "{later:?}"
            );
        }
        assert_eq!(heard[1].method(), "notifications/initialized");
    }

    #[tokio::test]
    async fn a_session_the_server_forgot_closes_the_connection_and_a_drop_deletes_it() {
        let (url, heard) = scripted(|heard| match (heard.verb.as_str(), heard.method()) {
            ("POST", "initialize") => initialize_answer(heard),
            ("POST", "tools/call") => (404, Vec::new(), String::new()),
            ("GET", _) => (405, Vec::new(), String::new()),
            _ => accepted(),
        })
        .await;
        let (_session, connection, called) = call_echo(&url, Duration::from_secs(5)).await;
        assert!(matches!(called, Err(McpError::Closed { .. })), "{called:?}");
        assert!(connection.is_closed());
        drop(connection);
        let deleted = heard_one(&heard, |h| h.verb == "DELETE").await;
        assert_eq!(deleted.headers["mcp-session-id"], "session-7");
    }

    #[tokio::test]
    async fn an_answer_that_breaks_off_means_the_server_stopped() {
        let (url, _heard) = scripted(|heard| match (heard.verb.as_str(), heard.method()) {
            ("POST", "initialize") => initialize_answer(heard),
            ("POST", "tools/call") => {
                let (status, mut headers, body) = sse_answer(&[]);
                headers.push(("Content-Length", (body.len() + 500).to_string()));
                (status, headers, body)
            }
            ("GET", _) => (405, Vec::new(), String::new()),
            _ => accepted(),
        })
        .await;
        let (_session, connection, called) = call_echo(&url, Duration::from_secs(5)).await;
        assert!(matches!(called, Err(McpError::Closed { .. })), "{called:?}");
        assert!(connection.is_closed());
    }

    #[tokio::test]
    async fn an_answer_over_the_limit_fails_the_call_and_closes_the_connection() {
        for as_events in [false, true] {
            let (url, _heard) =
                scripted(move |heard| match (heard.verb.as_str(), heard.method()) {
                    ("POST", "initialize") => initialize_answer(heard),
                    ("POST", "tools/call") => {
                        let huge = json!({"jsonrpc": "2.0", "id": heard.body["id"], "result": {
                        "content": [{"type": "text", "text": "a".repeat(MAX_LINE_BYTES)}]}});
                        if as_events {
                            sse_answer(&[huge])
                        } else {
                            json_answer(huge)
                        }
                    }
                    ("GET", _) => (405, Vec::new(), String::new()),
                    _ => accepted(),
                })
                .await;
            let (_session, connection, called) = call_echo(&url, Duration::from_secs(20)).await;
            let reason = called.err().map(|e| e.to_string()).unwrap_or_default();
            assert_eq!(
                reason,
                "MCP server `web`: it sent a message over 64 MiB without ending it; linggen \
                 closed the connection",
                "events: {as_events}"
            );
            assert!(connection.is_closed());
        }
    }

    #[tokio::test]
    async fn a_get_stream_that_ends_is_opened_again_and_one_never_offered_is_not() {
        for offered in [true, false] {
            let (url, heard) = scripted(move |heard| match (heard.verb.as_str(), heard.method()) {
                ("POST", "initialize") => initialize_answer(heard),
                // A stream that ends at once, as when a proxy cuts it.
                ("GET", _) if offered => sse_answer(&[]),
                ("GET", _) => (405, Vec::new(), String::new()),
                _ => accepted(),
            })
            .await;
            let (_session, connection) = connect(&url, None).await;
            let _connection = connection.unwrap_or_else(|e| panic!("{e}"));
            let gets = || lock(&heard).iter().filter(|h| h.verb == "GET").count();
            if offered {
                // The first pause is a second, the next two.
                tokio::time::sleep(Duration::from_millis(1_500)).await;
                assert_eq!(gets(), 2, "{:#?}", lock(&heard));
            } else {
                tokio::time::sleep(Duration::from_millis(1_500)).await;
                assert_eq!(gets(), 1);
            }
        }
    }

    #[test]
    fn the_pause_doubles_while_streams_end_soon_and_starts_over_after_a_long_one() {
        let mut pause = ListenPause::default();
        let taken: Vec<u64> = (0..8).map(|_| pause.next().as_secs()).collect();
        assert_eq!(taken, [1, 2, 4, 8, 16, 32, 60, 60]);
        pause.after_stream(Duration::from_secs(5));
        assert_eq!(pause.next().as_secs(), 60);
        pause.after_stream(Duration::from_secs(90));
        assert_eq!(pause.next().as_secs(), 1);
    }

    #[tokio::test]
    async fn a_server_that_cannot_be_reached_is_named_in_the_handshake_error() {
        let free = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap_or_else(|e| panic!("{e}"));
        let (_session, connection) = connect(&format!("http://{free}/mcp"), None).await;
        let reason = connection.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            reason.starts_with("MCP server `web` did not answer the handshake: cannot reach it"),
            "{reason}"
        );
        // What went wrong underneath is named, not only reqwest's "error sending request".
        assert!(reason.contains("Connection refused"), "{reason}");
    }

    /// A token that is `old` until refreshed, then `new`.
    struct Rotating(Mutex<&'static str>);

    #[async_trait::async_trait]
    impl AccessToken for Rotating {
        async fn token(&self) -> Result<String, TokenError> {
            Ok(lock(&self.0).to_string())
        }
        async fn refresh(&self, _rejected: &str) -> Result<String, TokenError> {
            *lock(&self.0) = "new";
            Ok("new".into())
        }
    }

    fn gated(heard: &Heard) -> Answer {
        if heard.headers.get("authorization").map(String::as_str) != Some("Bearer new") {
            return (
                401,
                vec![("WWW-Authenticate", "Bearer".into())],
                String::new(),
            );
        }
        match heard.method() {
            "initialize" => initialize_answer(heard),
            _ => accepted(),
        }
    }

    #[tokio::test]
    async fn a_refused_token_is_refreshed_once_and_the_request_sent_again() {
        let (url, heard) = scripted(gated).await;
        let token: Arc<dyn AccessToken> = Arc::new(Rotating(Mutex::new("old")));
        let (session, connection) = connect(&url, Some(token)).await;
        assert!(connection.is_ok(), "{:?}", connection.err());
        assert!(!session.signed_out.load(Ordering::Relaxed));
        let auth: Vec<String> = lock(&heard)
            .iter()
            .filter(|h| h.method() == "initialize")
            .filter_map(|h| h.headers.get("authorization").cloned())
            .collect();
        assert_eq!(auth, ["Bearer old", "Bearer new"]);
    }

    #[tokio::test]
    async fn a_401_without_a_token_fails_the_handshake_as_signed_out() {
        let (url, _heard) = scripted(gated).await;
        let (session, connection) = connect(&url, None).await;
        assert!(
            matches!(connection, Err(McpError::Handshake { .. })),
            "{:?}",
            connection.err()
        );
        assert!(session.signed_out.load(Ordering::Relaxed));
    }
}
