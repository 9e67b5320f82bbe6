//! The session core without any frontend: approvals answered through the input queue,
//! first answer wins, cancellation, queued messages. The model is a scripted in-process
//! provider; the wire protocols are covered by the integration tests.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;

use super::*;
use crate::config::PermissionMode;
use crate::config::{ModelConfig, ProviderKind};
use crate::llm::routing::Model;
use crate::llm::{ChatRequest, EventSink, LlmError, Provider, StreamEvent, ToolCall};

/// One scripted response: events to stream, then either finish or hang (until dropped).
struct Scripted {
    events: Vec<StreamEvent>,
    hang: bool,
    /// Answer with a server's context rejection instead.
    too_long: bool,
}

#[derive(Default)]
struct FakeModel {
    script: Mutex<VecDeque<Scripted>>,
    requests: Mutex<Vec<Vec<ChatMessage>>>,
}

#[async_trait]
impl Provider for FakeModel {
    async fn chat(&self, request: ChatRequest<'_>, sink: EventSink<'_>) -> Result<(), LlmError> {
        self.requests
            .lock()
            .unwrap()
            .push(request.messages.to_vec());
        let next = self.script.lock().unwrap().pop_front();
        let Some(step) = next else {
            panic!("script exhausted");
        };
        if step.too_long {
            let message = "request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it";
            let kind = crate::llm::error::ErrorKind::Http {
                status: 400,
                message: message.into(),
                retry_after: None,
            };
            return Err(LlmError::new("fake", "http://127.0.0.1:1/fake", kind));
        }
        for event in step.events {
            sink(event);
        }
        if step.hang {
            std::future::pending::<()>().await;
        }
        Ok(())
    }

    fn describe(&self) -> String {
        "fake".into()
    }
}

fn reply(events: Vec<StreamEvent>) -> Scripted {
    Scripted {
        events,
        hang: false,
        too_long: false,
    }
}

fn call(id: &str, name: &str, args: serde_json::Value) -> StreamEvent {
    StreamEvent::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
    })
}

fn text(t: &str) -> StreamEvent {
    StreamEvent::Text(t.into())
}

struct Harness {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    model: Arc<FakeModel>,
    handle: SessionHandle,
    events: super::bus::Subscription,
}

fn start(script: Vec<Scripted>, interactive: bool) -> Harness {
    start_routed(script, interactive, None)
}

/// `second`, when given, is configured as model id `second` beside the session's `fake`.
fn start_routed(
    script: Vec<Scripted>,
    interactive: bool,
    second: Option<Arc<FakeModel>>,
) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let model = Arc::new(FakeModel::default());
    model.script.lock().unwrap().extend(script);
    let bus = EventBus::new();
    let events = bus.subscribe_lossless();
    let entry = |id: &str, provider: Arc<FakeModel>| {
        let url = format!("http://127.0.0.1:1/{id}");
        let config = ModelConfig {
            context_window: Some(8192),
            ..ModelConfig::new(id, ProviderKind::Openai, "m", &url)
        };
        let provider: Arc<dyn Provider> = provider;
        Model::new(config, vec![(url, provider)])
    };
    let mut models = vec![entry("fake", model.clone())];
    models.extend(second.map(|second| entry("second", second)));
    let setup = SessionSetup {
        session_id: "s".into(),
        agent_id: "ling".into(),
        models: Arc::new(Router::new(models, None, 0)),
        model: Choice::Auto,
        context_prompt: "system".into(),
        run_flags: Default::default(),
        memory: None,
        history: Vec::new(),
        tools: ToolContext::new(&root),
        permissions: Permissions::new(PermissionMode::Default, &[], &[]).unwrap(),
        max_iters: 10,
        interactive,
        agents: crate::skills::live::Live::new(crate::agents::AgentDirs {
            linggen_home: root.join(".home"),
            root: root.clone(),
        }),
        skills: crate::skills::live::Live::new(crate::skills::SkillDirs {
            linggen_home: root.join(".home"),
            root: root.clone(),
            user_home: None,
        }),
        max_delegation_depth: 2,
        compact_at: 0.75,
        curate: Default::default(),
        mode: None,
        auto: Default::default(),
        checkpoints: None,
        hooks: None,
        idle_notification: std::time::Duration::from_secs(60),
        cleared: false,
    };
    let handle = spawn(setup, bus);
    Harness {
        _dir: dir,
        root,
        model,
        handle,
        events,
    }
}

impl Harness {
    async fn say(&self, content: &str, from: &str) {
        self.handle
            .inputs
            .send(Input::message(content, from))
            .await
            .unwrap();
    }

    async fn send(&self, input: Input) {
        self.handle.inputs.send(input).await.unwrap();
    }

    /// Waits for the first event matching `pred`, returning it and everything before it.
    async fn until(&mut self, pred: impl Fn(&Event) -> bool) -> (Event, Vec<Event>) {
        let mut seen = Vec::new();
        loop {
            let envelope = tokio::time::timeout(Duration::from_secs(10), self.events.recv())
                .await
                .expect("event within 10 s")
                .expect("bus open");
            if pred(&envelope.event) {
                return (envelope.event.clone(), seen);
            }
            seen.push(envelope.event.clone());
        }
    }

    async fn approval_id(&mut self) -> String {
        match self
            .until(|e| matches!(e, Event::ApprovalRequested { .. }))
            .await
            .0
        {
            Event::ApprovalRequested { id, .. } => id,
            _ => unreachable!(),
        }
    }

    async fn outcome(&mut self) -> (OutcomeStatus, Vec<Event>) {
        let (event, seen) = self.until(|e| matches!(e, Event::Outcome { .. })).await;
        match event {
            Event::Outcome { status, .. } => (status, seen),
            _ => unreachable!(),
        }
    }

    fn last_tool_result(&self) -> String {
        let requests = self.model.requests.lock().unwrap();
        let last = requests.last().unwrap();
        last.iter()
            .rev()
            .find(|m| m.role == crate::llm::Role::Tool)
            .map(|m| m.content.to_string())
            .unwrap_or_default()
    }
}

fn write_call() -> Scripted {
    reply(vec![call(
        "c1",
        "Write",
        json!({"path": "x.txt", "content": "hi\n"}),
    )])
}

/// A command padded with blanks so that its tail falls past a cut-off one-line summary: the
/// approval still carries all of it, the blanks counted.
#[tokio::test]
async fn an_approval_shows_the_whole_command() {
    let command = format!("echo safe{}&& touch x", " ".repeat(300));
    let bash = reply(vec![call("c1", "Bash", json!({ "command": command }))]);
    let mut h = start(vec![bash, reply(vec![text("ok")])], true);
    h.say("run it", "terminal").await;
    let (request, _) = h
        .until(|e| matches!(e, Event::ApprovalRequested { .. }))
        .await;
    let Event::ApprovalRequested {
        id,
        display,
        summary,
        ..
    } = request
    else {
        unreachable!()
    };
    assert_eq!(display, "Bash: echo safe␠×300&& touch x");
    assert!(!summary.contains("touch"), "{summary}");
    h.send(Input::Approval {
        id,
        decision: Decision::Deny { reason: None },
        from: "terminal".into(),
    })
    .await;
    assert_eq!(h.outcome().await.0, OutcomeStatus::Completed);
    assert!(!h.root.join("x").exists());
}

#[tokio::test]
async fn approval_from_another_frontend_runs_the_call() {
    let mut h = start(vec![write_call(), reply(vec![text("done")])], true);
    h.say("write x", "terminal").await;
    let (request, _) = h
        .until(|e| matches!(e, Event::ApprovalRequested { .. }))
        .await;
    let Event::ApprovalRequested { id, diff, tool, .. } = request else {
        unreachable!()
    };
    assert_eq!(tool, "Write");
    assert!(diff.unwrap().contains("+hi"));
    h.send(Input::Approval {
        id,
        decision: Decision::AllowOnce,
        from: "web".into(),
    })
    .await;
    let (resolved, _) = h
        .until(|e| matches!(e, Event::ApprovalResolved { .. }))
        .await;
    assert!(
        matches!(resolved, Event::ApprovalResolved { by, decision: Decision::AllowOnce, .. } if by == "web")
    );
    assert_eq!(h.outcome().await.0, OutcomeStatus::Completed);
    assert_eq!(
        std::fs::read_to_string(h.root.join("x.txt")).unwrap(),
        "hi\n"
    );
}

#[tokio::test]
async fn denial_with_a_reason_reaches_the_model() {
    let mut h = start(vec![write_call(), reply(vec![text("ok")])], true);
    h.say("write x", "terminal").await;
    let id = h.approval_id().await;
    h.send(Input::Approval {
        id,
        decision: Decision::Deny {
            reason: Some("use y.txt instead".into()),
        },
        from: "terminal".into(),
    })
    .await;
    h.outcome().await;
    assert!(!h.root.join("x.txt").exists());
    let result = h.last_tool_result();
    assert!(result.contains("use y.txt instead"), "{result}");
}

/// Each sender hears from the session itself whether its answer was the one taken: the
/// frontends do no arbitration of their own.
#[tokio::test]
async fn each_answer_to_an_approval_hears_whether_it_won() {
    let mut h = start(vec![write_call(), reply(vec![text("ok")])], true);
    h.say("write x", "terminal").await;
    let id = h.approval_id().await;
    let answer = |from: &str, decision| Input::Approval {
        id: id.clone(),
        decision,
        from: from.into(),
    };
    let first = h.handle.inputs.ask(answer("web", Decision::AllowOnce));
    let second = h
        .handle
        .inputs
        .ask(answer("terminal", Decision::Deny { reason: None }));
    let (first, second) = tokio::join!(first, second);
    assert_eq!(first, Ok(Ok(())));
    let refused = second.unwrap().unwrap_err();
    assert!(
        refused.message.contains("answered first in the web"),
        "{refused}"
    );
    assert_eq!(refused.kind, crate::session::RefusalKind::Conflict);
    let (_, seen) = h.outcome().await;
    // The refusal went to its sender only, not to every view as an error.
    assert!(
        !seen.iter().any(|e| matches!(e, Event::Error { .. })),
        "{seen:#?}"
    );
    assert!(h.root.join("x.txt").exists());
    let unknown = h
        .handle
        .inputs
        .ask(answer("web", Decision::AllowOnce))
        .await;
    assert!(unknown.unwrap().is_err());
}

#[tokio::test]
async fn first_answer_wins() {
    let mut h = start(vec![write_call(), reply(vec![text("ok")])], true);
    h.say("write x", "terminal").await;
    let id = h.approval_id().await;
    h.send(Input::Approval {
        id: id.clone(),
        decision: Decision::Deny { reason: None },
        from: "terminal".into(),
    })
    .await;
    h.send(Input::Approval {
        id,
        decision: Decision::AllowOnce,
        from: "web".into(),
    })
    .await;
    let (_, seen) = h.outcome().await;
    let resolved: Vec<&Event> = seen
        .iter()
        .filter(|e| matches!(e, Event::ApprovalResolved { .. }))
        .collect();
    assert_eq!(resolved.len(), 1);
    assert!(matches!(resolved[0], Event::ApprovalResolved { by, .. } if by == "terminal"));
    assert!(!h.root.join("x.txt").exists());
}

#[tokio::test]
async fn always_for_this_session_stops_asking() {
    let second = reply(vec![call(
        "c2",
        "Write",
        json!({"path": "x.txt", "content": "again\n"}),
    )]);
    let mut h = start(vec![write_call(), second, reply(vec![text("ok")])], true);
    h.say("write twice", "terminal").await;
    let id = h.approval_id().await;
    h.send(Input::Approval {
        id,
        decision: Decision::AllowSession,
        from: "terminal".into(),
    })
    .await;
    let (_, seen) = h.outcome().await;
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e, Event::ApprovalRequested { .. })),
        "asked twice"
    );
    assert_eq!(
        std::fs::read_to_string(h.root.join("x.txt")).unwrap(),
        "again\n"
    );
}

#[tokio::test]
async fn cancel_while_waiting_for_approval() {
    let mut h = start(vec![write_call()], true);
    h.say("write x", "terminal").await;
    h.approval_id().await;
    h.send(Input::Cancel).await;
    assert_eq!(h.outcome().await.0, OutcomeStatus::Cancelled);
    assert!(!h.root.join("x.txt").exists());
}

#[tokio::test]
async fn cancel_mid_stream_keeps_the_partial_answer_marked() {
    let hanging = Scripted {
        events: vec![text("Half an ans")],
        hang: true,
        too_long: false,
    };
    let mut h = start(vec![hanging, reply(vec![text("next")])], true);
    h.say("long task", "terminal").await;
    h.until(|e| matches!(e, Event::Token { token, .. } if token.contains("Half")))
        .await;
    h.send(Input::Cancel).await;
    let (status, seen) = h.outcome().await;
    assert_eq!(status, OutcomeStatus::Cancelled);
    assert!(seen.iter().any(|e| matches!(e,
        Event::Message { role: crate::llm::Role::Assistant, content, .. }
            if content == "Half an ans\n\n[cancelled]")));
    // The session goes on: the next message sees the kept partial answer.
    h.say("continue", "terminal").await;
    assert_eq!(h.outcome().await.0, OutcomeStatus::Completed);
    let requests = h.model.requests.lock().unwrap();
    assert!(
        requests[1]
            .iter()
            .any(|m| m.content.ends_with("[cancelled]"))
    );
}

#[tokio::test]
async fn messages_sent_while_busy_are_queued_in_order() {
    let hanging = Scripted {
        events: vec![text("working")],
        hang: true,
        too_long: false,
    };
    let mut h = start(
        vec![
            hanging,
            reply(vec![text("second")]),
            reply(vec![text("third")]),
        ],
        true,
    );
    h.say("first", "terminal").await;
    h.until(|e| matches!(e, Event::Token { .. })).await;
    h.say("second", "web").await;
    h.say("third", "terminal").await;
    let (queued, _) = h
        .until(|e| matches!(e, Event::QueueUpdated { queued } if queued.len() == 2))
        .await;
    assert_eq!(
        queued,
        Event::QueueUpdated {
            queued: vec!["second".into(), "third".into()]
        }
    );
    h.send(Input::Cancel).await;
    assert_eq!(h.outcome().await.0, OutcomeStatus::Cancelled);
    let (_, seen) = h.outcome().await;
    assert!(seen.iter().any(|e| matches!(e, Event::Message { from, content, .. } if from == "web" && content == "second")));
    assert_eq!(h.outcome().await.0, OutcomeStatus::Completed);
    let requests = h.model.requests.lock().unwrap();
    assert_eq!(requests.len(), 3);
    h.handle.inputs.try_send(Input::Shutdown).ok();
}

#[tokio::test]
async fn without_a_person_approval_is_denied_at_once() {
    let mut h = start(vec![write_call(), reply(vec![text("ok")])], false);
    h.say("write x", "cli").await;
    let (status, seen) = h.outcome().await;
    assert_eq!(status, OutcomeStatus::Completed);
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e, Event::ApprovalRequested { .. }))
    );
    assert!(h.last_tool_result().contains("nobody can approve"));
}

async fn settings_answer(h: &mut Harness) -> Event {
    h.until(|e| matches!(e, Event::SettingsUpdated { .. } | Event::Error { .. }))
        .await
        .0
}

/// Model, max_iters and permission mode change without a new session, also while a turn
/// runs: a turn waiting for an approval finishes as it started, the next turn uses the new
/// settings and still has the conversation; a refused change says why and changes nothing.
#[tokio::test]
async fn settings_change_for_the_next_turn_without_a_restart() {
    let second = Arc::new(FakeModel::default());
    second.script.lock().unwrap().push_back(write_call());
    let first_script = vec![write_call(), reply(vec![text("done")])];
    let mut h = start_routed(first_script, true, Some(second.clone()));
    h.say("write x", "terminal").await;
    let id = h.approval_id().await;

    h.send(Input::SetModel {
        model: "second".into(),
    })
    .await;
    let answer = settings_answer(&mut h).await;
    assert!(
        matches!(&answer, Event::SettingsUpdated { model, max_iters: 10, .. } if model.starts_with("second (")),
        "{answer:?}"
    );
    h.send(Input::SetMaxIters { max_iters: 1 }).await;
    let answer = settings_answer(&mut h).await;
    assert!(
        matches!(&answer, Event::SettingsUpdated { max_iters: 1, .. }),
        "{answer:?}"
    );
    h.send(Input::SetModel {
        model: "nope".into(),
    })
    .await;
    let answer = settings_answer(&mut h).await;
    assert!(
        matches!(&answer, Event::Error { message } if message.contains("`nope`") && message.contains("models: fake, second")),
        "{answer:?}"
    );
    // Accepted now, for the next turn: the waiting one keeps the mode it started with.
    h.send(Input::SetPermissionMode {
        mode: PermissionMode::Bypass,
    })
    .await;
    let answer = settings_answer(&mut h).await;
    assert!(
        matches!(
            &answer,
            Event::SettingsUpdated {
                permission_mode: PermissionMode::Bypass,
                ..
            }
        ),
        "{answer:?}"
    );
    h.send(Input::SetMaxIters { max_iters: 0 }).await;
    assert!(matches!(settings_answer(&mut h).await, Event::Error { .. }));
    // A turn runs as one agent: every frontend hears the same refusal.
    h.send(Input::SetAgent {
        agent: "ling".into(),
    })
    .await;
    let answer = settings_answer(&mut h).await;
    assert!(
        matches!(&answer, Event::Error { message } if message == "the agent can change when this turn ends"),
        "{answer:?}"
    );

    // The waiting turn is unaffected: same model, same limit, the approval still counts.
    h.send(Input::Approval {
        id,
        decision: Decision::AllowOnce,
        from: "terminal".into(),
    })
    .await;
    assert_eq!(h.outcome().await.0, OutcomeStatus::Completed);
    assert_eq!(h.model.requests.lock().unwrap().len(), 2);
    assert!(second.requests.lock().unwrap().is_empty());
    std::fs::remove_file(h.root.join("x.txt")).unwrap();

    h.say("write x again", "terminal").await;
    let (status, seen) = h.outcome().await;
    // One model call (max_iters 1), its write run without asking (bypass).
    assert_eq!(status, OutcomeStatus::MaxIters);
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e, Event::ApprovalRequested { .. })),
        "bypass asked"
    );
    assert!(h.root.join("x.txt").exists());
    let asked = second.requests.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].iter().any(|m| m.content == "write x"),
        "the conversation was lost: {:?}",
        asked[0]
    );
    assert_eq!(h.model.requests.lock().unwrap().len(), 2);
}

/// A lossless reader that stops reading (a `-p` pipe nobody drains) neither stops the
/// session nor makes its queue hold every piece; what it holds still has all the text.
#[tokio::test]
async fn a_stalled_reader_does_not_stop_the_session() {
    const TURNS: usize = 3;
    let pieces: Vec<StreamEvent> = (0..2000).map(|i| text(&format!("{i} "))).collect();
    let answer: String = (0..2000).map(|i| format!("{i} ")).collect();
    let mut h = start((0..TURNS).map(|_| reply(pieces.clone())).collect(), false);
    let mut stalled = h.handle.bus.subscribe_lossless();
    for _ in 0..TURNS {
        h.say("go", "terminal").await;
        assert_eq!(h.outcome().await.0, OutcomeStatus::Completed);
    }
    assert!(
        stalled.waiting() <= bus::COALESCE_AFTER + 64,
        "{}",
        stalled.waiting()
    );
    let mut streamed = String::new();
    while let Some(envelope) = stalled.try_recv() {
        if let Event::Token {
            token,
            thinking: false,
            ..
        } = &envelope.event
        {
            streamed.push_str(token);
        }
    }
    assert_eq!(streamed, answer.repeat(TURNS));
}

/// A summary request the server rejects as too long (the estimate did not know the
/// tokenizer yet) is halved, and each half summarised: `/compact` still compacts.
#[tokio::test]
async fn a_summary_piece_the_server_rejects_is_halved() {
    let turn = |n: u32| format!("turn {n}: {}", "word ".repeat(800));
    let mut h = start(
        vec![
            reply(vec![text("one")]),
            reply(vec![text("two")]),
            reply(vec![text("three")]),
            Scripted {
                events: Vec::new(),
                hang: false,
                too_long: true,
            },
            reply(vec![text("FIRST HALF")]),
            reply(vec![text("SECOND HALF")]),
            reply(vec![text("TAIL")]),
        ],
        true,
    );
    for n in 1..=3 {
        h.say(&turn(n), "terminal").await;
        h.outcome().await;
    }
    let mut compact = UserMessage::new("/compact", "terminal");
    compact.compact = Some(String::new());
    h.send(Input::UserMessage(compact)).await;
    let (event, _) = h.until(|e| matches!(e, Event::Compacted { .. })).await;
    let Event::Compacted { history, .. } = event else {
        unreachable!()
    };
    let summary = &history[0].content;
    assert!(
        summary.contains("FIRST HALF") && summary.contains("SECOND HALF"),
        "{summary}"
    );
    let requests = h.model.requests.lock().unwrap();
    // The rejected piece, then its parts (the halves are cut at line ends, so the short
    // transcript tail may come as a part of its own), each at most half of it.
    let asked: Vec<usize> = requests[3..].iter().map(|r| r[1].content.len()).collect();
    assert!(asked.len() >= 3, "{asked:?}");
    assert!(
        asked[1..].iter().all(|&n| n <= asked[0] / 2 + 100),
        "{asked:?}"
    );
    assert!(
        requests[4..]
            .iter()
            .any(|r| r[1].content.contains("turn 1:"))
    );
}
