//! The web mirror from the outside: a raw HTTP/1.1 client, a Server-Sent Events reader and
//! `linggen serve` as a child process. Shared by the HTTP, pty and browser tests.
//!
//! The client is raw on purpose: tests forge what a browser or an attacker sends (`Host`,
//! `Origin`, cookies) and see every response header exactly as sent, which a full client
//! would fill in, normalise or hide. Every read has a deadline, so no test can hang.
//!
//! ```ignore
//! let serve = Serve::start(ws.cmd().arg("serve"));
//! let seq = serve.session()["seq"].as_u64().unwrap();
//! assert_eq!(serve.post("/api/messages", &json!({"content": "hi"})).status, 202);
//! let events = serve.events(Some(seq)).until(WAIT, |e| e.kind() == "Outcome");
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The longest one request may take, connection to last byte.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest `linggen serve` may take to print its URLs.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A whole HTTP response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// Names lowercased, in the order they were sent.
    pub headers: Vec<(String, String)>,
    /// Already de-chunked.
    pub body: Vec<u8>,
}

impl Response {
    /// The first header named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON; panics with the body when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "status {}: the body is not JSON ({e}): {}",
                self.status,
                self.text()
            )
        })
    }
}

/// Sends one request with `Connection: close` and reads the whole response. `Host` is
/// `addr` unless `headers` names one; `Content-Length` is added for a non-empty body.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    request_raw(addr, &encode(addr, method, path, headers, body))
}

/// Sends `raw` verbatim (request line, headers and body) and reads the whole response: for
/// requests [`request`] would not make, such as one without `Host`.
pub fn request_raw(addr: SocketAddr, raw: &[u8]) -> Response {
    let mut stream = send(addr, raw);
    let mut bytes = Vec::new();
    let deadline = Instant::now() + REQUEST_TIMEOUT;
    loop {
        match read_some(&mut stream, &mut bytes, deadline) {
            ReadResult::More => {}
            ReadResult::End => return parse_response(&bytes),
            ReadResult::TimedOut => panic!(
                "no complete answer within {REQUEST_TIMEOUT:?}; got: {}",
                String::from_utf8_lossy(&bytes)
            ),
        }
    }
}

fn encode(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("Connection: close\r\n\r\n");
    [head.as_bytes(), body].concat()
}

fn send(addr: SocketAddr, raw: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect_timeout(&addr, REQUEST_TIMEOUT)
        .unwrap_or_else(|e| panic!("connect to {addr}: {e}"));
    stream.set_write_timeout(Some(REQUEST_TIMEOUT)).unwrap();
    // A server may answer and close before reading everything; its answer still counts.
    let _ = stream.write_all(raw);
    stream
}

/// What one read brought.
enum ReadResult {
    More,
    End,
    TimedOut,
}

/// Reads more bytes into `into`, waiting until `deadline` at most.
fn read_some(stream: &mut TcpStream, into: &mut Vec<u8>, deadline: Instant) -> ReadResult {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return ReadResult::TimedOut;
    }
    stream.set_read_timeout(Some(left)).unwrap();
    let mut buf = [0u8; 16 * 1024];
    match stream.read(&mut buf) {
        Ok(0) => ReadResult::End,
        Ok(n) => {
            into.extend_from_slice(&buf[..n]);
            ReadResult::More
        }
        Err(e) => match e.kind() {
            std::io::ErrorKind::Interrupted => ReadResult::More,
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => ReadResult::TimedOut,
            // A reset after the answer (the server closed with our bytes unread) ends it too.
            _ => ReadResult::End,
        },
    }
}

fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Status and headers of a response head (without the blank line).
fn parse_head(head: &[u8]) -> (u16, Vec<(String, String)>) {
    let head = String::from_utf8_lossy(head);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP status line: {status_line:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers)
}

fn parse_response(bytes: &[u8]) -> Response {
    let end = find(bytes, b"\r\n\r\n").unwrap_or_else(|| {
        panic!(
            "no complete response head in: {:?}",
            String::from_utf8_lossy(bytes)
        )
    });
    let (status, headers) = parse_head(&bytes[..end]);
    let mut response = Response {
        status,
        headers,
        body: Vec::new(),
    };
    let rest = &bytes[end + 4..];
    if response.header("transfer-encoding") == Some("chunked") {
        let mut chunks = Chunked::default();
        chunks.raw.extend_from_slice(rest);
        chunks.decode(&mut response.body);
    } else {
        let length = response
            .header("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(rest.len());
        response.body = rest[..length.min(rest.len())].to_vec();
    }
    response
}

/// An incremental `Transfer-Encoding: chunked` decoder.
#[derive(Default)]
struct Chunked {
    raw: Vec<u8>,
    ended: bool,
}

impl Chunked {
    /// Moves every complete chunk from `raw` into `out`.
    fn decode(&mut self, out: &mut Vec<u8>) {
        while !self.ended {
            let Some(line_end) = find(&self.raw, b"\r\n") else {
                return;
            };
            let size_text = String::from_utf8_lossy(&self.raw[..line_end]);
            let size_text = size_text.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size_text, 16)
                .unwrap_or_else(|_| panic!("bad chunk size line {size_text:?}"));
            let start = line_end + 2;
            if self.raw.len() < start + size + 2 {
                return;
            }
            out.extend_from_slice(&self.raw[start..start + size]);
            self.raw.drain(..start + size + 2);
            self.ended = size == 0;
        }
    }
}

/// One event of `GET /api/events`.
#[derive(Debug, Clone)]
pub struct SseEvent {
    /// `None` for frames without an id (`Resync`).
    pub id: Option<u64>,
    pub data: Value,
}

impl SseEvent {
    /// The event's `type`.
    pub fn kind(&self) -> &str {
        self.data["type"].as_str().unwrap_or_default()
    }
}

/// An open `GET /api/events` stream, read incrementally.
pub struct EventStream {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// Comment lines seen so far, without the colon (`connected`, `keep-alive`).
    pub comments: Vec<String>,
    stream: TcpStream,
    chunked: Option<Chunked>,
    /// Decoded body not yet parsed into frames.
    text: Vec<u8>,
    ended: bool,
}

impl EventStream {
    /// Opens `path` (e.g. `/api/events?last_event_id=5`) and reads the response head.
    pub fn connect(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> EventStream {
        let mut stream = send(addr, &encode(addr, "GET", path, headers, b""));
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        let mut bytes = Vec::new();
        let end = loop {
            if let Some(end) = find(&bytes, b"\r\n\r\n") {
                break end;
            }
            match read_some(&mut stream, &mut bytes, deadline) {
                ReadResult::More => {}
                ReadResult::End | ReadResult::TimedOut => panic!(
                    "no response head for GET {path}: {:?}",
                    String::from_utf8_lossy(&bytes)
                ),
            }
        };
        let (status, headers) = parse_head(&bytes[..end]);
        let chunked =
            (find_header(&headers, "transfer-encoding") == Some("chunked")).then(Chunked::default);
        let mut events = EventStream {
            status,
            headers,
            comments: Vec::new(),
            stream,
            chunked,
            text: Vec::new(),
            ended: false,
        };
        events.take(&bytes[end + 4..]);
        events
    }

    /// The first header named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    fn take(&mut self, bytes: &[u8]) {
        match &mut self.chunked {
            Some(chunks) => {
                chunks.raw.extend_from_slice(bytes);
                chunks.decode(&mut self.text);
                self.ended |= chunks.ended;
            }
            None => self.text.extend_from_slice(bytes),
        }
    }

    /// The next event: `Some(None)` when the server ended the stream, `None` past
    /// `deadline`. Comment frames are recorded in `comments` and skipped.
    fn try_next(&mut self, deadline: Instant) -> Option<Option<SseEvent>> {
        loop {
            while let Some(end) = find(&self.text, b"\n\n") {
                let frame: Vec<u8> = self.text.drain(..end + 2).collect();
                if let Some(event) = self.parse_frame(&String::from_utf8_lossy(&frame)) {
                    return Some(Some(event));
                }
            }
            if self.ended {
                return Some(None);
            }
            let mut bytes = Vec::new();
            match read_some(&mut self.stream, &mut bytes, deadline) {
                ReadResult::More => self.take(&bytes),
                ReadResult::End => self.ended = true,
                ReadResult::TimedOut => return None,
            }
        }
    }

    fn parse_frame(&mut self, frame: &str) -> Option<SseEvent> {
        let (mut id, mut data) = (None, Vec::new());
        for line in frame.lines() {
            if let Some(comment) = line.strip_prefix(':') {
                self.comments.push(comment.trim().to_string());
            } else if let Some(value) = line.strip_prefix("id:") {
                id = Some(value.trim().parse().expect("a numeric event id"));
            } else if let Some(value) = line.strip_prefix("data:") {
                data.push(value.strip_prefix(' ').unwrap_or(value));
            }
        }
        if data.is_empty() {
            return None;
        }
        let data = data.join("\n");
        let data = serde_json::from_str(&data)
            .unwrap_or_else(|e| panic!("event data is not JSON ({e}): {data}"));
        Some(SseEvent { id, data })
    }

    /// Every event up to and including the first one `done` accepts. Panics, listing what
    /// arrived, if the stream ends or `timeout` passes first.
    pub fn until(
        &mut self,
        timeout: Duration,
        mut done: impl FnMut(&SseEvent) -> bool,
    ) -> Vec<SseEvent> {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            match self.try_next(deadline) {
                Some(Some(event)) => {
                    let stop = done(&event);
                    seen.push(event);
                    if stop {
                        return seen;
                    }
                }
                Some(None) => panic!("the event stream ended first; events: {seen:#?}"),
                None => panic!("timed out after {timeout:?}; events so far: {seen:#?}"),
            }
        }
    }

    /// Every event until the server ends the stream, which it must within `timeout`.
    pub fn until_end(&mut self, timeout: Duration) -> Vec<SseEvent> {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            match self.try_next(deadline) {
                Some(Some(event)) => seen.push(event),
                Some(None) => return seen,
                None => panic!("the stream did not end within {timeout:?}; events: {seen:#?}"),
            }
        }
    }
}

/// A running `linggen serve`, killed when dropped.
pub struct Serve {
    child: Child,
    /// The address in the printed URL (with `--lan`, this machine's network address).
    pub addr: SocketAddr,
    /// The printed one-time link and its ticket.
    pub url: String,
    pub ticket: String,
    pub viewer_url: String,
    pub viewer_ticket: String,
    /// The long-lived tokens printed for scripts.
    pub token: String,
    pub viewer_token: String,
    stderr: Arc<Mutex<String>>,
    /// What it printed on stdout after the start-up lines.
    printed: mpsc::Receiver<String>,
}

impl Serve {
    /// Spawns `cmd` (a `linggen … serve …` command, e.g. `ws.cmd().arg("serve")`) with
    /// `--print-tokens`, and reads the two links and the two tokens it prints.
    pub fn start(cmd: &mut Command) -> Serve {
        let mut child = cmd
            .arg("--print-tokens")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn linggen serve");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (pipe, log) = (child.stderr.take().unwrap(), stderr.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
                log.push_str(&line);
                log.push('\n');
            }
        });
        let (lines, printed) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
        let mut next_line = || {
            printed.recv_timeout(START_TIMEOUT).unwrap_or_else(|e| {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "linggen serve printed no URL ({e}); stderr:\n{}",
                    stderr.lock().unwrap()
                )
            })
        };
        let mut expect_line = |prefix: &str| {
            let line = next_line();
            line.strip_prefix(prefix)
                .unwrap_or_else(|| panic!("expected a line starting {prefix:?}, got {line:?}"))
                .to_string()
        };
        let url = expect_line("linggen serve: ");
        let viewer_url = expect_line("read-only viewer: ");
        let token = expect_line("token for scripts: ");
        let viewer_token = expect_line("read-only token: ");
        let (addr, ticket) = split_url(&url);
        let (viewer_addr, viewer_ticket) = split_url(&viewer_url);
        assert_eq!(addr, viewer_addr, "both URLs name the same server");
        Serve {
            printed,
            child,
            addr,
            url,
            ticket,
            viewer_url,
            viewer_ticket,
            token,
            viewer_token,
            stderr,
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The `Host` a browser sends for the printed URL.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// The `Origin` the page sends.
    pub fn origin(&self) -> String {
        format!("http://{}", self.host())
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// `GET path` with the full token in `Authorization`.
    pub fn get(&self, path: &str) -> Response {
        let bearer = format!("Bearer {}", self.token);
        request(self.addr, "GET", path, &[("Authorization", &bearer)], b"")
    }

    /// `POST path` with a JSON body, the full token and the page's `Origin`.
    pub fn post(&self, path: &str, body: &Value) -> Response {
        let (bearer, origin) = (format!("Bearer {}", self.token), self.origin());
        let headers = [
            ("Authorization", bearer.as_str()),
            ("Origin", origin.as_str()),
            ("Content-Type", "application/json"),
        ];
        request(
            self.addr,
            "POST",
            path,
            &headers,
            body.to_string().as_bytes(),
        )
    }

    /// Types a line on its stdin (spawn it with `Stdio::piped()` stdin) and returns the next
    /// line it prints.
    pub fn type_line(&mut self, line: &str) -> String {
        let stdin = self
            .child
            .stdin
            .as_mut()
            .expect("serve was started with piped stdin");
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        self.printed
            .recv_timeout(START_TIMEOUT)
            .unwrap_or_else(|e| panic!("serve printed nothing ({e}); stderr:\n{}", self.stderr()))
    }

    /// `POST /api/ticket`: what the page does with its link's ticket.
    pub fn redeem(&self, ticket: &str) -> Response {
        let origin = self.origin();
        let headers = [
            ("Origin", origin.as_str()),
            ("Content-Type", "application/json"),
        ];
        let body = serde_json::json!({ "ticket": ticket }).to_string();
        request(self.addr, "POST", "/api/ticket", &headers, body.as_bytes())
    }

    /// `GET /api/session` (the current session), which must succeed.
    pub fn session(&self) -> Value {
        let response = self.get("/api/session");
        assert_eq!(response.status, 200, "{}", response.text());
        response.json()
    }

    /// Sends a message to the current session, which must be accepted.
    pub fn send(&self, content: &str) {
        let response = self.post("/api/messages", &serde_json::json!({ "content": content }));
        assert_eq!(response.status, 202, "{}", response.text());
    }

    /// The current session's event stream, replayed after event `after` if given.
    pub fn events(&self, after: Option<u64>) -> EventStream {
        let path = match after {
            Some(seq) => format!("/api/events?last_event_id={seq}"),
            None => "/api/events".to_string(),
        };
        let bearer = format!("Bearer {}", self.token);
        let stream = EventStream::connect(self.addr, &path, &[("Authorization", &bearer)]);
        assert_eq!(stream.status, 200, "GET {path}");
        stream
    }
}

impl Serve {
    /// Stops it as a person would (SIGTERM, as from Ctrl+C or a service manager), so it
    /// ends its sessions and stores what they hold; killed if it has not exited within 10 s.
    /// Dropping it kills it at once instead, like `kill -9`: the last events of a session
    /// may then not be stored yet.
    pub fn stop(mut self) {
        let pid = self.child.id() as i32;
        // SAFETY: kill only sends a signal to our own child.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `http://HOST:PORT/?ticket=T` as the address and the ticket.
fn split_url(url: &str) -> (SocketAddr, String) {
    let rest = url
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("not an http URL: {url}"));
    let (host, token) = rest
        .split_once("/?ticket=")
        .unwrap_or_else(|| panic!("no ticket in {url}"));
    let addr = host
        .parse()
        .unwrap_or_else(|e| panic!("{host} in {url} is not an address: {e}"));
    (addr, token.to_string())
}
