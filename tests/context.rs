//! Context through the real binary: what happens when a prompt outgrows the model's window.
// A failed unwrap in a test is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::{Protocol, Reply, ScriptedServer, ServerOptions, Step, Workspace, run};

/// One Ollama model on `server`, its window asked of the server.
fn ollama_config(ws: &Workspace, server: &ScriptedServer) {
    std::fs::write(
        ws.home().join("linggen-agent.toml"),
        format!(
            "[[models]]\nid = \"qwen\"\nprovider = \"ollama\"\nmodel = \"scripted\"\nurl = \"{}\"\n",
            server.url()
        ),
    )
    .unwrap();
}

/// Ollama silently cuts a prompt longer than its `num_ctx`: linggen says so, once, with
/// the window in use and how to raise it.
#[test]
fn an_ollama_window_smaller_than_the_prompt_is_reported_once() {
    let mut options = ServerOptions::new(Protocol::Ollama);
    options.num_ctx = Some(512);
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
    ollama_config(&ws, &server);
    // The instructions and tool definitions alone are larger than this window, even in
    // their compact form for small windows.
    let r = run(&ws, &["-p", "please read a.txt"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.stderr.matches("Ollama cut off its start").count(),
        1,
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("a window of 512") && r.stderr.contains("context_window = "),
        "{}",
        r.stderr
    );
    let body = server.last_chat_request().unwrap();
    assert_eq!(body["options"]["num_ctx"], 512);

    // A prompt that fits says nothing.
    let server = ScriptedServer::start_with(
        ServerOptions::new(Protocol::Ollama),
        vec![Reply::text("fits")],
    );
    ollama_config(&ws, &server);
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
    small_window(&ws, &server, "");
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

/// One OpenAI-compatible model on `server`, with `extra` configuration after it.
fn openai_model(ws: &Workspace, server: &ScriptedServer, extra: &str) {
    std::fs::write(
        ws.home().join("linggen-agent.toml"),
        format!(
            "[[models]]\nid = \"small\"\nprovider = \"openai\"\nmodel = \"m\"\nurl = \"{}\"\n{extra}",
            server.url()
        ),
    )
    .unwrap();
}

/// The model with a 4,096-token window.
fn small_window(ws: &Workspace, server: &ScriptedServer, extra: &str) {
    openai_model(ws, server, &format!("context_window = 4096\n{extra}"));
}

/// A turn of about 1,000 tokens, recognisable by its number.
fn turn(n: u32) -> String {
    format!("turn {n}: {}", format!("filler{n} ").repeat(500))
}

fn messages_text(body: &serde_json::Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// On a ~4k window, the conversation is compacted before a request would pass three
/// quarters of it: the model writes a summary (a request of its own, which fits), the next
/// request carries the summary and the latest exchange instead of the old turns, and
/// `--continue` resumes from the compacted state.
#[test]
fn a_long_conversation_is_compacted_and_resumes_compacted() {
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Reply::text("answer one")),
            Reply::text(
                "SUMMARY-1: the user sent turn 1.\n\n## Durable facts\n- run make check before committing\n",
            )
            .into(),
            Reply::text("answer two").into(),
            Reply::text("SUMMARY-2: turns 1 and 2 were sent.").into(),
            Reply::text("answer three").into(),
        ],
    );
    let ws = Workspace::new();
    // Under 4k: the compact tool schemas of a small window (~500 tokens) leave room for a
    // summary and a turn, not for two turns.
    openai_model(&ws, &server, "context_window = 3300\n");
    let first = run(&ws, &["-p", &turn(1)]);
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let second = run(
        &ws,
        &[
            "-p",
            "--continue",
            &turn(2),
            "--output-format",
            "stream-json",
        ],
    );
    assert_eq!(second.code, Some(0), "{}", second.stderr);
    assert!(
        second.stdout.contains("\"type\":\"Compacted\""),
        "{}",
        second.stdout
    );
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 3);
    // The summary request: its own instructions, the old turn, no tools; it fits.
    let summary_request = &requests[1];
    assert!(summary_request.get("tools").is_none());
    let asked = messages_text(summary_request);
    assert!(
        asked.contains("hand-off notes") && asked.contains("filler1"),
        "{asked}"
    );
    assert!(asked.len() < 4096 * 4);
    // The next request: the summary and the new turn, not the old one.
    let next = messages_text(&requests[2]);
    assert!(
        next.contains("SUMMARY-1") && next.contains("filler2"),
        "{next}"
    );
    assert!(
        !next.contains("filler1"),
        "the compacted turn was still sent"
    );

    // Resumed, the session starts from the compacted state.
    let third = run(&ws, &["-p", "--continue", &turn(3)]);
    assert_eq!(third.code, Some(0), "{}", third.stderr);
    let requests = server.chat_requests();
    let resummarised = messages_text(&requests[3]);
    assert!(
        resummarised.contains("SUMMARY-1") && !resummarised.contains("filler1"),
        "{resummarised}"
    );
    let last = messages_text(&requests[4]);
    assert!(
        last.contains("SUMMARY-2") && last.contains("filler3"),
        "{last}"
    );
    assert!(
        !last.contains("filler1") && !last.contains("filler2"),
        "{last}"
    );
    // The first summary's durable fact went to the project's memory: every later
    // request's system prompt carries it.
    let system = support::texts(&requests[4], "system").join("\n");
    assert!(
        system.contains("- run make check before committing"),
        "{system}"
    );
    server.assert_script_consumed();
}

/// A history that cannot be shrunk (one message larger than the window) ends with a clear
/// error after the server's rejection, without a summary request, let alone a loop.
#[test]
fn one_message_larger_than_the_window_is_a_clear_error_not_a_loop() {
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![support::Fault::api_error(
            400,
            "the request exceeds the available context size, try increasing it",
        )],
    );
    let ws = Workspace::new();
    small_window(&ws, &server, "");
    let huge = "word ".repeat(8_000);
    let r = run(&ws, &["-p", &huge]);
    assert_ne!(r.code, Some(0));
    assert!(
        r.stderr.contains("cannot be made to fit") && r.stderr.contains("4096-token window"),
        "{}",
        r.stderr
    );
    assert_eq!(server.chat_requests().len(), 1);
}

/// A server that answers one turn, rejects the next as too long, and answers again after
/// the summary; compacting only at 95% lets the request go out and meet that limit.
fn rejected_once() -> (Workspace, ScriptedServer) {
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Reply::text("answer one")),
            support::Fault::api_error(
                400,
                "the request exceeds the available context size, try increasing it",
            )
            .into(),
            Reply::text("SUMMARY: turn 1 happened.").into(),
            Reply::text("answer after compacting").into(),
        ],
    );
    let ws = Workspace::new();
    small_window(&ws, &server, "\n[context]\ncompact_at = 0.95\n");
    (ws, server)
}

/// A server's context rejection is not the end of the turn: one compaction, one retry.
#[test]
fn a_context_rejection_is_compacted_and_retried_once() {
    let (ws, server) = rejected_once();
    assert_eq!(run(&ws, &["-p", &turn(1)]).code, Some(0));
    let r = run(&ws, &["-p", "--continue", &turn(2)]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.trim_end(), "answer after compacting");
    let last = messages_text(&server.last_chat_request().unwrap());
    assert!(
        last.contains("SUMMARY") && !last.contains("filler1"),
        "{last}"
    );
    server.assert_script_consumed();
}

/// Summaries written so far by [`summarise`], to tell them apart.
static SUMMARIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Answers compaction's summary requests, which come whenever linggen decides, so the
/// script cannot hold them.
fn summarise(body: &serde_json::Value) -> Option<Reply> {
    let system = support::texts(body, "system").join("\n");
    if !system.contains("hand-off notes") {
        return None;
    }
    let n = SUMMARIES.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
    Some(Reply::text(format!(
        "SUMMARY-{n}: the user asked about files one turn at a time.\n\n## Durable facts\n- \
         the project's checks run with `make check`\n"
    )))
}

/// A workspace with `files` files of 16 KB each (`big0.txt`, …), and a llama.cpp-like
/// server with a 4,096-token window serving `script` and answering summary requests. No
/// `context_window` is configured: it comes from the server's `/props`, as with llama.cpp.
fn small_llama(script: Vec<Step>, files: usize) -> (Workspace, ScriptedServer) {
    let mut options = ServerOptions::new(Protocol::OpenAi);
    options.window = Some(support::Window::llama_cpp(4096));
    options.context_length = 4096;
    options.responder = Some(summarise);
    let server = ScriptedServer::start_with(options, script);
    let ws = Workspace::new();
    for k in 0..files {
        let text: String = (1..=400)
            .map(|n| format!("big{k} line {n}: some words of the file\n"))
            .collect();
        ws.write(&format!("big{k}.txt"), &text);
    }
    openai_model(&ws, &server, "");
    (ws, server)
}

/// The long session: 40 turns, each reading a file far larger than a 4k window,
/// against a server that counts the prompt itself (3 characters a token, not the 4 linggen
/// assumes at first) and rejects one over its window with llama.cpp's own error. Every turn
/// completes; every summary request fits; the summary reaches the next request; each turn
/// resumes (`--continue`) the compacted state; the summary's durable fact reaches the
/// project's memory and the prompts after it.
#[test]
fn forty_turns_of_big_reads_on_a_4k_window_all_complete() {
    const TURNS: usize = 40;
    let mut script = Vec::new();
    for i in 1..=TURNS {
        script.push(Step::from(Reply::tool(
            "Read",
            serde_json::json!({"file_path": format!("big{}.txt", i % 5)}),
        )));
        script.push(Reply::text(format!("answer {i}")).into());
    }
    let window = support::Window::llama_cpp(4096);
    let (ws, server) = small_llama(script, 5);
    for i in 1..=TURNS {
        let ask = format!("turn {i}: what does big{}.txt say?", i % 5);
        let mut args = vec!["-p", ask.as_str()];
        if i > 1 {
            args.push("--continue");
        }
        let r = run(&ws, &args);
        assert_eq!(r.code, Some(0), "turn {i}: {}", r.stderr);
        assert_eq!(r.stdout.trim_end(), format!("answer {i}"), "turn {i}");
    }
    server.assert_script_consumed();
    let summaries = SUMMARIES.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        summaries >= 5,
        "only {summaries} summaries in {TURNS} turns"
    );

    // Every request the server saw, measured as it measured them.
    let requests = server.chat_requests();
    let is_summary = |b: &serde_json::Value| {
        support::texts(b, "system")
            .join("")
            .contains("hand-off notes")
    };
    let over: Vec<(u64, bool)> = requests
        .iter()
        .map(|b| (window.count(b), is_summary(b)))
        .filter(|(tokens, _)| *tokens > 4096)
        .collect();
    assert!(
        over.iter().all(|(_, summary)| !summary),
        "a summary request did not fit: {over:?}"
    );
    // A turn's first request is estimated before the server has counted anything in this
    // process; a rejection then costs a compaction and a retry, never the turn. Rare.
    let (answered, rejected) = server.prompt_tokens();
    eprintln!(
        "{} requests, {summaries} summaries, largest prompt {} tokens, rejected: {rejected:?}",
        requests.len(),
        answered.iter().max().unwrap()
    );
    assert!(
        over.len() <= TURNS / 10,
        "{} rejections: {over:?}",
        over.len()
    );

    // After each summary the next turn's request carries it, and not the turns it replaced.
    let turns: Vec<&serde_json::Value> = requests
        .iter()
        .filter(|b| !is_summary(b) && window.count(b) <= 4096)
        .collect();
    let last = messages_text(turns.last().unwrap());
    assert!(last.contains("SUMMARY-"), "{last}");
    assert!(!last.contains("turn 1:"), "turn 1 was never compacted away");
    assert!(last.contains(&format!("turn {TURNS}:")));
    // The durable fact: in the memory file, and in the system prompt of the last request.
    let memory = std::fs::read_dir(ws.home().join("projects"))
        .unwrap()
        .map(|d| std::fs::read_to_string(d.unwrap().path().join("memory.md")).unwrap())
        .collect::<String>();
    assert_eq!(memory.matches("make check").count(), 1, "{memory}");
    let system = support::texts(turns.last().unwrap(), "system").join("\n");
    assert!(system.contains("`make check`"), "{system}");
}

/// A delegated run has a context of its own and compacts it on its own: its big reads are
/// summarised inside the child, and the parent's history only ever gets the child's answer.
#[test]
fn a_delegated_run_compacts_its_own_context() {
    let mut script = vec![Step::from(Reply::tool(
        "delegate_to_agent",
        serde_json::json!({"target_agent_id": "coder", "task": "read the big files"}),
    ))];
    for k in 0..4 {
        script.push(
            Reply::tool(
                "Read",
                serde_json::json!({"file_path": format!("big{k}.txt")}),
            )
            .into(),
        );
    }
    script.push(Reply::text("child done: four files read").into());
    script.push(Reply::text("parent done").into());
    let (ws, server) = small_llama(script, 4);
    let r = run(
        &ws,
        &[
            "-p",
            "have coder read the big files",
            "--output-format",
            "stream-json",
            "--permission-mode",
            "bypass",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    server.assert_script_consumed();
    let events: Vec<serde_json::Value> = r
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let child = events
        .iter()
        .find(|e| e["type"] == "SubagentSpawned")
        .map(|e| e["subagent_id"].clone())
        .expect("a child run");
    let compacted: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["type"] == "Compacted").collect();
    assert!(!compacted.is_empty(), "the child never compacted");
    assert!(
        compacted.iter().all(|e| e["run_id"] == child),
        "{compacted:?}"
    );
    // The child's usage names it and counts its summaries.
    assert!(events.iter().any(|e| e["type"] == "ContextUsage"
        && e["run_id"] == child
        && e["agent_id"] == "coder"
        && e["summary_count"].as_u64() >= Some(1)
        && e["compressed"] == true));
    // The parent's last request: the child's answer, none of the files.
    let last = messages_text(&server.last_chat_request().unwrap());
    assert!(last.contains("child done"), "{last}");
    assert!(!last.contains("big1 line 1:"), "{last}");
    let (_, rejected) = server.prompt_tokens();
    assert!(rejected.len() <= 1, "{rejected:?}");
}

/// Claude Code's compaction hooks: `PreCompact` and `PostCompact` with `trigger: auto`, then
/// `SessionStart` with source `compact`, whose context joins the summary.
#[test]
fn compaction_runs_the_compaction_hooks() {
    let (ws, server) = rejected_once();
    let record = support::hook_log::RECORD;
    let hook =
        |command: &str| serde_json::json!([{"hooks": [{"type": "command", "command": command}]}]);
    let settings = serde_json::json!({"hooks": {
        "PreCompact": hook(record),
        "PostCompact": hook(record),
        "SessionStart": [{"matcher": "compact", "hooks": [
            {"command": record}, {"command": "echo 'Remember: the build is make check.'"}]}],
    }});
    support::hook_log::user_settings(&ws, &settings);
    assert_eq!(run(&ws, &["-p", &turn(1)]).code, Some(0));
    let r = run(&ws, &["-p", "--continue", &turn(2)]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let events = support::hook_log::recorded(&ws);
    let names = support::hook_log::names(&events);
    assert_eq!(
        names,
        ["PreCompact", "PostCompact", "SessionStart"],
        "{events:?}"
    );
    assert_eq!(events[0]["trigger"], "auto");
    assert!(
        events[1]["summary"]
            .as_str()
            .unwrap()
            .contains("turn 1 happened")
    );
    assert_eq!(events[2]["source"], "compact");
    let last = messages_text(&server.last_chat_request().unwrap());
    assert!(
        last.contains("Remember: the build is make check."),
        "{last}"
    );
}
