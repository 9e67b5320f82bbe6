//! Hooks in Claude Code's format, through the binary: a folder written for Claude Code (its
//! documentation's examples) works unchanged — the block reaches the model, the context
//! reaches the request, the format happens, the extra step happens once, the notification
//! fires — while an untrusted project's hooks never run and a hanging hook costs one line.

// Test code may unwrap: a failure there is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::pty::{Repl, last_tool_result};
use support::{
    Protocol, Reply, ScriptedServer, Step, Workspace, run, texts, wait_until, write_config_with,
};

fn workspace(script: Vec<Step>) -> (Workspace, ScriptedServer) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, script);
    let ws = Workspace::new();
    write_config_with(ws.home(), Protocol::OpenAi, &server.url(), "");
    (ws, server)
}

fn user_settings(ws: &Workspace, settings: serde_json::Value) {
    support::hook_log::user_settings(ws, &settings);
}

fn hook(event: &str, matcher: &str, command: &str) -> serde_json::Value {
    json!({"hooks": {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]}})
}

/// Claude Code's documented Bash validator: reads `tool_input.command`, exits 2 with the
/// reasons on stderr.
const VALIDATOR: &str = r#"import json, re, sys
data = json.load(sys.stdin)
command = data["tool_input"].get("command", "")
issues = []
if re.search(r"\bgrep\b(?!.*\|)", command):
    issues.append("Use 'rg' (ripgrep) instead of 'grep' for better performance")
if issues:
    for message in issues:
        print(f"* {message}", file=sys.stderr)
    sys.exit(2)
"#;

#[test]
fn a_pre_tool_use_validator_blocks_and_the_model_reads_why() {
    let (ws, server) = workspace(vec![
        // `cmd`, not `command`: the hook still reads Claude Code's name.
        Reply::tool("Bash", json!({"cmd": "grep -r needle . > found.txt"})).into(),
        Reply::tool("Bash", json!({"command": "echo fine > ok.txt"})).into(),
        Reply::text("Done.").into(),
    ]);
    ws.write("validator.py", VALIDATOR);
    let script = ws.root().join("validator.py");
    user_settings(
        &ws,
        hook(
            "PreToolUse",
            "Bash",
            &format!("python3 {}", script.display()),
        ),
    );
    let out = run(&ws, &["-p", "search", "--dangerously-skip-permissions"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        !ws.root().join("found.txt").exists(),
        "the blocked command ran"
    );
    assert_eq!(ws.read("ok.txt"), "fine\n", "an allowed command runs");
    let requests = server.chat_requests();
    let blocked = texts(&requests[1], "tool").join("\n");
    assert!(
        blocked.contains("blocked by a PreToolUse hook")
            && blocked.contains("Use 'rg' (ripgrep) instead of 'grep'"),
        "{blocked}"
    );
}

#[test]
fn a_user_prompt_submit_hook_adds_context_or_blocks_the_prompt() {
    let (ws, server) = workspace(vec![
        Reply::text("Noted.").into(),
        Reply::text("Planned.").into(),
    ]);
    user_settings(
        &ws,
        hook(
            "UserPromptSubmit",
            "",
            "echo \"Current sprint: 42 ($(pwd | wc -c) bytes of cwd)\"",
        ),
    );
    let out = run(&ws, &["-p", "what sprint is it?"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let users = texts(&server.last_chat_request().unwrap(), "user").join("\n");
    assert!(users.contains("what sprint is it?"), "{users}");
    assert!(users.contains("Current sprint: 42"), "{users}");
    // A custom command's message gets it too.
    ws.write(".claude/commands/plan.md", "Plan the sprint.\n");
    let out = run(&ws, &["-p", "/plan"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let users = texts(&server.last_chat_request().unwrap(), "user").join("\n");
    assert!(users.contains("Plan the sprint."), "{users}");
    assert!(users.contains("Current sprint: 42"), "{users}");

    let (ws, server) = workspace(vec![Reply::text("never").into()]);
    let blocker = r#"python3 -c 'import json,sys; p=json.load(sys.stdin)["prompt"]; sys.exit(2 if "password" in p else 0)' 2>/dev/null || { echo "prompts may not mention secrets" >&2; exit 2; }"#;
    user_settings(&ws, hook("UserPromptSubmit", "", blocker));
    let out = run(&ws, &["-p", "my password is hunter2"]);
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr
            .contains("prompt blocked by a UserPromptSubmit hook")
            && out.stderr.contains("prompts may not mention secrets"),
        "{}",
        out.stderr
    );
    assert!(
        server.chat_requests().is_empty(),
        "the model saw the prompt"
    );
}

#[test]
fn a_post_tool_use_formatter_runs_only_once_the_folder_is_trusted() {
    let formatter = r#"python3 -c 'import json,sys; p=json.load(sys.stdin)["tool_input"]["file_path"]; open(p,"a").write("formatted\n")'"#;
    let settings = hook("PostToolUse", "Edit|MultiEdit|Write", formatter);
    let write =
        || -> Step { Reply::tool("Write", json!({"path": "a.txt", "content": "x\n"})).into() };

    let (ws, _server) = workspace(vec![write(), Reply::text("Written.").into()]);
    ws.write(".claude/settings.json", &settings.to_string());
    let out = run(&ws, &["-p", "write", "--permission-mode", "acceptEdits"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(ws.read("a.txt"), "x\n", "an untrusted project's hook ran");
    assert!(out.stderr.contains("linggen trust"), "{}", out.stderr);

    let listed = run(&ws, &["trust", "--list"]);
    assert!(
        listed
            .stdout
            .contains("hook PostToolUse [Edit|MultiEdit|Write]: runs `python3 -c"),
        "{}",
        listed.stdout
    );
    assert_eq!(run(&ws, &["trust", "--yes"]).code, Some(0));
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![write(), Reply::text("Written.").into()],
    );
    write_config_with(ws.home(), Protocol::OpenAi, &server.url(), "");
    let out = run(&ws, &["-p", "write", "--permission-mode", "acceptEdits"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(ws.read("a.txt"), "x\nformatted\n");
}

/// Claude Code's documented pattern for a `Stop` hook that asks for one more step, and
/// reads `stop_hook_active` so that it asks only once.
const ONE_MORE_STEP: &str = r#"import json, sys
data = json.load(sys.stdin)
if not data.get("stop_hook_active"):
    print(json.dumps({"decision": "block", "reason": "Run the tests before you stop."}))
"#;

#[test]
fn a_stop_hook_asks_for_one_more_step_once() {
    let (ws, server) = workspace(vec![
        Reply::text("Done.").into(),
        Reply::text("Tests pass.").into(),
    ]);
    ws.write("stop.py", ONE_MORE_STEP);
    let command = format!("python3 {}", ws.root().join("stop.py").display());
    user_settings(&ws, hook("Stop", "", &command));
    let out = run(&ws, &["-p", "fix it", "--output-format", "json"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2, "one more step, and only one");
    let users = texts(&requests[1], "user").join("\n");
    assert!(users.contains("Run the tests before you stop."), "{users}");
    let result: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(result["result"], "Tests pass.");
}

#[test]
fn a_stop_hook_that_always_blocks_is_bounded() {
    let mut script: Vec<Step> = (0..6)
        .map(|i| Reply::text(format!("try {i}")).into())
        .collect();
    script.push(Reply::text("unused").into());
    let (ws, server) = workspace(script);
    user_settings(
        &ws,
        hook(
            "Stop",
            "",
            "echo '{\"decision\": \"block\", \"reason\": \"again\"}'",
        ),
    );
    let out = run(&ws, &["-p", "go"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        server.chat_requests().len(),
        4,
        "the first answer and three more"
    );
    assert!(
        out.stderr.contains("asked for more work 3 times"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_hanging_hook_times_out_with_one_line_and_the_call_goes_on() {
    let (ws, _server) = workspace(vec![
        Reply::tool("Bash", json!({"command": "echo ran > ran.txt"})).into(),
        Reply::text("Done.").into(),
    ]);
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "sleep 30; echo late", "timeout": 1}]}]}});
    user_settings(&ws, settings);
    let started = Instant::now();
    let out = run(&ws, &["-p", "run", "--dangerously-skip-permissions"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(ws.read("ran.txt"), "ran\n");
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("timed out"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].contains("PreToolUse hook `sleep 30; echo late`"),
        "{}",
        lines[0]
    );
}

#[test]
fn a_notification_hook_hears_that_an_approval_waits() {
    let (ws, server) = workspace(vec![
        Reply::tool("Write", json!({"path": "a.txt", "content": "A"})).into(),
        Reply::text("not written").into(),
    ]);
    let notifier = "cat > \"$CLAUDE_PROJECT_DIR/notified.json\"";
    user_settings(&ws, hook("Notification", "", notifier));
    let mut repl = Repl::start(&ws, &[]);
    repl.line("write a");
    repl.expect("Allow Write");
    let notified = ws.root().join("notified.json");
    wait_until("the notification hook", Duration::from_secs(10), || {
        std::fs::read_to_string(&notified).is_ok_and(|t| t.ends_with('}'))
    });
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&notified).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "Notification");
    assert_eq!(input["notification_type"], "permission_prompt");
    assert_eq!(
        input["message"],
        "linggen needs your permission to use Write"
    );
    assert_eq!(input["permission_mode"], "default");
    assert!(
        input["transcript_path"]
            .as_str()
            .unwrap()
            .ends_with(".jsonl")
    );
    let transcript = std::fs::read_to_string(input["transcript_path"].as_str().unwrap()).unwrap();
    assert!(
        transcript.contains("\"tool_use\"") && transcript.contains("write a"),
        "{transcript}"
    );
    repl.line("n");
    repl.expect("not written");
    assert!(last_tool_result(&server).contains("denied"));
}

/// A `PreToolUse` hook that answers with `permissionDecision` (and maybe `updatedInput`).
fn decide(decision: &str, extra: serde_json::Value) -> String {
    let mut output = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": decision,
        "permissionDecisionReason": format!("the hook says {decision}")}});
    if let Some(input) = extra.get("updatedInput") {
        output["hookSpecificOutput"]["updatedInput"] = input.clone();
    }
    format!("echo '{output}'")
}

#[test]
fn pre_tool_use_allow_skips_a_question_but_never_the_floor() {
    // `-p` cannot ask: the write runs only because the hook allowed it.
    let (ws, _server) = workspace(vec![
        Reply::tool("Write", json!({"path": "a.txt", "content": "A"})).into(),
        Reply::text("Done.").into(),
    ]);
    user_settings(
        &ws,
        hook("PreToolUse", "Write", &decide("allow", json!({}))),
    );
    let out = run(&ws, &["-p", "write"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(ws.read("a.txt"), "A");

    // Plan mode stays read-only, and a command that would leave the sandbox still needs a
    // person, whatever the hook says.
    let (ws, server) = workspace(vec![
        Reply::tool("Write", json!({"path": "a.txt", "content": "A"})).into(),
        Reply::tool(
            "Bash",
            json!({"command": "echo out > b.txt", "dangerouslyDisableSandbox": true}),
        )
        .into(),
        Reply::text("Done.").into(),
    ]);
    user_settings(&ws, hook("PreToolUse", "*", &decide("allow", json!({}))));
    let out = run(&ws, &["-p", "write", "--permission-mode", "plan"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!ws.root().join("a.txt").exists(), "plan mode wrote");
    assert!(
        !ws.root().join("b.txt").exists(),
        "a hook unconfined a command"
    );
    let results = texts(&server.last_chat_request().unwrap(), "tool").join("\n");
    assert!(
        results.contains("not run") || results.contains("denied"),
        "{results}"
    );
}

#[test]
fn pre_tool_use_deny_and_ask_refuse_and_updated_input_is_what_runs() {
    let (ws, server) = workspace(vec![
        Reply::tool("Bash", json!({"command": "echo a > a.txt"})).into(),
        Reply::text("Done.").into(),
    ]);
    user_settings(&ws, hook("PreToolUse", "Bash", &decide("deny", json!({}))));
    let out = run(&ws, &["-p", "run", "--dangerously-skip-permissions"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!ws.root().join("a.txt").exists());
    let result = texts(&server.last_chat_request().unwrap(), "tool").join("\n");
    assert!(result.contains("the hook says deny"), "{result}");

    // `ask` asks even in bypass mode; `-p` has nobody to ask, so it does not run.
    let (ws, _server) = workspace(vec![
        Reply::tool("Bash", json!({"command": "echo a > a.txt"})).into(),
        Reply::text("Done.").into(),
    ]);
    user_settings(&ws, hook("PreToolUse", "Bash", &decide("ask", json!({}))));
    let out = run(&ws, &["-p", "run", "--dangerously-skip-permissions"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        !ws.root().join("a.txt").exists(),
        "an ask ran without a person"
    );

    let (ws, _server) = workspace(vec![
        Reply::tool("Bash", json!({"command": "echo a > a.txt"})).into(),
        Reply::text("Done.").into(),
    ]);
    let rewrite = decide(
        "allow",
        json!({"updatedInput": {"command": "echo b > a.txt"}}),
    );
    user_settings(&ws, hook("PreToolUse", "Bash", &rewrite));
    let out = run(&ws, &["-p", "run"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(ws.read("a.txt"), "b\n", "the hook's input ran");
    assert!(
        out.stderr
            .contains("a PreToolUse hook changed the call to: Bash: echo b > a.txt"),
        "{}",
        out.stderr
    );
}

#[test]
fn permission_request_hooks_answer_for_the_person() {
    let request = |behavior: &str| {
        let output = json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
            "decision": {"behavior": behavior, "message": format!("policy says {behavior}")}}});
        format!("echo '{output}'")
    };
    let (ws, _server) = workspace(vec![
        Reply::tool("Write", json!({"path": "a.txt", "content": "A"})).into(),
        Reply::text("Done.").into(),
    ]);
    user_settings(&ws, hook("PermissionRequest", "Write", &request("allow")));
    let out = run(&ws, &["-p", "write"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(ws.read("a.txt"), "A");

    let (ws, server) = workspace(vec![
        Reply::tool("Write", json!({"path": "a.txt", "content": "A"})).into(),
        Reply::text("Done.").into(),
    ]);
    user_settings(&ws, hook("PermissionRequest", "Write", &request("deny")));
    let out = run(&ws, &["-p", "write"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!ws.root().join("a.txt").exists());
    let result = texts(&server.last_chat_request().unwrap(), "tool").join("\n");
    assert!(result.contains("policy says deny"), "{result}");
}

#[test]
fn session_hooks_add_context_and_everything_is_in_the_audit_trail() {
    let (ws, server) = workspace(vec![
        Reply::tool("Bash", json!({"command": "true"})).into(),
        Reply::text("Done.").into(),
    ]);
    let record = support::hook_log::RECORD;
    let mut settings = json!({"hooks": {}});
    for event in [
        "SessionStart",
        "SessionEnd",
        "PreToolUse",
        "PostToolUse",
        "Stop",
    ] {
        settings["hooks"][event] = json!([{"hooks": [{"type": "command", "command": record}]}]);
    }
    settings["hooks"]["SessionStart"]
        .as_array_mut()
        .unwrap()
        .push(
            json!({"matcher": "startup", "hooks": [{"command": "echo 'This project uses pnpm.'"}]}),
        );
    user_settings(&ws, settings);
    let out = run(&ws, &["-p", "go", "--dangerously-skip-permissions"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let system = &server.chat_requests()[0]["messages"][0]["content"];
    assert!(
        system.as_str().unwrap().contains("This project uses pnpm."),
        "{system}"
    );
    let events = support::hook_log::recorded(&ws);
    let names = support::hook_log::names(&events);
    assert_eq!(
        names,
        [
            "SessionStart",
            "PreToolUse",
            "PostToolUse",
            "Stop",
            "SessionEnd"
        ]
    );
    assert_eq!(events[0]["source"], "startup");
    assert_eq!(events[1]["tool_name"], "Bash");
    assert_eq!(events[1]["tool_input"]["command"], "true");
    assert_eq!(events[2]["tool_response"]["success"], true);
    assert_eq!(events[3]["stop_hook_active"], false);
    assert_eq!(events[4]["reason"], "prompt_input_exit");
    for event in &events {
        assert_eq!(
            event["cwd"],
            ws.root().canonicalize().unwrap().display().to_string()
        );
        assert_eq!(event["permission_mode"], "bypassPermissions");
    }

    let listed = run(&ws, &["runs"]);
    assert!(
        listed.stdout.contains("SessionStart hook"),
        "{}",
        listed.stdout
    );
    let run_id = listed
        .stdout
        .lines()
        .find_map(|l| {
            l.split_whitespace()
                .next()
                .filter(|w| w.len() >= 8 && !w.contains("session"))
        })
        .unwrap()
        .to_string();
    let shown = run(&ws, &["runs", "show", &run_id]);
    assert!(
        shown.stdout.contains("hook: PreToolUse hook `line=$(cat)"),
        "{}",
        shown.stdout
    );
    assert!(shown.stdout.contains("hook: Stop hook"), "{}", shown.stdout);

    // Resumed, the session starts with source `resume`.
    let server =
        ScriptedServer::start_background(Protocol::OpenAi, vec![Step::from(Reply::text("Again."))]);
    write_config_with(ws.home(), Protocol::OpenAi, &server.url(), "");
    let out = run(&ws, &["-p", "more", "--continue"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(ws.read("events.jsonl").contains("\"source\":\"resume\""));
}

#[test]
fn slash_hooks_lists_each_hook_with_its_source_and_state() {
    let (ws, _server) = workspace(vec![Reply::text("unused").into()]);
    user_settings(&ws, hook("Stop", "", "say done"));
    ws.write(
        ".claude/settings.json",
        &hook("PreToolUse", "Edit|Write", "./fmt.sh").to_string(),
    );
    let mut repl = Repl::start_with_prompt(&ws, &[], &[], "Trust them? [y/N] ");
    assert!(
        repl.before_prompt
            .contains("hook PreToolUse [Edit|Write]: runs `./fmt.sh`")
    );
    repl.line("n");
    repl.expect("ling › ");
    repl.line("/hooks");
    let shown = repl.expect("yours, runs in the sandbox");
    assert!(
        shown.contains("[Edit|Write] ./fmt.sh  (.claude/settings.json, 60s) — waits for trust"),
        "{shown}"
    );
    assert!(
        shown.contains("say done  (~/.claude/settings.json, 60s) — yours, runs in the sandbox"),
        "{shown}"
    );
}

#[test]
fn clear_ends_the_session_and_starts_the_next_with_source_clear() {
    let (ws, _server) = workspace(vec![Reply::text("unused").into()]);
    let record = support::hook_log::RECORD;
    let mut settings = json!({"hooks": {}});
    for event in ["SessionStart", "SessionEnd"] {
        settings["hooks"][event] = json!([{"hooks": [{"type": "command", "command": record}]}]);
    }
    user_settings(&ws, settings);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("/clear");
    repl.expect("new session");
    wait_until("the hooks of /clear", Duration::from_secs(10), || {
        support::hook_log::complete(&ws) >= 3
    });
    let seen: Vec<(String, String)> = support::hook_log::recorded(&ws)
        .iter()
        .map(|v| {
            let what = v
                .get("source")
                .or(v.get("reason"))
                .unwrap()
                .as_str()
                .unwrap();
            (
                v["hook_event_name"].as_str().unwrap().to_string(),
                what.to_string(),
            )
        })
        .collect();
    assert!(
        seen.contains(&("SessionStart".into(), "startup".into())),
        "{seen:?}"
    );
    assert!(
        seen.contains(&("SessionStart".into(), "clear".into())),
        "{seen:?}"
    );
    assert!(
        seen.contains(&("SessionEnd".into(), "clear".into())),
        "{seen:?}"
    );
}

#[test]
fn the_idle_notification_comes_once_after_the_configured_wait() {
    let server = ScriptedServer::start_background(Protocol::OpenAi, vec![Reply::text("Answered.")]);
    let ws = Workspace::new();
    write_config_with(
        ws.home(),
        Protocol::OpenAi,
        &server.url(),
        "\n[hooks]\nidle_notification_secs = 1\n",
    );
    user_settings(
        &ws,
        hook("Notification", "idle_prompt", support::hook_log::RECORD),
    );
    let mut repl = Repl::start(&ws, &[]);
    repl.line("hello");
    repl.expect("Answered.");
    wait_until("the idle notification", Duration::from_secs(10), || {
        !support::hook_log::recorded(&ws).is_empty()
    });
    std::thread::sleep(Duration::from_millis(1_500));
    let events = support::hook_log::recorded(&ws);
    assert_eq!(events.len(), 1, "once per wait: {events:?}");
    assert_eq!(events[0]["notification_type"], "idle_prompt");
    assert_eq!(events[0]["message"], "linggen is waiting for your input");
}

#[test]
fn a_blocking_exit_where_nothing_can_be_blocked_is_shown_to_the_person() {
    let (ws, _server) = workspace(vec![Reply::text("Hi.").into()]);
    user_settings(
        &ws,
        hook("SessionStart", "", "echo 'the VPN is down' >&2; exit 2"),
    );
    let out = run(&ws, &["-p", "hi"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("SessionStart hook: the VPN is down"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stdout.trim(), "Hi.");
}

#[test]
fn a_delegated_agent_is_task_to_hooks_and_its_end_is_subagent_stop() {
    let (ws, _server) = workspace(vec![
        Reply::tool(
            "delegate_to_agent",
            json!({"target_agent_id": "coder", "task": "fix the test"}),
        )
        .into(),
        Reply::text("child done").into(),
        Reply::text("all done").into(),
    ]);
    let record = support::hook_log::RECORD;
    let entry = |matcher: &str| json!([{"matcher": matcher, "hooks": [{"command": record}]}]);
    let settings = json!({"hooks": {
        "PreToolUse": entry("Task"), "SubagentStop": entry(""), "Stop": entry(""),
    }});
    user_settings(&ws, settings);
    let out = run(&ws, &["-p", "delegate it"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let events = support::hook_log::recorded(&ws);
    assert_eq!(
        support::hook_log::names(&events),
        ["PreToolUse", "SubagentStop", "Stop"]
    );
    assert_eq!(events[0]["tool_name"], "Task");
    assert_eq!(events[0]["tool_input"]["subagent_type"], "coder");
    assert_eq!(events[0]["tool_input"]["prompt"], "fix the test");
    assert_eq!(events[1]["agent_type"], "coder");
    assert_eq!(events[1]["stop_hook_active"], false);
}

#[test]
fn the_model_cannot_write_a_hook_without_the_person() {
    let settings = r#"{"hooks": {"Stop": [{"hooks": [{"command": "touch pwned"}]}]}}"#;
    for path in [
        ".claude/settings.json",
        ".claude/settings.local.json",
        ".linggen/settings.json",
    ] {
        let (ws, server) = workspace(vec![
            Reply::tool("Write", json!({"path": path, "content": settings})).into(),
            Reply::text("Done.").into(),
        ]);
        let out = run(&ws, &["-p", "add a hook", "--dangerously-skip-permissions"]);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        assert!(
            !ws.root().join(path).exists(),
            "{path} was written without a person"
        );
        let result = texts(&server.last_chat_request().unwrap(), "tool").join("\n");
        assert!(result.contains("hooks"), "{result}");
    }
}
