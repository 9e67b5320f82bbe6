//! The web mirror over real HTTP: `linggen serve` as a child process against the scripted
//! model server, driven by a raw HTTP client that can forge what browsers and attackers
//! send. Every route and every security rule of `doc/web.md`: one-time link tickets, page
//! credentials and stream tickets, bearer tokens, never a cookie, read-only access, `Host`,
//! `Origin`, no CORS, loopback-only binding; then messages, the event stream and its replay,
//! the late joiner's snapshot, approvals, cancellation, run inspection, the serve-only
//! session routes and the connection limits.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

// Split by subject; `cargo test --test web` runs them all. Known server bugs are pinned by
// `#[ignore]`d tests that fail until they are fixed (`cargo test --test web -- --ignored`).
#[path = "web/approvals_and_runs.rs"]
mod approvals_and_runs;
#[path = "web/conversation.rs"]
mod conversation;
#[path = "web/limits.rs"]
mod limits;
#[path = "web/security.rs"]
mod security;
#[path = "web/settings.rs"]
mod settings;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::web_client::{EventStream, Response, Serve, SseEvent};
use support::{Protocol, ScriptedServer, Step, Workspace, texts};

/// The longest a scripted turn may take to show up on the stream.
const WAIT: Duration = Duration::from_secs(20);

/// The page's own files: served without a credential (the same bytes in every linggen).
const ASSET_ROUTES: &[&str] = &["/", "/app.js", "/app.css", "/agents.js", "/favicon.ico"];

/// Every `GET` route that needs a credential, with the query its handler needs.
const GET_ROUTES: &[&str] = &[
    "/api/events",
    "/api/session",
    "/api/sessions",
    "/api/agent-runs",
    "/api/agent-children?run_id=x",
    "/api/agent-context?run_id=x",
    "/api/run-log?run_id=x",
    "/api/commands",
    "/api/settings",
    "/api/agents",
    "/api/models",
    "/api/image?id=x",
];

/// Every `POST` route that needs a credential.
const POST_ROUTES: &[&str] = &[
    "/api/stream-ticket",
    "/api/sessions",
    "/api/messages",
    "/api/approvals/x",
    "/api/cancel",
    "/api/agent-cancel",
    "/api/settings",
    "/api/agents",
    "/api/agents/x",
    "/api/agents/x/duplicate",
    "/api/agents/x/delete",
];

/// A scripted model, a workspace configured for it and `linggen serve` in it. Bind the
/// result as `let (server, ws, serve)`: the server process is then killed first.
fn setup(steps: Vec<Step>) -> (ScriptedServer, Workspace, Serve) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, steps);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    let serve = Serve::start(ws.cmd().arg("serve"));
    (server, ws, serve)
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn seq(serve: &Serve) -> u64 {
    serve.session()["seq"].as_u64().unwrap()
}

/// Sends `content` and returns the events until the session is idle again.
fn turn(serve: &Serve, content: &str) -> Vec<SseEvent> {
    let after = seq(serve);
    serve.send(content);
    serve.events(Some(after)).until(WAIT, is_idle)
}

fn is_idle(e: &SseEvent) -> bool {
    e.kind() == "StateUpdated" && e.data["status"] == "idle"
}

fn of_kind<'a>(events: &'a [SseEvent], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e.kind() == kind)
        .map(|e| &e.data)
        .collect()
}

/// The streamed answer text, however the tokens were coalesced.
fn streamed_text(events: &[SseEvent]) -> String {
    of_kind(events, "Token")
        .iter()
        .filter(|t| t["thinking"] == false)
        .map(|t| t["token"].as_str().unwrap())
        .collect()
}

fn assert_error(response: &Response, status: u16, mentions: &str) {
    assert_eq!(response.status, status, "{}", response.text());
    let message = response.json()["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains(mentions),
        "the {status} error should mention `{mentions}`: {message}"
    );
}

/// The `ApprovalRequested` of the running turn, read from `stream`.
fn approval_request(stream: &mut EventStream) -> Value {
    let events = stream.until(WAIT, |e| e.kind() == "ApprovalRequested");
    events.last().unwrap().data.clone()
}

fn wait_until(what: &str, done: impl FnMut() -> bool) {
    support::wait_until(what, WAIT, done)
}
