//! One configured MCP server in a session: started in the background when the session
//! starts, its tools registered as `mcp__NAME__TOOL`, started again on the next call after
//! it stopped, and its tools re-read when it says they changed. Failures are one line for
//! the person; the session goes on without the server.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::model::{CallToolResult, JsonObject, Prompt, Resource, ResourceContents};

use super::client::{Connection, McpError, Spawn};
use super::config::ServerConfig;
use crate::sync::lock;
use crate::tools::ToolRegistry;
use crate::tools::sandbox::Sandbox;

/// Where a server stands, for `/mcp` and `linggen mcp list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Starting,
    Ready {
        tools: usize,
        version: Option<String>,
    },
    Failed(String),
    Disabled,
    /// Defined by the workspace, which the person has not trusted.
    WaitsForTrust,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Starting => f.write_str("starting"),
            Status::Ready { tools, .. } => {
                write!(f, "ready, {}", crate::text::plural(*tools, "tool", "tools"))
            }
            Status::Failed(why) => write!(f, "failed: {why}"),
            Status::Disabled => f.write_str("disabled"),
            Status::WaitsForTrust => f.write_str("waits for trust (`linggen trust`)"),
        }
    }
}

/// What a server needs from its session.
pub struct Context {
    /// Weak: the registry holds the server's tools, which hold the server.
    pub registry: std::sync::Weak<ToolRegistry>,
    pub sandbox: Arc<Sandbox>,
    pub root: PathBuf,
    /// Tells the person something (a server failed, stopped, came back).
    pub notify: Arc<dyn Fn(String) + Send + Sync>,
    /// The session's servers that offer resources, which this one joins if it does.
    pub resources: Arc<super::resources::ResourceServers>,
}

pub struct Server {
    /// Itself, for the tool handlers and the list-changed callback that call back into it.
    me: std::sync::Weak<Server>,
    config: ServerConfig,
    context: Context,
    /// The live connection; `None` before the first start and after it stopped.
    connection: tokio::sync::Mutex<Option<Arc<Connection>>>,
    status: Mutex<Status>,
    /// Its prompts, offered as `/mcp__NAME__PROMPT` commands.
    prompts: Mutex<Vec<Prompt>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.config.name)
            .finish()
    }
}

impl Server {
    pub fn new(config: ServerConfig, context: Context) -> Arc<Server> {
        Arc::new_cyclic(|me| Server {
            me: me.clone(),
            config,
            context,
            connection: tokio::sync::Mutex::new(None),
            status: Mutex::new(Status::Starting),
            prompts: Mutex::new(Vec::new()),
        })
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The names of the tools it registered, without the `mcp__NAME__` prefix.
    pub fn tool_names(&self) -> Vec<String> {
        let prefix = super::tool_name(&self.config.name, "");
        let Some(registry) = self.context.registry.upgrade() else {
            return Vec::new();
        };
        registry
            .registered()
            .into_iter()
            .filter_map(|e| e.spec.name.strip_prefix(&prefix).map(str::to_string))
            .collect()
    }

    pub fn status(&self) -> Status {
        lock(&self.status).clone()
    }

    fn set_status(&self, status: Status) {
        *lock(&self.status) = status;
    }

    /// Starts the server in the background and registers its tools. A model request waits
    /// for it (bounded by its start-up timeout) so the first request offers its tools.
    pub fn start_in_background(self: &Arc<Self>) {
        let Some(registry) = self.context.registry.upgrade() else {
            return;
        };
        let starting = registry.starting();
        let server = self.clone();
        tokio::spawn(async move {
            if let Err(e) = server.connect().await {
                (server.context.notify)(e.to_string());
            }
            drop(starting);
        });
    }

    /// Waits while it is still starting (bounded by the servers' start-up timeouts): a
    /// prompt asked for right at start-up (`linggen -p "/mcp__s__p"`) finds it listed.
    pub async fn started(&self) {
        if matches!(self.status(), Status::Starting)
            && let Some(registry) = self.context.registry.upgrade()
        {
            registry.settled().await;
        }
    }

    /// Calls one of its tools, starting the server again first if it had stopped.
    pub async fn call(&self, tool: &str, args: JsonObject) -> Result<CallToolResult, McpError> {
        let connection = self.connection().await?;
        let result = connection.call(tool, args, self.config.tool_timeout).await;
        self.watched(&connection, result).await
    }

    /// Its prompts as they were listed when it started.
    pub fn prompts(&self) -> Vec<Prompt> {
        lock(&self.prompts).clone()
    }

    /// Its resources, as it lists them now.
    pub async fn resources(&self) -> Result<Vec<Resource>, McpError> {
        let connection = self.connection().await?;
        let listed = connection.resources(self.config.tool_timeout).await;
        self.watched(&connection, listed).await
    }

    /// The contents of its resource at `uri`.
    pub async fn read_resource(&self, uri: &str) -> Result<Vec<ResourceContents>, McpError> {
        let connection = self.connection().await?;
        let read = connection
            .read_resource(uri, self.config.tool_timeout)
            .await;
        self.watched(&connection, read).await
    }

    /// `result`, after forgetting a connection that closed under it: the next request
    /// starts the server again.
    async fn watched<T>(
        &self,
        connection: &Connection,
        result: Result<T, McpError>,
    ) -> Result<T, McpError> {
        if matches!(result, Err(McpError::Closed { .. })) || connection.is_closed() {
            *self.connection.lock().await = None;
            self.set_status(Status::Failed("stopped".into()));
        }
        result
    }

    /// Prompt `name` filled with `args`: the text of its messages, one after the other.
    pub async fn prompt(&self, name: &str, args: JsonObject) -> Result<String, McpError> {
        let connection = self.connection().await?;
        let parts = connection
            .prompt(name, args, self.config.tool_timeout)
            .await?;
        Ok(parts.join("\n\n"))
    }

    /// The live connection, or a new one.
    async fn connection(&self) -> Result<Arc<Connection>, McpError> {
        {
            let guard = self.connection.lock().await;
            if let Some(connection) = guard.as_ref()
                && !connection.is_closed()
            {
                return Ok(connection.clone());
            }
        }
        self.connect().await
    }

    /// [`Server::open`], with the failure kept for `/mcp`.
    async fn connect(&self) -> Result<Arc<Connection>, McpError> {
        let opened = self.open().await;
        if let Err(e) = &opened {
            self.set_status(Status::Failed(e.reason()));
        }
        opened
    }

    /// Opens a connection, lists the tools and registers them (replacing what was there).
    async fn open(&self) -> Result<Arc<Connection>, McpError> {
        let mut guard = self.connection.lock().await;
        if let Some(connection) = guard.as_ref()
            && !connection.is_closed()
        {
            return Ok(connection.clone());
        }
        self.set_status(Status::Starting);
        let spawn = Spawn {
            sandbox: &self.context.sandbox,
            root: &self.context.root,
        };
        let changed = self.on_tools_changed();
        let connection = Arc::new(Connection::open(&self.config, &spawn, changed).await?);
        let count = self.register_tools(&connection).await?;
        // A server whose prompts cannot be listed still serves its tools.
        let prompts = connection
            .prompts(self.config.startup_timeout)
            .await
            .unwrap_or_default();
        *lock(&self.prompts) = prompts;
        if let Some(registry) = self.context.registry.upgrade() {
            registry.set_instructions(&self.config.name, connection.instructions());
        }
        if connection.offers_resources()
            && let (Some(me), Some(registry)) = (self.me.upgrade(), self.context.registry.upgrade())
        {
            self.context.resources.offered(&me, &registry);
        }
        self.set_status(Status::Ready {
            tools: count,
            version: connection.server_version(),
        });
        *guard = Some(connection.clone());
        Ok(connection)
    }

    /// Lists the server's tools and registers those its entry exposes.
    async fn register_tools(&self, connection: &Arc<Connection>) -> Result<usize, McpError> {
        let tools = connection.tools(self.config.startup_timeout).await?;
        let Some(registry) = self.context.registry.upgrade() else {
            return Ok(0);
        };
        let prefix = super::tool_name(&self.config.name, "");
        registry.unregister_prefix(&prefix);
        let me = self.me.upgrade();
        let mut count = 0;
        for tool in tools.iter().filter(|t| self.config.exposes(&t.name)) {
            let Some(me) = me.as_ref() else { break };
            match registry.register(super::tools::entry(me, tool)) {
                Ok(()) => count += 1,
                Err(e) => (self.context.notify)(format!(
                    "MCP server `{}`: tool skipped: {e}",
                    self.config.name
                )),
            }
        }
        Ok(count)
    }

    fn on_tools_changed(&self) -> Arc<dyn Fn() + Send + Sync> {
        let me = self.me.clone();
        Arc::new(move || {
            let Some(server) = me.upgrade() else {
                return;
            };
            // Counted as starting until the new list is registered, so the next model
            // request (which waits for starting sources) offers a tool the server just
            // added — typically during the call whose answer that request carries.
            let relisting = server.context.registry.upgrade().map(|r| r.starting());
            tokio::spawn(async move {
                let connection = server.connection.lock().await.clone();
                if let Some(connection) = connection
                    && let Err(e) = server.register_tools(&connection).await
                {
                    (server.context.notify)(e.to_string());
                }
                drop(relisting);
            });
        })
    }
}
