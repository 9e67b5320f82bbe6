use super::*;
use crate::config::PermissionMode;
use crate::config::routing::Complexity;
use crate::llm::{Image, ImageFormat};
use crate::session::input::TurnMode;
use crate::session::usage::Breakdown;

/// One event of every type, with every optional field set (and a few left out), so that
/// a type or field that cannot be read back fails here rather than in an attached terminal.
fn one_of_each() -> Vec<Event> {
    let run = || "r1".to_string();
    let events = vec![
        Event::SessionStarted {
            version: EVENT_VERSION,
            session_id: "s1".into(),
            model: "test (scripted)".into(),
            root: "/home/me/proj".into(),
            agent_id: "ling".into(),
            permission_mode: PermissionMode::AcceptEdits,
            tools: vec!["Read".into(), "Bash".into()],
            max_iters: 40,
            mode: TurnMode::Auto,
        },
        Event::SettingsUpdated {
            agent_id: "coder".into(),
            mode: TurnMode::Talk,
            model: "m".into(),
            permission_mode: PermissionMode::Plan,
            max_iters: 3,
        },
        Event::StateUpdated {
            status: SessionStatus::Running,
            agent_id: "ling".into(),
            mode: TurnMode::Chat,
        },
        Event::RunStarted {
            run_id: run(),
            parent_id: None,
            agent_id: "ling".into(),
            task: "list the files".into(),
        },
        Event::RunStarted {
            run_id: "r2".into(),
            parent_id: Some(run()),
            agent_id: "coder".into(),
            task: "fix it".into(),
        },
        Event::Message {
            run_id: run(),
            from: "cli".into(),
            to: "ling".into(),
            role: Role::User,
            content: "look".into(),
            tool_calls: vec![],
            tool_call_id: None,
            tool_name: None,
            is_error: false,
            images: vec![],
        },
        Event::Message {
            run_id: run(),
            from: "ling".into(),
            to: "user".into(),
            role: Role::Assistant,
            content: "".into(),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "Glob".into(),
                arguments: serde_json::json!({"globs": ["*"]}),
            }],
            tool_call_id: None,
            tool_name: None,
            is_error: false,
            images: vec![],
        },
        Event::Message {
            run_id: run(),
            from: "Bash".into(),
            to: "ling".into(),
            role: Role::Tool,
            content: "no such file".into(),
            tool_calls: vec![],
            tool_call_id: Some("c1".into()),
            tool_name: Some("Bash".into()),
            is_error: true,
            images: vec![],
        },
        Event::Token {
            run_id: run(),
            agent_id: "ling".into(),
            token: "Hel".into(),
            thinking: true,
            done: false,
        },
        Event::ToolCallStarted {
            run_id: run(),
            call_id: "c1".into(),
            tool: "Read".into(),
            args: serde_json::json!({"path": "src/main.rs", "limit": 120}),
            summary: "Read src/main.rs (1-120)".into(),
        },
        Event::ToolCallFinished {
            run_id: run(),
            call_id: "c1".into(),
            tool: "Edit".into(),
            ok: true,
            summary: "1 line changed".into(),
            diff: Some("--- a\n+++ b\n@@ -1 +1 @@\n-a\n+b\n".into()),
            excerpt: None,
        },
        Event::ToolCallFinished {
            run_id: run(),
            call_id: "c2".into(),
            tool: "Bash".into(),
            ok: false,
            summary: "exit 1".into(),
            diff: None,
            excerpt: Some("error: nope".into()),
        },
        Event::ApprovalRequested {
            id: "a1".into(),
            run_id: run(),
            tool: "Bash".into(),
            summary: "Bash cargo test".into(),
            display: "cargo test".into(),
            reason: "runs a program".into(),
            diff: Some("+x".into()),
            once_only: false,
            always: vec!["Bash(cargo*)".into()],
        },
        Event::ApprovalResolved {
            id: "a1".into(),
            decision: Decision::AllowSession,
            by: "web".into(),
        },
        Event::ApprovalResolved {
            id: "a2".into(),
            decision: Decision::Deny {
                reason: Some("not now".into()),
            },
            by: "terminal".into(),
        },
        Event::ApprovalResolved {
            id: "a3".into(),
            decision: Decision::Deny { reason: None },
            by: "policy".into(),
        },
        Event::ContextUsage {
            run_id: run(),
            agent_id: "ling".into(),
            stage: ContextStage::Request,
            message_count: 2,
            char_count: 5258,
            estimated_tokens: 1316,
            token_limit: Some(8192),
            compressed: false,
            summary_count: 0,
            breakdown: Some(Breakdown {
                system_prompt: 250,
                project_docs: 1,
                memory: 2,
                tools: 857,
                skills_catalog: 205,
                history: 4,
                tool_results: 5,
            }),
            used_tokens: 1316,
            input_tokens: 0,
            output_tokens: 0,
        },
        Event::ContextUsage {
            run_id: run(),
            agent_id: "ling".into(),
            stage: ContextStage::Response,
            message_count: 2,
            char_count: 913,
            estimated_tokens: 1450,
            token_limit: None,
            compressed: true,
            summary_count: 1,
            breakdown: None,
            used_tokens: 1454,
            input_tokens: 1450,
            output_tokens: 4,
        },
        Event::ModelRouted {
            run_id: run(),
            model_id: "test".into(),
            policy: "default".into(),
            complexity: Complexity::Medium,
            reason: "the default model".into(),
        },
        Event::Compacted {
            run_id: run(),
            before_tokens: 9000,
            after_tokens: 1200,
            history: vec![],
        },
        Event::AgentStatus {
            run_id: run(),
            agent_id: "ling".into(),
            status: AgentState::RunningTool,
            detail: Some("Glob *".into()),
        },
        Event::AgentStatus {
            run_id: run(),
            agent_id: "ling".into(),
            status: AgentState::WaitingApproval,
            detail: None,
        },
        Event::CheckpointCreated {
            checkpoint_id: "k1".into(),
            run_id: run(),
            prompt: "fix it".into(),
            step: 0,
            commit: "abc123".into(),
        },
        Event::CheckpointClosed {
            run_id: run(),
            commit: "def456".into(),
        },
        Event::ChangeReport {
            run_id: run(),
            agent_id: "ling".into(),
            files: vec!["src/main.rs".into()],
            truncated_count: 0,
        },
        Event::QueueUpdated {
            queued: vec!["next".into()],
        },
        Event::Retrying {
            run_id: run(),
            model_id: "qwen".into(),
            attempt: 2,
            max_attempts: 4,
            delay_ms: 500,
            reason: "429 rate limited".into(),
        },
        Event::TodosUpdated {
            todos: vec![crate::tools::todo::Todo {
                content: "Run the tests".into(),
                status: crate::tools::todo::TodoStatus::InProgress,
                active_form: "Running the tests".into(),
            }],
        },
        Event::TaskUpdated {
            task: crate::tools::background::TaskInfo {
                id: "bash_1".into(),
                command: "npm run dev".into(),
                state: crate::tools::background::TaskState::Exited,
                exit_code: Some(1),
                signal: None,
                stopped_by: None,
                started_at_ms: 1_764_000_000_000,
                ended_at_ms: Some(1_764_000_003_000),
                total_bytes: 24,
                lines: 2,
                tail: vec!["ready on :3000".into(), "error: port taken".into()],
            },
        },
        Event::SubagentSpawned {
            parent_id: run(),
            subagent_id: "r2".into(),
            agent_id: "coder".into(),
            task: "fix it".into(),
            background: true,
        },
        Event::SubagentResult {
            parent_id: run(),
            subagent_id: "r2".into(),
            agent_id: "coder".into(),
            outcome: OutcomeStatus::MaxIters,
            result: "gave up".into(),
        },
        Event::Outcome {
            run_id: run(),
            status: OutcomeStatus::Completed,
            result: "done".into(),
            num_turns: 2,
            usage: crate::llm::Usage {
                input_tokens: 2966,
                output_tokens: 20,
                generation_ms: 7,
            },
            duration_ms: 12,
        },
        Event::Error {
            message: "the model is unreachable".into(),
        },
        Event::Warning {
            message: "a skill was skipped".into(),
        },
        Event::Notification {
            source: "schedule".into(),
            message: "schedule 3f2a91c0: completed: all tests pass".into(),
            session_id: Some("s2".into()),
        },
        Event::HookRan {
            run_id: None,
            event: "SessionStart".into(),
            command: "./hook.sh".into(),
            file: ".claude/settings.json".into(),
            result: "exit 0".into(),
            ok: true,
            duration_ms: 3,
        },
    ];
    // Every type is here: adding one to `Event` fails to compile until it is added above.
    for event in &events {
        match event {
            Event::SessionStarted { .. }
            | Event::SettingsUpdated { .. }
            | Event::StateUpdated { .. }
            | Event::RunStarted { .. }
            | Event::Message { .. }
            | Event::Token { .. }
            | Event::ToolCallStarted { .. }
            | Event::ToolCallFinished { .. }
            | Event::ApprovalRequested { .. }
            | Event::ApprovalResolved { .. }
            | Event::ContextUsage { .. }
            | Event::ModelRouted { .. }
            | Event::Compacted { .. }
            | Event::AgentStatus { .. }
            | Event::CheckpointCreated { .. }
            | Event::CheckpointClosed { .. }
            | Event::ChangeReport { .. }
            | Event::QueueUpdated { .. }
            | Event::Retrying { .. }
            | Event::TodosUpdated { .. }
            | Event::TaskUpdated { .. }
            | Event::SubagentSpawned { .. }
            | Event::SubagentResult { .. }
            | Event::Outcome { .. }
            | Event::Error { .. }
            | Event::Warning { .. }
            | Event::Notification { .. }
            | Event::HookRan { .. } => {}
        }
    }
    events
}

#[test]
fn every_event_reads_back_as_it_was_published() {
    for event in one_of_each() {
        let json = serde_json::to_string(&event).unwrap();
        let back: Event =
            serde_json::from_str(&json).unwrap_or_else(|e| panic!("cannot read back {json}: {e}"));
        assert_eq!(back, event, "{json}");
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
    }
}

#[test]
fn published_images_read_back_as_none_and_the_rest_of_the_message_intact() {
    let image = Image {
        format: ImageFormat::Png,
        data: "iVBORw0KGgo=".into(),
    };
    let event = Event::Message {
        run_id: "r1".into(),
        from: "cli".into(),
        to: "ling".into(),
        role: Role::User,
        content: "what is this?".into(),
        tool_calls: vec![],
        tool_call_id: None,
        tool_name: None,
        is_error: false,
        images: vec![image],
    };
    let json = serde_json::to_value(&event).unwrap();
    let id = json["images"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(id.len(), 16, "an id names the image: {json}");
    assert_eq!(
        json["images"],
        serde_json::json!([{"media_type": "image/png", "bytes": 8, "id": id}])
    );
    let back: Event = serde_json::from_value(json.clone()).unwrap();
    let Event::Message {
        images, content, ..
    } = &back
    else {
        panic!("{back:?}")
    };
    assert!(images.is_empty());
    assert_eq!(content.as_str(), "what is this?");
    let mut without_images = json;
    without_images.as_object_mut().unwrap().remove("images");
    assert_eq!(serde_json::to_value(&back).unwrap(), without_images);
}

#[test]
fn a_compaction_reads_back_without_the_history_it_never_published() {
    let event = Event::Compacted {
        run_id: "r1".into(),
        before_tokens: 10,
        after_tokens: 2,
        history: vec![ChatMessage::user("old")],
    };
    let json = serde_json::to_string(&event).unwrap();
    assert!(!json.contains("history"), "{json}");
    let back: Event = serde_json::from_str(&json).unwrap();
    assert!(matches!(back, Event::Compacted { ref history, .. } if history.is_empty()));
    assert_eq!(serde_json::to_string(&back).unwrap(), json);
}
