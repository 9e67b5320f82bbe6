//! An OAuth-protected MCP server for the sign-in tests: an authorization server (metadata,
//! dynamic client registration, an authorize endpoint that approves at once as a person
//! would in their browser, and a token endpoint that checks PKCE, the redirect, the client
//! and the `resource`, and refreshes) in front of the reference MCP server, whose requests
//! pass only with a valid bearer token.
//!
//! It is the gate that is ours, not the MCP server: the reference servers do not do OAuth.
//! Blocking I/O on plain threads, one request per connection (`Connection: close`).

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// What the gate saw, for the test's assertions.
#[derive(Debug, Default, Clone)]
pub struct GateLog {
    /// `client_name` of each registration.
    pub registrations: Vec<String>,
    /// `grant_type` of each token request, in order.
    pub grants: Vec<String>,
    /// The `Authorization` header of each request to the MCP endpoint (`None`: none sent).
    pub mcp_auth: Vec<Option<String>>,
}

struct State {
    log: GateLog,
    /// code → (PKCE challenge, redirect URI).
    codes: BTreeMap<String, (String, String)>,
    /// The access token the MCP endpoint accepts now.
    access: Option<String>,
    refresh: Option<String>,
    issued: u32,
    /// `expires_in` of the first token it issues (refreshed ones live an hour at least).
    expires_in: u64,
    /// How long a refresh takes to answer (a slow provider).
    refresh_delay: std::time::Duration,
}

pub struct OAuthGate {
    port: u16,
    state: Arc<Mutex<State>>,
}

impl OAuthGate {
    /// Starts the gate on a free port in front of `upstream` (the reference server's
    /// streamable HTTP port); tokens live `expires_in` seconds.
    pub fn start(upstream: u16, expires_in: u64) -> OAuthGate {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State {
            log: GateLog::default(),
            codes: BTreeMap::new(),
            access: None,
            refresh: None,
            issued: 0,
            expires_in,
            refresh_delay: std::time::Duration::ZERO,
        }));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, port, upstream, &state));
            }
        });
        OAuthGate { port, state }
    }

    /// The MCP endpoint's address.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    pub fn log(&self) -> GateLog {
        self.state.lock().unwrap().log.clone()
    }

    /// Refreshes answer after `delay` (each refresh token still works once).
    pub fn slow_refresh(&self, delay: std::time::Duration) {
        self.state.lock().unwrap().refresh_delay = delay;
    }

    /// Every token issued so far stops working, as when a person revokes the app.
    pub fn revoke(&self) {
        let mut state = self.state.lock().unwrap();
        state.access = None;
        state.refresh = None;
    }
}

/// Acts as the person's browser: follows the authorization link (the gate approves at
/// once and redirects) to linggen's loopback callback. Returns the callback's status line.
pub fn approve_in_browser(authorize_url: &str) -> String {
    let response = get(authorize_url);
    let location = header(&response, "location").expect("the authorize endpoint redirects");
    get(&location)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// A GET by hand (http only): the raw response.
pub fn get(url: &str) -> String {
    let rest = url.strip_prefix("http://").expect("an http:// address");
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let mut stream = TcpStream::connect(host).unwrap();
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    if let Err(e) = stream.read_to_end(&mut response) {
        panic!(
            "GET {url}: {e} after {:?}",
            String::from_utf8_lossy(&response)
        );
    }
    String::from_utf8_lossy(&response).into_owned()
}

fn header(response: &str, name: &str) -> Option<String> {
    response.lines().find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
    })
}

struct Request {
    method: String,
    path: String,
    query: BTreeMap<String, String>,
    headers: BTreeMap<String, String>,
    /// The head as received, for passing on.
    raw_head: Vec<String>,
    body: Vec<u8>,
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let target = parts.next()?.to_string();
    let mut headers = BTreeMap::new();
    let mut raw_head = Vec::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end().to_string();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
        }
        raw_head.push(header);
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    Some(Request {
        method,
        path: path.to_string(),
        query: form(query),
        headers,
        raw_head,
        body,
    })
}

fn serve(mut stream: TcpStream, port: u16, upstream: u16, state: &Mutex<State>) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    let base = format!("http://127.0.0.1:{port}");
    match (request.method.as_str(), request.path.as_str()) {
        ("GET", p) if p.starts_with("/.well-known/oauth-protected-resource") => json(
            &mut stream,
            200,
            &serde_json::json!({
                "resource": format!("{base}/mcp"),
                "authorization_servers": [base],
            }),
        ),
        ("GET", p) if p.starts_with("/.well-known/oauth-authorization-server") => json(
            &mut stream,
            200,
            &serde_json::json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
            }),
        ),
        ("POST", "/register") => register(&mut stream, &request, state),
        ("GET", "/authorize") => authorize(&mut stream, &request, state, &base),
        ("POST", "/token") => token(&mut stream, &request, state, &base),
        (_, "/mcp") => {
            let auth = request.headers.get("authorization").cloned();
            let allowed = {
                let mut state = state.lock().unwrap();
                state.log.mcp_auth.push(auth.clone());
                state.access.as_ref().is_some_and(|token| {
                    auth.as_deref() == Some(format!("Bearer {token}").as_str())
                })
            };
            if allowed {
                proxy(stream, &request, upstream);
            } else {
                let challenge = format!(
                    "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
                );
                respond(&mut stream, 401, &[("WWW-Authenticate", challenge)], b"");
            }
        }
        _ => respond(&mut stream, 404, &[], b"not here"),
    }
}

fn register(stream: &mut TcpStream, request: &Request, state: &Mutex<State>) {
    let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap_or_default();
    let name = body["client_name"].as_str().unwrap_or_default().to_string();
    state.lock().unwrap().log.registrations.push(name.clone());
    let mut answer = body.clone();
    answer["client_id"] = "client-1".into();
    json(stream, 201, &answer);
}

fn authorize(stream: &mut TcpStream, request: &Request, state: &Mutex<State>, base: &str) {
    let q = &request.query;
    let (Some(redirect), Some(challenge), Some(csrf)) = (
        q.get("redirect_uri"),
        q.get("code_challenge"),
        q.get("state"),
    ) else {
        return respond(
            stream,
            400,
            &[],
            b"missing redirect_uri, code_challenge or state",
        );
    };
    // PKCE with S256 only, and the token is asked for this MCP server (RFC 8707).
    if q.get("code_challenge_method").map(String::as_str) != Some("S256")
        || q.get("resource") != Some(&format!("{base}/mcp"))
    {
        return respond(stream, 400, &[], b"S256 and resource are required");
    }
    let mut state = state.lock().unwrap();
    let code = format!("code-{}", state.codes.len() + 1);
    state
        .codes
        .insert(code.clone(), (challenge.clone(), redirect.clone()));
    let location = format!(
        "{redirect}?code={code}&state={}&iss={}",
        encode(csrf),
        encode(base)
    );
    respond(stream, 302, &[("Location", location)], b"");
}

fn token(stream: &mut TcpStream, request: &Request, state: &Mutex<State>, base: &str) {
    let form = form(&String::from_utf8_lossy(&request.body));
    let grant = form.get("grant_type").cloned().unwrap_or_default();
    if grant == "refresh_token" {
        let delay = state.lock().unwrap().refresh_delay;
        std::thread::sleep(delay);
    }
    let mut state = state.lock().unwrap();
    state.log.grants.push(grant.clone());
    if form.get("resource") != Some(&format!("{base}/mcp"))
        || form.get("client_id").map(String::as_str) != Some("client-1")
    {
        return json(stream, 400, &serde_json::json!({"error": "invalid_target"}));
    }
    let valid = match grant.as_str() {
        "authorization_code" => {
            let code = form.get("code").cloned().unwrap_or_default();
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            let redirect = form.get("redirect_uri").cloned().unwrap_or_default();
            state
                .codes
                .remove(&code)
                .is_some_and(|(challenge, sent_to)| {
                    s256(&verifier) == challenge && redirect == sent_to
                })
        }
        "refresh_token" => {
            let offered = form.get("refresh_token");
            offered.is_some() && offered == state.refresh.as_ref()
        }
        _ => false,
    };
    if !valid {
        return json(stream, 400, &serde_json::json!({"error": "invalid_grant"}));
    }
    state.issued += 1;
    let access = format!("access-{}", state.issued);
    let refresh = format!("refresh-{}", state.issued);
    state.access = Some(access.clone());
    state.refresh = Some(refresh.clone());
    // Only the first token expires early: a test of the refresh must not see a second one
    // when a loaded machine takes longer than that to use the refreshed token.
    let expires_in = match grant.as_str() {
        "refresh_token" => state.expires_in.max(3600),
        _ => state.expires_in,
    };
    json(
        stream,
        200,
        &serde_json::json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": expires_in,
            "refresh_token": refresh,
        }),
    );
}

/// Passes the request on to the reference server and its answer back, as it streams.
fn proxy(mut client: TcpStream, request: &Request, upstream: u16) {
    let Ok(mut server) = TcpStream::connect(("127.0.0.1", upstream)) else {
        return respond(&mut client, 502, &[], b"upstream down");
    };
    let mut head = format!("{} {} HTTP/1.1\r\n", request.method, request.path);
    for line in &request.raw_head {
        let name = line
            .split(':')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        if !matches!(name.as_str(), "host" | "connection" | "authorization") {
            head.push_str(line);
            head.push_str("\r\n");
        }
    }
    head.push_str(&format!(
        "Host: 127.0.0.1:{upstream}\r\nConnection: close\r\n\r\n"
    ));
    if server.write_all(head.as_bytes()).is_err() || server.write_all(&request.body).is_err() {
        return;
    }
    let _ = std::io::copy(&mut server, &mut client);
}

fn json(stream: &mut TcpStream, status: u16, body: &serde_json::Value) {
    let body = body.to_string();
    respond(
        stream,
        status,
        &[("Content-Type", "application/json".to_string())],
        body.as_bytes(),
    );
}

fn respond(stream: &mut TcpStream, status: u16, headers: &[(&str, String)], body: &[u8]) {
    let mut head = format!("HTTP/1.1 {status} X\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

/// `a=b&c=d`, percent- and plus-decoded.
fn form(text: &str) -> BTreeMap<String, String> {
    text.split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("00");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// PKCE's S256: base64url (no padding) of the verifier's SHA-256.
fn s256(verifier: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
    base64url(digest.as_ref())
}

fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n =
            chunk.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}
