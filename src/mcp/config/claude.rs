//! Claude Code's files: the project's `.mcp.json` and the person's `~/.claude.json` (user
//! scope at the top, local scope under `projects["<root>"]`). Both hold `mcpServers`
//! entries of one format: `{"command", "args", "env"}` for a program (optionally with
//! `"type": "stdio"`), `{"type": "http" | "sse", "url", "headers"}` for a server reached
//! over HTTP. `${VAR}` and `${VAR:-default}` are expanded in command, args, env values,
//! url and header values, as Claude Code does; a server whose variable is unset without a
//! default is skipped, as Claude Code fails it.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::entry::{Context, EntryError, EntryResult, Found, check_url};
use super::expand::{Missing, expand};
use super::json_key::line_of_key;
use super::{ServerConfig, Source, Transport};
use crate::mcp::check_server_name;

/// `<root>/.mcp.json`'s `mcpServers`.
pub(super) fn read_mcp_json(source: Source, ctx: &Context, found: &mut Found) {
    let Some((text, doc)) = read_json(source.path(), found) else {
        return;
    };
    servers_at(&text, &doc, &["mcpServers"], &source, ctx, found);
}

/// `~/.claude.json`'s user scope, and the local scope of the project at `ctx.root`.
pub(super) fn read_claude_json(path: &Path, ctx: &Context, found: &mut Found) {
    let Some((text, doc)) = read_json(path, found) else {
        return;
    };
    let user = Source::ClaudeUser(path.to_path_buf());
    servers_at(&text, &doc, &["mcpServers"], &user, ctx, found);
    if let Some(project) = project_key(&doc, ctx.root) {
        let local = Source::ClaudeLocal(path.to_path_buf());
        let at = ["projects", project.as_str(), "mcpServers"];
        servers_at(&text, &doc, &at, &local, ctx, found);
    }
}

fn read_json(path: &Path, found: &mut Found) -> Option<(String, Value)> {
    let text = super::entry::read_text(path, &mut found.warnings)?;
    match serde_json::from_str(&text) {
        Ok(doc) => Some((text, doc)),
        Err(e) => {
            found.warnings.push(format!(
                "{}:{}: not valid JSON ({e}); none of its MCP servers are loaded",
                path.display(),
                e.line()
            ));
            None
        }
    }
}

/// The key of `projects` that is this workspace. Claude Code keys a project by the folder
/// it was started in, exactly: a parent's entry does not apply to a subfolder.
fn project_key(doc: &Value, root: &Path) -> Option<String> {
    let projects = doc.get("projects")?.as_object()?;
    let canonical = root.canonicalize().ok();
    projects
        .keys()
        .find(|key| {
            let key = Path::new(key.as_str());
            key == root || (canonical.is_some() && key.canonicalize().ok() == canonical)
        })
        .cloned()
}

/// Reads the `mcpServers` object at `at` (object keys from the top), if there is one.
fn servers_at(
    text: &str,
    doc: &Value,
    at: &[&str],
    source: &Source,
    ctx: &Context,
    found: &mut Found,
) {
    let Some(value) = at.iter().try_fold(doc, |v, key| v.get(key)) else {
        return;
    };
    let path = source.path();
    let Some(servers) = value.as_object() else {
        found.warnings.push(format!(
            "{}: `mcpServers` must be an object of servers by name; none of its MCP servers are loaded",
            super::entry::at(path, line_of_key(text, at))
        ));
        return;
    };
    for (name, entry) in servers {
        match server(name, entry, source, ctx) {
            Ok(server) => found.servers.push(server),
            Err(why) => {
                // The line of the key at fault if there is one, else the server's.
                let mut key = at.to_vec();
                key.push(name);
                let server_line = line_of_key(text, &key);
                key.extend(why.key());
                let line = line_of_key(text, &key).or(server_line);
                found.skip(path, line, name, why);
            }
        }
    }
}

fn server(name: &str, entry: &Value, source: &Source, ctx: &Context) -> EntryResult {
    check_server_name(name)?;
    let entry = entry.as_object().ok_or(EntryError::NotATable)?;
    let mut expander = Expander {
        env: ctx.env,
        missing: Missing::default(),
    };
    let transport = match string(entry, "type")?.as_deref() {
        None | Some("stdio") => stdio(entry, &mut expander)?,
        Some("http") => http(entry, &mut expander, false)?,
        Some("sse") => http(entry, &mut expander, true)?,
        Some(other) => return Err(EntryError::UnknownType(other.to_string())),
    };
    if !expander.missing.0.is_empty() {
        return Err(EntryError::MissingVariables(expander.missing.0));
    }
    Ok(ServerConfig::new(name, transport, source.clone()))
}

fn stdio(entry: &Map<String, Value>, x: &mut Expander) -> Result<Transport, EntryError> {
    let Some(command) = string(entry, "command")? else {
        return Err(match entry.get("url") {
            Some(_) if entry.get("type").is_none() => EntryError::UrlWithoutType,
            _ => EntryError::NoTransport,
        });
    };
    if command.trim().is_empty() {
        return Err(EntryError::Empty("command"));
    }
    let args = strings(entry, "args")?;
    let env = string_map(entry, "env")?;
    Ok(Transport::Stdio {
        command: x.text(&command),
        args: args.iter().map(|a| x.text(a)).collect(),
        env: env.into_iter().map(|(k, v)| (k, x.text(&v))).collect(),
        // Claude Code starts a server in the folder it runs in: the root.
        cwd: None,
    })
}

fn http(
    entry: &Map<String, Value>,
    x: &mut Expander,
    sse_only: bool,
) -> Result<Transport, EntryError> {
    let Some(written) = string(entry, "url")? else {
        return Err(EntryError::NoTransport);
    };
    let url = x.text(&written);
    // With a variable missing the URL is not what was meant; that is the error to show.
    if x.missing.0.is_empty() {
        check_url(&url, &written)?;
    }
    let headers = string_map(entry, "headers")?;
    Ok(Transport::Http {
        url,
        headers: headers.into_iter().map(|(k, v)| (k, x.text(&v))).collect(),
        env_headers: BTreeMap::new(),
        bearer_token_env_var: None,
        sse_only,
    })
}

/// Expands every field of one server, collecting what is missing.
struct Expander<'a> {
    env: &'a dyn Fn(&str) -> Option<String>,
    missing: Missing,
}

impl Expander<'_> {
    fn text(&mut self, text: &str) -> String {
        expand(text, self.env, &mut self.missing)
    }
}

/// `key`'s string, if set (`null` counts as unset).
fn string(entry: &Map<String, Value>, key: &'static str) -> Result<Option<String>, EntryError> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(EntryError::Type {
            key,
            expected: "a string",
        }),
    }
}

fn strings(entry: &Map<String, Value>, key: &'static str) -> Result<Vec<String>, EntryError> {
    let wrong = EntryError::Type {
        key,
        expected: "a list of strings",
    };
    match entry.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or(wrong),
        Some(_) => Err(wrong),
    }
}

fn string_map(
    entry: &Map<String, Value>,
    key: &'static str,
) -> Result<BTreeMap<String, String>, EntryError> {
    let wrong = EntryError::Type {
        key,
        expected: "an object of strings: {\"NAME\": \"value\"}",
    };
    match entry.get(key) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
            .collect::<Option<_>>()
            .ok_or(wrong),
        Some(_) => Err(wrong),
    }
}
