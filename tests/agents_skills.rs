//! Skills and agents through the real binary (`-p`) and the scripted model server: skills
//! invoked by the person and by the model, their visibility flags and custom triggers,
//! broken files, delegation between agents with its gates and limits, run trees in the
//! store, cascading cancellation, and advisory locks.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Fault, Protocol, Reply, ScriptedServer, Step, Workspace, run, texts};

fn setup(steps: Vec<Step>) -> (ScriptedServer, Workspace) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, steps);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    (server, ws)
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

fn tool_description(body: &Value, name: &str) -> String {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["function"]["name"] == name)
        .and_then(|t| t["function"]["description"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn write_skill(ws: &Workspace, name: &str, frontmatter: &str, body: &str) {
    ws.write(
        &format!(".linggen/skills/{name}/SKILL.md"),
        &format!("---\nname: {name}\n{frontmatter}\n---\n{body}\n"),
    );
}

#[test]
fn person_invokes_a_skill_with_arguments_and_piped_input() {
    let (server, ws) = setup(vec![Reply::text("Hello, world!").into()]);
    write_skill(
        &ws,
        "greet",
        "description: Greet someone\nargument-hint: <name>",
        "Say hello to $ARGUMENTS, in one line.",
    );
    let r = run(&ws, &["-p", "/greet world"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let request = server.last_chat_request().unwrap();
    let user = texts(&request, "user").join("\n");
    assert!(user.contains("Say hello to world, in one line."), "{user}");
    assert!(user.contains("invoked the skill `greet`"), "{user}");

    // Piped input rides along as material; the arguments stay the prompt's.
    let (server, ws2) = setup(vec![Reply::text("Looks fine.").into()]);
    write_skill(
        &ws2,
        "diffcheck",
        "description: Check a diff",
        "Check this diff for bugs.",
    );
    let mut child = ws2
        .cmd()
        .args(["-p", "/diffcheck"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"-old line\n+new line\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let user = texts(&server.last_chat_request().unwrap(), "user").join("\n");
    assert!(user.contains("Check this diff for bugs."), "{user}");
    assert!(user.contains("+new line"), "{user}");
    assert!(
        !user.contains("ARGUMENTS:"),
        "no arguments were given: {user}"
    );
}

#[test]
fn model_invokes_a_skill_whose_allowed_tools_hold_for_that_turn_only() {
    let (server, ws) = setup(vec![
        Reply::tool("Skill", json!({"skill": "scaffold", "args": "notes"})).into(),
        Reply::tool("Bash", json!({"command": "touch notes.txt"})).into(),
        Reply::text("Created notes.txt.").into(),
        // Next turn: the same command without the skill.
        Reply::tool("Bash", json!({"command": "touch other.txt"})).into(),
        Reply::text("Could not.").into(),
    ]);
    write_skill(
        &ws,
        "scaffold",
        "description: Create an empty file named after the argument\nallowed-tools: Bash(touch:*)",
        "Create the file $1.txt with touch.",
    );
    // A project skill's allowed-tools hold only once the person trusts the folder.
    let trusted = run(&ws, &["trust", "--yes"]);
    assert_eq!(trusted.code, Some(0), "{}", trusted.stderr);
    let r = run(&ws, &["-p", "make the notes file"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(ws.root().join("notes.txt").exists(), "{}", r.stderr);
    let requests = server.chat_requests();
    // The catalog (name and description, not the body) rides in the Skill tool.
    let catalog = tool_description(&requests[0], "Skill");
    assert!(
        catalog.contains("scaffold: Create an empty file"),
        "{catalog}"
    );
    assert!(!catalog.contains("with touch"), "{catalog}");
    let results = texts(&requests[1], "tool").join("\n");
    assert!(
        results.contains("Create the file notes.txt with touch."),
        "{results}"
    );

    // A new turn: the skill's permission is gone, and -p cannot ask anyone.
    let r = run(&ws, &["-p", "--continue", "make another"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!ws.root().join("other.txt").exists());
    let results = texts(&server.last_chat_request().unwrap(), "tool").join("\n");
    assert!(results.contains("needs the user's approval"), "{results}");
}

#[test]
fn visibility_flags_are_respected() {
    let (server, ws) = setup(vec![
        Reply::tool("Skill", json!({"skill": "deploy"})).into(),
        Reply::text("I may not deploy.").into(),
    ]);
    write_skill(
        &ws,
        "deploy",
        "description: Deploy to production\ndisable-model-invocation: true",
        "Run the deploy.",
    );
    write_skill(
        &ws,
        "house-style",
        "description: Our coding conventions\nuser-invocable: false",
        "Use tabs.",
    );
    let r = run(&ws, &["-p", "ship it"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let requests = server.chat_requests();
    let catalog = tool_description(&requests[0], "Skill");
    assert!(!catalog.contains("deploy"), "{catalog}");
    assert!(catalog.contains("house-style"), "{catalog}");
    let results = texts(&requests[1], "tool").join("\n");
    assert!(results.contains("no skill named `deploy`"), "{results}");
    assert!(!results.contains("Run the deploy"), "{results}");

    // The person can run /deploy, but not the model-only skill.
    let r = run(&ws, &["-p", "/house-style"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("Unknown command /house-style"),
        "{}",
        r.stderr
    );
}

/// An agent's `skills:` is what its runs see: the catalog lists only those, a call to
/// another skill is answered as if it did not exist, and a listed name no skill has is one
/// warning naming the file and line.
#[test]
fn an_agents_skills_field_narrows_the_catalog_and_the_calls() {
    let (server, ws) = setup(vec![
        Reply::tool("Skill", json!({"skill": "deploy"})).into(),
        Reply::text("Not mine to deploy.").into(),
    ]);
    write_skill(&ws, "review", "description: Review the diff", "Review it.");
    write_skill(
        &ws,
        "deploy",
        "description: Deploy to production",
        "Run the deploy.",
    );
    ws.write(
        "agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews\nskills: [review, ghost]\n---\nYou review.\n",
    );
    let r = run(&ws, &["-p", "ship it", "--agent", "reviewer"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("reviewer.md:4: agent `reviewer` lists skill `ghost`, which does not exist"),
        "{}",
        r.stderr
    );
    let requests = server.chat_requests();
    let catalog = tool_description(&requests[0], "Skill");
    assert!(catalog.contains("review: Review the diff"), "{catalog}");
    assert!(!catalog.contains("deploy"), "{catalog}");
    let results = texts(&requests[1], "tool").join("\n");
    assert!(
        results.contains("no skill named `deploy`; skills: review"),
        "{results}"
    );
    assert!(!results.contains("Run the deploy"), "{results}");

    // Without the field the same workspace's default agent sees both.
    let (server, ws2) = setup(vec![Reply::text("ok").into()]);
    write_skill(&ws2, "review", "description: Review the diff", "Review it.");
    write_skill(
        &ws2,
        "deploy",
        "description: Deploy to production",
        "Run the deploy.",
    );
    let r = run(&ws2, &["-p", "hi"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let catalog = tool_description(&server.last_chat_request().unwrap(), "Skill");
    assert!(
        catalog.contains("deploy") && catalog.contains("review"),
        "{catalog}"
    );
}

#[test]
fn a_custom_trigger_routes_to_its_skill() {
    let (server, ws) = setup(vec![Reply::text("Translated.").into()]);
    write_skill(
        &ws,
        "translate",
        "description: Translate to French\ntrigger: \">>fr\"",
        "Translate into French: $ARGUMENTS",
    );
    let r = run(&ws, &["-p", ">>fr good morning"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let user = texts(&server.last_chat_request().unwrap(), "user").join("\n");
    assert!(
        user.contains("Translate into French: good morning"),
        "{user}"
    );
}

#[test]
fn broken_skill_and_agent_files_warn_and_the_rest_works() {
    let (server, ws) = setup(vec![Reply::text("fine").into()]);
    ws.write(
        ".linggen/skills/broken/SKILL.md",
        "---\nname: broken\ndescription: [unclosed\n---\nbody\n",
    );
    write_skill(&ws, "good", "description: A working skill", "Do good.");
    ws.write("agents/bad.md", "---\nname: Bad Name\n---\nprompt\n");
    let r = run(&ws, &["-p", "hello"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("broken/SKILL.md:3"),
        "the warning names the file and line: {}",
        r.stderr
    );
    assert!(r.stderr.contains("bad.md"), "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "fine");
    let catalog = tool_description(&server.last_chat_request().unwrap(), "Skill");
    assert!(catalog.contains("good: A working skill"), "{catalog}");
    assert!(!catalog.contains("broken"), "{catalog}");
}

#[test]
fn ling_delegates_to_coder_which_edits_a_file() {
    let (server, ws) = setup(vec![
        Reply::tool(
            "delegate_to_agent",
            json!({"target_agent_id": "coder", "task": "In src/lib.rs change 41 to 42."}),
        )
        .into(),
        // coder's run: its own history.
        Reply::tool(
            "Edit",
            json!({"path": "src/lib.rs", "old_string": "41", "new_string": "42"}),
        )
        .into(),
        Reply::text("Changed 41 to 42 in src/lib.rs.").into(),
        // Back in ling's run.
        Reply::text("coder made answer() return 42.").into(),
    ]);
    ws.write("src/lib.rs", "pub fn answer() -> u32 {\n    41\n}\n");
    let r = run(
        &ws,
        &[
            "-p",
            "make answer return 42",
            "--permission-mode",
            "accept-edits",
            "--output-format",
            "stream-json",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(ws.read("src/lib.rs").contains("42"));
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 4);
    // coder started fresh: its own prompt, only the task, no delegation tool.
    let coder_first = &requests[1];
    assert!(
        texts(coder_first, "system")[0].contains("coding agent"),
        "{:?}",
        texts(coder_first, "system")
    );
    assert_eq!(
        texts(coder_first, "user"),
        ["In src/lib.rs change 41 to 42."]
    );
    assert!(!tool_names(coder_first).contains(&"delegate_to_agent".to_string()));
    // ling got coder's answer as the tool result.
    let results = texts(&requests[3], "tool").join("\n");
    assert!(results.contains("Changed 41 to 42"), "{results}");

    let events = events(&r.stdout);
    let spawned = of_type(&events, "SubagentSpawned");
    let result = of_type(&events, "SubagentResult");
    assert_eq!(spawned.len(), 1);
    assert_eq!(spawned[0]["agent_id"], "coder");
    assert_eq!(result[0]["outcome"], "completed");

    // The run tree is persisted: ling's run with coder's under it.
    let session_id = events[0]["session_id"].as_str().unwrap().to_string();
    let store = linggen::store::Store::open(ws.home()).unwrap();
    let runs = store.runs(&session_id).unwrap();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(
        (runs[0].agent_id.as_str(), runs[0].status.as_str()),
        ("ling", "completed")
    );
    assert_eq!(runs[1].parent_id.as_deref(), Some(runs[0].id.as_str()));
    assert_eq!(
        (runs[1].agent_id.as_str(), runs[1].status.as_str()),
        ("coder", "completed")
    );
    // Resuming brings back ling's conversation, not coder's private one.
    let history = store.load_messages(&session_id).unwrap();
    assert!(
        history
            .iter()
            .all(|m| m.content != "In src/lib.rs change 41 to 42."),
        "{history:?}"
    );
}

const DELEGATOR: &str = "---\nname: lead\ndescription: Leads\npolicy:\n  allow: [Delegate, Finalize]\n  delegate_targets: [middle]\n---\nYou lead.\n";
const MIDDLE: &str = "---\nname: middle\ndescription: Passes work on\npolicy: [Delegate, Finalize]\n---\nYou pass work on.\n";
const LEAF: &str =
    "---\nname: leaf\ndescription: Does the work\ntools: [Read]\n---\nYou do the work.\n";

fn team(ws: &Workspace) {
    ws.write("agents/lead.md", DELEGATOR);
    ws.write("agents/middle.md", MIDDLE);
    ws.write("agents/leaf.md", LEAF);
}

#[test]
fn delegate_targets_and_the_depth_limit_refuse() {
    let (server, ws) = setup(vec![
        // lead may only delegate to middle.
        Reply::tool(
            "delegate_to_agent",
            json!({"target_agent_id": "leaf", "task": "x"}),
        )
        .into(),
        Reply::tool(
            "delegate_to_agent",
            json!({"target_agent_id": "middle", "task": "pass it on"}),
        )
        .into(),
        // middle (depth 1) tries to go one deeper: the limit is 1.
        Reply::tool(
            "delegate_to_agent",
            json!({"target_agent_id": "leaf", "task": "do it"}),
        )
        .into(),
        Reply::text("I could not pass it on.").into(),
        Reply::text("middle could not pass it on.").into(),
    ]);
    team(&ws);
    support::write_config_with(
        ws.home(),
        Protocol::OpenAi,
        &server.url(),
        "[agent]\nmax_delegation_depth = 1\n",
    );
    let r = run(&ws, &["-p", "go", "--agent", "lead"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let requests = server.chat_requests();
    let first = texts(&requests[1], "tool").join("\n");
    assert!(first.contains("may only delegate to middle"), "{first}");
    // middle at the limit is not even offered the tool; calling it anyway is refused.
    assert!(!tool_names(&requests[2]).contains(&"delegate_to_agent".to_string()));
    let deeper = texts(&requests[3], "tool").join("\n");
    assert!(deeper.contains("delegation depth limit"), "{deeper}");
}

#[test]
fn a_tool_outside_the_agents_tools_is_not_offered_and_refused() {
    let (server, ws) = setup(vec![
        Reply::tool("Bash", json!({"command": "ls"})).into(),
        Reply::text("I can only read.").into(),
    ]);
    team(&ws);
    let r = run(&ws, &["-p", "list files", "--agent", "leaf"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let requests = server.chat_requests();
    assert_eq!(tool_names(&requests[0]), ["Read"]);
    let result = texts(&requests[1], "tool").join("\n");
    assert!(
        result.contains("agent `leaf` may not use `Bash`"),
        "{result}"
    );
}

#[test]
fn writes_outside_work_globs_are_refused() {
    let (server, ws) = setup(vec![
        Reply::tool("Write", json!({"path": "src/main.rs", "content": "x"})).into(),
        Reply::tool(
            "Write",
            json!({"path": "docs/notes.md", "content": "notes"}),
        )
        .into(),
        Reply::text("Wrote the notes.").into(),
    ]);
    ws.write(
        ".linggen/agents/writer.md",
        "---\nname: writer\ndescription: Writes docs\nwork_globs: [\"docs/**\"]\n---\nYou write docs.\n",
    );
    let r = run(
        &ws,
        &[
            "-p",
            "write",
            "--agent",
            "writer",
            "--permission-mode",
            "accept-edits",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!ws.root().join("src/main.rs").exists());
    assert_eq!(ws.read("docs/notes.md"), "notes");
    let result = texts(&server.chat_requests()[1], "tool").join("\n");
    assert!(result.contains("may only write to docs/**"), "{result}");
}

#[test]
fn cancelling_the_parent_cancels_the_child() {
    let (server, ws) = setup(vec![
        Reply::tool(
            "delegate_to_agent",
            json!({"target_agent_id": "coder", "task": "think for a long time"}),
        )
        .into(),
        Fault::Hang.into(),
    ]);
    let child = ws
        .cmd()
        .args(["-p", "go", "--output-format", "stream-json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.chat_requests().len() < 2 {
        assert!(Instant::now() < deadline, "coder's request never came");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events = events(&stdout);
    let session_id = events[0]["session_id"].as_str().unwrap().to_string();
    let runs = linggen::store::Store::open(ws.home())
        .unwrap()
        .runs(&session_id)
        .unwrap();
    let statuses: Vec<(&str, &str)> = runs
        .iter()
        .map(|r| (r.agent_id.as_str(), r.status.as_str()))
        .collect();
    assert_eq!(statuses, [("ling", "cancelled"), ("coder", "cancelled")]);
}

#[test]
fn two_runs_contend_for_a_lock() {
    let (server, ws) = setup(vec![
        Reply::tool("lock_paths", json!({"globs": ["src/**"]})).into(),
        Reply::tool(
            "delegate_to_agent",
            json!({"target_agent_id": "coder", "task": "change 41 to 42 in src/lib.rs"}),
        )
        .into(),
        // coder: its edit is refused, and so is its own lock.
        Reply::tool(
            "Edit",
            json!({"path": "src/lib.rs", "old_string": "41", "new_string": "42"}),
        )
        .into(),
        Reply::tool("lock_paths", json!({"globs": ["src/lib.rs"]})).into(),
        Reply::text("src/lib.rs is locked by another run.").into(),
        // ling releases its lock with the token it got, and edits itself.
        Reply::tool("unlock_paths", json!({"tokens": ["TOKEN"]})).into(),
        Reply::text("Done.").into(),
    ]);
    ws.write("src/lib.rs", "pub fn answer() -> u32 {\n    41\n}\n");
    let r = run(&ws, &["-p", "go", "--permission-mode", "accept-edits"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        ws.read("src/lib.rs").contains("41"),
        "the edit must not land"
    );
    let requests = server.chat_requests();
    let locked = texts(&requests[1], "tool").join("\n");
    assert!(locked.contains("token: lk-"), "{locked}");
    let refused = texts(&requests[3], "tool").join("\n");
    assert!(refused.contains("src/lib.rs is locked by run"), "{refused}");
    let relock = texts(&requests[4], "tool").join("\n");
    assert!(relock.contains("already locked"), "{relock}");
    // A made-up token is not this run's.
    let unlock = texts(&requests[6], "tool").join("\n");
    assert!(unlock.contains("not held by this run"), "{unlock}");
}

#[test]
fn a_forked_skill_runs_in_its_own_context_and_its_answer_comes_back() {
    let (server, ws) = setup(vec![
        Reply::text("First answer.").into(),
        // The forked run sees only the skill's instructions.
        Reply::text("The summary.").into(),
        // Then the main conversation goes on with the exchange in it.
        Reply::text("Yes.").into(),
    ]);
    write_skill(
        &ws,
        "summarize",
        "description: Summarize the repository\ncontext: fork",
        "Summarize this repository in one line.",
    );
    assert_eq!(run(&ws, &["-p", "hello"]).code, Some(0));
    let r = run(
        &ws,
        &[
            "-p",
            "--continue",
            "/summarize",
            "--output-format",
            "stream-json",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let requests = server.chat_requests();
    let forked = texts(&requests[1], "user");
    assert_eq!(forked.len(), 1, "a fresh history: {forked:?}");
    assert!(forked[0].contains("Summarize this repository in one line."));
    let events = events(&r.stdout);
    assert_eq!(of_type(&events, "SubagentSpawned").len(), 1);
    let result = of_type(&events, "result");
    assert_eq!(result[0]["result"], "The summary.");

    let r = run(&ws, &["-p", "--continue", "is that right?"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let history = server.last_chat_request().unwrap();
    let said: Vec<String> = texts(&history, "assistant");
    assert_eq!(said, ["First answer.", "The summary."]);
    assert_eq!(texts(&history, "user")[1], "/summarize");
}

#[test]
fn an_agents_model_hint_routes_its_runs_to_that_model() {
    let main = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Reply::tool(
                "delegate_to_agent",
                json!({"target_agent_id": "reviewer", "task": "review"}),
            )
            .into(),
            Step::from(Reply::text("Reviewed.")),
        ],
    );
    let big = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![Step::from(Reply::text("Looks good."))],
    );
    let ws = Workspace::new();
    support::write_config_with(
        ws.home(),
        Protocol::OpenAi,
        &main.url(),
        &format!(
            "\n[[models]]\nid = \"big\"\nprovider = \"openai\"\nmodel = \"big-model\"\nurl = \"{}\"\n",
            big.url()
        ),
    );
    ws.write(
        "agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews with the big model\nmodel: big\ntools: [Read, Grep]\n---\nYou review.\n",
    );
    ws.write(
        "agents/boss.md",
        "---\nname: boss\ndescription: Delegates\npolicy: [Delegate, Finalize]\n---\nYou delegate.\n",
    );
    let r = run(&ws, &["-p", "get a review", "--agent", "boss"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "Reviewed.");
    assert_eq!(main.chat_requests().len(), 2);
    let to_big = big.chat_requests();
    assert_eq!(to_big.len(), 1);
    assert_eq!(to_big[0]["model"], "big-model");

    // A hint nothing matches falls back to the session's model, with a warning.
    let (server, ws) = setup(vec![Reply::text("ok").into()]);
    ws.write(
        "agents/far.md",
        "---\nname: far\ndescription: Wants the cloud\nmodel: cloud\n---\nYou are far.\n",
    );
    let r = run(&ws, &["-p", "hi", "--agent", "far"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("model hint `cloud`"), "{}", r.stderr);
    assert_eq!(server.chat_requests().len(), 1);
}

#[test]
fn a_skill_runs_with_the_agent_it_names() {
    let (server, ws) = setup(vec![Reply::text("Fixed.").into()]);
    write_skill(
        &ws,
        "quickfix",
        "description: Fix a small bug\nagent: coder",
        "Fix: $ARGUMENTS",
    );
    let r = run(&ws, &["-p", "/quickfix the typo"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let request = server.last_chat_request().unwrap();
    assert!(texts(&request, "system")[0].starts_with("You are coder"));
    assert!(!tool_names(&request).contains(&"delegate_to_agent".to_string()));
}
