//! Who may talk to the server: a credential on every API route (bearer token, a page's
//! credential bought with a one-time link ticket, a one-time stream ticket), never a cookie,
//! the read-only access, the `Host` and `Origin` checks, no CORS, and loopback-only binding.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, UdpSocket};

use serde_json::json;

use super::*;
use crate::support::web_client::{request, request_raw};

/// The headers doc/web.md promises on every response, and never a CORS one.
fn assert_secure_headers(response: &Response, what: &str) {
    let cors: Vec<_> = response
        .headers
        .iter()
        .filter(|(name, _)| name.starts_with("access-control-"))
        .collect();
    assert!(cors.is_empty(), "{what} sent CORS headers: {cors:?}");
    for (name, value) in [
        ("cache-control", "no-store"),
        ("referrer-policy", "no-referrer"),
        ("x-content-type-options", "nosniff"),
    ] {
        assert_eq!(response.header(name), Some(value), "{what}: {name}");
    }
    let csp = response
        .header("content-security-policy")
        .unwrap_or_default();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{what}: CSP {csp:?}"
    );
}

/// This machine's address on its network, found like the server finds it for `--lan`.
fn lan_address() -> Option<IpAddr> {
    let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok()?;
    socket.connect((Ipv4Addr::new(192, 0, 2, 1), 9)).ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_unspecified() && !ip.is_loopback()).then_some(ip)
}

#[test]
fn every_route_needs_the_token_and_no_response_carries_cors_headers() {
    let (_server, _ws, serve) = setup(vec![]);
    let origin = serve.origin();
    let wrong = "0".repeat(serve.token.len());
    let wrong_bearer = bearer(&wrong);
    // A cookie is no credential, not even with the right token in it; nor is a link's
    // ticket used as a bearer token.
    let token_cookie = format!("linggen_{}={}", serve.port(), serve.token);
    let ticket_bearer = bearer(&serve.ticket);
    let wrong_credentials: [(&str, &str); 4] = [
        ("Authorization", &wrong_bearer),
        ("Cookie", &token_cookie),
        ("Authorization", "Bearer "),
        ("Authorization", &ticket_bearer),
    ];
    for path in GET_ROUTES {
        let missing = request(serve.addr, "GET", path, &[], b"");
        assert_error(&missing, 401, "token");
        assert_secure_headers(&missing, &format!("GET {path} without a token"));
        for credential in wrong_credentials {
            let response = request(serve.addr, "GET", path, &[credential], b"");
            assert_eq!(response.status, 401, "GET {path} with {credential:?}");
            assert_secure_headers(&response, &format!("GET {path} with a wrong token"));
        }
        // The token in the query is no credential either (it would end up in history).
        let separator = if path.contains('?') { '&' } else { '?' };
        for query in [
            format!("token={}", serve.token),
            format!("ticket={}", serve.ticket),
        ] {
            let in_query = format!("{path}{separator}{query}");
            let response = request(serve.addr, "GET", &in_query, &[], b"");
            assert_eq!(response.status, 401, "GET {in_query}");
        }
    }
    // The page's files carry no session data and need no credential (a reload cannot send
    // a header); they still check Host and set no cookie.
    for path in ASSET_ROUTES {
        let response = request(serve.addr, "GET", path, &[], b"");
        assert!(response.status < 300, "GET {path}: {}", response.status);
        assert_eq!(response.header("set-cookie"), None, "GET {path}");
        assert!(!response.text().contains(&serve.token));
        assert_secure_headers(&response, &format!("GET {path}"));
    }
    for path in POST_ROUTES {
        let with_origin = ("Origin", origin.as_str());
        let missing = request(serve.addr, "POST", path, &[with_origin], b"{}");
        assert_error(&missing, 401, "token");
        assert_secure_headers(&missing, &format!("POST {path} without a token"));
        for credential in wrong_credentials {
            let response = request(serve.addr, "POST", path, &[with_origin, credential], b"{}");
            assert_eq!(response.status, 401, "POST {path} with {credential:?}");
            assert_secure_headers(&response, &format!("POST {path} with a wrong token"));
        }
    }

    // Successful, refused and unsupported answers are just as free of CORS headers, even
    // when a foreign page asks for them in a preflight.
    let token = bearer(&serve.token);
    let preflight = [
        ("Authorization", token.as_str()),
        ("Origin", "http://evil.example"),
        ("Access-Control-Request-Method", "POST"),
    ];
    for path in ["/", "/app.js", "/app.css", "/api/session", "/api/sessions"] {
        let response = request(serve.addr, "GET", path, &preflight, b"");
        assert_eq!(response.status, 200, "GET {path}: {}", response.text());
        assert_secure_headers(&response, &format!("GET {path}"));
        let options = request(serve.addr, "OPTIONS", path, &preflight, b"");
        assert_eq!(options.status, 405, "OPTIONS {path}");
        assert_secure_headers(&options, &format!("OPTIONS {path}"));
    }
    let options = request(serve.addr, "OPTIONS", "/api/messages", &preflight, b"");
    assert_eq!(options.status, 405);
    assert_secure_headers(&options, "OPTIONS /api/messages");
    let events = EventStream::connect(serve.addr, "/api/events", &preflight);
    assert_eq!(events.status, 200);
    assert!(
        events
            .headers
            .iter()
            .all(|(n, _)| !n.starts_with("access-control-")),
        "{:?}",
        events.headers
    );
    let forbidden = request(serve.addr, "POST", "/api/cancel", &preflight, b"{}");
    assert_eq!(forbidden.status, 403);
    assert_secure_headers(&forbidden, "a cross-site POST");
    let unknown = serve.get("/api/nothing-here");
    assert_eq!(unknown.status, 404);
    assert_secure_headers(&unknown, "an unknown route");
}

/// Every response of `serve` so far carried no `Set-Cookie`.
fn assert_no_cookie(response: &Response, what: &str) {
    assert_eq!(response.header("set-cookie"), None, "{what} set a cookie");
}

#[test]
fn a_link_works_once_and_buys_the_page_a_credential_no_other_port_can_read() {
    let (_server, _ws, serve) = setup(vec![]);
    // The printed link loads the page and sets no cookie: a cookie for 127.0.0.1 would be
    // sent to every other port of it, any local listener included.
    let page = request(
        serve.addr,
        "GET",
        &format!("/?ticket={}", serve.ticket),
        &[],
        b"",
    );
    assert_eq!(page.status, 200, "{}", page.text());
    assert!(page.text().contains("<html"), "{}", page.text());
    assert_no_cookie(&page, "the link's page");
    assert!(
        !serve.url.contains(&serve.token),
        "the link holds the token"
    );

    // The page trades the ticket, from its own origin only.
    let origin = serve.origin();
    let body = json!({ "ticket": serve.ticket }).to_string();
    for foreign in [None, Some("http://evil.example"), Some("null")] {
        let mut headers = vec![("Content-Type", "application/json")];
        headers.extend(foreign.map(|o| ("Origin", o)));
        let refused = request(serve.addr, "POST", "/api/ticket", &headers, body.as_bytes());
        assert_error(&refused, 403, "Origin");
    }
    let evil_host = format!("evil.example:{}", serve.port());
    let rebound = request(
        serve.addr,
        "POST",
        "/api/ticket",
        &[
            ("Host", &evil_host),
            ("Origin", &format!("http://{evil_host}")),
        ],
        body.as_bytes(),
    );
    assert_error(&rebound, 403, "Host");
    let traded = serve.redeem(&serve.ticket);
    assert_eq!(traded.status, 200, "{}", traded.text());
    assert_no_cookie(&traded, "the ticket exchange");
    let credential = traded.json()["credential"].as_str().unwrap().to_string();
    assert_eq!(traded.json()["access"], "full");
    assert_ne!(credential, serve.token, "the page gets its own credential");
    // A used ticket is dead, also for whoever read it from the opener's command line.
    assert_error(&serve.redeem(&serve.ticket), 401, "already used");
    assert_error(&serve.redeem("0123"), 401, "already used");

    // The credential, as a header: the API, a POST from the page.
    let page_bearer = bearer(&credential);
    let session = request(
        serve.addr,
        "GET",
        "/api/session",
        &[("Authorization", &page_bearer)],
        b"",
    );
    assert_eq!(session.status, 200, "{}", session.text());
    assert_eq!(session.json()["access"], "full");
    assert_no_cookie(&session, "GET /api/session");
    let cancel = request(
        serve.addr,
        "POST",
        "/api/cancel",
        &[("Authorization", &page_bearer), ("Origin", &origin)],
        b"{}",
    );
    assert_eq!(cancel.status, 202, "{}", cancel.text());
    // ...but not as a cookie.
    let as_cookie = format!("linggen_{}={credential}", serve.port());
    let refused = request(
        serve.addr,
        "GET",
        "/api/session",
        &[("Cookie", &as_cookie)],
        b"",
    );
    assert_eq!(refused.status, 401);

    // The event stream cannot send a header: it spends a one-time stream ticket.
    let issued = request(
        serve.addr,
        "POST",
        "/api/stream-ticket",
        &[("Authorization", &page_bearer), ("Origin", &origin)],
        b"{}",
    );
    assert_eq!(issued.status, 200, "{}", issued.text());
    let stream_ticket = issued.json()["ticket"].as_str().unwrap().to_string();
    let path = format!("/api/events?last_event_id=0&ticket={stream_ticket}");
    let mut events = EventStream::connect(serve.addr, &path, &[]);
    assert_eq!(events.status, 200);
    assert_eq!(events.header("set-cookie"), None);
    assert_eq!(events.until(WAIT, |_| true)[0].kind(), "SessionStarted");
    let again = request(serve.addr, "GET", &path, &[], b"");
    assert_eq!(again.status, 401, "a stream ticket works once");
    // A stream ticket is good for nothing else.
    let other = format!("/api/session?ticket={stream_ticket}");
    assert_eq!(request(serve.addr, "GET", &other, &[], b"").status, 401);
    let stream_bearer = bearer(&stream_ticket);
    let as_bearer = request(
        serve.addr,
        "GET",
        "/api/session",
        &[("Authorization", &stream_bearer)],
        b"",
    );
    assert_eq!(as_bearer.status, 401);

    // Scripts keep the long-lived bearer token.
    let token = bearer(&serve.token);
    let session = request(
        serve.addr,
        "GET",
        "/api/session",
        &[("Authorization", &token)],
        b"",
    );
    assert_eq!(session.status, 200);
}

#[test]
fn serve_prints_a_fresh_one_time_link_when_asked() {
    let (_server, ws, _) = setup(vec![]);
    let mut serve = Serve::start(ws.cmd().arg("serve").stdin(std::process::Stdio::piped()));
    let mut tickets = vec![serve.ticket.clone()];
    for _ in 0..2 {
        let line = serve.type_line("");
        let link = line
            .strip_prefix("new link: ")
            .unwrap_or_else(|| panic!("{line:?}"));
        let ticket = link
            .strip_prefix(&format!("http://{}/?ticket=", serve.addr))
            .unwrap_or_else(|| panic!("{link}"));
        assert!(
            !tickets.iter().any(|t| t == ticket),
            "a ticket was printed twice"
        );
        tickets.push(ticket.to_string());
    }
    for ticket in &tickets {
        assert_eq!(serve.redeem(ticket).json()["access"], "full");
        assert_eq!(serve.redeem(ticket).status, 401, "a used ticket is dead");
    }
    let token = bearer(&serve.token);
    let session = request(
        serve.addr,
        "GET",
        "/api/session",
        &[("Authorization", &token)],
        b"",
    );
    assert_eq!(session.status, 200);
}

#[test]
fn the_read_only_token_watches_but_cannot_post() {
    let (server, _ws, serve) = setup(vec![]);
    let viewer = bearer(&serve.viewer_token);
    let session = request(
        serve.addr,
        "GET",
        "/api/session",
        &[("Authorization", &viewer)],
        b"",
    );
    assert_eq!(session.status, 200, "{}", session.text());
    assert_eq!(session.json()["access"], "read_only");
    for path in GET_ROUTES.iter().filter(|p| **p != "/api/events") {
        let response = request(serve.addr, "GET", path, &[("Authorization", &viewer)], b"");
        assert!(
            response.status != 401 && response.status != 403,
            "GET {path} with the viewer token: {} {}",
            response.status,
            response.text()
        );
    }
    // The viewer link's ticket buys a read-only credential, which may stream.
    let traded = serve.redeem(&serve.viewer_ticket);
    assert_eq!(traded.status, 200, "{}", traded.text());
    assert_eq!(traded.json()["access"], "read_only");
    let page_viewer = bearer(traded.json()["credential"].as_str().unwrap());
    let session = request(
        serve.addr,
        "GET",
        "/api/session",
        &[("Authorization", &page_viewer)],
        b"",
    );
    assert_eq!(session.json()["access"], "read_only");
    let origin = serve.origin();
    let issued = request(
        serve.addr,
        "POST",
        "/api/stream-ticket",
        &[("Authorization", &page_viewer), ("Origin", &origin)],
        b"{}",
    );
    assert_eq!(issued.status, 200, "{}", issued.text());
    let stream = format!(
        "/api/events?ticket={}",
        issued.json()["ticket"].as_str().unwrap()
    );
    assert_eq!(EventStream::connect(serve.addr, &stream, &[]).status, 200);
    let mut events = EventStream::connect(
        serve.addr,
        "/api/events?last_event_id=0",
        &[("Authorization", &viewer)],
    );
    assert_eq!(events.status, 200);
    assert_eq!(events.until(WAIT, |_| true)[0].kind(), "SessionStarted");

    for path in POST_ROUTES.iter().filter(|p| **p != "/api/stream-ticket") {
        for credential in [&viewer, &page_viewer] {
            let response = request(
                serve.addr,
                "POST",
                path,
                &[("Authorization", credential), ("Origin", &origin)],
                br#"{"content": "hi", "decision": "allow_once", "run_id": "x"}"#,
            );
            assert_error(&response, 403, "read-only");
        }
    }
    assert!(server.chat_requests().is_empty(), "a viewer's message ran");
}

#[test]
fn the_host_header_must_name_the_bound_address() {
    let (_server, _ws, serve) = setup(vec![]);
    let token = bearer(&serve.token);
    let port = serve.port();
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LOCALHOST:{port}"),
        format!("[::1]:{port}"),
    ] {
        let response = request(
            serve.addr,
            "GET",
            "/api/session",
            &[("Host", &host), ("Authorization", &token)],
            b"",
        );
        assert_eq!(response.status, 200, "Host {host}: {}", response.text());
    }
    // DNS rebinding: the attacker's name resolves to 127.0.0.1, the browser sends it.
    for host in [
        format!("evil.example:{port}"),
        format!("127.0.0.1.evil.example:{port}"),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
        "127.0.0.1".to_string(),
        format!("192.0.2.7:{port}"),
        String::new(),
    ] {
        for path in ["/", "/api/session", "/api/events"] {
            let in_query = format!("{path}?token={}", serve.token);
            let response = request(
                serve.addr,
                "GET",
                &in_query,
                &[("Host", &host), ("Authorization", &token)],
                b"",
            );
            assert_error(&response, 403, "Host");
            assert_eq!(response.header("set-cookie"), None);
        }
    }
    let origin = serve.origin();
    let evil = format!("evil.example:{port}");
    let post = request(
        serve.addr,
        "POST",
        "/api/cancel",
        &[
            ("Host", &evil),
            ("Authorization", &token),
            ("Origin", &origin),
        ],
        b"{}",
    );
    assert_eq!(post.status, 403);

    // No Host at all is not this server's address either.
    let raw =
        format!("GET /api/session HTTP/1.1\r\nAuthorization: {token}\r\nConnection: close\r\n\r\n");
    let response = request_raw(serve.addr, raw.as_bytes());
    assert_error(&response, 403, "Host");
}

#[test]
fn a_post_needs_the_pages_own_origin() {
    let (_server, _ws, serve) = setup(vec![]);
    let token = bearer(&serve.token);
    let port = serve.port();
    let post = |host: &str, origin: Option<&str>| {
        let mut headers = vec![("Host", host), ("Authorization", token.as_str())];
        headers.extend(origin.map(|o| ("Origin", o)));
        request(serve.addr, "POST", "/api/cancel", &headers, b"{}")
    };
    let host = format!("127.0.0.1:{port}");
    let refused = [
        None,
        Some("http://evil.example".to_string()),
        Some("null".to_string()),
        Some(format!("https://127.0.0.1:{port}")),
        Some(format!("http://127.0.0.1:{}", port.wrapping_add(1))),
        Some(format!("http://localhost:{port}")),
        Some(format!("http://127.0.0.1:{port}.evil.example")),
    ];
    for origin in &refused {
        let response = post(&host, origin.as_deref());
        assert_error(&response, 403, "Origin");
    }
    let accepted = post(&host, Some(&format!("http://127.0.0.1:{port}")));
    assert_eq!(accepted.status, 202, "{}", accepted.text());
    assert_eq!(accepted.json()["cancelled"], true);
    let localhost = format!("localhost:{port}");
    let accepted = post(&localhost, Some(&format!("http://localhost:{port}")));
    assert_eq!(accepted.status, 202, "{}", accepted.text());

    // A GET needs no Origin: a page load has none.
    let response = serve.get("/api/session");
    assert_eq!(response.status, 200);
}

#[test]
fn it_listens_on_loopback_unless_told_lan() {
    let (_server, ws, serve) = setup(vec![]);
    assert!(
        serve.url.starts_with("http://127.0.0.1:"),
        "printed {}",
        serve.url
    );
    assert!(serve.viewer_url.starts_with("http://127.0.0.1:"));
    assert!(serve.addr.ip().is_loopback());
    let Some(lan) = lan_address() else {
        println!("skipped the non-loopback checks: this machine has no non-loopback IPv4 address");
        return;
    };
    let outside = SocketAddr::new(lan, serve.port());
    assert!(
        TcpStream::connect_timeout(&outside, Duration::from_secs(2)).is_err(),
        "{outside} accepted a connection without --lan"
    );
    drop(serve);

    let serve = Serve::start(ws.cmd().args(["serve", "--lan"]));
    assert_eq!(
        serve.addr.ip(),
        lan,
        "the --lan URL names {lan}: {}",
        serve.url
    );
    let session = serve.get("/api/session");
    assert_eq!(session.status, 200, "{}", session.text());
    assert!(
        serve.get("/api/sessions").status == 200,
        "the LAN address serves the API"
    );
    wait_until("the --lan warning", || {
        serve.stderr().contains("anyone on your network")
    });
    // Still the same rules on every interface.
    let token = bearer(&serve.token);
    let loopback = SocketAddr::from(([127, 0, 0, 1], serve.port()));
    let response = request(
        loopback,
        "GET",
        "/api/session",
        &[("Authorization", &token)],
        b"",
    );
    assert_eq!(response.status, 200);
    let evil = format!("evil.example:{}", serve.port());
    let response = request(
        serve.addr,
        "GET",
        "/api/session",
        &[("Host", &evil), ("Authorization", &token)],
        b"",
    );
    assert_eq!(response.status, 403);
    assert_eq!(
        request(serve.addr, "GET", "/api/session", &[], b"").status,
        401
    );
}

#[test]

fn options_gets_405_on_every_route() {
    let (_server, _ws, serve) = setup(vec![]);
    let token = bearer(&serve.token);
    // A browser's CORS preflight carries no credential: it gets the same answer.
    let preflight = [
        ("Origin", "http://evil.example"),
        ("Access-Control-Request-Method", "POST"),
    ];
    let routes = GET_ROUTES.iter().chain(POST_ROUTES).chain(ASSET_ROUTES);
    for path in routes.chain(&["/api/ticket", "/api/no-such-route"]) {
        for headers in [
            &[("Authorization", token.as_str())][..],
            &preflight[..],
            &[],
        ] {
            let response = request(serve.addr, "OPTIONS", path, headers, b"");
            assert_eq!(
                response.status,
                405,
                "OPTIONS {path} with {headers:?}: {}",
                response.text()
            );
            assert_secure_headers(&response, &format!("OPTIONS {path}"));
        }
    }
    // The Host check still comes first.
    let response = request(
        serve.addr,
        "OPTIONS",
        "/api/session",
        &[("Host", "evil.example")],
        b"",
    );
    assert_eq!(response.status, 403, "{}", response.text());
}

/// The long-lived tokens are printed only with `--print-tokens`: by default `serve`'s output
/// (often a service manager's log) holds one-time links only, and says how to get them.
#[test]
fn serve_prints_its_tokens_only_when_asked() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;

    let (_server, ws, _) = setup(vec![]);
    let mut child = crate::support::KillOnDrop(
        ws.cmd()
            .arg("serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (lines, printed) = std::sync::mpsc::channel();
    let stdout = child.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let next = || printed.recv_timeout(WAIT).unwrap();
    assert!(next().starts_with("linggen serve: http://"));
    assert!(next().starts_with("read-only viewer: http://"));
    // Enter asks for a fresh link: the very next line is that link, not a token.
    let stdin = child.0.stdin.as_mut().unwrap();
    writeln!(stdin).unwrap();
    stdin.flush().unwrap();
    let line = next();
    assert!(line.starts_with("new link: http://"), "{line:?}");
    let mut stderr = String::new();
    let pipe = child.0.stderr.take().unwrap();
    let mut reader = BufReader::new(pipe);
    reader.read_line(&mut stderr).unwrap();
    while !stderr.contains("Ctrl+C stops") {
        reader.read_line(&mut stderr).unwrap();
    }
    assert!(stderr.contains("--print-tokens"), "{stderr}");
    assert!(!stderr.contains("token:"), "{stderr}");
}
