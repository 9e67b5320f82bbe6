//! Answers that end oddly say so: one cut off by the model's output limit, or one with
//! neither text nor a tool call, over every wire protocol.

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
    assert!(event["context_window"].as_u64().unwrap_or(0) > 0, "{usage}");
}
