//! One connection to an MCP server, on the official SDK (`rmcp`): a stdio server is started
//! through the launcher (scrubbed environment plus what its entry names, confined unless the
//! entry says otherwise, killed with the session); an HTTP server is reached with streamable
//! HTTP. The connection then lists the server's tools and calls them, each call bounded by
//! the entry's timeout.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    JsonObject, Tool,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService, ServiceExt};
use rmcp::{ClientHandler, ServiceError};
use tokio::io::AsyncReadExt;

use super::config::{ServerConfig, Transport};
use crate::tools::launch::{Confinement, Env, Launch, Lifetime, Program};
use crate::tools::sandbox::Sandbox;

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
/// killed with it).
pub struct Connection {
    name: String,
    service: RunningService<RoleClient, Events>,
    stderr: Arc<Mutex<String>>,
    /// Held so the process lives as long as the connection (killed on drop).
    _child: Option<tokio::process::Child>,
}

/// What the server tells linggen without being asked, and what it may ask.
#[derive(Clone)]
struct Events {
    /// Called when the server says its tool list changed.
    tools_changed: Arc<dyn Fn() + Send + Sync>,
    /// The workspace root, offered as the one root (`roots/list`), as Claude Code offers
    /// its project folder: servers that work on files start there. Roots are deprecated
    /// by the spec (SEP-2577) but are still how servers learn the project folder (the
    /// reference filesystem server does): kept until servers move on.
    #[allow(deprecated)]
    root: Option<rmcp::model::Root>,
}

impl ClientHandler for Events {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        (self.tools_changed)();
    }

    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        Ok(rmcp::model::ListRootsResult::new(
            self.root.iter().cloned().collect(),
        ))
    }

    #[allow(deprecated)]
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder().enable_roots().build();
        ClientConfig::new(
            capabilities,
            Implementation::new("linggen", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// `root` as an MCP root: a `file://` URI named after its folder.
#[allow(deprecated)]
fn root_of(root: &Path) -> Option<rmcp::model::Root> {
    let uri = url::Url::from_directory_path(root).ok()?;
    let name = root.file_name().map(|n| n.to_string_lossy().into_owned());
    let mut root = rmcp::model::Root::new(uri.to_string());
    root.name = name;
    Some(root)
}

impl Connection {
    /// Starts or reaches the server and completes the handshake within the entry's start-up
    /// timeout. `tools_changed` is called whenever the server announces a new tool list.
    pub async fn open(
        server: &ServerConfig,
        spawn: &Spawn<'_>,
        tools_changed: Arc<dyn Fn() + Send + Sync>,
    ) -> Result<Connection, McpError> {
        let events = Events {
            tools_changed,
            root: root_of(spawn.root),
        };
        let limit = server.startup_timeout;
        let opening = async {
            match &server.transport {
                Transport::Stdio { .. } => open_stdio(server, spawn, events).await,
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
        let listing = self.service.list_all_tools();
        match tokio::time::timeout(limit, listing).await {
            Ok(result) => result.map_err(|e| self.service_error(e)),
            Err(_) => Err(self.timeout("tools/list", limit)),
        }
    }

    /// Calls `tool` with `args`, waiting at most `limit`.
    pub async fn call(
        &self,
        tool: &str,
        args: JsonObject,
        limit: Duration,
    ) -> Result<CallToolResult, McpError> {
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        match tokio::time::timeout(limit, self.service.call_tool(params)).await {
            Ok(result) => result.map_err(|e| self.service_error(e)),
            Err(_) => Err(self.timeout(&format!("the call of `{tool}`"), limit)),
        }
    }

    /// The server's prompts (all pages), or none when it offers none.
    pub async fn prompts(&self, limit: Duration) -> Result<Vec<rmcp::model::Prompt>, McpError> {
        let offers = self
            .service
            .peer_info()
            .is_some_and(|info| info.capabilities.prompts.is_some());
        if !offers {
            return Ok(Vec::new());
        }
        match tokio::time::timeout(limit, self.service.list_all_prompts()).await {
            Ok(result) => result.map_err(|e| self.service_error(e)),
            Err(_) => Err(self.timeout("prompts/list", limit)),
        }
    }

    /// The messages of prompt `name` with `args`, as text.
    pub async fn prompt(
        &self,
        name: &str,
        args: JsonObject,
        limit: Duration,
    ) -> Result<Vec<String>, McpError> {
        let params = rmcp::model::GetPromptRequestParams::new(name).with_arguments(args);
        let result = match tokio::time::timeout(limit, self.service.get_prompt(params)).await {
            Ok(result) => result.map_err(|e| self.service_error(e))?,
            Err(_) => return Err(self.timeout(&format!("prompt `{name}`"), limit)),
        };
        Ok(result
            .messages
            .into_iter()
            .filter_map(|m| match m.content {
                rmcp::model::ContentBlock::Text(text) => Some(text.text),
                rmcp::model::ContentBlock::Resource(resource) => match resource.resource {
                    rmcp::model::ResourceContents::TextResourceContents { text, .. } => Some(text),
                    _ => None,
                },
                _ => None,
            })
            .collect())
    }

    /// The connection is gone (the process exited, the HTTP session ended).
    pub fn is_closed(&self) -> bool {
        self.service.is_closed()
    }

    /// The server's name and version as it introduced itself, for `/mcp`.
    pub fn server_version(&self) -> Option<String> {
        let info = self.service.peer_info()?;
        let server = info.server_info.as_ref()?;
        Some(format!("{} {}", server.name, server.version))
    }

    fn service_error(&self, e: ServiceError) -> McpError {
        match e {
            ServiceError::TransportClosed | ServiceError::Cancelled { .. } => McpError::Closed {
                server: self.name.clone(),
                stderr: stderr_note(&self.stderr),
            },
            other => McpError::Protocol {
                server: self.name.clone(),
                reason: plain_reason(&other),
            },
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

async fn open_stdio(
    server: &ServerConfig,
    spawn: &Spawn<'_>,
    events: Events,
) -> Result<Connection, McpError> {
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
    } = &server.transport
    else {
        unreachable_transport()?
    };
    let start_error = |reason: String| McpError::Start {
        server: server.name.clone(),
        reason,
    };
    // A server that needs the network, or that a package runner fetches first, gets the
    // session's walls with the network (and the runner's cache) opened.
    let runner = super::runners::needs(command);
    let widened;
    let sandbox = if server.network || runner.is_some() {
        let writes = runner.map(|r| r.writable()).unwrap_or_default();
        widened = spawn.sandbox.widened(true, &writes);
        &widened
    } else {
        spawn.sandbox
    };
    let program = if Path::new(command).is_absolute() {
        Program::Path(Path::new(command))
    } else {
        Program::Named(std::ffi::OsStr::new(command))
    };
    let launch = Launch {
        program,
        env: Env::Scrubbed(sandbox),
        confinement: if sandbox.settings().enabled {
            Confinement::Sandbox(sandbox)
        } else {
            Confinement::Unconfined("[sandbox] enabled = false")
        },
        lifetime: Lifetime::Contained,
    };
    let mut cmd = launch
        .tokio_command()
        .map_err(|e| start_error(e.to_string()))?;
    cmd.args(args)
        .envs(env)
        .current_dir(cwd.as_deref().unwrap_or(spawn.root))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| start_error(format!("`{command}`: {e}")))?;
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err(start_error(
            "its standard streams could not be opened".into(),
        ));
    };
    let stderr = Arc::new(Mutex::new(String::new()));
    if let Some(err) = child.stderr.take() {
        tokio::spawn(keep_tail(err, stderr.clone()));
    }
    let service = events
        .serve((stdout, stdin))
        .await
        .map_err(|e| McpError::Handshake {
            server: server.name.clone(),
            reason: plain_reason(&e),
            stderr: stderr_note(&stderr),
        })?;
    Ok(Connection {
        name: server.name.clone(),
        service,
        stderr,
        _child: Some(child),
    })
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
    match open_streamable(server, url, &headers, events.clone()).await {
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
    headers: &std::collections::BTreeMap<String, String>,
    events: Events,
) -> Result<Connection, McpError> {
    let transport = super::legacy_sse::LegacySse::connect(url, headers)
        .await
        .map_err(|e| McpError::Start {
            server: server.name.clone(),
            reason: e.to_string(),
        })?;
    over_http(server, events, transport).await
}

async fn open_streamable(
    server: &ServerConfig,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    events: Events,
) -> Result<Connection, McpError> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    crate::llm::http::install_tls_provider();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    let mut custom = std::collections::HashMap::new();
    for (name, value) in headers.clone() {
        // rmcp sends the bearer token itself, from `auth_header`.
        if name.eq_ignore_ascii_case("authorization")
            && let Some(token) = value.strip_prefix("Bearer ")
        {
            config = config.auth_header(token.to_string());
            continue;
        }
        let header = reqwest::header::HeaderName::from_bytes(name.as_bytes());
        let value = reqwest::header::HeaderValue::from_str(&value);
        match (header, value) {
            (Ok(header), Ok(value)) => {
                custom.insert(header, value);
            }
            // Never the value in the message: it may be a secret.
            _ => {
                return Err(McpError::Start {
                    server: server.name.clone(),
                    reason: format!("header `{name}` is not a valid HTTP header"),
                });
            }
        }
    }
    let config = config.custom_headers(custom);
    // A token from `linggen mcp login`, unless the entry sends its own `Authorization`.
    let bearer = match config.auth_header {
        Some(_) => None,
        None => super::oauth::Bearer::load(&server.name, url)
            .await
            .map_err(|e| sign_in_error(server, e))?,
    };
    let Some(bearer) = bearer else {
        let transport = StreamableHttpClientTransport::from_config(config);
        return over_http(server, events, transport).await;
    };
    let token = bearer
        .access_token()
        .await
        .map_err(|e| sign_in_error(server, e))?;
    let transport =
        StreamableHttpClientTransport::from_config(config.clone().auth_header(token.clone()));
    match over_http(server, events.clone(), transport).await {
        // A token the server refused may only need refreshing; refreshed once, it is tried
        // once more, and a sign-in that still does not work asks the person again.
        Err(McpError::NeedsLogin { .. }) => {
            let token = bearer
                .refresh_after_rejection(&token)
                .await
                .map_err(|e| sign_in_error(server, e))?;
            let transport = StreamableHttpClientTransport::from_config(config.auth_header(token));
            over_http(server, events, transport)
                .await
                .map_err(|e| match e {
                    McpError::NeedsLogin { server, .. } => McpError::NeedsLogin {
                        server,
                        again: " again",
                    },
                    other => other,
                })
        }
        opened => opened,
    }
}

/// A sign-in that could not give a token: the person signs in again, or learns why not.
fn sign_in_error(server: &ServerConfig, error: super::oauth::OAuthError) -> McpError {
    match error {
        super::oauth::OAuthError::SignInAgain => McpError::NeedsLogin {
            server: server.name.clone(),
            again: " again",
        },
        other => McpError::Start {
            server: server.name.clone(),
            reason: format!("its sign-in could not be used: {other}"),
        },
    }
}

/// Whether an error from the handshake is the server asking for a sign-in (a 401).
fn asks_for_sign_in(error: &rmcp::service::ClientInitializeError) -> bool {
    use rmcp::service::ClientInitializeError;
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let ClientInitializeError::TransportError { error, .. } = error else {
        return false;
    };
    matches!(
        error
            .error
            .downcast_ref::<StreamableHttpError<reqwest013::Error>>(),
        Some(StreamableHttpError::AuthRequired(_))
    )
}

/// The handshake over an HTTP transport (no process, so no stderr to quote).
async fn over_http<T, E, A>(
    server: &ServerConfig,
    events: Events,
    transport: T,
) -> Result<Connection, McpError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let service = events
        .serve(transport)
        .await
        .map_err(|e| match asks_for_sign_in(&e) {
            true => McpError::NeedsLogin {
                server: server.name.clone(),
                again: "",
            },
            false => McpError::Handshake {
                server: server.name.clone(),
                reason: plain_reason(&e),
                stderr: String::new(),
            },
        })?;
    Ok(Connection {
        name: server.name.clone(),
        service,
        stderr: Arc::new(Mutex::new(String::new())),
        _child: None,
    })
}

/// rmcp's error text without the Rust type names it carries (`Transport
/// [rmcp::transport::worker::WorkerTransport<…>] error: …`): what the server or the network
/// said, for a person.
fn plain_reason(error: &dyn std::fmt::Display) -> String {
    let text = error.to_string();
    let said = text
        .rsplit_once("] error: ")
        .map_or(text.as_str(), |(_, rest)| rest);
    let said = said
        .trim_end_matches(", when send initialize request")
        .trim_end_matches(": ")
        .trim();
    crate::text::one_line(said, 300)
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
        let mut kept = tail.lock().unwrap_or_else(|p| p.into_inner());
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
    let kept = tail.lock().unwrap_or_else(|p| p.into_inner());
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
    #[test]
    fn rmcp_type_names_are_left_out_of_reasons() {
        let raw = "Send message error Transport [rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::async_impl::client::Client>>] error: unexpected server response: HTTP 405 Method Not Allowed: , when send initialize request";
        assert_eq!(
            super::plain_reason(&raw),
            "unexpected server response: HTTP 405 Method Not Allowed"
        );
        assert_eq!(
            super::plain_reason(&"connection closed"),
            "connection closed"
        );
    }
}
