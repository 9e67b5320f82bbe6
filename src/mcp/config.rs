//! Where MCP servers are configured, read as people already have them: linggen's own
//! `[mcp_servers.NAME]` tables, Claude Code's `.mcp.json` and `~/.claude.json`, and codex's
//! `config.toml`. Each entry stands on its own: a broken one is a warning naming the file,
//! the line and what to change, and every other server still loads. Nothing here starts or
//! reaches a server; that is the launcher's and the client's job.
//!
//! What a repository ships ([`Source::ships_with_project`]) is a trust grant: the caller
//! keeps those servers off until the person trusts the folder.

mod claude;
mod codex;
mod entry;
mod expand;
mod json_key;
mod linggen;
mod toml_entries;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::CONFIG_FILE;
use entry::{Context, Found, same_file};

/// How long a server may take to start and list its tools, unless its entry says.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one tool call may take, unless the server's entry says.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// How linggen talks to a server.
///
/// `Debug` leaves out the values of `env` and `headers`: they are where secrets live (a
/// token expanded from `${VAR}`), and `Debug` output ends up in logs.
#[derive(Clone, PartialEq, Eq)]
pub enum Transport {
    /// A program linggen starts (through the launcher) and speaks to on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// A server reached over HTTP: streamable HTTP, or the older SSE transport.
    Http {
        url: String,
        /// Sent as written (after `${VAR}` expansion for Claude Code's files).
        headers: BTreeMap<String, String>,
        /// Header name → environment variable holding its value (codex's
        /// `env_http_headers`), read when connecting so the value never sits in config.
        env_headers: BTreeMap<String, String>,
        /// The variable holding a bearer token, sent as `Authorization: Bearer …`.
        bearer_token_env_var: Option<String>,
        /// `"type": "sse"`: the server only speaks the older HTTP+SSE transport.
        sse_only: bool,
    },
}

impl Transport {
    /// The headers to send, with `env_headers` and the bearer token read from `env` now. A
    /// variable that is unset or empty adds no header (as codex does); the server then
    /// answers 401 and the person is told by the client.
    pub fn request_headers(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> BTreeMap<String, String> {
        let Transport::Http {
            headers,
            env_headers,
            bearer_token_env_var,
            ..
        } = self
        else {
            return BTreeMap::new();
        };
        let read = |var: &str| env(var).filter(|v| !v.is_empty());
        let mut out = headers.clone();
        for (header, var) in env_headers {
            if let Some(value) = read(var) {
                out.insert(header.clone(), value);
            }
        }
        if let Some(token) = bearer_token_env_var.as_deref().and_then(read) {
            out.insert("Authorization".to_string(), format!("Bearer {token}"));
        }
        out
    }
}

/// The names of a map, its values replaced: see [`Transport`]'s `Debug`.
struct NamesOnly<'a>(&'a BTreeMap<String, String>);

impl fmt::Debug for NamesOnly<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, format_args!("<redacted>"))))
            .finish()
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &NamesOnly(env))
                .field("cwd", cwd)
                .finish(),
            Transport::Http {
                url,
                headers,
                env_headers,
                bearer_token_env_var,
                sse_only,
            } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &NamesOnly(headers))
                // Variable names, not values: safe to show.
                .field("env_headers", env_headers)
                .field("bearer_token_env_var", bearer_token_env_var)
                .field("sse_only", sse_only)
                .finish(),
        }
    }
}

/// The file (and, for `~/.claude.json`, the scope) a server was defined in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `$LINGGEN_HOME/linggen-agent.toml`: the person's own.
    LinggenUser(PathBuf),
    /// `<root>/linggen-agent.toml`: came with the workspace.
    LinggenProject(PathBuf),
    /// `<root>/.mcp.json`, Claude Code's project scope: came with the workspace.
    McpJson(PathBuf),
    /// `~/.claude.json`'s top-level `mcpServers`: the person's, for every project.
    ClaudeUser(PathBuf),
    /// `~/.claude.json`'s `projects["<root>"].mcpServers`: the person's, for this project.
    ClaudeLocal(PathBuf),
    /// `$CODEX_HOME/config.toml` (`~/.codex/config.toml`): the person's.
    Codex(PathBuf),
    /// Handed over by the editor that opened the session (ACP's `session/new`), for this
    /// session only: the person's, as configured in their editor. Holds the session's folder.
    Editor(PathBuf),
}

impl Source {
    /// The file read.
    pub fn path(&self) -> &Path {
        match self {
            Source::LinggenUser(p)
            | Source::LinggenProject(p)
            | Source::McpJson(p)
            | Source::ClaudeUser(p)
            | Source::ClaudeLocal(p)
            | Source::Codex(p)
            | Source::Editor(p) => p,
        }
    }

    /// Whether the definition came with the repository rather than from the person: such a
    /// server runs a program or reaches a URL the repository chose, a trust grant.
    pub fn ships_with_project(&self) -> bool {
        match self {
            Source::LinggenProject(_) | Source::McpJson(_) => true,
            Source::LinggenUser(_)
            | Source::ClaudeUser(_)
            | Source::ClaudeLocal(_)
            | Source::Codex(_)
            | Source::Editor(_) => false,
        }
    }

    /// Lower wins when two sources name the same server. linggen's own files come first,
    /// the project's over the person's as for every other setting. Claude Code's three
    /// scopes keep Claude Code's documented order (local, then project, then user), so a
    /// server the person overrode for this project with `claude mcp add` stays overridden.
    fn precedence(&self) -> u8 {
        match self {
            Source::LinggenProject(_) => 0,
            Source::LinggenUser(_) => 1,
            Source::ClaudeLocal(_) => 2,
            Source::McpJson(_) => 3,
            Source::ClaudeUser(_) => 4,
            Source::Codex(_) => 5,
            // Never merged with the files: the session's own, it wins by name.
            Source::Editor(_) => 0,
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Source::LinggenUser(_) => "$LINGGEN_HOME/linggen-agent.toml",
            Source::LinggenProject(_) => "linggen-agent.toml",
            Source::McpJson(_) => ".mcp.json",
            Source::ClaudeUser(_) => "~/.claude.json (user)",
            Source::ClaudeLocal(_) => "~/.claude.json (local)",
            Source::Codex(_) => "$CODEX_HOME/config.toml",
            Source::Editor(_) => "the editor (ACP session/new)",
        })
    }
}

/// One configured server, as it won over every other definition of its name.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Checked by [`check_server_name`](crate::mcp::check_server_name): its tools are
    /// named `mcp__NAME__TOOL`.
    pub name: String,
    pub transport: Transport,
    /// `false` keeps the server listed (and shadowing others of its name) without starting it.
    pub enabled: bool,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// Whether a stdio server's sandbox lets it reach the network.
    pub network: bool,
    /// When set, only these tools are registered.
    pub enabled_tools: Option<Vec<String>>,
    /// Tools never registered, applied after `enabled_tools`.
    pub disabled_tools: Vec<String>,
    pub source: Source,
    /// Other definitions of the same name that lost, highest precedence first.
    pub shadowed: Vec<Source>,
}

impl ServerConfig {
    /// A server an editor hands over for its session, with every other setting at its
    /// default; a name that cannot prefix tool names is refused.
    pub fn from_editor(
        name: &str,
        transport: Transport,
        folder: &Path,
    ) -> Result<ServerConfig, crate::mcp::NameError> {
        crate::mcp::check_server_name(name)?;
        Ok(ServerConfig::new(
            name,
            transport,
            Source::Editor(folder.to_path_buf()),
        ))
    }

    /// A server with every setting at its default.
    fn new(name: &str, transport: Transport, source: Source) -> ServerConfig {
        ServerConfig {
            name: name.to_string(),
            transport,
            enabled: true,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            network: false,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            source,
            shadowed: Vec::new(),
        }
    }

    /// Whether the server's tool `tool` is registered, by `enabled_tools` and
    /// `disabled_tools`.
    pub fn exposes(&self, tool: &str) -> bool {
        let allowed = self
            .enabled_tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == tool));
        allowed && !self.disabled_tools.iter().any(|t| t == tool)
    }
}

/// Every server found, and what could not be read.
#[derive(Debug, Default)]
pub struct McpConfig {
    /// By name; one per name.
    pub servers: Vec<ServerConfig>,
    /// One line each, naming the file (and line where known) and what to do.
    pub warnings: Vec<String>,
    /// Every definition read, the shadowed ones too: what [`McpConfig::without_project`]
    /// falls back on.
    definitions: Vec<ServerConfig>,
}

impl McpConfig {
    /// This configuration with an editor's servers added for one session: an editor's
    /// server replaces a configured one of the same name (which it then shadows).
    pub fn with_editor_servers(&self, extra: &[ServerConfig]) -> McpConfig {
        let mut servers = self.servers.clone();
        for server in extra {
            let mut server = server.clone();
            if let Some(at) = servers.iter().position(|s| s.name == server.name) {
                let replaced = servers.remove(at);
                server.shadowed.push(replaced.source);
            }
            servers.push(server);
        }
        McpConfig {
            servers,
            warnings: self.warnings.clone(),
            definitions: self.definitions.clone(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|s| s.name == name)
    }

    /// The servers while the folder is not trusted: what the repository ships is left
    /// out, and a name it took over goes back to the person's own definition. Filtering
    /// `servers` instead would lose that definition: a repository's `.mcp.json` naming
    /// `github` would switch off the person's own `github` until they trust it.
    pub fn without_project(&self) -> McpConfig {
        let own: Vec<ServerConfig> = self
            .definitions
            .iter()
            .filter(|s| !s.source.ships_with_project())
            .cloned()
            .collect();
        McpConfig {
            servers: merge(own.clone()),
            warnings: self.warnings.clone(),
            definitions: own,
        }
    }
}

/// Reads every place servers are configured, for the workspace at `root`. `home_dir` is
/// the person's home (for `~/.claude.json` and `~/.codex`); `env` is passed in (for
/// `${VAR}`, `CODEX_HOME`) so tests never touch the process environment. Reads files:
/// call it where blocking is fine.
pub fn load(
    home_dir: &Path,
    linggen_home: &Path,
    root: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> McpConfig {
    let ctx = Context {
        home_dir,
        root,
        env,
    };
    let mut found = Found::default();
    let own = linggen_home.join(CONFIG_FILE);
    linggen::read(Source::LinggenUser(own.clone()), &ctx, &mut found);
    let project = root.join(CONFIG_FILE);
    // With the root at $LINGGEN_HOME, the project's file is the person's own, read above.
    if !same_file(&own, &project) {
        linggen::read(Source::LinggenProject(project), &ctx, &mut found);
    }
    claude::read_mcp_json(Source::McpJson(root.join(".mcp.json")), &ctx, &mut found);
    claude::read_claude_json(&home_dir.join(".claude.json"), &ctx, &mut found);
    let codex_home = env("CODEX_HOME")
        .filter(|h| !h.is_empty())
        .map_or_else(|| home_dir.join(".codex"), PathBuf::from);
    codex::read(
        Source::Codex(codex_home.join("config.toml")),
        &ctx,
        &mut found,
    );
    McpConfig {
        servers: merge(found.servers.clone()),
        warnings: found.warnings,
        definitions: found.servers,
    }
}

/// One server per name: the definition of highest precedence, the others in its
/// `shadowed`. A disabled definition still wins: that is how a person turns off a server
/// that another tool's file defines.
fn merge(mut servers: Vec<ServerConfig>) -> Vec<ServerConfig> {
    servers.sort_by_key(|s| s.source.precedence());
    let mut by_name: BTreeMap<String, ServerConfig> = BTreeMap::new();
    for server in servers {
        match by_name.get_mut(&server.name) {
            Some(winner) => winner.shadowed.push(server.source),
            None => {
                by_name.insert(server.name.clone(), server);
            }
        }
    }
    by_name.into_values().collect()
}

#[cfg(test)]
mod tests;
