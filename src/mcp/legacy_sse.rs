//! The older HTTP+SSE transport (MCP 2024-11-05), for servers that offer only it: a GET
//! opens an event stream whose first `endpoint` event names where to POST messages; the
//! server's messages then arrive as `message` events on the stream. Used for `"type":
//! "sse"` entries, and when a URL refuses streamable HTTP.

use std::collections::BTreeMap;

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use tokio::sync::{mpsc, oneshot};

use crate::llm::sse::SseDecoder;

/// Why the SSE transport failed.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("{0}")]
    Http(String),
}

/// An open SSE session: messages in from the stream, out by POST to the endpoint.
pub struct LegacySse {
    client: reqwest::Client,
    endpoint: String,
    incoming: mpsc::Receiver<ServerJsonRpcMessage>,
    /// Ends the stream reader when the transport is dropped.
    _reader: tokio::task::JoinHandle<()>,
}

impl Drop for LegacySse {
    fn drop(&mut self) {
        self._reader.abort();
    }
}

impl LegacySse {
    /// Opens the stream at `url` and waits for its `endpoint` event.
    pub async fn connect(url: &str, headers: &BTreeMap<String, String>) -> Result<Self, SseError> {
        let client = client(headers)?;
        let response = client
            .get(url)
            .header("Accept", "text/event-stream")
            .send()
            .await
            .map_err(|e| SseError::Http(format!("cannot open the event stream: {e}")))?;
        if !response.status().is_success() {
            return Err(SseError::Http(format!(
                "the event stream answered HTTP {}",
                response.status().as_u16()
            )));
        }
        let base = response.url().clone();
        let (endpoint_tx, endpoint_rx) = oneshot::channel();
        let (messages, incoming) = mpsc::channel(64);
        let reader = tokio::spawn(read_events(response, endpoint_tx, messages));
        let path = endpoint_rx
            .await
            .map_err(|_| SseError::Http("the stream ended before naming its endpoint".into()))?;
        let endpoint = base
            .join(&path)
            .map_err(|e| SseError::Http(format!("endpoint `{path}`: {e}")))?;
        Ok(LegacySse {
            client,
            endpoint: endpoint.to_string(),
            incoming,
            _reader: reader,
        })
    }
}

fn client(headers: &BTreeMap<String, String>) -> Result<reqwest::Client, SseError> {
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        let (Ok(name), Ok(value)) = (
            reqwest::header::HeaderName::from_bytes(name.as_bytes()),
            reqwest::header::HeaderValue::from_str(value),
        ) else {
            // Never the value: it may be a secret.
            return Err(SseError::Http(format!(
                "header `{name}` is not a valid HTTP header"
            )));
        };
        map.insert(name, value);
    }
    crate::llm::http::install_tls_provider();
    reqwest::Client::builder()
        .default_headers(map)
        .build()
        .map_err(|e| SseError::Http(e.to_string()))
}

/// Reads the stream: the first `endpoint` event to `endpoint`, every `message` event (or
/// unnamed one) parsed to `messages`. Ends with the stream.
async fn read_events(
    mut response: reqwest::Response,
    endpoint: oneshot::Sender<String>,
    messages: mpsc::Sender<ServerJsonRpcMessage>,
) {
    let mut decoder = SseDecoder::new();
    let mut endpoint = Some(endpoint);
    while let Ok(Some(chunk)) = response.chunk().await {
        for event in decoder.push(&chunk) {
            match event.event.as_str() {
                "endpoint" => {
                    if let Some(tx) = endpoint.take() {
                        let _ = tx.send(event.data.trim().to_string());
                    }
                }
                "" | "message" => {
                    // A message that does not parse is dropped: the call it answers then
                    // times out with the server named.
                    if let Ok(message) = serde_json::from_str(&event.data)
                        && messages.send(message).await.is_err()
                    {
                        return;
                    }
                }
                _ => {}
            }
        }
    }
}

impl rmcp::transport::Transport<RoleClient> for LegacySse {
    type Error = SseError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), SseError>> + Send + 'static {
        let client = self.client.clone();
        let endpoint = self.endpoint.clone();
        async move {
            let response = client
                .post(&endpoint)
                .json(&item)
                .send()
                .await
                .map_err(|e| SseError::Http(format!("cannot post a message: {e}")))?;
            if response.status().is_success() {
                Ok(())
            } else {
                Err(SseError::Http(format!(
                    "a posted message was answered HTTP {}",
                    response.status().as_u16()
                )))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), SseError> {
        self._reader.abort();
        Ok(())
    }
}
