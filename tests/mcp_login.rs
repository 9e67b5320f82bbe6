//! `linggen mcp login|logout`: OAuth sign-in for a remote MCP server, against the
//! reference server behind an OAuth gate (tests/support/oauth.rs), through the binary.

// Test code may unwrap: a failure there is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use support::oauth::{OAuthGate, approve_in_browser};
use support::{
    Protocol, Reply, ScriptedServer, Step, Workspace, mcp_everything, run_with_timeout, texts,
    write_config_with,
};

/// The reference server over streamable HTTP, behind a gate whose tokens last
/// `expires_in` seconds.
fn protected_server(entry: &Path, expires_in: u64) -> (support::KillOnDrop, OAuthGate) {
    let (server, port) = support::mcp_http_server(entry, "streamableHttp");
    (server, OAuthGate::start(port, expires_in))
}

fn workspace(gate: &OAuthGate, script: Vec<Step>) -> (Workspace, ScriptedServer) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, script);
    let ws = Workspace::new();
    let config = format!("[mcp_servers.remote]\nurl = \"{}\"\n", gate.url());
    write_config_with(ws.home(), Protocol::OpenAi, &server.url(), &config);
    (ws, server)
}

fn run(ws: &Workspace, args: &[&str]) -> (Option<i32>, String, String) {
    let out = run_with_timeout(ws.cmd().args(args), Duration::from_secs(90));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A workspace signed in to the gated reference server with a token that has just
/// expired (the gate's first token lasts a second): the next connection must refresh.
fn signed_in_and_expired(
    entry: &Path,
) -> (support::KillOnDrop, OAuthGate, Workspace, ScriptedServer) {
    let (http, gate) = protected_server(entry, 1);
    let (ws, server) = workspace(&gate, vec![]);
    sign_in(&ws);
    std::thread::sleep(Duration::from_millis(1_500));
    (http, gate, ws, server)
}

/// Runs `linggen mcp login remote` and acts as the person's browser: follows the link it
/// prints. Returns the command's stdout.
fn sign_in(ws: &Workspace) -> String {
    let mut child = ws
        .cmd()
        .args(["mcp", "login", "remote"])
        // A browser that opens nothing: the test follows the link itself.
        .env("BROWSER", "/bin/true")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read on another thread to the end, so linggen can go on writing to stderr.
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (lines_tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let mut said = String::new();
    let mut link = None;
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(30)) {
        said.push_str(&line);
        said.push('\n');
        if let Some(at) = line.find("http://127.0.0.1") {
            link = Some(line[at..].trim().to_string());
            break;
        }
    }
    let link = link.unwrap_or_else(|| panic!("no sign-in link in:\n{said}"));
    assert!(link.contains("/authorize?"), "{link}");
    let callback = approve_in_browser(&link);
    assert!(callback.contains("200"), "{callback}");
    let mut status = None;
    support::wait_until("the login to finish", Duration::from_secs(30), || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    let status = status.unwrap();
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    assert_eq!(status.code(), Some(0), "{said}\n{stdout}");
    stdout
}

fn credentials(ws: &Workspace) -> String {
    std::fs::read_to_string(ws.home().join("mcp-credentials.json")).unwrap_or_default()
}

/// Every file under `dir` but the credentials, as text, for looking for a token.
fn everything_but_credentials(dir: &Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.push_str(&everything_but_credentials(&path));
        } else if !path.ends_with("mcp-credentials.json") {
            out.push_str(&String::from_utf8_lossy(
                &std::fs::read(&path).unwrap_or_default(),
            ));
        }
    }
    out
}

#[test]
fn signing_in_lets_a_session_use_a_protected_server_and_the_token_stays_private() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let (_http, gate) = protected_server(&entry, 3600);
    let (ws, server) = workspace(
        &gate,
        vec![
            Step::from(Reply::tool(
                "mcp__remote__echo",
                json!({"message": "signed call"}),
            )),
            Reply::text("Done.").into(),
        ],
    );

    // Before: the server answers 401, and the person is told what to run.
    let (code, _, stderr) = run(&ws, &["mcp", "get", "remote"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("needs you to sign in: run `linggen mcp login remote`"),
        "{stderr}"
    );

    let said = sign_in(&ws);
    assert!(said.contains("Signed in to `remote`"), "{said}");
    assert_eq!(gate.log().registrations, vec!["linggen".to_string()]);
    assert_eq!(gate.log().grants, vec!["authorization_code".to_string()]);
    let path = ws.home().join("mcp-credentials.json");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the credentials are owner-only");
    assert!(
        credentials(&ws).contains("access-1"),
        "{}",
        credentials(&ws)
    );

    // A session sends the token, and the model's tool call reaches the server.
    let (code, stdout, stderr) = run(&ws, &["-p", "echo", "--allowed-tools", "mcp__remote__echo"]);
    assert_eq!(code, Some(0), "{stderr}");
    let results = server
        .last_chat_request()
        .map(|r| texts(&r, "tool"))
        .unwrap_or_default()
        .join("\n");
    assert!(results.contains("Echo: signed call"), "{results}\n{stderr}");
    assert!(
        gate.log()
            .mcp_auth
            .contains(&Some("Bearer access-1".to_string())),
        "{:?}",
        gate.log().mcp_auth
    );

    // The token goes nowhere else: not to the model, not to the output, not to the
    // session store or any other file linggen keeps.
    let sent: String = server
        .chat_requests()
        .iter()
        .map(|r| r.to_string())
        .collect();
    for secret in ["access-1", "refresh-1"] {
        assert!(!sent.contains(secret), "{secret} was sent to the model");
        assert!(!stdout.contains(secret) && !stderr.contains(secret));
        assert!(
            !everything_but_credentials(ws.home()).contains(secret),
            "{secret} is in a file other than the credentials"
        );
    }

    let (code, stdout, stderr) = run(&ws, &["mcp", "get", "remote"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("sign-in:  signed in"), "{stdout}");
    assert!(stdout.contains("mcp__remote__echo"), "{stdout}");
}

#[test]
fn an_expired_token_is_refreshed_and_a_revoked_one_asks_to_sign_in_again() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let (_http, gate, ws, _server) = signed_in_and_expired(&entry);

    let (code, stdout, stderr) = run(&ws, &["mcp", "get", "remote"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("mcp__remote__echo"), "{stdout}");
    assert_eq!(
        gate.log().grants,
        vec![
            "authorization_code".to_string(),
            "refresh_token".to_string()
        ]
    );
    assert!(
        credentials(&ws).contains("access-2"),
        "the refreshed token is kept"
    );

    // The person revoked linggen at the provider: refreshing fails, and they are told.
    gate.revoke();
    std::thread::sleep(Duration::from_millis(1_500));
    let (code, _, stderr) = run(&ws, &["mcp", "get", "remote"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("needs you to sign in again: run `linggen mcp login remote`"),
        "{stderr}"
    );

    let (code, stdout, _) = run(&ws, &["mcp", "logout", "remote"]);
    assert_eq!(code, Some(0));
    assert!(stdout.contains("Signed out of `remote`"), "{stdout}");
    assert!(!credentials(&ws).contains("remote"), "{}", credentials(&ws));
    let (_, stdout, _) = run(&ws, &["mcp", "logout", "remote"]);
    assert!(stdout.contains("had no sign-in to forget"), "{stdout}");
}

/// Two linggen processes find the token expired at once, and the provider takes each
/// refresh token once: one refreshes, the other waits for it and takes its token. Before
/// the refresh held the credentials file's lock, both spent the same refresh token and the
/// second was told to sign in again.
#[test]
fn two_processes_refreshing_at_once_spend_the_refresh_token_once() {
    let Some(entry) = mcp_everything() else {
        return;
    };
    let (_http, gate, ws, _server) = signed_in_and_expired(&entry);
    // Slow enough that both ask before the first refreshed token is saved.
    gate.slow_refresh(Duration::from_millis(1_500));
    let both: Vec<_> = (0..2)
        .map(|_| {
            ws.cmd()
                .args(["mcp", "get", "remote"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in both {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("mcp__remote__echo"),
            "{stderr}"
        );
    }
    assert_eq!(
        gate.log().grants,
        vec![
            "authorization_code".to_string(),
            "refresh_token".to_string()
        ]
    );
}

#[test]
fn a_stdio_server_or_an_unknown_name_cannot_sign_in() {
    let ws = Workspace::new();
    let config = "[mcp_servers.local]\ncommand = \"node\"\nargs = [\"x.js\"]\n";
    write_config_with(ws.home(), Protocol::OpenAi, "http://127.0.0.1:9", config);
    let (code, _, stderr) = run(&ws, &["mcp", "login", "local"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("only HTTP servers log in"), "{stderr}");
    let (code, _, stderr) = run(&ws, &["mcp", "login", "locl"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("did you mean `local`"), "{stderr}");
}
