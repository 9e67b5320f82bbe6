//! The slash commands a Claude Code user reaches for, through a real pseudo-terminal
//! against the scripted model server: `/status`, `/cost`, `/doctor`, `/export`, `/init`.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::pty::{PROMPT, Repl, workspace};
use support::{Protocol, Reply, ScriptedServer, Step, Workspace, texts, write_config_with};

/// A workspace whose one model is the scripted server, with `extra` TOML in its entry.
fn workspace_with(script: Vec<Step>, extra: &str) -> (Workspace, ScriptedServer) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, script);
    let ws = Workspace::new();
    write_config_with(ws.home(), Protocol::OpenAi, &server.url(), extra);
    (ws, server)
}

#[test]
fn status_shows_the_model_the_modes_and_the_context_after_a_turn() {
    let (ws, _server) = workspace(vec![Step::from(
        Reply::text("First answer.").usage(1_234, 56),
    )]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("hello");
    repl.expect("First answer.");
    // The line after the turn (the footer says `context N%` too).
    repl.expect("/8,192 (");
    repl.line("/status");
    let shown = repl.expect("/cost: tokens per model");
    for needle in [
        "linggen ",
        "session ",
        "agent           ling",
        "mode            chat",
        "permissions     default",
        "model           test",
        "context         1,290/8,192 (15%)",
        "trust ",
        "sandbox ",
        "linggen-agent.toml",
    ] {
        assert!(shown.contains(needle), "{needle:?} missing from {shown:?}");
    }
    assert!(
        shown.contains(&ws.root().display().to_string()),
        "{shown:?}"
    );
    repl.line("/quit");
}

#[test]
fn cost_adds_up_the_servers_counts_and_says_how_to_price_a_model() {
    let (ws, _server) = workspace(vec![
        Step::from(Reply::text("One.").usage(1_000, 50)),
        Reply::text("Two.").usage(2_000, 70).into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("first");
    repl.expect("One.");
    // The line after the turn (the footer says `context N%` too).
    repl.expect("/8,192 (");
    repl.line("second");
    repl.expect("Two.");
    // The line after the turn (the footer says `context N%` too).
    repl.expect("/8,192 (");
    repl.line("/cost");
    let shown = repl.expect("context 2,070/8,192");
    assert!(
        shown.contains("test  input 3,000 · output 120 tokens · 2 response(s)"),
        "{shown:?}"
    );
    assert!(
        shown.contains("no price configured for test (set price_input/price_output in [[models]])"),
        "{shown:?}"
    );
    repl.line("/quit");
}

#[test]
fn cost_prices_the_tokens_of_a_priced_model() {
    let (ws, _server) = workspace_with(
        vec![Step::from(Reply::text("Priced.").usage(3_000, 120))],
        "price_input = 3.0\nprice_output = 15\n",
    );
    let mut repl = Repl::start(&ws, &[]);
    repl.line("hello");
    repl.expect("Priced.");
    // The line after the turn (the footer says `context N%` too).
    repl.expect("/8,192 (");
    repl.line("/cost");
    let shown = repl.expect("context 3,120/8,192");
    // 3,000 × $3 + 120 × $15 per million tokens.
    assert!(
        shown.contains("input 3,000 · output 120 tokens · 1 response(s)"),
        "{shown:?}"
    );
    assert!(shown.contains("$0.0108"), "{shown:?}");
    assert!(!shown.contains("no price configured"), "{shown:?}");
    repl.line("/quit");
}

#[test]
fn doctor_lists_a_live_and_two_dead_models_without_holding_the_prompt() {
    // A port nothing listens on, and a server that accepts and never answers.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let extra = format!(
        "[[models]]\nid = \"gone\"\nprovider = \"openai\"\nmodel = \"m\"\n\
         url = \"http://127.0.0.1:{closed_port}/v1\"\n\n\
         [[models]]\nid = \"mute\"\nprovider = \"openai\"\nmodel = \"m\"\n\
         url = \"http://127.0.0.1:{silent_port}/v1\"\n"
    );
    let (ws, _server) = workspace_with(vec![], &extra);
    let mut repl = Repl::start(&ws, &[]);
    let asked = Instant::now();
    repl.line("/doctor");
    let local = repl.expect("model server(s)");
    for needle in [
        "✓ config parses",
        "sandbox: ",
        "trust: ",
        "MCP: ",
        "hooks: ",
        "terminal: TERM=xterm-256color",
    ] {
        assert!(local.contains(needle), "{needle:?} missing from {local:?}");
    }
    // The prompt is back while the servers are asked: what is typed now echoes before the
    // silent server's line arrives.
    repl.expect(PROMPT);
    repl.send("typed meanwhile");
    repl.expect("typed meanwhile");
    let probed = repl.expect("model mute (m): no answer (timeout)");
    repl.expect("start the server, or fix `url`");
    assert!(
        asked.elapsed() < Duration::from_secs(8),
        "took {:?}",
        asked.elapsed()
    );
    // Each model is one line; all three arrive together.
    let all = probed + &repl.expect(PROMPT);
    assert!(all.contains("✓ model test (scripted): answers"), "{all:?}");
    assert!(
        all.contains(&format!(
            "✗ model gone (m): no answer (down?) at http://127.0.0.1:{closed_port}/v1"
        )),
        "{all:?}"
    );
    assert!(all.contains("✗ model mute (m)"), "{all:?}");
    drop(silent);
    repl.send("\x15");
    repl.line("/quit");
}

#[test]
fn export_writes_the_transcript_and_never_overwrites() {
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool("Read", json!({"path": "notes.txt"}))),
        Reply::tool("Write", json!({"path": "out.txt", "content": "OUT"})).into(),
        Reply::text("The notes say hello; out.txt is written.").into(),
    ]);
    ws.write("notes.txt", "hello\n");
    let mut repl = Repl::start(&ws, &[]);
    repl.line("read the notes and write out");
    repl.expect("Esc denies");
    repl.send("y");
    repl.expect("out.txt is written.");
    // The line after the turn (the footer says `context N%` too).
    repl.expect("/8,192 (");
    repl.line("/export");
    let shown = repl.expect(".md");
    assert!(shown.contains("exported "), "{shown:?}");
    assert!(shown.contains(" messages to "), "{shown:?}");
    let exported: Vec<_> = std::fs::read_dir(ws.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("linggen-") && n.ends_with(".md"))
        .collect();
    assert_eq!(exported.len(), 1, "{exported:?}");
    let text = ws.read(&exported[0]);
    for needle in [
        "## You",
        "read the notes and write out",
        "The notes say hello; out.txt is written.",
        "**Read**",
        "\"path\": \"notes.txt\"",
        "**Write**",
        "approval asked for",
        "allowed once (by terminal)",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
    repl.expect(PROMPT);
    repl.line("/export");
    repl.expect("exists; not overwritten");
    assert_eq!(ws.read(&exported[0]), text);
    repl.line("/export other.md");
    // Not the echo of the line: the report of the export.
    repl.expect(" messages to ");
    repl.expect("other.md");
    assert!(ws.read("other.md").contains("read the notes and write out"));
    repl.line("/quit");
}

#[test]
fn init_asks_the_agent_for_agents_md_and_its_write_creates_it() {
    let (ws, server) = workspace(vec![
        Step::from(Reply::tool(
            "Write",
            json!({"path": "AGENTS.md", "content": "# Agents\n\nBuild: `make`\n"}),
        )),
        Reply::text("Wrote AGENTS.md.").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("/init");
    repl.expect("Esc denies");
    repl.send("y");
    repl.expect("Wrote AGENTS.md.");
    assert_eq!(ws.read("AGENTS.md"), "# Agents\n\nBuild: `make`\n");
    let first = server.chat_requests()[0].clone();
    let asked = texts(&first, "user").join("\n");
    assert!(asked.contains("write AGENTS.md at its root"), "{asked}");
    assert!(asked.contains("read-only"), "{asked}");
    repl.line("/quit");
}

#[test]
fn init_with_an_agents_md_asks_first_and_no_leaves_it_alone() {
    let (ws, server) = workspace(vec![Step::from(Reply::text("Improved it."))]);
    ws.write("AGENTS.md", "# Old\none\ntwo\n");
    let mut repl = Repl::start(&ws, &[]);
    repl.line("/init");
    repl.expect("AGENTS.md exists (3 lines). Overwrite it? [y/N]");
    repl.line("n");
    repl.expect("nothing sent; AGENTS.md is as it was");
    repl.expect(PROMPT);
    assert!(server.chat_requests().is_empty());
    assert_eq!(ws.read("AGENTS.md"), "# Old\none\ntwo\n");

    repl.line("/init");
    repl.expect("Overwrite it? [y/N]");
    repl.line("y");
    repl.expect("Improved it.");
    let asked = texts(&server.chat_requests()[0], "user").join("\n");
    assert!(asked.contains("AGENTS.md exists already"), "{asked}");
    repl.line("/quit");
}

#[test]
fn doctor_names_the_file_and_line_of_a_config_edited_into_a_broken_one() {
    let (ws, _server) = workspace(vec![]);
    let mut repl = Repl::start(&ws, &[]);
    ws.write("linggen-agent.toml", "[agent]\nmax_iters = \"many\"\n");
    repl.line("/doctor");
    let shown = repl.expect("model server(s)");
    let broken = shown
        .lines()
        .find(|l| l.contains("✗ config: "))
        .unwrap_or_else(|| panic!("no config line in {shown:?}"));
    assert!(broken.contains("linggen-agent.toml"), "{broken}");
    assert!(broken.contains("line 2"), "{broken}");
    assert!(broken.contains("expected u32"), "{broken}");
    assert!(broken.contains("— fix that line"), "{broken}");
    repl.expect("✓ model test");
    repl.line("/quit");
}

#[test]
fn help_and_completion_offer_the_new_commands() {
    let (ws, _server) = workspace(vec![]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("/help");
    let help = repl.expect("/quit");
    for command in ["/status", "/cost", "/doctor", "/export [file]", "/init"] {
        assert!(help.contains(command), "{command} missing from {help:?}");
    }
    repl.expect(PROMPT);
    repl.send("/doc\t");
    repl.expect("/doctor");
    repl.send("\x15");
    repl.line("/quit");
}
