//! `linggen mcp list|get|add|remove` (`login|logout` are in `mcp_login`): the MCP servers configured for a folder, wherever the
//! person keeps them (see doc/mcp.md), and linggen's own entries in `linggen-agent.toml`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::exit;
use super::{Failure, Start, Workspace, load_workspace, print_lines};
use crate::config::CONFIG_FILE;
use crate::mcp::config::ServerConfig;
use crate::mcp::servers::{describe, grant};

/// `linggen mcp list`.
pub fn list(start: &Start) -> i32 {
    print_lines(load_workspace(start).map(|ws| server_lines(&ws)))
}

/// One line per server (name, what it runs or reaches, where it is defined, whether it
/// starts here), then one per definition it shadows.
pub fn server_lines(ws: &Workspace) -> Vec<String> {
    if ws.mcp.servers.is_empty() {
        return vec![
            "No MCP servers configured. Add one with `linggen mcp add NAME -- COMMAND`, or \
             in .mcp.json, ~/.claude.json or ~/.codex/config.toml (see doc/mcp.md)."
                .to_string(),
        ];
    }
    let mut lines = Vec::new();
    for server in &ws.mcp.servers {
        lines.push(format!(
            "{:<16}  {:<44}  {}{}",
            server.name,
            crate::text::one_line(&describe(server), 44),
            server.source,
            state_note(ws, server)
        ));
        for shadowed in &server.shadowed {
            lines.push(format!(
                "{:<16}  (also defined in {shadowed}, not used)",
                ""
            ));
        }
    }
    lines
}

/// ` — disabled` / ` — waits for trust` or nothing when the server starts here.
pub(super) fn state_note(ws: &Workspace, server: &ServerConfig) -> &'static str {
    if !server.enabled {
        " — disabled"
    } else if server.source.ships_with_project()
        && !ws.trust.trust.is_accepted(&grant(server, &ws.root))
    {
        " — waits for trust (`linggen trust`)"
    } else {
        ""
    }
}

/// `linggen mcp get NAME`: the definition, then the server started and asked for its tools.
pub async fn get(start: &Start, name: &str) -> i32 {
    let ws = match load_workspace(start) {
        Ok(ws) => ws,
        Err(f) => return print_lines(Err(f)),
    };
    let Some(server) = ws.mcp.get(name).cloned() else {
        return unknown(&ws, name);
    };
    for line in definition_lines(&server) {
        println!("{line}");
    }
    let note = state_note(&ws, &server);
    if !note.is_empty() {
        println!("not started{note}");
        return exit::SUCCESS;
    }
    match tools_of(&ws, &server).await {
        Ok(tools) => {
            println!("tools ({}):", tools.len());
            for (tool, description) in tools {
                println!("  {tool:<40}  {}", crate::text::one_line(&description, 70));
            }
            exit::SUCCESS
        }
        Err(e) => {
            eprintln!("linggen: error: {e}");
            exit::FAILURE
        }
    }
}

pub(super) fn unknown(ws: &Workspace, name: &str) -> i32 {
    let names: Vec<&str> = ws.mcp.servers.iter().map(|s| s.name.as_str()).collect();
    let hint = match crate::text::closest(name, &names) {
        Some(close) => format!("; did you mean `{close}`?"),
        None if names.is_empty() => "; none is configured (see `linggen mcp add`)".into(),
        None => format!("; configured: {}", names.join(", ")),
    };
    eprintln!("linggen: error: no MCP server `{name}`{hint}");
    exit::USAGE
}

fn definition_lines(server: &ServerConfig) -> Vec<String> {
    let mut lines = vec![
        format!("name:     {}", server.name),
        format!("runs:     {}", describe(server)),
        format!(
            "from:     {} ({})",
            server.source,
            server.source.path().display()
        ),
        format!(
            "timeouts: start {} s, call {} s",
            server.startup_timeout.as_secs(),
            server.tool_timeout.as_secs()
        ),
    ];
    if server.network {
        lines.push("network:  on".into());
    }
    if super::mcp_login::signed_in(server) {
        lines.push(format!(
            "sign-in:  signed in (`linggen mcp logout {}` forgets it)",
            server.name
        ));
    }
    for shadowed in &server.shadowed {
        lines.push(format!(
            "shadows:  {shadowed} ({})",
            shadowed.path().display()
        ));
    }
    lines
}

/// Starts the server as a session would and lists its tools (`mcp__NAME__TOOL`).
async fn tools_of(
    ws: &Workspace,
    server: &ServerConfig,
) -> Result<Vec<(String, String)>, crate::mcp::client::McpError> {
    let sandbox = super::live::session_sandbox(&ws.config, ws);
    let spawn = crate::mcp::client::Spawn {
        sandbox: &sandbox,
        root: &ws.root,
    };
    let connection = crate::mcp::client::Connection::open(server, &spawn, Arc::new(|| {})).await?;
    let tools = connection.tools(server.startup_timeout).await?;
    Ok(tools
        .iter()
        .filter(|t| server.exposes(&t.name))
        .map(|t| {
            let description = t.description.as_deref().unwrap_or_default().to_string();
            (crate::mcp::tool_name(&server.name, &t.name), description)
        })
        .collect())
}

/// What `linggen mcp add` writes.
#[derive(Debug, Clone)]
pub struct NewServer {
    pub name: String,
    pub url: Option<String>,
    pub command: Vec<String>,
    /// `KEY=VALUE`.
    pub env: Vec<String>,
    /// `Name: value`.
    pub headers: Vec<String>,
    pub bearer_token_env_var: Option<String>,
    pub network: bool,
}

/// `linggen mcp add NAME …`: appends `[mcp_servers.NAME]` to linggen-agent.toml.
pub fn add(start: &Start, server: &NewServer, project: bool) -> i32 {
    match add_entry(start, server, project) {
        Ok(path) => {
            println!(
                "Added MCP server `{}` to {}. Its tools are offered as mcp__{}__TOOL from the \
                 next session; allow them with a rule such as `mcp__{}__*`.",
                server.name,
                path.display(),
                server.name,
                server.name
            );
            exit::SUCCESS
        }
        Err(f) => print_lines(Err(f)),
    }
}

fn add_entry(start: &Start, server: &NewServer, project: bool) -> Result<PathBuf, Failure> {
    crate::mcp::check_server_name(&server.name).map_err(|e| usage(e.to_string()))?;
    let table = entry_toml(server)?;
    let path = config_path(start, project)?;
    let text = read_or_empty(&path)?;
    if let Some(line) = table_line(&text, &server.name) {
        return Err(usage(format!(
            "{}:{line} already defines `{}`; remove it first with `linggen mcp remove {}{}`",
            path.display(),
            server.name,
            server.name,
            if project { " --project" } else { "" }
        )));
    }
    let mut updated = text.clone();
    if !updated.is_empty() && !updated.ends_with('\n') {
        updated.push('\n');
    }
    if !updated.is_empty() {
        updated.push('\n');
    }
    updated.push_str(&table);
    write(&path, &updated)?;
    Ok(path)
}

/// The TOML table for `server`, values quoted by the TOML writer.
fn entry_toml(server: &NewServer) -> Result<String, Failure> {
    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    let mut out = format!("[mcp_servers.{}]\n", server.name);
    match (&server.url, server.command.split_first()) {
        (Some(url), None) => out.push_str(&format!("url = {}\n", quote(url))),
        (None, Some((program, args))) => {
            out.push_str(&format!("command = {}\n", quote(program)));
            let args: Vec<String> = args.iter().map(|a| quote(a)).collect();
            out.push_str(&format!("args = [{}]\n", args.join(", ")));
        }
        _ => {
            return Err(usage(
                "give the server's command after `--` (`linggen mcp add NAME -- npx -y PACKAGE`) \
                 or its address with --url"
                    .into(),
            ));
        }
    }
    if server.network {
        out.push_str("network = true\n");
    }
    if let Some(var) = &server.bearer_token_env_var {
        out.push_str(&format!("bearer_token_env_var = {}\n", quote(var)));
    }
    push_pairs(&mut out, "env", &server.env, '=')?;
    push_pairs(&mut out, "headers", &server.headers, ':')?;
    Ok(out)
}

/// `key = { A = "1", B = "2" }` from `A=1`-style items.
fn push_pairs(out: &mut String, key: &str, items: &[String], sep: char) -> Result<(), Failure> {
    if items.is_empty() {
        return Ok(());
    }
    let mut pairs = Vec::new();
    for item in items {
        let Some((name, value)) = item.split_once(sep) else {
            return Err(usage(format!(
                "`{item}`: write {key} entries as NAME{sep}VALUE"
            )));
        };
        let name = toml::Value::String(name.trim().to_string()).to_string();
        let value = toml::Value::String(value.trim().to_string()).to_string();
        pairs.push(format!("{name} = {value}"));
    }
    out.push_str(&format!("{key} = {{ {} }}\n", pairs.join(", ")));
    Ok(())
}

/// `linggen mcp remove NAME`: deletes `[mcp_servers.NAME]` and its sub-tables.
pub fn remove(start: &Start, name: &str, project: bool) -> i32 {
    let result = config_path(start, project).and_then(|path| {
        let text = read_or_empty(&path)?;
        let Some(kept) = without_table(&text, name) else {
            return Err(usage(format!(
                "{} has no `[mcp_servers.{name}]`; `linggen mcp list` says where each server is \
                 defined (servers in .mcp.json, ~/.claude.json or ~/.codex/config.toml are \
                 removed there)",
                path.display()
            )));
        };
        write(&path, &kept)?;
        Ok(path)
    });
    match result {
        Ok(path) => {
            println!("Removed MCP server `{name}` from {}.", path.display());
            exit::SUCCESS
        }
        Err(f) => print_lines(Err(f)),
    }
}

fn config_path(start: &Start, project: bool) -> Result<PathBuf, Failure> {
    if project {
        let cwd = std::env::current_dir().map_err(|e| usage(e.to_string()))?;
        let root = crate::config::paths::workspace_root(start.root.as_deref(), &cwd)?;
        Ok(root.join(CONFIG_FILE))
    } else {
        Ok(crate::config::paths::linggen_home()?.join(CONFIG_FILE))
    }
}

fn read_or_empty(path: &Path) -> Result<String, Failure> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(Failure {
            code: exit::FAILURE,
            message: format!("cannot read {}: {e}", path.display()),
        }),
    }
}

fn write(path: &Path, text: &str) -> Result<(), Failure> {
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    crate::durable::replace(path, text.as_bytes(), crate::durable::Options::default()).map_err(
        |e| Failure {
            code: exit::FAILURE,
            message: format!("cannot write {}: {}", path.display(), e.reason()),
        },
    )
}

fn usage(message: String) -> Failure {
    Failure {
        code: exit::USAGE,
        message,
    }
}

/// Whether `line` opens the table of server `name` or one of its sub-tables.
fn opens_table(line: &str, name: &str) -> bool {
    let line = line.trim();
    let Some(inner) = line.strip_prefix('[').and_then(|l| l.split(']').next()) else {
        return false;
    };
    let inner: String = inner.chars().filter(|c| !c.is_whitespace()).collect();
    [
        format!("mcp_servers.{name}"),
        format!("mcp_servers.\"{name}\""),
    ]
    .iter()
    .any(|t| inner == *t || inner.starts_with(&format!("{t}.")))
}

/// The 1-based line of `[mcp_servers.NAME]`, if the file has it.
fn table_line(text: &str, name: &str) -> Option<usize> {
    text.lines()
        .position(|l| opens_table(l, name))
        .map(|i| i + 1)
}

/// `text` without the server's tables (each up to the next table header), or `None` when it
/// has none.
fn without_table(text: &str, name: &str) -> Option<String> {
    let mut kept = String::with_capacity(text.len());
    let mut skipping = false;
    let mut found = false;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with('[') {
            skipping = opens_table(line, name);
            found |= skipping;
        }
        if !skipping {
            kept.push_str(line);
        }
    }
    found.then(|| kept.trim_end().to_string() + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::config::Source;

    fn new_server(command: &[&str]) -> NewServer {
        NewServer {
            name: "everything".into(),
            url: None,
            command: command.iter().map(|s| s.to_string()).collect(),
            env: vec!["TOKEN=a \"quoted\" value".into()],
            headers: Vec::new(),
            bearer_token_env_var: None,
            network: true,
        }
    }

    #[test]
    fn an_added_entry_is_toml_the_reader_takes_and_removal_takes_it_all() {
        let Ok(table) = entry_toml(&new_server(&["npx", "-y", "@scope/pkg"])) else {
            panic!("the entry is written")
        };
        let value: toml::Table = toml::from_str(&table).unwrap();
        let entry = &value["mcp_servers"]["everything"];
        assert_eq!(entry["command"].as_str(), Some("npx"));
        assert_eq!(entry["args"].as_array().unwrap().len(), 2);
        assert_eq!(entry["env"]["TOKEN"].as_str(), Some("a \"quoted\" value"));
        let file = format!(
            "[agent]\nmax_iters = 5\n\n{table}[mcp_servers.everything.env]\nX = \"1\"\n\n[ui]\ntheme = \"light\"\n"
        );
        assert_eq!(table_line(&file, "everything"), Some(4));
        let kept = without_table(&file, "everything").unwrap();
        assert_eq!(kept, "[agent]\nmax_iters = 5\n\n[ui]\ntheme = \"light\"\n");
        assert!(without_table(&kept, "everything").is_none());
        assert!(
            without_table(&file, "every").is_none(),
            "a prefix is another server"
        );
    }

    #[test]
    fn add_needs_a_command_or_an_address() {
        assert!(entry_toml(&new_server(&[])).is_err_and(|f| f.message.contains("after `--`")));
    }

    #[test]
    fn list_names_the_source() {
        let source = Source::McpJson(PathBuf::from("/w/.mcp.json"));
        assert_eq!(source.to_string(), ".mcp.json");
    }
}
