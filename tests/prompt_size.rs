//! The fixed prompt (system prompt and tool definitions, before the person says anything)
//! as the server receives it from the real binary: under 5,000 characters with every tool
//! the default agent is offered, and compact on a small window, where a multi-turn tool
//! session fits a 2k window a server enforces as llama.cpp does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::{
    Protocol, Reply, ScriptedServer, ServerOptions, Step, Workspace, fixed_prompt_chars, run, texts,
};

/// The guard's limit: the default agent's system prompt plus its tools' names,
/// descriptions and parameter schemas (compact JSON), as `ToolSpec::chars` counts them.
const FIXED_PROMPT_LIMIT: usize = 5_000;

/// The same on a small window (compact): about half.
const COMPACT_PROMPT_LIMIT: usize = 2_800;

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// `ling` with every tool it has: the file tools, the shipped skills' catalog, delegation
/// to `coder`, the lock tools and `TodoWrite`.
#[test]
fn the_fixed_prompt_is_under_5000_characters_with_every_tool() {
    let server =
        ScriptedServer::start_background(Protocol::OpenAi, vec![Step::from(Reply::text("hi"))]);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    let r = run(&ws, &["-p", "hello"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let body = server.last_chat_request().unwrap();
    let names = tool_names(&body);
    for name in [
        "get_repo_info",
        "Glob",
        "Read",
        "Grep",
        "Write",
        "Edit",
        "Bash",
        "capture_screenshot",
        "propose_patch",
        "apply_patch",
        "Skill",
        "delegate_to_agent",
        "lock_paths",
        "unlock_paths",
        "TodoWrite",
    ] {
        assert!(
            names.iter().any(|n| n == name),
            "{name} not offered: {names:?}"
        );
    }
    let (system, tools) = fixed_prompt_chars(&body);
    // Reported in doc/performance.md.
    eprintln!(
        "full: system prompt {system} + tools {tools} = {} characters",
        system + tools
    );
    assert!(
        system + tools < FIXED_PROMPT_LIMIT,
        "the fixed prompt is {} characters (system {system}, tools {tools}); the limit is \
         {FIXED_PROMPT_LIMIT}",
        system + tools
    );
}

/// A llama.cpp-like server with a 2,048-token window it enforces (3 characters a token,
/// tools counted) and reports at `/props`; no `context_window` is configured.
fn two_k_server(script: Vec<Step>) -> (Workspace, ScriptedServer) {
    let mut options = ServerOptions::new(Protocol::OpenAi);
    options.window = Some(support::Window::llama_cpp(2048));
    options.context_length = 2048;
    let server = ScriptedServer::start_with(options, script);
    let ws = Workspace::new();
    std::fs::write(
        ws.home().join("linggen-agent.toml"),
        format!(
            "[[models]]\nid = \"tiny\"\nprovider = \"openai\"\nmodel = \"m\"\nurl = \"{}\"\n",
            server.url()
        ),
    )
    .unwrap();
    (ws, server)
}

/// Three turns of a tool session on a 2k window: every request fits, every turn answers,
/// and what the model is offered is the compact prompt (the rules a small model needs, the
/// tools in a line each), about half the full one.
#[test]
fn a_tool_session_completes_on_a_2k_window() {
    let script = vec![
        Step::from(Reply::tool("Grep", json!({"query": "fn main"}))),
        Reply::tool("Read", json!({"path": "src/main.rs"})).into(),
        Reply::text("main prints a greeting").into(),
        Reply::tool("Glob", json!({"globs": ["**/*.rs"]})).into(),
        Reply::text("two Rust files").into(),
        Reply::tool(
            "Edit",
            json!({"path": "src/main.rs", "old_string": "hello", "new_string": "hi"}),
        )
        .into(),
        Reply::text("changed the greeting").into(),
    ];
    let (ws, server) = two_k_server(script);
    ws.write("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n");
    ws.write(
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
    );
    let turns = [
        ("what does main do?", "main prints a greeting"),
        ("how many Rust files?", "two Rust files"),
        ("say hi instead of hello", "changed the greeting"),
    ];
    for (i, (ask, answer)) in turns.iter().enumerate() {
        let mut args = vec!["-p", ask, "--permission-mode", "accept-edits"];
        if i > 0 {
            args.push("--continue");
        }
        let r = run(&ws, &args);
        assert_eq!(r.code, Some(0), "turn {}: {}", i + 1, r.stderr);
        assert_eq!(r.stdout.trim_end(), *answer, "turn {}", i + 1);
    }
    server.assert_script_consumed();
    assert!(ws.read("src/main.rs").contains("\"hi\""));
    let (answered, rejected) = server.prompt_tokens();
    assert!(rejected.is_empty(), "over the window: {rejected:?}");
    eprintln!("2k window: prompts of {answered:?} tokens");

    let first = &server.chat_requests()[0];
    let system = texts(first, "system").join("");
    assert!(system.contains("Do not retry a denied call"), "{system}");
    assert!(
        !first["tools"]
            .to_string()
            .contains("\"description\":\"Directory")
    );
    let names = tool_names(first);
    assert!(names.contains(&"Edit".to_string()) && !names.contains(&"TodoWrite".to_string()));
    let (system, tools) = fixed_prompt_chars(first);
    eprintln!(
        "compact: system prompt {system} + tools {tools} = {} characters",
        system + tools
    );
    assert!(system + tools < COMPACT_PROMPT_LIMIT, "{system} + {tools}");
}
