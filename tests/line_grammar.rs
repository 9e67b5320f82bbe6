//! One line grammar for every frontend: `-p` attaches `@file` mentions exactly as the shell
//! and the browser do (same cap, same confinement to the root, a mention that names no file
//! stays text). Through the real binary and the scripted server.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use support::{Protocol, Reply, ScriptedServer, Step, Workspace, run_with_timeout, texts};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `linggen -p PROMPT` (with `stdin` piped when given) and returns the first user
/// message the model received.
fn sent(ws: &Workspace, prompt: &str, stdin: Option<&str>) -> String {
    let server =
        ScriptedServer::start_background(Protocol::OpenAi, vec![Step::from(Reply::text("ok"))]);
    ws.configure(Protocol::OpenAi, &server.url());
    let mut cmd = ws.cmd();
    cmd.args(["-p", prompt]);
    if let Some(text) = stdin {
        let piped = ws.write("piped.txt", text);
        cmd.stdin(std::fs::File::open(piped).unwrap());
    }
    let out = run_with_timeout(&mut cmd, TIMEOUT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    texts(&server.last_chat_request().unwrap(), "user")
        .into_iter()
        .next()
        .unwrap()
}

#[test]
fn print_mode_attaches_file_mentions_like_the_shell() {
    let ws = Workspace::new();
    ws.write("src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");
    assert_eq!(
        sent(&ws, "explain @src/lib.rs", None),
        "explain @src/lib.rs\n\nsrc/lib.rs:\n```\npub fn answer() -> u32 {\n    42\n}\n```"
    );

    // For another agent, the mention in its message attaches too.
    let to_agent = sent(&ws, "@ling explain @src/lib.rs, please", None);
    assert!(
        to_agent.starts_with("explain @src/lib.rs, please\n\nsrc/lib.rs:\n```\n"),
        "{to_agent}"
    );

    // Piped stdin and a mentioned file both come with the task.
    let both = sent(
        &ws,
        "compare with @src/lib.rs",
        Some("fn answer() -> u32 { 41 }\n"),
    );
    assert!(
        both.contains("```\nfn answer() -> u32 { 41 }\n```"),
        "{both}"
    );
    assert!(both.contains("src/lib.rs:\n```\npub fn answer()"), "{both}");
}

#[test]
fn print_mode_mentions_outside_the_root_or_missing_stay_text() {
    let ws = Workspace::new();
    let outside = ws.home().join("secret.txt");
    std::fs::write(&outside, "TOP SECRET\n").unwrap();
    let prompt = format!("read @{} and @missing.rs", outside.display());
    let text = sent(&ws, &prompt, None);
    assert_eq!(text, prompt, "nothing is attached");
}

/// An attachment is cut to the shell's 100,000-character cap, and further to half of what
/// is free in the model's window (8k here, from the server), saying how to read the rest.
#[test]
fn print_mode_cuts_large_attachments_to_fit_the_window() {
    let ws = Workspace::new();
    ws.write("big.txt", &"q".repeat(150_000));
    let text = sent(&ws, "summarise @big.txt", None);
    let qs = text.matches('q').count();
    assert!((4_000..=20_000).contains(&qs), "{qs} characters attached");
    assert!(
        text.contains("cut to fit the context window") && text.contains("line_range"),
        "{}",
        &text[text.len() - 200..]
    );
}
