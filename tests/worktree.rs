//! `-p --worktree`: the task runs in a new git worktree on branch `job/<id>`, its result is
//! committed there, and the person's checkout is left exactly as it was.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::json;
use support::{Protocol, Reply, ScriptedServer, Workspace, git, git_available, run};

#[test]
fn a_worktree_job_leaves_the_main_tree_untouched() {
    if !git_available() {
        return;
    }
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Reply::tool(
                "Write",
                json!({"path": "a.txt", "content": "from the job\n"}),
            ),
            Reply::text("done in the worktree"),
        ],
    );
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    let root = ws.root();
    git(root, &["init", "-q", "-b", "main"]);
    ws.write("a.txt", "original\n");
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "first"]);
    ws.write("local.txt", "uncommitted work\n");
    let status = git(root, &["status", "--porcelain"]);
    let head = git(root, &["rev-parse", "HEAD"]);

    let r = run(
        &ws,
        &[
            "-p",
            "--worktree",
            "change a",
            "--permission-mode",
            "accept-edits",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, "done in the worktree\n");
    // The person's checkout: same files, same status, same HEAD and branch.
    assert_eq!(ws.read("a.txt"), "original\n");
    assert_eq!(git(root, &["status", "--porcelain"]), status);
    assert_eq!(git(root, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(root, &["symbolic-ref", "HEAD"]), "refs/heads/main\n");
    // The job's branch holds the change, committed.
    let branch = r
        .stderr
        .split_whitespace()
        .find(|w| w.starts_with("job/"))
        .unwrap()
        .trim_end_matches([',', ';'])
        .to_string();
    assert_eq!(
        git(root, &["show", &format!("{branch}:a.txt")]),
        "from the job\n"
    );
    let log = git(root, &["log", "--format=%s", "-1", &branch]);
    assert!(log.starts_with("linggen: change a"), "{log}");
    let listed = git(root, &["worktree", "list", "--porcelain"]);
    let path = listed
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .find(|p| p.contains("-job-"))
        .unwrap()
        .to_string();
    assert!(r.stderr.contains(&path), "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("git merge {branch}")),
        "{}",
        r.stderr
    );
    let _ = std::fs::remove_dir_all(&path);
}

#[test]
fn worktree_outside_a_repository_is_a_usage_error() {
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, "http://127.0.0.1:9/v1");
    let r = run(&ws, &["-p", "--worktree", "x"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("needs a git repository"), "{}", r.stderr);
}
