//! A terminal attached to a running `linggen serve` (`linggen --attach`, or `--continue` /
//! `--resume` of a session that server holds): the session stays owned by the server, the
//! terminal is one more window on it. Its events arrive over the same event stream a page
//! reads and are published on a local bus, so the shell renders them with the code it uses
//! for a session of its own; what the shell sends (messages, approvals, settings, cancel)
//! goes to the same routes the page posts to. See `doc/web.md`, "One live session".

mod client;
pub mod registry;

use std::path::Path;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use client::AttachError;
use client::Client;
use registry::ServeRecord;

use crate::llm::ChatMessage;
use crate::session::bus::Subscription;
use crate::session::{Event, EventBus, Inputs, SessionHandle};

/// The sender name an attached terminal's messages and answers carry, so that the
/// owner's own terminal (`terminal`) and the page tell them apart.
pub const SENDER: &str = "attached";

/// Which session of the server to attach to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Want {
    /// The one the server has current (the page's), or a new one when none is open.
    Current,
    /// The workspace's newest session (`--continue`).
    Newest,
    /// That session, by id or prefix (`--resume ID`).
    Id(String),
}

/// A session that runs in `linggen serve`, as the shell holds one of its own.
pub struct Attached {
    pub handle: SessionHandle,
    /// Every event, from the moment of attaching.
    pub events: Subscription,
    pub session_id: String,
    pub model_label: String,
    /// The conversation so far, for the shell to show as it shows a resumed one.
    pub resumed: Vec<ChatMessage>,
    pub server: ServeRecord,
}

/// Attaches to the running server of `root` (`server` when the caller found it already).
pub async fn attach(
    home: &Path,
    root: &Path,
    server: Option<ServeRecord>,
    want: Want,
) -> Result<Attached, AttachError> {
    let server = match server {
        Some(server) => server,
        None => registry::servers_of(home, root)
            .into_iter()
            .next()
            .ok_or_else(|| AttachError::NoServer(root.display().to_string()))?,
    };
    let client = Client::new(&server)?;
    let session_id = client.choose_session(&want).await?;
    let snapshot = client.snapshot(&session_id).await?;
    let bus = EventBus::new();
    let events = bus.subscribe_pacing();
    for event in catch_up(&snapshot) {
        bus.publish(event);
    }
    let seq = snapshot["seq"].as_u64().unwrap_or(0);
    let stop = CancellationToken::new();
    tokio::spawn(client::follow(
        client.clone(),
        session_id.clone(),
        seq,
        bus.clone(),
        stop.clone(),
    ));
    let (inputs, received) = Inputs::channel(64);
    let pump = tokio::spawn(client::forward(
        client,
        session_id.clone(),
        received,
        bus.clone(),
        stop,
    ));
    Ok(Attached {
        handle: SessionHandle::from_parts(inputs, bus, pump),
        events,
        model_label: snapshot["state"]["model"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        resumed: history(&snapshot),
        session_id,
        server,
    })
}

/// The conversation in a snapshot, as history messages.
fn history(snapshot: &Value) -> Vec<ChatMessage> {
    events_in(&snapshot["transcript"])
        .filter_map(|event| event.as_chat_message())
        .collect()
}

/// What the shell must know at once that history does not tell: the settings, whether a
/// turn runs, its answer so far, and the approvals waiting.
fn catch_up(snapshot: &Value) -> Vec<Event> {
    let state = &snapshot["state"];
    let mut events = Vec::new();
    let settings = serde_json::json!({
        "type": "SettingsUpdated",
        "agent_id": state["agent_id"],
        "mode": state["mode"],
        "model": state["model"],
        "permission_mode": state["permission_mode"],
        "max_iters": state["max_iters"],
    });
    events.extend(serde_json::from_value::<Event>(settings).ok());
    if state["status"] == "running" {
        let running = serde_json::json!({
            "type": "StateUpdated",
            "status": "running",
            "agent_id": state["agent_id"],
            "mode": state["mode"],
        });
        events.extend(serde_json::from_value::<Event>(running).ok());
    }
    for part in snapshot["streaming"].as_array().into_iter().flatten() {
        events.push(Event::Token {
            run_id: part["run_id"].as_str().unwrap_or_default().to_string(),
            agent_id: part["agent_id"].as_str().unwrap_or_default().to_string(),
            token: part["text"].as_str().unwrap_or_default().to_string(),
            thinking: part["thinking"].as_bool().unwrap_or(false),
            done: false,
        });
    }
    events.extend(events_in(&snapshot["pending_approvals"]));
    events
}

/// The events of a JSON list; ones this build does not know (a newer server) are skipped.
fn events_in(list: &Value) -> impl Iterator<Item = Event> + '_ {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| serde_json::from_value::<Event>(v.clone()).ok())
}

/// Whether `server` has the session `want` names open (live) now.
pub async fn is_open_in(server: &ServeRecord, want: &Want) -> bool {
    let Ok(client) = Client::new(server) else {
        return false;
    };
    let Ok(listed) = client.sessions().await else {
        return false;
    };
    let sessions = listed["sessions"].as_array().cloned().unwrap_or_default();
    let found = match want {
        Want::Current => None,
        Want::Newest => sessions.first(),
        Want::Id(id) => sessions
            .iter()
            .find(|s| s["id"].as_str().is_some_and(|s| s.starts_with(id.as_str()))),
    };
    found.is_some_and(|s| s["live"] == true)
}
