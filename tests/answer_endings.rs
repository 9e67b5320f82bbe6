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
