//! The interactive shell through a real pseudo-terminal, against the scripted model server:
//! completion, rendered streaming, approvals, Ctrl+C and type-ahead, skills (also added and
//! removed while the shell runs), agents and delegated runs.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::pty::{PROMPT, Repl, ShareLink, last_message, last_tool_result, workspace};
use support::{Reply, Step};

#[test]
fn tab_completes_commands_and_agents() {
    let (ws, _server) = workspace(vec![]);
    let mut repl = Repl::start(&ws, &[]);
    repl.send("/he\t");
    repl.expect("/help");
    repl.send("\r");
    repl.expect("Commands:");
    repl.expect(PROMPT);
    repl.send("@co\t");
    repl.expect("@coder");
    repl.send("\x15"); // Ctrl+U clears the line
    repl.line("/quit");
}

#[test]
fn a_streamed_answer_is_rendered() {
    let answer =
        "Here is **bold** text.\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\nDone.\n";
    let (ws, _server) = workspace(vec![Step::from(Reply::text(answer).delta_bytes(3))]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("show me");
    let out = repl.expect("Done.");
    let tail = out.rsplit("show me").next().unwrap_or_default();
    assert!(!tail.contains("**"), "raw emphasis markers: {tail:?}");
    assert!(!tail.contains("```"), "raw fences: {tail:?}");
    assert!(tail.contains("bold"), "{tail:?}");
    assert!(tail.contains("println!"), "{tail:?}");
    // Bold and highlighted code come out as terminal escape sequences.
    assert!(tail.contains("\x1b[1m"), "no bold: {tail:?}");
    assert!(tail.contains("\x1b[38;"), "no highlighted code: {tail:?}");
    repl.line("/quit");
}

fn write(path: &str, content: &str) -> Reply {
    Reply::tool("Write", json!({"path": path, "content": content}))
}

#[test]
fn approvals_yes_always_no_and_reason() {
    let (ws, server) = workspace(vec![
        Step::from(write("a.txt", "A")),
        Reply::text("wrote a").into(),
        write("b.txt", "B").into(),
        write("b.txt", "BB").into(),
        Reply::text("wrote b twice").into(),
        write("c.txt", "C").into(),
        Reply::text("ok, not c").into(),
        write("d.txt", "D").into(),
        Reply::text("ok, not d").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);

    repl.line("write a");
    repl.expect("Allow Write");
    repl.expect("type a reason");
    repl.line("y");
    repl.expect("wrote a");
    assert_eq!(ws.read("a.txt"), "A");

    repl.line("write b twice");
    repl.expect("Allow Write");
    repl.expect("type a reason");
    repl.line("a");
    repl.expect("wrote b twice");
    assert_eq!(
        ws.read("b.txt"),
        "BB",
        "the second write ran without asking"
    );

    repl.line("write c");
    repl.expect("Allow Write");
    repl.expect("type a reason");
    repl.line("n");
    repl.expect("ok, not c");
    assert!(!ws.root().join("c.txt").exists());

    repl.line("write d");
    repl.expect("Allow Write");
    repl.expect("type a reason");
    repl.line("use e.txt instead");
    repl.expect("ok, not d");
    assert!(!ws.root().join("d.txt").exists());
    assert!(last_tool_result(&server).contains("use e.txt instead"));
    repl.line("/quit");
}

/// A command whose tail is pushed out of sight by blanks: the approval shows all of it, the
/// blanks counted, and wraps a long call instead of cutting it.
#[test]
fn an_approval_shows_the_hidden_tail_of_a_long_command() {
    let long_word = "x".repeat(150);
    let command = format!("echo safe{}&& touch {long_word}-tail", " ".repeat(300));
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool("Bash", json!({ "command": command }))),
        Reply::text("not run").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("run it");
    repl.expect("Allow Bash");
    repl.expect("echo safe␠×300&& touch xxx");
    repl.expect("-tail");
    repl.expect("type a reason");
    repl.line("n");
    repl.expect("not run");
    repl.line("/quit");
}

/// Escape sequences in the model's answer (clipboard write, screen clear, an 8-bit CSI, a
/// carriage return that would overwrite the line) never reach the terminal.
#[test]
fn control_sequences_in_an_answer_do_not_reach_the_terminal() {
    let answer =
        "Start \x1b]52;c;ZWNobyBwd25lZA==\x07clip \x1b[2Jclear \u{9b}31mred safe\rEVIL end.\n";
    let (ws, _server) = workspace(vec![Step::from(Reply::text(answer).delta_bytes(4))]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("hello");
    let out = repl.expect("end.");
    let tail = out.rsplit("hello").next().unwrap_or_default();
    assert!(tail.contains("safeEVIL"), "{tail:?}");
    for bad in ["\x1b]", "\x1b[2J", "\u{9b}", "\x07", "safe\r"] {
        assert!(
            !tail.contains(bad),
            "{bad:?} reached the terminal: {tail:?}"
        );
    }
    repl.line("/quit");
}

#[test]
fn ctrl_c_cancels_a_slow_stream_and_type_ahead_is_sent_next() {
    let slow = Reply::text("tick tick\n\n".repeat(400))
        .delta_bytes(5)
        .chunk_delay(Duration::from_millis(20));
    let (ws, server) = workspace(vec![Step::from(slow), Reply::text("second answer").into()]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("go slowly");
    repl.expect("tick tick");
    // Typed while the answer streams: queued, sent after this turn.
    repl.line("the next question");
    repl.expect("queued");
    let started = Instant::now();
    repl.send("\x03"); // Ctrl+C on the (empty) line: cancel the turn
    repl.expect("cancelled");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "cancel took {:?}",
        started.elapsed()
    );
    repl.expect("second answer");
    let last = server.last_chat_request().unwrap();
    assert!(last.to_string().contains("the next question"));
    repl.line("/quit");
}

#[test]
fn a_spinner_shows_elapsed_time_until_the_first_token() {
    let slow_start = Reply::text("late answer\n").chunk_delay(Duration::from_millis(1500));
    let (ws, _server) = workspace(vec![Step::from(slow_start)]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("take your time");
    let out = repl.expect("late answer");
    assert!(
        out.contains("Thinking… 1s · esc to interrupt"),
        "no spinner: {out:?}"
    );
    repl.line("/quit");
}

const HELLO_SKILL: &str = "---
name: hello
description: Greet someone by name.
argument-hint: <who>
---
Say a warm hello to $ARGUMENTS from the hello skill.
";

#[test]
fn a_project_skill_completes_and_its_body_is_sent_with_the_arguments() {
    let (ws, server) = workspace(vec![Step::from(Reply::text("greeted"))]);
    ws.write(".linggen/skills/hello/SKILL.md", HELLO_SKILL);
    let mut repl = Repl::start(&ws, &[]);
    // `/hel` could be /help or /hello: the second Tab lists both, with the skill's line.
    repl.send("/hel\t\t");
    repl.expect("Greet someone by name.");
    repl.send("\x15");
    repl.send("/hell\t");
    repl.expect("/hello");
    repl.line("world");
    repl.expect("greeted");
    let user = last_message(&server, "user");
    assert!(
        user.contains("Say a warm hello to world from the hello skill."),
        "{user}"
    );
    repl.line("/quit");
}

#[test]
fn a_skill_added_while_the_shell_runs_completes_and_a_removed_one_is_gone() {
    let (ws, _server) = workspace(vec![]);
    let mut repl = Repl::start(&ws, &[]);
    // A command's answer means start-up, watching the skill folders included, is over.
    repl.line("/skills");
    repl.expect("/NAME ARGS runs a skill");
    repl.expect(PROMPT);
    ws.write(
        ".linggen/skills/late/SKILL.md",
        "---\nname: late\ndescription: Arrived while the shell ran.\n---\nBe late.\n",
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        // Until the reload, `/la` completes to something else (or nothing).
        repl.send("/la\t");
        if repl.shows_within("/late", Duration::from_millis(500)) {
            break;
        }
        assert!(Instant::now() < deadline, "/late never completed");
        repl.send("\x15");
    }
    repl.send("\x15");

    std::fs::remove_dir_all(ws.root().join(".linggen/skills/late")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        repl.line("/skills");
        let listed = repl.expect("/NAME ARGS runs a skill");
        let listing = listed.rsplit("Skills (").next().unwrap_or_default();
        assert!(listing.contains("/review"), "{listing}");
        if !listing.contains("late") {
            break;
        }
        assert!(Instant::now() < deadline, "/late still listed: {listing}");
        repl.expect(PROMPT);
    }
    repl.line("/quit");
}

#[test]
fn a_delegated_run_is_shown_indented_under_its_parent() {
    let (ws, server) = workspace(vec![
        Step::from(Reply::tool(
            "delegate_to_agent",
            json!({"target_agent_id": "coder", "task": "count the lines of notes.txt\nthen report"}),
        )),
        Reply::tool("Read", json!({"path": "notes.txt"})).into(),
        Reply::text("notes.txt has 2 lines\nCHILD DETAIL LINE\n").into(),
        Reply::text("Coder says notes.txt has 2 lines.\n").into(),
    ]);
    ws.write("notes.txt", "a\nb\n");
    // Plain output (TERM=dumb), so indentation is not interleaved with escape codes.
    let mut repl = Repl::start_with_env(&ws, &[], &[("TERM", "dumb")]);
    repl.line("how long is notes.txt?");
    repl.expect("⏺ coder ← count the lines of notes.txt…");
    let child = repl.expect("  ⎿ coder completed: notes.txt has 2 lines");
    assert!(child.contains("  ⏺ Read notes.txt"), "{child:?}");
    let answer = repl.expect("Coder says notes.txt has 2 lines.");
    assert!(!child.contains("CHILD DETAIL LINE"), "{child:?}");
    assert!(!answer.contains("CHILD DETAIL LINE"), "{answer:?}");
    repl.expect(PROMPT);
    // The child worked as coder, from its own prompt and the task.
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 4);
    let coder_system = requests[1]["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(coder_system.contains("You are coder"), "{coder_system}");
    repl.line("/runs");
    // The store writer may not have recorded the turn's end yet: its status can lag.
    // Each run names the model that served it.
    let runs = repl.expect("completed coder [test] count the lines of notes.txt…");
    assert!(
        runs.contains(" ling [test] how long is notes.txt?"),
        "{runs}"
    );
    repl.line("/quit");
}

#[test]
fn agent_and_mode_switch_the_prompt_and_the_next_turn() {
    let (ws, server) = workspace(vec![Step::from(Reply::text("coder here"))]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("/agent");
    let agents = repl.expect("/agent NAME switches");
    assert!(agents.contains("* ling"), "{agents}");
    assert!(agents.contains("  coder"), "{agents}");
    repl.send("/agent c\t");
    repl.expect("/agent coder");
    repl.send("\r");
    repl.expect("coder › ");
    repl.line("/mode talk");
    repl.expect("coder [talk] › ");
    repl.line("/mode loud");
    repl.expect("expected chat or auto or talk");
    // Typed before the editor reads again, Enter would arrive as a newline: wait for it.
    repl.expect("coder [talk] › ");
    repl.line("who are you?");
    repl.expect("coder here");
    // The turn's closing line: the shell is idle again.
    repl.expect("context ");
    let system = last_message(&server, "system");
    assert!(system.contains("You are coder"), "{system}");
    let tools = server.last_chat_request().unwrap()["tools"].clone();
    assert!(
        tools.as_array().is_none_or(|t| t.is_empty()),
        "chat mode offers no tools: {tools}"
    );
    repl.line("/settings");
    let settings = repl.expect("max_delegation_depth");
    assert!(settings.contains("coder"), "{settings}");
    repl.line("/quit");
}

#[test]
fn share_lets_the_web_send_messages_and_answer_approvals_until_stopped() {
    use support::web_client::request;
    let (ws, server) = workspace(vec![
        Step::from(Reply::text("Hello, browser.")),
        write("web.txt", "from the web").into(),
        Reply::text("wrote web.txt").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("/share --read-only");
    repl.expect("sharing this session: ");
    let full = ShareLink::find(&repl.expect("read-only viewer: "));
    let viewer_link = repl.expect_share_link();
    let addr = full.addr;
    assert_eq!(addr, viewer_link.addr);
    assert!(addr.ip().is_loopback(), "{addr}");
    assert_ne!(full.ticket, viewer_link.ticket);
    // The links hold one-time tickets; scripts use the tokens, shown on request.
    repl.line("/share token");
    let token = last_hex(&repl.expect("read-only token: "));
    let viewer = last_hex(&repl.expect("keep them secret"));
    assert_ne!(token, viewer);
    assert_ne!(token, full.ticket);

    let origin = format!("http://{addr}");
    let bearer = format!("Bearer {token}");
    let post = |path: &str, auth: &str, body: serde_json::Value| {
        request(
            addr,
            "POST",
            path,
            &[("Authorization", auth), ("Origin", &origin)],
            body.to_string().as_bytes(),
        )
    };
    // The viewer link can watch but not talk.
    let refused = post(
        "/api/messages",
        &format!("Bearer {viewer}"),
        json!({"content": "hi"}),
    );
    assert_eq!(refused.status, 403, "{}", refused.text());

    // A message from the browser runs in the terminal like a typed one.
    let sent = post(
        "/api/messages",
        &bearer,
        json!({"content": "hello from the browser"}),
    );
    assert_eq!(sent.status, 202, "{}", sent.text());
    repl.expect("[web] hello from the browser");
    repl.expect("Hello, browser.");
    assert_eq!(last_message(&server, "user"), "hello from the browser");
    repl.expect("context ");

    // An approval the terminal is asking for, answered in the browser.
    repl.line("write web.txt");
    repl.expect("Allow Write");
    // The mirror follows the session on its own task: the request may reach it a moment
    // after the terminal showed it.
    let deadline = Instant::now() + Duration::from_secs(10);
    let id = loop {
        let session = request(
            addr,
            "GET",
            "/api/session",
            &[("Authorization", &bearer)],
            b"",
        )
        .json();
        if let Some(id) = session["pending_approvals"][0]["id"].as_str() {
            break id.to_string();
        }
        assert!(Instant::now() < deadline, "{session}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let answered = post(
        &format!("/api/approvals/{id}"),
        &bearer,
        json!({"decision": "allow_once"}),
    );
    assert_eq!(answered.status, 202, "{}", answered.text());
    repl.expect("allowed once in web");
    repl.expect("wrote web.txt");
    assert_eq!(ws.read("web.txt"), "from the web");

    // Stopped: the link is dead.
    repl.line("/share stop");
    repl.expect("stopped sharing");
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "still listening"
    );
    repl.line("/quit");
}

/// Switching the model and the permission mode keeps the session: the same id, the
/// conversation in the next request, and an open `/share` page that keeps working and shows
/// the new settings.
#[test]
fn settings_switched_in_the_shell_keep_the_session_and_its_share() {
    use support::web_client::request;
    use support::{Protocol, ScriptedServer};
    let second = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(write("b.txt", "B")),
            Reply::text("second wrote b").into(),
            write("c.txt", "C").into(),
            Reply::text("second wrote c").into(),
        ],
    );
    let (ws, first) = workspace(vec![Step::from(Reply::text("first model here"))]);
    support::write_config_with(
        ws.home(),
        Protocol::OpenAi,
        &first.url(),
        &format!(
            "[[models]]\nid = \"second\"\nprovider = \"openai\"\nmodel = \"other\"\nurl = \"{}\"\n",
            second.url()
        ),
    );
    let mut repl = Repl::start(&ws, &[]);
    repl.line("/share");
    let addr = repl.expect_share_link().addr;
    repl.line("/share token");
    let token = last_hex(&repl.expect("read-only token: "));
    repl.expect("keep them secret");
    let bearer = format!("Bearer {token}");
    let session = || {
        let response = request(
            addr,
            "GET",
            "/api/session",
            &[("Authorization", &bearer)],
            b"",
        );
        assert_eq!(response.status, 200, "{}", response.text());
        response.json()
    };
    let before = session();
    let id = before["session_id"].as_str().unwrap().to_string();
    assert_eq!(before["state"]["permission_mode"], "default");

    repl.line("who are you?");
    repl.expect("first model here");
    repl.expect("context ");
    // An id that is not configured is refused with the ones that are; nothing changes.
    repl.line("/model nope");
    let refused = repl.expect("`auto` lets the policy choose");
    assert!(
        refused.contains("cannot switch to model `nope`"),
        "{refused}"
    );
    assert!(refused.contains("second"), "{refused}");
    repl.expect(PROMPT);
    repl.line("/model second");
    repl.expect("model second");
    repl.expect(PROMPT);
    repl.line("/permissions accept-edits");
    repl.expect("permission mode accept-edits");
    repl.expect("ling [accept-edits] › ");

    let after = session();
    assert_eq!(after["session_id"], id.as_str(), "a new session: {after}");
    let model = after["state"]["model"].as_str().unwrap();
    assert!(model.starts_with("second "), "{after}");
    assert_eq!(after["state"]["permission_mode"], "accept-edits");

    // accept-edits: the write runs without asking, on the second model, which is sent the
    // conversation so far.
    repl.line("write b");
    repl.expect("second wrote b");
    repl.expect("context ");
    assert_eq!(ws.read("b.txt"), "B");
    let asked = second.chat_requests()[0].to_string();
    assert!(asked.contains("who are you?"), "history lost: {asked}");
    assert!(asked.contains("first model here"), "history lost: {asked}");
    assert_eq!(first.chat_requests().len(), 1);

    // Back to asking; the page, still the same one, answers the approval.
    repl.line("/permissions default");
    repl.expect("permission mode default");
    repl.expect(PROMPT);
    repl.line("write c");
    repl.expect("Allow Write");
    let pending = session();
    assert_eq!(pending["session_id"], id.as_str());
    let approval = pending["pending_approvals"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let origin = format!("http://{addr}");
    let answered = request(
        addr,
        "POST",
        &format!("/api/approvals/{approval}"),
        &[("Authorization", &bearer), ("Origin", &origin)],
        json!({"decision": "allow_once"}).to_string().as_bytes(),
    );
    assert_eq!(answered.status, 202, "{}", answered.text());
    repl.expect("second wrote c");
    assert_eq!(ws.read("c.txt"), "C");
    repl.expect("context ");

    // A new session (`/clear` does restart) keeps the chosen model.
    repl.line("/clear");
    repl.expect("new session");
    repl.expect(PROMPT);
    repl.line("/settings");
    let settings = repl.expect("show_thinking");
    assert!(
        settings.contains("second (other") && settings.contains("(this session (/model))"),
        "{settings}"
    );
    repl.line("/quit");
}

/// The last 48-hex-digit word in `printed` (a share token).
fn last_hex(printed: &str) -> String {
    printed
        .split(|c: char| !c.is_ascii_hexdigit())
        .rfind(|w| w.len() == 48)
        .unwrap_or_else(|| panic!("no token in {printed:?}"))
        .to_string()
}

/// Started in `bypass`, `/permissions default` must bring the questions back (not only the
/// prompt's label), and `/permissions plan` must then refuse writes.
#[test]
fn a_permission_mode_chosen_in_the_shell_takes_effect() {
    let (ws, _server) = workspace(vec![
        Step::from(write("a.txt", "A")),
        Reply::text("wrote a").into(),
        write("b.txt", "B").into(),
        Reply::text("not b").into(),
        write("c.txt", "C").into(),
        Reply::text("not c").into(),
    ]);
    let mut repl = Repl::start_with_prompt(
        &ws,
        &["--permission-mode", "bypass"],
        &[],
        "ling [bypass] › ",
    );
    repl.line("write a");
    repl.expect("wrote a");
    // The turn's closing line: settings change between turns.
    repl.expect("context ");
    assert_eq!(ws.read("a.txt"), "A", "bypass writes without asking");

    repl.line("/permissions default");
    repl.expect("permission mode default");
    // Typed before the editor reads again, Enter would arrive as a newline: wait for it.
    repl.expect("ling › ");
    repl.line("write b");
    repl.expect("Allow Write");
    repl.expect("type a reason");
    repl.line("n");
    repl.expect("not b");
    repl.expect("context ");
    assert!(!ws.root().join("b.txt").exists());

    repl.line("/permissions plan");
    repl.expect("permission mode plan");
    repl.expect("ling [plan] › ");
    repl.line("write c");
    repl.expect("not c");
    assert!(!ws.root().join("c.txt").exists(), "plan mode wrote a file");
    repl.line("/quit");
}

/// A command the model wants to run outside the sandbox asks every time, offers only
/// "once", and an "always" answer does not stick.
#[test]
fn leaving_the_sandbox_asks_every_time() {
    let unsandboxed = || {
        Reply::tool(
            "Bash",
            json!({"cmd": "touch out.txt", "dangerouslyDisableSandbox": true}),
        )
    };
    let (ws, _server) = workspace(vec![
        Step::from(unsandboxed()),
        Reply::text("first done").into(),
        unsandboxed().into(),
        Reply::text("second done").into(),
    ]);
    let mut repl = Repl::start_with_prompt(
        &ws,
        &["--permission-mode", "bypass"],
        &[],
        "ling [bypass] › ",
    );
    repl.line("touch it");
    let card = repl.expect("Esc denies");
    assert!(card.contains("outside the sandbox"), "{card}");
    assert!(
        card.contains("1. Yes, once (asked again next time)"),
        "{card}"
    );
    assert!(card.contains("2. No") && !card.contains("always"), "{card}");
    assert!(card.contains("1-2 · y n · Esc denies"), "{card}");
    repl.line("a");
    repl.expect("first done");
    repl.expect("context ");
    assert!(ws.root().join("out.txt").exists());
    repl.line("again");
    repl.expect("outside the sandbox");
    repl.expect("Esc denies");
    repl.line("n");
    repl.expect("second done");
    repl.line("/quit");
}

/// A project rule removed with `/permissions remove` stops applying at once, also when it
/// was approved with `p` in this very session.
#[test]
fn a_removed_project_rule_stops_applying_at_once() {
    let touch = |f: &str| Reply::tool("Bash", json!({ "cmd": format!("touch {f}") }));
    let (ws, _server) = workspace(vec![
        Step::from(touch("x")),
        Reply::text("made x").into(),
        touch("y").into(),
        Reply::text("made y").into(),
        touch("z").into(),
        Reply::text("not z").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("make x");
    repl.expect("type a reason");
    repl.line("p");
    repl.expect("made x");
    repl.expect("context ");
    repl.line("make y");
    repl.expect("made y");
    repl.expect("context ");
    assert!(
        ws.root().join("y").exists(),
        "the project rule did not apply"
    );
    repl.line("/permissions remove 1");
    repl.expect("removed project rule Bash(touch*)");
    repl.expect(PROMPT);
    repl.line("make z");
    repl.expect("type a reason");
    repl.line("n");
    repl.expect("not z");
    assert!(!ws.root().join("z").exists());
    repl.line("/quit");
}

/// `/model` sends the next request to the other model, and `/settings max_iters` limits
/// the next turn; the conversation carries over.
#[test]
fn model_and_max_iters_chosen_in_the_shell_take_effect() {
    use support::{Protocol, ScriptedServer};
    let second = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Reply::text("second model here")),
            Step::repeat(Reply::tool("get_repo_info", json!({}))),
        ],
    );
    let (ws, first) = workspace(vec![Step::from(Reply::text("first model here"))]);
    support::write_config_with(
        ws.home(),
        Protocol::OpenAi,
        &first.url(),
        &format!(
            "[[models]]\nid = \"second\"\nprovider = \"openai\"\nmodel = \"other\"\nurl = \"{}\"\n",
            second.url()
        ),
    );
    let mut repl = Repl::start(&ws, &[]);
    repl.line("who are you?");
    repl.expect("first model here");
    repl.expect("context ");
    repl.line("/model second");
    repl.expect("model second");
    repl.expect(PROMPT);
    repl.line("and now?");
    repl.expect("second model here");
    repl.expect("context ");
    let asked = second.last_chat_request().unwrap().to_string();
    assert!(asked.contains("who are you?"), "history lost: {asked}");
    assert_eq!(first.chat_requests().len(), 1);

    repl.line("/settings max_iters 2");
    repl.expect("max_iters = 2");
    repl.expect(PROMPT);
    repl.line("loop");
    repl.expect("max_iters");
    repl.expect(PROMPT);
    // One request answered "second model here", then exactly two for the limited turn.
    assert_eq!(second.chat_requests().len(), 3);
    repl.line("/settings");
    let settings = repl.expect("show_thinking");
    assert!(
        settings.contains("max_iters             2  (this session)"),
        "{settings}"
    );
    repl.line("/quit");
}

/// `/rewind` in the shell: the list names the checkpoint and its files; a hand edit since
/// makes it ask, `n` leaves the file, `y` overwrites it and the conversation is rewound.
/// `/check` runs an allowed check and hands a failure to the agent to summarise.
#[test]
fn rewind_asks_before_overwriting_a_hand_edit_and_check_summarises_failures() {
    if std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: git not installed (checkpoints need it)");
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "git is missing under CI=true"
        );
        return;
    }
    let (ws, server) = workspace(vec![
        Step::from(write("a.txt", "by the agent\n")),
        Reply::text("wrote a").into(),
        Reply::text("The diff shows a.txt differs from expected.txt.").into(),
    ]);
    ws.write("a.txt", "original\n");
    ws.write("expected.txt", "expected\n");
    let config = ws.home().join("linggen-agent.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\n[checks]\nallow = [\"diff\"]\n")).unwrap();
    let mut repl = Repl::start(&ws, &[]);
    repl.line("/permissions accept-edits");
    repl.expect("ling [accept-edits] › ");
    repl.line("write a");
    repl.expect("wrote a");
    // The turn's closing line: the agent is done with the files.
    repl.expect("context ");
    ws.write("a.txt", "my hand edit\n");
    repl.line("/rewind");
    let listed = repl.expect("/rewind ID goes back");
    let line = listed
        .lines()
        .find(|l| l.contains("write a"))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(line.contains("~a.txt"), "{line}");
    // `ID  0s ago  prompt`: the word before the age ends with the id (the prompt and
    // the terminal's escapes may come before it on the screen's line).
    let words: Vec<&str> = line.split_whitespace().collect();
    let age = words.iter().position(|w| *w == "ago").unwrap();
    let word = words[age - 2];
    let id = &word[word.len().saturating_sub(16)..];
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()), "{line}");
    repl.line(&format!("/rewind {id}"));
    repl.expect("Overwrite? [y/N]");
    repl.line("n");
    repl.expect("not rewound");
    assert_eq!(ws.read("a.txt"), "my hand edit\n");
    repl.line(&format!("/rewind {id}"));
    repl.expect("Overwrite? [y/N]");
    repl.line("y");
    repl.expect("conversation rewound");
    assert_eq!(ws.read("a.txt"), "original\n");

    repl.line("/check diff expected.txt a.txt");
    repl.expect("The diff shows a.txt differs");
    let asked = last_message(&server, "user");
    assert!(
        asked.contains("The check `diff expected.txt a.txt` failed"),
        "{asked}"
    );
    // The rewound prompt is gone from the conversation the model sees.
    let request = server.chat_requests().pop().unwrap();
    let sent = request["messages"].to_string();
    assert!(!sent.contains("write a"), "{sent}");
    assert!(sent.contains("< expected"), "{sent}");
    repl.line("/check rm -rf a.txt");
    repl.expect("is not an allowed check");
    assert_eq!(ws.read("a.txt"), "original\n");
    repl.line("/quit");
}

/// `/share --open` never puts a ticket on a command line (every user can read
/// `/proc/*/cmdline`): the opener gets a private `file://` page that leads to the link.
#[test]
fn share_open_hands_the_browser_no_ticket_on_its_command_line() {
    use std::os::unix::fs::PermissionsExt as _;
    let (ws, _server) = workspace(vec![Step::from(Reply::text("hi"))]);
    let bin = tempfile::tempdir().unwrap();
    let argv_file = bin.path().join("argv.txt");
    let opener = bin.path().join("recording-browser");
    std::fs::write(
        &opener,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$0\" \"$@\" > {}.tmp && mv {0}.tmp {0}\n",
            argv_file.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut repl = Repl::start_with_env(&ws, &[], &[("BROWSER", opener.to_str().unwrap())]);
    repl.line("/share --open");
    let printed = repl.expect_share_link();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !argv_file.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the browser was not opened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let argv = std::fs::read_to_string(&argv_file).unwrap();
    assert!(
        !argv.contains("ticket"),
        "a ticket on the opener's command line: {argv}"
    );
    let page = argv
        .lines()
        .nth(1)
        .and_then(|a| a.strip_prefix("file://"))
        .unwrap_or_else(|| panic!("not a file:// page: {argv}"));
    let mode = std::fs::metadata(page).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the page is readable by others");
    let html = std::fs::read_to_string(page).unwrap();
    // A link of its own (the printed one stays usable), to the same server.
    assert!(
        html.contains(&format!("http://{}/?ticket=", printed.addr)),
        "{html}"
    );
    assert!(!html.contains(&printed.ticket), "{html}");
}

/// The menu answers on one key, without Enter: a lone `a` allows for the session (and the
/// line typed next is a message, not a reason), `3` for the project, `n` denies; text that
/// starts otherwise is a reason, sent with Enter.
#[test]
fn approvals_are_answered_by_one_key() {
    let (ws, server) = workspace(vec![
        Step::from(write("a.txt", "A")),
        write("a.txt", "AA").into(),
        Reply::text("wrote a twice").into(),
        Reply::text("heard you").into(),
        write("p.txt", "P").into(),
        Reply::text("wrote p").into(),
        write("n.txt", "N").into(),
        Reply::text("skipped n").into(),
        write("r.txt", "R").into(),
        Reply::text("skipped r").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);

    repl.line("write a twice");
    repl.expect("Esc denies");
    repl.send("a");
    repl.expect("allowed for this session");
    repl.expect("wrote a twice");
    assert_eq!(
        ws.read("a.txt"),
        "AA",
        "the second write ran without asking"
    );
    repl.expect("context ");
    repl.line("thanks");
    repl.expect("heard you");
    assert!(last_message(&server, "user").contains("thanks"));

    repl.line("write p");
    repl.expect("Esc denies");
    repl.send("3");
    repl.expect("allowed for this project");
    repl.expect("wrote p");
    assert_eq!(ws.read("p.txt"), "P");
    repl.expect("context ");

    repl.line("write n");
    repl.expect("Esc denies");
    repl.send("n");
    repl.expect("denied");
    repl.expect("skipped n");
    assert!(!ws.root().join("n.txt").exists());
    repl.expect("context ");

    repl.line("write r");
    repl.expect("Esc denies");
    repl.send("because x");
    repl.expect("because x");
    repl.send("\r");
    let shown = repl.expect("skipped r");
    assert!(shown.contains("denied"), "{shown:?}");
    assert!(!ws.root().join("r.txt").exists());
    let result = last_tool_result(&server);
    assert!(result.contains("because x"), "{result} {shown:?}");
    repl.line("/quit");
}

/// A long write's card counts every line it hides: 300 lines are 303 lines of diff, 40
/// shown.
#[test]
fn a_long_write_counts_the_lines_it_hides() {
    let content: String = (0..300).map(|i| format!("line {i}\n")).collect();
    let (ws, _server) = workspace(vec![
        Step::from(write("long.txt", &content)),
        Reply::text("not written").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("write it");
    let card = repl.expect("Esc denies");
    assert!(card.contains("… 263 more lines"), "{card}");
    repl.send("n");
    repl.expect("not written");
    repl.line("/quit");
}

/// "Always" answers are listed with where they came from, and one can be taken back: the
/// same call then asks again.
#[test]
fn permissions_lists_this_sessions_always_answers_and_revokes_one() {
    let touch = || Reply::tool("Bash", json!({ "command": "touch a.txt" }));
    let (ws, _server) = workspace(vec![
        Step::from(touch()),
        Reply::text("first done").into(),
        touch().into(),
        Reply::text("second done").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("touch it");
    repl.expect("Allow Bash");
    repl.line("a");
    repl.expect("first done");
    repl.line("/permissions");
    repl.expect("[s1] session allow Bash(");
    repl.expect("answered in terminal for `Bash: touch a.txt`");
    repl.line("/permissions remove s1");
    repl.expect("this session no longer allows Bash(");
    repl.line("touch it again");
    repl.expect("Allow Bash");
    repl.line("y");
    repl.expect("second done");
    repl.line("/quit");
}

/// Under `NO_COLOR` inline code has no colour to set it apart from prose, so it keeps its
/// backticks; the rest of the answer is still rendered (the emphasis marks are gone).
#[test]
fn no_color_keeps_inline_code_in_backticks() {
    let (ws, _server) = workspace(vec![Step::from(Reply::text(
        "Run `cargo test` and **then** rest.\n",
    ))]);
    let mut repl = Repl::start_with_env(&ws, &[], &[("NO_COLOR", "1")]);
    repl.line("how do I test?");
    let answer = repl.expect("rest.");
    assert!(answer.contains("Run `cargo test` and "), "{answer:?}");
    assert!(!answer.contains("**then**"), "{answer:?}");
    repl.expect(PROMPT);
    repl.line("/quit");
}

/// `TERM=dumb` cannot redraw: a turn's lines come without the prompt between them, and the
/// prompt is written once when the turn ends.
#[test]
fn a_dumb_terminal_gets_the_prompt_once_per_turn() {
    let (ws, _server) = workspace(vec![Step::from(Reply::text(
        "one\n\ntwo\n\nthree\n\nfour\n\nLAST LINE\n",
    ))]);
    let mut repl = Repl::start_with_env(&ws, &[], &[("TERM", "dumb")]);
    repl.line("count");
    let turn = repl.expect("LAST LINE");
    // Settle: whatever the turn still prints (the stats line) and the prompt after it.
    std::thread::sleep(Duration::from_millis(1500));
    repl.line("/quit");
    let rest = repl.expect("resume this session");
    let shown = turn + &rest;
    // The editor's own prompt for type-ahead comes before the answer; none between its
    // lines; one after the turn.
    let answer = shown.split_once("one").map_or("", |(_, after)| after);
    let (lines, after) = answer.split_once("LAST LINE").unwrap_or_default();
    assert!(!lines.contains(PROMPT), "{shown:?}");
    assert_eq!(after.matches(PROMPT).count(), 1, "{shown:?}");
}

/// The person's own `!cmd` shows what it printed under its result line: a short output
/// whole, a long one as its first and last lines with exactly the lines between counted.
#[test]
fn a_bang_command_shows_its_output_folded_with_an_exact_count() {
    let (ws, _server) = workspace(vec![]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("!printf 'a\\nb\\nc\\n'");
    repl.expect("exit 0, 3 lines");
    repl.expect("    a");
    repl.expect("    b");
    repl.expect("    c");
    repl.expect(PROMPT);
    repl.line("!seq 101 200");
    repl.expect("exit 0, 100 lines");
    repl.expect("    101");
    repl.expect("    110");
    repl.expect("… 85 more lines (all of it: linggen runs show ");
    let run_id = repl.expect(" --full)").replace(" --full)", "");
    repl.expect("    196");
    repl.expect("    200");
    repl.line("/quit");
    // Once the shell has stored everything and exited, the command it names prints every
    // line, the hidden ones too.
    let _ = repl.session.get_process_mut().wait();
    let full = support::run(&ws, &["runs", "show", run_id.trim(), "--full"]);
    assert_eq!(full.code, Some(0), "{}", full.stderr);
    for n in 101..=200 {
        assert!(
            full.stdout.contains(&format!("      {n}\n")),
            "{n} missing: {}",
            full.stdout
        );
    }
}
