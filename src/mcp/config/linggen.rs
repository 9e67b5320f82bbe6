//! linggen's own `[mcp_servers.NAME]` tables in `linggen-agent.toml`. Values are used as
//! written: no `${VAR}` expansion (a secret is named by `bearer_token_env_var` instead of
//! being copied into the file). Unknown keys warn, as everywhere in this file, so a
//! config written for a newer linggen still loads.

use std::collections::BTreeMap;

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
    headers: Option<BTreeMap<String, String>>,
    bearer_token_env_var: Option<String>,
    enabled: Option<bool>,
    startup_timeout_sec: Option<f64>,
    tool_timeout_sec: Option<f64>,
    network: Option<bool>,
    enabled_tools: Option<Vec<String>>,
    disabled_tools: Option<Vec<String>>,
}

/// Every key, with what its value must be.
const KEYS: &[(&str, &str)] = &[
    ("command", "a string: the program to start"),
    ("args", "a list of strings"),
    ("env", "a table of strings: NAME = \"value\""),
    ("cwd", "a string: the folder to start the server in"),
    ("url", "a string: the server's http:// or https:// URL"),
    ("headers", "a table of strings: Header-Name = \"value\""),
    (
        "bearer_token_env_var",
        "a string: the name of the environment variable holding the token",
    ),
    ("enabled", "true or false"),
    ("startup_timeout_sec", "a number of seconds"),
    ("tool_timeout_sec", "a number of seconds"),
    ("network", "true or false"),
    ("enabled_tools", "a list of tool names"),
    ("disabled_tools", "a list of tool names"),
];

/// Reads the servers of one `linggen-agent.toml`. A file that is not TOML stops the
/// configuration loader too; here it only costs its servers.
pub(super) fn read(source: Source, ctx: &Context, found: &mut Found) {
    let format = Format {
        keys: KEYS,
        warn_unknown: true,
        settings,
    };
    toml_entries::read(source, ctx, found, &format);
}

fn settings(name: &str, mut table: Table, source: &Source, ctx: &Context) -> EntryResult {
    let transport = transport(&mut table, ctx)?;
    let mut server = ServerConfig::new(name, transport, source.clone());
    server.enabled = table.enabled.unwrap_or(true);
    server.startup_timeout = seconds(
        "startup_timeout_sec",
        table.startup_timeout_sec,
        DEFAULT_STARTUP_TIMEOUT,
    )?;
    server.tool_timeout = seconds(
        "tool_timeout_sec",
        table.tool_timeout_sec,
        DEFAULT_TOOL_TIMEOUT,
    )?;
    server.network = table.network.unwrap_or(false);
    server.enabled_tools = table.enabled_tools;
    server.disabled_tools = table.disabled_tools.unwrap_or_default();
    Ok(server)
}

/// `command` or `url`, with the keys of that kind of server; a key of the other kind is
/// refused rather than ignored, since it shows the entry is not what its author thinks.
fn transport(table: &mut Table, ctx: &Context) -> Result<Transport, EntryError> {
    match (table.command.take(), table.url.take()) {
        (Some(_), Some(_)) => Err(EntryError::BothTransports),
        (None, None) => Err(EntryError::NoTransport),
        (Some(command), None) => {
            let http_only = [
                ("headers", table.headers.is_some()),
                ("bearer_token_env_var", table.bearer_token_env_var.is_some()),
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
                ("network", table.network.is_some()),
            ];
            misplaced(&stdio_only, STARTED)?;
            check_url(&url, &url)?;
            Ok(Transport::Http {
                url,
                headers: table.headers.take().unwrap_or_default(),
                env_headers: BTreeMap::new(),
                bearer_token_env_var: table.bearer_token_env_var.take().filter(|v| !v.is_empty()),
                sse_only: false,
            })
        }
    }
}
