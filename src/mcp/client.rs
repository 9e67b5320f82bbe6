//! One connection to an MCP server: a stdio server is started through the launcher
//! (scrubbed environment plus what its entry names, confined unless the entry says
//! otherwise, killed with the session) and spoken to a line at a time ([`stdio`]); an HTTP
//! server is reached with streamable HTTP ([`http`]), or the older HTTP+SSE transport
//! (`super::legacy_sse`) when that is all it speaks. Every transport feeds the same JSON-RPC
//! peer; [`inbound`] answers what the server asks. The connection then lists the server's
//! tools and calls them, each call bounded by the entry's timeout.

pub(in crate::mcp) mod http;
pub(in crate::mcp) mod inbound;
mod stdio;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use super::config::{ServerConfig, Transport};
use super::model::{
    CallToolResult, ContentBlock, GetPromptResult, Implementation, InitializeResult, JsonObject,
    LATEST_PROTOCOL_VERSION, Prompt, ReadResourceResult, Resource, ResourceContents, Tool,
};
use crate::protocol::jsonrpc::{Closed, Peer};
use crate::sync::lock;
use crate::tools::sandbox::Sandbox;
use inbound::{Events, Inbound};

/// The last bytes of a server's stderr kept for error messages: what it said before dying.
const STDERR_TAIL: usize = 2_000;

/// Why a server could not be reached or a call failed. Messages are one line, name the
/// server and say what to do; they never carry a header or token value.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("MCP server `{server}` could not start: {reason}")]
    Start { server: String, reason: String },
    #[error("MCP server `{server}` did not answer the handshake: {reason}{stderr}")]
    Handshake {
        server: String,
        reason: String,
        stderr: String,
    },
    #[error("MCP server `{server}` did not answer {what} within {secs} s")]
    Timeout {
        server: String,
        what: String,
        secs: u64,
    },
    #[error("MCP server `{server}` stopped{stderr}; it is started again on the next call")]
    Closed { server: String, stderr: String },
    #[error("MCP server `{server}`: {reason}")]
    Protocol { server: String, reason: String },
    #[error("MCP server `{server}` needs you to sign in{again}: run `linggen mcp login {server}`")]
    NeedsLogin { server: String, again: &'static str },
}

impl McpError {
    /// The message without the server's name, for where the name is already shown.
    pub fn reason(&self) -> String {
        let full = self.to_string();
        let prefix = match self {
            McpError::Start { server, .. }
            | McpError::Handshake { server, .. }
            | McpError::Timeout { server, .. }
            | McpError::Closed { server, .. }
            | McpError::Protocol { server, .. }
            | McpError::NeedsLogin { server, .. } => format!("MCP server `{server}` "),
        };
        full.strip_prefix(&prefix).map_or(full.clone(), |rest| {
            rest.trim_start_matches(": ").to_string()
        })
    }
}

/// What a connection needs from the session to start a stdio server.
pub struct Spawn<'a> {
    /// The session's sandbox: a confined server gets its walls (and, when its entry says
    /// `network = true`, a copy of it with the network on).
    pub sandbox: &'a Sandbox,
    /// Where a server without `cwd` runs: the workspace root.
    pub root: &'a Path,
}

/// A live connection. Dropping it ends the server (a stdio server's process group is
/// killed with it, an HTTP session is ended).
pub struct Connection {
    name: String,
    peer: Peer,
    /// What the server said of itself in the handshake.
    server: InitializeResult,
    stderr: Arc<Mutex<String>>,
    _link: Link,
}

/// What keeps a transport running, ended with the connection.
struct Link {
    /// The tasks that carry messages: aborted.
    tasks: Vec<tokio::task::AbortHandle>,
    /// Held so the process lives as long as the connection (killed on drop).
    child: Option<tokio::process::Child>,
    /// Said to the server last (HTTP: the session's DELETE).
    goodbye: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl Link {
    fn tasks(tasks: Vec<tokio::task::AbortHandle>) -> Link {
        Link {
            tasks,
            child: None,
            goodbye: None,
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        if let Some(goodbye) = self.goodbye.take() {
            goodbye();
        }
    }
}

/// How long a request (or all the pages of a listing) may take.
struct Deadline {
    at: tokio::time::Instant,
    limit: Duration,
}

impl Deadline {
    fn after(limit: Duration) -> Deadline {
        Deadline {
            at: tokio::time::Instant::now() + limit,
            limit,
        }
    }
}

impl Connection {
    /// Starts or reaches the server and completes the handshake within the entry's start-up
    /// timeout. `tools_changed` is called whenever the server announces a new tool list.
    pub async fn open(
        server: &ServerConfig,
        spawn: &Spawn<'_>,
        tools_changed: Arc<dyn Fn() + Send + Sync>,
    ) -> Result<Connection, McpError> {
        let events = Events::new(tools_changed, spawn.root);
        let limit = server.startup_timeout;
        let opening = async {
            match &server.transport {
                Transport::Stdio { .. } => stdio::open(server, spawn, events).await,
                Transport::Http { .. } => open_http(server, events).await,
            }
        };
        match tokio::time::timeout(limit, opening).await {
            Ok(result) => result,
            Err(_) => Err(McpError::Timeout {
                server: server.name.clone(),
                what: "its start-up handshake".into(),
                secs: limit.as_secs(),
            }),
        }
    }

    /// Every tool the server offers (all pages).
    pub async fn tools(&self, limit: Duration) -> Result<Vec<Tool>, McpError> {
        self.list_all("tools/list", "tools", limit).await
    }

    /// Calls `tool` with `args`, waiting at most `limit`.
    pub async fn call(
        &self,
        tool: &str,
        args: JsonObject,
        limit: Duration,
    ) -> Result<CallToolResult, McpError> {
        let params = json!({ "name": tool, "arguments": args });
        let what = format!("the call of `{tool}`");
        self.ask("tools/call", params, &what, &Deadline::after(limit))
            .await
    }

    /// The server's prompts (all pages), or none when it offers none.
    pub async fn prompts(&self, limit: Duration) -> Result<Vec<Prompt>, McpError> {
        if !self.server.capabilities.contains_key("prompts") {
            return Ok(Vec::new());
        }
        self.list_all("prompts/list", "prompts", limit).await
    }

    /// What the server said, when it introduced itself, about using its tools.
    pub fn instructions(&self) -> Option<&str> {
        self.server.instructions.as_deref()
    }

    /// Whether the server said it offers resources.
    pub fn offers_resources(&self) -> bool {
        self.server.capabilities.contains_key("resources")
    }

    /// The server's resources (all pages).
    pub async fn resources(&self, limit: Duration) -> Result<Vec<Resource>, McpError> {
        self.list_all("resources/list", "resources", limit).await
    }

    /// The contents of the resource at `uri`.
    pub async fn read_resource(
        &self,
        uri: &str,
        limit: Duration,
    ) -> Result<Vec<ResourceContents>, McpError> {
        let what = format!("resource `{uri}`");
        let result: ReadResourceResult = self
            .ask(
                "resources/read",
                json!({ "uri": uri }),
                &what,
                &Deadline::after(limit),
            )
            .await?;
        Ok(result.contents)
    }

    /// The messages of prompt `name` with `args`, as text.
    pub async fn prompt(
        &self,
        name: &str,
        args: JsonObject,
        limit: Duration,
    ) -> Result<Vec<String>, McpError> {
        let params = json!({ "name": name, "arguments": args });
        let what = format!("prompt `{name}`");
        let result: GetPromptResult = self
            .ask("prompts/get", params, &what, &Deadline::after(limit))
            .await?;
        Ok(result
            .messages
            .into_iter()
            .filter_map(|m| match m.content {
                ContentBlock::Text(text) => Some(text.text),
                ContentBlock::Resource(resource) => match resource.resource {
                    ResourceContents::Text { text, .. } => Some(text),
                    ResourceContents::Blob { .. } => None,
                },
                _ => None,
            })
            .collect())
    }

    /// The connection is gone (the process exited, the HTTP session ended).
    pub fn is_closed(&self) -> bool {
        self.peer.is_closed()
    }

    /// The server's name and version as it introduced itself, for `/mcp`.
    pub fn server_version(&self) -> Option<String> {
        let server = self.server.server_info.as_ref()?;
        Some(format!("{} {}", server.name, server.version))
    }

    /// Every item under `key` of every page of `method`, following `nextCursor`, all
    /// within `limit`.
    async fn list_all<T: DeserializeOwned>(
        &self,
        method: &str,
        key: &str,
        limit: Duration,
    ) -> Result<Vec<T>, McpError> {
        let deadline = Deadline::after(limit);
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let mut page: JsonObject = self.ask(method, params, method, &deadline).await?;
            let listed = page.remove(key).unwrap_or(Value::Array(Vec::new()));
            let listed: Vec<T> = serde_json::from_value(listed)
                .map_err(|e| self.protocol(format!("its `{method}` answer does not read: {e}")))?;
            items.extend(listed);
            cursor = match page.remove("nextCursor") {
                Some(Value::String(next)) if !next.is_empty() => Some(next),
                _ => return Ok(items),
            };
        }
    }

    /// Asks `method` and reads the answer as `T`. A request not answered in time is
    /// cancelled (`notifications/cancelled`), so the server can stop working on it.
    async fn ask<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
        what: &str,
        deadline: &Deadline,
    ) -> Result<T, McpError> {
        let asked = self.peer.ask(method, params);
        let id = asked.id;
        let answer = match tokio::time::timeout_at(deadline.at, asked.answer()).await {
            Ok(answer) => answer,
            Err(_) => {
                self.peer.forget(id);
                let reason = format!("no answer within {} s", deadline.limit.as_secs());
                self.peer.notify(
                    "notifications/cancelled",
                    json!({ "requestId": id, "reason": reason }),
                );
                return Err(self.timeout(what, deadline.limit));
            }
        };
        match answer {
            Ok(Ok(result)) => serde_json::from_value(result)
                .map_err(|e| self.protocol(format!("its `{method}` answer does not read: {e}"))),
            Ok(Err(error)) => Err(self.protocol(error.message)),
            Err(Closed) => Err(McpError::Closed {
                server: self.name.clone(),
                stderr: stderr_note(&self.stderr),
            }),
        }
    }

    fn protocol(&self, reason: String) -> McpError {
        McpError::Protocol {
            server: self.name.clone(),
            reason: crate::text::one_line(&reason, 300),
        }
    }

    fn timeout(&self, what: &str, limit: Duration) -> McpError {
        McpError::Timeout {
            server: self.name.clone(),
            what: what.to_string(),
            secs: limit.as_secs(),
        }
    }
}

/// A transport that carries messages: linggen's end of it, and what keeps it running.
struct Started {
    peer: Peer,
    link: Link,
    stderr: Arc<Mutex<String>>,
}

impl Started {
    /// The handshake: `initialize`, the server's answer read, then `initialized`.
    async fn handshake(self, server: &ServerConfig) -> Result<Connection, McpError> {
        let params = json!({
            "protocolVersion": LATEST_PROTOCOL_VERSION,
            "capabilities": { "roots": {} },
            "clientInfo": Implementation::linggen(),
        });
        let failed = |reason: String| McpError::Handshake {
            server: server.name.clone(),
            reason: crate::text::one_line(&reason, 300),
            stderr: stderr_note(&self.stderr),
        };
        let answer = match self.peer.request("initialize", params).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(error)) => return Err(failed(error.message)),
            Err(Closed) => return Err(failed("the connection closed".into())),
        };
        let initialized: InitializeResult = serde_json::from_value(answer)
            .map_err(|e| failed(format!("its answer to `initialize` does not read: {e}")))?;
        self.peer
            .notify("notifications/initialized", JsonObject::new());
        Ok(Connection {
            name: server.name.clone(),
            peer: self.peer,
            server: initialized,
            stderr: self.stderr,
            _link: self.link,
        })
    }
}

async fn open_http(server: &ServerConfig, events: Events) -> Result<Connection, McpError> {
    let Transport::Http { url, sse_only, .. } = &server.transport else {
        unreachable_transport()?
    };
    // Header values and the bearer token are read from the environment now, never kept.
    let env = |name: &str| std::env::var(name).ok();
    let headers = server.transport.request_headers(&env);
    if *sse_only {
        return open_legacy_sse(server, url, &headers, events).await;
    }
    match http::open(server, url, &headers, events.clone()).await {
        Ok(connection) => Ok(connection),
        Err(e @ McpError::NeedsLogin { .. }) => Err(e),
        // A server that only speaks the older transport refuses streamable HTTP's POST.
        Err(streamable) => match open_legacy_sse(server, url, &headers, events).await {
            Ok(connection) => Ok(connection),
            Err(_) => Err(streamable),
        },
    }
}

async fn open_legacy_sse(
    server: &ServerConfig,
    url: &str,
    headers: &BTreeMap<String, String>,
    events: Events,
) -> Result<Connection, McpError> {
    let (peer, unsent) = Peer::unsent();
    let inbound = Inbound::new(peer.clone(), events);
    let tasks = super::legacy_sse::connect(url, headers, inbound, unsent)
        .await
        .map_err(|e| McpError::Start {
            server: server.name.clone(),
            reason: e.to_string(),
        })?;
    let started = Started {
        peer,
        link: Link::tasks(tasks),
        stderr: Arc::default(),
    };
    started.handshake(server).await
}

fn unreachable_transport<T>() -> Result<T, McpError> {
    Err(McpError::Protocol {
        server: String::new(),
        reason: "internal: wrong transport".into(),
    })
}

/// Keeps the last [`STDERR_TAIL`] bytes a server wrote to stderr.
async fn keep_tail(mut err: tokio::process::ChildStderr, tail: Arc<Mutex<String>>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = err.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let mut kept = lock(&tail);
        kept.push_str(&String::from_utf8_lossy(&buf[..n]));
        if kept.len() > STDERR_TAIL {
            let mut cut = kept.len() - STDERR_TAIL;
            while !kept.is_char_boundary(cut) {
                cut += 1;
            }
            kept.drain(..cut);
        }
    }
}

/// `; it said: …` with the last lines of the stderr tail (a program's error is often its
/// last few lines, the very last a generic "see the log"), or nothing.
fn stderr_note(tail: &Mutex<String>) -> String {
    let kept = lock(tail);
    let mut last: Vec<&str> = kept
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .rev()
        .take(3)
        .collect();
    if last.is_empty() {
        return String::new();
    }
    last.reverse();
    let said = crate::tools::terminal_text::strip_controls(&last.join(" | ")).into_owned();
    format!("; it said: {}", crate::text::one_line(&said, 400))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::sync::mpsc;

    pub(super) fn config(name: &str) -> ServerConfig {
        let transport = Transport::Stdio {
            command: "fake".into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        };
        ServerConfig::from_editor(name, transport, Path::new("/")).unwrap_or_else(|e| panic!("{e}"))
    }

    pub(super) fn events() -> Events {
        Events::new(Arc::new(|| {}), Path::new("/work"))
    }

    /// A server on the other end of a pipe: every message linggen sends goes to the
    /// returned receiver; a request `answer` knows is answered with its result, any other
    /// is left unanswered. Dropping the sender it is given ends the server (its stdout).
    fn fake_server(
        answer: impl Fn(&str, &Value) -> Option<Value> + Send + 'static,
    ) -> (Started, mpsc::UnboundedReceiver<Value>) {
        let (client_end, server_end) = tokio::io::duplex(64 * 1024);
        let (client_read, client_write) = tokio::io::split(client_end);
        let (server_read, mut server_write) = tokio::io::split(server_end);
        let (heard_tx, heard) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(server_read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let message: Value = serde_json::from_str(&line).unwrap_or_default();
                let method = message["method"].as_str().unwrap_or_default().to_string();
                if method == "exit" {
                    return;
                }
                let result = answer(&method, &message["params"]);
                if let (Some(result), Some(id)) = (result, message.get("id")) {
                    let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
                    let _ = server_write
                        .write_all(format!("{reply}\n").as_bytes())
                        .await;
                }
                let _ = heard_tx.send(message);
            }
        });
        (
            stdio::over_lines(client_read, client_write, events()),
            heard,
        )
    }

    /// A fake server that answers `initialize` and what `more` answers, the handshake
    /// done.
    async fn connected(
        more: impl Fn(&str, &Value) -> Option<Value> + Send + 'static,
    ) -> (Connection, mpsc::UnboundedReceiver<Value>) {
        let (started, heard) = fake_server(move |method, params| match method {
            "initialize" => Some(initialize_result()),
            _ => more(method, params),
        });
        let connection = started
            .handshake(&config("fake"))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        (connection, heard)
    }

    fn initialize_result() -> Value {
        json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
               "serverInfo": {"name": "fake", "version": "1.2"}})
    }

    async fn next(heard: &mut mpsc::UnboundedReceiver<Value>) -> Value {
        tokio::time::timeout(Duration::from_secs(5), heard.recv())
            .await
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn the_handshake_introduces_linggen_and_offers_roots() {
        let (connection, mut heard) = connected(|_, _| None).await;
        let initialize = next(&mut heard).await;
        assert_eq!(initialize["method"], "initialize");
        assert_eq!(
            initialize["params"],
            json!({"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {"roots": {}},
                   "clientInfo": {"name": "linggen", "version": env!("CARGO_PKG_VERSION")}})
        );
        assert_eq!(
            next(&mut heard).await["method"],
            "notifications/initialized"
        );
        assert_eq!(connection.server_version().as_deref(), Some("fake 1.2"));
        let none = connection.prompts(Duration::from_secs(5)).await;
        assert!(none.is_ok_and(|p| p.is_empty()), "no `prompts` capability");
    }

    #[tokio::test]
    async fn every_page_of_a_listing_is_read_by_its_cursor() {
        let (connection, mut heard) = connected(|method, params| match method {
            "tools/list" => Some(match params["cursor"].as_str() {
                None => json!({"tools": [{"name": "a", "inputSchema": {}}], "nextCursor": "p2"}),
                Some("p2") => {
                    json!({"tools": [{"name": "b", "inputSchema": {}}], "nextCursor": "p3"})
                }
                Some(_) => json!({"tools": [{"name": "c", "inputSchema": {}}]}),
            }),
            _ => None,
        })
        .await;
        let tools = connection
            .tools(Duration::from_secs(5))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        let mut cursors = Vec::new();
        for _ in 0..5 {
            let message = next(&mut heard).await;
            if message["method"] == "tools/list" {
                cursors.push(message["params"]["cursor"].clone());
            }
        }
        assert_eq!(cursors, [Value::Null, json!("p2"), json!("p3")]);
    }

    #[tokio::test]
    async fn a_call_not_answered_in_time_is_cancelled_by_its_id() {
        let (connection, mut heard) = connected(|_, _| None).await;
        let called = connection
            .call("slow", JsonObject::new(), Duration::from_millis(50))
            .await;
        assert_eq!(
            called.map(|_| ()).map_err(|e| e.to_string()),
            Err("MCP server `fake` did not answer the call of `slow` within 0 s".into())
        );
        let _initialize = next(&mut heard).await;
        let _initialized = next(&mut heard).await;
        let call = next(&mut heard).await;
        assert_eq!(call["params"], json!({"name": "slow", "arguments": {}}));
        let cancelled = next(&mut heard).await;
        assert_eq!(cancelled["method"], "notifications/cancelled");
        assert_eq!(cancelled["params"]["requestId"], call["id"]);
    }

    #[tokio::test]
    async fn a_server_whose_output_ends_is_closed_and_calls_say_it_stopped() {
        let (connection, _heard) = connected(|_, _| None).await;
        assert!(!connection.is_closed());
        connection.peer.notify("exit", json!({}));
        let waited = tokio::time::timeout(Duration::from_secs(5), async {
            while !connection.is_closed() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        assert!(waited.await.is_ok(), "the connection reads as closed");
        let called = connection
            .call("echo", JsonObject::new(), Duration::from_secs(5))
            .await;
        assert!(matches!(called, Err(McpError::Closed { .. })), "{called:?}");
    }
}
