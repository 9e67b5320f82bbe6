//! Chatting through the API: messages (skills and shell commands too), the event stream
//! and its replay, the late joiner's snapshot, cancellation, sessions and bad bodies.

use serde_json::json;

use super::*;
use crate::support::Reply;
use crate::support::web_client::request;

#[test]
fn a_message_from_the_browser_runs_like_a_typed_line() {
    let answer = "Hello there, from the scripted model.";
    let (server, ws, serve) = setup(vec![
        Reply::text(answer).into(),
        Reply::text("No changes to review.").into(),
        Reply::text("It says hello.").into(),
    ]);
    let after = seq(&serve);
    let response = serve.post("/api/messages", &json!({"content": "say hello"}));
    assert_eq!(response.status, 202, "{}", response.text());
    assert_eq!(response.json(), json!({"queued": true}));
    let mut stream = serve.events(Some(after));
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    let events = stream.until(WAIT, is_idle);

    let user = of_kind(&events, "Message")
        .into_iter()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap();
    assert_eq!(
        (&user["from"], &user["content"]),
        (&json!("web"), &json!("say hello"))
    );
    assert_eq!(streamed_text(&events), answer);
    let outcome = of_kind(&events, "Outcome");
    assert_eq!(outcome.len(), 1, "{events:#?}");
    assert_eq!(outcome[0]["status"], "completed");
    assert_eq!(outcome[0]["result"], answer);
    let ids: Vec<u64> = events.iter().map(|e| e.id.unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids {ids:?}");
    let request = server.last_chat_request().unwrap();
    assert_eq!(texts(&request, "user").last().unwrap(), "say hello");

    // A skill line works as in the terminal: the model gets the skill's instructions.
    ws.write("README.md", "hello\n");
    let events = turn(&serve, "/review main");
    assert_eq!(of_kind(&events, "Outcome")[0]["status"], "completed");
    let user = texts(&server.last_chat_request().unwrap(), "user").join("\n");
    assert!(user.contains("invoked the skill `review`"), "{user}");
    assert!(user.contains("git diff --stat main"), "{user}");

    // `@path` attaches the file, as in the terminal.
    let events = turn(&serve, "what does @README.md say?");
    assert_eq!(of_kind(&events, "Outcome")[0]["status"], "completed");
    let user = texts(&server.last_chat_request().unwrap(), "user").join("\n");
    assert!(user.contains("README.md:\n```\nhello\n```"), "{user}");

    // The shell's own commands, unknown ones and empty lines are refused with a reason.
    for (line, mentions) in [
        ("/help", "command of the interactive shell"),
        ("/clear", "command of the interactive shell"),
        ("/no-such-skill", "/no-such-skill"),
        ("   ", "empty"),
    ] {
        let response = serve.post("/api/messages", &json!({ "content": line }));
        assert_error(&response, 400, mentions);
    }
    assert_eq!(server.chat_requests().len(), 3);
}

#[test]
fn the_event_stream_replays_after_the_last_event_id() {
    let answer = "One two three four five six seven eight nine ten.";
    let (_server, _ws, serve) = setup(vec![Reply::text(answer).into()]);
    let live = turn(&serve, "count to ten");
    let last = seq(&serve);
    // From the user's message on: the middle of the turn.
    let from = live
        .iter()
        .find(|e| e.kind() == "Message")
        .unwrap()
        .id
        .unwrap();
    let token = bearer(&serve.token);

    // The header (what a browser sends when it reconnects) and the query replay the same.
    let header_value = from.to_string();
    let mut by_header = EventStream::connect(
        serve.addr,
        "/api/events",
        &[("Authorization", &token), ("Last-Event-ID", &header_value)],
    );
    assert_eq!(by_header.status, 200);
    assert_eq!(by_header.header("content-type"), Some("text/event-stream"));
    let by_header = by_header.until(WAIT, |e| e.id == Some(last));
    let mut by_query = EventStream::connect(
        serve.addr,
        &format!("/api/events?last_event_id={from}"),
        &[("Authorization", &token)],
    );
    let by_query = by_query.until(WAIT, |e| e.id == Some(last));
    let ids: Vec<u64> = by_header.iter().map(|e| e.id.unwrap()).collect();
    assert_eq!(ids, (from + 1..=last).collect::<Vec<_>>());
    let data = |events: &[SseEvent]| events.iter().map(|e| e.data.clone()).collect::<Vec<_>>();
    assert_eq!(data(&by_header), data(&by_query));
    // Replay shows what a live viewer saw (tokens aside: live ones may be coalesced).
    let without_tokens = |events: &[SseEvent]| {
        events
            .iter()
            .filter(|e| e.kind() != "Token" && e.id > Some(from))
            .map(|e| e.data.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(without_tokens(&by_header), without_tokens(&live));
    assert_eq!(streamed_text(&by_header), answer);

    // From 0: the whole session, from its first event.
    let all = serve.events(Some(0)).until(WAIT, |e| e.id == Some(last));
    assert_eq!(all[0].kind(), "SessionStarted");
    assert_eq!(all[0].id, Some(1));

    // Ahead of the server (another session's numbers): resync, and the stream ends.
    let mut ahead = serve.events(Some(last + 1000));
    let frames = ahead.until_end(WAIT);
    assert_eq!(frames.len(), 1, "{frames:#?}");
    assert_eq!(frames[0].kind(), "Resync");
    assert_eq!(frames[0].id, None);
    assert!(!frames[0].data["reason"].as_str().unwrap().is_empty());

    let bad = serve.get("/api/events?last_event_id=soon");
    assert_error(&bad, 400, "soon");
}

#[test]
fn a_late_joiner_gets_the_state_and_transcript() {
    let answer = "The answer is 42.";
    let (_server, ws, serve) = setup(vec![Reply::text(answer).into()]);
    let events = turn(&serve, "what is the answer?");
    let session = serve.session();
    assert_eq!(session["seq"], json!(events.last().unwrap().id.unwrap()));
    assert_eq!(session["access"], "full");
    let state = &session["state"];
    assert_eq!(state["status"], "idle", "{session:#}");
    assert_eq!(state["agent_id"], "ling");
    assert_eq!(state["permission_mode"], "default");
    assert!(
        state["model"].as_str().unwrap().contains("scripted"),
        "{state}"
    );
    let root = ws.root().canonicalize().unwrap();
    assert_eq!(state["root"], json!(root.display().to_string()));
    assert!(
        state["context"]["used_tokens"].as_u64().unwrap() > 0,
        "{state}"
    );

    let transcript = session["transcript"].as_array().unwrap();
    assert!(
        transcript.iter().all(|e| e["type"] != "Token"),
        "{transcript:#?}"
    );
    let messages: Vec<(&str, &str, &str)> = transcript
        .iter()
        .filter(|e| e["type"] == "Message")
        .map(|e| {
            (
                e["role"].as_str().unwrap(),
                e["from"].as_str().unwrap(),
                e["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        messages,
        [
            ("user", "web", "what is the answer?"),
            ("assistant", "ling", answer)
        ]
    );
    assert!(transcript.iter().any(|e| e["type"] == "Outcome"));
    assert_eq!(session["streaming"], json!([]));
    assert_eq!(session["pending_approvals"], json!([]));
    let runs = session["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0]["agent_id"], "ling");
    assert_eq!(runs[0]["parent_id"], Value::Null);
    assert_eq!(runs[0]["status"], "completed");
    assert_eq!(runs[0]["task"], "what is the answer?");
}

#[test]
fn cancel_stops_a_streaming_answer() {
    let words: Vec<String> = (1..=200).map(|i| format!("word{i}")).collect();
    let (_server, _ws, serve) = setup(vec![
        Reply::text(words.join(" "))
            .chunk_delay(Duration::from_millis(30))
            .into(),
    ]);
    // With nothing running, and with no body at all, a cancel is accepted and harmless.
    let token = bearer(&serve.token);
    let origin = serve.origin();
    let idle_cancel = request(
        serve.addr,
        "POST",
        "/api/cancel",
        &[("Authorization", &token), ("Origin", &origin)],
        b"",
    );
    assert_eq!(idle_cancel.status, 202, "{}", idle_cancel.text());

    let after = seq(&serve);
    serve.send("write two hundred words");
    let mut stream = serve.events(Some(after));
    stream.until(WAIT, |e| {
        e.kind() == "Token" && !e.data["token"].as_str().unwrap().is_empty()
    });
    let started = Instant::now();
    let cancel = serve.post("/api/cancel", &json!({}));
    assert_eq!(cancel.status, 202, "{}", cancel.text());
    let events = stream.until(WAIT, |e| e.kind() == "Outcome");
    assert_eq!(events.last().unwrap().data["status"], "cancelled");
    // The full answer takes 200 × 30 ms to stream.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    stream.until(WAIT, is_idle);
    assert_eq!(serve.session()["state"]["status"], "idle");
}

#[test]
fn serve_lists_starts_and_switches_sessions() {
    let (server, _ws, serve) = setup(vec![
        Reply::text("First answer.").into(),
        Reply::text("Second answer.").into(),
    ]);
    turn(&serve, "first question");
    let first = serve.session()["session_id"].as_str().unwrap().to_string();
    // The list comes from the store, whose subscriber records the turn a moment later.
    let listed = |id: &str| {
        let list = serve.get("/api/sessions");
        assert_eq!(list.status, 200, "{}", list.text());
        let list = list.json();
        let entry = list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == json!(id))
            .cloned();
        (list, entry)
    };
    wait_until("the first session in the list", || {
        listed(&first).1.is_some_and(|s| s["message_count"] == 2)
    });
    let (list, entry) = listed(&first);
    assert_eq!(list["current"], json!(first));
    assert_eq!(list["can_open"], true);
    assert_eq!(entry.unwrap()["live"], true);

    // A new session becomes the current one.
    let started = serve.post("/api/sessions", &json!({}));
    assert_eq!(started.status, 200, "{}", started.text());
    let second = started.json()["session_id"].as_str().unwrap().to_string();
    assert_ne!(second, first);
    assert_eq!(serve.session()["session_id"], json!(second));
    assert_eq!(serve.get("/api/sessions").json()["current"], json!(second));
    assert_eq!(serve.session()["transcript"], json!([]));

    // Back to the first one, which kept its conversation.
    let reopened = serve.post("/api/sessions", &json!({"session_id": first}));
    assert_eq!(reopened.status, 200, "{}", reopened.text());
    assert_eq!(reopened.json()["session_id"], json!(first));
    let session = serve.session();
    assert_eq!(session["session_id"], json!(first));
    assert!(
        session["transcript"].to_string().contains("First answer."),
        "{session:#}"
    );

    // A message naming a session goes there, not to the current one.
    let to_second = format!("/api/events?session_id={second}&last_event_id=0");
    let token = bearer(&serve.token);
    let mut stream = EventStream::connect(serve.addr, &to_second, &[("Authorization", &token)]);
    let sent = serve.post(
        "/api/messages",
        &json!({"content": "second question", "session_id": second}),
    );
    assert_eq!(sent.status, 202, "{}", sent.text());
    let events = stream.until(WAIT, is_idle);
    assert_eq!(streamed_text(&events), "Second answer.");
    let request = server.last_chat_request().unwrap();
    assert_eq!(
        texts(&request, "user"),
        ["second question"],
        "a fresh history"
    );
    let second_view = serve
        .get(&format!("/api/session?session_id={second}"))
        .json();
    assert!(
        second_view["transcript"]
            .to_string()
            .contains("second question")
    );
    assert!(
        !serve.session()["transcript"]
            .to_string()
            .contains("second question")
    );
    wait_until("the second session in the list", || {
        listed(&second).1.is_some_and(|s| s["message_count"] == 2)
    });
    for id in [&first, &second] {
        let (list, entry) = listed(id);
        assert_eq!(entry.unwrap()["live"], true, "{list:#}");
    }

    let unknown = serve.post(
        "/api/messages",
        &json!({"content": "hi", "session_id": "no-such-session"}),
    );
    assert_error(&unknown, 404, "no-such-session");
    let unknown = serve.post("/api/sessions", &json!({"session_id": "no-such-session"}));
    assert_eq!(unknown.status, 404, "{}", unknown.text());
    assert!(unknown.json()["error"].is_string());
}

#[test]
fn malformed_and_oversized_bodies_are_refused() {
    let (server, _ws, serve) = setup(vec![]);
    let token = bearer(&serve.token);
    let origin = serve.origin();
    let post = |path: &str, body: &[u8]| {
        request(
            serve.addr,
            "POST",
            path,
            &[("Authorization", &token), ("Origin", &origin)],
            body,
        )
    };
    for body in [
        &b"{not json"[..],
        b"",
        b"{}",
        br#"{"content": 42}"#,
        br#"["content"]"#,
    ] {
        let response = post("/api/messages", body);
        assert_error(&response, 400, "JSON");
    }
    assert_error(&post("/api/approvals/x", b"{\"decision\":"), 400, "JSON");
    assert_error(&post("/api/agent-cancel", b"{}"), 400, "JSON");
    assert_error(&post("/api/sessions", b"nope"), 400, "JSON");
    assert_error(&post("/api/cancel", b"nope"), 400, "JSON");

    let huge = format!(r#"{{"content": "{}"}}"#, "a".repeat(2 << 20));
    let response = post("/api/messages", huge.as_bytes());
    assert_eq!(response.status, 413, "{}", response.text());
    assert!(server.chat_requests().is_empty());
}
