//! MCP servers' resources for the model, as Claude Code offers them: two tools, registered
//! once a server that offers resources is ready — `ListMcpResourcesTool` lists what the
//! servers offer (one server's, or all), `ReadMcpResourceTool` reads one by its URI. Both
//! only read, so they run without asking, as in Claude Code; the servers themselves started
//! only as far as the person allowed (their own, or trusted).

use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::model::ResourceContents;
use super::server::Server;
use crate::protocol::ToolSpec;
use crate::sync::lock;
use crate::tools::{AccessClass, ToolEntry, ToolHandler, ToolHints, ToolOutput, ToolRegistry};

pub const LIST: &str = "ListMcpResourcesTool";
pub const READ: &str = "ReadMcpResourceTool";

/// Characters of one resource's text handed to the model; the rest is cut with a note.
const TEXT_CHARS: usize = 30_000;

/// The session's servers that offer resources, in the order they came up.
#[derive(Debug, Default)]
pub struct ResourceServers {
    servers: Mutex<Vec<Weak<Server>>>,
}

impl ResourceServers {
    /// `server` offers resources: it is listed, and the two tools are registered (once).
    pub fn offered(self: &Arc<Self>, server: &Arc<Server>, registry: &ToolRegistry) {
        {
            let mut servers = lock(&self.servers);
            servers.retain(|s| s.strong_count() > 0);
            if !servers.iter().any(|s| s.ptr_eq(&Arc::downgrade(server))) {
                servers.push(Arc::downgrade(server));
            }
        }
        for entry in [list_entry(self), read_entry(self)] {
            if registry.get(&entry.spec.name).is_none() {
                // Both names are valid and not built-ins: registering cannot fail.
                let _ = registry.register(entry);
            }
        }
    }

    fn servers(&self) -> Vec<Arc<Server>> {
        lock(&self.servers)
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// The server named `name`, or what to tell the model.
    fn named(&self, name: &str) -> Result<Arc<Server>, ToolOutput> {
        let servers = self.servers();
        servers
            .iter()
            .find(|s| s.name() == name)
            .cloned()
            .ok_or_else(|| {
                let names: Vec<&str> = servers.iter().map(|s| s.name()).collect();
                ToolOutput::error(format!(
                    "no MCP server named `{name}` offers resources; servers with resources: {}",
                    names.join(", ")
                ))
            })
    }
}

fn hints() -> ToolHints {
    ToolHints {
        read_only: true,
        ..ToolHints::default()
    }
}

fn list_entry(servers: &Arc<ResourceServers>) -> ToolEntry {
    ToolEntry {
        spec: ToolSpec {
            name: LIST.to_string(),
            description: "List the resources (documents, records, files) the connected MCP \
                          servers offer, with their URIs; read one with ReadMcpResourceTool."
                .to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "only this server's; all when left out"}
                }
            }),
        },
        class: AccessClass::Read,
        hints: hints(),
        origin: "MCP servers".to_string(),
        handler: Arc::new(ListResources {
            servers: servers.clone(),
        }),
    }
}

fn read_entry(servers: &Arc<ResourceServers>) -> ToolEntry {
    ToolEntry {
        spec: ToolSpec {
            name: READ.to_string(),
            description: "Read one resource of an MCP server by its URI (from \
                          ListMcpResourcesTool)."
                .to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "the server's name"},
                    "uri": {"type": "string", "description": "the resource's URI"}
                },
                "required": ["server", "uri"]
            }),
        },
        class: AccessClass::Read,
        hints: hints(),
        origin: "MCP servers".to_string(),
        handler: Arc::new(ReadResource {
            servers: servers.clone(),
        }),
    }
}

#[derive(Debug)]
struct ListResources {
    servers: Arc<ResourceServers>,
}

#[async_trait]
impl ToolHandler for ListResources {
    fn summarize(&self, name: &str, args: &Value) -> Result<String, ToolOutput> {
        let server = text_arg(args, "server", false)?;
        Ok(format!("{name} {}", server.unwrap_or_default())
            .trim_end()
            .to_string())
    }

    async fn run(&self, _name: &str, args: &Value) -> ToolOutput {
        let servers = match text_arg(args, "server", false) {
            Ok(Some(name)) => match self.servers.named(name) {
                Ok(server) => vec![server],
                Err(refused) => return refused,
            },
            Ok(None) => self.servers.servers(),
            Err(refused) => return refused,
        };
        let mut listed = Vec::new();
        let mut failures = Vec::new();
        for server in servers {
            match server.resources().await {
                Ok(resources) => listed.extend(resources.into_iter().map(|r| {
                    let mut item = json!({"server": server.name(), "uri": r.uri, "name": r.name});
                    if let Some(mime_type) = r.mime_type {
                        item["mimeType"] = json!(mime_type);
                    }
                    if let Some(description) = r.description {
                        item["description"] = json!(description);
                    }
                    item
                })),
                Err(e) => failures.push(e.to_string()),
            }
        }
        if listed.is_empty() && !failures.is_empty() {
            return ToolOutput::error(failures.join("\n"));
        }
        let count = listed.len();
        let mut text = serde_json::to_string_pretty(&listed).unwrap_or_default();
        for failure in failures {
            text.push_str(&format!("\n[{failure}]"));
        }
        ToolOutput::ok(
            text,
            crate::text::plural(count, "resource", "resources").to_string(),
        )
    }
}

#[derive(Debug)]
struct ReadResource {
    servers: Arc<ResourceServers>,
}

#[async_trait]
impl ToolHandler for ReadResource {
    fn summarize(&self, name: &str, args: &Value) -> Result<String, ToolOutput> {
        let (server, uri) = read_args(args)?;
        Ok(format!(
            "{name} {server} {}",
            crate::text::one_line(uri, 80)
        ))
    }

    async fn run(&self, _name: &str, args: &Value) -> ToolOutput {
        let (server, uri) = match read_args(args) {
            Ok(both) => both,
            Err(refused) => return refused,
        };
        let server = match self.servers.named(server) {
            Ok(server) => server,
            Err(refused) => return refused,
        };
        match server.read_resource(uri).await {
            Ok(contents) => output(uri, contents),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

/// The contents as the model reads them: texts in order, an image as a tool's image is
/// (passed on, or a note saying why not), a note for other bytes.
fn output(uri: &str, contents: Vec<ResourceContents>) -> ToolOutput {
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for content in contents {
        match content {
            ResourceContents::Text { text, .. } => {
                parts.push(crate::text::cut_chars(&text, TEXT_CHARS))
            }
            ResourceContents::Blob {
                uri,
                blob,
                mime_type,
            } => {
                let kind = mime_type.unwrap_or_else(|| "application/octet-stream".into());
                if kind.starts_with("image/") {
                    parts.push(super::tools::image_part(kind, blob, &mut images));
                } else {
                    parts.push(format!("[{uri}: {kind}, binary, not shown]"));
                }
            }
        }
    }
    if parts.is_empty() {
        return ToolOutput::error(format!("resource `{uri}` has no contents"));
    }
    let text = parts.join("\n");
    let summary = format!(
        "{uri}: {}",
        crate::text::plural(text.lines().count(), "line", "lines")
    );
    ToolOutput::ok(text, summary).with_images(images)
}

fn read_args(args: &Value) -> Result<(&str, &str), ToolOutput> {
    let server = text_arg(args, "server", true)?.unwrap_or_default();
    let uri = text_arg(args, "uri", true)?.unwrap_or_default();
    Ok((server, uri))
}

/// The text argument `key`; `None` when it is optional and left out (or empty).
fn text_arg<'a>(args: &'a Value, key: &str, required: bool) -> Result<Option<&'a str>, ToolOutput> {
    match args.get(key) {
        Some(Value::String(text)) if !text.trim().is_empty() => Ok(Some(text.trim())),
        None | Some(Value::Null) if !required => Ok(None),
        Some(Value::String(_)) if !required => Ok(None),
        _ => Err(ToolOutput::error(format!(
            "`{key}` must be {}",
            match required {
                true => "given, as text",
                false => "text, or left out",
            }
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_join_images_pass_on_and_other_bytes_are_named() {
        let png = "iVBORw0KGgoAAAANSUhEUgAAABQAAAAUCAYAAACNiR0N";
        let out = output(
            "demo://x",
            vec![
                ResourceContents::Text {
                    uri: "demo://x".into(),
                    text: "# Title".into(),
                    mime_type: None,
                },
                ResourceContents::Blob {
                    uri: "demo://x.png".into(),
                    blob: png.into(),
                    mime_type: Some("image/png".into()),
                },
                ResourceContents::Blob {
                    uri: "demo://x.gz".into(),
                    blob: "H4sI".into(),
                    mime_type: Some("application/gzip".into()),
                },
            ],
        );
        assert_eq!(
            out.model,
            "# Title\n[image image/png, 1 KB]\n[demo://x.gz: application/gzip, binary, not shown]"
        );
        assert_eq!(out.images.len(), 1);
        assert!(output("demo://y", Vec::new()).is_error);
    }

    #[test]
    fn arguments_are_checked_before_anything_runs() {
        assert!(read_args(&json!({"server": "s"})).is_err());
        assert!(read_args(&json!({"server": "s", "uri": 3})).is_err());
        assert_eq!(
            read_args(&json!({"server": " s ", "uri": "demo://x"})).ok(),
            Some(("s", "demo://x"))
        );
        assert_eq!(text_arg(&json!({}), "server", false).ok(), Some(None));
        assert_eq!(
            text_arg(&json!({"server": ""}), "server", false).ok(),
            Some(None)
        );
        assert!(text_arg(&json!({"server": 1}), "server", false).is_err());
    }
}
