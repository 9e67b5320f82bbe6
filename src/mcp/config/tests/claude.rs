//! Claude Code's `.mcp.json` and `~/.claude.json`, with `${VAR}` expansion.

use super::*;

const MCP_JSON: &str = r#"{
  "mcpServers": {
    "files": {
      "command": "${TOOLS:-/usr/local}/bin/fs",
      "args": ["--root", "${HOME_DIR}", "${DEPTH:-3}"],
      "env": {"TOKEN": "${GH_TOKEN}", "PLAIN": "x"}
    },
    "typed": {"type": "stdio", "command": "srv"},
    "remote": {
      "type": "http",
      "url": "https://${HOST}/mcp",
      "headers": {"Authorization": "Bearer ${API_TOKEN}"}
    },
    "legacy": {"type": "sse", "url": "https://legacy.test/sse"},
    "needs-var": {"command": "x", "args": ["${NOT_SET}", "${ALSO_NOT_SET}"]}
  }
}"#;

const MCP_ENV: &[(&str, &str)] = &[
    ("HOME_DIR", "/home/a"),
    ("GH_TOKEN", "ghp_secret"),
    ("HOST", "api.example.test"),
    ("API_TOKEN", "tok_secret"),
];

#[test]
fn mcp_json_entries_with_expansion() {
    let d = dirs();
    write(&d.mcp_json(), MCP_JSON);
    let config = d.load(&env_of(MCP_ENV));
    let files = config.get("files").unwrap();
    assert_eq!(
        files.transport,
        Transport::Stdio {
            command: "/usr/local/bin/fs".into(),
            args: vec!["--root".into(), "/home/a".into(), "3".into()],
            env: map(&[("TOKEN", "ghp_secret"), ("PLAIN", "x")]),
            cwd: None,
        }
    );
    assert_eq!(files.source, Source::McpJson(d.mcp_json()));
    assert!(files.source.ships_with_project(), "a trust grant");
    assert!(matches!(
        &config.get("typed").unwrap().transport,
        Transport::Stdio { command, .. } if command == "srv"
    ));
    let remote = &config.get("remote").unwrap().transport;
    let Transport::Http {
        url,
        headers,
        sse_only,
        ..
    } = remote
    else {
        panic!("{remote:?}");
    };
    assert_eq!(url, "https://api.example.test/mcp");
    assert_eq!(headers, &map(&[("Authorization", "Bearer tok_secret")]));
    assert!(!sse_only);
    assert!(matches!(
        &config.get("legacy").unwrap().transport,
        Transport::Http { sse_only: true, .. }
    ));

    // Claude Code fails a server whose variable is unset without a default: so do we.
    assert!(config.get("needs-var").is_none());
    let w = warning(&config, "`needs-var`");
    assert!(
        w.starts_with(&format!("{}:15: ", d.mcp_json().display())),
        "{w}"
    );
    assert!(w.contains("`NOT_SET`, `ALSO_NOT_SET` are not set"), "{w}");
    assert_eq!(config.warnings.len(), 1, "{:#?}", config.warnings);
}

#[test]
fn secrets_stay_out_of_debug_and_warnings() {
    let d = dirs();
    write(&d.mcp_json(), MCP_JSON);
    let env = env_of(&[
        ("GH_TOKEN", "ghp_secret"),
        ("API_TOKEN", "tok_secret"),
        ("HOST", "h.test"),
        ("HOME_DIR", "/h"),
        ("NOT_SET", "x"),
        ("ALSO_NOT_SET", "y"),
        ("BAD_URL", "ftp://user:pw_secret@h.test"),
    ]);
    write(
        &d.claude_json(),
        r#"{"mcpServers": {"bad": {"type": "http", "url": "${BAD_URL}"}}}"#,
    );
    let config = d.load(&env);
    let debug = format!("{config:?}");
    for secret in ["ghp_secret", "tok_secret", "pw_secret"] {
        assert!(!debug.contains(secret), "{secret} in {debug}");
    }
    assert!(debug.contains("\"TOKEN\": <redacted>"), "{debug}");
    let w = warning(&config, "`bad`");
    assert!(w.contains("url \"${BAD_URL}\""), "shown as written: {w}");
}

#[test]
fn mcp_json_entries_that_claude_code_would_refuse() {
    let d = dirs();
    write(
        &d.mcp_json(),
        r#"{
  "mcpServers": {
    "no-type": {"url": "https://a.test/mcp"},
    "streamable": {"type": "streamableHttp", "url": "https://a.test/mcp"},
    "args-string": {"command": "a",
                    "args": "b"},
    "env-number": {"command": "a", "env": {"N": 1}},
    "scalar": "npx server",
    "empty": {}
  }
}"#,
    );
    let config = d.load(&no_env);
    assert!(config.servers.is_empty(), "{:?}", config.servers);
    let w = warning(&config, "`no-type`");
    assert!(
        w.contains(":3: ") && w.contains("add \"type\": \"http\""),
        "{w}"
    );
    let w = warning(&config, "`streamable`");
    assert!(w.contains("\"streamableHttp\" is not known"), "{w}");
    let w = warning(&config, "`args-string`");
    assert!(
        w.contains(":6: ") && w.contains("`args` must be a list of strings"),
        "{w}"
    );
    let w = warning(&config, "`env-number`");
    assert!(w.contains("`env` must be an object of strings"), "{w}");
    let w = warning(&config, "`scalar`");
    assert!(w.contains("must be a table of settings"), "{w}");
    let w = warning(&config, "`empty`");
    assert!(w.contains("needs `command`"), "{w}");
}

#[test]
fn claude_json_user_and_local_scopes() {
    let d = dirs();
    let text = format!(
        r#"{{
  "numStartups": 12,
  "mcpServers": {{
    "everywhere": {{"command": "u"}},
    "db": {{"command": "user-db"}}
  }},
  "projects": {{
    "{root}": {{
      "allowedTools": [],
      "mcpServers": {{"db": {{"command": "local-db", "env": {{"P": "${{PORT:-5432}}"}}}}}}
    }},
    "{root}/sub": {{"mcpServers": {{"elsewhere": {{"command": "x"}}}}}},
    "/some/other": {{"mcpServers": {{"other": {{"command": "x"}}}}}}
  }}
}}"#,
        root = d.root.display()
    );
    write(&d.claude_json(), &text);
    let config = d.load(&no_env);
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["db", "everywhere"],
        "another folder's servers stay there"
    );
    let db = config.get("db").unwrap();
    assert_eq!(db.source, Source::ClaudeLocal(d.claude_json()));
    assert_eq!(db.shadowed, [Source::ClaudeUser(d.claude_json())]);
    assert!(matches!(
        &db.transport,
        Transport::Stdio { command, env, .. } if command == "local-db" && env["P"] == "5432"
    ));
    let everywhere = config.get("everywhere").unwrap();
    assert_eq!(everywhere.source, Source::ClaudeUser(d.claude_json()));
    assert!(!everywhere.source.ships_with_project());
    assert_eq!(everywhere.source.to_string(), "~/.claude.json (user)");
    assert_eq!(db.source.to_string(), "~/.claude.json (local)");
}

#[test]
fn claude_json_local_scope_warnings_point_at_the_local_entry() {
    let d = dirs();
    let text = format!(
        "{{\n\"mcpServers\": {{\"db\": {{\"command\": \"ok\"}}}},\n\"projects\": {{\"{}\": {{\n\"mcpServers\": {{\n\"db\": {{\"command\": 5}}}}}}}}\n}}",
        d.root.display()
    );
    write(&d.claude_json(), &text);
    let config = d.load(&no_env);
    let w = warning(&config, "`db`");
    assert!(
        w.contains(".claude.json:5: ") && w.contains("`command` must be a string"),
        "{w}"
    );
    // The local entry is broken, so the user scope's serves.
    assert_eq!(
        config.get("db").unwrap().source,
        Source::ClaudeUser(d.claude_json())
    );
}
