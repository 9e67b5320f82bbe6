//! Every file format is read from a temp dir standing in for the person's home and the
//! workspace, with the environment passed in: the real HOME is never read.

mod claude;
mod codex;
mod linggen;

use super::*;

/// A person's home, their `$LINGGEN_HOME` and a workspace, all inside one temp dir.
pub(super) struct Dirs {
    _tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub linggen_home: PathBuf,
    pub root: PathBuf,
}

pub(super) fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let home = base.join("home");
    let linggen_home = home.join(".linggen");
    let root = base.join("work/proj");
    for dir in [&linggen_home, &root] {
        std::fs::create_dir_all(dir).unwrap();
    }
    Dirs {
        _tmp: tmp,
        home,
        linggen_home,
        root,
    }
}

pub(super) fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

pub(super) fn no_env(_: &str) -> Option<String> {
    None
}

pub(super) fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }
}

impl Dirs {
    pub(super) fn load(&self, env: &dyn Fn(&str) -> Option<String>) -> McpConfig {
        load(&self.home, &self.linggen_home, &self.root, env)
    }
    pub(super) fn own_toml(&self) -> PathBuf {
        self.linggen_home.join(CONFIG_FILE)
    }
    pub(super) fn project_toml(&self) -> PathBuf {
        self.root.join(CONFIG_FILE)
    }
    pub(super) fn mcp_json(&self) -> PathBuf {
        self.root.join(".mcp.json")
    }
    pub(super) fn claude_json(&self) -> PathBuf {
        self.home.join(".claude.json")
    }
    pub(super) fn codex_toml(&self) -> PathBuf {
        self.home.join(".codex/config.toml")
    }
}

pub(super) fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The one warning that mentions `needle`.
pub(super) fn warning<'a>(config: &'a McpConfig, needle: &str) -> &'a str {
    let found: Vec<&String> = config
        .warnings
        .iter()
        .filter(|w| w.contains(needle))
        .collect();
    assert_eq!(found.len(), 1, "{needle:?} in {:#?}", config.warnings);
    found[0]
}

#[test]
fn nothing_configured_is_no_server_and_no_warning() {
    let d = dirs();
    let config = d.load(&no_env);
    assert!(config.servers.is_empty());
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
}

#[test]
fn a_file_that_does_not_parse_costs_only_its_own_servers() {
    let d = dirs();
    write(&d.own_toml(), "[mcp_servers.a]\ncommand = \"a\"\n");
    write(&d.project_toml(), "[mcp_servers.b\ncommand = 1\n");
    write(
        &d.mcp_json(),
        "{\"mcpServers\": {\n  \"c\": {\"command\": \"c\"},\n}",
    );
    write(&d.codex_toml(), "mcp_servers = [1]\n");
    let config = d.load(&no_env);
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a"]);
    let w = warning(&config, "linggen-agent.toml");
    assert!(
        w.starts_with(&format!("{}:1: ", d.project_toml().display())),
        "{w}"
    );
    let w = warning(&config, ".mcp.json");
    assert!(w.contains(":3: not valid JSON"), "{w}");
    let w = warning(&config, "config.toml");
    assert!(w.contains(":1: `mcp_servers` must be a table"), "{w}");
}

#[test]
fn invalid_names_are_skipped_with_a_warning() {
    let d = dirs();
    write(
        &d.own_toml(),
        "[mcp_servers.\"my.server\"]\ncommand = \"a\"\n\n[mcp_servers.a__b]\ncommand = \"a\"\n",
    );
    write(
        &d.mcp_json(),
        r#"{"mcpServers": {"my server": {"command": "a"}, "ok_1-x": {"command": "a"}}}"#,
    );
    let config = d.load(&no_env);
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["ok_1-x"]);
    let w = warning(&config, "`my.server`");
    assert!(
        w.contains(":1: ") && w.contains("`.` cannot be in a server's name"),
        "{w}"
    );
    let w = warning(&config, "`a__b`");
    assert!(w.contains(":4: ") && w.contains("mcp__SERVER__TOOL"), "{w}");
    let w = warning(&config, "`my server`");
    assert!(w.contains("` ` cannot be in"), "{w}");
}

#[test]
fn request_headers_read_their_variables_when_asked() {
    let transport = Transport::Http {
        url: "https://a.test".into(),
        headers: map(&[("X-Team", "core")]),
        env_headers: map(&[("X-Key", "KEY_VAR"), ("X-Unset", "UNSET_VAR")]),
        bearer_token_env_var: Some("TOKEN_VAR".into()),
        sse_only: false,
    };
    let env = env_of(&[("KEY_VAR", "k"), ("TOKEN_VAR", "t")]);
    assert_eq!(
        transport.request_headers(&env),
        map(&[
            ("X-Team", "core"),
            ("X-Key", "k"),
            ("Authorization", "Bearer t")
        ])
    );
}

#[test]
fn precedence_across_every_source_and_what_was_shadowed() {
    let d = dirs();
    let toml = |cmd: &str| format!("[mcp_servers.x]\ncommand = \"{cmd}\"\n");
    write(&d.own_toml(), &toml("own"));
    write(&d.project_toml(), &toml("project"));
    write(&d.codex_toml(), &toml("codex"));
    write(
        &d.mcp_json(),
        r#"{"mcpServers": {"x": {"command": "mcp-json"}}}"#,
    );
    let claude = format!(
        r#"{{"mcpServers": {{"x": {{"command": "user"}}}},
            "projects": {{"{}": {{"mcpServers": {{"x": {{"command": "local"}}}}}}}}}}"#,
        d.root.display()
    );
    write(&d.claude_json(), &claude);
    let command = |config: &McpConfig| match &config.get("x").unwrap().transport {
        Transport::Stdio { command, .. } => command.clone(),
        other => panic!("{other:?}"),
    };

    let config = d.load(&no_env);
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    assert_eq!(config.servers.len(), 1);
    let x = config.get("x").unwrap();
    assert_eq!(command(&config), "project");
    assert!(x.source.ships_with_project());
    assert_eq!(
        x.shadowed,
        [
            Source::LinggenUser(d.own_toml()),
            Source::ClaudeLocal(d.claude_json()),
            Source::McpJson(d.mcp_json()),
            Source::ClaudeUser(d.claude_json()),
            Source::Codex(d.codex_toml()),
        ]
    );
    let shown: Vec<String> = x.shadowed.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "$LINGGEN_HOME/linggen-agent.toml",
            "~/.claude.json (local)",
            ".mcp.json",
            "~/.claude.json (user)",
            "$CODEX_HOME/config.toml",
        ]
    );

    // Peel the winners off one by one: each next source takes over.
    let expected = ["own", "local", "mcp-json", "user", "codex"];
    let removals: [&dyn Fn(); 5] = [
        &|| std::fs::remove_file(d.project_toml()).unwrap(),
        &|| std::fs::remove_file(d.own_toml()).unwrap(),
        &|| {
            write(
                &d.claude_json(),
                r#"{"mcpServers": {"x": {"command": "user"}}}"#,
            )
        },
        &|| std::fs::remove_file(d.mcp_json()).unwrap(),
        &|| std::fs::remove_file(d.claude_json()).unwrap(),
    ];
    for (remove, winner) in removals.iter().zip(expected) {
        remove();
        assert_eq!(command(&d.load(&no_env)), winner);
    }
}

#[test]
fn a_disabled_server_still_wins_its_name() {
    let d = dirs();
    write(
        &d.own_toml(),
        "[mcp_servers.github]\ncommand = \"gh-mcp\"\nenabled = false\n",
    );
    write(
        &d.codex_toml(),
        "[mcp_servers.github]\ncommand = \"codex-gh\"\n",
    );
    let config = d.load(&no_env);
    let github = config.get("github").unwrap();
    assert!(
        !github.enabled,
        "turned off in linggen's file, whatever codex says"
    );
    assert_eq!(github.source, Source::LinggenUser(d.own_toml()));
    assert_eq!(github.shadowed, [Source::Codex(d.codex_toml())]);
}

#[test]
fn without_trust_a_name_the_project_took_goes_back_to_the_persons_server() {
    let d = dirs();
    write(
        &d.own_toml(),
        "[mcp_servers.github]\ncommand = \"own-gh\"\n",
    );
    write(
        &d.mcp_json(),
        r#"{"mcpServers": {"github": {"command": "repo-gh"}, "repo-only": {"command": "x"}}}"#,
    );
    write(
        &d.project_toml(),
        "[mcp_servers.lint]\ncommand = \"lint\"\n",
    );
    let config = d.load(&no_env);
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["github", "lint", "repo-only"]);
    // linggen's own file ranks above .mcp.json: the person's github wins anyway.
    assert_eq!(
        config.get("github").unwrap().source,
        Source::LinggenUser(d.own_toml())
    );

    write(&d.own_toml(), "");
    write(
        &d.claude_json(),
        r#"{"mcpServers": {"github": {"command": "user-gh"}}}"#,
    );
    let config = d.load(&no_env);
    let github = config.get("github").unwrap();
    assert_eq!(github.source, Source::McpJson(d.mcp_json()));
    assert_eq!(github.shadowed, [Source::ClaudeUser(d.claude_json())]);

    let untrusted = config.without_project();
    let names: Vec<&str> = untrusted.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["github"], "what the project ships is left out");
    let github = untrusted.get("github").unwrap();
    assert_eq!(github.source, Source::ClaudeUser(d.claude_json()));
    assert!(github.shadowed.is_empty());
}
