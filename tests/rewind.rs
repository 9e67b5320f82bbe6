//! Checkpoints, rewind and the audit trail through the real binary: a prompt's changes by
//! `Write` and by a shell command are rewound exactly (the person's git state untouched), a
//! hand edit since the checkpoint is not overwritten without `--force`, the conversation
//! goes back too, and `linggen runs show` prints what a run did.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::{Protocol, Reply, ScriptedServer, Step, Workspace, git_available, run, texts};

fn setup(steps: Vec<Step>) -> (ScriptedServer, Workspace) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, steps);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    (server, ws)
}

fn git(ws: &Workspace, args: &[&str]) -> String {
    support::git(ws.root(), args)
}

/// Everything of the person's repository a rewind must leave as it was. The index is
/// compared by its entries (path, mode, blob, stage): its stat cache is git's own, and
/// `git status` itself refreshes it for a file whose timestamp changed.
fn git_state(ws: &Workspace) -> [String; 6] {
    [
        git(ws, &["rev-parse", "HEAD"]),
        git(ws, &["symbolic-ref", "HEAD"]),
        git(ws, &["status", "--porcelain=v1", "--untracked-files=all"]),
        git(ws, &["stash", "list"]),
        git(ws, &["ls-files", "--stage"]),
        git(ws, &["for-each-ref"]),
    ]
}

/// A repository with a commit, a staged change, a stash and an untracked file.
fn repository(ws: &Workspace) {
    git(ws, &["init", "-q", "-b", "main"]);
    ws.write("a.txt", "old\n");
    ws.write("keep.txt", "stash me\n");
    git(ws, &["add", "."]);
    git(ws, &["commit", "-qm", "first"]);
    ws.write("keep.txt", "stashed change\n");
    git(ws, &["stash", "-q"]);
    ws.write("staged.txt", "staged\n");
    git(ws, &["add", "staged.txt"]);
    ws.write("untracked.txt", "mine\n");
}

fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn first_run_id(stdout: &str) -> String {
    events(stdout)
        .iter()
        .find(|e| e["type"] == "RunStarted")
        .and_then(|e| e["run_id"].as_str())
        .unwrap()
        .to_string()
}

/// `linggen rewind --list`'s IDs, newest first.
fn checkpoint_ids(ws: &Workspace) -> Vec<String> {
    let listed = run(ws, &["rewind", "--list"]);
    assert_eq!(listed.code, Some(0), "{}", listed.stderr);
    listed
        .stdout
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

/// A file changed by `Write` and one created by a shell command are put back by
/// `linggen rewind ID`; HEAD, branch, index, stash and `git status` are as before; the
/// conversation is back to before the prompt; and `runs show` prints the trail.
#[test]
fn rewind_restores_write_and_shell_changes_and_leaves_git_alone() {
    if !git_available() {
        return;
    }
    let (server, ws) = setup(vec![
        Reply::tool("Write", json!({"path": "a.txt", "content": "new\n"})).into(),
        Reply::tool("Bash", json!({"command": "echo made by a command > b.txt"})).into(),
        Reply::text("changed both").into(),
        Reply::text("second answer").into(),
    ]);
    repository(&ws);
    let before = git_state(&ws);
    let r = run(
        &ws,
        &[
            "-p",
            "change the files",
            "--permission-mode",
            "bypass",
            "--output-format",
            "stream-json",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(ws.read("a.txt"), "new\n");
    assert_eq!(ws.read("b.txt"), "made by a command\n");
    let created: Vec<Value> = events(&r.stdout)
        .into_iter()
        .filter(|e| e["type"] == "CheckpointCreated")
        .collect();
    assert_eq!(created.len(), 1, "one checkpoint per prompt: {created:?}");
    // The turn's change report names the file the shell command made too.
    let report = events(&r.stdout)
        .into_iter()
        .find(|e| e["type"] == "ChangeReport")
        .unwrap();
    assert_eq!(report["files"], json!(["a.txt", "b.txt"]), "{report}");
    assert_eq!(report["agent_id"], "ling");

    let listed = run(&ws, &["rewind", "--list"]);
    assert_eq!(listed.code, Some(0), "{}", listed.stderr);
    let line = listed.stdout.lines().next().unwrap();
    let id = created[0]["checkpoint_id"].as_str().unwrap();
    assert!(line.starts_with(id), "{line}");
    assert!(line.contains("change the files"), "{line}");
    assert!(line.contains("~a.txt") && line.contains("+b.txt"), "{line}");

    let rewound = run(&ws, &["rewind", id]);
    assert_eq!(rewound.code, Some(0), "{}", rewound.stderr);
    assert!(
        rewound.stdout.contains("files restored"),
        "{}",
        rewound.stdout
    );
    assert_eq!(ws.read("a.txt"), "old\n");
    assert!(!ws.root().join("b.txt").exists());
    assert_eq!(git_state(&ws), before);

    // The conversation went back too: the next turn does not carry the rewound prompt.
    let next = run(&ws, &["-p", "--continue", "what now?"]);
    assert_eq!(next.code, Some(0), "{}", next.stderr);
    let requests = server.chat_requests();
    let last = requests.last().unwrap();
    let users = texts(last, "user");
    assert!(
        !users.iter().any(|u| u.contains("change the files")),
        "{users:?}"
    );

    // The audit trail of the first run.
    let run_id = first_run_id(&r.stdout);
    let shown = run(&ws, &["runs", "show", &run_id[..8]]);
    assert_eq!(shown.code, Some(0), "{}", shown.stderr);
    let trail = shown.stdout;
    assert!(trail.contains(&format!("run {run_id}")), "{trail}");
    assert!(trail.contains("◆ checkpoint"), "{trail}");
    assert!(trail.contains("→ Write a.txt"), "{trail}");
    assert!(
        trail.contains("→ Bash: echo made by a command > b.txt"),
        "{trail}"
    );
    assert!(trail.contains("✓ Bash: exit 0"), "{trail}");
    assert!(trail.contains("changed: a.txt"), "{trail}");
    assert!(
        trail.contains("outcome: completed — changed both"),
        "{trail}"
    );
}

/// A file edited by hand after the turn is not overwritten: the rewind exits non-zero
/// naming it, and `--force` overwrites it.
#[test]
fn rewind_refuses_to_clobber_a_hand_edit() {
    if !git_available() {
        return;
    }
    let (_server, ws) = setup(vec![
        Reply::tool("Write", json!({"path": "a.txt", "content": "agent\n"})).into(),
        Reply::text("done").into(),
    ]);
    ws.write("a.txt", "original\n");
    let r = run(&ws, &["-p", "edit a", "--permission-mode", "accept-edits"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    ws.write("a.txt", "my own words\n");
    let id = checkpoint_ids(&ws)[0].clone();
    let refused = run(&ws, &["rewind", &id]);
    assert_eq!(refused.code, Some(1), "{}", refused.stdout);
    assert!(
        refused.stderr.contains("changed by hand"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("a.txt"), "{}", refused.stderr);
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    assert_eq!(ws.read("a.txt"), "my own words\n");

    let forced = run(&ws, &["rewind", &id, "--force"]);
    assert_eq!(forced.code, Some(0), "{}", forced.stderr);
    assert_eq!(ws.read("a.txt"), "original\n");
    // The rewind itself is a checkpoint: it can be undone.
    let undo = forced
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("undo with: linggen rewind "))
        .unwrap()
        .to_string();
    let undone = run(&ws, &["rewind", &undo, "--only", "code"]);
    assert_eq!(undone.code, Some(0), "{}", undone.stderr);
    assert_eq!(ws.read("a.txt"), "my own words\n");
}

/// After an auto-mode run that patched and created files, a rewind leaves `git status`
/// exactly as it was before the run.
#[test]
fn a_rewind_after_an_auto_run_restores_git_status() {
    if !git_available() {
        return;
    }
    let action = |v: Value| -> Step { Reply::text(v.to_string()).into() };
    let (_server, ws) = setup(vec![
        action(json!({"type": "patch",
            "diff": "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+patched\n"})),
        action(json!({"type": "tool", "tool": "Write",
            "args": {"path": "src/new.txt", "content": "new file\n"}})),
        action(json!({"type": "finalize_task", "summary": "patched and added"})),
    ]);
    repository(&ws);
    let before = git_state(&ws);
    let r = run(
        &ws,
        &[
            "-p",
            "auto task",
            "--mode",
            "auto",
            "--permission-mode",
            "accept-edits",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, "patched and added\n");
    assert_ne!(git_state(&ws), before);
    // One checkpoint per step that changed something; the oldest is before the run.
    let ids = checkpoint_ids(&ws);
    assert_eq!(ids.len(), 2, "{ids:?}");
    let oldest = ids.last().unwrap();
    let rewound = run(&ws, &["rewind", oldest]);
    assert_eq!(rewound.code, Some(0), "{}", rewound.stderr);
    assert_eq!(git_state(&ws), before);
    assert!(
        !ws.root().join("src").exists(),
        "the emptied folder is gone"
    );
}

/// A shell command that changes a file and writes `.gitignore` = `*` (which ignores every
/// file, itself included) is still rewound: the file and the old `.gitignore` come back,
/// whatever the ignore rules say now, and the report names both.
#[test]
fn rewind_restores_files_a_new_ignore_rule_covers() {
    if !git_available() {
        return;
    }
    let (_server, ws) = setup(vec![
        Reply::tool(
            "Bash",
            json!({"command": "printf 'agent\\n' > a.txt && printf '*\\n' > .gitignore"}),
        )
        .into(),
        Reply::text("ignored everything").into(),
    ]);
    git(&ws, &["init", "-q", "-b", "main"]);
    ws.write(".gitignore", "target/\n");
    ws.write("a.txt", "original\n");
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-qm", "first"]);
    let before = git_state(&ws);
    let r = run(&ws, &["-p", "ignore it all", "--permission-mode", "bypass"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(ws.read("a.txt"), "agent\n");
    assert_eq!(ws.read(".gitignore"), "*\n");

    let id = checkpoint_ids(&ws).last().unwrap().clone();
    let rewound = run(&ws, &["rewind", &id, "--only", "code"]);
    assert_eq!(rewound.code, Some(0), "{}", rewound.stderr);
    assert_eq!(ws.read("a.txt"), "original\n");
    assert_eq!(ws.read(".gitignore"), "target/\n");
    assert_eq!(git_state(&ws), before);
    let restored = rewound
        .stdout
        .lines()
        .find(|l| l.starts_with("files restored:"))
        .unwrap_or_else(|| panic!("no files restored line: {}", rewound.stdout));
    assert!(
        restored.contains("a.txt") && restored.contains(".gitignore"),
        "{restored}"
    );
}

/// `runs show ID --full` prints what the summaries leave out: a call's whole arguments, its
/// whole output and the whole diff; without `--full` the output is one line.
#[test]
fn runs_show_full_prints_every_calls_arguments_output_and_diff() {
    let long_line = format!("{} end-of-args", "x".repeat(300));
    let (_server, ws) = setup(vec![
        Reply::tool(
            "Bash",
            json!({"command": format!("seq 1 100 # {long_line}")}),
        )
        .into(),
        Reply::tool("Write", json!({"path": "a.txt", "content": "new\n"})).into(),
        Reply::text("done").into(),
    ]);
    let r = run(
        &ws,
        &[
            "-p",
            "count",
            "--permission-mode",
            "bypass",
            "--output-format",
            "stream-json",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let run_id = first_run_id(&r.stdout);
    let short = run(&ws, &["runs", "show", &run_id]);
    assert_eq!(short.code, Some(0), "{}", short.stderr);
    assert!(!short.stdout.contains("end-of-args"), "{}", short.stdout);
    assert!(!short.stdout.contains("      57\n"), "{}", short.stdout);
    let full = run(&ws, &["runs", "show", &run_id, "--full"]);
    assert_eq!(full.code, Some(0), "{}", full.stderr);
    let trail = full.stdout;
    assert!(trail.contains("end-of-args"), "{trail}");
    assert!(trail.contains("output:"), "{trail}");
    for n in 1..=100 {
        assert!(
            trail.contains(&format!("      {n}\n")),
            "{n} missing: {trail}"
        );
    }
    assert!(trail.contains("+new"), "{trail}");
}
