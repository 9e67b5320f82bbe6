//! A deliberately small HTTP/1.1 layer written on the socket, so every byte the client sees
//! is under the test's control: faults can cut a body anywhere, and a stream can be split
//! into writes of any size. One request per connection; every response says
//! `Connection: close`.

use std::collections::BTreeMap;
use std::io;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Refuse request heads larger than this rather than buffer without bound.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// A parsed request.
pub(super) struct HttpRequest {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// Names lowercased; repeated headers joined with `, `.
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

/// Reads one request. `Ok(None)` when the peer closed before sending anything (a probe).
pub(super) async fn read_request(stream: &mut TcpStream) -> io::Result<Option<HttpRequest>> {
    let mut buf = Vec::with_capacity(8 * 1024);
    let head_end = loop {
        if let Some(pos) = find(&buf, b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(invalid("request head larger than 64 KiB"));
        }
        if read_more(stream, &mut buf).await? == 0 {
            if buf.is_empty() {
                return Ok(None);
            }
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed inside the request head",
            ));
        }
    };
    let mut body = buf.split_off(head_end + 4);
    let head =
        std::str::from_utf8(&buf[..head_end]).map_err(|_| invalid("request head is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid("malformed request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(invalid("only HTTP/1.x is spoken here"));
    }
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(invalid("malformed header line"));
        };
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim();
        headers
            .entry(name)
            .and_modify(|existing| {
                existing.push_str(", ");
                existing.push_str(value);
            })
            .or_insert_with(|| value.to_string());
    }
    if headers
        .get("transfer-encoding")
        .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"))
    {
        return Err(invalid(
            "chunked request bodies are not supported by the scripted server",
        ));
    }
    let content_length = match headers.get("content-length") {
        Some(value) => value
            .parse::<usize>()
            .map_err(|_| invalid("bad Content-Length"))?,
        None => 0,
    };
    while body.len() < content_length {
        if read_more(stream, &mut body).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed inside the request body",
            ));
        }
    }
    body.truncate(content_length);
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path.to_string(), Some(query.to_string())),
        None => (target.to_string(), None),
    };
    Ok(Some(HttpRequest {
        method: method.to_string(),
        path,
        query,
        headers,
        body,
    }))
}

async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<usize> {
    let mut chunk = [0u8; 16 * 1024];
    let n = stream.read(&mut chunk).await?;
    buf.extend_from_slice(&chunk[..n]);
    Ok(n)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_string())
}

/// Writes the status line and headers, always ending with `Connection: close`.
pub(super) async fn write_head(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(&str, String)],
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    head.push_str("Connection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await
}

/// A complete response with a `Content-Length` body.
pub(super) async fn write_full(
    stream: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
    extra_headers: &[(&str, String)],
) -> io::Result<()> {
    let mut headers = vec![
        ("Content-Type", content_type.to_string()),
        ("Content-Length", body.len().to_string()),
    ];
    headers.extend(extra_headers.iter().cloned());
    write_head(stream, status, &headers).await?;
    stream.write_all(body).await
}

pub(super) async fn write_json(
    stream: &mut TcpStream,
    status: u16,
    body: &serde_json::Value,
    extra_headers: &[(&str, String)],
) -> io::Result<()> {
    let bytes = body.to_string().into_bytes();
    write_full(stream, status, "application/json", &bytes, extra_headers).await
}

/// A `Transfer-Encoding: chunked` body, as real servers send their streams. Each piece of
/// at most `write_bytes` bytes becomes its own HTTP chunk and its own TCP write, so a client
/// sees the stream arrive cut at arbitrary byte offsets.
pub(super) struct ChunkedBody<'a> {
    stream: &'a mut TcpStream,
    write_bytes: usize,
}

impl<'a> ChunkedBody<'a> {
    pub async fn start(
        stream: &'a mut TcpStream,
        content_type: &str,
        extra_headers: &[(&str, String)],
        write_bytes: Option<usize>,
    ) -> io::Result<ChunkedBody<'a>> {
        let mut headers = vec![
            ("Content-Type", content_type.to_string()),
            ("Cache-Control", "no-cache".to_string()),
            ("Transfer-Encoding", "chunked".to_string()),
        ];
        headers.extend(extra_headers.iter().cloned());
        write_head(stream, 200, &headers).await?;
        Ok(ChunkedBody {
            stream,
            write_bytes: write_bytes.unwrap_or(usize::MAX).max(1),
        })
    }

    pub async fn send(&mut self, data: &[u8]) -> io::Result<()> {
        // An empty chunk would end the body, so empty data sends nothing.
        for piece in data.chunks(self.write_bytes) {
            let mut frame = format!("{:x}\r\n", piece.len()).into_bytes();
            frame.extend_from_slice(piece);
            frame.extend_from_slice(b"\r\n");
            self.stream.write_all(&frame).await?;
        }
        Ok(())
    }

    /// Writes the terminating zero-length chunk. Not calling it leaves the body incomplete,
    /// which is how a mid-stream disconnect looks to the client.
    pub async fn finish(self) -> io::Result<()> {
        self.stream.write_all(b"0\r\n\r\n").await
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}
