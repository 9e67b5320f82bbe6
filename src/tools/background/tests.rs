use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::tools::{ToolContext, ToolOutput, prepare, run};

fn ctx() -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(&dir.path().canonicalize().unwrap());
    (dir, ctx)
}

async fn call(ctx: &ToolContext, tool: &str, args: serde_json::Value) -> ToolOutput {
    let prepared = prepare(ctx, tool, &args).unwrap_or_else(|e| panic!("{}", e.model));
    run(ctx, &prepared).await
}

/// Polls until `done` holds, for at most ten seconds.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(10), "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_background_command_returns_at_once_and_its_output_is_read_later() {
    let (_d, ctx) = ctx();
    let started = Instant::now();
    let out = call(
        &ctx,
        "Bash",
        json!({"command": "echo one; sleep 0.3; echo two; exit 3", "run_in_background": true}),
    )
    .await;
    assert!(started.elapsed() < Duration::from_millis(300), "it waited");
    assert!(!out.is_error, "{}", out.model);
    assert!(
        out.model.starts_with("started in the background as bash_1"),
        "{}",
        out.model
    );
    assert!(ctx.tasks.any());
    eventually("it ended", || {
        ctx.tasks.list()[0].state == TaskState::Exited
    })
    .await;
    let read = call(&ctx, "BashOutput", json!({"bash_id": "bash_1"})).await;
    assert!(
        read.model
            .starts_with("exit 3 after 0 s, 2 lines printed\none\ntwo"),
        "{}",
        read.model
    );
    let again = call(&ctx, "BashOutput", json!({"bash_id": "bash_1"})).await;
    assert!(again.model.ends_with("(no new output)"), "{}", again.model);
    let info = &ctx.tasks.list()[0];
    assert_eq!(
        (info.exit_code, info.lines, info.tail.clone()),
        (Some(3), 2, vec!["one".to_string(), "two".into()])
    );
}

#[tokio::test]
async fn the_filter_keeps_matching_lines_and_a_bad_one_is_explained() {
    let (_d, ctx) = ctx();
    call(
        &ctx,
        "Bash",
        json!({"cmd": "printf 'ok 1\\nERR x\\nok 2\\n'", "run_in_background": true}),
    )
    .await;
    eventually("it ended", || {
        ctx.tasks.list()[0].state != TaskState::Running
    })
    .await;
    let read = call(
        &ctx,
        "TaskOutput",
        json!({"bash_id": "bash_1", "filter": "^ERR"}),
    )
    .await;
    assert!(read.model.ends_with("\nERR x"), "{}", read.model);
    assert!(read.summary.ends_with("1 new line"), "{}", read.summary);
    let bad = prepare(
        &ctx,
        "BashOutput",
        &json!({"bash_id": "bash_1", "filter": "("}),
    )
    .unwrap_err();
    assert!(bad.model.contains("not a valid regex"), "{}", bad.model);
}

#[tokio::test]
async fn kill_shell_stops_the_command_and_everything_it_started() {
    let (dir, ctx) = ctx();
    let marker = dir.path().join("survived");
    let command = format!("(sleep 1; touch {}) & sleep 30", marker.display());
    call(
        &ctx,
        "Bash",
        json!({"cmd": command, "run_in_background": true}),
    )
    .await;
    let killed = call(&ctx, "KillShell", json!({"shell_id": "bash_1"})).await;
    assert!(
        killed.model.starts_with("bash_1 was stopped"),
        "{}",
        killed.model
    );
    let info = &ctx.tasks.list()[0];
    assert_eq!(
        (info.state, info.stopped_by),
        (TaskState::Stopped, Some(StopBy::Model))
    );
    let again = call(&ctx, "KillShell", json!({"shell_id": "bash_1"})).await;
    assert!(
        again.model.contains("not running (stopped by the model)"),
        "{}",
        again.model
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!marker.exists(), "a child outlived KillShell");
}

#[tokio::test]
async fn an_unknown_id_names_the_ones_there_are() {
    let (_d, ctx) = ctx();
    let none = call(&ctx, "BashOutput", json!({"bash_id": "bash_9"})).await;
    assert!(
        none.is_error && none.model.contains("none was started"),
        "{}",
        none.model
    );
    call(
        &ctx,
        "Bash",
        json!({"cmd": "true", "run_in_background": true}),
    )
    .await;
    let wrong = call(&ctx, "KillShell", json!({"shell_id": "bash_9"})).await;
    assert!(wrong.model.contains("there are: bash_1"), "{}", wrong.model);
}

/// The session's end, and the tools dropped without it, leave nothing running.
#[tokio::test]
async fn nothing_outlives_the_session() {
    let (dir, ctx) = ctx();
    let marker = dir.path().join("survived");
    let command = format!("sleep 1; touch {}", marker.display());
    call(
        &ctx,
        "Bash",
        json!({"cmd": command.clone(), "run_in_background": true}),
    )
    .await;
    ctx.tasks.stop_all(StopBy::SessionEnd);
    eventually("it was reaped", || {
        ctx.tasks.list()[0].state == TaskState::Stopped
    })
    .await;
    assert_eq!(
        ctx.tasks.list()[0].state_words(),
        "stopped with the session"
    );
    call(
        &ctx,
        "Bash",
        json!({"cmd": command, "run_in_background": true}),
    )
    .await;
    drop(ctx);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !marker.exists(),
        "a background command outlived its session"
    );
}

/// Every change reaches the listener: the start, output while it runs (at most once a
/// second), and the end.
#[tokio::test]
async fn the_listener_hears_start_output_and_end() {
    let (_d, ctx) = ctx();
    let heard = Arc::new(Mutex::new(Vec::<TaskInfo>::new()));
    let sink = Arc::clone(&heard);
    ctx.tasks
        .listen(move |info| sink.lock().unwrap().push(info));
    call(
        &ctx,
        "Bash",
        json!({"cmd": "echo ready; sleep 1.5; echo bye", "run_in_background": true}),
    )
    .await;
    eventually("it ended", || {
        heard
            .lock()
            .unwrap()
            .last()
            .is_some_and(|i| i.state == TaskState::Exited)
    })
    .await;
    let heard = heard.lock().unwrap();
    assert_eq!(heard[0].state, TaskState::Running);
    assert!(
        heard
            .iter()
            .any(|i| i.state == TaskState::Running && i.tail == ["ready"]),
        "no update while it ran: {heard:?}"
    );
    assert_eq!(heard.last().unwrap().tail, ["ready", "bye"]);
}

/// Starting one is asked like running the command: the same access, and the question
/// says it keeps running.
#[test]
fn starting_one_is_the_same_command_to_approve() {
    let (_d, ctx) = ctx();
    let fg = prepare(&ctx, "Bash", &json!({"cmd": "npm run dev"})).unwrap();
    let bg = prepare(
        &ctx,
        "Bash",
        &json!({"cmd": "npm run dev", "run_in_background": true}),
    )
    .unwrap();
    assert_eq!(fg.access, bg.access);
    assert_eq!(
        bg.approval_display(),
        "Bash: npm run dev (in the background: it keeps running)"
    );
    let refused = prepare(
        &ctx,
        "Bash",
        &json!({"cmd": "echo $(id)", "run_in_background": true}),
    );
    assert!(refused.unwrap_err().model.contains("never runs"));
}
