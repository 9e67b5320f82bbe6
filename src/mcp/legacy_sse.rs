//! The older HTTP+SSE transport (MCP 2024-11-05), for servers that offer only it: a GET
//! opens an event stream whose first `endpoint` event names where to POST messages; the
//! server's messages then arrive as `message` events on the stream. Used for `"type":
//! "sse"` entries, and when a URL refuses streamable HTTP.

use std::collections::BTreeMap;

use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use super::client::http::client;
use super::client::inbound::{Inbound, Sent};
use crate::llm::http::with_root_cause;
use crate::protocol::sse::SseDecoder;

/// Why the SSE transport failed.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("{0}")]
    Http(String),
}

/// Opens the stream at `url`, waits for its `endpoint` event, then carries messages: the
/// server's from the stream to `inbound`, linggen's (`unsent`) by POST to the endpoint.
/// Returns the two tasks that do it; the connection closes when the stream ends.
pub(in crate::mcp) async fn connect(
    url: &str,
    headers: &BTreeMap<String, String>,
    inbound: Inbound,
    unsent: mpsc::UnboundedReceiver<String>,
) -> Result<Vec<AbortHandle>, SseError> {
    let client = client(headers).map_err(|e| SseError::Http(e.to_string()))?;
    let response = client
        .get(url)
        .header("Accept", "text/event-stream")
        .send()
        .await
        .map_err(|e| {
            SseError::Http(format!(
                "cannot open the event stream: {}",
                with_root_cause(&e)
            ))
        })?;
    if !response.status().is_success() {
        return Err(SseError::Http(format!(
            "the event stream answered HTTP {}",
            response.status().as_u16()
        )));
    }
    let base = response.url().clone();
    let (endpoint_tx, endpoint_rx) = oneshot::channel();
    let reader = tokio::spawn(read_events(response, endpoint_tx, inbound.clone()));
    let Ok(path) = endpoint_rx.await else {
        reader.abort();
        return Err(SseError::Http(
            "the stream ended before naming its endpoint".into(),
        ));
    };
    let endpoint = match base.join(&path) {
        Ok(endpoint) => endpoint.to_string(),
        Err(e) => {
            reader.abort();
            return Err(SseError::Http(format!("endpoint `{path}`: {e}")));
        }
    };
    let poster = tokio::spawn(post_all(client, endpoint, unsent, inbound));
    Ok(vec![reader.abort_handle(), poster.abort_handle()])
}

/// Reads the stream: the first `endpoint` event to `endpoint`, every `message` event (or
/// unnamed one) to `inbound`. When the stream ends, so does the connection.
async fn read_events(
    mut response: reqwest::Response,
    endpoint: oneshot::Sender<String>,
    inbound: Inbound,
) {
    let mut decoder = SseDecoder::new();
    let mut endpoint = Some(endpoint);
    while let Ok(Some(chunk)) = response.chunk().await {
        let events = match decoder.push(&chunk) {
            Ok(events) => events,
            Err(too_long) => return inbound.broke(too_long),
        };
        for event in events {
            match event.event.as_str() {
                "endpoint" => {
                    if let Some(tx) = endpoint.take() {
                        let _ = tx.send(event.data.trim().to_string());
                    }
                }
                "" | "message" => inbound.take(&event.data),
                _ => {}
            }
        }
    }
    inbound.closed();
}

/// Posts linggen's messages in order; the server answers on the stream. A request whose
/// POST fails is failed with what happened; an unreachable server closes the connection.
async fn post_all(
    client: reqwest::Client,
    endpoint: String,
    mut unsent: mpsc::UnboundedReceiver<String>,
    inbound: Inbound,
) {
    while let Some(message) = unsent.recv().await {
        let sent = Sent::of(&message);
        let posted = client
            .post(&endpoint)
            .header("Content-Type", "application/json")
            .body(message)
            .send()
            .await;
        match posted {
            Ok(response) if response.status().is_success() => {}
            Ok(response) => inbound.failed(
                &sent,
                format!(
                    "a posted message was answered HTTP {}",
                    response.status().as_u16()
                ),
            ),
            Err(e) => {
                inbound.failed(
                    &sent,
                    format!("cannot post a message: {}", with_root_cause(&e)),
                );
                inbound.closed();
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::mcp::client::inbound::Events;
    use crate::protocol::jsonrpc::Peer;

    #[tokio::test]
    async fn a_stream_that_cannot_be_opened_names_why() {
        let free = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap_or_else(|e| panic!("{e}"));
        let (peer, unsent) = Peer::unsent();
        let inbound = Inbound::new(peer, Events::new(Arc::new(|| {}), Path::new("/work")));
        let url = format!("http://{free}/sse");
        let reason = match connect(&url, &BTreeMap::new(), inbound, unsent).await {
            Ok(_) => panic!("connected to a closed port"),
            Err(e) => e.to_string(),
        };
        assert!(reason.contains("cannot open the event stream"), "{reason}");
        // Not only reqwest's "error sending request": what went wrong underneath.
        assert!(reason.contains("Connection refused"), "{reason}");
    }
}
