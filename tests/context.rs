//! Context through the real binary: what happens when a prompt outgrows the model's window.
// A failed unwrap in a test is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::{Protocol, Reply, ScriptedServer, ServerOptions, Step, Workspace, run};

/// Ollama silently cuts a prompt longer than its `num_ctx`: linggen says so, once, with
/// the window in use and how to raise it.
#[test]
fn an_ollama_window_smaller_than_the_prompt_is_reported_once() {
    let mut options = ServerOptions::new(Protocol::Ollama);
    options.num_ctx = Some(1024);
    let server = ScriptedServer::start_with(
        options,
        vec![
            Step::from(Reply::tool(
                "Read",
                serde_json::json!({"file_path": "a.txt"}),
            )),
            Reply::text("done").into(),
        ],
    );
    let ws = Workspace::new();
    ws.write("a.txt", "x\n");
    std::fs::write(
        ws.home().join("linggen-agent.toml"),
        format!(
            "[[models]]\nid = \"qwen\"\nprovider = \"ollama\"\nmodel = \"scripted\"\nurl = \"{}\"\n",
            server.url()
        ),
    )
    .unwrap();
    let long = format!("please read a.txt. {}", "context ".repeat(1000));
    let r = run(&ws, &["-p", &long]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.stderr.matches("Ollama cut off its start").count(),
        1,
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("a window of 1024") && r.stderr.contains("context_window = "),
        "{}",
        r.stderr
    );
    let body = server.last_chat_request().unwrap();
    assert_eq!(body["options"]["num_ctx"], 1024);

    // A prompt that fits says nothing.
    let server = ScriptedServer::start_with(
        ServerOptions::new(Protocol::Ollama),
        vec![Reply::text("fits")],
    );
    std::fs::write(
        ws.home().join("linggen-agent.toml"),
        format!(
            "[[models]]\nid = \"qwen\"\nprovider = \"ollama\"\nmodel = \"scripted\"\nurl = \"{}\"\n",
            server.url()
        ),
    )
    .unwrap();
    let r = run(&ws, &["-p", "hi"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!r.stderr.contains("cut off"), "{}", r.stderr);
}

/// On a 4k window, a big file's `Read` result is cut to half of what is left of the
/// window, at a line, and says where to continue; the model can go on from there.
#[test]
fn a_big_read_is_cut_to_fit_a_small_window() {
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Reply::tool(
                "Read",
                serde_json::json!({"file_path": "big.txt"}),
            )),
            Reply::text("read it").into(),
        ],
    );
    let ws = Workspace::new();
    let big: String = (1..=3000).map(|n| format!("line number {n}\n")).collect();
    ws.write("big.txt", &big);
    std::fs::write(
        ws.home().join("linggen-agent.toml"),
        format!(
            "[[models]]\nid = \"small\"\nprovider = \"openai\"\nmodel = \"m\"\nurl = \"{}\"\ncontext_window = 4096\n",
            server.url()
        ),
    )
    .unwrap();
    let r = run(&ws, &["-p", "read big.txt"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let last = server.last_chat_request().unwrap();
    let result = support::texts(&last, "tool").join("\n");
    // Half of the ~2,000 tokens left after the system prompt and tools: well under 8 KB.
    assert!(result.len() < 8_000, "{} bytes", result.len());
    assert!(
        result.starts_with("   1\tline number 1\n"),
        "{}",
        &result[..80]
    );
    assert!(
        result.contains("[cut to fit the context window. Continue with {\"path\": \"big.txt\", \"line_range\": ["),
        "{}",
        &result[result.len().saturating_sub(300)..]
    );
}
