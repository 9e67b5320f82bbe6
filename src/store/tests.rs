use super::*;
use crate::protocol::ToolCall;
use crate::session::persist::{persisted, spawn_writer};
use crate::shared_text::SharedText;

fn open() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    (dir, store)
}

#[test]
fn messages_round_trip_with_tool_calls() {
    let (_dir, store) = open();
    store.create_session("abc123", "/repo", "m").unwrap();
    let call = ToolCall {
        id: "c1".into(),
        name: "Read".into(),
        arguments: serde_json::json!({"path": "a"}),
    };
    let msgs = vec![
        ChatMessage::user("hello"),
        ChatMessage::assistant("", vec![call.clone()]),
        ChatMessage::tool_result(&call, "1\ta", false),
        ChatMessage::assistant("done", vec![]),
    ];
    for m in &msgs {
        store.append_message("abc123", Some("r1"), m).unwrap();
    }
    let loaded = store.load_messages("abc123").unwrap();
    // A resumed message carries the run that recorded it, so a frontend can attribute it.
    assert!(loaded.iter().all(|m| m.run_id.as_deref() == Some("r1")));
    let without_runs: Vec<ChatMessage> = loaded
        .into_iter()
        .map(|m| ChatMessage { run_id: None, ..m })
        .collect();
    assert_eq!(without_runs, msgs);
    let event = crate::session::Event::message(
        "",
        "coder",
        "user",
        &store.load_messages("abc123").unwrap()[2],
    );
    assert!(matches!(event, crate::session::Event::Message { ref run_id, .. } if run_id == "r1"));
    let info = store.find_session("abc").unwrap();
    assert_eq!(info.title, "hello");
    assert_eq!(info.message_count, 4);
}

/// `--continue` sends a tool's images again: they are stored with their message, in order,
/// and in a compaction's history.
#[test]
fn a_tool_results_images_are_stored_and_resumed() {
    let (_dir, store) = open();
    store.create_session("s", "/repo", "m").unwrap();
    let call = ToolCall {
        id: "c1".into(),
        name: "mcp__web__shot".into(),
        arguments: serde_json::json!({}),
    };
    let png = crate::protocol::image::test_png();
    let gif =
        crate::protocol::Image::from_base64("image/gif", "R0lGODlhgALgAYAAAA==".into()).unwrap();
    let result = ChatMessage::tool_result(&call, "[image image/png, 1 KB]", false)
        .with_images(vec![png.clone(), gif.clone()]);
    let msgs = vec![
        ChatMessage::user("shoot"),
        ChatMessage::assistant("", vec![call.clone()]),
        result.clone(),
        ChatMessage::user("and this?").with_images(vec![gif]),
    ];
    for m in &msgs {
        store.append_message("s", Some("r1"), m).unwrap();
    }
    let loaded: Vec<ChatMessage> = store
        .load_messages("s")
        .unwrap()
        .into_iter()
        .map(|m| ChatMessage { run_id: None, ..m })
        .collect();
    assert_eq!(loaded, msgs);
    store.save_compaction("s", &msgs[2..3]).unwrap();
    assert_eq!(store.load_messages("s").unwrap(), vec![result]);
}

#[test]
fn latest_session_is_per_workspace() {
    let (_dir, store) = open();
    store.create_session("s1", "/a", "m").unwrap();
    store.create_session("s2", "/b", "m").unwrap();
    store.create_session("s3", "/a", "m").unwrap();
    // Timestamps have millisecond resolution; make "newer" unambiguous.
    std::thread::sleep(std::time::Duration::from_millis(5));
    store
        .append_message("s1", None, &ChatMessage::user("newest"))
        .unwrap();
    assert_eq!(store.latest_session("/a").unwrap().unwrap().id, "s1");
    // s3 has no messages: not listed, not resumed by --continue.
    assert_eq!(store.list_sessions("/a").unwrap().len(), 1);
    store
        .append_message("s3", None, &ChatMessage::user("hello"))
        .unwrap();
    assert_eq!(store.list_sessions("/a").unwrap().len(), 2);
    assert!(store.latest_session("/c").unwrap().is_none());
}

#[test]
fn find_session_errors() {
    let (_dir, store) = open();
    store.create_session("aa1", "/a", "m").unwrap();
    store.create_session("aa2", "/a", "m").unwrap();
    assert!(matches!(
        store.find_session("aa"),
        Err(StoreError::Ambiguous(_))
    ));
    assert!(matches!(
        store.find_session("zz"),
        Err(StoreError::NoSuchSession(_))
    ));
    assert_eq!(store.find_session("aa2").unwrap().id, "aa2");
}

#[test]
fn runs_are_recorded() {
    let (_dir, store) = open();
    store.create_session("s", "/a", "m").unwrap();
    let run = RunRecord {
        id: "r1".into(),
        parent_id: None,
        agent_id: "ling".into(),
        task: "t".into(),
        status: "running".into(),
        model: None,
    };
    store.start_run("s", &run).unwrap();
    store.set_run_model("r1", "qwen").unwrap();
    store.finish_run("r1", "completed").unwrap();
    // A run left `running` by a process that died is closed when its session resumes.
    let stale = RunRecord {
        id: "r2".into(),
        parent_id: Some("r1".into()),
        ..run.clone()
    };
    store.start_run("s", &stale).unwrap();
    assert_eq!(store.close_stale_runs("s").unwrap(), 1);
    assert_eq!(store.runs("s").unwrap()[1].status, "failed");
    assert_eq!(store.runs("s").unwrap()[0].status, "completed");
    assert_eq!(store.runs("s").unwrap()[0].model.as_deref(), Some("qwen"));
}

#[test]
fn corrupt_database_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(DB_FILE), b"this is not sqlite, just text padding it out to a page ....................................................").unwrap();
    let err = Store::open(dir.path()).err().unwrap();
    assert!(matches!(err, StoreError::Corrupt(_)), "{err}");
    assert!(err.to_string().contains("move it aside"));
}

#[test]
fn reopening_keeps_data_and_schema() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        store.create_session("s", "/a", "m").unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert!(store.has_session("s").unwrap());
}

#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        store.conn.pragma_update(None, "user_version", 99).unwrap();
    }
    let err = Store::open(dir.path()).err().unwrap();
    assert!(matches!(err, StoreError::TooNew { .. }), "{err}");
}

#[test]
fn the_database_and_its_folder_are_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    // A new home is made 0700.
    let home = dir.path().join("fresh/.linggen");
    drop(Store::open(&home).unwrap());
    assert_eq!(mode(&home), 0o700);
    assert_eq!(mode(&home.join(DB_FILE)), 0o600);
    // One an older linggen left readable is fixed on start.
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(home.join(DB_FILE), std::fs::Permissions::from_mode(0o644)).unwrap();
    drop(Store::open(&home).unwrap());
    assert_eq!(mode(&home), 0o700);
    assert_eq!(mode(&home.join(DB_FILE)), 0o600);
    // A folder chosen by LINGGEN_HOME keeps its mode; the database is private anyway.
    let chosen = dir.path().join("shared");
    std::fs::create_dir(&chosen).unwrap();
    std::fs::set_permissions(&chosen, std::fs::Permissions::from_mode(0o755)).unwrap();
    drop(Store::open(&chosen).unwrap());
    assert_eq!(mode(&chosen), 0o755);
    assert_eq!(mode(&chosen.join(DB_FILE)), 0o600);
}

/// Two processes creating the same database at once (`linggen -p` and `linggen sessions`
/// started together) must both succeed: each migration step runs once.
#[test]
fn concurrent_first_opens_both_succeed() {
    for _ in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_path_buf();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
        let opens: Vec<_> = (0..4)
            .map(|_| {
                let (home, barrier) = (home.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    Store::open(&home).map(|_| ()).map_err(|e| e.to_string())
                })
            })
            .collect();
        for open in opens {
            open.join().unwrap().unwrap();
        }
    }
}

/// The writer folds the session's one projection: runs are written with the status it
/// holds, and the session row follows `/model` instead of keeping the starting model.
#[test]
fn the_writer_stores_runs_and_the_current_model_from_the_projection() {
    use crate::config::PermissionMode;
    use crate::session::{Event, EventBus, OutcomeStatus, TurnMode};
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create_session("s", "/a", "first").unwrap();
    let bus = EventBus::new();
    let writer = spawn_writer(
        store,
        "s".into(),
        bus.subscribe_lossless_to(persisted),
        |e| panic!("{e}"),
    );
    bus.publish(Event::SessionStarted {
        version: 1,
        session_id: "s".into(),
        model: "first (m1 @ http://x)".into(),
        root: "/a".into(),
        agent_id: "ling".into(),
        permission_mode: PermissionMode::Default,
        tools: vec![],
        max_iters: 5,
        mode: TurnMode::Chat,
    });
    bus.publish(Event::RunStarted {
        run_id: "r1".into(),
        parent_id: None,
        agent_id: "ling".into(),
        task: "hello".into(),
    });
    bus.publish(Event::message(
        "r1",
        "ling",
        "user",
        &ChatMessage::user("hello"),
    ));
    bus.publish(Event::SubagentSpawned {
        parent_id: "r1".into(),
        subagent_id: "r2".into(),
        agent_id: "coder".into(),
        task: "inner".into(),
        background: false,
    });
    bus.publish(Event::RunStarted {
        run_id: "r2".into(),
        parent_id: Some("r1".into()),
        agent_id: "coder".into(),
        task: "inner".into(),
    });
    bus.publish(Event::SubagentResult {
        parent_id: "r1".into(),
        subagent_id: "r2".into(),
        agent_id: "coder".into(),
        outcome: OutcomeStatus::Error,
        result: SharedText::default(),
    });
    bus.publish(Event::Outcome {
        run_id: "r1".into(),
        status: OutcomeStatus::Completed,
        result: SharedText::default(),
        num_turns: 1,
        usage: Default::default(),
        duration_ms: 1,
    });
    bus.publish(Event::SettingsUpdated {
        agent_id: "ling".into(),
        mode: TurnMode::Chat,
        model: "second (m2 @ http://y)".into(),
        permission_mode: PermissionMode::Default,
        max_iters: 5,
    });
    bus.close();
    writer.join().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let runs = store.runs("s").unwrap();
    let statuses: Vec<_> = runs
        .iter()
        .map(|r| (r.id.as_str(), r.status.as_str()))
        .collect();
    assert_eq!(statuses, [("r1", "completed"), ("r2", "failed")]);
    assert_eq!(runs[1].parent_id.as_deref(), Some("r1"));
    assert_eq!(store.find_session("s").unwrap().model, "second");
}
