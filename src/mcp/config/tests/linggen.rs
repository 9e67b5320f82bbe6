//! linggen's own `[mcp_servers.NAME]` tables.

use super::*;

#[test]
fn linggen_table_reads_every_key() {
    let d = dirs();
    write(
        &d.own_toml(),
        r#"
[agent]
max_iters = 5

[mcp_servers.files]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
env = { LOG = "debug" }
cwd = "tools"
network = true
startup_timeout_sec = 2.5
tool_timeout_sec = 600
enabled_tools = ["read_file", "list"]
disabled_tools = ["list"]

[mcp_servers.docs]
url = "https://docs.example.test/mcp"
headers = { X-Team = "core" }
bearer_token_env_var = "DOCS_TOKEN"
enabled = false

[mcp_servers.home-tool]
command = "tool"
cwd = "~/bin"
"#,
    );
    let config = d.load(&no_env);
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["docs", "files", "home-tool"]);

    let files = config.get("files").unwrap();
    assert_eq!(
        files.transport,
        Transport::Stdio {
            command: "npx".into(),
            args: vec![
                "-y".into(),
                "@modelcontextprotocol/server-filesystem".into(),
                ".".into()
            ],
            env: map(&[("LOG", "debug")]),
            cwd: Some(d.root.join("tools")),
        }
    );
    assert!(files.enabled && files.network);
    assert_eq!(files.startup_timeout, Duration::from_millis(2500));
    assert_eq!(files.tool_timeout, Duration::from_secs(600));
    assert!(files.exposes("read_file"));
    assert!(
        !files.exposes("list"),
        "disabled_tools applies after enabled_tools"
    );
    assert!(!files.exposes("write_file"), "not in enabled_tools");
    assert_eq!(files.source, Source::LinggenUser(d.own_toml()));
    assert!(!files.source.ships_with_project());

    let docs = config.get("docs").unwrap();
    assert!(!docs.enabled, "a disabled server is kept, marked");
    assert!(!docs.network);
    assert_eq!(docs.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
    assert_eq!(docs.tool_timeout, DEFAULT_TOOL_TIMEOUT);
    assert!(docs.exposes("anything"));
    let Transport::Http {
        url,
        headers,
        bearer_token_env_var,
        sse_only,
        ..
    } = &docs.transport
    else {
        panic!("{docs:?}");
    };
    assert_eq!(url, "https://docs.example.test/mcp");
    assert_eq!(headers, &map(&[("X-Team", "core")]));
    assert_eq!(bearer_token_env_var.as_deref(), Some("DOCS_TOKEN"));
    assert!(!sse_only);

    let home_tool = config.get("home-tool").unwrap();
    let Transport::Stdio { cwd, .. } = &home_tool.transport else {
        panic!("{home_tool:?}");
    };
    assert_eq!(cwd.as_deref(), Some(d.home.join("bin").as_path()));
}

#[test]
fn the_configuration_loader_knows_mcp_servers() {
    let d = dirs();
    write(
        &d.own_toml(),
        "[mcp_servers.any-name]\ncommand = \"x\"\nunknown_here = 1\n",
    );
    let flags = crate::config::FlagOverrides::default();
    let config = crate::config::Config::load(&d.linggen_home, &d.root, &no_env, &flags).unwrap();
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    // The entry's own keys are this module's to check.
    let mcp = d.load(&no_env);
    let w = warning(&mcp, "unknown_here");
    assert!(
        w.starts_with(&format!("{}:3: ", d.own_toml().display())),
        "{w}"
    );
    assert!(mcp.get("any-name").is_some(), "an unknown key only warns");
}

#[test]
fn a_bad_entry_names_file_line_and_fix_and_the_rest_still_load() {
    let d = dirs();
    let text = r#"[mcp_servers.good]
command = "ok"

[mcp_servers.wrong-type]
command = "npx"
args = "-y server"

[mcp_servers.both]
command = "a"
url = "https://b.test"

[mcp_servers.neither]
enabled = true

[mcp_servers.misplaced]
url = "https://b.test/mcp"
args = ["x"]

[mcp_servers.zero]
command = "a"
tool_timeout_sec = 0

[mcp_servers.ftp]
url = "ftp://files.test"

[mcp_servers.typo]
command = "a"
enabled_tool = ["x"]

[mcp_servers.scalar-env]
command = "a"
env = { TOKEN = 12345 }
"#;
    write(&d.project_toml(), text);
    let config = d.load(&no_env);
    let file = d.project_toml().display().to_string();
    let at = |line: usize| format!("{file}:{line}: MCP server");

    let w = warning(&config, "`wrong-type`");
    assert!(w.starts_with(&at(6)), "the line of the value: {w}");
    assert!(w.contains("`args` must be a list of strings"), "{w}");
    let w = warning(&config, "`both`");
    assert!(
        w.starts_with(&at(8)) && w.contains("keep the one you mean"),
        "{w}"
    );
    let w = warning(&config, "`neither`");
    assert!(
        w.contains("needs `command`") && w.contains("or `url`"),
        "{w}"
    );
    let w = warning(&config, "`misplaced`");
    assert!(
        w.starts_with(&at(17))
            && w.contains("`args` only applies to a server started with `command`"),
        "{w}"
    );
    let w = warning(&config, "`zero`");
    assert!(
        w.starts_with(&at(21))
            && w.contains("tool_timeout_sec` = 0: expected a positive number of seconds"),
        "{w}"
    );
    let w = warning(&config, "`ftp`");
    assert!(w.contains("expected an http:// or https:// URL"), "{w}");
    let w = warning(&config, "enabled_tool`");
    assert!(w.starts_with(&format!("{file}:28: unknown key")), "{w}");
    assert!(w.contains("did you mean `enabled_tools`?"), "{w}");
    let w = warning(&config, "`scalar-env`");
    assert!(
        w.starts_with(&at(32)) && w.contains("`env` must be a table of strings"),
        "{w}"
    );
    assert!(!w.contains("12345"), "a value is never repeated: {w}");

    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["good", "typo"]);
    assert_eq!(config.warnings.len(), 8, "{:#?}", config.warnings);
}

#[test]
fn a_root_at_linggen_home_reads_that_file_once_as_the_persons() {
    let d = dirs();
    write(&d.own_toml(), "[mcp_servers.a]\ncommand = \"a\"\n");
    let config = load(&d.home, &d.linggen_home, &d.linggen_home, &no_env);
    let a = config.get("a").unwrap();
    assert_eq!(a.source, Source::LinggenUser(d.own_toml()));
    assert!(a.shadowed.is_empty(), "{a:?}");
}
