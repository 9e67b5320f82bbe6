//! The Agents panel's routes through the real binary: `linggen serve` against the scripted
//! model server, driven over raw HTTP. Listing, the model picker's choices, creating (the
//! file on disk, byte for byte), previews, the loader's validation messages, editing,
//! deleting, duplicating a built-in, and the refusals: read-only credentials, a missing
//! `Origin`, names that would leave the agent folder, and trust for project agents.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::web_client::{Serve, request};
use support::{Protocol, ScriptedServer, Step, Workspace};

fn setup(steps: Vec<Step>) -> (ScriptedServer, Workspace, Serve) {
    setup_with(steps, &[])
}

/// [`setup`] with `files` (relative to the root) written before `linggen serve` starts.
fn setup_with(steps: Vec<Step>, files: &[(&str, &str)]) -> (ScriptedServer, Workspace, Serve) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, steps);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    for (path, text) in files {
        ws.write(path, text);
    }
    let serve = Serve::start(ws.cmd().arg("serve"));
    (server, ws, serve)
}

fn agents(serve: &Serve) -> Value {
    let response = serve.get("/api/agents");
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()
}

fn agent<'a>(list: &'a Value, name: &str) -> Option<&'a Value> {
    list["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name)
}

fn reviewer() -> Value {
    json!({
        "scope": "personal",
        "name": "reviewer",
        "description": "Reviews diffs",
        "model": "local",
        "tools": ["Read", "Grep"],
        "skills": ["review"],
        "policy": ["Finalize"],
        "prompt": "You review diffs.",
    })
}

const REVIEWER_FILE: &str = "---\nname: reviewer\ndescription: Reviews diffs\nmodel: local\n\
     tools:\n- Read\n- Grep\nskills:\n- review\npolicy:\n- Finalize\n---\nYou review diffs.\n";

#[test]
fn agents_are_listed_with_their_files_and_the_models_offered() {
    let (_server, _ws, serve) = setup_with(
        vec![],
        &[(
            "agents/helper.md",
            "---\ndescription: Helps\nskills: [tidy]\nmode: talk\n---\nYou help.\n",
        )],
    );
    let list = agents(&serve);
    assert_eq!(list["can_edit"], true);
    let ling = agent(&list, "ling").expect("the built-in ling");
    assert_eq!(ling["source"], "builtin");
    assert_eq!(ling["editable"], false);
    assert_eq!(ling["tools"], "*");
    assert!(
        ling["text"].as_str().unwrap().contains("name: ling"),
        "{ling}"
    );
    assert_eq!(ling["policy"]["delegate_targets"], json!(["coder"]));
    let coder = agent(&list, "coder").unwrap();
    assert!(coder["tools"].as_array().unwrap().contains(&json!("Read")));
    let helper = agent(&list, "helper").expect("the project agent");
    assert_eq!(helper["source"], "project");
    assert_eq!(helper["editable"], true);
    assert_eq!(helper["mode"], "talk");
    assert_eq!(helper["skills"], json!(["tidy"]));
    assert_eq!(helper["prompt"], "You help.\n");
    assert!(
        helper["path"]
            .as_str()
            .unwrap()
            .ends_with("agents/helper.md")
    );
    let warnings = list["warnings"].to_string();
    assert!(
        warnings.contains("lists skill `tidy`, which does not exist"),
        "{warnings}"
    );

    let models = serve.get("/api/models");
    assert_eq!(models.status, 200, "{}", models.text());
    let models = models.json();
    assert_eq!(models["models"][0]["id"], "test");
    assert_eq!(models["models"][0]["local"], true);
    assert_eq!(models["hints"][0]["value"], "local");
    assert_eq!(models["hints"][0]["available"], true);
    assert_eq!(models["hints"][1]["available"], false);
    assert_eq!(models["routing"]["policies"][0], "local-first");
}

#[test]
fn creating_writes_the_file_the_terminal_reads_and_previews_write_nothing() {
    let (_server, ws, serve) = setup(vec![]);
    let file = ws.home().join("agents/reviewer.md");

    let mut preview = reviewer();
    preview["dry_run"] = json!(true);
    let answer = serve.post("/api/agents", &preview);
    assert_eq!(answer.status, 200, "{}", answer.text());
    let answer = answer.json();
    assert_eq!(answer["dry_run"], true);
    assert_eq!(answer["written"], false);
    assert_eq!(answer["text"], REVIEWER_FILE);
    assert_eq!(answer["warnings"], json!([]), "`review` is a shipped skill");
    assert!(!file.exists(), "a preview writes nothing");
    assert!(agent(&agents(&serve), "reviewer").is_none());

    let answer = serve.post("/api/agents", &reviewer());
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(answer.json()["written"], true);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), REVIEWER_FILE);
    let listed = agents(&serve);
    let listed = agent(&listed, "reviewer").expect("listed at once");
    assert_eq!(listed["source"], "personal");
    assert_eq!(listed["model"], "local");
    assert_eq!(listed["policy"]["allow"], json!(["Finalize"]));

    // A second agent of that name in that folder is refused, file untouched.
    let again = serve.post("/api/agents", &reviewer());
    assert_eq!(again.status, 409, "{}", again.text());
    assert!(
        again.json()["error"]
            .as_str()
            .unwrap()
            .contains("exists already")
    );
}

#[test]
fn the_loaders_own_message_refuses_a_bad_agent() {
    let (_server, ws, serve) = setup(vec![]);
    let mut bad = reviewer();
    bad["policy"] = json!(["Deploy"]);
    let answer = serve.post("/api/agents", &bad);
    assert_eq!(answer.status, 400, "{}", answer.text());
    let error = answer.json()["error"].as_str().unwrap().to_string();
    let file = ws.home().join("agents/reviewer.md");
    assert!(
        error.starts_with(&format!(
            "{}:10: unknown capability `Deploy` in `policy`; use Patch",
            file.display()
        )),
        "{error}"
    );
    assert!(!file.exists());

    let raw = json!({
        "scope": "project", "name": "helper", "dry_run": true,
        "text": "---\nname: helper\nmode: sprint\n---\nHi.\n",
    });
    let answer = serve.post("/api/agents", &raw);
    assert_eq!(answer.status, 400, "{}", answer.text());
    let error = answer.json()["error"].as_str().unwrap().to_string();
    assert!(
        error.ends_with(
            ".linggen/agents/helper.md:3: `mode: sprint` is not a mode; write chat, auto or talk"
        ),
        "{error}"
    );

    let mismatch = json!({"scope": "project", "name": "helper", "text": "---\nname: other\n---\n"});
    let answer = serve.post("/api/agents", &mismatch);
    assert_eq!(answer.status, 400, "{}", answer.text());
    assert!(
        answer.text().contains("make them the same"),
        "{}",
        answer.text()
    );
    let scope = serve.post("/api/agents", &json!({"name": "x", "prompt": "Hi."}));
    assert_eq!(scope.status, 400);
    assert!(scope.text().contains("\\\"scope\\\""), "{}", scope.text());
}

#[test]
fn editing_keeps_unknown_fields_and_deleting_removes_the_file() {
    let (_server, ws, serve) = setup_with(
        vec![],
        &[(
            "agents/helper.md",
            "---\nname: helper\ncolor: teal\ndescription: Old\n---\nOld prompt.\n",
        )],
    );
    let file = ws.root().join("agents/helper.md");
    let edit = json!({"description": "New", "tools": ["Read"], "prompt": "New prompt."});
    let answer = serve.post("/api/agents/helper", &edit);
    assert_eq!(answer.status, 200, "{}", answer.text());
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        text,
        "---\nname: helper\ndescription: New\ntools:\n- Read\ncolor: teal\n---\nNew prompt.\n"
    );
    assert_eq!(
        agent(&agents(&serve), "helper").unwrap()["description"],
        "New"
    );

    // The whole file, as text.
    let raw = json!({"text": "---\nname: helper\n---\nRaw.\n"});
    let answer = serve.post("/api/agents/helper", &raw);
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "---\nname: helper\n---\nRaw.\n"
    );
    let rename = serve.post(
        "/api/agents/helper",
        &json!({"name": "other", "prompt": "x"}),
    );
    assert_eq!(rename.status, 400, "{}", rename.text());

    let gone = serve.post("/api/agents/helper/delete", &json!({}));
    assert_eq!(gone.status, 200, "{}", gone.text());
    assert_eq!(gone.json()["now"], Value::Null);
    assert!(!file.exists());
    assert!(agent(&agents(&serve), "helper").is_none());
    assert_eq!(
        serve.post("/api/agents/helper/delete", &json!({})).status,
        404
    );
    let builtin = serve.post("/api/agents/ling/delete", &json!({}));
    assert_eq!(builtin.status, 400);
    assert!(
        builtin.text().contains("duplicate it"),
        "{}",
        builtin.text()
    );
    let builtin = serve.post("/api/agents/coder", &json!({"prompt": "x"}));
    assert_eq!(builtin.status, 400);
}

#[test]
fn a_built_in_is_duplicated_into_an_editable_copy() {
    let (_server, ws, serve) = setup(vec![]);
    let answer = serve.post("/api/agents/coder/duplicate", &json!({"scope": "project"}));
    assert_eq!(answer.status, 200, "{}", answer.text());
    let copy = ws.root().join(".linggen/agents/coder.md");
    let shipped = agent(&agents(&serve), "coder").unwrap().clone();
    assert_eq!(
        shipped["source"], "project",
        "the copy replaces the built-in"
    );
    assert_eq!(shipped["editable"], true);
    let original = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("agents/coder.md"),
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), original);

    let named = serve.post(
        "/api/agents/ling/duplicate",
        &json!({"scope": "personal", "name": "my-ling"}),
    );
    assert_eq!(named.status, 200, "{}", named.text());
    let text = std::fs::read_to_string(ws.home().join("agents/my-ling.md")).unwrap();
    assert!(text.contains("\nname: my-ling\n"), "{text}");
    assert!(agent(&agents(&serve), "my-ling").is_some());
    assert!(
        agent(&agents(&serve), "ling").is_some(),
        "the built-in stays"
    );

    // Deleting the copy brings the built-in back.
    let gone = serve.post("/api/agents/coder/delete", &json!({}));
    assert_eq!(gone.status, 200, "{}", gone.text());
    assert_eq!(gone.json()["now"]["source"], "builtin");
}

#[test]
fn only_full_access_with_the_pages_origin_may_write() {
    let (_server, ws, serve) = setup(vec![]);
    let body = reviewer().to_string();
    let viewer = format!("Bearer {}", serve.viewer_token);
    let origin = serve.origin();
    let read_only = request(
        serve.addr,
        "POST",
        "/api/agents",
        &[("Authorization", &viewer), ("Origin", &origin)],
        body.as_bytes(),
    );
    assert_eq!(read_only.status, 403, "{}", read_only.text());
    // A viewer still sees the list, and is told it cannot edit.
    let list = request(
        serve.addr,
        "GET",
        "/api/agents",
        &[("Authorization", &viewer)],
        b"",
    );
    assert_eq!(list.status, 200);
    assert_eq!(list.json()["can_edit"], false);

    let full = format!("Bearer {}", serve.token);
    let no_origin = request(
        serve.addr,
        "POST",
        "/api/agents",
        &[("Authorization", &full)],
        body.as_bytes(),
    );
    assert_eq!(no_origin.status, 403, "{}", no_origin.text());
    // Other methods are held to the same rule as POST.
    for method in ["PUT", "DELETE", "PATCH"] {
        let foreign = request(
            serve.addr,
            method,
            "/api/agents/reviewer",
            &[("Authorization", &full)],
            b"",
        );
        assert_eq!(foreign.status, 403, "{method}: {}", foreign.text());
        let viewer_answer = request(
            serve.addr,
            method,
            "/api/agents/reviewer",
            &[("Authorization", &viewer), ("Origin", &origin)],
            b"",
        );
        assert_eq!(
            viewer_answer.status,
            403,
            "{method}: {}",
            viewer_answer.text()
        );
        let full_answer = request(
            serve.addr,
            method,
            "/api/agents/reviewer",
            &[("Authorization", &full), ("Origin", &origin)],
            b"",
        );
        assert_eq!(full_answer.status, 405, "{method}: {}", full_answer.text());
    }
    // And nothing at all without a credential, reads included.
    for path in ["/api/agents", "/api/models"] {
        let anonymous = request(serve.addr, "GET", path, &[], b"");
        assert_eq!(anonymous.status, 401, "{path}: {}", anonymous.text());
    }
    assert!(!ws.home().join("agents").exists(), "nothing was written");
}

#[test]
fn names_cannot_leave_the_agent_folder() {
    let (_server, ws, serve) = setup(vec![]);
    for name in ["../evil", "a/b", ".hidden", "..", "UPPER", "x.md"] {
        let mut body = reviewer();
        body["name"] = json!(name);
        let answer = serve.post("/api/agents", &body);
        assert_eq!(answer.status, 400, "{name}: {}", answer.text());
        assert!(
            answer.text().contains("cannot name an agent"),
            "{name}: {}",
            answer.text()
        );
        let dup = serve.post(
            "/api/agents/ling/duplicate",
            &json!({"scope": "personal", "name": name}),
        );
        assert_eq!(dup.status, 400, "{name}: {}", dup.text());
    }
    for path in [
        "/api/agents/..%2Fevil",
        "/api/agents/.hidden",
        "/api/agents/a%2Fb/delete",
    ] {
        let answer = serve.post(path, &json!({"prompt": "x"}));
        assert_eq!(answer.status, 400, "{path}: {}", answer.text());
    }
    // A project agent folder that is a symlink out of the workspace is not written through.
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.root().join(".linggen")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.root().join(".linggen/agents")).unwrap();
    let mut body = reviewer();
    body["scope"] = json!("project");
    let answer = serve.post("/api/agents", &body);
    assert_eq!(answer.status, 400, "{}", answer.text());
    assert!(answer.text().contains("outside"), "{}", answer.text());
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    assert!(!ws.home().join("agents").exists() && !ws.home().join("evil.md").exists());
}

#[test]
fn a_project_agent_written_here_grants_nothing_and_trusts_nothing() {
    let (_server, ws, serve) = setup(vec![]);
    let body = json!({
        "scope": "project",
        "name": "lead",
        "description": "Runs things",
        "mode": "auto",
        "policy": ["Patch", "Finalize", "Delegate"],
        "checks": ["rm -rf /tmp/x"],
        "prompt": "You lead.",
    });
    let answer = serve.post("/api/agents", &body);
    assert_eq!(answer.status, 200, "{}", answer.text());
    let answer = answer.json();
    assert_eq!(answer["grants"], json!([]));
    let trust = answer["trust"].as_str().unwrap();
    assert!(
        trust.contains("grants nothing") && trust.contains("none was given"),
        "{trust}"
    );
    assert!(ws.root().join(".linggen/agents/lead.md").exists());
    assert!(
        !ws.home().join("trusted.toml").exists(),
        "writing a project agent trusts nothing"
    );
    // A personal agent's answer has no trust note.
    let personal = serve.post("/api/agents", &reviewer()).json();
    assert_eq!(personal["trust"], Value::Null);
}

/// Under `/share` the shell and the page share one set of agents: an agent the page writes
/// is announced in the terminal in one line and is at once in `/agent`; so is its removal.
#[test]
fn the_shell_names_each_agent_the_page_changes() {
    let (ws, _server) = support::pty::workspace(vec![]);
    let mut repl = support::pty::Repl::start(&ws, &[]);
    repl.line("/share");
    let link = repl.expect_share_link();
    let origin = format!("http://{}", link.addr);
    let body = json!({ "ticket": link.ticket }).to_string();
    let redeemed = request(
        link.addr,
        "POST",
        "/api/ticket",
        &[("Origin", &origin), ("Content-Type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(redeemed.status, 200, "{}", redeemed.text());
    let bearer = format!("Bearer {}", redeemed.json()["credential"].as_str().unwrap());
    let post = |path: &str, body: &Value| {
        request(
            link.addr,
            "POST",
            path,
            &[("Authorization", &bearer), ("Origin", &origin)],
            body.to_string().as_bytes(),
        )
    };
    let created = post("/api/agents", &reviewer());
    assert_eq!(created.status, 200, "{}", created.text());
    let file = ws.home().join("agents/reviewer.md");
    repl.expect(&format!("agent reviewer added ({})", file.display()));
    repl.line("/agent");
    repl.expect("reviewer  — Reviews diffs (personal)");
    let edited = post(
        "/api/agents/reviewer",
        &json!({"description": "Reviews", "prompt": "v2"}),
    );
    assert_eq!(edited.status, 200, "{}", edited.text());
    repl.expect("agent reviewer changed");
    let gone = post("/api/agents/reviewer/delete", &json!({}));
    assert_eq!(gone.status, 200, "{}", gone.text());
    repl.expect("agent reviewer removed");
    repl.line("/quit");
}

/// A repository's agent folder or file that is a symlink out of the workspace is read (the
/// loader follows it) but never written or removed through.
#[test]
fn symlinked_agent_files_are_not_written_through() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("far.md"), "---\nname: far\n---\nFar.\n").unwrap();
    std::fs::write(outside.path().join("secret.txt"), "keep me\n").unwrap();
    let server = ScriptedServer::start_background(Protocol::OpenAi, Vec::<Step>::new());
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    std::os::unix::fs::symlink(outside.path(), ws.root().join("agents")).unwrap();
    std::fs::create_dir_all(ws.root().join(".linggen/agents")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        ws.root().join(".linggen/agents/near.md"),
    )
    .unwrap();
    let serve = Serve::start(ws.cmd().arg("serve"));
    assert!(agent(&agents(&serve), "far").is_some());
    for path in ["/api/agents/far", "/api/agents/far/delete"] {
        let answer = serve.post(path, &json!({"prompt": "Near."}));
        assert_eq!(answer.status, 400, "{path}: {}", answer.text());
        assert!(answer.text().contains("outside"), "{}", answer.text());
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("far.md")).unwrap(),
        "---\nname: far\n---\nFar.\n"
    );
    // `near.md` leads to a file that is no agent: nothing by that name loads, and a new
    // agent of that name is refused rather than written through the link.
    let answer = serve.post(
        "/api/agents",
        &json!({"scope": "project", "name": "near", "prompt": "x"}),
    );
    assert_eq!(answer.status, 409, "{}", answer.text());
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "keep me\n"
    );
}
