//! What another local process cannot do to the server by opening connections, and how long
//! `linggen serve` keeps a session nobody watches.

use std::net::TcpStream;
use std::os::unix::process::CommandExt;

use serde_json::json;

use super::*;
use crate::support::Reply;
use crate::support::web_client::request;

/// Idle connections a local process opens at once.
const FLOOD: usize = 2_000;

/// The common default soft limit the server starts with (the test sets it for the child).
const DEFAULT_SOFT_LIMIT: libc::rlim_t = 1_024;

fn nofile() -> libc::rlimit {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only the struct passed to it.
    assert_eq!(
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) },
        0
    );
    limit
}

/// Raises this test process's soft limit to its hard limit; `false` when that leaves too
/// few descriptors for the flood (the test then says so and passes).
fn room_for_the_flood() -> bool {
    let mut limit = nofile();
    limit.rlim_cur = limit.rlim_max.min(1 << 20);
    // SAFETY: setrlimit reads only the struct passed to it.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
    nofile().rlim_cur as usize >= FLOOD + 300
}

#[test]
fn thousands_of_idle_connections_do_not_stop_a_request_or_a_tool_call() {
    if !room_for_the_flood() {
        println!("skipped: this process cannot open {FLOOD} sockets (hard descriptor limit)");
        return;
    }
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Reply::tool("Read", json!({"path": "notes.txt"}))),
            Reply::text("Read it.").into(),
        ],
    );
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    ws.write("notes.txt", "the notes survive the flood\n");
    let mut cmd = ws.cmd();
    cmd.arg("serve");
    // SAFETY: only setrlimit runs between fork and exec; it is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
            limit.rlim_cur = DEFAULT_SOFT_LIMIT.min(limit.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            Ok(())
        });
    }
    let serve = Serve::start(&mut cmd);

    // Another local process opens idle connections and sends nothing. Bounded: a connect
    // that does not complete within 3 s (a dropped SYN is sent again after 1 s) ends it.
    let mut idle = Vec::with_capacity(FLOOD);
    for _ in 0..FLOOD {
        match TcpStream::connect_timeout(&serve.addr, Duration::from_secs(3)) {
            Ok(stream) => idle.push(stream),
            Err(e) => {
                println!("the flood stopped after {} connections: {e}", idle.len());
                break;
            }
        }
    }
    assert_eq!(idle.len(), FLOOD, "the flood was cut short");

    // A legitimate request is still answered, promptly, and it opens the session database.
    let started = Instant::now();
    let sessions = serve.get("/api/sessions");
    assert_eq!(sessions.status, 200, "{}", sessions.text());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answered after {:?}",
        started.elapsed()
    );
    // And the agent can still open files: a Read tool call in a turn.
    let events = turn(&serve, "read the notes");
    let finished = of_kind(&events, "ToolCallFinished");
    assert_eq!(finished.len(), 1, "{events:#?}");
    assert_eq!(finished[0]["ok"], true, "{events:#?}");
    let request = server.last_chat_request().unwrap();
    let tool_results = texts(&request, "tool").join("\n");
    assert!(
        tool_results.contains("the notes survive the flood"),
        "the model got {tool_results}"
    );
    drop(idle);
    assert_eq!(serve.get("/api/session").status, 200);
}

#[test]
fn serve_closes_a_session_nobody_watches_once_it_is_idle_and_reopens_it_on_request() {
    let server =
        ScriptedServer::start_background(Protocol::OpenAi, vec![Step::from(Reply::text("Hi."))]);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    let serve = Serve::start(ws.cmd().arg("serve").env("LINGGEN_SERVE_IDLE_SECS", "1"));
    let id = serve.session()["session_id"].as_str().unwrap().to_string();
    let watcher = serve.events(None);
    turn(&serve, "hello");
    let live = |serve: &Serve| {
        let list = serve.get("/api/sessions").json();
        list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == json!(id))
            .map(|s| s["live"] == true)
    };
    // Watched: it stays open well past the idle time.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(live(&serve), Some(true), "closed while a page watched it");

    drop(watcher);
    // The log line follows once the session has stopped, a moment after the list says so.
    wait_until("the unwatched idle session to close", || {
        live(&serve) == Some(false) && serve.stderr().contains(&format!("closed session {id}"))
    });
    let gone = serve.get(&format!("/api/session?session_id={id}"));
    assert_eq!(gone.status, 404, "{}", gone.text());

    // The page can open it again, history intact.
    let reopened = serve.post("/api/sessions", &json!({ "session_id": id }));
    assert_eq!(reopened.status, 200, "{}", reopened.text());
    let snapshot = serve.get(&format!("/api/session?session_id={id}")).json();
    assert!(
        snapshot["transcript"].to_string().contains("hello"),
        "{snapshot:#}"
    );
}

/// Read-only viewers cannot take every event stream: past their share of the cap they get
/// `503` saying the share is full (from the stream ticket too, where the page can read it),
/// while the full-access credential still gets its reserved places; past the whole cap
/// everyone gets the same sentence, never a hint that the share ended.
#[test]
fn viewers_cannot_take_the_owners_event_streams_and_a_full_share_says_so() {
    /// The cap and the places kept for full access (`src/web/server.rs`).
    const ALL: usize = 128;
    const RESERVED: usize = 16;
    let (_server, _ws, serve) = setup(vec![]);
    let viewer = bearer(&serve.viewer_token);
    let owner = bearer(&serve.token);
    let open = |credential: &str| {
        EventStream::connect(serve.addr, "/api/events", &[("Authorization", credential)])
    };
    let mut streams: Vec<EventStream> = (0..ALL - RESERVED)
        .map(|n| {
            let stream = open(&viewer);
            assert_eq!(stream.status, 200, "viewer stream {n}");
            stream
        })
        .collect();
    let refused = open(&viewer);
    assert_eq!(refused.status, 503, "one viewer stream too many");
    let origin = serve.origin();
    let viewer_ticket = request(
        serve.addr,
        "POST",
        "/api/stream-ticket",
        &[("Authorization", &viewer), ("Origin", &origin)],
        b"{}",
    );
    assert_error(
        &viewer_ticket,
        503,
        "this share is full for read-only viewers",
    );
    // The owner still has room, and asks for a ticket as the page does.
    let ticket = serve.post("/api/stream-ticket", &json!({}));
    assert_eq!(ticket.status, 200, "{}", ticket.text());
    for n in 0..RESERVED {
        let stream = open(&owner);
        assert_eq!(stream.status, 200, "owner stream {n}");
        streams.push(stream);
    }
    assert_error(
        &serve.post("/api/stream-ticket", &json!({})),
        503,
        "this share is full",
    );
    assert_eq!(open(&owner).status, 503, "past the whole cap");
    // One viewer leaves: a viewer (or the owner) may watch again.
    drop(streams.remove(0));
    wait_until("the viewer's place to come back", || {
        let stream = open(&viewer);
        stream.status == 200
    });
}
