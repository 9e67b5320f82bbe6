//! `POST /api/settings`: the page's chips (and an attached terminal's `/mode`, `/model`,
//! `/agent`, `/permissions`) change the session's settings through the session's own
//! inputs, with the session's own refusals.

use serde_json::json;

use super::*;
use crate::support::Reply;
use crate::support::web_client::request;

/// The `SettingsUpdated` that follows `after`.
fn settings_event(serve: &Serve, after: u64) -> Value {
    let events = serve
        .events(Some(after))
        .until(WAIT, |e| e.kind() == "SettingsUpdated");
    events.last().unwrap().data.clone()
}

#[test]
fn each_field_changes_the_setting_for_every_window() {
    let (server, _ws, serve) = setup(vec![Reply::text("Just talk.").into()]);
    let after = seq(&serve);
    let changed = serve.post("/api/settings", &json!({"mode": "talk"}));
    assert_eq!(changed.status, 202, "{}", changed.text());
    assert_eq!(changed.json(), json!({"updated": ["mode"]}));
    assert_eq!(settings_event(&serve, after)["mode"], "talk");
    assert_eq!(serve.session()["state"]["mode"], "talk");

    // Talk mode sends the model no tools: the behaviour changed, not just the label.
    let events = turn(&serve, "hello");
    assert_eq!(streamed_text(&events), "Just talk.");
    let request = server.last_chat_request().unwrap();
    let tools = request["tools"].as_array().map_or(0, Vec::len);
    assert_eq!(tools, 0, "talk mode sends no tools: {request:#}");

    let after = seq(&serve);
    let all = json!({
        "agent": "coder",
        "permission_mode": "plan",
        "max_iters": 7,
        "model": "test",
        "mode": "chat",
    });
    let changed = serve.post("/api/settings", &all);
    assert_eq!(changed.status, 202, "{}", changed.text());
    let mut updated: Vec<String> =
        serde_json::from_value(changed.json()["updated"].clone()).unwrap();
    updated.sort();
    assert_eq!(
        updated,
        ["agent", "max_iters", "mode", "model", "permission_mode"]
    );
    let events = serve.events(Some(after)).until(WAIT, |e| {
        e.kind() == "SettingsUpdated"
            && e.data["mode"] == "chat"
            && e.data["permission_mode"] == "plan"
    });
    let last = &events.last().unwrap().data;
    assert_eq!(last["agent_id"], "coder");
    assert_eq!(last["max_iters"], 7);
    let state = &serve.session()["state"];
    assert_eq!(state["agent_id"], "coder");
    assert_eq!(state["permission_mode"], "plan");
    assert_eq!(state["mode"], "chat");
}

#[test]
fn bad_values_are_400_naming_what_is_accepted_and_change_nothing() {
    let (_server, _ws, serve) = setup(vec![]);
    let before = serve.session()["state"].clone();
    for (body, mentions) in [
        (json!({"mode": "fast"}), "chat, auto, talk"),
        (json!({"agent": "nobody"}), "coder"),
        (json!({"model": "gpt-9"}), "test"),
        (json!({"permission_mode": "yolo"}), "accept-edits"),
        (json!({"max_iters": 0}), "at least 1"),
        (json!({"max_iters": "many"}), "at least 1"),
        (json!({"colour": "red"}), "colour"),
        (json!({}), "agent, mode, model, permission_mode, max_iters"),
        // One wrong field: the right one is not applied either.
        (json!({"mode": "talk", "permission_mode": "yolo"}), "yolo"),
    ] {
        let answer = serve.post("/api/settings", &body);
        assert_error(&answer, 400, mentions);
    }
    assert_eq!(serve.session()["state"], before);
}

#[test]
fn the_session_refuses_a_new_agent_while_a_turn_runs() {
    let (_server, _ws, serve) = setup(vec![
        Reply::tool("Write", json!({"path": "a.txt", "content": "x"})).into(),
        Reply::text("Not written.").into(),
    ]);
    let after = seq(&serve);
    serve.send("write a");
    let mut stream = serve.events(Some(after));
    let asked = approval_request(&mut stream);
    let refused = serve.post("/api/settings", &json!({"agent": "coder"}));
    assert_error(&refused, 409, "the agent can change when this turn ends");
    assert_eq!(serve.session()["state"]["agent_id"], "ling");
    // A permission mode is taken at once, for the next turn (as in the terminal).
    let taken = serve.post("/api/settings", &json!({"permission_mode": "plan"}));
    assert_eq!(taken.status, 202, "{}", taken.text());

    let id = asked["id"].as_str().unwrap();
    let denied = serve.post(
        &format!("/api/approvals/{id}"),
        &json!({"decision": "deny"}),
    );
    assert_eq!(denied.status, 202, "{}", denied.text());
    stream.until(WAIT, is_idle);
    let changed = serve.post("/api/settings", &json!({"agent": "coder"}));
    assert_eq!(changed.status, 202, "{}", changed.text());
    assert_eq!(serve.session()["state"]["agent_id"], "coder");
}

#[test]
fn a_viewer_cannot_change_settings_but_sees_the_choices() {
    let (_server, _ws, serve) = setup(vec![]);
    let viewer = bearer(&serve.viewer_token);
    let origin = serve.origin();
    let headers = [
        ("Authorization", viewer.as_str()),
        ("Origin", origin.as_str()),
        ("Content-Type", "application/json"),
    ];
    let body = br#"{"mode":"talk"}"#;
    let refused = request(serve.addr, "POST", "/api/settings", &headers, body);
    assert_error(&refused, 403, "read-only");
    assert_eq!(serve.session()["state"]["mode"], "chat");

    let choices = request(serve.addr, "GET", "/api/settings", &headers[..1], b"").json();
    let names = |key: &str| -> Vec<String> {
        choices[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().or(c.as_str()).unwrap().to_string())
            .collect()
    };
    assert_eq!(names("modes"), ["chat", "auto", "talk"]);
    assert!(
        names("agents").contains(&"coder".to_string()),
        "{choices:#}"
    );
    assert_eq!(names("models"), ["test", "auto"]);
    assert_eq!(
        names("permission_modes"),
        ["default", "accept-edits", "plan", "bypass"]
    );
}
