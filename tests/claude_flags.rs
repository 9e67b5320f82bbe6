//! Claude Code's flags on `linggen` and `linggen -p`, as scripts written for `claude -p`
//! pass them: each is accepted and does what Claude Code's does, through the binary.

// Test code may unwrap: a failure there is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::{Protocol, Reply, ScriptedServer, Step, Workspace, run, write_config_with};

fn workspace(script: Vec<Step>, extra: &str) -> (Workspace, ScriptedServer) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, script);
    let ws = Workspace::new();
    write_config_with(ws.home(), Protocol::OpenAi, &server.url(), extra);
    (ws, server)
}

fn write_call() -> Step {
    Reply::tool("Write", json!({"path": "out.txt", "content": "x\n"})).into()
}

fn system_prompt(server: &ScriptedServer) -> String {
    let request = server.last_chat_request().unwrap();
    request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn dangerously_skip_permissions_runs_what_would_ask() {
    let (ws, _server) = workspace(vec![write_call(), Reply::text("Written.").into()], "");
    let out = run(&ws, &["-p", "write it", "--dangerously-skip-permissions"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(ws.read("out.txt"), "x\n");

    // Without it, -p denies the write, as Claude Code's does.
    let (ws, _server) = workspace(vec![write_call(), Reply::text("Denied.").into()], "");
    let out = run(&ws, &["-p", "write it"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!ws.root().join("out.txt").exists());

    let out = run(
        &ws,
        &[
            "-p",
            "x",
            "--dangerously-skip-permissions",
            "--permission-mode",
            "plan",
        ],
    );
    assert_eq!(out.code, Some(2), "{}", out.stderr);
}

#[test]
fn camel_case_tool_lists_allow_and_refuse() {
    let (ws, _server) = workspace(vec![write_call(), Reply::text("Written.").into()], "");
    let out = run(&ws, &["-p", "write it", "--allowedTools", "Write,Read"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(ws.read("out.txt"), "x\n");

    let (ws, server) = workspace(
        vec![
            Reply::tool("Bash", json!({"command": "echo hi"})).into(),
            Reply::text("Refused.").into(),
        ],
        "",
    );
    let out = run(
        &ws,
        &[
            "-p",
            "run it",
            "--permission-mode",
            "bypassPermissions",
            "--disallowedTools",
            "Bash",
        ],
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let result = support::texts(&server.last_chat_request().unwrap(), "tool").join("\n");
    assert!(!result.contains("hi\n"), "{result}");
}

#[test]
fn max_turns_stops_after_that_many_model_calls_as_claude_reports_it() {
    let (ws, server) = workspace(
        vec![
            Reply::tool("Read", json!({"path": "a.txt"})).into(),
            Reply::text("never asked").into(),
        ],
        "",
    );
    ws.write("a.txt", "a\n");
    let out = run(
        &ws,
        &[
            "-p",
            "read it",
            "--max-turns",
            "1",
            "--output-format",
            "json",
        ],
    );
    assert_eq!(out.code, Some(3), "{}", out.stderr);
    let result: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(result["subtype"], "error_max_turns", "{result}");
    assert_eq!(server.chat_requests().len(), 1);
}

#[test]
fn the_system_prompt_flags_replace_the_agents_instructions_or_add_to_them() {
    let (ws, server) = workspace(vec![Reply::text("Bonjour.").into()], "");
    let out = run(
        &ws,
        &[
            "-p",
            "hi",
            "--append-system-prompt",
            "Always answer in French.",
        ],
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let plain = system_prompt(&server);
    assert!(
        plain.trim_end().ends_with("Always answer in French."),
        "{plain}"
    );

    let (ws, server) = workspace(vec![Reply::text("Arr.").into()], "");
    ws.write("AGENTS.md", "Run the tests with make check.\n");
    let out = run(&ws, &["-p", "hi", "--system-prompt", "You are a pirate."]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let replaced = system_prompt(&server);
    assert!(replaced.starts_with("You are a pirate."), "{replaced}");
    // The agent's own instructions are gone; the workspace and the project's file stay.
    let agent_opening = plain.split("\n\n").next().unwrap();
    assert!(!replaced.contains(agent_opening), "{replaced}");
    assert!(replaced.contains("Workspace:"), "{replaced}");
    assert!(replaced.contains("make check"), "{replaced}");
}

#[test]
fn verbose_is_accepted_and_quiet_conflicts_with_it() {
    let (ws, _server) = workspace(vec![Reply::text("Hi.").into()], "");
    let out = run(&ws, &["-p", "hi", "--verbose"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("Hi."));
    let out = run(&ws, &["-p", "hi", "--verbose", "--quiet"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
}

#[test]
fn model_takes_claude_codes_aliases_and_model_names() {
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Reply::text("one")),
            Reply::text("two").into(),
            Reply::text("three").into(),
        ],
    );
    let ws = Workspace::new();
    let second = format!(
        "[[models]]\nid = \"claude\"\nprovider = \"openai\"\nmodel = \"claude-sonnet-4-5\"\n\
         url = \"{}\"\ncontext_window = 8192\n",
        server.url()
    );
    write_config_with(ws.home(), Protocol::OpenAi, &server.url(), &second);
    let asked = |args: &[&str]| {
        let out = run(&ws, args);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        server.last_chat_request().unwrap()["model"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(
        asked(&["-p", "hi", "--model", "sonnet"]),
        "claude-sonnet-4-5"
    );
    assert_eq!(
        asked(&["-p", "hi", "--model", "claude-sonnet-4-5"]),
        "claude-sonnet-4-5"
    );
    assert_eq!(asked(&["-p", "hi", "--model", "test"]), "scripted");
    let out = run(&ws, &["-p", "hi", "--model", "opus"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("model `opus` is not configured"),
        "{}",
        out.stderr
    );
}

#[test]
fn tools_narrows_what_is_offered_and_what_runs() {
    let (ws, server) = workspace(
        vec![
            Reply::tool("Bash", json!({"command": "echo ran"})).into(),
            Reply::text("Could not.").into(),
        ],
        "",
    );
    let out = run(
        &ws,
        &[
            "-p",
            "run it",
            "--tools",
            "Read,Grep",
            "--dangerously-skip-permissions",
        ],
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let requests = server.chat_requests();
    let offered: Vec<String> = requests[0]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect();
    assert_eq!(offered, vec!["Read".to_string(), "Grep".to_string()]);
    let result = support::texts(&requests[1], "tool").join("\n");
    assert!(
        !result.contains("ran"),
        "a tool left out must not run: {result}"
    );

    let out = run(
        &ws,
        &[
            "-p",
            "hi",
            "--tools",
            "Read,Grep",
            "--output-format",
            "stream-json",
        ],
    );
    let started: Value = serde_json::from_str(out.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(
        started["tools"],
        json!(["Read", "Grep"]),
        "SessionStarted lists what is offered"
    );

    let (ws, server) = workspace(vec![Reply::text("No tools.").into()], "");
    let out = run(&ws, &["-p", "hi", "--tools", ""]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let request = server.last_chat_request().unwrap();
    assert!(
        request["tools"].as_array().is_none_or(|t| t.is_empty()),
        "{}",
        request["tools"]
    );

    let out = run(&ws, &["-p", "hi", "--tools", "Bash,WebSearch"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("no tool `WebSearch`"), "{}", out.stderr);
}

/// `--input-format stream-json`: turns arrive on stdin as Claude Code's SDK writes them;
/// each is answered in the same session as it comes (the client waits for a result before
/// it sends the next), with a `result` line per turn; a bad line is one error, the rest run.
#[test]
fn stream_json_input_feeds_turns_one_at_a_time_into_one_session() {
    use std::io::{BufRead as _, BufReader, Write as _};
    let (ws, server) = workspace(
        vec![
            Reply::text("first answer").into(),
            Reply::text("second answer").into(),
        ],
        "",
    );
    let mut child = ws
        .cmd()
        .args([
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (lines_tx, lines) = std::sync::mpsc::channel();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let result_line = || loop {
        let line = lines
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("a result line");
        let value: Value = serde_json::from_str(&line).unwrap();
        if value["type"] == "result" {
            return value;
        }
    };
    writeln!(
        stdin,
        r#"{{"type":"user","message":{{"role":"user","content":"one"}}}}"#
    )
    .unwrap();
    assert_eq!(result_line()["result"], "first answer");
    writeln!(stdin, "not json").unwrap();
    writeln!(
        stdin,
        r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"text","text":"two"}}]}}}}"#
    )
    .unwrap();
    assert_eq!(result_line()["result"], "second answer");
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("stdin line 2: not JSON"), "{stderr}");
    assert_eq!(
        out.status.code(),
        Some(1),
        "a bad line fails the run: {stderr}"
    );
    // The second turn saw the first: one session.
    let second = server.last_chat_request().unwrap();
    let users = support::texts(&second, "user").join("\n");
    assert!(users.contains("one") && users.contains("two"), "{users}");

    let out = run(&ws, &["-p", "--input-format", "stream-json"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("needs --output-format stream-json"),
        "{}",
        out.stderr
    );
}

/// The person's `~/.claude/settings.json` permissions apply as linggen rules: `allow` lifts
/// a question, `ask` keeps one that a mode would lift (and -p, which cannot ask, denies
/// it), `defaultMode` sets the mode; a broken file is one warning naming its line.
#[test]
fn claude_codes_user_settings_permissions_apply() {
    let settings = json!({
        "permissions": {
            "allow": ["Write(out.txt)", "WebFetch(domain:github.com)"],
            "ask": ["Write(secret.txt)"],
            "deny": ["Read(./.env)"],
            "defaultMode": "acceptEdits"
        }
    });
    let (ws, server) = workspace(
        vec![
            Reply::tool("Write", json!({"path": "out.txt", "content": "x\n"})).into(),
            Reply::tool("Write", json!({"path": "secret.txt", "content": "s\n"})).into(),
            Reply::tool("Write", json!({"path": "other.txt", "content": "o\n"})).into(),
            Reply::text("Done.").into(),
        ],
        "",
    );
    std::fs::create_dir_all(ws.home().join(".claude")).unwrap();
    std::fs::write(
        ws.home().join(".claude/settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let out = run(&ws, &["-p", "write them"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(ws.read("out.txt"), "x\n");
    // acceptEdits (from defaultMode) writes other.txt; the ask rule keeps secret.txt asking.
    assert_eq!(ws.read("other.txt"), "o\n");
    assert!(!ws.root().join("secret.txt").exists(), "{}", out.stderr);
    let results = support::texts(&server.last_chat_request().unwrap(), "tool").join("\n");
    assert!(results.contains("Write(secret.txt)"), "{results}");
    // Rules for what linggen cannot express are one warning each, never a failed start.
    assert!(
        out.stderr
            .contains("`permissions.allow` rule `WebFetch(domain:github.com)` is not applied"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("rule `Read(./.env)` is not applied"),
        "{}",
        out.stderr
    );

    std::fs::write(
        ws.home().join(".claude/settings.json"),
        "{\n\"permissions\": [\n",
    )
    .unwrap();
    let (ws2, _server) = workspace(vec![Reply::text("Hi.").into()], "");
    std::fs::create_dir_all(ws2.home().join(".claude")).unwrap();
    std::fs::copy(
        ws.home().join(".claude/settings.json"),
        ws2.home().join(".claude/settings.json"),
    )
    .unwrap();
    let out = run(&ws2, &["-p", "hi"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains(".claude/settings.json:3: not JSON"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_projects_claude_settings_restrict_at_once_and_grant_once_trusted() {
    let script = || {
        vec![
            Step::from(Reply::tool("Bash", json!({"command": "rm -f keep.txt"}))),
            write_call(),
            Reply::text("Done.").into(),
        ]
    };
    let (ws, _server) = workspace(script(), "");
    ws.write("keep.txt", "kept");
    ws.write(
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Write"], "deny": ["Bash(rm:*)"]}}"#,
    );
    ws.write(
        ".claude/settings.local.json",
        r#"{"permissions": {"defaultMode": "bypassPermissions"}}"#,
    );
    let out = run(&ws, &["-p", "go"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(ws.read("keep.txt"), "kept", "the deny rule held at once");
    assert!(
        !ws.root().join("out.txt").exists(),
        "an untrusted allow rule applied"
    );

    let listed = run(&ws, &["trust", "--list"]);
    assert!(
        listed
            .stdout
            .contains("allow Write (.claude/settings.json)"),
        "{}",
        listed.stdout
    );
    assert!(
        listed
            .stdout
            .contains("permission mode bypass (.claude/settings.local.json)"),
        "{}",
        listed.stdout
    );
    assert_eq!(run(&ws, &["trust", "--yes"]).code, Some(0));
    let server = ScriptedServer::start_background(Protocol::OpenAi, script());
    write_config_with(ws.home(), Protocol::OpenAi, &server.url(), "");
    let out = run(&ws, &["-p", "go", "--output-format", "stream-json"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(ws.read("out.txt"), "x\n", "the trusted allow rule applied");
    assert_eq!(ws.read("keep.txt"), "kept", "a deny rule beats bypass");
    assert!(
        out.stdout.contains("\"permission_mode\":\"bypass\""),
        "{}",
        out.stdout
    );
}

/// `-p go` with `--add-dir DIR`, nothing asking.
fn run_with_added_dir(ws: &Workspace, dir: &str) -> support::Run {
    let args = [
        "-p",
        "go",
        "--dangerously-skip-permissions",
        "--add-dir",
        dir,
    ];
    run(ws, &args)
}

#[test]
fn add_dir_opens_another_folder_to_the_file_tools_and_the_sandbox() {
    let other = tempfile::tempdir().unwrap();
    let other_path = other.path().canonicalize().unwrap();
    std::fs::write(other_path.join("shared.txt"), "from the other folder\n").unwrap();
    let note = other_path.join("note.txt").display().to_string();
    let script = || {
        vec![
            Step::from(Reply::tool(
                "Read",
                json!({"path": other_path.join("shared.txt").display().to_string()}),
            )),
            Reply::tool("Write", json!({"path": note, "content": "written\n"})).into(),
            Reply::tool(
                "Bash",
                json!({"command": format!("echo ran > {}", other_path.join("cmd.txt").display())}),
            )
            .into(),
            Reply::text("Done.").into(),
        ]
    };
    let dir = other_path.display().to_string();
    let (ws, server) = workspace(script(), "");
    let out = run_with_added_dir(&ws, &dir);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let results = support::texts(&server.last_chat_request().unwrap(), "tool").join("\n");
    assert!(results.contains("from the other folder"), "{results}");
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "written\n");
    let cmd_result = std::fs::read_to_string(other_path.join("cmd.txt"))
        .unwrap_or_else(|e| panic!("{e}: {results}"));
    assert_eq!(cmd_result, "ran\n");
    assert!(system_prompt(&server).contains(&format!(
        "Additional working folders (read and write them by absolute path): {dir}"
    )));

    // Without the flag the folder is outside the workspace, for the tools and the sandbox.
    std::fs::remove_file(&note).unwrap();
    std::fs::remove_file(other_path.join("cmd.txt")).unwrap();
    let (ws, server) = workspace(script(), "");
    let out = run(&ws, &["-p", "go", "--dangerously-skip-permissions"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!other_path.join("note.txt").exists());
    assert!(
        !other_path.join("cmd.txt").exists(),
        "the sandbox let a command out"
    );
    let results = support::texts(&server.last_chat_request().unwrap(), "tool").join("\n");
    assert!(!results.contains("from the other folder"), "{results}");

    let out = run(&ws, &["-p", "go", "--add-dir", "/no/such/folder"]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("no folder `/no/such/folder`"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_added_folders_git_stays_read_only_to_commands() {
    let other = tempfile::tempdir().unwrap();
    let other_path = other.path().canonicalize().unwrap();
    std::fs::create_dir(other_path.join(".git")).unwrap();
    std::fs::write(other_path.join(".git/config"), "[core]\n").unwrap();
    // A script the analysis cannot look into: only the kernel can stop it.
    let command = "./evil.sh; echo tried".to_string();
    let (ws, server) = workspace(
        vec![
            Step::from(Reply::tool("Bash", json!({"command": command}))),
            Reply::text("Done.").into(),
        ],
        "",
    );
    let script = ws.write(
        "evil.sh",
        &format!(
            "#!/bin/sh\necho '[core] fsmonitor = evil' >> {}/.git/config\necho wrote > {}/ok.txt\n",
            other_path.display(),
            other_path.display()
        ),
    );
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = other_path.display().to_string();
    let out = run_with_added_dir(&ws, &dir);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(other_path.join("ok.txt")).unwrap(),
        "wrote\n"
    );
    let result = support::texts(&server.last_chat_request().unwrap(), "tool").join("\n");
    assert!(
        result.contains("tried"),
        "the command did not run: {result}"
    );
    assert_eq!(
        std::fs::read_to_string(other_path.join(".git/config")).unwrap(),
        "[core]\n"
    );
}

#[test]
fn stream_json_can_print_claude_codes_message_shapes() {
    let (ws, _server) = workspace(
        vec![
            Step::from(Reply::tool(
                "Write",
                json!({"path": "a.txt", "content": "A"}),
            )),
            Reply::text("Written.").into(),
        ],
        "",
    );
    let out = run(
        &ws,
        &[
            "-p",
            "write",
            "--output-format",
            "stream-json",
            "--stream-shape",
            "claude",
            "--permission-mode",
            "acceptEdits",
        ],
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["system", "assistant", "user", "assistant", "result"],
        "{}",
        out.stdout
    );
    assert_eq!(lines[0]["subtype"], "init");
    assert_eq!(lines[0]["permissionMode"], "acceptEdits");
    let session = lines[0]["session_id"].clone();
    let tool_use = &lines[1]["message"]["content"][0];
    assert_eq!(tool_use["type"], "tool_use");
    assert_eq!(tool_use["name"], "Write");
    let path = ws.root().canonicalize().unwrap().join("a.txt");
    assert_eq!(tool_use["input"]["file_path"], path.display().to_string());
    let result = &lines[2]["message"]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], tool_use["id"]);
    assert_eq!(lines[3]["message"]["content"][0]["text"], "Written.");
    assert_eq!(lines[3]["session_id"], session);
    assert_eq!(lines[4]["subtype"], "success");
    assert_eq!(lines[4]["result"], "Written.");

    let out = run(&ws, &["-p", "x", "--stream-shape", "claude"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
}

#[test]
fn an_ask_rule_offers_only_once_and_asks_again() {
    let (ws, _server) = workspace(
        vec![
            Step::from(Reply::tool(
                "Write",
                json!({"path": "a.txt", "content": "A"}),
            )),
            Reply::tool("Write", json!({"path": "a.txt", "content": "AA"})).into(),
            Reply::text("Written twice.").into(),
        ],
        "",
    );
    let dir = ws.home().join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("settings.json"),
        r#"{"permissions": {"ask": ["Write"], "defaultMode": "acceptEdits"}}"#,
    )
    .unwrap();
    let mut repl = support::pty::Repl::start_with_prompt(&ws, &[], &[], "› ");
    repl.line("write twice");
    let card = repl.expect("asked again next time");
    assert!(card.contains("asks every time"), "{card}");
    repl.line("a");
    // "always" counted once: the rule asks again.
    repl.expect("asked again next time");
    repl.line("y");
    repl.expect("Written twice.");
    assert_eq!(ws.read("a.txt"), "AA");
    repl.line("/permissions");
    let listed = repl.expect("switches mode");
    assert!(listed.contains("ask   Write  ("), "{listed}");
    assert!(listed.contains(".claude/settings.json)"), "{listed}");
}
