//! The MCP servers an editor hands over in `session/new` and `session/load`, as linggen's
//! own server settings: they start with the session like configured servers (the person's:
//! the editor is theirs), through the same launcher and sandbox, and an editor's server
//! replaces a configured one of the same name for that session.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::model::{HttpHeader, McpServer};
use crate::mcp::config::{ServerConfig, Transport};

/// The servers as linggen runs them, or what is wrong with one (naming it).
pub(in crate::acp) fn servers(
    from_editor: &[McpServer],
    folder: &Path,
) -> Result<Vec<ServerConfig>, String> {
    from_editor
        .iter()
        .map(|server| {
            let (name, transport) = transport(server)?;
            ServerConfig::from_editor(&name, transport, folder)
                .map_err(|e| format!("MCP server `{name}` from the editor: {e}"))
        })
        .collect()
}

fn transport(server: &McpServer) -> Result<(String, Transport), String> {
    let http = |url: &str, headers: &[HttpHeader], sse_only: bool| Transport::Http {
        url: url.to_string(),
        headers: headers
            .iter()
            .map(|h| (h.name.clone(), h.value.clone()))
            .collect(),
        env_headers: BTreeMap::new(),
        bearer_token_env_var: None,
        sse_only,
    };
    Ok(match server {
        McpServer::Stdio(s) => (
            s.name.clone(),
            Transport::Stdio {
                command: s.command.clone(),
                args: s.args.clone(),
                env: s
                    .env
                    .iter()
                    .map(|v| (v.name.clone(), v.value.clone()))
                    .collect(),
                cwd: None,
            },
        ),
        McpServer::Http(s) => (s.name.clone(), http(&s.url, &s.headers, false)),
        McpServer::Sse(s) => (s.name.clone(), http(&s.url, &s.headers, true)),
        McpServer::Unknown(server) => return Err(unknown(server)),
    })
}

/// Why a server the editor sent could not be read, naming it when it can.
fn unknown(server: &Value) -> String {
    let name = server["name"].as_str().unwrap_or("?");
    let why = match server["type"].as_str() {
        None => "a stdio server needs a `command` (and `args` and `env` as lists)".to_string(),
        Some(kind @ ("http" | "sse")) => {
            format!("an `{kind}` server needs a `url` (and `headers` as a list)")
        }
        Some(kind) => format!("linggen does not speak the `{kind}` transport"),
    };
    format!("MCP server `{name}` from the editor: {why}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_transport_becomes_a_server_and_a_bad_name_is_refused() {
        let given: Vec<McpServer> = serde_json::from_value(json!([
            {"name": "files", "command": "/usr/bin/files-mcp", "args": ["--ro"], "env": [{"name": "K", "value": "v"}]},
            {"type": "http", "name": "docs", "url": "http://127.0.0.1:9/mcp", "headers": [{"name": "X-Key", "value": "s"}]},
        ]))
        .unwrap();
        let servers = servers(&given, Path::new("/w")).unwrap();
        assert_eq!(servers[0].name, "files");
        assert!(
            matches!(&servers[0].transport, Transport::Stdio { command, args, .. }
            if command == "/usr/bin/files-mcp" && args == &["--ro"])
        );
        assert!(
            matches!(&servers[1].transport, Transport::Http { headers, sse_only: false, .. }
            if headers["X-Key"] == "s")
        );
        assert!(!servers[0].source.ships_with_project());
        let bad: Vec<McpServer> =
            serde_json::from_value(json!([{"name": "a b", "command": "x", "args": [], "env": []}]))
                .unwrap();
        assert!(
            super::servers(&bad, Path::new("/w"))
                .unwrap_err()
                .contains("a b")
        );
        let unread: Vec<McpServer> = serde_json::from_value(json!([
            {"type": "http", "name": "h"},
            {"type": "acp", "name": "a", "serverId": "x"},
        ]))
        .unwrap();
        let why = |i: usize| super::servers(&unread[i..=i], Path::new("/w")).unwrap_err();
        assert!(
            why(0).contains("`h`") && why(0).contains("needs a `url`"),
            "{}",
            why(0)
        );
        assert!(why(1).contains("the `acp` transport"), "{}", why(1));
    }
}
