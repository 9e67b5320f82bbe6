//! linggen's own storage failing: `$LINGGEN_HOME` on a disk that fills up. One line says
//! what is wrong and what to do, a `-p` whose session could not be saved does not exit 0,
//! and once there is room again everything works with nothing lost.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::{
    Protocol, Reply, ScriptedServer, Workspace, namespace_prefix, run_on_small_disk, write_config,
};

/// What one step of the script left behind: exit code, stdout, stderr.
fn step(dir: &std::path::Path, n: u32) -> (i32, String, String) {
    let read = |what: &str| std::fs::read_to_string(dir.join(format!("{what}{n}"))).unwrap();
    (
        read("code").trim().parse().unwrap(),
        read("out"),
        read("err"),
    )
}

fn error_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("linggen: error:"))
        .collect()
}

#[test]
fn a_full_linggen_home_is_one_clear_line_and_a_failing_exit() {
    let Some(prefix) = namespace_prefix() else {
        return;
    };
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Reply::text("first answer"),
            // Larger than the room left: printed, but it cannot be stored.
            Reply::text(format!("second answer {}", "x".repeat(1_500_000))),
            Reply::text("third answer"),
        ],
    );
    let ws = Workspace::new();
    let config_dir = tempfile::tempdir().unwrap();
    let config = write_config(config_dir.path(), Protocol::OpenAi, &server.url());
    let results = tempfile::tempdir().unwrap();
    // Each step writes codeN, outN and errN to the results folder (on the real disk).
    let script = r#"
cp "$CONF" "$LINGGEN_HOME/linggen-agent.toml"
step() { n=$1; shift; set +e; "$LINGGEN" "$@" > "$R/out$n" 2> "$R/err$n"; echo $? > "$R/code$n"; set -e; }
step 1 -p "first task"
dd if=/dev/zero of="$LINGGEN_HOME/room" bs=1024 count=512 2>/dev/null
dd if=/dev/zero of="$LINGGEN_HOME/filler" bs=4096 2>/dev/null || true
rm "$LINGGEN_HOME/room"
step 2 -p -c "second task"
dd if=/dev/zero of="$LINGGEN_HOME/filler2" bs=4096 2>/dev/null || true
step 3 -p -c "task on a full disk"
step 4 sessions
rm "$LINGGEN_HOME/filler" "$LINGGEN_HOME/filler2"
step 5 sessions
step 6 -p -c "third task"
"#;
    let out = run_on_small_disk(
        &prefix,
        &ws,
        ws.home(),
        2048,
        &format!(
            "export CONF='{}' R='{}'\n{script}",
            config.display(),
            results.path().display()
        ),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = results.path();

    let (code, stdout, stderr) = step(r, 1);
    assert_eq!((code, stdout.trim_end()), (0, "first answer"), "{stderr}");

    // Room to start, not to store the answer: printed, one line says it was not saved and
    // why, exit 5.
    let (code, stdout, stderr) = step(r, 2);
    assert!(stdout.starts_with("second answer"), "{stderr}");
    assert_eq!(code, 5, "{stderr}");
    let errors = error_lines(&stderr);
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("could not save the session"), "{stderr}");
    assert!(errors[0].contains("is full"), "{stderr}");
    assert!(errors[0].contains("free some space"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // No room at all: the session cannot even be opened; the same one line, exit 1.
    let (code, stdout, stderr) = step(r, 3);
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    let errors = error_lines(&stderr);
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("is full"), "{stderr}");

    // Reading needs no room: the listing works, or says the disk is full; never a bare
    // "disk I/O error".
    let (code, _, stderr) = step(r, 4);
    if code != 0 {
        assert!(error_lines(&stderr)[0].contains("is full"), "{stderr}");
    }

    // With room again, everything works and the first session is intact.
    let (code, stdout, stderr) = step(r, 5);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("first task"), "{stdout}");
    let (code, stdout, stderr) = step(r, 6);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.trim_end().ends_with("answer"), "{stdout}");
    let sent = server.last_chat_request().unwrap().to_string();
    assert!(sent.contains("first task"), "{sent}");
}
