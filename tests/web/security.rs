//! Who may talk to the server: the token on every route (query, cookie, bearer), the
//! read-only token, the `Host` and `Origin` checks, no CORS, and loopback-only binding.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, UdpSocket};

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
    let wrong_cookie = format!("linggen_{}={wrong}", serve.port());
    let wrong_credentials: [(&str, &str); 3] = [
        ("Authorization", &wrong_bearer),
        ("Cookie", &wrong_cookie),
        ("Authorization", "Bearer "),
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
        let separator = if path.contains('?') { '&' } else { '?' };
        let in_query = format!("{path}{separator}token={wrong}");
        let response = request(serve.addr, "GET", &in_query, &[], b"");
        assert_eq!(response.status, 401, "GET {in_query}");
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

#[test]
fn the_first_load_sets_an_http_only_cookie_that_then_authenticates() {
    let (_server, _ws, serve) = setup(vec![]);
    let page = request(
        serve.addr,
        "GET",
        &format!("/?token={}", serve.token),
        &[],
        b"",
    );
    assert_eq!(page.status, 200, "{}", page.text());
    assert!(
        page.header("content-type")
            .unwrap_or_default()
            .starts_with("text/html"),
        "{:?}",
        page.headers
    );
    assert!(page.text().contains("<html"), "{}", page.text());
    let cookie = format!("linggen_{}={}", serve.port(), serve.token);
    assert_eq!(
        page.header("set-cookie"),
        Some(format!("{cookie}; HttpOnly; SameSite=Strict; Path=/").as_str())
    );

    // The cookie alone: the page's own requests, the stream and a POST from the page.
    let session = request(
        serve.addr,
        "GET",
        "/api/session",
        &[("Cookie", &cookie)],
        b"",
    );
    assert_eq!(session.status, 200, "{}", session.text());
    assert_eq!(session.json()["access"], "full");
    let among_others = format!("theme=dark; {cookie}; other=1");
    let session = request(
        serve.addr,
        "GET",
        "/api/session",
        &[("Cookie", &among_others)],
        b"",
    );
    assert_eq!(session.status, 200, "{}", session.text());
    let mut events = EventStream::connect(
        serve.addr,
        "/api/events?last_event_id=0",
        &[("Cookie", &cookie)],
    );
    assert_eq!(events.status, 200);
    let first = events.until(WAIT, |_| true);
    assert_eq!(first[0].kind(), "SessionStarted");
    let origin = serve.origin();
    let cancel = request(
        serve.addr,
        "POST",
        "/api/cancel",
        &[("Cookie", &cookie), ("Origin", &origin)],
        b"{}",
    );
    assert_eq!(cancel.status, 202, "{}", cancel.text());

    // The cookie of another port's share does not count.
    let other_port = format!("linggen_{}={}", serve.port().wrapping_add(1), serve.token);
    let refused = request(
        serve.addr,
        "GET",
        "/api/session",
        &[("Cookie", &other_port)],
        b"",
    );
    assert_eq!(refused.status, 401);

    // A bearer header works too, and only a token from the query is put in a cookie.
    let token = bearer(&serve.token);
    let session = request(
        serve.addr,
        "GET",
        "/api/session",
        &[("Authorization", &token)],
        b"",
    );
    assert_eq!(session.status, 200);
    let page = request(serve.addr, "GET", "/", &[("Authorization", &token)], b"");
    assert_eq!(page.status, 200);
    assert_eq!(page.header("set-cookie"), None);
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
    let viewer_page = request(
        serve.addr,
        "GET",
        &format!("/?token={}", serve.viewer_token),
        &[],
        b"",
    );
    assert_eq!(viewer_page.status, 200);
    let mut events = EventStream::connect(
        serve.addr,
        "/api/events?last_event_id=0",
        &[("Authorization", &viewer)],
    );
    assert_eq!(events.status, 200);
    assert_eq!(events.until(WAIT, |_| true)[0].kind(), "SessionStarted");

    let origin = serve.origin();
    for path in POST_ROUTES {
        let response = request(
            serve.addr,
            "POST",
            path,
            &[("Authorization", &viewer), ("Origin", &origin)],
            br#"{"content": "hi", "decision": "allow_once", "run_id": "x"}"#,
        );
        assert_error(&response, 403, "read-only");
    }
    // The viewer's cookie is no better than its header.
    let cookie = format!("linggen_{}={}", serve.port(), serve.viewer_token);
    let response = request(
        serve.addr,
        "POST",
        "/api/messages",
        &[("Cookie", &cookie), ("Origin", &origin)],
        br#"{"content": "hi"}"#,
    );
    assert_eq!(response.status, 403);
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
    for path in GET_ROUTES.iter().chain(POST_ROUTES) {
        let response = request(
            serve.addr,
            "OPTIONS",
            path,
            &[("Authorization", &token)],
            b"",
        );
        assert_eq!(response.status, 405, "OPTIONS {path}: {}", response.text());
    }
}
