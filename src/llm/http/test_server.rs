//! A one-request-per-connection HTTP/1.1 server that replays canned replies in order
//! and records what the client sent, so tests can check both directions of the wire.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::WireStream;
use crate::config::model::{ModelConfig, ProviderKind};
use crate::llm::StreamEvent;
use crate::llm::error::ErrorKind;
use crate::llm::retry::RetryPolicy;

pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    parts: Vec<Vec<u8>>,
    /// Close-delimited body (no Content-Length), as streaming servers send it.
    streamed: bool,
    /// Keep the connection open after the last part instead of closing it.
    hang: bool,
}

impl Reply {
    pub fn json(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            parts: vec![body.as_bytes().to_vec()],
            streamed: false,
            hang: false,
        }
    }

    pub fn stream(content_type: &str, parts: &[&str]) -> Reply {
        Reply {
            status: 200,
            headers: vec![("Content-Type".into(), content_type.into())],
            parts: parts.iter().map(|p| p.as_bytes().to_vec()).collect(),
            streamed: true,
            hang: false,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn hang(mut self) -> Reply {
        self.hang = true;
        self
    }

    async fn write_to(&self, stream: &mut TcpStream) -> std::io::Result<()> {
        let mut head = format!("HTTP/1.1 {} X\r\nConnection: close\r\n", self.status);
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !self.streamed {
            let len: usize = self.parts.iter().map(Vec::len).sum();
            head.push_str(&format!("Content-Length: {len}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await?;
        for part in &self.parts {
            stream.write_all(part).await?;
            stream.flush().await?;
            // Separate TCP writes so the client really sees the chunk boundaries.
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        if self.hang {
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        stream.shutdown().await
    }
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub head: String,
    pub body: String,
}

impl Recorded {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("request body is JSON")
    }

    /// The value of a request header (names compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_string())
        })
    }
}

pub struct Server {
    base: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Server {
    pub fn base(&self) -> String {
        self.base.clone()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("lock").clone()
    }
}

/// Feeds `input` to a stream parser in `chunk`-byte pieces, as the network would.
pub fn run_stream(
    wire: &mut dyn WireStream,
    input: &str,
    chunk: usize,
) -> (Vec<StreamEvent>, Result<bool, ErrorKind>) {
    let mut events = Vec::new();
    let mut sink = |e: StreamEvent| events.push(e);
    let mut result = Ok(false);
    for piece in input.as_bytes().chunks(chunk) {
        result = wire.feed(piece, &mut sink);
        if !matches!(result, Ok(false)) {
            break;
        }
    }
    if matches!(result, Ok(false)) {
        result = wire.finish(&mut sink);
    }
    (events, result)
}

/// Parses `input` fed in several chunk sizes (down to one byte) and checks that every size
/// gives the same result — chunk boundaries must never matter — then returns it.
pub fn parse_in_chunks<W: WireStream + Default>(
    input: &str,
) -> (Vec<StreamEvent>, Result<bool, ErrorKind>) {
    let mut last = None;
    for size in [1, 2, 4, 5, 9, 17, 64, 100_000] {
        let outcome = run_stream(&mut W::default(), input, size);
        if let Some(previous) = &last {
            assert_eq!(previous, &outcome, "chunk size {size} changed the result");
        }
        last = Some(outcome);
    }
    last.expect("ran")
}

pub async fn serve(replies: Vec<Reply>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&requests);
    tokio::spawn(async move {
        for reply in replies {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            if let Ok(request) = read_request(&mut stream).await {
                recorded.lock().expect("lock").push(request);
            }
            tokio::spawn(async move {
                let _ = reply.write_to(&mut stream).await;
            });
        }
    });
    Server { base, requests }
}

async fn read_request(stream: &mut TcpStream) -> std::io::Result<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let header_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
    let partial = Recorded {
        head: head.clone(),
        body: String::new(),
    };
    let len: usize = partial
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + len {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let end = buf.len().min(header_end + len);
    let body = String::from_utf8_lossy(&buf[header_end..end]).to_string();
    Ok(Recorded { head, body })
}

/// A model entry pointing at a test server, with a short idle timeout.
pub fn model_config(provider: ProviderKind, model: &str, url: String) -> ModelConfig {
    ModelConfig {
        timeout_secs: 5,
        ..ModelConfig::new("test", provider, model, &url)
    }
}

/// Retries without the real waits.
pub fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        base_delay: Duration::from_millis(1),
        ..RetryPolicy::default()
    }
}
