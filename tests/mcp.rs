//! MCP servers against the reference server `@modelcontextprotocol/server-everything`
//! (npm, installed by `.ci/run`), over stdio and streamable HTTP: a scripted model calls
//! their tools through the real binary.

// Test code may unwrap: a failure there is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::{
    Protocol, Reply, ScriptedServer, Step, Workspace, mcp_everything, run_with_timeout, texts,
    write_config_with,
};

/// Room for every schema of the reference server (an 8k window would get `tool_search`).
const ROOMY: &str = "[mcp]\neager_tools_chars = 100000\n";

/// A workspace whose person's config names the reference server as `everything`.
fn workspace(script: Vec<Step>, entry: &Path, extra: &str) -> (Workspace, ScriptedServer) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, script);
    let ws = Workspace::new();
    let config = format!(
        "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n{extra}",
        entry.display().to_string()
    );
    write_config_with(ws.home(), Protocol::OpenAi, &server.url(), &config);
    (ws, server)
}

fn run(ws: &Workspace, args: &[&str]) -> std::process::Output {
    run_with_timeout(ws.cmd().args(args), Duration::from_secs(90))
}

fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

/// A workspace whose person's config names `server`: a fixture in tests/fixtures run by
/// node on the official TypeScript SDK (installed beside the reference server `entry`).
fn sdk_server(
    entry: &Path,
    server: &str,
    fixture: &str,
    script: Vec<Step>,
) -> (Workspace, ScriptedServer) {
    let sdk = entry.ancestors().nth(3).unwrap().join("sdk");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    let model = ScriptedServer::start_background(Protocol::OpenAi, script);
    let ws = Workspace::new();
    let config = format!(
        "[mcp_servers.{server}]\ncommand = \"node\"\nargs = [{:?}, {:?}]\n",
        fixture.display().to_string(),
        sdk.display().to_string()
    );
    write_config_with(ws.home(), Protocol::OpenAi, &model.url(), &config);
    (ws, model)
}

fn tool_results(server: &ScriptedServer) -> Vec<String> {
    server
        .last_chat_request()
        .map(|r| texts(&r, "tool"))
        .unwrap_or_default()
}

#[test]
fn a_model_calls_an_mcp_tool_over_stdio_when_a_rule_allows_it() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let (ws, server) = workspace(
        vec![
            Reply::tool(
                "mcp__everything__echo",
                json!({"message": "hello over stdio"}),
            )
            .into(),
            Reply::tool("mcp__everything__get-env", json!({})).into(),
            Reply::text("It echoed.").into(),
        ],
        &entry,
        ROOMY,
    );
    let out = run(
        &ws,
        &[
            "-p",
            "echo something",
            "--allowed-tools",
            "mcp__everything__echo,mcp__everything__get-env",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let requests = server.chat_requests();
    let tools = offered(&requests[0]);
    assert!(
        tools.iter().any(|t| t == "mcp__everything__echo"),
        "the first request offers the server's tools: {tools:?}"
    );
    assert!(tools.iter().any(|t| t == "Read"), "{tools:?}");
    let results = tool_results(&server);
    assert!(
        results.iter().any(|r| r.contains("Echo: hello over stdio")),
        "{results:?}\n{stderr}"
    );
    // The server's environment is scrubbed like a command's: no model key reaches it.
    let env = results
        .iter()
        .find(|r| r.contains("PATH"))
        .expect("get-env ran");
    assert!(!env.contains(support::TEST_KEY), "{env}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("It echoed."));
}

/// A server that offers resources brings Claude Code's two resource tools: the model lists
/// them (all servers', or one's) and reads one by its URI, without being asked (they only
/// read); a server that is not there, or a URI it does not have, is one error for the model.
#[test]
fn a_model_lists_and_reads_a_servers_resources() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let doc = "demo://resource/static/document/architecture.md";
    let (ws, server) = workspace(
        vec![
            Reply::tool("ListMcpResourcesTool", json!({})).into(),
            Reply::tool(
                "ReadMcpResourceTool",
                json!({"server": "everything", "uri": doc}),
            )
            .into(),
            Reply::tool("ListMcpResourcesTool", json!({"server": "nowhere"})).into(),
            Reply::tool(
                "ReadMcpResourceTool",
                json!({"server": "everything", "uri": "demo://no/such/thing"}),
            )
            .into(),
            Reply::text("Read it.").into(),
            Reply::text("No MCP here.").into(),
        ],
        &entry,
        ROOMY,
    );
    let out = run(&ws, &["-p", "what does the server document?"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let requests = server.chat_requests();
    // The server's instructions are in the system prompt from the first request on.
    let system = texts(&requests[0], "system").join("\n");
    assert!(
        system.contains("# MCP server instructions")
            && system.contains("## everything\n# Everything Server")
            && system.contains("Server instructions are working!"),
        "{system}"
    );
    let tools = offered(&requests[0]);
    for tool in ["ListMcpResourcesTool", "ReadMcpResourceTool"] {
        assert!(tools.iter().any(|t| t == tool), "{tool}: {tools:?}");
    }
    // Each request's last tool message is the newest call's result.
    let result = |i: usize| texts(&requests[i], "tool").pop().unwrap_or_default();
    let listed = result(1);
    assert!(
        listed.contains(&format!("\"uri\": \"{doc}\""))
            && listed.contains("\"server\": \"everything\"")
            && listed.contains("\"mimeType\": \"text/markdown\""),
        "{listed}"
    );
    let read = result(2);
    assert!(read.to_lowercase().contains("architecture"), "{read}");
    assert!(!read.contains("\"uri\""), "the document itself: {read}");
    let unknown = result(3);
    assert!(
        unknown.contains(
            "no MCP server named `nowhere` offers resources; servers with \
             resources: everything"
        ),
        "{unknown}"
    );
    let missing = result(4);
    assert!(missing.contains("demo://no/such/thing"), "{missing}");
    assert!(!stderr.contains("approval"), "{stderr}");

    // A run that may not use the server's tools is not told about them.
    let out = run(&ws, &["-p", "just read", "--tools", "Read"]);
    assert_eq!(out.status.code(), Some(0));
    let system = texts(&server.last_chat_request().unwrap(), "system").join("\n");
    assert!(!system.contains("MCP server instructions"), "{system}");
}

/// `-p "/mcp__SERVER__PROMPT args"` sends the server's prompt, filled in, as the task: the
/// server is waited for (it starts with the session), and an unknown prompt is one line.
#[test]
fn p_sends_a_servers_prompt_as_the_task() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let (ws, server) = workspace(vec![Reply::text("Sunny.").into()], &entry, "");
    let out = run(
        &ws,
        &["-p", "/mcp__everything__args-prompt Springfield Illinois"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Sunny."));
    let last = server.last_chat_request().unwrap();
    let asked = texts(&last, "user").join("\n");
    assert!(
        asked.contains("What's weather in Springfield, Illinois?"),
        "{asked}"
    );

    let out = run(&ws, &["-p", "/mcp__everything__no-such-prompt"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no MCP server offers the prompt `/mcp__everything__no-such-prompt`"),
        "{stderr}"
    );
}

/// A server whose tool list grows while the session runs (the official TypeScript SDK
/// announces it with `notifications/tools/list_changed`): the new tool is offered from the
/// next request on, and runs.
#[test]
fn a_tool_a_server_adds_later_is_offered_once_it_says_its_list_changed() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let (ws, server) = sdk_server(
        &entry,
        "dyn",
        "mcp-list-changed.mjs",
        vec![
            Step::from(Reply::tool("mcp__dyn__unlock", json!({}))),
            Reply::tool("mcp__dyn__secret", json!({})).into(),
            Reply::text("Done.").into(),
        ],
    );
    let out = run(&ws, &["-p", "unlock it", "--allowed-tools", "mcp__dyn__*"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 3, "{stderr}");
    assert!(!offered(&requests[0]).contains(&"mcp__dyn__secret".to_string()));
    assert!(
        offered(&requests[1]).contains(&"mcp__dyn__secret".to_string()),
        "{:?}",
        offered(&requests[1])
    );
    let results = tool_results(&server).join("\n");
    assert!(results.contains("swordfish"), "{results}\n{stderr}");
}

/// Servers are offered the workspace as their root (`roots/list`), as Claude Code offers
/// its project folder.
#[test]
fn a_server_is_told_the_workspace_is_its_root() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let (ws, server) = workspace(
        vec![
            Reply::tool("mcp__everything__get-roots-list", json!({})).into(),
            Reply::text("Done.").into(),
        ],
        &entry,
        ROOMY,
    );
    let out = run(
        &ws,
        &[
            "-p",
            "roots",
            "--allowed-tools",
            "mcp__everything__get-roots-list",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let results = tool_results(&server).join("\n");
    let root = std::fs::canonicalize(ws.root()).unwrap();
    assert!(
        results.contains(&format!("file://{}", root.display())),
        "{results}\n{stderr}"
    );
}

#[test]
fn p_denies_an_mcp_tool_no_rule_allows() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let (ws, server) = workspace(
        vec![
            Reply::tool("mcp__everything__get-sum", json!({"a": 2, "b": 3})).into(),
            Reply::text("Could not add.").into(),
        ],
        &entry,
        "",
    );
    let out = run(&ws, &["-p", "add two numbers"]);
    assert_eq!(out.status.code(), Some(0));
    let results = tool_results(&server).join("\n");
    assert!(
        results.contains("not run") && results.contains("approval"),
        "{results}"
    );
    assert!(
        !results.contains('5'),
        "the tool must not have run: {results}"
    );
}

#[test]
fn an_untrusted_projects_mcp_json_starts_nothing_until_trusted() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let server =
        ScriptedServer::start_background(Protocol::OpenAi, vec![Step::repeat(Reply::text("fine"))]);
    let ws = Workspace::new();
    write_config_with(ws.home(), Protocol::OpenAi, &server.url(), ROOMY);
    let marker = ws.root().join("started.txt");
    // The server writes a file when it starts (node runs the script, then the server).
    let script = format!(
        "require('fs').writeFileSync({:?}, 'x'); import({:?})",
        marker.display().to_string(),
        format!("file://{}", entry.display())
    );
    let mcp_json =
        json!({"mcpServers": {"repo": {"command": "node", "args": ["-e", script, "x", "stdio"]}}});
    ws.write(".mcp.json", &mcp_json.to_string());

    let out = run(&ws, &["-p", "hello"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("MCP server repo: runs `node -e"),
        "{stderr}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !marker.exists(),
        "an untrusted .mcp.json must start nothing"
    );
    assert!(
        !offered(&server.last_chat_request().unwrap())
            .iter()
            .any(|t| t.starts_with("mcp__"))
    );

    let trusted = run(&ws, &["trust", "--yes"]);
    assert_eq!(trusted.status.code(), Some(0), "{trusted:?}");
    let out = run(&ws, &["-p", "hello again"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(marker.exists(), "once trusted, the project's server starts");
    let tools = offered(&server.last_chat_request().unwrap());
    assert!(tools.iter().any(|t| t == "mcp__repo__echo"), "{tools:?}");
}

/// The pid of the server process whose environment holds `marker`.
fn server_pid(marker: &str) -> Option<u32> {
    let needle = format!("LINGGEN_TEST_MARKER={marker}");
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let environ = std::fs::read(entry.path().join("environ")).ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
            let is_node = argv0.ends_with(b"node");
            (is_node && environ.split(|b| *b == 0).any(|v| v == needle.as_bytes())).then_some(pid)
        })
}

#[test]
fn a_server_killed_mid_call_is_one_line_and_starts_again_on_the_next_call() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let marker = format!("{}-{}", std::process::id(), line!());
    let (ws, server) = workspace(
        vec![
            Reply::tool(
                "mcp__everything__trigger-long-running-operation",
                json!({"duration": 30, "steps": 3}),
            )
            .into(),
            Reply::tool("mcp__everything__echo", json!({"message": "back again"})).into(),
            Reply::text("Recovered.").into(),
        ],
        &entry,
        &format!("env = {{ LINGGEN_TEST_MARKER = {marker:?} }}\n"),
    );
    let child = ws
        .cmd()
        .args(["-p", "go", "--allowed-tools", "mcp__everything"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut pid = None;
    support::wait_until("the long call to start", Duration::from_secs(30), || {
        pid = server_pid(&marker);
        pid.is_some() && server.chat_requests().len() == 1
    });
    // Let the call reach the server, then kill the server under it.
    std::thread::sleep(Duration::from_millis(800));
    // SAFETY: kill only sends a signal to the server process found above.
    unsafe { libc::kill(pid.unwrap() as i32, libc::SIGKILL) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 3, "{stderr}");
    let first = texts(&requests[1], "tool").join("\n");
    assert!(
        first.contains("MCP server `everything` stopped"),
        "one line says what happened: {first}"
    );
    assert_eq!(first.lines().count(), 1, "{first}");
    let second = texts(&requests[2], "tool").join("\n");
    assert!(second.contains("Echo: back again"), "{second}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Recovered."));
    assert!(
        server_pid(&marker).is_none() || {
            std::thread::sleep(Duration::from_millis(500));
            server_pid(&marker).is_none()
        },
        "the restarted server ends with the session"
    );
}

/// A server whose answer is a line that does not end (80 MiB, then silence): linggen reads
/// no more than 64 MiB of it, the call fails with one line saying why, and the session goes
/// on. Before the limit, linggen kept all of it and waited for the rest.
#[test]
fn a_server_whose_answer_does_not_end_is_cut_off() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp-flood.py");
    let model = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Reply::tool("mcp__flood__flood", json!({}))),
            Reply::text("Went on.").into(),
        ],
    );
    let ws = Workspace::new();
    let config = format!(
        "[mcp_servers.flood]\ncommand = \"python3\"\nargs = [{:?}]\n",
        fixture.display().to_string()
    );
    write_config_with(ws.home(), Protocol::OpenAi, &model.url(), &config);
    let out = run(&ws, &["-p", "go", "--allowed-tools", "mcp__flood"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let result = tool_results(&model).join("\n");
    assert!(
        result.contains("MCP server `flood`: it sent a message over 64 MiB without ending it"),
        "{result}"
    );
    assert_eq!(result.lines().count(), 1, "{result}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Went on."));
}

/// A server that offers only the older HTTP+SSE transport: named `"type": "sse"` in
/// Claude Code's `~/.claude.json`, or given as a plain URL in linggen's table (streamable
/// HTTP is refused there, and linggen falls back).
#[test]
fn a_server_that_only_speaks_sse_is_reached_both_ways() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let (_sse, port) = support::mcp_http_server(&entry, "sse");
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Reply::tool(
                "mcp__old__echo",
                json!({"message": "typed sse"}),
            )),
            Reply::tool("mcp__plain__echo", json!({"message": "fell back"})).into(),
            Reply::text("Done.").into(),
        ],
    );
    let ws = Workspace::new();
    let config = format!("{ROOMY}[mcp_servers.plain]\nurl = \"http://127.0.0.1:{port}/sse\"\n");
    write_config_with(ws.home(), Protocol::OpenAi, &server.url(), &config);
    let claude = json!({"mcpServers": {"old": {"type": "sse", "url": format!("http://127.0.0.1:{port}/sse")}}});
    std::fs::write(ws.home().join(".claude.json"), claude.to_string()).unwrap();
    let out = run(
        &ws,
        &[
            "-p",
            "echo",
            "--allowed-tools",
            "mcp__old__echo,mcp__plain__echo",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let results = tool_results(&server).join("\n");
    assert!(results.contains("Echo: typed sse"), "{results}\n{stderr}");
    assert!(results.contains("Echo: fell back"), "{results}\n{stderr}");
}

#[test]
fn a_model_calls_an_mcp_tool_over_streamable_http() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let (http, port) = support::mcp_http_server(&entry, "streamableHttp");
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Reply::tool(
                "mcp__web__echo",
                json!({"message": "hello over http"}),
            )),
            Reply::text("Done.").into(),
        ],
    );
    let ws = Workspace::new();
    let config = format!("[mcp_servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\n");
    write_config_with(ws.home(), Protocol::OpenAi, &server.url(), &config);
    let out = run(&ws, &["-p", "echo", "--allowed-tools", "mcp__web__echo"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let results = tool_results(&server).join("\n");
    assert!(
        results.contains("Echo: hello over http"),
        "{results}\n{stderr}"
    );
    drop(http);
}

#[test]
fn a_small_window_gets_a_search_tool_instead_of_every_schema() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let (ws, server) = workspace(
        vec![
            Reply::tool("tool_search", json!({"query": "echo message"})).into(),
            Reply::tool("mcp__everything__echo", json!({"message": "found it"})).into(),
            Reply::text("Done.").into(),
        ],
        &entry,
        "[mcp]\neager_tools_chars = 400\n",
    );
    let out = run(
        &ws,
        &["-p", "echo", "--allowed-tools", "mcp__everything__echo"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let requests = server.chat_requests();
    let first = offered(&requests[0]);
    assert!(first.iter().any(|t| t == "tool_search"), "{first:?}");
    assert!(
        !first.iter().any(|t| t.starts_with("mcp__")),
        "no server schema in a small window: {first:?}"
    );
    let found = texts(&requests[1], "tool").join("\n");
    assert!(found.contains("mcp__everything__echo"), "{found}");
    let second = offered(&requests[1]);
    assert!(
        second.iter().any(|t| t == "mcp__everything__echo"),
        "{second:?}"
    );
    assert!(
        second.iter().filter(|t| t.starts_with("mcp__")).count() < 5,
        "only what was found is loaded: {second:?}"
    );
    let last = texts(&requests[2], "tool").join("\n");
    assert!(last.contains("Echo: found it"), "{last}");
}

/// A server with 100 tools and a small local model's window (8k tokens, the default
/// budget): none of the 100 schemas is sent; the model searches, and only what it found is
/// offered and called.
#[test]
fn a_hundred_tool_server_stays_out_of_a_small_window() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let (ws, server) = sdk_server(
        &entry,
        "many",
        "mcp-many-tools.mjs",
        vec![
            Step::from(Reply::tool(
                "tool_search",
                json!({"query": "create issue 20"}),
            )),
            Reply::tool(
                "mcp__many__create_issue_20",
                json!({"title": "Broken build"}),
            )
            .into(),
            Reply::text("Filed.").into(),
        ],
    );
    let out = run(&ws, &["-p", "file it", "--allowed-tools", "mcp__many__*"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let requests = server.chat_requests();
    let first = offered(&requests[0]);
    assert!(first.iter().any(|t| t == "tool_search"), "{first:?}");
    assert!(!first.iter().any(|t| t.starts_with("mcp__")), "{first:?}");
    let schemas = |r: &Value| r["tools"].to_string().len();
    let mcp_cost = schemas(&requests[1]) - schemas(&requests[0]);
    // Each schema is about 420 characters: the whole server would be 42,000.
    assert!(
        mcp_cost < 4_000,
        "what was found costs {mcp_cost} characters: at most 8 schemas, not the server's 100"
    );
    let second = offered(&requests[1]);
    assert!(
        second.iter().any(|t| t == "mcp__many__create_issue_20"),
        "{second:?}"
    );
    assert!(
        second.iter().filter(|t| t.starts_with("mcp__")).count() <= 8,
        "{second:?}"
    );
    let last = texts(&requests[2], "tool").join("\n");
    assert!(
        last.contains("create_issue_20 done: Broken build"),
        "{last}"
    );
}

/// In the shell, an MCP tool asks like any other call (its whole arguments shown, "always"
/// covering the tool by name), `/mcp` shows the server ready with its tools, and its
/// prompts are `/mcp__SERVER__PROMPT` commands.
#[test]
fn the_shell_asks_before_an_mcp_tool_and_mcp_lists_the_server() {
    use support::pty::{PROMPT, Repl};
    let Some(entry) = mcp_everything() else {
        return;
    };
    let (ws, server) = workspace(
        vec![
            Reply::tool(
                "mcp__everything__echo",
                json!({"message": "from the shell"}),
            )
            .into(),
            Reply::text("echo done").into(),
            Reply::text("no weather today").into(),
        ],
        &entry,
        ROOMY,
    );
    let mut repl = Repl::start(&ws, &[]);
    repl.line("echo please");
    repl.expect("mcp__everything__echo {\"message\":\"from the shell\"}");
    repl.expect("Yes, always this session: mcp__everything__echo");
    repl.expect("Esc denies");
    repl.send("1");
    repl.expect("echo done");
    repl.expect(PROMPT);
    let results = tool_results(&server).join("\n");
    assert!(results.contains("Echo: from the shell"), "{results}");
    repl.line("/mcp");
    repl.expect("everything  ready, 14 tools");
    repl.expect("tools: echo");
    // The server's prompts are commands: completed after `/`, filled from the words typed.
    repl.send("/mcp__everything__ar\t");
    repl.expect("/mcp__everything__args-prompt");
    repl.send("\x15");
    repl.line("/mcp__everything__args-prompt Springfield Illinois");
    let shown = repl.expect("no weather today");
    assert!(!shown.contains("unknown"), "{shown}");
    repl.expect(PROMPT);
    let last = server.last_chat_request().unwrap();
    let asked = texts(&last, "user")
        .pop()
        .unwrap_or_else(|| panic!("{last:#}"));
    assert!(
        asked.contains("What's weather in Springfield, Illinois?"),
        "{:#}",
        last["messages"]
    );
    repl.line("/quit");
}

/// The reference server's tool that answers with text, a 20×20 PNG, and more text.
const TINY_IMAGE: &str = "mcp__everything__get-tiny-image";

/// A workspace whose one model speaks `protocol` with `model_keys` in its `[[models]]`
/// entry, and the reference server as `everything`.
fn image_workspace(
    protocol: Protocol,
    script: Vec<Step>,
    entry: &Path,
    model_keys: &str,
) -> (Workspace, ScriptedServer) {
    let server = ScriptedServer::start_background(protocol, script);
    let ws = Workspace::new();
    configure_images(&ws, &server, entry, model_keys);
    (ws, server)
}

fn configure_images(ws: &Workspace, server: &ScriptedServer, entry: &Path, model_keys: &str) {
    let config = format!(
        "{model_keys}[mcp_servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n{ROOMY}",
        entry.display().to_string()
    );
    write_config_with(ws.home(), server.protocol(), &server.url(), &config);
}

/// The script of a model that asks for the image, then answers.
fn asks_for_the_image(answers: &[&str]) -> Vec<Step> {
    let mut script = vec![Step::from(Reply::tool(TINY_IMAGE, json!({})))];
    script.extend(answers.iter().map(|a| Step::from(Reply::text(*a))));
    script
}

fn run_image_tool(ws: &Workspace) {
    let out = run(
        ws,
        &["-p", "show me the logo", "--allowed-tools", TINY_IMAGE],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

/// The `tool_result` block of an Anthropic request.
fn anthropic_tool_result(request: &Value) -> Value {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result")
        .unwrap_or_else(|| panic!("no tool_result in {request:#}"))
}

/// Claude reads the image an MCP tool returned, in the tool's result, between the texts
/// that surround it; a session continued later sends it again.
#[test]
fn an_anthropic_model_is_sent_an_mcp_tools_image_and_again_after_continue() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let (ws, server) = image_workspace(
        Protocol::Anthropic,
        asks_for_the_image(&["The MCP logo.", "It was the MCP logo."]),
        &entry,
        "images = true\n",
    );
    run_image_tool(&ws);
    let requests = server.chat_requests();
    let result = anthropic_tool_result(&requests[1]);
    let content = result["content"].as_array().expect("text and image blocks");
    let text = content[0]["text"].as_str().unwrap_or_default();
    let (before, after) = text
        .split_once("\n[image image/png, ")
        .unwrap_or_else(|| panic!("the text names the image where it was: {text}"));
    assert_eq!(before, "Here's the image you requested:");
    assert!(
        after.ends_with(" KB]\nThe image above is the MCP logo."),
        "{text}"
    );
    assert_eq!(content[1]["type"], "image");
    assert_eq!(content[1]["source"]["type"], "base64");
    assert_eq!(content[1]["source"]["media_type"], "image/png");
    let data = content[1]["source"]["data"].as_str().unwrap();
    assert!(
        data.starts_with("iVBORw0KGgo") && data.len() > 1000,
        "{data}"
    );

    let out = run(&ws, &["-p", "--continue", "what was it?"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let resumed = anthropic_tool_result(&server.last_chat_request().unwrap());
    assert_eq!(resumed, result, "--continue sends the stored image again");
}

/// A local OpenAI-compatible server takes no images unless its entry says so: the model
/// reads a note saying how to send them; with `images = true` the image follows the tool
/// results as a user message with a data URL.
#[test]
fn a_local_openai_compatible_model_reads_a_note_unless_its_entry_says_images() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let mut script = asks_for_the_image(&["A note."]);
    script.extend(asks_for_the_image(&["A logo."]));
    let (ws, server) = image_workspace(Protocol::OpenAi, script, &entry, "");
    run_image_tool(&ws);
    let requests = server.chat_requests();
    let result = texts(&requests[1], "tool").join("\n");
    assert!(
        result.contains("[image image/png, ")
            && result.contains("1 image not shown: model `test` is set to take no images")
            && result.contains("`images = true`"),
        "{result}"
    );
    assert!(!requests[1].to_string().contains("image_url"));

    configure_images(&ws, &server, &entry, "images = true\n");
    run_image_tool(&ws);
    let request = server.last_chat_request().unwrap();
    let messages = request["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "user"],
        "{request:#}"
    );
    let tool = &messages[3];
    assert!(!tool["content"].as_str().unwrap().contains("not shown"));
    let parts = messages[4]["content"].as_array().unwrap();
    let call_id = tool["tool_call_id"].as_str().unwrap();
    assert_eq!(
        parts[0]["text"],
        format!("The images of the result of call {call_id} ({TINY_IMAGE}):")
    );
    let url = parts[1]["image_url"]["url"].as_str().unwrap();
    assert!(
        url.starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{url}"
    );
}

/// Ollama takes a message's images as bare base64 next to its text, when the entry says
/// the model reads them.
#[test]
fn an_ollama_model_with_images_gets_them_on_the_tool_message() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let (ws, server) = image_workspace(
        Protocol::Ollama,
        asks_for_the_image(&["A logo."]),
        &entry,
        "images = true\n",
    );
    run_image_tool(&ws);
    let request = server.last_chat_request().unwrap();
    let tool = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("{request:#}"));
    assert_eq!(tool["tool_name"], TINY_IMAGE);
    let images = tool["images"]
        .as_array()
        .expect("the tool message's images");
    assert_eq!(images.len(), 1);
    assert!(images[0].as_str().unwrap().starts_with("iVBORw0KGgo"));
}
