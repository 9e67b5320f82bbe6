//! The events' JSON Schema is checked in (`doc/events.schema.json`) for whoever reads the
//! stream without the Rust types (the page, scripts). It must be exactly what the types
//! generate, so it cannot drift from them. After changing an event, regenerate it with
//! `LINGGEN_UPDATE_SCHEMA=1 cargo test --locked --test event_schema` and commit the result.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

fn checked_in_schema() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("doc/events.schema.json")
}

fn generated_schema() -> String {
    let mut text = serde_json::to_string_pretty(&linggen::session::event::schema()).unwrap();
    text.push('\n');
    text
}

#[test]
fn the_checked_in_schema_is_what_the_event_types_generate() {
    let path = checked_in_schema();
    if std::env::var_os("LINGGEN_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, generated_schema()).unwrap();
        return;
    }
    // Compared as JSON, not as text: the order of an object's keys follows serde_json's
    // `preserve_order`, which the reference ACP client (a dev-dependency) turns on for the
    // test build and nothing turns on for the shipped binary.
    let checked_in: Option<Value> = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
    assert!(
        checked_in.as_ref() == Some(&linggen::session::event::schema()),
        "doc/events.schema.json is out of date with src/session/event.rs.\nRegenerate it \
         with `LINGGEN_UPDATE_SCHEMA=1 cargo test --locked --test event_schema` and commit \
         the result."
    );
}

/* ---------- recorded streams ---------- */

mod support;

use serde_json::{Value, json};
use std::time::Duration;

use support::web_client::Serve;
use support::{
    Fault, PIXEL, Protocol, Reply, ScriptedServer, Step, Workspace, run, write_config_with,
};

/// The longest a scripted turn may take to show up on the stream.
const WAIT: Duration = Duration::from_secs(20);

/// A scripted session whose `--output-format stream-json` events are kept in
/// `tests/fixtures/events/NAME.jsonl`, for the schema and the page's fold to be tested on.
struct Scenario {
    name: &'static str,
    script: fn() -> Vec<Step>,
    args: &'static [&'static str],
    /// Extra `[[models]]` keys.
    model: &'static str,
    setup: fn(&Workspace),
    /// Recorded from `linggen serve`'s event stream (what the page receives), a person
    /// answering its approvals; otherwise from `-p --output-format stream-json`.
    served: bool,
}

fn scenarios() -> Vec<Scenario> {
    vec![
        // Thinking, streamed text, a read, an edit with its diff in a checkpointed git
        // repository, a command that needs a person (denied: nobody can answer in `-p`),
        // an answer cut off by the output limit, and the outcome.
        Scenario {
            name: "tools",
            script: || {
                vec![
                    Reply::tool("Read", json!({"path": "a.txt"}))
                        .with_reasoning("Read the file first.")
                        .into(),
                    Reply::tool(
                        "Edit",
                        json!({"path": "a.txt", "old_string": "old", "new_string": "new"}),
                    )
                    .into(),
                    Reply::tool("Bash", json!({"command": "touch made-by-bash.txt"})).into(),
                    Reply::text("Edited a.txt; the command was not allowed. And then")
                        .truncated()
                        .into(),
                ]
            },
            args: &["--permission-mode", "accept-edits"],
            model: "",
            setup: |ws| {
                support::git(ws.root(), &["init", "-q", "-b", "main"]);
                ws.write("a.txt", "old\n");
                support::git(ws.root(), &["add", "."]);
                support::git(ws.root(), &["commit", "-qm", "first"]);
            },
            served: false,
        },
        // Over `linggen serve`'s stream: a write the person allows, a command they deny.
        Scenario {
            name: "approvals",
            script: || {
                vec![
                    Reply::tool(
                        "Write",
                        json!({"path": "notes.txt", "content": "approved on the page\n"}),
                    )
                    .into(),
                    Reply::tool("Bash", json!({"command": "touch made-by-bash.txt"})).into(),
                    Reply::text("Wrote notes.txt; the command was denied.").into(),
                ]
            },
            args: &[],
            model: "",
            setup: |_| {},
            served: true,
        },
        // A delegated run: the child's own run, messages and result.
        Scenario {
            name: "delegation",
            script: || {
                vec![
                    Reply::tool(
                        "delegate_to_agent",
                        json!({"target_agent_id": "coder", "task": "Say what a.txt holds."}),
                    )
                    .into(),
                    Reply::text("It holds one line.").into(),
                    Reply::text("coder says: it holds one line.").into(),
                ]
            },
            args: &[],
            model: "",
            setup: |ws| {
                ws.write("a.txt", "old\n");
            },
            served: false,
        },
        // An image attached to the prompt (published as its type and size).
        Scenario {
            name: "image",
            script: || vec![Reply::text("A transparent pixel.").into()],
            args: &["--image", "shot.png"],
            model: "images = true\n",
            setup: |ws| {
                std::fs::write(ws.root().join("shot.png"), PIXEL).unwrap();
            },
            served: false,
        },
        // The agent's todo list (`TodoWrite`, Claude Code's arguments).
        Scenario {
            name: "todos",
            script: || {
                vec![
                    Reply::tool(
                        "TodoWrite",
                        json!({"todos": [
                            {"content": "Read a.txt", "status": "completed", "activeForm": "Reading a.txt"},
                            {"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"},
                            {"content": "Ship it", "status": "pending", "activeForm": "Shipping it"}
                        ]}),
                    )
                    .into(),
                    Reply::text("Planned three steps.").into(),
                ]
            },
            args: &[],
            model: "",
            setup: |_| {},
            served: false,
        },
        // A 429 the call waits out (`Retry-After: 1`), then the answer.
        Scenario {
            name: "retry",
            script: || {
                vec![
                    Fault::rate_limited(1).into(),
                    Reply::text("Answered on the second try.").into(),
                ]
            },
            args: &[],
            model: "",
            setup: |_| {},
            served: false,
        },
        // The model refuses the request: an error and a failed outcome.
        Scenario {
            name: "error",
            script: || vec![Fault::api_error(400, "this model does not exist").into()],
            args: &[],
            model: "",
            setup: |_| {},
            served: false,
        },
    ]
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/events")
        .join(format!("{name}.jsonl"))
}

/// Runs the scenario through the real binary; its events (the `result` line is not one),
/// with the temporary folders and the server's port written as a person's would be.
fn record(scenario: &Scenario) -> Vec<Value> {
    let server = ScriptedServer::start_background(Protocol::OpenAi, (scenario.script)());
    let ws = Workspace::new();
    write_config_with(ws.home(), Protocol::OpenAi, &server.url(), scenario.model);
    (scenario.setup)(&ws);
    let prompt = format!("scenario {}", scenario.name);
    let stdout = if scenario.served {
        served(&ws, &prompt)
    } else {
        let mut args = vec!["-p", prompt.as_str(), "--output-format", "stream-json"];
        args.extend_from_slice(scenario.args);
        run(&ws, &args).stdout
    };
    let root = ws.root().to_string_lossy().into_owned();
    let home = ws.home().to_string_lossy().into_owned();
    let origin = server.url();
    stdout
        .lines()
        .map(|line| {
            let line = line
                .replace(&root, "/home/me/proj")
                .replace(&home, "/home/me/.linggen")
                .replace(&origin, "http://127.0.0.1:11434/v1");
            serde_json::from_str::<Value>(&line)
                .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {line}", scenario.name))
        })
        .filter(|event| event["type"] != "result")
        .collect()
}

/// The `data:` of every frame `linggen serve` streams for one turn, one line each; the
/// first approval is allowed, the others denied.
fn served(ws: &Workspace, prompt: &str) -> String {
    let serve = Serve::start(ws.cmd().arg("serve"));
    let mut stream = serve.events(None);
    serve.send(prompt);
    let mut lines = Vec::new();
    let mut approvals = 0;
    let mut ended = false;
    loop {
        let frame = stream.until(WAIT, |_| true).pop().unwrap();
        lines.push(frame.data.to_string());
        match frame.kind() {
            "ApprovalRequested" => {
                let id = frame.data["id"].as_str().unwrap();
                let decision = match approvals {
                    0 => json!({"decision": "allow_once"}),
                    _ => json!({"decision": "deny", "reason": "not on this page"}),
                };
                approvals += 1;
                let answer = serve.post(&format!("/api/approvals/{id}"), &decision);
                assert_eq!(answer.status, 202, "{}", answer.text());
            }
            "Outcome" => ended = true,
            "StateUpdated" if ended && frame.data["status"] == "idle" => break,
            _ => {}
        }
    }
    lines.join("\n")
}

fn read_fixture(name: &str) -> Vec<Value> {
    let path = fixture(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; record it with `LINGGEN_UPDATE_SCHEMA=1 cargo test --locked --test \
             event_schema`",
            path.display()
        )
    });
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// What a stream is made of, whatever its ids, timing and token batching: each type of
/// event with the fields it came with (as a set: the order of a JSON object's keys means
/// nothing).
fn shape(events: &[Value]) -> std::collections::BTreeSet<String> {
    events
        .iter()
        .map(|event| {
            let mut keys: Vec<&str> = event
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            keys.sort_unstable();
            keys.join(",")
        })
        .collect()
}

/// Every event is valid against the checked-in schema, and reads back as an `Event` that
/// writes the same JSON (but a message's images, published as summaries).
fn assert_valid(name: &str, events: &[Value]) {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(checked_in_schema()).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for event in events {
        let errors: Vec<String> = validator
            .iter_errors(event)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{name}: {event} is not valid: {errors:?}"
        );
        let back: linggen::session::Event = serde_json::from_value(event.clone())
            .unwrap_or_else(|e| panic!("{name}: {event} does not read back: {e}"));
        let mut expected = event.clone();
        expected.as_object_mut().unwrap().remove("images");
        assert_eq!(serde_json::to_value(&back).unwrap(), expected, "{name}");
    }
}

/// The fixtures are real streams of today's binary: recorded again, each scenario gives
/// the same kinds of events with the same fields (ids, timing and token batching aside),
/// and both the fresh and the kept streams are valid events.
#[test]
fn recorded_streams_are_fresh_and_valid() {
    let update = std::env::var_os("LINGGEN_UPDATE_SCHEMA").is_some();
    let mut stale = Vec::new();
    for scenario in scenarios() {
        let fresh = record(&scenario);
        assert!(
            fresh.iter().any(|e| e["type"] == "Outcome"),
            "{}: no outcome in {fresh:?}",
            scenario.name
        );
        assert_valid(scenario.name, &fresh);
        if update {
            std::fs::create_dir_all(fixture(scenario.name).parent().unwrap()).unwrap();
            let lines: Vec<String> = fresh.iter().map(Value::to_string).collect();
            std::fs::write(fixture(scenario.name), lines.join("\n") + "\n").unwrap();
            continue;
        }
        let kept = read_fixture(scenario.name);
        assert_valid(scenario.name, &kept);
        if shape(&kept) != shape(&fresh) {
            stale.push(format!(
                "{}: kept {:?}, now {:?}",
                scenario.name,
                shape(&kept)
                    .symmetric_difference(&shape(&fresh))
                    .collect::<Vec<_>>(),
                shape(&fresh).len()
            ));
        }
    }
    assert!(
        stale.is_empty(),
        "tests/fixtures/events/ no longer match what the binary publishes:\n{}\nRecord them \
         again with `LINGGEN_UPDATE_SCHEMA=1 cargo test --locked --test event_schema` and \
         commit the result.",
        stale.join("\n")
    );
}

/// Together the recorded streams cover what the page must fold.
#[test]
fn recorded_streams_cover_the_events_the_page_folds() {
    let mut seen = std::collections::BTreeSet::new();
    for scenario in scenarios() {
        for event in read_fixture(scenario.name) {
            seen.insert(event["type"].as_str().unwrap().to_string());
        }
    }
    for wanted in [
        "SessionStarted",
        "StateUpdated",
        "RunStarted",
        "Message",
        "Token",
        "ToolCallStarted",
        "ToolCallFinished",
        "ApprovalRequested",
        "ApprovalResolved",
        "ContextUsage",
        "ModelRouted",
        "AgentStatus",
        "CheckpointCreated",
        "CheckpointClosed",
        "ChangeReport",
        "TodosUpdated",
        "Retrying",
        "SubagentSpawned",
        "SubagentResult",
        "Outcome",
        "Error",
        "Warning",
    ] {
        assert!(
            seen.contains(wanted),
            "no recorded stream has a {wanted}: {seen:?}"
        );
    }
}

/// The schema is strict enough to catch a drift: an unknown type, a missing field or a
/// misspelt enum value fails it.
#[test]
fn the_schema_rejects_what_no_event_is() {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(checked_in_schema()).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let warning = json!({"type": "Warning", "message": "careful"});
    assert!(validator.is_valid(&warning));
    for wrong in [
        json!({"type": "Warned", "message": "careful"}),
        json!({"type": "Warning"}),
        json!({"type": "AgentStatus", "run_id": "r", "agent_id": "a", "status": "napping"}),
    ] {
        assert!(!validator.is_valid(&wrong), "{wrong} passed");
    }
}
