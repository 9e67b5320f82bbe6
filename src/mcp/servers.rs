//! The MCP servers of one session: which start (enabled, and trusted when the workspace
//! brought them), which wait, and how each stands.

use std::path::Path;
use std::sync::Arc;

use super::config::{McpConfig, ServerConfig, Transport};
use super::server::{Context, Server, Status};
use crate::tools::ToolContext;

/// A server that was not started, and why.
#[derive(Debug, Clone)]
struct Held {
    config: ServerConfig,
    status: Status,
}

/// The session's servers: the started ones (their tools registered as they come up) and
/// the held ones (disabled, or waiting for the person to trust the folder).
#[derive(Debug, Default)]
pub struct McpServers {
    started: Vec<Arc<Server>>,
    held: Vec<Held>,
}

/// One line of `/mcp` or `linggen mcp list`.
#[derive(Debug, Clone)]
pub struct ServerLine {
    pub name: String,
    pub what: String,
    pub source: String,
    pub status: Status,
    /// Its registered tools (started servers only).
    pub tools: Vec<String>,
}

impl McpServers {
    /// Starts, in the background, every enabled server whose definition is the person's or
    /// whose grant the person accepted; returns at once. `notify` tells the person a
    /// server's failures (one line each).
    pub fn start(
        config: &McpConfig,
        root: &Path,
        accepted: &dyn Fn(&str) -> bool,
        tools: &ToolContext,
        notify: Arc<dyn Fn(String) + Send + Sync>,
    ) -> McpServers {
        let mut servers = McpServers::default();
        let resources = Arc::new(super::resources::ResourceServers::default());
        for server in &config.servers {
            let held = if !server.enabled {
                Some(Status::Disabled)
            } else if server.source.ships_with_project() && !accepted(&grant(server, root)) {
                Some(Status::WaitsForTrust)
            } else {
                None
            };
            if let Some(status) = held {
                servers.held.push(Held {
                    config: server.clone(),
                    status,
                });
                continue;
            }
            let context = Context {
                registry: Arc::downgrade(&tools.registry),
                sandbox: tools.sandbox.clone(),
                root: tools.root.clone(),
                notify: notify.clone(),
                resources: resources.clone(),
            };
            let started = Server::new(server.clone(), context);
            started.start_in_background();
            servers.started.push(started);
        }
        servers
    }

    /// Every server with where it came from and how it stands, by name.
    pub fn lines(&self) -> Vec<ServerLine> {
        let mut lines: Vec<ServerLine> = self
            .started
            .iter()
            .map(|s| ServerLine {
                tools: s.tool_names(),
                ..line(s.config(), s.status())
            })
            .chain(self.held.iter().map(|h| line(&h.config, h.status.clone())))
            .collect();
        lines.sort_by(|a, b| a.name.cmp(&b.name));
        lines
    }
}

/// A server's prompt as a command: `mcp__SERVER__PROMPT`.
#[derive(Debug, Clone)]
pub struct PromptCommand {
    pub command: String,
    pub description: String,
    /// Its arguments in order, required ones marked with no `?`: `<a> [b]`.
    pub hint: String,
}

impl McpServers {
    /// Every prompt of every ready server, by command name.
    pub fn prompt_commands(&self) -> Vec<PromptCommand> {
        let mut commands: Vec<PromptCommand> = self
            .started
            .iter()
            .flat_map(|server| {
                server.prompts().into_iter().map(|prompt| PromptCommand {
                    command: super::tool_name(server.name(), &prompt.name),
                    description: prompt.description.clone().unwrap_or_default(),
                    hint: argument_hint(&prompt),
                })
            })
            .collect();
        commands.sort_by(|a, b| a.command.cmp(&b.command));
        commands
    }

    /// Fills the prompt that `command` names with `args` (words in order, the last argument
    /// taking the rest, as Claude Code passes them). `None`: no server has that prompt.
    pub async fn expand(
        &self,
        command: &str,
        args: &str,
    ) -> Option<Result<String, super::client::McpError>> {
        let (server_name, prompt_name) = super::split_tool_name(command)?;
        let server = self.started.iter().find(|s| s.name() == server_name)?;
        server.started().await;
        let prompt = server
            .prompts()
            .into_iter()
            .find(|p| p.name == prompt_name)?;
        let names: Vec<String> = prompt
            .arguments
            .iter()
            .flatten()
            .map(|a| a.name.clone())
            .collect();
        Some(server.prompt(prompt_name, fill(&names, args)).await)
    }
}

/// `args` split over `names`: one word each, the last name taking the rest.
fn fill(names: &[String], args: &str) -> super::model::JsonObject {
    let mut object = super::model::JsonObject::new();
    let mut rest = args.trim();
    for (i, name) in names.iter().enumerate() {
        if rest.is_empty() {
            break;
        }
        let value = if i + 1 == names.len() {
            std::mem::take(&mut rest)
        } else {
            let (word, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            rest = tail.trim_start();
            word
        };
        object.insert(name.clone(), serde_json::Value::String(value.to_string()));
    }
    object
}

fn argument_hint(prompt: &super::model::Prompt) -> String {
    prompt
        .arguments
        .iter()
        .flatten()
        .map(|a| {
            if a.required.unwrap_or(false) {
                format!("<{}>", a.name)
            } else {
                format!("[{}]", a.name)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn line(config: &ServerConfig, status: Status) -> ServerLine {
    ServerLine {
        name: config.name.clone(),
        what: describe(config),
        source: config.source.to_string(),
        status,
        tools: Vec::new(),
    }
}

/// What the server is: the command it runs or the address it reaches.
pub fn describe(config: &ServerConfig) -> String {
    match &config.transport {
        Transport::Stdio { command, args, .. } => {
            let mut words = vec![command.clone()];
            words.extend(args.iter().cloned());
            words.join(" ")
        }
        Transport::Http { url, .. } => url.clone(),
    }
}

/// The trust grant a server the workspace brought makes: running its command (or reaching
/// its address) with its environment's names. A changed command is a new grant, asked again.
pub fn grant(config: &ServerConfig, root: &Path) -> String {
    let file = crate::config::trust::relative(root, config.source.path());
    let action = match &config.transport {
        Transport::Stdio { env, .. } => {
            let names: Vec<&str> = env.keys().map(String::as_str).collect();
            let with = if names.is_empty() {
                String::new()
            } else {
                format!(" with {}", names.join(", "))
            };
            format!("runs `{}`{with}", describe(config))
        }
        Transport::Http { .. } => format!("connects to {}", describe(config)),
    };
    format!("MCP server {}: {action} ({file})", config.name)
}

/// The grants of every server the workspace brought.
pub fn project_grants(config: &McpConfig, root: &Path) -> Vec<String> {
    config
        .servers
        .iter()
        .filter(|s| s.source.ships_with_project())
        .map(|s| grant(s, root))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::fill;

    #[test]
    fn arguments_fill_in_order_and_the_last_takes_the_rest() {
        let names = vec!["city".to_string(), "note".to_string()];
        let filled = fill(&names, " Paris  bring an umbrella ");
        assert_eq!(filled["city"], "Paris");
        assert_eq!(filled["note"], "bring an umbrella");
        assert!(fill(&names, "").is_empty());
        assert_eq!(fill(&names, "Rome").len(), 1);
    }
}
