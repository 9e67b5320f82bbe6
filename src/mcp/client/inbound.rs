//! What a server sends linggen: answers to linggen's requests go to the request waiting
//! for them; the server's own requests are answered here (`roots/list`, `ping`), and its
//! notifications acted on (`notifications/tools/list_changed`). Every transport hands its
//! messages to [`Inbound::take`].

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::protocol::jsonrpc::{self as rpc, Incoming, Line, Peer, RpcError, code};

/// What linggen does with what the server tells or asks it unprompted.
#[derive(Clone)]
pub(in crate::mcp) struct Events {
    /// Called when the server says its tool list changed.
    tools_changed: Arc<dyn Fn() + Send + Sync>,
    /// The workspace root, offered as the one root (`roots/list`), as Claude Code offers
    /// its project folder: servers that work on files start there. Roots are deprecated
    /// by the spec (SEP-2577) but are still how servers learn the project folder (the
    /// reference filesystem server does): kept until servers move on.
    root: Option<Value>,
}

impl Events {
    pub(in crate::mcp) fn new(tools_changed: Arc<dyn Fn() + Send + Sync>, root: &Path) -> Events {
        Events {
            tools_changed,
            root: root_of(root),
        }
    }
}

/// `root` as an MCP root: a `file://` URI named after its folder.
fn root_of(root: &Path) -> Option<Value> {
    let uri = url::Url::from_directory_path(root).ok()?;
    let mut listed = json!({ "uri": uri.to_string() });
    if let Some(name) = root.file_name() {
        listed["name"] = Value::String(name.to_string_lossy().into_owned());
    }
    Some(listed)
}

/// Where a transport hands the server's messages; cheap to clone.
#[derive(Clone)]
pub(in crate::mcp) struct Inbound {
    peer: Peer,
    events: Events,
}

impl Inbound {
    pub(in crate::mcp) fn new(peer: Peer, events: Events) -> Inbound {
        Inbound { peer, events }
    }

    /// Acts on one message, or on each of a batch (a JSON array of messages).
    pub(in crate::mcp) fn take(&self, message: &str) {
        if message.trim_start().starts_with('[') {
            let batch: Vec<Value> = serde_json::from_str(message).unwrap_or_default();
            for one in batch {
                self.take_one(&one.to_string());
            }
        } else {
            self.take_one(message);
        }
    }

    fn take_one(&self, message: &str) {
        match rpc::parse(message) {
            Line::Response { id, result } => self.peer.deliver(id, result),
            Line::Incoming(Incoming::Request { id, method, .. }) => {
                self.peer.respond(id, self.answer(&method));
            }
            Line::Incoming(Incoming::Notification { method, .. }) => {
                // Called before any later message is read: the answer to the call during
                // which the list changed finds the new list already being read.
                if method == "notifications/tools/list_changed" {
                    (self.events.tools_changed)();
                }
            }
            // What cannot be read is dropped: a request it answered times out with the
            // server named.
            Line::Invalid { .. } | Line::Ignored => {}
        }
    }

    fn answer(&self, method: &str) -> Result<Value, RpcError> {
        match method {
            "ping" => Ok(json!({})),
            "roots/list" => Ok(json!({ "roots": self.events.root.iter().collect::<Vec<_>>() })),
            _ => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("linggen does not answer `{method}`"),
            )),
        }
    }

    /// Fails the request `sent` (when it is one) with what the transport saw instead of
    /// an answer. An answer already given stands.
    pub(in crate::mcp) fn failed(&self, sent: &Sent, reason: impl Into<String>) {
        if let Some(id) = sent.id {
            self.peer.deliver(id, Err(RpcError::internal(reason)));
        }
    }

    /// The transport ended: waiting requests fail, and the connection reads as closed.
    pub(in crate::mcp) fn closed(&self) {
        self.peer.close();
    }

    /// Whether the connection reads as closed.
    pub(in crate::mcp) fn is_closed(&self) -> bool {
        self.peer.is_closed()
    }

    /// The server sent what cannot be read on from (a message without end): waiting
    /// requests fail with `why`, and the connection reads as closed (the next call starts
    /// it again).
    pub(in crate::mcp) fn broke(&self, why: impl std::fmt::Display) {
        self.peer
            .close_because(&format!("{why}; linggen closed the connection"));
    }
}

/// What a transport needs to know of a message linggen sends.
#[derive(Debug, Default, Clone, PartialEq)]
pub(in crate::mcp) struct Sent {
    /// Its id when it is a request (an answer is awaited).
    pub id: Option<i64>,
    pub method: Option<String>,
}

impl Sent {
    pub(in crate::mcp) fn of(message: &str) -> Sent {
        let Ok(Value::Object(object)) = serde_json::from_str::<Value>(message) else {
            return Sent::default();
        };
        let method = object.get("method").and_then(Value::as_str);
        Sent {
            id: object
                .get("id")
                .and_then(Value::as_i64)
                .filter(|_| method.is_some()),
            method: method.map(str::to_string),
        }
    }

    pub(in crate::mcp) fn is_request(&self) -> bool {
        self.id.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inbound(
        root: &Path,
        changed: Arc<dyn Fn() + Send + Sync>,
    ) -> (Inbound, Peer, tokio::sync::mpsc::UnboundedReceiver<String>) {
        let (peer, sent) = Peer::unsent();
        let inbound = Inbound::new(peer.clone(), Events::new(changed, root));
        (inbound, peer, sent)
    }

    fn reply(sent: &mut tokio::sync::mpsc::UnboundedReceiver<String>) -> Value {
        let message = sent.try_recv().unwrap_or_default();
        serde_json::from_str(&message).unwrap_or_default()
    }

    #[test]
    fn roots_list_offers_the_workspace_and_ping_answers_empty() {
        let (inbound, _peer, mut sent) = inbound(Path::new("/work/my project"), Arc::new(|| {}));
        inbound.take(r#"{"jsonrpc":"2.0","id":"r1","method":"roots/list"}"#);
        assert_eq!(
            reply(&mut sent),
            json!({"jsonrpc": "2.0", "id": "r1", "result": {"roots": [
                {"uri": "file:///work/my%20project/", "name": "my project"}
            ]}})
        );
        inbound.take(r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#);
        assert_eq!(
            reply(&mut sent),
            json!({"jsonrpc": "2.0", "id": 5, "result": {}})
        );
        inbound.take(r#"{"jsonrpc":"2.0","id":6,"method":"sampling/createMessage","params":{}}"#);
        let refused = reply(&mut sent);
        assert_eq!(refused["id"], 6);
        assert_eq!(refused["error"]["code"], code::METHOD_NOT_FOUND);
    }

    #[tokio::test]
    async fn responses_reach_their_requests_one_by_one_or_in_a_batch() {
        let (inbound, peer, _sent) = inbound(Path::new("/w"), Arc::new(|| {}));
        let first = peer.ask("a", json!({}));
        let second = peer.ask("b", json!({}));
        let batch = json!([
            {"jsonrpc": "2.0", "id": second.id, "result": {"b": 2}},
            {"jsonrpc": "2.0", "id": first.id, "error": {"code": -1, "message": "no"}}
        ]);
        inbound.take(&batch.to_string());
        assert_eq!(second.answer().await, Ok(Ok(json!({"b": 2}))));
        assert_eq!(first.answer().await, Ok(Err(RpcError::new(-1, "no"))));
    }

    #[test]
    fn a_list_changed_notification_calls_back_and_others_are_ignored() {
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = count.clone();
        let changed = Arc::new(move || {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        });
        let (inbound, _peer, mut sent) = inbound(Path::new("/w"), changed);
        inbound.take(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#);
        inbound.take(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#);
        assert_eq!(count.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert!(sent.try_recv().is_err(), "a notification is not answered");
    }

    #[test]
    fn a_sent_message_is_a_request_only_with_an_id_and_a_method() {
        let request = Sent::of(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#);
        assert_eq!(request.id, Some(3));
        assert!(request.is_request());
        let response = Sent::of(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#);
        assert!(!response.is_request());
        assert!(
            !Sent::of(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).is_request()
        );
    }
}
