//! What answers carry beyond their text, over the wire protocols: an ending that is odd
//! (cut off by the output limit, or empty) is said; `<think>` reasoning is shown as such;
//! a local llama.cpp server's context window is known from its `/props`.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::{Protocol, Reply, ScriptedServer, Step, Workspace, run};

fn answer(protocol: Protocol, reply: Reply) -> support::Run {
    let server = ScriptedServer::start_background(protocol, vec![Step::from(reply)]);
    let ws = Workspace::new();
    ws.configure(protocol, &server.url());
    run(&ws, &["-p", "tell me"])
}

#[test]
fn an_answer_cut_by_the_output_limit_says_so() {
    for protocol in Protocol::ALL {
        let r = answer(protocol, Reply::text("The first half of").truncated());
        assert!(
            r.stderr.contains("cut off at the model's output limit"),
            "{protocol:?}: {}",
            r.stderr
        );
        assert!(r.stdout.contains("The first half of"), "{}", r.stdout);
    }
}

/// llama.cpp ends an answer where its window runs out with the same `length` as an output
/// limit: when prompt and answer filled the window, the warning says so, and what helps.
#[test]
fn an_answer_cut_by_the_window_says_so() {
    let mut reply = Reply::text("It goes on and on").truncated();
    reply.usage = Some(support::Usage {
        input_tokens: 8_000,
        output_tokens: 192,
    });
    let r = answer(Protocol::OpenAi, reply);
    assert!(
        r.stderr
            .contains("cut off where the context window ran out (8192 of 8192 tokens)")
            && r.stderr.contains("/compact"),
        "{}",
        r.stderr
    );
}

#[test]
fn an_empty_answer_says_so() {
    for protocol in Protocol::ALL {
        let r = answer(protocol, Reply::text(""));
        assert!(
            r.stderr.contains("the model returned an empty answer"),
            "{protocol:?}: {}",
            r.stderr
        );
    }
}

/// A local llama.cpp server with no `context_window` configured: the window comes from its
/// `/props`, so the context line can say how full it is.
#[test]
fn a_local_llama_cpp_server_tells_its_context_window() {
    let server =
        ScriptedServer::start_background(Protocol::OpenAi, vec![Step::from(Reply::text("hi"))]);
    let ws = Workspace::new();
    let config = format!(
        "[[models]]\nid = \"local\"\nprovider = \"openai\"\nurl = \"{}\"\nmodel = \"scripted\"\napi_key_env = \"{}\"\n",
        server.url(),
        support::TEST_KEY_ENV
    );
    std::fs::write(ws.home().join("linggen-agent.toml"), config).unwrap();
    let r = run(&ws, &["-p", "--output-format", "stream-json", "hello"]);
    let usage = r
        .stdout
        .lines()
        .find(|l| l.contains("\"ContextUsage\""))
        .unwrap_or_else(|| panic!("no ContextUsage in {}", r.stdout));
    let event: serde_json::Value = serde_json::from_str(usage).unwrap();
    assert!(event["token_limit"].as_u64().unwrap_or(0) > 0, "{usage}");
}

/// `<think>…</think>` opening the content (local reasoning models without a reasoning
/// parser) is shown as reasoning, not as the answer, and does not stay in the answer.
#[test]
fn a_think_block_in_the_content_is_reasoning() {
    for protocol in [Protocol::OpenAi, Protocol::Ollama] {
        let reply =
            Reply::text("<think>\nweighing it up\n</think>\n\nThe answer is 4.").delta_bytes(3);
        let r = answer_json(protocol, reply);
        let result = r
            .stdout
            .lines()
            .rev()
            .find(|l| l.contains("\"type\":\"result\""))
            .unwrap_or_else(|| panic!("no result in {}", r.stdout));
        let result: serde_json::Value = serde_json::from_str(result).unwrap();
        assert_eq!(result["result"], "The answer is 4.", "{protocol:?}");
        let thinking: String = r
            .stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|e| e["type"] == "Token" && e["thinking"] == true)
            .filter_map(|e| e["token"].as_str().map(str::to_string))
            .collect();
        assert!(
            thinking.contains("weighing it up"),
            "{protocol:?}: {}",
            r.stdout
        );
    }
}

fn answer_json(protocol: Protocol, reply: Reply) -> support::Run {
    let server = ScriptedServer::start_background(protocol, vec![Step::from(reply)]);
    let ws = Workspace::new();
    ws.configure(protocol, &server.url());
    run(&ws, &["-p", "--output-format", "stream-json", "tell me"])
}
