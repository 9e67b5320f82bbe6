//! codex's `[mcp_servers.NAME]` tables in `$CODEX_HOME/config.toml`. The file is codex's:
//! keys linggen has no use for (`required`, `oauth`, `tools`, `env_vars`, …) are passed over
//! in silence rather than warned about on every start.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::entry::{
    Context, EntryError, EntryResult, Found, REACHED, STARTED, check_url, misplaced, seconds,
};
use super::toml_entries::{self, Format};
use super::{DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, ServerConfig, Source, Transport};

#[derive(Deserialize)]
struct Table {
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    cwd: Option<String>,
    url: Option<String>,
    bearer_token_env_var: Option<String>,
    http_headers: Option<BTreeMap<String, String>>,
    env_http_headers: Option<BTreeMap<String, String>>,
    enabled: Option<bool>,
    startup_timeout_sec: Option<f64>,
    startup_timeout_ms: Option<u64>,
    tool_timeout_sec: Option<f64>,
    enabled_tools: Option<Vec<String>>,
    disabled_tools: Option<Vec<String>>,
}

/// The keys linggen reads, with what their values must be.
const KEYS: &[(&str, &str)] = &[
    ("command", "a string: the program to start"),
    ("args", "a list of strings"),
    ("env", "a table of strings"),
    ("cwd", "a string: a folder"),
    ("url", "a string: an http:// or https:// URL"),
    (
        "bearer_token_env_var",
        "a string: an environment variable's name",
    ),
    ("http_headers", "a table of strings"),
    (
        "env_http_headers",
        "a table of header names to environment variable names",
    ),
    ("enabled", "true or false"),
    ("startup_timeout_sec", "a number of seconds"),
    ("startup_timeout_ms", "a whole number of milliseconds"),
    ("tool_timeout_sec", "a number of seconds"),
    ("enabled_tools", "a list of tool names"),
    ("disabled_tools", "a list of tool names"),
];

pub(super) fn read(source: Source, ctx: &Context, found: &mut Found) {
    let format = Format {
        keys: KEYS,
        warn_unknown: false,
        settings,
    };
    toml_entries::read(source, ctx, found, &format);
}

fn settings(name: &str, mut table: Table, source: &Source, ctx: &Context) -> EntryResult {
    let transport = transport(&mut table, ctx)?;
    let mut server = ServerConfig::new(name, transport, source.clone());
    server.enabled = table.enabled.unwrap_or(true);
    // codex reads `_sec` first and `_ms` only without it.
    server.startup_timeout = match (table.startup_timeout_sec, table.startup_timeout_ms) {
        (None, Some(0)) => {
            return Err(EntryError::Timeout {
                key: "startup_timeout_ms",
                value: "0".into(),
                unit: "milliseconds",
            });
        }
        (None, Some(ms)) => Duration::from_millis(ms),
        (secs, _) => seconds("startup_timeout_sec", secs, DEFAULT_STARTUP_TIMEOUT)?,
    };
    server.tool_timeout = seconds(
        "tool_timeout_sec",
        table.tool_timeout_sec,
        DEFAULT_TOOL_TIMEOUT,
    )?;
    server.enabled_tools = table.enabled_tools;
    server.disabled_tools = table.disabled_tools.unwrap_or_default();
    Ok(server)
}

/// As codex decides: `command` makes a stdio server and `url` a streamable-HTTP one, and a
/// key of the other kind is an error there too.
fn transport(table: &mut Table, ctx: &Context) -> Result<Transport, EntryError> {
    match (table.command.take(), table.url.take()) {
        (Some(_), Some(_)) => Err(EntryError::BothTransports),
        (None, None) => Err(EntryError::NoTransport),
        (Some(command), None) => {
            let http_only = [
                ("bearer_token_env_var", table.bearer_token_env_var.is_some()),
                ("http_headers", table.http_headers.is_some()),
                ("env_http_headers", table.env_http_headers.is_some()),
            ];
            misplaced(&http_only, REACHED)?;
            if command.trim().is_empty() {
                return Err(EntryError::Empty("command"));
            }
            Ok(Transport::Stdio {
                command,
                args: table.args.take().unwrap_or_default(),
                env: table.env.take().unwrap_or_default(),
                cwd: table.cwd.take().map(|c| ctx.folder(&c)),
            })
        }
        (None, Some(url)) => {
            let stdio_only = [
                ("args", table.args.is_some()),
                ("env", table.env.is_some()),
                ("cwd", table.cwd.is_some()),
            ];
            misplaced(&stdio_only, STARTED)?;
            check_url(&url, &url)?;
            Ok(Transport::Http {
                url,
                headers: table.http_headers.take().unwrap_or_default(),
                env_headers: table.env_http_headers.take().unwrap_or_default(),
                bearer_token_env_var: table.bearer_token_env_var.take().filter(|v| !v.is_empty()),
                sse_only: false,
            })
        }
    }
}
