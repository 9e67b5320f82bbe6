//! Issue 22 through the real binary: what went *around* the sandbox. A program planted on a
//! workspace `PATH` entry, repository code in linggen's own git, traps left for the person's
//! git, children that outlive their call or linggen, metadata changes outside the root.
//! Each test failed before the launcher and passes with it.

// Helpers here may unwrap: a failure is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{
    Protocol, Reply, ScriptedServer, Step, Workspace, git, git_available, run_with_timeout,
    sandbox_available, texts,
};

const TIMEOUT: Duration = Duration::from_secs(90);

fn script(ws: &Workspace, name: &str, body: &str) {
    let path = ws.write(name, &format!("#!/bin/sh\n{body}\n"));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn executable(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `linggen -p` in bypass mode (unlisted commands run unasked) against a model that makes
/// `calls` in one turn; the tool results the model got back.
fn run_bypass(ws: &Workspace, calls: Vec<(&str, Value)>) -> Vec<String> {
    let server = ScriptedServer::start_background(
        Protocol::Ollama,
        vec![Step::from(Reply::tools(calls)), Reply::text("done").into()],
    );
    ws.configure(Protocol::Ollama, &server.url());
    let out = run_with_timeout(
        ws.cmd().args(["-p", "go", "--permission-mode", "bypass"]),
        TIMEOUT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    texts(&server.last_chat_request().unwrap(), "tool")
}

#[test]
fn outside_the_root_no_metadata_changes_either() {
    if !sandbox_available() {
        return;
    }
    let ws = Workspace::new();
    let outside = tempfile::tempdir().unwrap();
    let keep = outside.path().join("keep.txt");
    std::fs::write(&keep, "keep\n").unwrap();
    std::fs::set_permissions(&keep, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::metadata(&keep).unwrap();
    let dir_mode = std::fs::metadata(outside.path())
        .unwrap()
        .permissions()
        .mode();
    let out = outside.path().display();
    script(
        &ws,
        "meta.sh",
        &format!(
            "chmod 000 {out}/keep.txt; chmod -R 000 {out}; touch -d 2000-01-01 {out}/keep.txt; \
             touch -h -d 2000-01-01 {out}; setfattr -n user.x -v 1 {out}/keep.txt 2>/dev/null; \
             exit 0"
        ),
    );
    run_bypass(&ws, vec![("Bash", json!({"command": "./meta.sh"}))]);
    let after = std::fs::metadata(&keep).unwrap();
    assert_eq!(after.permissions().mode(), before.permissions().mode());
    assert_eq!(after.modified().unwrap(), before.modified().unwrap());
    assert_eq!(
        std::fs::metadata(outside.path())
            .unwrap()
            .permissions()
            .mode(),
        dir_mode
    );
}

#[test]
fn a_setsid_child_does_not_outlive_its_call() {
    if !sandbox_available() {
        return;
    }
    let ws = Workspace::new();
    script(
        &ws,
        "escape.sh",
        "setsid sh -c 'sleep 1; touch escaped' >/dev/null 2>&1 < /dev/null &\necho started",
    );
    let results = run_bypass(&ws, vec![("Bash", json!({"command": "./escape.sh"}))]);
    assert!(results[0].contains("started"), "{results:?}");
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        !ws.root().join("escaped").exists(),
        "a setsid child kept running after its call"
    );
}

/// A command still running when linggen is killed, by each signal that ends it, stops too.
#[test]
fn a_running_command_dies_with_linggen_whatever_the_signal() {
    if !sandbox_available() {
        return;
    }
    for signal in [libc::SIGKILL, libc::SIGTERM, libc::SIGHUP] {
        let ws = Workspace::new();
        script(
            &ws,
            "loop.sh",
            "setsid sh -c 'while :; do echo x >> alive.txt; sleep 0.1; done' &\n\
             while :; do echo x >> alive.txt; sleep 0.1; done",
        );
        let server = ScriptedServer::start_background(
            Protocol::Ollama,
            vec![
                Step::from(Reply::tool(
                    "Bash",
                    json!({"command": "./loop.sh", "timeout_ms": 60000}),
                )),
                Reply::text("done").into(),
            ],
        );
        ws.configure(Protocol::Ollama, &server.url());
        let mut child = ws
            .cmd()
            .args(["-p", "go", "--permission-mode", "bypass"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let alive = ws.root().join("alive.txt");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !alive.exists() {
            assert!(Instant::now() < deadline, "the command never started");
            std::thread::sleep(Duration::from_millis(50));
        }
        // SAFETY: kill sends a signal to our own child.
        unsafe {
            libc::kill(child.id() as libc::pid_t, signal);
        }
        let _ = child.wait();
        std::thread::sleep(Duration::from_millis(700));
        let len = std::fs::metadata(&alive).unwrap().len();
        std::thread::sleep(Duration::from_millis(1200));
        assert_eq!(
            std::fs::metadata(&alive).unwrap().len(),
            len,
            "the command kept writing after linggen died by signal {signal}"
        );
    }
}

#[test]
fn a_nested_repository_trap_is_undone_and_named() {
    if !sandbox_available() {
        return;
    }
    let ws = Workspace::new();
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("ran");
    script(
        &ws,
        "trap.sh",
        &format!(
            "mkdir -p sub/.git/hooks sub/.git/objects sub/.git/refs\n\
             echo 'ref: refs/heads/main' > sub/.git/HEAD\n\
             printf '[core]\\n\\tfsmonitor = touch {}\\n' > sub/.git/config\n\
             echo made",
            marker.display()
        ),
    );
    let results = run_bypass(&ws, vec![("Bash", json!({"command": "./trap.sh"}))]);
    assert!(
        results[0].contains("sandbox: removed sub/.git"),
        "{results:?}"
    );
    assert!(!ws.root().join("sub/.git").exists());
    // The person's own git in that folder now runs nothing.
    if git_available() {
        let _ = Command::new("git")
            .args(["status"])
            .current_dir(ws.root().join("sub"))
            .env("GIT_CEILING_DIRECTORIES", ws.root())
            .output();
        assert!(!marker.exists());
    }
}

/// A `git` planted on a `PATH` entry inside the workspace (an activated `.venv`) is never
/// what linggen's own git calls (checkpoints) run.
#[test]
fn a_planted_git_on_a_workspace_path_entry_never_runs() {
    if !git_available() {
        return;
    }
    let ws = Workspace::new();
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("planted-ran");
    let venv = ws.root().join(".venv/bin");
    executable(
        &venv.join("git"),
        &format!("touch {}\nexit 1", marker.display()),
    );
    let server = ScriptedServer::start_background(
        Protocol::Ollama,
        vec![
            Step::from(Reply::tool(
                "Write",
                json!({"path": "a.txt", "content": "x\n"}),
            )),
            Reply::text("done").into(),
        ],
    );
    ws.configure(Protocol::Ollama, &server.url());
    let path = format!(
        "{}:{}",
        venv.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = run_with_timeout(
        ws.cmd()
            .args(["-p", "write", "--allowed-tools", "Write"])
            .env("PATH", &path),
        TIMEOUT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ws.read("a.txt"), "x\n");
    assert!(!marker.exists(), "the planted git ran");
    // The checkpoint was taken with the real git.
    let list = run_with_timeout(
        ws.cmd().args(["rewind", "--list"]).env("PATH", &path),
        TIMEOUT,
    );
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.status.success() && !listed.trim().is_empty(),
        "{list:?}"
    );
    assert!(!marker.exists(), "the planted git ran for rewind");
}

/// `-p --worktree` runs git in the person's repository: hooks under a `core.hooksPath` the
/// agent could write (husky), an fsmonitor in the repository's and in a submodule's
/// configuration, and a clean filter must all stay silent.
#[test]
fn worktree_git_runs_no_repository_code() {
    if !git_available() {
        return;
    }
    let ws = Workspace::new();
    let outside = tempfile::tempdir().unwrap();
    let out = outside.path();
    let root = ws.root();
    // A submodule whose own configuration sets an fsmonitor.
    let upstream = out.join("upstream");
    std::fs::create_dir_all(&upstream).unwrap();
    git(&upstream, &["init", "-q", "-b", "main"]);
    std::fs::write(upstream.join("u.txt"), "u\n").unwrap();
    git(&upstream, &["add", "."]);
    git(&upstream, &["commit", "-qm", "u"]);

    git(root, &["init", "-q", "-b", "main"]);
    ws.write("a.txt", "original\n");
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "first"]);
    git(
        root,
        &["submodule", "add", "-q", upstream.to_str().unwrap(), "sub"],
    );
    git(root, &["commit", "-qm", "sub"]);
    for hook in ["pre-commit", "post-checkout", "post-commit", "commit-msg"] {
        executable(
            &root.join(".husky").join(hook),
            &format!("touch {}/hook-{hook}", out.display()),
        );
    }
    executable(
        &out.join("fsmonitor.sh"),
        &format!("touch {}/fsmonitor", out.display()),
    );
    executable(
        &out.join("clean.sh"),
        &format!("touch {}/clean; cat", out.display()),
    );
    executable(
        &out.join("sub-fsmonitor.sh"),
        &format!("touch {}/sub-fsmonitor", out.display()),
    );
    ws.write(".gitattributes", "*.txt filter=evil\n");
    git(root, &["add", ".gitattributes", ".husky"]);
    git(root, &["commit", "-qm", "hooks"]);
    git(root, &["config", "core.hooksPath", ".husky"]);
    git(
        root,
        &[
            "config",
            "core.fsmonitor",
            out.join("fsmonitor.sh").to_str().unwrap(),
        ],
    );
    git(
        root,
        &[
            "config",
            "filter.evil.clean",
            out.join("clean.sh").to_str().unwrap(),
        ],
    );
    git(
        &root.join("sub"),
        &[
            "config",
            "core.fsmonitor",
            out.join("sub-fsmonitor.sh").to_str().unwrap(),
        ],
    );
    let markers = || -> Vec<String> {
        std::fs::read_dir(out)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.ends_with(".sh") && n != "upstream")
            .collect()
    };
    assert!(markers().is_empty(), "{:?}", markers());

    let server = ScriptedServer::start_background(
        Protocol::Ollama,
        vec![
            Step::from(Reply::tool(
                "Write",
                json!({"path": "new.txt", "content": "from the job\n"}),
            )),
            Reply::text("done").into(),
        ],
    );
    ws.configure(Protocol::Ollama, &server.url());
    let run = run_with_timeout(
        ws.cmd()
            .args(["-p", "job", "--worktree", "--allowed-tools", "Write"]),
        TIMEOUT,
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("committed on branch job/"), "{stderr}");
    assert!(markers().is_empty(), "repository code ran: {:?}", markers());
    // Clean up the job's worktree folder beside the root.
    let listed = git(root, &["worktree", "list", "--porcelain"]);
    for line in listed.lines() {
        if let Some(path) = line.strip_prefix("worktree ")
            && path.contains("-job-")
        {
            let _ = std::fs::remove_dir_all(path);
        }
    }
}

/// Installs, in the child before exec, a seccomp filter that refuses `unshare` with
/// `CLONE_NEWUSER` (EPERM): a root whose user namespaces are denied, as a sysctl or a
/// container's profile does. linggen then takes its fallback.
#[cfg(target_arch = "x86_64")]
fn deny_user_namespaces(cmd: &mut Command) {
    use std::os::unix::process::CommandExt as _;
    #[repr(C)]
    struct Filter {
        code: u16,
        jt: u8,
        jf: u8,
        k: u32,
    }
    #[repr(C)]
    struct Program {
        len: u16,
        filter: *const Filter,
    }
    const LD_ABS: u16 = 0x20;
    const JEQ: u16 = 0x15;
    const JSET: u16 = 0x45;
    const RET: u16 = 0x06;
    let f = |code, jt, jf, k| Filter { code, jt, jf, k };
    let filter = [
        f(LD_ABS, 0, 0, 0),
        f(JEQ, 0, 2, libc::SYS_unshare as u32),
        f(LD_ABS, 0, 0, 16),
        f(JSET, 1, 0, libc::CLONE_NEWUSER as u32),
        f(RET, 0, 0, 0x7fff_0000),
        f(RET, 0, 0, 0x0005_0000 | libc::EPERM as u32),
    ];
    // SAFETY: prctl with a filter program that outlives the call (moved into the closure).
    unsafe {
        cmd.pre_exec(move || {
            let program = Program {
                len: filter.len() as u16,
                filter: filter.as_ptr(),
            };
            if libc::prctl(libc::PR_SET_SECCOMP, 2, &program as *const Program) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Root without user namespaces: the sandbox's fallback keeps the mount and network walls
/// but must give up every capability (the clock, modules, raw network) before exec.
#[cfg(target_arch = "x86_64")]
#[test]
fn the_fallback_without_user_namespaces_drops_every_capability() {
    if !sandbox_available() {
        return;
    }
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: the no-user-namespace fallback is root's; not root here");
        assert!(std::env::var("CI").is_err(), "CI runs as root");
        return;
    }
    let ws = Workspace::new();
    script(&ws, "caps.sh", "grep ^Cap /proc/self/status > caps.txt");
    let server = ScriptedServer::start_background(
        Protocol::Ollama,
        vec![
            Step::from(Reply::tool("Bash", json!({"command": "./caps.sh"}))),
            Reply::text("done").into(),
        ],
    );
    ws.configure(Protocol::Ollama, &server.url());
    let mut cmd = ws.cmd();
    cmd.args(["-p", "go", "--permission-mode", "bypass"]);
    deny_user_namespaces(&mut cmd);
    let out = run_with_timeout(&mut cmd, TIMEOUT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let caps = ws.read("caps.txt");
    assert_eq!(caps.lines().count(), 5, "{caps}");
    for line in caps.lines() {
        assert!(
            line.ends_with("0000000000000000"),
            "a capability kept: {caps}"
        );
    }
}
