use super::*;
use crate::session::Decision;
use crate::shared_text::SharedText;

fn run_started(run_id: &str, parent: Option<&str>, agent: &str) -> Event {
    Event::RunStarted {
        run_id: run_id.into(),
        parent_id: parent.map(Into::into),
        agent_id: agent.into(),
        task: format!("task of {run_id}"),
    }
}

fn approval(id: &str, run_id: &str) -> Event {
    Event::ApprovalRequested {
        id: id.into(),
        run_id: run_id.into(),
        tool: "Bash".into(),
        summary: "Bash make".into(),
        display: "make".into(),
        reason: "runs a program".into(),
        diff: None,
        once_only: false,
        always: Vec::new(),
    }
}

fn token(run_id: &str, text: &str, thinking: bool, done: bool) -> Event {
    Event::Token {
        run_id: run_id.into(),
        agent_id: "ling".into(),
        token: text.into(),
        thinking,
        done,
    }
}

fn outcome(run_id: &str, status: OutcomeStatus) -> Event {
    Event::Outcome {
        run_id: run_id.into(),
        status,
        result: SharedText::default(),
        num_turns: 1,
        usage: Default::default(),
        duration_ms: 1,
    }
}

fn fold(events: &[Event]) -> SessionView {
    let mut view = SessionView::new("ling");
    for e in events {
        view.apply(e);
    }
    view
}

#[test]
fn settings_come_from_session_started_then_settings_updated() {
    let view = fold(&[
        Event::SessionStarted {
            version: 1,
            session_id: "s".into(),
            model: "local".into(),
            root: "/w".into(),
            agent_id: "ling".into(),
            permission_mode: PermissionMode::Default,
            tools: vec![],
            max_iters: 20,
            mode: TurnMode::Chat,
        },
        Event::SettingsUpdated {
            agent_id: "coder".into(),
            mode: TurnMode::Chat,
            model: "cloud".into(),
            permission_mode: PermissionMode::Plan,
            max_iters: 5,
        },
    ]);
    assert_eq!(
        view.settings,
        Settings {
            model: "cloud".into(),
            root: "/w".into(),
            agent_id: "coder".into(),
            mode: TurnMode::Chat,
            permission_mode: PermissionMode::Plan,
            max_iters: 5,
        }
    );
    assert_eq!(view.status, None);
    assert!(view.is_idle());
}

#[test]
fn busy_until_idle_and_queue_follows_its_updates() {
    let mut view = fold(&[
        Event::StateUpdated {
            status: SessionStatus::Running,
            agent_id: "ling".into(),
            mode: TurnMode::Talk,
        },
        Event::QueueUpdated {
            queued: vec!["next".into()],
        },
    ]);
    assert!(view.is_busy());
    assert_eq!(view.queue, ["next"]);
    view.apply(&Event::QueueUpdated { queued: vec![] });
    view.apply(&Event::StateUpdated {
        status: SessionStatus::Idle,
        agent_id: "ling".into(),
        mode: TurnMode::Talk,
    });
    assert!(view.is_idle());
    assert!(view.queue.is_empty());
}

#[test]
fn runs_keep_their_parent_and_end_with_their_outcome() {
    let view = fold(&[
        run_started("r1", None, "ling"),
        run_started("r2", Some("r1"), "coder"),
        Event::SubagentResult {
            parent_id: "r1".into(),
            subagent_id: "r2".into(),
            agent_id: "coder".into(),
            outcome: OutcomeStatus::MaxIters,
            result: SharedText::default(),
        },
        outcome("r1", OutcomeStatus::Completed),
    ]);
    let r2 = view.run("r2").unwrap();
    assert_eq!(r2.parent_id.as_deref(), Some("r1"));
    assert_eq!(r2.status, RunStatus::MaxIters);
    assert_eq!(r2.status.stored(), "failed");
    assert_eq!(view.run("r1").unwrap().status, RunStatus::Completed);
}

#[test]
fn an_approval_is_pending_until_answered_and_its_run_waits_meanwhile() {
    let mut view = fold(&[run_started("r1", None, "ling"), approval("a1", "r1")]);
    assert!(view.is_pending("a1"));
    assert!(!view.is_idle());
    assert_eq!(view.run("r1").unwrap().status, RunStatus::WaitingApproval);
    assert_eq!(RunStatus::WaitingApproval.stored(), "running");
    view.apply(&Event::ApprovalResolved {
        id: "a1".into(),
        decision: Decision::AllowOnce,
        by: "web".into(),
    });
    assert!(!view.is_pending("a1"));
    assert_eq!(view.run("r1").unwrap().status, RunStatus::Running);
}

#[test]
fn the_end_of_a_turn_drops_approvals_nobody_answered() {
    let view = fold(&[
        run_started("r1", None, "ling"),
        approval("a1", "r1"),
        outcome("r1", OutcomeStatus::Cancelled),
    ]);
    assert!(view.pending.is_empty());
    assert_eq!(view.run("r1").unwrap().status, RunStatus::Cancelled);
}

#[test]
fn streamed_text_gathers_per_run_until_done_or_the_message() {
    let tokens = [
        token("r1", "hm", true, false),
        token("r1", "Hel", false, false),
        token("r1", "lo", false, false),
        token("r2", "other", false, false),
    ];
    // Only a view that shows partial answers keeps them.
    assert!(fold(&tokens).streaming.is_empty());
    let mut view = SessionView::new("ling").keeping_streamed_text();
    for e in &tokens {
        view.apply(e);
    }
    let texts: Vec<_> = view
        .streaming
        .iter()
        .map(|s| (s.run_id.as_str(), s.thinking, s.text.as_str()))
        .collect();
    assert_eq!(
        texts,
        [
            ("r1", true, "hm"),
            ("r1", false, "Hello"),
            ("r2", false, "other")
        ]
    );
    view.apply(&token("r2", "", false, true));
    view.apply(&Event::message(
        "r1",
        "ling",
        "user",
        &crate::llm::ChatMessage::assistant("Hello", vec![]),
    ));
    assert!(view.streaming.is_empty());
}

/// A `ContextUsage` of `stage` for run `run_id`.
fn usage(run_id: &str, stage: ContextStage, used_tokens: u64) -> Event {
    Event::ContextUsage {
        run_id: run_id.into(),
        agent_id: "ling".into(),
        stage,
        message_count: 3,
        char_count: 4_000,
        estimated_tokens: 1_000,
        token_limit: Some(8192),
        compressed: false,
        summary_count: 0,
        breakdown: (stage == ContextStage::Request).then(|| crate::session::usage::Breakdown {
            history: 1_000,
            ..Default::default()
        }),
        used_tokens,
        input_tokens: 0,
        output_tokens: 0,
    }
}

#[test]
fn context_usage_keeps_the_last_count_and_the_last_requests_breakdown() {
    let view = fold(&[
        usage("r1", ContextStage::Request, 1_000),
        usage("r1", ContextStage::Response, 1_200),
    ]);
    let context = view.context.unwrap();
    assert_eq!(context.stage, ContextStage::Response);
    assert_eq!(context.used_tokens, 1_200);
    assert_eq!(context.token_limit, Some(8192));
    assert_eq!(context.breakdown.map(|b| b.history), Some(1_000));
}

#[test]
fn depth_follows_the_parents_and_a_delegated_runs_context_is_not_the_sessions() {
    let mut view = fold(&[
        run_started("r1", None, "ling"),
        run_started("r2", Some("r1"), "coder"),
        run_started("r3", Some("r2"), "reviewer"),
    ]);
    assert_eq!(
        ["r1", "r2", "r3", "unknown"].map(|r| view.depth(r)),
        [0, 1, 2, 0]
    );
    view.apply(&usage("r1", ContextStage::Response, 100));
    view.apply(&usage("r2", ContextStage::Response, 5000));
    assert_eq!(view.context.map(|c| c.used_tokens), Some(100));
}

#[test]
fn a_turn_runs_until_its_own_outcome_not_its_childs() {
    let mut view = fold(&[run_started("r1", None, "ling")]);
    assert!(view.turn_running());
    view.apply(&run_started("r2", Some("r1"), "coder"));
    view.apply(&Event::SubagentResult {
        parent_id: "r1".into(),
        subagent_id: "r2".into(),
        agent_id: "coder".into(),
        outcome: OutcomeStatus::Completed,
        result: SharedText::default(),
    });
    assert!(view.turn_running());
    view.apply(&outcome("r1", OutcomeStatus::Error));
    assert!(!view.turn_running());
}

#[test]
fn a_long_response_in_flight_keeps_its_end() {
    let mut view = SessionView::new("ling").keeping_streamed_text();
    let piece = "é".repeat(1000);
    let mut sent = 0;
    while sent <= 3 * super::STREAMED_TEXT_LIMIT {
        view.apply(&token("r1", &piece, false, false));
        sent += piece.len();
    }
    let s = &view.streaming[0];
    assert!(s.text.len() <= super::STREAMED_TEXT_LIMIT);
    assert!(s.text.len() >= super::STREAMED_TEXT_LIMIT / 2);
    assert_eq!(s.skipped_bytes + s.text.len(), sent);
    assert!(s.text.chars().all(|c| c == 'é'));
}

#[test]
fn one_piece_longer_than_the_limit_keeps_its_end() {
    let mut view = SessionView::new("ling").keeping_streamed_text();
    view.apply(&token("r1", "start ", false, false));
    let long = format!("{}end", "ü".repeat(super::STREAMED_TEXT_LIMIT));
    view.apply(&token("r1", &long, false, false));
    let s = &view.streaming[0];
    assert!(s.text.ends_with("end"));
    assert!(s.text.len() <= super::STREAMED_TEXT_LIMIT);
    assert_eq!(s.skipped_bytes + s.text.len(), "start ".len() + long.len());
}

/// The todo list is the last `TodosUpdated`'s, whole: an item the new list leaves out goes.
#[test]
fn the_todo_list_is_the_last_one_published() {
    use crate::tools::todo::{Todo, TodoStatus};
    let todo = |content: &str, status| Todo {
        content: content.into(),
        status,
        active_form: content.into(),
    };
    let view = fold(&[
        Event::TodosUpdated {
            todos: vec![
                todo("Read", TodoStatus::InProgress),
                todo("Test", TodoStatus::Pending),
            ],
        },
        Event::TodosUpdated {
            todos: vec![todo("Read", TodoStatus::Completed)],
        },
    ]);
    assert_eq!(view.todos, [todo("Read", TodoStatus::Completed)]);
}

fn response_usage(run_id: &str, stage: ContextStage, input: u64, output: u64) -> Event {
    Event::ContextUsage {
        run_id: run_id.into(),
        agent_id: "ling".into(),
        stage,
        message_count: 2,
        char_count: 10,
        estimated_tokens: 5,
        token_limit: None,
        compressed: false,
        summary_count: 0,
        breakdown: None,
        used_tokens: input + output,
        input_tokens: input,
        output_tokens: output,
    }
}

fn routed(run_id: &str, model: &str) -> Event {
    Event::ModelRouted {
        run_id: run_id.into(),
        model_id: model.into(),
        policy: "default".into(),
        complexity: crate::config::routing::Complexity::Low,
        reason: String::new(),
    }
}

#[test]
fn tokens_add_up_per_model_delegated_runs_included_requests_not() {
    let view = fold(&[
        run_started("r1", None, "ling"),
        routed("r1", "local"),
        response_usage("r1", ContextStage::Request, 0, 0),
        response_usage("r1", ContextStage::Response, 100, 20),
        run_started("r2", Some("r1"), "coder"),
        routed("r2", "cloud"),
        response_usage("r2", ContextStage::Response, 1_000, 300),
        routed("r1", "local"),
        response_usage("r1", ContextStage::Response, 150, 30),
    ]);
    let tokens: Vec<(&str, u64, u64, u32)> = view
        .tokens
        .iter()
        .map(|t| {
            (
                t.model_id.as_str(),
                t.input_tokens,
                t.output_tokens,
                t.calls,
            )
        })
        .collect();
    assert_eq!(tokens, [("local", 250, 50, 2), ("cloud", 1_000, 300, 1)]);
}
