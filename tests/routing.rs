//! Model routing through the real binary against scripted servers on loopback: policies
//! that choose per call, fallback that keeps a task alive, shared capacity, pools, and
//! Bedrock (SigV4-checked, binary event-stream framing).
// A failed unwrap in a test is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Fault, Protocol, Reply, ScriptedServer, Step, Workspace, bedrock, run};

/// A port nothing listens on: connecting to it is refused at once.
fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

/// A `[[models]]` entry for an OpenAI-compatible server.
fn model(id: &str, url: &str, extra: &str) -> String {
    format!(
        "[[models]]\nid = \"{id}\"\nprovider = \"openai\"\nmodel = \"m-{id}\"\nurl = \"{url}\"\ncontext_window = 32768\ntimeout_secs = 5\n{extra}\n"
    )
}

fn configure(ws: &Workspace, toml: &str) {
    std::fs::write(ws.home().join("linggen-agent.toml"), toml).unwrap();
}

fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn routed(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e["type"] == "ModelRouted")
        .map(|e| {
            (
                e["model_id"].as_str().unwrap_or_default().to_string(),
                e["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// One response that hands two tasks to `coder` at once.
fn two_delegations() -> Step {
    Reply::tools(["count a", "count b"].map(|task| {
        (
            "delegate_to_agent",
            json!({"target_agent_id": "coder", "task": task}),
        )
    }))
    .into()
}

/// A reply that streams slowly enough for another request to overlap it.
fn slow(text: &str) -> Reply {
    Reply::text(text).chunk_delay(Duration::from_millis(150))
}

/// A server whose model reads `a.txt` and then answers `answer` (two model calls), and a
/// workspace with that file.
fn read_then_answer(answer: &str) -> (ScriptedServer, Workspace) {
    let server = openai(vec![
        Reply::tool("Read", json!({"file_path": "a.txt"})).into(),
        Reply::text(answer).into(),
    ]);
    let ws = Workspace::new();
    ws.write("a.txt", "hello\n");
    (server, ws)
}

fn openai(script: Vec<Step>) -> ScriptedServer {
    ScriptedServer::start_background(Protocol::OpenAi, script)
}

#[test]
fn local_first_with_the_local_server_down_answers_from_the_cloud_and_warns() {
    let (cloud, ws) = read_then_answer("from the cloud");
    configure(
        &ws,
        &format!(
            "{}{}[routing]\ndefault_policy = \"local-first\"\n",
            model("qwen", &dead_url(), ""),
            model("cloud", &cloud.url(), "local = false")
        ),
    );
    let r = run(&ws, &["-p", "hi", "--output-format", "stream-json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("model `qwen` cannot be reached: Connection refused")
            && r.stderr.contains("falling back to `cloud`"),
        "{}",
        r.stderr
    );
    let events = events(&r.stdout);
    let routed = routed(&events);
    let ids: Vec<&str> = routed.iter().map(|(id, _)| id.as_str()).collect();
    // The first call tries qwen, then falls back; the second skips qwen (cooling down).
    assert_eq!(ids, ["qwen", "cloud", "cloud"], "{routed:?}");
    assert!(
        routed[0].1.starts_with("local-first: a local model"),
        "{routed:?}"
    );
    assert!(
        routed[1]
            .1
            .starts_with("fallback: `qwen` cannot be reached"),
        "{routed:?}"
    );
    assert!(
        routed[2]
            .1
            .starts_with("local-first: a cloud model (qwen cooling down after failing)"),
        "{routed:?}"
    );
    let result = events.iter().find(|e| e["type"] == "result").unwrap();
    assert_eq!(result["result"], "from the cloud");
    assert_eq!(cloud.chat_requests().len(), 2);
    assert_eq!(r.stderr.matches("falling back").count(), 1, "{}", r.stderr);
}

#[test]
fn a_policy_sends_a_short_prompt_local_and_a_long_one_to_the_cloud() {
    let local = openai(vec![Reply::text("local answer").into()]);
    let cloud =
        ScriptedServer::start_background(Protocol::Anthropic, vec![Reply::text("cloud answer")]);
    let ws = Workspace::new();
    configure(
        &ws,
        &format!(
            "{}[[models]]\nid = \"sonnet\"\nprovider = \"anthropic\"\nmodel = \"claude\"\nurl = \"{}\"\nlocal = false\n\n\
             [routing]\ndefault_policy = \"balanced\"\n\n[[routing.policies]]\nname = \"balanced\"\nrules = [\n\
             {{ model = \"qwen\", priority = 1, max_complexity = \"medium\" }},\n\
             {{ model = \"sonnet\", priority = 2 }},\n]\n",
            model("qwen", &local.url(), ""),
            cloud.url()
        ),
    );
    let short = run(
        &ws,
        &["-p", "what is 2+2?", "--output-format", "stream-json"],
    );
    assert_eq!(short.code, Some(0), "{}", short.stderr);
    let routed_short = routed(&events(&short.stdout));
    assert_eq!(routed_short[0].0, "qwen");
    assert!(
        routed_short[0]
            .1
            .contains("balanced: priority 1 admits low"),
        "{routed_short:?}"
    );
    // About 9,000 tokens: `high`, which qwen's rule does not admit.
    let long_prompt = format!(
        "summarise this: {}",
        "lorem ipsum dolor sit amet ".repeat(1400)
    );
    let long = run(&ws, &["-p", &long_prompt, "--output-format", "stream-json"]);
    assert_eq!(long.code, Some(0), "{}", long.stderr);
    let events = events(&long.stdout);
    let routed_long = routed(&events);
    assert_eq!(routed_long[0].0, "sonnet", "{routed_long:?}");
    let complexity = events.iter().find(|e| e["type"] == "ModelRouted").unwrap();
    assert_eq!(complexity["complexity"], "high");
    assert_eq!(complexity["policy"], "balanced");
    assert_eq!(local.chat_requests().len(), 1);
    assert_eq!(cloud.chat_requests().len(), 1);
    assert!(short.stdout.contains("local answer"));
    assert!(long.stdout.contains("cloud answer"));
}

#[test]
fn quota_server_errors_dropped_streams_and_context_rejections_fall_back() {
    let cases: Vec<(&str, Vec<Step>)> = vec![
        (
            "out of quota",
            vec![
                Fault::api_error(
                    429,
                    "You exceeded your current quota, please check your plan and billing details.",
                )
                .into(),
            ],
        ),
        (
            "HTTP 500",
            (0..4)
                .map(|_| Fault::api_error(500, "boom").into())
                .collect(),
        ),
        // Asked for once more first (see faults.rs), then left for the next model.
        (
            "broke off",
            vec![
                Fault::DisconnectMidStream.into(),
                Fault::DisconnectMidStream.into(),
            ],
        ),
        (
            "too long",
            vec![
                Fault::api_error(
                    400,
                    "the request exceeds the available context size, try increasing it",
                )
                .into(),
            ],
        ),
    ];
    for (what, script) in cases {
        let primary = openai(script);
        let backup = openai(vec![Reply::text("the backup answered").into()]);
        let ws = Workspace::new();
        configure(
            &ws,
            &format!(
                "{}{}[routing]\n",
                model("first", &primary.url(), ""),
                model("second", &backup.url(), "")
            ),
        );
        let r = run(&ws, &["-p", "hi"]);
        assert_eq!(r.code, Some(0), "{what}: {}", r.stderr);
        assert_eq!(r.stdout.trim_end(), "the backup answered", "{what}");
        assert!(
            r.stderr.contains("model `first`") && r.stderr.contains("falling back to `second`"),
            "{what}: {}",
            r.stderr
        );
        assert!(r.stderr.contains(what), "{what}: {}", r.stderr);
        primary.assert_script_consumed();
    }
}

#[test]
fn without_auto_fallback_the_error_stands() {
    let primary = openai(vec![
        Fault::api_error(429, "insufficient_quota: no credit").into(),
    ]);
    let backup = openai(vec![Reply::text("never").into()]);
    let ws = Workspace::new();
    configure(
        &ws,
        &format!(
            "{}{}[routing]\nauto_fallback = false\n",
            model("first", &primary.url(), ""),
            model("second", &backup.url(), "")
        ),
    );
    let r = run(&ws, &["-p", "hi"]);
    assert_ne!(r.code, Some(0));
    assert!(r.stderr.contains("HTTP 429"), "{}", r.stderr);
    assert!(!r.stderr.contains("falling back"), "{}", r.stderr);
    assert!(backup.chat_requests().is_empty());
}

/// Two delegations in one response run at once, unless `max_inflight` says the server
/// takes one request at a time; then they wait for each other (and say so).
#[test]
fn parallel_children_share_the_models_capacity() {
    for (limit, expected) in [(2, 2), (1, 1)] {
        let server = openai(vec![
            two_delegations(),
            slow("child one done").into(),
            slow("child two done").into(),
            Reply::text("both children answered").into(),
        ]);
        let ws = Workspace::new();
        configure(
            &ws,
            &model("test", &server.url(), &format!("max_inflight = {limit}")),
        );
        let r = run(&ws, &["-p", "count both", "--output-format", "stream-json"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert_eq!(
            server.max_concurrent_chats(),
            expected,
            "max_inflight = {limit}"
        );
        let events = events(&r.stdout);
        let waited = events.iter().any(|e| {
            e["type"] == "AgentStatus" && e["detail"].as_str() == Some("waiting for test")
        });
        assert_eq!(waited, limit == 1, "max_inflight = {limit}");
        let results: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "SubagentResult")
            .collect();
        assert_eq!(results.len(), 2);
        let last = server.last_chat_request().unwrap();
        let tool_results = support::texts(&last, "tool").join("\n");
        assert!(tool_results.contains("child one done"), "{tool_results}");
        assert!(tool_results.contains("child two done"), "{tool_results}");
    }
}

#[test]
fn a_pool_with_a_dead_member_still_answers() {
    let (live, ws) = read_then_answer("pooled answer");
    configure(
        &ws,
        &format!(
            "[[models]]\nid = \"qwen\"\nprovider = \"openai\"\nmodel = \"q\"\nurl = [\"{}\", \"{}\"]\ncontext_window = 8192\n",
            dead_url(),
            live.url()
        ),
    );
    let r = run(&ws, &["-p", "hi"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.trim_end(), "pooled answer");
    // Once: the dead member is skipped for the second call.
    assert_eq!(
        r.stderr.matches("trying its server").count(),
        1,
        "{}",
        r.stderr
    );
    assert_eq!(live.chat_requests().len(), 2);
}

fn bedrock_config(ws: &Workspace, server: &ScriptedServer) {
    configure(
        ws,
        &format!(
            "[[models]]\nid = \"claude\"\nprovider = \"bedrock\"\nmodel = \"{}\"\nregion = \"{}\"\nurl = \"{}\"\ncontext_window = 200000\n",
            bedrock::MODEL_ID,
            bedrock::REGION,
            server.origin()
        ),
    );
}

#[test]
fn bedrock_converse_stream_with_sigv4_and_tool_use() {
    let server = ScriptedServer::start_background(
        Protocol::Bedrock,
        vec![
            Reply::tool("Read", json!({"file_path": "notes.txt"})).into(),
            Step::from(Reply::text("The notes say hello.").with_reasoning("look first")),
        ],
    );
    let ws = Workspace::new();
    ws.write("notes.txt", "hello\n");
    bedrock_config(&ws, &server);
    let out = support::run_with_timeout(
        ws.cmd()
            .args(["-p", "what do the notes say?"])
            .env("AWS_ACCESS_KEY_ID", bedrock::ACCESS_KEY_ID)
            .env("AWS_SECRET_ACCESS_KEY", bedrock::SECRET_ACCESS_KEY)
            .env("AWS_SESSION_TOKEN", bedrock::SESSION_TOKEN),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        "The notes say hello."
    );
    // Both requests passed the server's signature check; the second carries the result.
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2);
    let second = &requests[1];
    let blocks = second["messages"][2]["content"][0]["toolResult"].clone();
    assert_eq!(blocks["status"], "success");
    assert!(
        blocks["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hello")
    );
    let tool_use = &second["messages"][1]["content"][0]["toolUse"];
    assert_eq!(tool_use["name"], "Read");
    assert_eq!(tool_use["input"], json!({"file_path": "notes.txt"}));
    assert!(second["toolConfig"]["tools"].is_array());
    for request in server.requests() {
        assert!(
            request
                .header("authorization")
                .unwrap()
                .starts_with("AWS4-HMAC-SHA256 Credential=AKIDSCRIPTEDTEST/")
        );
    }
}

#[test]
fn bedrock_with_a_bearer_key_or_a_profile_and_a_clear_error_without_credentials() {
    let server = ScriptedServer::start_background(
        Protocol::Bedrock,
        vec![Reply::text("bearer works"), Reply::text("profile works")],
    );
    let ws = Workspace::new();
    bedrock_config(&ws, &server);
    let out = support::run_with_timeout(
        ws.cmd()
            .args(["-p", "hi"])
            .env("AWS_BEARER_TOKEN_BEDROCK", bedrock::BEARER_KEY),
        Duration::from_secs(60),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        "bearer works"
    );
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {}", bedrock::BEARER_KEY).as_str())
    );

    // The shared credentials file under HOME, profile chosen by AWS_PROFILE.
    let aws = ws.home().join(".aws");
    std::fs::create_dir_all(&aws).unwrap();
    std::fs::write(
        aws.join("credentials"),
        format!(
            "[default]\naws_access_key_id = WRONG\naws_secret_access_key = wrong\n\n[work]\naws_access_key_id = {}\naws_secret_access_key = {}\naws_session_token = {}\n",
            bedrock::ACCESS_KEY_ID,
            bedrock::SECRET_ACCESS_KEY,
            bedrock::SESSION_TOKEN
        ),
    )
    .unwrap();
    let out = support::run_with_timeout(
        ws.cmd().args(["-p", "hi"]).env("AWS_PROFILE", "work"),
        Duration::from_secs(60),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        "profile works"
    );

    // No credentials anywhere: one line that says what to set.
    std::fs::remove_dir_all(&aws).unwrap();
    let r = run(&ws, &["-p", "hi"]);
    assert_ne!(r.code, Some(0));
    assert!(
        r.stderr.contains("no AWS credentials") && r.stderr.contains("AWS_BEARER_TOKEN_BEDROCK"),
        "{}",
        r.stderr
    );
    assert_eq!(server.chat_requests().len(), 2);
}

/// No `[[models]]`: what the environment offers is used, local first, and `linggen models`
/// lists it; with nothing at all, one line says what to set up.
#[test]
fn without_configuration_the_machines_models_are_found() {
    let server = openai(vec![Reply::text("found by myself").into()]);
    let ws = Workspace::new();
    let dead = dead_url();
    let ollama = dead.trim_end_matches("/v1").trim_start_matches("http://");
    let out = support::run_with_timeout(
        ws.cmd()
            .args(["-p", "hi", "--output-format", "stream-json"])
            .env("OLLAMA_HOST", ollama)
            .env("OPENAI_API_KEY", "sk-from-the-environment")
            .env("OPENAI_BASE_URL", server.url()),
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = events(&stdout);
    let routed = events.iter().find(|e| e["type"] == "ModelRouted").unwrap();
    assert_eq!(routed["model_id"], "openai");
    assert_eq!(routed["policy"], "local-first");
    let request = server.requests().into_iter().find(|r| r.is_chat()).unwrap();
    assert_eq!(
        request.header("authorization"),
        Some("Bearer sk-from-the-environment")
    );
    let listed = support::run_with_timeout(
        ws.cmd()
            .arg("models")
            .env("OLLAMA_HOST", ollama)
            .env("OPENAI_API_KEY", "sk-from-the-environment")
            .env("OPENAI_BASE_URL", server.url()),
        Duration::from_secs(60),
    );
    let listing = String::from_utf8_lossy(&listed.stdout);
    assert!(listing.contains("found on this machine"), "{listing}");
    assert!(
        listing.lines().any(|l| l.starts_with("openai ")),
        "{listing}"
    );

    let nothing = support::run_with_timeout(
        ws.cmd().args(["-p", "hi"]).env("OLLAMA_HOST", ollama),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&nothing.stderr);
    assert_ne!(nothing.status.code(), Some(0));
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no model found: start Ollama"), "{stderr}");
}

/// `when_busy = "next"`: a call that finds its model's only slot taken goes to the next
/// eligible model instead of waiting.
#[test]
fn a_busy_model_passes_the_call_on_when_the_policy_allows() {
    let a = openai(vec![
        two_delegations(),
        slow("a child answered on a").into(),
        Reply::text("both done").into(),
    ]);
    let b = openai(vec![slow("a child answered on b").into()]);
    let ws = Workspace::new();
    configure(
        &ws,
        &format!(
            "{}{}[routing]\nwhen_busy = \"next\"\n",
            model("a", &a.url(), "max_inflight = 1"),
            model("b", &b.url(), "")
        ),
    );
    let r = run(&ws, &["-p", "count both", "--output-format", "stream-json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(b.chat_requests().len(), 1);
    let routed = routed(&events(&r.stdout));
    assert!(
        routed
            .iter()
            .any(|(id, why)| id == "b" && why.starts_with("`a` is busy")),
        "{routed:?}"
    );
    a.assert_script_consumed();
}

/// A model that accepts the request and then says nothing for `timeout_secs` is left for
/// the next one.
#[test]
fn a_silent_model_times_out_and_falls_back() {
    let silent = openai(vec![Fault::Hang.into()]);
    let backup = openai(vec![Reply::text("the backup answered").into()]);
    let ws = Workspace::new();
    configure(
        &ws,
        &format!(
            "{}{}[routing]\n",
            model("first", &silent.url(), "timeout_secs = 1").replace("timeout_secs = 5\n", ""),
            model("second", &backup.url(), "")
        ),
    );
    let r = run(&ws, &["-p", "hi"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.trim_end(), "the backup answered");
    assert!(
        r.stderr.contains("model `first` sent nothing for 1 s")
            && r.stderr.contains("falling back to `second`"),
        "{}",
        r.stderr
    );
}

/// A pool shares the load: two calls at once go to its two servers, one each.
#[test]
fn a_pool_spreads_calls_over_its_servers() {
    let gpu1 = openai(vec![
        two_delegations(),
        slow("child done").into(),
        Reply::text("both done").into(),
    ]);
    let gpu2 = openai(vec![slow("child done").into()]);
    let ws = Workspace::new();
    configure(
        &ws,
        &format!(
            "[[models]]\nid = \"qwen\"\nprovider = \"openai\"\nmodel = \"q\"\nurl = [\"{}\", \"{}\"]\ncontext_window = 8192\n",
            gpu1.url(),
            gpu2.url()
        ),
    );
    let r = run(&ws, &["-p", "count both"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.trim_end(), "both done");
    assert_eq!(gpu1.chat_requests().len(), 3);
    assert_eq!(gpu2.chat_requests().len(), 1);
    assert_eq!(gpu1.max_concurrent_chats(), 1);
}
