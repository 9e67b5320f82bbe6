//! Auto mode through the real binary and the scripted model server: the JSON action loop
//! (tool, patch, finalize_task), checks after each patch, the patch checks, the agent's
//! Finalize gate, malformed answers, and the limits that stop a run going nowhere.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::{Protocol, Reply, ScriptedServer, Step, Workspace, run, texts, write_config_with};

fn setup(steps: Vec<Step>, extra_config: &str) -> (ScriptedServer, Workspace) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, steps);
    let ws = Workspace::new();
    write_config_with(ws.home(), Protocol::OpenAi, &server.url(), extra_config);
    (server, ws)
}

/// One auto-mode answer: the action as JSON text, fenced the way small models write it.
fn action(value: Value) -> Step {
    Reply::text(format!("```json\n{value}\n```")).into()
}

/// The observation the model was sent last in `request` (the newest user message).
fn last_observation(request: &Value) -> String {
    texts(request, "user").last().cloned().unwrap_or_default()
}

const FIXER: &str = "---\nname: fixer\ndescription: fixes value.txt\nmode: auto\n\
checks: [\"diff expected.txt value.txt\"]\n---\nYou fix value.txt.\n";

/// Reads, patches, runs the agent's check (which fails), patches again (the check passes)
/// and finalizes: the summary is what `-p` prints, and each observation reached the model.
#[test]
fn an_auto_run_reads_patches_checks_fails_patches_again_and_finalizes() {
    let (server, ws) = setup(
        vec![
            action(json!({"type": "tool", "tool": "Read", "args": {"path": "value.txt"}})),
            action(json!({"type": "patch",
                "diff": "--- a/value.txt\n+++ b/value.txt\n@@ -1 +1 @@\n-41\n+40\n"})),
            action(json!({"type": "patch",
                "diff": "--- a/value.txt\n+++ b/value.txt\n@@ -1 +1 @@\n-40\n+42\n"})),
            action(json!({"type": "finalize_task", "summary": "value.txt now holds 42"})),
        ],
        "",
    );
    ws.write("value.txt", "41\n");
    ws.write("expected.txt", "42\n");
    ws.write("agents/fixer.md", FIXER);
    let r = run(
        &ws,
        &[
            "-p",
            "make value.txt hold 42",
            "--agent",
            "fixer",
            "--permission-mode",
            "accept-edits",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, "value.txt now holds 42\n");
    assert_eq!(ws.read("value.txt"), "42\n");
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 4);
    // No native tools: the protocol in the system prompt lists them, and the answer is
    // constrained to an action's schema, one shape per tool with its own parameters.
    assert!(requests[0].get("tools").is_none(), "{}", requests[0]);
    let format = &requests[0]["response_format"];
    assert_eq!(format["type"], "json_schema", "{format}");
    let shapes = format["json_schema"]["schema"]["anyOf"].as_array().unwrap();
    let read = shapes
        .iter()
        .find(|s| s["properties"]["tool"]["const"] == "Read")
        .unwrap_or_else(|| panic!("{format}"));
    assert_eq!(read["properties"]["args"]["required"], json!(["path"]));
    let kinds: Vec<&Value> = shapes
        .iter()
        .map(|s| &s["properties"]["type"]["const"])
        .collect();
    assert!(kinds.contains(&&json!("patch")) && kinds.contains(&&json!("finalize_task")));
    let system = texts(&requests[0], "system").join("\n");
    assert!(system.contains("# Auto mode"), "{system}");
    assert!(system.contains("- Read(path"), "{system}");
    assert!(system.contains("diff expected.txt value.txt"), "{system}");
    assert!(last_observation(&requests[1]).contains("[Read result]"));
    assert!(last_observation(&requests[1]).contains("41"));
    let failed = last_observation(&requests[2]);
    assert!(failed.contains("[apply_patch result]"), "{failed}");
    assert!(
        failed.contains("[check failed: diff expected.txt value.txt]"),
        "{failed}"
    );
    assert!(failed.contains("> 40"), "{failed}");
    let passed = last_observation(&requests[3]);
    assert!(passed.contains("[apply_patch result]"), "{passed}");
    assert!(!passed.contains("check failed"), "{passed}");
}

/// Paths that leave the root or reach into `.git` are refused before anything is written,
/// and a hunk that does not apply is reported by number with the line it looked for.
#[test]
fn bad_patches_are_refused_precisely() {
    let (server, ws) = setup(
        vec![
            action(json!({"type": "patch",
                "diff": "--- /dev/null\n+++ b/../escaped.txt\n@@ -0,0 +1 @@\n+out\n"})),
            action(json!({"type": "patch",
                "diff": "--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-x\n+[core]\n"})),
            action(json!({"type": "patch",
                "diff": "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n alpha\n-gamma\n+delta\n"})),
            action(json!({"type": "finalize_task", "summary": "gave up"})),
        ],
        "",
    );
    ws.write("notes.txt", "alpha\nbeta\n");
    std::fs::create_dir_all(ws.root().join(".git")).unwrap();
    ws.write(".git/config", "x\n");
    let r = run(
        &ws,
        &[
            "-p",
            "edit things",
            "--mode",
            "auto",
            "--permission-mode",
            "bypass",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let requests = server.chat_requests();
    let escaped = last_observation(&requests[1]);
    assert!(escaped.contains("[apply_patch failed]"), "{escaped}");
    assert!(escaped.contains(".."), "{escaped}");
    assert!(!ws.root().parent().unwrap().join("escaped.txt").exists());
    let git = last_observation(&requests[2]);
    assert!(git.contains("[apply_patch failed]"), "{git}");
    assert!(git.contains(".git"), "{git}");
    assert_eq!(ws.read(".git/config"), "x\n");
    let hunk = last_observation(&requests[3]);
    assert!(hunk.contains("hunk 1 of 1"), "{hunk}");
    assert!(hunk.contains("gamma"), "{hunk}");
    assert_eq!(ws.read("notes.txt"), "alpha\nbeta\n");
}

/// An agent whose policy lacks Finalize is told so and cannot end the task itself: the run
/// ends at `max_iters` (exit 3), not with the model's summary.
#[test]
fn an_agent_without_finalize_cannot_finish() {
    let (server, ws) = setup(
        vec![Step::repeat(Reply::text(
            r#"{"type":"finalize_task","summary":"all done"}"#,
        ))],
        "",
    );
    ws.write(
        "agents/worker.md",
        "---\nname: worker\nmode: auto\npolicy: [Patch]\n---\nYou work.\n",
    );
    let r = run(
        &ws,
        &["-p", "do it", "--agent", "worker", "--max-iters", "3"],
    );
    assert_eq!(r.code, Some(3), "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("all done"), "{}", r.stdout);
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 3);
    let system = texts(&requests[0], "system").join("\n");
    assert!(system.contains("You may not finalize"), "{system}");
    // Nor can a constrained model: the schema has no finalize shape.
    let schema = requests[0]["response_format"]["json_schema"]["schema"].to_string();
    assert!(!schema.contains("finalize_task"), "{schema}");
    let refused = last_observation(&requests[1]);
    assert!(
        refused.contains("may not finalize the task (its policy has no Finalize)"),
        "{refused}"
    );
}

/// A malformed answer gets one retry with the reason; a second in a row ends the run.
#[test]
fn a_malformed_action_gets_one_retry() {
    let (server, ws) = setup(
        vec![
            Reply::text("I will now read the file.").into(),
            action(json!({"type": "finalize_task", "summary": "fine"})),
        ],
        "",
    );
    let r = run(&ws, &["-p", "task", "--mode", "auto"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, "fine\n");
    let retry = last_observation(&server.chat_requests()[1]);
    assert!(retry.contains("not an action: no JSON object"), "{retry}");

    let (_server, ws) = setup(
        vec![Step::repeat(Reply::text("Sure! Let me think about it."))],
        "",
    );
    let r = run(&ws, &["-p", "task", "--mode", "auto"]);
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("twice in a row with something that is not an action"),
        "{}",
        r.stderr
    );
}

/// The same failing call five times in a row stops the run before a sixth model call, in
/// chat mode (native tool calls) and in auto mode alike, with exit code 4.
#[test]
fn five_identical_failing_calls_stop_the_run() {
    let (server, ws) = setup(
        vec![Step::repeat(Reply::tool(
            "Read",
            json!({"path": "missing.txt"}),
        ))],
        "",
    );
    let r = run(&ws, &["-p", "read it", "--output-format", "json"]);
    assert_eq!(r.code, Some(4), "{}\n{}", r.stdout, r.stderr);
    assert_eq!(server.chat_requests().len(), 5);
    let result: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(result["status"], "stopped");
    let why = result["result"].as_str().unwrap();
    assert!(why.contains("failed 5 times in a row"), "{why}");
    assert!(why.contains("max_repeated_failures"), "{why}");

    let (server, ws) = setup(
        vec![Step::repeat(Reply::text(
            r#"{"type":"tool","tool":"Read","args":{"path":"missing.txt"}}"#,
        ))],
        "[auto]\nmax_repeated_failures = 3\n",
    );
    let r = run(&ws, &["-p", "read it", "--mode", "auto"]);
    assert_eq!(r.code, Some(4), "{}\n{}", r.stdout, r.stderr);
    assert_eq!(server.chat_requests().len(), 3);
    assert!(r.stderr.contains("failed 3 times in a row"), "{}", r.stderr);
}

/// Auto-mode steps that change no file stop the run at `[auto] max_steps_without_change`.
#[test]
fn steps_without_progress_stop_an_auto_run() {
    let (server, ws) = setup(
        vec![Step::repeat(Reply::text(
            r#"{"type":"tool","tool":"Glob","args":{"globs":["*"]}}"#,
        ))],
        "[auto]\nmax_steps_without_change = 4\n",
    );
    let r = run(&ws, &["-p", "look around", "--mode", "auto"]);
    assert_eq!(r.code, Some(4), "{}\n{}", r.stdout, r.stderr);
    assert_eq!(server.chat_requests().len(), 4);
    assert!(
        r.stderr.contains("4 steps in a row changed no file"),
        "{}",
        r.stderr
    );
}
