//! codex's `config.toml`.

use super::*;

#[test]
fn codex_entries_with_its_own_keys() {
    let d = dirs();
    let codex_home = d.home.join("elsewhere");
    write(
        &codex_home.join("config.toml"),
        r#"model = "o3"

[mcp_servers.search]
url = "https://search.test/mcp"
bearer_token_env_var = "SEARCH_TOKEN"
http_headers = { X-Client = "linggen" }
env_http_headers = { X-Api-Key = "SEARCH_KEY" }
startup_timeout_ms = 1500
tool_timeout_sec = 9.5
required = true
scopes = ["read"]

[mcp_servers.search.tools.query]
approval_mode = "approve"

[mcp_servers.local]
command = "srv"
args = ["--stdio"]
env = { A = "1" }
env_vars = ["PATH_EXTRA"]
cwd = "/opt/srv"
enabled = false
startup_timeout_sec = 4
startup_timeout_ms = 99
enabled_tools = ["a"]
disabled_tools = ["b"]
"#,
    );
    // The default place is not read when CODEX_HOME says elsewhere.
    write(
        &d.codex_toml(),
        "[mcp_servers.default-place]\ncommand = \"x\"\n",
    );
    let config = d.load(&env_of(&[("CODEX_HOME", "")]));
    assert!(config.get("default-place").is_some());
    let home = codex_home.display().to_string();
    let config = d.load(&env_of(&[("CODEX_HOME", &home)]));
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    assert!(config.get("default-place").is_none());

    let search = config.get("search").unwrap();
    assert_eq!(search.source, Source::Codex(codex_home.join("config.toml")));
    assert_eq!(search.startup_timeout, Duration::from_millis(1500));
    assert_eq!(search.tool_timeout, Duration::from_millis(9500));
    assert_eq!(
        search.transport,
        Transport::Http {
            url: "https://search.test/mcp".into(),
            headers: map(&[("X-Client", "linggen")]),
            env_headers: map(&[("X-Api-Key", "SEARCH_KEY")]),
            bearer_token_env_var: Some("SEARCH_TOKEN".into()),
            sse_only: false,
        }
    );
    let local = config.get("local").unwrap();
    assert!(!local.enabled);
    assert_eq!(
        local.startup_timeout,
        Duration::from_secs(4),
        "_sec wins over _ms"
    );
    assert_eq!(local.enabled_tools.as_deref(), Some(&["a".to_string()][..]));
    assert_eq!(local.disabled_tools, ["b"]);
    assert!(matches!(
        &local.transport,
        Transport::Stdio { cwd: Some(cwd), .. } if cwd == Path::new("/opt/srv")
    ));
}

#[test]
fn codex_bad_entries_warn_and_skip() {
    let d = dirs();
    let text = r#"[mcp_servers.a]
command = "a"
http_headers = { X = "y" }

[mcp_servers.b]
url = "https://b.test"
startup_timeout_ms = "soon"

[mcp_servers.c]
url = "https://c.test"
startup_timeout_ms = 0
"#;
    write(&d.codex_toml(), text);
    let config = d.load(&no_env);
    assert!(config.servers.is_empty());
    let w = warning(&config, "`a`");
    let reached = "`http_headers` only applies to a server reached by `url`";
    assert!(w.contains(":3: ") && w.contains(reached), "{w}");
    let w = warning(&config, "`b`");
    let whole = "`startup_timeout_ms` must be a whole number";
    assert!(w.contains(":7: ") && w.contains(whole), "{w}");
    let w = warning(&config, "`c`");
    let positive = "= 0: expected a positive number of milliseconds";
    assert!(w.contains(":11: ") && w.contains(positive), "{w}");
}
