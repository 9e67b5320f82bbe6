//! JSON-RPC 2.0 as ACP and MCP carry it: one message a line over a process's stdin and
//! stdout, or (MCP over HTTP) one message a request.
//!
//! Both sides send requests: an editor asks linggen (`session/prompt`) and linggen asks it
//! (`session/request_permission`); an MCP server asks its client for the workspace's roots.
//! [`Peer`] is linggen's end: it sends responses, notifications and requests, and routes
//! each response the other side sends back to the request that waits for it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use crate::sync::lock;

/// JSON-RPC's own error codes, and ACP's.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// ACP: the agent needs the client to authenticate first.
    pub const AUTH_REQUIRED: i64 = -32000;
    /// ACP: a resource (a session, a file) that does not exist.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

/// An error as JSON-RPC sends it: a code and a sentence for a person.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} (JSON-RPC error {code})")]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
        }
    }

    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(code::INVALID_PARAMS, message)
    }

    pub fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(code::INTERNAL_ERROR, message)
    }

    fn to_json(&self) -> Value {
        json!({ "code": self.code, "message": self.message })
    }

    fn from_json(error: &Value) -> RpcError {
        RpcError {
            code: error["code"].as_i64().unwrap_or(code::INTERNAL_ERROR),
            message: error["message"]
                .as_str()
                .unwrap_or("the other side answered with an error")
                .to_string(),
        }
    }
}

/// A message from the other side that linggen must act on.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
}

/// What one message from the other side was.
#[derive(Debug, PartialEq)]
pub enum Line {
    Incoming(Incoming),
    /// A response to one of linggen's own requests (routed by [`Peer::deliver`]).
    Response {
        id: i64,
        result: Result<Value, RpcError>,
    },
    /// Not a message linggen can act on: answered with this error (`id` null when the
    /// line had none, as JSON-RPC asks).
    Invalid {
        id: Value,
        error: RpcError,
    },
    /// Blank, or a response nobody waits for: nothing to do.
    Ignored,
}

/// Reads one message (a line of a stdio transport).
pub fn parse(line: &str) -> Line {
    if line.trim().is_empty() {
        return Line::Ignored;
    }
    let message: Value = match serde_json::from_str(line) {
        Ok(message) => message,
        Err(e) => {
            return Line::Invalid {
                id: Value::Null,
                error: RpcError::new(code::PARSE_ERROR, format!("not JSON: {e}")),
            };
        }
    };
    let Some(object) = message.as_object() else {
        return invalid(Value::Null, "a message must be a JSON object");
    };
    let id = object.get("id").cloned();
    if let Some(method) = object.get("method") {
        let Some(method) = method.as_str() else {
            return invalid(id.unwrap_or(Value::Null), "`method` must be a string");
        };
        let params = object.get("params").cloned().unwrap_or(Value::Null);
        let method = method.to_string();
        return Line::Incoming(match id {
            Some(id) if id.is_string() || id.is_number() => {
                Incoming::Request { id, method, params }
            }
            Some(Value::Null) | None => Incoming::Notification { method, params },
            Some(_) => return invalid(Value::Null, "`id` must be a string or a number"),
        });
    }
    match (id.as_ref().and_then(Value::as_i64), object.get("error")) {
        (Some(id), Some(error)) => Line::Response {
            id,
            result: Err(RpcError::from_json(error)),
        },
        (Some(id), None) if object.contains_key("result") => Line::Response {
            id,
            result: Ok(object["result"].clone()),
        },
        (Some(_), None) => invalid(
            id.unwrap_or(Value::Null),
            "a response needs `result` or `error`",
        ),
        (None, _) if id.is_some() => Line::Ignored,
        (None, _) => invalid(Value::Null, "a request needs `method`"),
    }
}

fn invalid(id: Value, message: &str) -> Line {
    Line::Invalid {
        id,
        error: RpcError::new(code::INVALID_REQUEST, message),
    }
}

/// Where the answer to one of linggen's requests goes.
type Waiting = oneshot::Sender<Result<Value, RpcError>>;

/// linggen's end of the connection; cheap to clone.
#[derive(Clone)]
pub struct Peer {
    out: mpsc::UnboundedSender<String>,
    waiting: Arc<Mutex<Requests>>,
    next_id: Arc<AtomicI64>,
}

/// The requests waiting for an answer, and whether answers can still come: once the other
/// side is gone, a new request fails at once instead of waiting for nothing.
#[derive(Default)]
struct Requests {
    waiting: HashMap<i64, Waiting>,
    closed: bool,
}

/// A request sent and not yet answered.
pub struct Asked {
    /// Its id, for a caller that gives up on it (MCP's `notifications/cancelled` names it).
    pub id: i64,
    answer: oneshot::Receiver<Result<Value, RpcError>>,
}

impl Asked {
    /// The other side's answer, or [`Closed`] when it went away first.
    pub async fn answer(self) -> Result<Result<Value, RpcError>, Closed> {
        self.answer.await.map_err(|_| Closed)
    }
}

/// The other side has gone (its stream closed, or the writer could not write).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the connection was closed")]
pub struct Closed;

impl Peer {
    /// A peer whose messages go to `sink`, a line each, written in order by the task this
    /// returns.
    pub fn new<W>(sink: W) -> (Peer, tokio::task::JoinHandle<()>)
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (peer, lines) = Peer::unsent();
        let writer = tokio::spawn(write_lines(sink, lines));
        (peer, writer)
    }

    /// A peer whose messages are handed, in order and without a line end, to whoever reads
    /// the receiver: a transport that carries a message otherwise than as a line.
    pub fn unsent() -> (Peer, mpsc::UnboundedReceiver<String>) {
        let (out, messages) = mpsc::unbounded_channel();
        let peer = Peer {
            out,
            waiting: Arc::default(),
            next_id: Arc::new(AtomicI64::new(1)),
        };
        (peer, messages)
    }

    pub fn respond(&self, id: Value, result: Result<Value, RpcError>) {
        let message = match result {
            Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error.to_json() }),
        };
        self.send(&message);
    }

    pub fn notify(&self, method: &str, params: impl Serialize) {
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// Asks the other side and waits for its answer.
    pub async fn request(
        &self,
        method: &str,
        params: impl Serialize,
    ) -> Result<Result<Value, RpcError>, Closed> {
        self.ask(method, params).answer().await
    }

    /// Sends a request; its answer is awaited on what this returns. After [`Peer::close`]
    /// nothing is sent and the answer is [`Closed`].
    pub fn ask(&self, method: &str, params: impl Serialize) -> Asked {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, answer) = oneshot::channel();
        {
            let mut requests = lock(&self.waiting);
            if requests.closed {
                return Asked { id, answer };
            }
            requests.waiting.insert(id, tx);
        }
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        Asked { id, answer }
    }

    /// Stops waiting for request `id` (given up on): a late answer is dropped.
    pub fn forget(&self, id: i64) {
        lock(&self.waiting).waiting.remove(&id);
    }

    /// Hands a response to the request waiting for it.
    pub fn deliver(&self, id: i64, result: Result<Value, RpcError>) {
        if let Some(waiting) = lock(&self.waiting).waiting.remove(&id) {
            let _ = waiting.send(result);
        }
    }

    /// The other side is gone: every request still waiting fails, and so does every later
    /// one.
    pub fn close(&self) {
        let mut requests = lock(&self.waiting);
        requests.closed = true;
        requests.waiting.clear();
    }

    /// As [`Peer::close`], but the requests still waiting fail with `reason` (what went
    /// wrong on the connection) instead of as closed.
    pub fn close_because(&self, reason: &str) {
        let mut requests = lock(&self.waiting);
        requests.closed = true;
        for (_, waiting) in requests.waiting.drain() {
            let _ = waiting.send(Err(RpcError::internal(reason)));
        }
    }

    /// Whether [`Peer::close`] was called.
    pub fn is_closed(&self) -> bool {
        lock(&self.waiting).closed
    }

    fn send(&self, message: &Value) {
        let _ = self.out.send(message.to_string());
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(
    mut sink: W,
    mut lines: mpsc::UnboundedReceiver<String>,
) {
    while let Some(mut line) = lines.recv().await {
        line.push('\n');
        if sink.write_all(line.as_bytes()).await.is_err() || sink.flush().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        let request = parse(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#);
        assert!(matches!(request, Line::Incoming(Incoming::Request { .. })));
        let note = parse(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#);
        assert!(matches!(
            note,
            Line::Incoming(Incoming::Notification { .. })
        ));
        let answer = parse(r#"{"jsonrpc":"2.0","id":7,"result":{"ok":true}}"#);
        assert_eq!(
            answer,
            Line::Response {
                id: 7,
                result: Ok(json!({"ok": true}))
            }
        );
        let failed = parse(r#"{"jsonrpc":"2.0","id":8,"error":{"code":-1,"message":"no"}}"#);
        assert_eq!(
            failed,
            Line::Response {
                id: 8,
                result: Err(RpcError::new(-1, "no"))
            }
        );
    }

    #[tokio::test]
    async fn requests_after_the_other_side_went_fail_at_once_and_send_nothing() {
        let (peer, mut sent) = Peer::unsent();
        let asked = peer.ask("ping", json!({}));
        assert!(sent.recv().await.is_some_and(|m| m.contains("\"ping\"")));
        peer.close();
        assert!(peer.is_closed());
        assert_eq!(asked.answer().await, Err(Closed));
        assert_eq!(peer.request("ping", json!({})).await, Err(Closed));
        assert!(sent.try_recv().is_err(), "nothing is sent after close");
    }

    #[tokio::test]
    async fn a_forgotten_request_drops_its_late_answer() {
        let (peer, _sent) = Peer::unsent();
        let asked = peer.ask("slow", json!({}));
        peer.forget(asked.id);
        peer.deliver(asked.id, Ok(json!("late")));
        assert_eq!(asked.answer().await, Err(Closed));
    }

    #[test]
    fn broken_lines_are_errors_with_the_right_codes() {
        let Line::Invalid { id, error } = parse("{not json") else {
            panic!("expected an error")
        };
        assert_eq!((id, error.code), (Value::Null, code::PARSE_ERROR));
        let Line::Invalid { id, error } = parse(r#"{"id":3,"method":5}"#) else {
            panic!("expected an error")
        };
        assert_eq!((id, error.code), (json!(3), code::INVALID_REQUEST));
        assert!(matches!(parse("[1,2]"), Line::Invalid { .. }));
        assert_eq!(parse("   "), Line::Ignored);
    }
}
