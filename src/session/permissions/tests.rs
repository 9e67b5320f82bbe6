use serde_json::json;

use super::*;
use crate::tools::{ToolContext, prepare};

struct Fixture {
    _dir: tempfile::TempDir,
    ctx: ToolContext,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("a.txt"), "hello\n").unwrap();
    Fixture {
        ctx: ToolContext::new(&root),
        _dir: dir,
    }
}

fn verdict(perms: &Permissions, f: &Fixture, tool: &str, args: serde_json::Value) -> Verdict {
    let prepared = prepare(&f.ctx, tool, &args).unwrap();
    perms.check(&prepared)
}

fn perms(mode: PermissionMode, allow: &[&str], deny: &[&str]) -> Permissions {
    let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    Permissions::new(mode, &s(allow), &s(deny)).unwrap()
}

fn is_ask(v: &Verdict) -> bool {
    matches!(v, Verdict::Ask { .. })
}

fn is_deny(v: &Verdict) -> bool {
    matches!(v, Verdict::Deny { .. })
}

#[test]
fn default_mode_reads_run_writes_ask() {
    let f = fixture();
    let p = perms(PermissionMode::Default, &[], &[]);
    assert_eq!(
        verdict(&p, &f, "Read", json!({"path": "a.txt"})),
        Verdict::Allow
    );
    assert!(is_ask(&verdict(
        &p,
        &f,
        "Write",
        json!({"path": "b.txt", "content": "x"})
    )));
    assert_eq!(
        verdict(&p, &f, "Bash", json!({"cmd": "ls -la"})),
        Verdict::Allow
    );
    assert!(is_ask(&verdict(
        &p,
        &f,
        "Bash",
        json!({"cmd": "cargo test"})
    )));
}

#[test]
fn accept_edits_and_plan() {
    let f = fixture();
    let write = json!({"path": "b.txt", "content": "x"});
    let p = perms(PermissionMode::AcceptEdits, &[], &[]);
    assert_eq!(verdict(&p, &f, "Write", write.clone()), Verdict::Allow);
    assert!(is_ask(&verdict(&p, &f, "Bash", json!({"cmd": "make"}))));
    let p = perms(PermissionMode::Plan, &[], &[]);
    assert!(is_deny(&verdict(&p, &f, "Write", write)));
    assert!(is_deny(&verdict(&p, &f, "Bash", json!({"cmd": "make"}))));
    assert_eq!(
        verdict(&p, &f, "Bash", json!({"cmd": "git status"})),
        Verdict::Allow
    );
}

#[test]
fn rules_allow_and_deny_beats_allow() {
    let f = fixture();
    let p = perms(
        PermissionMode::Default,
        &["Bash(cargo test*)", "Write(src/**)", "Bash(git push:*)"],
        &["Bash(cargo test --release*)", "Write(src/secret*)"],
    );
    assert_eq!(
        verdict(&p, &f, "Bash", json!({"cmd": "cargo test -q"})),
        Verdict::Allow
    );
    assert!(is_deny(&verdict(
        &p,
        &f,
        "Bash",
        json!({"cmd": "cargo test --release"})
    )));
    assert_eq!(
        verdict(&p, &f, "Bash", json!({"cmd": "git push origin"})),
        Verdict::Allow
    );
    assert_eq!(
        verdict(&p, &f, "Write", json!({"path": "src/x.rs", "content": ""})),
        Verdict::Allow
    );
    assert!(is_deny(&verdict(
        &p,
        &f,
        "Write",
        json!({"path": "src/secret.rs", "content": ""})
    )));
    // Every segment must be allowed: an allowed prefix does not cover what follows `&&`.
    assert!(is_ask(&verdict(
        &p,
        &f,
        "Bash",
        json!({"cmd": "cargo test && make"})
    )));
}

#[test]
fn never_segments_ask_even_in_bypass_with_rules() {
    let f = fixture();
    let p = perms(PermissionMode::Bypass, &["Bash(python3*)", "Bash"], &[]);
    assert!(is_ask(&verdict(
        &p,
        &f,
        "Bash",
        json!({"cmd": "python3 -c 'print(1)'"})
    )));
    assert_eq!(
        verdict(&p, &f, "Bash", json!({"cmd": "make"})),
        Verdict::Allow
    );
}

#[test]
fn rules_only_makes_read_only_commands_need_a_rule() {
    let f = fixture();
    let mut p = perms(PermissionMode::Default, &["Bash(git status*)"], &[]);
    assert!(!p.set_rules_only(true));
    let log = prepare(&f.ctx, "Bash", &json!({"cmd": "git log -1"})).unwrap();
    let Verdict::Ask { reason } = p.check(&log) else {
        panic!("a read-only command without a rule must ask");
    };
    assert!(
        reason.contains("`git log -1` comes from a command or skill file"),
        "{reason}"
    );
    // The command's allowed-tools (extra rules), a configured rule, or bypass lift it.
    let extra = [Rule::parse("Bash(git log:*)").unwrap()];
    assert_eq!(p.check_with(&log, &extra), Verdict::Allow);
    assert_eq!(
        verdict(&p, &f, "Bash", json!({"cmd": "git status"})),
        Verdict::Allow
    );
    p.mode = PermissionMode::Bypass;
    assert_eq!(p.check(&log), Verdict::Allow);
    p.mode = PermissionMode::Default;
    // Off again: read-only commands run as before.
    assert!(p.set_rules_only(false));
    assert_eq!(p.check(&log), Verdict::Allow);
}

#[test]
fn session_approval_covers_the_same_prefix_only() {
    let f = fixture();
    let mut p = perms(PermissionMode::Default, &[], &[]);
    let prepared = prepare(&f.ctx, "Bash", &json!({"cmd": "make build"})).unwrap();
    assert!(is_ask(&p.check(&prepared)));
    p.allow_for_session(&prepared);
    assert_eq!(
        verdict(&p, &f, "Bash", json!({"cmd": "make test"})),
        Verdict::Allow
    );
    assert!(is_ask(&verdict(
        &p,
        &f,
        "Bash",
        json!({"cmd": "cargo build"})
    )));
}

#[test]
fn bad_rules_are_explained() {
    let err = Permissions::new(PermissionMode::Default, &["Bash(cargo".into()], &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing `)`"), "{err}");
    let err = Permissions::new(PermissionMode::Default, &["Frobnicate".into()], &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown tool"), "{err}");
}

#[test]
fn wildcard() {
    assert!(wildcard_match("cargo test*", "cargo test --all"));
    assert!(wildcard_match("cargo test*", "cargo test"));
    assert!(wildcard_match("*.rs", "main.rs"));
    assert!(!wildcard_match("git*log", "git status"));
    assert!(wildcard_match("git*log", "git --no-pager log"));
    assert!(!wildcard_match("ls", "ls -la"));
}

#[test]
fn screenshots_ask_like_unlisted_commands_and_plan_refuses_them() {
    let mut f = fixture();
    // A browser that exists, so preparing does not depend on this machine.
    f.ctx.screenshot.chromium = Some("/bin/sh".into());
    let shot = || json!({"url": "http://localhost:3000/"});
    let ask = |mode| verdict(&perms(mode, &[], &[]), &f, "capture_screenshot", shot());
    let reason = "capture_screenshot opens http://localhost:3000/ in a browser and saves a PNG";
    assert_eq!(
        ask(PermissionMode::Default),
        Verdict::Ask {
            reason: reason.into()
        }
    );
    // accept-edits accepts edits, not a browser fetching pages.
    assert!(is_ask(&ask(PermissionMode::AcceptEdits)));
    assert_eq!(ask(PermissionMode::Bypass), Verdict::Allow);
    assert!(is_deny(&ask(PermissionMode::Plan)));
    // A rule allows it, except in plan mode, where it still writes a file; deny beats it.
    let rule = ["capture_screenshot"];
    let p = perms(PermissionMode::Default, &rule, &[]);
    assert_eq!(
        verdict(&p, &f, "capture_screenshot", shot()),
        Verdict::Allow
    );
    let p = perms(PermissionMode::Plan, &rule, &[]);
    assert!(is_deny(&verdict(&p, &f, "capture_screenshot", shot())));
    let p = perms(PermissionMode::Bypass, &rule, &rule);
    assert!(is_deny(&verdict(&p, &f, "capture_screenshot", shot())));
    // "Always (this session)" covers the tool.
    let mut p = perms(PermissionMode::Default, &[], &[]);
    let prepared = prepare(&f.ctx, "capture_screenshot", &shot()).unwrap();
    assert_eq!(scope_rules(&prepared), ["capture_screenshot"]);
    p.allow_for_session(&prepared);
    let other = json!({"url": "http://127.0.0.1:8080/x"});
    assert_eq!(verdict(&p, &f, "capture_screenshot", other), Verdict::Allow);
}

#[test]
fn commands_outside_the_sandbox_always_go_to_a_person() {
    let f = fixture();
    let mut p = perms(PermissionMode::Bypass, &["Bash(ls*)"], &[]);
    let args = json!({"cmd": "ls", "dangerouslyDisableSandbox": true});
    let prepared = prepare(&f.ctx, "Bash", &args).unwrap();
    let v = p.check(&prepared);
    assert!(is_ask(&v), "{v:?}");
    assert!(format!("{v:?}").contains("outside the sandbox"), "{v:?}");
    // Not even "always, this session" lets the model leave the sandbox silently.
    p.allow_for_session(&prepared);
    assert!(is_ask(&p.check(&prepared)));
    // Confined, the same command runs in bypass.
    assert_eq!(
        verdict(&p, &f, "Bash", json!({"cmd": "ls"})),
        Verdict::Allow
    );

    // Where no sandbox can be had, everything asks until the person says "always".
    let mut ctx = f.ctx.clone();
    let settings = crate::tools::sandbox::SandboxSettings {
        enabled: false,
        ..Default::default()
    };
    ctx.sandbox = std::sync::Arc::new(crate::tools::sandbox::Sandbox::new(&ctx.root, settings));
    let prepared = prepare(&ctx, "Bash", &json!({"cmd": "ls"})).unwrap();
    let mut p = perms(PermissionMode::Bypass, &["Bash(ls*)"], &[]);
    assert!(is_ask(&p.check(&prepared)));
    p.allow_for_session(&prepared);
    assert_eq!(p.check(&prepared), Verdict::Allow);
}

/// Found by an attacker: after "always this session" for `python3`, plan mode ran a
/// `python3 -c` that wrote a file. Neither a configured rule nor a session's rule lifts plan
/// mode's limit; they only lift questions in the other modes.
#[test]
fn plan_mode_is_read_only_whatever_the_rules_say() {
    let f = fixture();
    let write_py = json!({"cmd": "python3 -c 'open(\"x\",\"w\").write(\"1\")'"});
    let mut p = perms(PermissionMode::Default, &["Bash(make*)"], &[]);
    let prepared = prepare(&f.ctx, "Bash", &write_py).unwrap();
    p.allow_for_session(&prepared);
    assert_eq!(
        verdict(&p, &f, "Bash", write_py.clone()),
        Verdict::Allow,
        "the session's rule lifts the question outside plan mode"
    );
    assert_eq!(
        verdict(&p, &f, "Bash", json!({"cmd": "make"})),
        Verdict::Allow
    );
    p.mode = PermissionMode::Plan;
    assert!(is_deny(&verdict(&p, &f, "Bash", write_py)));
    assert!(is_deny(&verdict(&p, &f, "Bash", json!({"cmd": "make"}))));
    assert_eq!(
        verdict(&p, &f, "Bash", json!({"cmd": "git status"})),
        Verdict::Allow
    );
}

/// A registered tool standing in for an MCP server's.
#[derive(Debug)]
struct Remote;

#[async_trait::async_trait]
impl crate::tools::ToolHandler for Remote {
    fn summarize(
        &self,
        name: &str,
        _args: &serde_json::Value,
    ) -> Result<String, crate::tools::ToolOutput> {
        Ok(name.to_string())
    }
    async fn run(&self, _name: &str, _args: &serde_json::Value) -> crate::tools::ToolOutput {
        crate::tools::ToolOutput::ok("ran", "ran")
    }
}

fn register(f: &Fixture, name: &str, hints: crate::tools::ToolHints) {
    f.ctx
        .registry
        .register(crate::tools::ToolEntry {
            spec: crate::llm::ToolSpec {
                name: name.into(),
                description: "remote".into(),
                parameters: json!({"type": "object"}),
            },
            class: AccessClass::Other,
            hints,
            origin: "MCP server everything".into(),
            handler: std::sync::Arc::new(Remote),
        })
        .unwrap();
}

#[test]
fn a_registered_tool_asks_unless_a_rule_names_it_and_hints_never_lift_a_question() {
    let f = fixture();
    let read_only = crate::tools::ToolHints {
        read_only: true,
        ..Default::default()
    };
    register(&f, "mcp__everything__echo", read_only);
    register(&f, "mcp__everything__add", Default::default());
    register(&f, "mcp__other__echo", Default::default());
    let echo = |p: &Permissions| verdict(p, &f, "mcp__everything__echo", json!({"message": "hi"}));
    let add = |p: &Permissions| verdict(p, &f, "mcp__everything__add", json!({}));
    let other = |p: &Permissions| verdict(p, &f, "mcp__other__echo", json!({}));

    let default = perms(PermissionMode::Default, &[], &[]);
    assert!(
        is_ask(&echo(&default)),
        "a read-only hint alone lifts nothing"
    );
    assert!(is_ask(&add(&default)));
    assert!(is_ask(&add(&perms(PermissionMode::AcceptEdits, &[], &[]))));
    assert_eq!(
        echo(&perms(PermissionMode::Bypass, &[], &[])),
        Verdict::Allow
    );

    let exact = perms(PermissionMode::Default, &["mcp__everything__echo"], &[]);
    assert_eq!(echo(&exact), Verdict::Allow);
    assert!(is_ask(&add(&exact)));
    for rule in ["mcp__everything__*", "mcp__everything"] {
        let server = perms(PermissionMode::Default, &[rule], &[]);
        assert_eq!(add(&server), Verdict::Allow, "{rule}");
        assert!(is_ask(&other(&server)), "{rule} covers only its server");
    }
    // `mcp__every` is not a prefix of the server `everything`.
    assert!(is_ask(&add(&perms(
        PermissionMode::Default,
        &["mcp__every"],
        &[]
    ))));

    let denied = perms(
        PermissionMode::Bypass,
        &["mcp__everything"],
        &["mcp__everything__add"],
    );
    assert!(is_deny(&add(&denied)));

    let plan = perms(PermissionMode::Plan, &["mcp__everything"], &[]);
    assert!(
        is_deny(&add(&plan)),
        "plan mode refuses what may change things"
    );
    assert!(
        is_ask(&echo(&plan)),
        "a read-only hint in plan mode: a person decides"
    );
}

/// The MCP resource tools only read: they run without asking, in plan mode too, unless a
/// rule (Claude Code's names) denies them.
#[test]
fn the_resource_tools_run_unless_denied_by_name() {
    let f = fixture();
    let read = crate::tools::ToolEntry {
        spec: crate::llm::ToolSpec {
            name: "ReadMcpResourceTool".into(),
            description: "read".into(),
            parameters: json!({"type": "object"}),
        },
        class: AccessClass::Read,
        hints: Default::default(),
        origin: "MCP servers".into(),
        handler: std::sync::Arc::new(Remote),
    };
    f.ctx.registry.register(read).unwrap();
    let args = json!({"server": "s", "uri": "demo://x"});
    let read = |p: &Permissions| verdict(p, &f, "ReadMcpResourceTool", args.clone());
    for mode in [PermissionMode::Default, PermissionMode::Plan] {
        assert_eq!(read(&perms(mode, &[], &[])), Verdict::Allow, "{mode:?}");
    }
    let denied = perms(PermissionMode::Bypass, &[], &["ReadMcpResourceTool"]);
    assert!(is_deny(&read(&denied)));
    assert!(is_deny(&read(&perms(
        PermissionMode::Default,
        &[],
        &["ReadMcpResourceTool(*)"]
    ))));
}

#[test]
fn mcp_rules_parse_as_claude_code_writes_them() {
    for ok in [
        "mcp__github",
        "mcp__github__create_issue",
        "mcp__github__*",
        "mcp__*",
    ] {
        assert!(Rule::parse(ok).is_ok(), "{ok}");
    }
    let err = Rule::parse("mcp__github__x(repo)").unwrap_err().to_string();
    assert!(err.contains("take no pattern"), "{err}");
    let err = Rule::parse("github__x").unwrap_err().to_string();
    assert!(err.contains("mcp__SERVER__TOOL"), "{err}");
}

#[test]
fn ask_rules_keep_a_question_a_mode_or_rule_would_lift_but_never_lift_a_denial() {
    let f = fixture();
    let ask = |mode, allow: &[&str], deny: &[&str]| {
        perms(mode, allow, deny)
            .with_ask(&["Write(secret.txt)".into(), "Bash(git push:*)".into()])
            .unwrap()
    };
    let write = |name: &str| json!({"path": name, "content": "x"});
    let edits = ask(PermissionMode::AcceptEdits, &["Write(secret.txt)"], &[]);
    assert!(is_ask(&verdict(&edits, &f, "Write", write("secret.txt"))));
    assert_eq!(
        verdict(&edits, &f, "Write", write("other.txt")),
        Verdict::Allow
    );
    let pushes = ask(PermissionMode::Default, &["Bash(git*)"], &[]);
    assert!(is_ask(&verdict(
        &pushes,
        &f,
        "Bash",
        json!({"command": "git status && git push origin main"})
    )));
    let denied = ask(PermissionMode::AcceptEdits, &[], &["Write(secret.txt)"]);
    assert!(is_deny(&verdict(&denied, &f, "Write", write("secret.txt"))));
    let bypass = ask(PermissionMode::Bypass, &[], &[]);
    assert_eq!(
        verdict(&bypass, &f, "Write", write("secret.txt")),
        Verdict::Allow
    );
}
