//! The kernel floor through the real binary: in `bypass` mode, where unlisted commands run
//! without a person, a repository's own script (which the analysis cannot see into) tries
//! everything a hostile one would. The sandbox must stop each attempt, and the model must
//! be told which wall it hit.

// Helpers here may unwrap: a failure is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::Read as _;
use std::os::unix::fs::PermissionsExt as _;
use std::time::Duration;

use serde_json::json;
use support::{
    Protocol, Reply, ScriptedServer, Step, TEST_KEY, Workspace, run_with_timeout,
    sandbox_available, texts,
};

#[test]
fn a_command_wrongly_allowed_still_cannot_escape_in_bypass_mode() {
    if !sandbox_available() {
        return;
    }
    let ws = Workspace::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("keep.txt"), "keep\n").unwrap();
    // The person's secrets: HOME is the test's LINGGEN_HOME.
    std::fs::create_dir_all(ws.home().join(".ssh")).unwrap();
    std::fs::write(ws.home().join(".ssh/id_rsa"), "PRIVATE KEY\n").unwrap();
    ws.write(".git/config", "[core]\n");
    ws.write("a.txt", "a\n");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let out = outside.path().display();
    let script = format!(
        "#!/bin/sh\n\
         cat \"$HOME/.ssh/id_rsa\" > stolen.txt\n\
         env > env.txt\n\
         echo '[core] fsmonitor = touch pwned' >> .git/config\n\
         touch {out}/pwned\n\
         rm -f {out}/keep.txt\n\
         cat {home}/linggen-agent.toml > config-copy.txt\n\
         bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' && touch connected\n\
         exit 0\n",
        home = ws.home().display(),
    );
    let path = ws.write("build.sh", &script);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();

    // A script whose failure the model sees: it must be told why.
    let path = ws.write("copy.sh", &format!("#!/bin/sh\ncp a.txt {out}/copied\n"));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = ws.write("move.sh", "#!/bin/sh\nmv .git moved-git\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();

    let calls = vec![
        ("Bash", json!({"command": "./build.sh"})),
        ("Bash", json!({"command": "./copy.sh"})),
        ("Bash", json!({"command": "./move.sh"})),
        ("Bash", json!({"command": "printenv"})),
    ];
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![Step::from(Reply::tools(calls)), Reply::text("done").into()],
    );
    ws.configure(Protocol::OpenAi, &server.url());
    let output = run_with_timeout(
        ws.cmd()
            .args(["-p", "build it", "--permission-mode", "bypass"])
            .env("GITHUB_TOKEN", "ghp-test-secret"),
        Duration::from_secs(90),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("cannot be sandboxed"), "{stderr}");
    let results = texts(&server.last_chat_request().unwrap(), "tool");

    // The script ran (bypass runs unlisted commands)…
    assert!(
        ws.root().join("env.txt").exists(),
        "the script did not run: {results:?}"
    );
    // …but could not read the secret, nor linggen's own settings,
    let stolen = std::fs::read_to_string(ws.root().join("stolen.txt")).unwrap_or_default();
    assert!(!stolen.contains("PRIVATE KEY"), "read ~/.ssh: {stolen}");
    let copy = std::fs::read_to_string(ws.root().join("config-copy.txt")).unwrap_or_default();
    assert!(!copy.contains("[[models]]"), "read $LINGGEN_HOME: {copy}");
    // …nor see the API keys,
    let env = ws.read("env.txt");
    assert!(!env.contains(TEST_KEY), "the model's API key leaked: {env}");
    assert!(!env.contains("ghp-test-secret"), "a token leaked: {env}");
    assert!(env.contains("PATH="), "{env}");
    // …nor plant a command in .git, nor write or delete outside the root,
    assert_eq!(ws.read(".git/config"), "[core]\n");
    assert!(!outside.path().join("pwned").exists());
    assert!(outside.path().join("keep.txt").exists());
    // …nor reach the network.
    assert!(!ws.root().join("connected").exists(), "connected out");
    let mut buf = [0u8; 1];
    if let Ok((mut s, _)) = listener.accept() {
        let _ = s.read(&mut buf);
        panic!("the host's listener got a connection from the sandbox");
    }

    // The plain commands failed, and the model is told which wall they hit.
    assert!(!outside.path().join("copied").exists());
    assert!(
        results[1].contains("sandbox: commands may write only inside the workspace"),
        "{}",
        results[1]
    );
    assert!(ws.root().join(".git/config").exists(), "{}", results[2]);
    assert!(!ws.root().join("moved-git").exists(), "{}", results[2]);
    assert!(
        results[2].contains("sandbox: .git is read-only"),
        "{}",
        results[2]
    );
    // printenv is never run without a person (the analysis), so it is denied in -p.
    assert!(results[3].contains("not run"), "{}", results[3]);
}

#[test]
fn outside_the_sandbox_only_with_a_person() {
    if !sandbox_available() {
        return;
    }
    let ws = Workspace::new();
    let calls = vec![(
        "Bash",
        json!({"command": "ls", "dangerouslyDisableSandbox": true}),
    )];
    let server = ScriptedServer::start_background(
        Protocol::Ollama,
        vec![Step::from(Reply::tools(calls)), Reply::text("done").into()],
    );
    ws.configure(Protocol::Ollama, &server.url());
    // Not even bypass mode with an allow rule runs it without asking.
    let output = run_with_timeout(
        ws.cmd().args([
            "-p",
            "list",
            "--permission-mode",
            "bypass",
            "--allowed-tools",
            "Bash(ls*)",
        ]),
        Duration::from_secs(60),
    );
    assert!(output.status.success());
    let results = texts(&server.last_chat_request().unwrap(), "tool");
    assert!(results[0].contains("not run"), "{}", results[0]);
    assert!(results[0].contains("outside the sandbox"), "{}", results[0]);
}

/// Runs `linggen -p` with `extra` appended to the person's config, against a model that
/// calls `ls` once; returns stderr and the tool results.
fn run_ls(ws: &Workspace, extra: &str) -> (String, Vec<String>) {
    let server = ScriptedServer::start_background(
        Protocol::Ollama,
        vec![
            Step::from(Reply::tools(vec![("Bash", json!({"command": "ls"}))])),
            Reply::text("done").into(),
        ],
    );
    support::write_config_with(ws.home(), Protocol::Ollama, &server.url(), extra);
    let output = run_with_timeout(ws.cmd().args(["-p", "list"]), Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stderr}");
    (stderr, texts(&server.last_chat_request().unwrap(), "tool"))
}

#[test]
fn without_a_sandbox_nothing_runs_without_asking() {
    let ws = Workspace::new();
    let (stderr, results) = run_ls(&ws, "[sandbox]\nenabled = false\n");
    assert!(
        stderr.contains("commands cannot be sandboxed: the sandbox is turned off"),
        "{stderr}"
    );
    assert!(stderr.contains("unconfined = \"allow\""), "{stderr}");
    // `ls` is read-only, and still not run without a person.
    assert!(results[0].contains("not run"), "{}", results[0]);

    // Opting out knowingly: the analysis alone decides again.
    let (_, results) = run_ls(&ws, "[sandbox]\nenabled = false\nunconfined = \"allow\"\n");
    assert!(results[0].starts_with("exit 0"), "{}", results[0]);
}

#[test]
fn a_project_file_cannot_loosen_the_sandbox() {
    let ws = Workspace::new();
    ws.write(
        "linggen-agent.toml",
        "[sandbox]\nnetwork = true\nwrite_paths = [\"/\"]\nenabled = false\nunconfined = \"allow\"\n",
    );
    let (stderr, _) = run_ls(&ws, "");
    assert!(
        stderr.contains(
            "[sandbox] enabled = false, network = true, unconfined = \"allow\", write_paths ignored"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("cannot be sandboxed"), "{stderr}");
}
