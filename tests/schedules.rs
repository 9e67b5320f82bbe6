//! Schedules through the real binary: `linggen schedule add|list|remove|run-now`, and
//! `linggen serve` running them — a run missed while serve was down once at its start, the
//! next at its time, each as a one-shot run whose calls that would ask are denied and
//! reported (in `schedule list`, the server's log, and a `Notification` on the page's
//! session). The clock is moved with `LINGGEN_CLOCK_SKEW_SECS` so a minute's schedule is
//! reached in seconds.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::json;
use support::web_client::Serve;
use support::{Protocol, Reply, ScriptedServer, Step, Workspace, run, texts};

fn workspace(script: Vec<Step>) -> (Workspace, ScriptedServer) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, script);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    (ws, server)
}

/// The id `schedule add` printed.
fn added_id(stdout: &str) -> String {
    stdout
        .strip_prefix("added schedule ")
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("no id in {stdout:?}"))
        .to_string()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_bad_expression_or_name_is_a_clear_error_and_nothing_is_stored() {
    let (ws, _server) = workspace(vec![]);
    for (args, says) in [
        (
            vec!["* * * *", "task"],
            "has 4 field(s); a schedule takes 5",
        ),
        (
            vec!["0 25 * * *", "task"],
            "`0 25 * * *` is not a cron expression",
        ),
        (vec!["0 0 30 2 *", "task"], "never matches a real date"),
        (
            vec!["0 * * * *", "task", "--agent", "nobody"],
            "no agent named `nobody`",
        ),
        (
            vec!["0 * * * *", "task", "--model", "gpt-9"],
            "no model `gpt-9` in [[models]]",
        ),
    ] {
        let mut argv = vec!["schedule", "add"];
        argv.extend(args);
        let out = run(&ws, &argv);
        assert_eq!(out.code, Some(2), "{argv:?}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{argv:?}: {}", out.stderr);
    }
    let listed = run(&ws, &["schedule", "list"]);
    assert!(
        listed.stdout.starts_with("No schedules in "),
        "{}",
        listed.stdout
    );
    let removed = run(&ws, &["schedule", "remove", "nope"]);
    assert_eq!(removed.code, Some(2));
    assert!(
        removed.stderr.contains("no schedule `nope`"),
        "{}",
        removed.stderr
    );
}

/// `run-now` runs it here as serve would: a one-shot run in which what would ask is
/// denied, the denial reported, the outcome kept; `remove` then removes it.
#[test]
fn run_now_runs_it_as_a_one_shot_and_reports_what_was_denied() {
    let (ws, server) = workspace(vec![
        Step::from(Reply::tool("Bash", json!({"command": "touch made.txt"}))),
        Reply::text("I could not write the file.").into(),
    ]);
    let added = run(
        &ws,
        &[
            "schedule",
            "add",
            "0 3 * * *",
            "make the file",
            "--agent",
            "ling",
        ],
    );
    assert_eq!(added.code, Some(0), "{}", added.stderr);
    let id = added_id(&added.stdout);
    let ran = run(&ws, &["schedule", "run-now", &id]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(
        ran.stdout.starts_with(&format!(
            "schedule {id}: completed: I could not write the file. · 1 call denied (needed approval) (session "
        )),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout
            .contains("  denied: not run: `Bash: touch made.txt` needs the user's approval"),
        "{}",
        ran.stdout
    );
    assert!(!ws.root().join("made.txt").exists());
    // The model was told why, as in any -p run.
    let results = texts(&server.last_chat_request().unwrap(), "tool");
    assert!(
        results[0].contains("nobody can approve in this non-interactive run"),
        "{results:?}"
    );

    let listed = run(&ws, &["schedule", "list"]);
    assert!(
        listed.stdout.contains("completed: I could not write"),
        "{}",
        listed.stdout
    );
    assert!(listed.stdout.contains("[agent ling]"), "{}", listed.stdout);
    assert!(
        listed.stdout.contains("· 1 call denied (needed approval)"),
        "{}",
        listed.stdout
    );
    assert!(
        listed.stdout.contains("(linggen --resume "),
        "{}",
        listed.stdout
    );
    let sessions = run(&ws, &["sessions"]);
    assert!(
        sessions.stdout.contains("make the file"),
        "{}",
        sessions.stdout
    );
    let removed = run(&ws, &["schedule", "remove", &id]);
    assert!(
        removed
            .stdout
            .starts_with(&format!("removed schedule {id}")),
        "{}",
        removed.stdout
    );
    assert!(
        run(&ws, &["schedule", "list"])
            .stdout
            .starts_with("No schedules")
    );
}

/// `linggen serve` runs an every-minute schedule whose minutes passed while it was down
/// once at its start (not once per minute missed), then again at its next minute; each
/// run's outcome reaches the page's session as a `Notification`.
#[test]
fn serve_runs_a_missed_schedule_once_then_at_its_time() {
    let (ws, server) = workspace(vec![
        Step::from(Reply::tool("Bash", json!({"command": "touch made.txt"}))),
        Reply::text("Denied, as expected.").into(),
        Reply::text("Second run done.").into(),
    ]);
    let added = run(&ws, &["schedule", "add", "* * * * *", "tick"]);
    assert_eq!(added.code, Some(0), "{}", added.stderr);
    // An hour later (sixty missed minutes), three seconds before a minute begins.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let skew = 3600 + (57 - now % 60).rem_euclid(60);
    let mut cmd = ws.cmd();
    cmd.arg("serve")
        .env("LINGGEN_CLOCK_SKEW_SECS", skew.to_string());
    let serve = Serve::start(&mut cmd);
    let notifications = || {
        serve.session()["transcript"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "Notification")
            .map(|e| e["message"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    wait_for("two runs", || notifications().len() >= 2);
    let told = notifications();
    assert!(
        told[0].contains("completed: Denied, as expected. · 1 call denied"),
        "{told:?}"
    );
    assert!(told[1].contains("completed: Second run done."), "{told:?}");
    // Nothing more: the sixty missed minutes were one run.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(notifications().len(), 2);
    assert_eq!(server.chat_requests().len(), 3);
    serve.stop();
    assert!(!ws.root().join("made.txt").exists());
}

/// With `[heartbeat] every`, serve runs `HEARTBEAT.md` when it holds a task; a missing
/// file, or one with only a heading and a comment, calls no model.
#[test]
fn the_heartbeat_runs_a_file_with_a_task_and_an_empty_one_calls_no_model() {
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![Step::repeat(Reply::text("CI is green."))],
    );
    let ws = Workspace::new();
    support::write_config_with(
        ws.home(),
        Protocol::OpenAi,
        &server.url(),
        "\n[heartbeat]\nevery = \"2s\"\n",
    );
    let serve = Serve::start(ws.cmd().arg("serve"));
    // No file: two beats go by without a model call.
    std::thread::sleep(Duration::from_millis(4500));
    assert_eq!(server.chat_requests().len(), 0);

    ws.write(
        "HEARTBEAT.md",
        "# Heartbeat\n<!-- standing tasks -->\n- check that CI is green\n",
    );
    let told = || {
        serve.session()["transcript"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "Notification" && e["source"] == "heartbeat")
            .map(|e| e["message"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    wait_for("a heartbeat run", || !told().is_empty());
    assert!(
        told()[0].starts_with("heartbeat: completed: CI is green. (session "),
        "{:?}",
        told()
    );
    let sent = texts(&server.chat_requests()[0], "user").join("\n");
    assert!(
        sent.starts_with("Heartbeat: this is a periodic run"),
        "{sent}"
    );
    assert!(
        sent.contains("- check that CI is green") && !sent.contains("<!--"),
        "{sent}"
    );

    ws.write("HEARTBEAT.md", "# Heartbeat\n<!-- nothing for now -->\n");
    // A run already under way may finish; after that, beats call no model.
    std::thread::sleep(Duration::from_secs(3));
    let settled = server.chat_requests().len();
    std::thread::sleep(Duration::from_millis(4500));
    assert_eq!(server.chat_requests().len(), settled);
    serve.stop();
}

/// A project's own `[heartbeat]` is not obeyed: a repository cannot make linggen call
/// models on a timer.
#[test]
fn a_projects_heartbeat_table_is_ignored_with_a_warning() {
    let (ws, _server) = workspace(vec![]);
    ws.write("linggen-agent.toml", "[heartbeat]\nevery = \"1s\"\n");
    let out = run(&ws, &["schedule", "list"]);
    assert!(
        out.stderr
            .contains("`[heartbeat]` is ignored: only your own configuration"),
        "{}",
        out.stderr
    );
    let bad = Workspace::new();
    support::write_config_with(
        bad.home(),
        Protocol::OpenAi,
        "http://127.0.0.1:9",
        "\n[heartbeat]\nevery = \"soon\"\n",
    );
    let out = run(&bad, &["schedule", "list"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("every = \"soon\": expected a duration"),
        "{}",
        out.stderr
    );
}
