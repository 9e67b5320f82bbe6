//! The shell while it works, through a real pseudo-terminal: what a person sees as an answer
//! streams (a paragraph shows before it ends, a busy line until the turn ends), and that
//! nothing typed is lost (a burst of lines, type-ahead during a turn, Esc).

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use support::pty::{PROMPT, Repl, workspace};
use support::{Reply, Step, texts};

/// Two lines arriving in one read (a fast typist, a laggy link, a paste without bracketed
/// paste) are both sent: the second is not dropped with the editor's read buffer.
#[test]
fn a_burst_of_two_lines_sends_both() {
    let (ws, server) = workspace(vec![
        Step::from(Reply::text("answer one")),
        Reply::text("answer two").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    repl.send("echo A\recho B\r");
    repl.expect("answer one");
    repl.expect("answer two");
    let users = texts(&server.last_chat_request().unwrap(), "user");
    assert_eq!(users, ["echo A", "echo B"]);
    repl.line("/quit");
}

/// A long paragraph without a newline shows while it streams, not only when it ends.
#[test]
fn a_long_paragraph_shows_before_it_ends() {
    let words: Vec<String> = (0..60).map(|i| format!("word{i:02}")).collect();
    let paragraph = words.join(" ");
    let reply = Reply::text(paragraph.clone())
        .delta_bytes(8)
        .chunk_delay(Duration::from_millis(60));
    let (ws, _server) = workspace(vec![Step::from(reply)]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("talk");
    // word05 is on the first row; the answer takes about 3 s to stream, so when the first
    // row is on screen the last word is not (printed only at the end, it would be too).
    repl.expect("word05");
    assert!(
        !repl.shows_within("word59", Duration::from_millis(300)),
        "the paragraph only showed once it had ended"
    );
    repl.expect("word59");
    repl.expect(PROMPT);
    repl.line("/quit");
}

/// While a turn runs, a busy line says so and how to stop it, even while a command runs
/// with nothing streaming.
#[test]
fn a_busy_line_shows_until_the_turn_ends() {
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool(
            "Bash",
            serde_json::json!({"command": "sleep 2"}),
        )),
        Reply::text("slept").into(),
    ]);
    let mut repl = Repl::start_with_prompt(
        &ws,
        &["--permission-mode", "bypass"],
        &[],
        "ling [bypass] › ",
    );
    repl.line("nap");
    repl.expect("esc to interrupt");
    repl.expect("slept");
    repl.line("/quit");
}

/// A slow answer: about 3 s in small pieces.
fn slow(text: &str) -> Reply {
    Reply::text(text)
        .delta_bytes(4)
        .chunk_delay(Duration::from_millis(100))
}

/// Esc stops the running turn and leaves what the person was typing on the line; a Ctrl+C
/// after it is still a Ctrl+C.
#[test]
fn esc_interrupts_the_turn_and_keeps_the_line_being_typed() {
    let (ws, server) = workspace(vec![
        Step::from(slow("a long answer that keeps going and going for a while")),
        Reply::text("got the second").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("go");
    repl.expect("esc to interrupt");
    repl.send("half typed");
    repl.send("\x1b");
    repl.expect("cancelled");
    repl.send("\r");
    repl.expect("got the second");
    let users = texts(&server.last_chat_request().unwrap(), "user");
    assert_eq!(users.last().map(String::as_str), Some("half typed"));
    repl.expect(PROMPT);
    repl.send("\x1b");
    // A person's next key comes later than an escape sequence's bytes would.
    std::thread::sleep(Duration::from_millis(200));
    repl.send("\x03");
    repl.expect("press Ctrl+C again");
    repl.line("/quit");
}

/// A message typed during a turn waits in the queue (shown below the answer, not in the
/// middle of it) and shows in the transcript when its own turn starts; a command typed
/// during a turn runs when the turn ends.
#[test]
fn what_is_typed_during_a_turn_waits_and_then_runs() {
    let (ws, server) = workspace(vec![
        Step::from(slow("first answer streaming slowly to the end")),
        Reply::text("second answer").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("one");
    repl.expect("esc to interrupt");
    repl.line("two please");
    repl.expect("⏳ queued: two please");
    repl.line("/settings");
    repl.expect("/settings");
    repl.expect("› two please");
    repl.expect("second answer");
    // /settings ran once the turns were over.
    repl.expect("› /settings");
    repl.expect("permission_mode");
    let users = texts(&server.last_chat_request().unwrap(), "user");
    assert_eq!(users, ["one", "two please"]);
    repl.line("/quit");
}

/// Shift+Tab moves to the next permission mode, and the next turn follows it: a write in
/// accept-edits runs without asking.
#[test]
fn shift_tab_cycles_the_permission_mode_and_it_takes_effect() {
    let (ws, _server) = workspace(vec![Step::from(write_a()), Reply::text("wrote it").into()]);
    let mut repl = Repl::start(&ws, &[]);
    repl.send("\x1b[Z");
    repl.expect("permission mode accept-edits");
    repl.line("write a");
    repl.expect("wrote it");
    assert_eq!(ws.read("a.txt"), "A");
    repl.expect("ling [accept-edits] › ");
    repl.send("\x1b[Z");
    repl.expect("permission mode plan");
    repl.line("/quit");
}

/// A setting changed while a line is being typed (Shift+Tab here; the web page's chips
/// alike) redraws the prompt at once, with the line and its cursor as they were.
#[test]
fn the_prompt_follows_a_setting_while_a_line_is_typed() {
    let (ws, server) = workspace(vec![Step::from(Reply::text("done"))]);
    let mut repl = Repl::start(&ws, &[]);
    // The banner first: printed after the line was typed, its reprint drew the prompt
    // without the footer under it, so the rows erased below differ (CI saw that once:
    // `1A` instead of `2A`, both right for what was on screen).
    let before = repl.before_prompt.clone();
    repl.expect_unless_in(&before, "/help for commands");
    // And the footer: drawn once the session has said its settings, which may come after
    // the first keys (CI saw `1A` again with the banner waited for).
    repl.expect_unless_in(&before, "(shift+tab) · test");
    repl.send("hello wrld");
    repl.expect("hello wrld");
    // The cursor goes back before `rld`, then the mode changes under it.
    repl.send("\x1b[D\x1b[D\x1b[D");
    repl.send("\x1b[Z");
    // The notice and the erase may come in either order (the notice is printed between
    // the interrupted read and the next one, or above the old prompt).
    let notice = repl.expect("permission mode accept-edits");
    let redrawn = notice + &repl.expect("ling [accept-edits] › hello wrld");
    // The old prompt's row and the footer under it were erased, not left above the new one.
    assert!(redrawn.contains("\x1b[2A\r\x1b[J"), "{redrawn:?}");
    repl.line("o");
    repl.expect("done");
    let users = texts(&server.last_chat_request().unwrap(), "user");
    assert_eq!(users, ["hello world"]);
    repl.line("/quit");
}

/// `TERM=dumb` (Emacs' shell, some IDE consoles) gets the shell in plain text: it starts,
/// answers, and writes no escape codes.
#[test]
fn a_dumb_terminal_gets_a_plain_shell() {
    let (ws, _server) = workspace(vec![Step::from(Reply::text("plain **answer**"))]);
    let mut repl = Repl::start_with_env(&ws, &[], &[("TERM", "dumb")]);
    repl.line("hello");
    let out = repl.expect("plain **answer**");
    assert!(!out.contains('\x1b'), "{out:?}");
    repl.line("/quit");
}

/// The banner names the model; leaving says how to come back; coming back with `-c` shows
/// the conversation so far, tool calls folded.
#[test]
fn a_resumed_session_shows_where_it_left_off() {
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool("get_repo_info", serde_json::json!({}))),
        Reply::text("the **first** answer").into(),
        Reply::text("after resuming").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    let before = repl.before_prompt.clone();
    repl.expect_unless_in(&before, "test (scripted @ http://");
    repl.line("hello there");
    repl.expect("first");
    repl.expect(PROMPT);
    repl.line("/quit");
    repl.expect("resume this session with `linggen -c`");
    drop(repl);
    let mut again = Repl::start_with_prompt(&ws, &["-c"], &[], "resumed session");
    let shown = again.expect("─── resumed ───");
    assert!(shown.contains("› hello there"), "{shown:?}");
    assert!(shown.contains("get_repo_info"), "{shown:?}");
    assert!(
        shown.contains("first") && !shown.contains("**first**"),
        "{shown:?}"
    );
    again.line("go on");
    again.expect("after resuming");
    again.line("/quit");
}

/// A first run with no model: the shell opens, names the real configuration file with an
/// entry to copy, writes no database, and starts the session once a model is configured.
#[test]
fn a_first_run_without_a_model_opens_the_shell_and_says_how_to_add_one() {
    use support::{Protocol, ScriptedServer, Workspace};
    let ws = Workspace::new();
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ollama = dead.local_addr().unwrap().to_string();
    drop(dead);
    let mut repl = Repl::start_with_env(&ws, &[], &[("OLLAMA_HOST", &ollama)]);
    let config = ws.home().join("linggen-agent.toml");
    let shown = repl.expect("(see doc/config.md)");
    assert!(shown.contains("no model found: start Ollama"), "{shown:?}");
    assert!(shown.contains(&config.display().to_string()), "{shown:?}");
    assert!(
        !ws.home().join("linggen.db").exists(),
        "a database before any session"
    );
    let server =
        ScriptedServer::start_background(Protocol::OpenAi, vec![Step::from(Reply::text("hi!"))]);
    ws.configure(Protocol::OpenAi, &server.url());
    repl.line("hello");
    repl.expect("hi!");
    repl.line("/quit");
}

/// Up recalls what was typed in this project, not the answer given to an approval.
#[test]
fn history_keeps_lines_but_not_approval_answers() {
    let (ws, _server) = workspace(vec![Step::from(write_a()), Reply::text("wrote it").into()]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("write the file");
    repl.expect("type a reason");
    repl.line("y");
    repl.expect("wrote it");
    repl.expect(PROMPT);
    repl.send("\x1b[A");
    repl.expect("write the file");
    repl.send("\x15");
    repl.line("/quit");
    let saved = std::fs::read_to_string(ws.home().join("history.jsonl")).unwrap();
    assert!(saved.contains("write the file"), "{saved}");
    assert!(!saved.contains("\"y\""), "{saved}");
}

/// An approval is a menu apart from the input line: its choices say what "always" covers,
/// arrows and Enter choose, a digit answers at once, Esc denies.
#[test]
fn an_approval_is_a_menu_answered_with_arrows_digits_or_esc() {
    let write = |file: &str| {
        Reply::tool(
            "Write",
            serde_json::json!({"file_path": file, "content": "x"}),
        )
    };
    let (ws, _server) = workspace(vec![
        Step::from(write("a.txt")),
        Reply::text("first done").into(),
        write("b.txt").into(),
        Reply::text("second done").into(),
        write("c.txt").into(),
        Reply::text("third done").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("write a");
    repl.expect("❯ 1. Yes, once");
    repl.expect("Yes, always this session: Write(a.txt)");
    repl.expect("Esc denies");
    // Enter alone does not approve until the highlight was moved.
    repl.send("\r");
    repl.expect("choose with ↑↓");
    repl.send("\x1b[B");
    repl.expect("❯ 2. Yes, always this session");
    repl.send("\r");
    repl.expect("allowed for this session");
    repl.expect("first done");
    assert!(ws.root().join("a.txt").exists());

    repl.line("write b");
    repl.expect("Esc denies");
    std::thread::sleep(Duration::from_millis(100));
    repl.send("\x1b");
    repl.expect("denied");
    repl.expect("second done");
    assert!(!ws.root().join("b.txt").exists());

    repl.line("write c");
    repl.expect("Esc denies");
    repl.send("1");
    repl.expect("allowed once");
    repl.expect("third done");
    assert!(ws.root().join("c.txt").exists());
    repl.line("/quit");
}

/// `!cmd` runs a command the person typed, through the same floor and approvals, shows its
/// output line, and the model sees the output with the next message.
#[test]
fn a_bang_line_runs_the_command_and_the_model_sees_its_output() {
    let (ws, server) = workspace(vec![Step::from(Reply::text("noted"))]);
    ws.write("notes.txt", "remember the milk\n");
    let mut repl = Repl::start(&ws, &[]);
    repl.line("!cat notes.txt");
    repl.expect("Bash");
    repl.expect(PROMPT);
    repl.line("what did it say?");
    repl.expect("noted");
    let users = texts(&server.last_chat_request().unwrap(), "user");
    assert!(
        users
            .iter()
            .any(|u| u.contains("I ran `cat notes.txt`") && u.contains("remember the milk")),
        "{users:?}"
    );
    // A command that writes asks first, as the model's would in this mode.
    repl.line("!touch made.txt");
    repl.expect("Esc denies");
    repl.send("\x1b");
    repl.expect("denied");
    assert!(!ws.root().join("made.txt").exists());
    repl.line("/quit");
}

/// `/theme` marks the theme in use, also after a switch.
#[test]
fn theme_marks_the_current_one() {
    let (ws, _server) = workspace(vec![]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("/theme");
    repl.expect("dark (current)");
    repl.line("/theme light");
    repl.expect("theme light");
    repl.line("/theme");
    repl.expect("light (current)");
    repl.line("/quit");
}

/// `NO_COLOR` keeps the formatting (bold stays bold) and drops the colours; 24-bit colour
/// only reaches a terminal that says it has it (`COLORTERM`), the 256-colour palette others.
#[test]
fn colours_follow_no_color_and_colorterm() {
    let answer = "Some **bold** and `code`.\n";
    let shown = |env: &[(&str, &str)]| {
        let (ws, _server) = workspace(vec![Step::from(Reply::text(answer))]);
        let mut repl = Repl::start_with_env(&ws, &[], env);
        repl.line("show");
        let out = repl.expect("code");
        repl.line("/quit");
        out.rsplit("show").next().unwrap_or_default().to_string()
    };
    let plain = shown(&[("NO_COLOR", "1")]);
    assert!(plain.contains("\x1b[1m"), "bold lost: {plain:?}");
    assert!(!plain.contains("38;"), "colour under NO_COLOR: {plain:?}");
    let palette = shown(&[("COLORTERM", "")]);
    assert!(
        palette.contains("38;5;") && !palette.contains("38;2;"),
        "{palette:?}"
    );
    let true_colour = shown(&[("COLORTERM", "truecolor")]);
    assert!(true_colour.contains("38;2;"), "{true_colour:?}");
}

/// The model writes `a.txt` (approval needed in the default mode).
fn write_a() -> Reply {
    Reply::tool(
        "Write",
        serde_json::json!({"file_path": "a.txt", "content": "A"}),
    )
}

/// Two delegated runs at once, each asking to write: the terminal asks one question at a
/// time, and both writes happen once both are answered.
#[test]
fn two_children_asking_at_once_are_asked_one_after_the_other() {
    let write = |file: &str| {
        Step::from(Reply::tool(
            "Write",
            serde_json::json!({"file_path": file, "content": "x"}),
        ))
    };
    let (ws, server) = workspace(vec![
        Reply::tools(["one", "two"].map(|task| {
            (
                "delegate_to_agent",
                serde_json::json!({"target_agent_id": "coder", "task": task}),
            )
        }))
        .into(),
        write("one.txt"),
        write("two.txt"),
        Reply::text("child wrote").into(),
        Reply::text("child wrote").into(),
        Reply::text("both files written").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("write both files");
    let first = repl.expect("type a reason");
    assert_eq!(first.matches("Allow Write").count(), 1, "{first}");
    // Which child asked first is up to the scheduler; the other one's question waits.
    let other = if first.contains("Allow Write one.txt") {
        "two.txt"
    } else {
        "one.txt"
    };
    let second_card = format!("Allow Write {other}");
    assert!(!repl.shows_within(&second_card, Duration::from_millis(700)));
    repl.line("y");
    repl.expect(&second_card);
    repl.expect("type a reason");
    repl.line("y");
    repl.expect("both files written");
    assert!(ws.root().join("one.txt").exists() && ws.root().join("two.txt").exists());
    server.assert_script_consumed();
    repl.line("/quit");
}

/// `# fact` is saved at once outside the repository and never sent; the next message's
/// system prompt carries it, so does the next session's, and `/memory` lists and forgets.
#[test]
fn remembered_facts_reach_this_and_the_next_session() {
    let (ws, server) = workspace(vec![
        Reply::text("first answer").into(),
        Reply::text("second answer").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("# always run make check before committing");
    repl.expect("remembered in");
    assert!(
        server.chat_requests().is_empty(),
        "a memory line reached the model"
    );
    repl.line("## this heading is a message");
    repl.expect("first answer");
    let system = texts(&server.last_chat_request().unwrap(), "system").join("\n");
    assert!(
        system.contains("- always run make check before committing"),
        "{system}"
    );
    repl.line("/memory");
    repl.expect("1. always run make check before committing");
    repl.line("/quit");
    let file = std::fs::read_dir(ws.home().join("projects"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("memory.md");
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("make check")
    );
    assert!(!ws.root().join("memory.md").exists());

    let mut repl = Repl::start(&ws, &[]);
    repl.line("hello again");
    repl.expect("second answer");
    let system = texts(&server.last_chat_request().unwrap(), "system").join("\n");
    assert!(system.contains("make check"), "{system}");
    repl.line("/memory forget 1");
    repl.expect("forgot: always run make check");
    repl.line("/quit");
    assert!(
        !std::fs::read_to_string(&file)
            .unwrap()
            .contains("make check")
    );
}

/// The footer under the line says what the next message will do: mode, permission mode,
/// model, and (after a turn) how full the context is; it follows Shift+Tab at once.
#[test]
fn the_footer_shows_the_modes_the_model_and_the_context() {
    let (ws, _server) = workspace(vec![Step::from(Reply::text("done"))]);
    let mut repl = Repl::start(&ws, &[]);
    repl.expect("  chat · default (shift+tab) · test · ctrl+o transcript");
    repl.send("\x1b[Z");
    repl.expect("  chat · accept-edits (shift+tab) · test");
    repl.line("hello");
    repl.expect("done");
    repl.expect("  chat · accept-edits (shift+tab) · test · context ");
    repl.line("/quit");
}
