//! The HTTP side of an attached terminal: the routes a page uses, with the server's
//! full-access token (see [`super::registry`]).

use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Want;
use super::registry::ServeRecord;
use crate::session::input::{Refusal, Sent};
use crate::session::{Decision, Event, EventBus, Input, UserMessage};

/// How long one request may take: the server answers at once (a message is queued, not
/// run), so a silent server is a dead one.
const REQUEST_LIMIT: Duration = Duration::from_secs(30);

/// How often the event stream is reconnected before the terminal gives up (1, 2, 4 s).
const RECONNECTS: u32 = 3;

#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error(
        "no `linggen serve` runs for {0}; start one there (`linggen serve`), or run linggen without --attach"
    )]
    NoServer(String),
    #[error("linggen serve at {url} is unreachable: {why}")]
    Unreachable { url: String, why: String },
    #[error("linggen serve refused: {0}")]
    Refused(String),
}

#[derive(Clone)]
pub(super) struct Client {
    http: reqwest::Client,
    base: String,
    /// The server, as people read it (`linggen serve (pid 123) at http://…`).
    owner: String,
}

impl Client {
    pub(super) fn new(server: &ServeRecord) -> Result<Client, AttachError> {
        let base = server.base_url();
        let mut headers = reqwest::header::HeaderMap::new();
        let auth = format!("Bearer {}", server.token);
        let unreachable = |why: String| AttachError::Unreachable {
            url: base.clone(),
            why,
        };
        let auth = reqwest::header::HeaderValue::from_str(&auth)
            .map_err(|e| unreachable(format!("its token is unusable ({e})")))?;
        headers.insert(reqwest::header::AUTHORIZATION, auth);
        // Every POST must come from the server's own origin (see `web::auth`).
        let origin = reqwest::header::HeaderValue::from_str(&base)
            .map_err(|e| unreachable(e.to_string()))?;
        headers.insert(reqwest::header::ORIGIN, origin);
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(Duration::from_secs(5))
            // The server is on this machine: a proxy from the environment has no business here.
            .no_proxy()
            .build()
            .map_err(|e| unreachable(e.to_string()))?;
        Ok(Client {
            http,
            base,
            owner: server.describe(),
        })
    }

    fn unreachable(&self, e: impl std::fmt::Display) -> AttachError {
        AttachError::Unreachable {
            url: self.base.clone(),
            why: e.to_string(),
        }
    }

    async fn get(&self, path: &str) -> Result<Value, AttachError> {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .timeout(REQUEST_LIMIT)
            .send()
            .await
            .map_err(|e| self.unreachable(e))?;
        self.answer(response).await
    }

    async fn post(&self, path: &str, body: &Value) -> Result<Value, AttachError> {
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .timeout(REQUEST_LIMIT)
            .json(body)
            .send()
            .await
            .map_err(|e| self.unreachable(e))?;
        self.answer(response).await
    }

    /// The body of a success; the server's own sentence for a refusal.
    async fn answer(&self, response: reqwest::Response) -> Result<Value, AttachError> {
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(body);
        }
        let why = body["error"]
            .as_str()
            .map_or_else(|| format!("HTTP {status}"), |e| e.to_string());
        Err(AttachError::Refused(why))
    }

    /// Opens the session `want` names in the server (resuming it there when it is not open)
    /// and returns its id.
    pub(super) async fn choose_session(&self, want: &Want) -> Result<String, AttachError> {
        let listed = self.sessions().await?;
        let sessions = listed["sessions"].as_array().cloned().unwrap_or_default();
        let id_of = |s: &Value| s["id"].as_str().map(str::to_string);
        let current = listed["current"].as_str().map(str::to_string);
        let newest = sessions.first().and_then(id_of);
        let wanted = match want {
            Want::Id(id) => Some(id.clone()),
            Want::Current => current.or(newest),
            Want::Newest => newest.or(current),
        };
        // Open there already (the only way under a terminal's `/share`, which opens none).
        let live = wanted.as_deref().and_then(|wanted| {
            sessions
                .iter()
                .filter(|s| s["live"] == true)
                .filter_map(id_of)
                .find(|id| id.starts_with(wanted))
        });
        if let Some(id) = live {
            return Ok(id);
        }
        let body = wanted.map_or_else(|| json!({}), |id| json!({ "session_id": id }));
        let opened = self.post("/api/sessions", &body).await?;
        opened["session_id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| AttachError::Refused("it named no session".into()))
    }

    pub(super) async fn sessions(&self) -> Result<Value, AttachError> {
        self.get("/api/sessions").await
    }

    pub(super) async fn snapshot(&self, session_id: &str) -> Result<Value, AttachError> {
        self.get(&format!("/api/session?session_id={session_id}"))
            .await
    }
}

/// Publishes the session's events on `bus` until `stop`, reconnecting after a dropped
/// stream from the last event seen. When the server is gone for good, says so and closes
/// the bus: the shell then ends.
pub(super) async fn follow(
    client: Client,
    session_id: String,
    mut seq: u64,
    bus: EventBus,
    stop: CancellationToken,
) {
    let mut failures = 0;
    let why = loop {
        let streamed = tokio::select! {
            _ = stop.cancelled() => return,
            streamed = stream_once(&client, &session_id, &mut seq, &bus) => streamed,
        };
        match streamed {
            Ok(Progress::Some) => failures = 0,
            Ok(Progress::Ended(why)) => break why,
            Ok(Progress::None) | Err(_) if failures < RECONNECTS => {}
            Ok(Progress::None) => break "the server stopped answering".to_string(),
            Err(e) => break e.to_string(),
        }
        failures += 1;
        tokio::time::sleep(Duration::from_secs(1 << (failures - 1))).await;
    };
    bus.publish(Event::Error {
        message: format!("detached from {}: {why}", client.owner),
    });
    bus.close();
}

enum Progress {
    /// Events arrived before the stream dropped.
    Some,
    /// The stream dropped with nothing new.
    None,
    /// The session ended there (closed, or the server stopped): nothing to reconnect to.
    Ended(String),
}

/// One connection of the event stream; `seq` follows the events published.
async fn stream_once(
    client: &Client,
    session_id: &str,
    seq: &mut u64,
    bus: &EventBus,
) -> Result<Progress, AttachError> {
    let url = format!(
        "{}/api/events?session_id={session_id}&last_event_id={seq}",
        client.base
    );
    let response = client
        .http
        .get(url)
        .send()
        .await
        .map_err(|e| client.unreachable(e))?;
    if response.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(Progress::Ended("the session was closed there".into()));
    }
    let response = client.answer_stream(response).await?;
    let mut body = response.bytes_stream();
    let (mut pending, mut got) = (String::new(), false);
    while let Some(chunk) = body.next().await {
        let Ok(chunk) = chunk else { break };
        pending.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = pending.find("\n\n") {
            let frame: String = pending.drain(..end + 2).collect();
            match parse_frame(&frame) {
                Frame::Event(id, event) => {
                    *seq = id.unwrap_or(*seq);
                    got = true;
                    bus.publish(event);
                }
                Frame::Resync(why) => return Ok(Progress::Ended(why)),
                Frame::Other => {}
            }
        }
    }
    Ok(if got { Progress::Some } else { Progress::None })
}

impl Client {
    async fn answer_stream(
        &self,
        response: reqwest::Response,
    ) -> Result<reqwest::Response, AttachError> {
        if response.status().is_success() {
            return Ok(response);
        }
        self.answer(response).await.map(|_| unreachable!())
    }
}

enum Frame {
    Event(Option<u64>, Event),
    /// The server cannot continue this stream where it left off.
    Resync(String),
    /// A comment (keep-alive), or an event this build does not know.
    Other,
}

fn parse_frame(frame: &str) -> Frame {
    let (mut id, mut data) = (None, String::new());
    for line in frame.lines() {
        if let Some(v) = line.strip_prefix("id: ") {
            id = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("data: ") {
            data.push_str(v);
        }
    }
    let Ok(value) = serde_json::from_str::<Value>(&data) else {
        return Frame::Other;
    };
    if value["type"] == "Resync" {
        let why = value["reason"].as_str().unwrap_or("the stream broke off");
        return Frame::Resync(format!("{why}; attach again to follow it"));
    }
    match serde_json::from_value::<Event>(value) {
        Ok(event) => Frame::Event(id, event),
        Err(_) => Frame::Other,
    }
}

/// Carries the shell's inputs to the server until the shell stops (`Shutdown`: the
/// terminal detaches; the session goes on in the server). Each answer is the server's.
pub(super) async fn forward(
    client: Client,
    session_id: String,
    mut received: mpsc::Receiver<Sent>,
    bus: EventBus,
    stop: CancellationToken,
) {
    while let Some(Sent { input, reply }) = received.recv().await {
        if matches!(input, Input::Shutdown | Input::ShutdownForClear) {
            let _ = reply.map(|r| r.send(Ok(())));
            break;
        }
        let answer = match request_for(&session_id, input) {
            Ok((path, body)) => client
                .post(&path, &body)
                .await
                .map(|_| ())
                .map_err(|e| Refusal::conflict(e.to_string())),
            Err(why) => Err(Refusal::invalid(why)),
        };
        Sent::answer(reply, &bus, answer);
    }
    stop.cancel();
}

/// The route and body that do what `input` does in a session of the terminal's own.
fn request_for(session_id: &str, input: Input) -> Result<(String, Value), String> {
    let settings = |field: &str, value: Value| {
        let body = json!({ "session_id": session_id, field: value });
        Ok(("/api/settings".to_string(), body))
    };
    match input {
        Input::UserMessage(message) => {
            Ok(("/api/messages".into(), message_body(session_id, message)))
        }
        Input::Approval { id, decision, .. } => {
            let (decision, reason) = match decision {
                Decision::AllowOnce => ("allow_once", None),
                Decision::AllowSession => ("allow_session", None),
                Decision::AllowProject => ("allow_project", None),
                Decision::Deny { reason } => ("deny", reason),
            };
            let body = json!({
                "session_id": session_id,
                "decision": decision,
                "reason": reason,
                "from": super::SENDER,
            });
            Ok((format!("/api/approvals/{id}"), body))
        }
        Input::SetAgent { agent } => settings("agent", json!(agent)),
        Input::SetMode { mode } => settings("mode", json!(mode)),
        Input::SetModel { model } => settings("model", json!(model)),
        Input::SetPermissionMode { mode } => settings("permission_mode", json!(mode)),
        Input::SetMaxIters { max_iters } => settings("max_iters", json!(max_iters)),
        Input::Cancel => Ok(("/api/cancel".into(), json!({ "session_id": session_id }))),
        Input::ClearQueue => Ok((
            "/api/cancel".into(),
            json!({ "session_id": session_id, "queue": true }),
        )),
        Input::CancelRun { run_id } => {
            Ok(("/api/agent-cancel".into(), json!({ "run_id": run_id })))
        }
        Input::StopTask { task_id } => Ok((
            "/api/task-stop".into(),
            json!({ "session_id": session_id, "task_id": task_id }),
        )),
        Input::RevokeRule { .. } => Err(
            "rules are removed where the session runs: in `linggen serve`'s workspace, \
             `linggen permissions`, or a terminal without --attach"
                .into(),
        ),
        Input::Shutdown | Input::ShutdownForClear => Err("detached".into()),
    }
}

/// A message as `POST /api/messages` takes it: the line as typed (the server reads it with
/// the same grammar: skills, `@agent`, triggers, `@file`), or the person's own command.
fn message_body(session_id: &str, message: UserMessage) -> Value {
    let images: Vec<Value> = message
        .images
        .iter()
        .map(|image| {
            json!({
                "media_type": image.format.media_type(),
                "data": image.data.as_str(),
            })
        })
        .collect();
    json!({
        "session_id": session_id,
        "content": message.content,
        "from": super::SENDER,
        "command": message.command,
        "compact": message.compact,
        "check": message.check,
        "images": images,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_becomes_its_event_and_id_and_a_keep_alive_nothing() {
        let frame = "id: 7\ndata: {\"type\":\"Warning\",\"message\":\"careful\"}\n\n";
        match parse_frame(frame) {
            Frame::Event(Some(7), Event::Warning { message }) => assert_eq!(message, "careful"),
            _ => panic!("not parsed"),
        }
        assert!(matches!(parse_frame(": keep-alive\n\n"), Frame::Other));
        let resync = "data: {\"type\":\"Resync\",\"reason\":\"fell behind\"}\n\n";
        assert!(matches!(parse_frame(resync), Frame::Resync(why) if why.contains("fell behind")));
    }

    #[test]
    fn settings_and_approvals_go_to_the_routes_the_page_uses() {
        let (path, body) = request_for(
            "s1",
            Input::SetMode {
                mode: crate::config::TurnMode::Talk,
            },
        )
        .unwrap();
        assert_eq!(path, "/api/settings");
        assert_eq!(body["mode"], "talk");
        assert_eq!(body["session_id"], "s1");
        let deny = Input::Approval {
            id: "a1".into(),
            decision: Decision::Deny {
                reason: Some("no".into()),
            },
            from: "terminal".into(),
        };
        let (path, body) = request_for("s1", deny).unwrap();
        assert_eq!(path, "/api/approvals/a1");
        assert_eq!(
            (body["decision"].as_str(), body["reason"].as_str()),
            (Some("deny"), Some("no"))
        );
        assert!(
            request_for(
                "s1",
                Input::RevokeRule {
                    rule: "Bash(x)".into()
                }
            )
            .is_err()
        );
    }
}
