//! codex's `[mcp_servers.NAME]` tables in `$CODEX_HOME/config.toml`. The file is codex's:
//! keys linggen has no use for (`required`, `oauth`, `tools`, `env_vars`, …) are passed over
//! in silence rather than warned about on every start.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::entry::{
    Context, EntryError, EntryResult, REACHED, STARTED, check_url, misplaced, seconds,
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

pub(super) fn read(source: Source, ctx: &Context, found: &mut super::entry::Found) {
    let format = Format {
        keys: KEYS,
        warn_unknown: false,
        settings,
    };
    toml_entries::read(source, ctx, found, &format);
}

fn settings(name: &str, table: Table, source: &Source, ctx: &Context) -> EntryResult {
    let Table {
        command,
        args,
        env,
        cwd,
        url,
        bearer_token_env_var,
        http_headers,
        env_http_headers,
        enabled,
        startup_timeout_sec,
        startup_timeout_ms,
        tool_timeout_sec,
        enabled_tools,
        disabled_tools,
    } = table;
    let transport = match (command, url) {
        (Some(_), Some(_)) => return Err(EntryError::BothTransports),
        (None, None) => return Err(EntryError::NoTransport),
        (Some(command), None) => {
            let http_only = [
                ("bearer_token_env_var", bearer_token_env_var.is_some()),
                ("http_headers", http_headers.is_some()),
                ("env_http_headers", env_http_headers.is_some()),
            ];
            misplaced(&http_only, REACHED)?;
            if command.trim().is_empty() {
                return Err(EntryError::Empty("command"));
            }
            Transport::Stdio {
                command,
                args: args.unwrap_or_default(),
                env: env.unwrap_or_default(),
                cwd: cwd.map(|c| ctx.folder(&c)),
            }
        }
        (None, Some(url)) => {
            let stdio_only = [
                ("args", args.is_some()),
                ("env", env.is_some()),
                ("cwd", cwd.is_some()),
            ];
            misplaced(&stdio_only, STARTED)?;
            check_url(&url, &url)?;
            Transport::Http {
                url,
                headers: http_headers.unwrap_or_default(),
                env_headers: env_http_headers.unwrap_or_default(),
                bearer_token_env_var: bearer_token_env_var.filter(|v| !v.is_empty()),
                sse_only: false,
            }
        }
    };
    let mut server = ServerConfig::new(name, transport, source.clone());
    server.enabled = enabled.unwrap_or(true);
    // codex reads `_sec` first and `_ms` only without it.
    server.startup_timeout = match (startup_timeout_sec, startup_timeout_ms) {
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
    server.tool_timeout = seconds("tool_timeout_sec", tool_timeout_sec, DEFAULT_TOOL_TIMEOUT)?;
    server.enabled_tools = enabled_tools;
    server.disabled_tools = disabled_tools.unwrap_or_default();
    Ok(server)
}
