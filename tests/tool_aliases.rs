//! The argument names models tuned on Claude Code and codex send, through the real binary:
//! each is accepted and does what it does there (doc/tools.md lists them).

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::{Protocol, Reply, ScriptedServer, Step, Workspace, run, texts};

/// Runs one turn in which the model makes `calls` (in one response), and returns the tool
/// results linggen sent back, in order.
fn results(ws: &Workspace, calls: Vec<(&str, Value)>, mode: &str) -> Vec<String> {
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![Step::from(Reply::tools(calls)), Reply::text("done").into()],
    );
    ws.configure(Protocol::OpenAi, &server.url());
    let r = run(ws, &["-p", "--permission-mode", mode, "go"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    texts(&server.last_chat_request().unwrap(), "tool")
}

fn workspace() -> Workspace {
    let ws = Workspace::new();
    ws.write(
        "src/lib.rs",
        "fn hello() {}\nlet before = 0;\nlet target = 1;\nlet after = 2;\n",
    );
    ws.write("src/other.rs", "// no greeting here\n");
    ws.write("README.md", "Say hello.\n");
    ws
}

#[test]
fn grep_takes_claude_code_arguments() {
    let ws = workspace();
    let out = results(
        &ws,
        vec![
            ("Grep", json!({"pattern": "hello"})),
            ("Grep", json!({"pattern": "hello", "path": "src"})),
            ("Grep", json!({"pattern": "hello", "path": "src/lib.rs"})),
            ("Grep", json!({"pattern": "hello", "glob": "*.rs"})),
            ("Grep", json!({"pattern": "hello", "type": "rust"})),
            ("Grep", json!({"pattern": "HELLO", "-i": true})),
            ("Grep", json!({"pattern": "target", "-n": true, "-C": 1})),
            ("Grep", json!({"pattern": "target", "-A": 1})),
            ("Grep", json!({"pattern": "target", "-B": 1})),
            (
                "Grep",
                json!({"pattern": "hello", "output_mode": "files_with_matches"}),
            ),
            ("Grep", json!({"pattern": "hello", "output_mode": "count"})),
            ("Grep", json!({"pattern": "let", "head_limit": 2})),
        ],
        "default",
    );
    assert_eq!(out.len(), 12, "{out:#?}");
    // `pattern` is the regex, not a file glob.
    assert!(
        out[0].contains("src/lib.rs:1:fn hello") && out[0].contains("README.md:1:"),
        "{}",
        out[0]
    );
    assert!(
        out[1].contains("src/lib.rs:1:") && !out[1].contains("README"),
        "{}",
        out[1]
    );
    assert!(
        out[2].contains("src/lib.rs:1:"),
        "a file as path: {}",
        out[2]
    );
    assert!(
        out[3].contains("src/lib.rs:1:") && !out[3].contains("README"),
        "{}",
        out[3]
    );
    assert!(
        out[4].contains("src/lib.rs:1:") && !out[4].contains("README"),
        "{}",
        out[4]
    );
    assert!(out[5].contains("src/lib.rs:1:"), "-i: {}", out[5]);
    assert!(
        out[6].contains("src/lib.rs-2-let before")
            && out[6].contains("src/lib.rs:3:let target")
            && out[6].contains("src/lib.rs-4-let after"),
        "-C: {}",
        out[6]
    );
    assert!(
        out[7].contains("src/lib.rs-4-") && !out[7].contains("src/lib.rs-2-"),
        "-A: {}",
        out[7]
    );
    assert!(
        out[8].contains("src/lib.rs-2-") && !out[8].contains("src/lib.rs-4-"),
        "-B: {}",
        out[8]
    );
    let files: Vec<&str> = out[9].lines().collect();
    assert!(
        files.contains(&"src/lib.rs") && files.contains(&"README.md"),
        "{}",
        out[9]
    );
    assert!(!out[9].contains(':'), "paths only: {}", out[9]);
    assert!(
        out[10].contains("src/lib.rs:1") && out[10].contains("README.md:1"),
        "{}",
        out[10]
    );
    assert!(
        out[11].contains("stopped at 2 matches"),
        "head_limit: {}",
        out[11]
    );
}

#[test]
fn read_takes_file_path_offset_and_limit() {
    let ws = workspace();
    let out = results(
        &ws,
        vec![(
            "Read",
            json!({"file_path": "src/lib.rs", "offset": 2, "limit": 2}),
        )],
        "default",
    );
    assert!(
        out[0].contains("let before") && out[0].contains("let target"),
        "{}",
        out[0]
    );
    assert!(
        !out[0].contains("fn hello") && !out[0].contains("let after"),
        "{}",
        out[0]
    );
}

#[test]
fn bash_takes_command_timeout_and_description() {
    let ws = workspace();
    let out = results(
        &ws,
        vec![
            (
                "Bash",
                json!({"command": "echo hi there", "timeout": 5000, "description": "greet"}),
            ),
            ("Bash", json!({"command": "sleep 5", "timeout": 200})),
        ],
        "bypass",
    );
    assert!(out[0].contains("hi there"), "{}", out[0]);
    assert!(
        out[1].contains("timed out after 0.2 s"),
        "timeout in ms: {}",
        out[1]
    );
}

#[test]
fn glob_takes_pattern_and_path() {
    let ws = workspace();
    let out = results(
        &ws,
        vec![("Glob", json!({"pattern": "*.rs", "path": "src"}))],
        "default",
    );
    assert!(
        out[0].contains("src/lib.rs") && out[0].contains("src/other.rs"),
        "{}",
        out[0]
    );
    assert!(!out[0].contains("README"), "{}", out[0]);
}

#[test]
fn edit_and_write_take_file_path() {
    let ws = workspace();
    let out = results(
        &ws,
        vec![
            (
                "Edit",
                json!({"file_path": "src/lib.rs", "old_string": "target = 1", "new_string": "target = 9"}),
            ),
            (
                "Write",
                json!({"file_path": "notes.txt", "content": "written\n"}),
            ),
        ],
        "accept-edits",
    );
    assert_eq!(out.len(), 2, "{out:#?}");
    assert!(ws.read("src/lib.rs").contains("target = 9"), "{}", out[0]);
    assert_eq!(ws.read("notes.txt"), "written\n", "{}", out[1]);
}
