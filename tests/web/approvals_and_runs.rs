//! Approvals answered from the browser, and inspecting the run tree of a delegation.

use serde_json::json;

use super::*;
use crate::support::web_client::request;
use crate::support::{Reply, linggen_cmd, run_with_timeout};

#[test]
fn an_approval_answered_in_the_browser_lets_the_tool_run() {
    let (server, ws, serve) = setup(vec![
        Reply::tool(
            "Write",
            json!({"path": "notes.txt", "content": "from the web\n"}),
        )
        .into(),
        Reply::text("Wrote notes.txt.").into(),
    ]);
    let after = seq(&serve);
    serve.send("write the notes");
    let mut stream = serve.events(Some(after));
    let asked = approval_request(&mut stream);
    assert_eq!(asked["tool"], "Write");
    let id = asked["id"].as_str().unwrap().to_string();
    let pending = serve.session()["pending_approvals"].clone();
    assert_eq!(pending.as_array().unwrap().len(), 1, "{pending:#}");
    assert_eq!(pending[0]["id"], json!(id));
    assert!(!ws.root().join("notes.txt").exists());

    let path = format!("/api/approvals/{id}");
    let unknown = serve.post(&path, &json!({"decision": "maybe"}));
    assert_error(&unknown, 400, "allow_once");
    assert_eq!(
        serve.session()["pending_approvals"],
        pending,
        "still waiting"
    );
    let elsewhere = serve.post(
        "/api/approvals/no-such-id",
        &json!({"decision": "allow_once"}),
    );
    // An approval the session never asked for (or answered long ago) is not there: 404;
    // one answered first elsewhere is a conflict (`a_second_answer_right_after_the_first_gets_409`).
    assert_eq!(elsewhere.status, 404, "{}", elsewhere.text());

    let allowed = serve.post(&path, &json!({"decision": "allow_once"}));
    assert_eq!(allowed.status, 202, "{}", allowed.text());
    let events = stream.until(WAIT, |e| e.kind() == "ApprovalResolved");
    let resolved = &events.last().unwrap().data;
    assert_eq!(resolved["id"], json!(id));
    assert_eq!(resolved["decision"], "allow_once");
    assert_eq!(resolved["by"], "web");
    let again = serve.post(&path, &json!({"decision": "deny"}));
    assert_error(&again, 409, "not waiting");

    let events = stream.until(WAIT, is_idle);
    let finished = of_kind(&events, "ToolCallFinished");
    assert_eq!(finished[0]["ok"], true, "{events:#?}");
    assert_eq!(of_kind(&events, "Outcome")[0]["status"], "completed");
    assert_eq!(ws.read("notes.txt"), "from the web\n");
    assert_eq!(serve.session()["pending_approvals"], json!([]));
    server.assert_script_consumed();
}

/// The page gets the whole call to show, with the blanks that would hide its tail counted,
/// in the live event and in the snapshot a reloaded page reads.
#[test]
fn the_page_is_sent_the_whole_command_to_approve() {
    let command = format!("echo safe{}&& touch x", " ".repeat(300));
    let (server, ws, serve) = setup(vec![
        Reply::tool("Bash", json!({ "command": command })).into(),
        Reply::text("Not run.").into(),
    ]);
    let after = seq(&serve);
    serve.send("run it");
    let mut stream = serve.events(Some(after));
    let asked = approval_request(&mut stream);
    let expected = json!("Bash: echo safe␠×300&& touch x");
    assert_eq!(asked["display"], expected, "{asked:#}");
    assert_eq!(serve.session()["pending_approvals"][0]["display"], expected);
    let id = asked["id"].as_str().unwrap().to_string();
    let denied = serve.post(
        &format!("/api/approvals/{id}"),
        &json!({"decision": "deny"}),
    );
    assert_eq!(denied.status, 202, "{}", denied.text());
    stream.until(WAIT, is_idle);
    assert!(!ws.root().join("x").exists());
    server.assert_script_consumed();
}

#[test]
fn a_denial_with_a_reason_reaches_the_model() {
    let (server, ws, serve) = setup(vec![
        Reply::tool("Write", json!({"path": "notes.txt", "content": "x\n"})).into(),
        Reply::text("Understood, I will not write it.").into(),
    ]);
    let after = seq(&serve);
    serve.send("write the notes");
    let mut stream = serve.events(Some(after));
    let id = approval_request(&mut stream)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let reason = "put notes in docs/ instead";
    let denied = serve.post(
        &format!("/api/approvals/{id}"),
        &json!({"decision": "deny", "reason": reason}),
    );
    assert_eq!(denied.status, 202, "{}", denied.text());
    let events = stream.until(WAIT, is_idle);
    let resolved = of_kind(&events, "ApprovalResolved");
    assert_eq!(
        (
            &resolved[0]["decision"],
            &resolved[0]["reason"],
            &resolved[0]["by"]
        ),
        (&json!("deny"), &json!(reason), &json!("web"))
    );
    assert!(!ws.root().join("notes.txt").exists());
    let results = texts(&server.last_chat_request().unwrap(), "tool").join("\n");
    assert!(results.contains(reason), "{results}");
}

#[test]

fn a_second_answer_right_after_the_first_gets_409() {
    const APPROVALS: usize = 8;
    let mut script: Vec<Step> = (0..APPROVALS)
        .map(|i| {
            Reply::tool(
                "Write",
                json!({"path": format!("n{i}.txt"), "content": "x\n"}),
            )
            .into()
        })
        .collect();
    script.push(Reply::text("Done.").into());
    let (_server, ws, serve) = setup(script);
    let after = seq(&serve);
    serve.send("write the files");
    let mut stream = serve.events(Some(after));
    let mut second_statuses = Vec::new();
    for _ in 0..APPROVALS {
        let id = approval_request(&mut stream)["id"]
            .as_str()
            .unwrap()
            .to_string();
        let path = format!("/api/approvals/{id}");
        let first = serve.post(&path, &json!({"decision": "allow_once"}));
        assert_eq!(first.status, 202, "{}", first.text());
        // A double click, or a second browser a moment later.
        second_statuses.push(serve.post(&path, &json!({"decision": "deny"})).status);
    }
    stream.until(WAIT, is_idle);
    // The first answer did win every time; only the second one's status is wrong.
    for i in 0..APPROVALS {
        assert_eq!(ws.read(&format!("n{i}.txt")), "x\n");
    }
    assert!(
        second_statuses.iter().all(|s| *s == 409),
        "the second answers got {second_statuses:?}: a 202 tells that client its decision was taken"
    );
}

#[test]
fn runs_and_their_context_can_be_inspected() {
    let coder_answer = format!(
        "Summary of the design: {}. End of summary.",
        "the session owns the conversation and publishes events".repeat(6)
    );
    let (_server, _ws, serve) = setup(vec![
        Reply::tool(
            "delegate_to_agent",
            json!({"target_agent_id": "coder", "task": "Summarise the design."}),
        )
        .into(),
        Reply::text(coder_answer.clone()).into(),
        Reply::text("coder summarised it.").into(),
    ]);
    let events = turn(&serve, "ask coder for a summary");
    let session_id = serve.session()["session_id"].as_str().unwrap().to_string();
    let spawned = of_kind(&events, "SubagentSpawned");
    assert_eq!(spawned.len(), 1, "{events:#?}");

    // The routes read the store, which its own subscriber writes a moment after the
    // stream's events (seen: ling still `running` just after `idle` on the stream).
    let path = format!("/api/agent-runs?session_id={session_id}");
    let mut runs = Vec::new();
    wait_until("the store to record both runs ending", || {
        let response = serve.get(&path);
        assert_eq!(response.status, 200, "{}", response.text());
        runs = response.json()["runs"].as_array().unwrap().clone();
        runs.len() == 2 && runs.iter().all(|r| r["status"] != "running")
    });
    let (parent, child) = (&runs[0], &runs[1]);
    assert_eq!(
        (&parent["agent_id"], &parent["parent_id"], &parent["status"]),
        (&json!("ling"), &Value::Null, &json!("completed"))
    );
    assert_eq!(
        (&child["agent_id"], &child["parent_id"], &child["status"]),
        (&json!("coder"), &parent["id"], &json!("completed"))
    );
    assert_eq!(child["task"], "Summarise the design.");
    assert!(child["ended_at"].is_i64(), "{child}");
    assert_eq!(spawned[0]["subagent_id"], child["id"]);
    let parent_id = parent["id"].as_str().unwrap();
    let child_id = child["id"].as_str().unwrap();
    // Without a session id: the current session's.
    assert_eq!(serve.get("/api/agent-runs").json()["runs"], json!(runs));

    let children = serve.get(&format!("/api/agent-children?run_id={parent_id}"));
    assert_eq!(children.json()["runs"], json!([child]));
    let none = serve.get(&format!("/api/agent-children?run_id={child_id}"));
    assert_eq!(none.json()["runs"], json!([]));

    let summary = serve.get(&format!(
        "/api/agent-context?run_id={child_id}&view=summary"
    ));
    assert_eq!(summary.status, 200, "{}", summary.text());
    let summary = summary.json();
    assert_eq!(summary["run"]["id"], json!(child_id));
    assert_eq!(summary["view"], "summary");
    let answer = summary["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .cloned()
        .unwrap_or_else(|| panic!("{summary:#}"));
    let preview = answer["preview"].as_str().unwrap();
    assert_eq!(preview.chars().count(), 200);
    assert!(coder_answer.starts_with(preview));
    assert_eq!(answer["chars"], json!(coder_answer.chars().count()));
    assert!(answer.get("content").is_none(), "{answer}");
    let by_default = serve.get(&format!("/api/agent-context?run_id={child_id}"));
    assert_eq!(by_default.json()["view"], "summary");

    let raw = serve.get(&format!("/api/agent-context?run_id={child_id}&view=raw"));
    assert_eq!(raw.status, 200, "{}", raw.text());

    // The audit trail the page links to: the delegation, and the child's run nested.
    // Written by the store's subscriber just after the run's status: wait for its end.
    let mut lines: Vec<String> = Vec::new();
    wait_until("the audit trail to record the turn's outcome", || {
        let log = serve.get(&format!("/api/run-log?run_id={parent_id}"));
        assert_eq!(log.status, 200, "{}", log.text());
        lines = log.json()["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().to_string())
            .collect();
        lines.iter().any(|l| l.starts_with("  outcome: completed"))
    });
    let text = lines.join("\n");
    assert!(
        lines[0].starts_with(&format!("run {parent_id} · ling")),
        "{text}"
    );
    assert!(text.contains("→ delegate to coder"), "{text}");
    assert!(
        text.contains("✓ delegate_to_agent: coder finished"),
        "{text}"
    );
    assert!(
        text.contains(&format!("  run {child_id} · coder")),
        "{text}"
    );
    let raw = raw.json();
    let contents: Vec<&str> = raw["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(contents.contains(&"Summarise the design."), "{raw:#}");
    assert!(contents.contains(&coder_answer.as_str()), "{raw:#}");

    let bad_view = serve.get(&format!("/api/agent-context?run_id={child_id}&view=full"));
    assert_error(&bad_view, 400, "summary or raw");
    assert_error(
        &serve.get("/api/agent-context?run_id=no-such-run"),
        404,
        "no such run",
    );
    assert_error(&serve.get("/api/agent-context"), 400, "run_id");
    assert_error(&serve.get("/api/agent-children"), 400, "run_id");

    let finished = serve.post("/api/agent-cancel", &json!({"run_id": child_id}));
    assert_error(&finished, 409, "not running");
    let unknown = serve.post("/api/agent-cancel", &json!({"run_id": "no-such-run"}));
    assert_eq!(unknown.status, 404, "{}", unknown.text());
}

/// Project A: a workspace with one `-p` session whose answer is "private"; returns the
/// workspace (its LINGGEN_HOME is the store the tests share) and the run's stream-json events.
fn project_a_session() -> (Workspace, Vec<Value>) {
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![Reply::text("The private plan of project A.")],
    );
    let project_a = Workspace::new();
    project_a.configure(Protocol::OpenAi, &server.url());
    let out = run_with_timeout(
        project_a
            .cmd()
            .args(["-p", "plan A", "--output-format", "stream-json"]),
        WAIT,
    );
    let events = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (project_a, events)
}

#[test]
fn run_inspection_is_confined_to_the_served_workspace() {
    let (project_a, events) = project_a_session();
    let session_id = events[0]["session_id"].as_str().unwrap();
    let run_id = events
        .iter()
        .find(|e| e["type"] == "RunStarted")
        .and_then(|e| e["run_id"].as_str())
        .unwrap_or_else(|| panic!("{events:?}"));

    // Another project, same LINGGEN_HOME, shared read-only.
    let project_b = tempfile::TempDir::new().unwrap();
    let serve = Serve::start(linggen_cmd(project_a.home(), project_b.path()).arg("serve"));
    let viewer = bearer(&serve.viewer_token);
    for path in [
        format!("/api/agent-context?run_id={run_id}&view=raw"),
        format!("/api/agent-runs?session_id={session_id}"),
        format!("/api/run-log?run_id={run_id}"),
    ] {
        let response = request(serve.addr, "GET", &path, &[("Authorization", &viewer)], b"");
        assert!(
            !response.text().contains(run_id) && !response.text().contains("private plan"),
            "project B's server shows project A's run: GET {path} -> {} {}",
            response.status,
            response.text()
        );
    }
}

#[test]
fn serve_opens_only_its_own_workspaces_sessions() {
    let (project_a, events) = project_a_session();
    let session_id = events[0]["session_id"].as_str().unwrap().to_string();

    // Project B's server, same LINGGEN_HOME: project A's session is not its to open, by
    // its id or a prefix of it.
    let project_b = tempfile::TempDir::new().unwrap();
    let serve = Serve::start(linggen_cmd(project_a.home(), project_b.path()).arg("serve"));
    for asked in [session_id.as_str(), &session_id[..6]] {
        let opened = serve.post("/api/sessions", &json!({ "session_id": asked }));
        assert_error(&opened, 404, "no session");
    }
    for path in [
        format!("/api/session?session_id={session_id}"),
        format!("/api/agent-runs?session_id={session_id}"),
    ] {
        let response = serve.get(&path);
        assert_eq!(response.status, 404, "GET {path}: {}", response.text());
        assert!(!response.text().contains("private plan"));
    }
    let listed = serve.get("/api/sessions").text();
    assert!(!listed.contains(&session_id), "{listed}");
}
