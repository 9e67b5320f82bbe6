//! Esc, twice: at an empty prompt it opens the rewind picker; while a turn runs, the second
//! press drops the messages queued behind it too.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use support::pty::{Repl, workspace};
use support::{Reply, Step};

const ESC: &str = "\x1b";

/// Two presses of Esc, apart enough to be two keys, close enough to be "Esc Esc".
fn esc_esc(repl: &mut Repl) {
    repl.send(ESC);
    std::thread::sleep(Duration::from_millis(300));
    repl.send(ESC);
}

#[test]
fn esc_esc_at_an_empty_prompt_picks_a_checkpoint_and_rewinds_to_it() {
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool(
            "Write",
            serde_json::json!({"file_path": "notes.txt", "content": "written\n"}),
        )),
        Reply::text("wrote the notes").into(),
    ]);
    let prompt = "ling [bypass] › ";
    let mut repl = Repl::start_with_prompt(&ws, &["--permission-mode", "bypass"], &[], prompt);
    repl.line("write the notes");
    repl.expect("wrote the notes");
    // The turn has ended (its context line), so Esc is not an interrupt.
    repl.expect("/8,192 (");
    repl.expect(prompt);
    assert_eq!(ws.read("notes.txt"), "written\n");
    esc_esc(&mut repl);
    repl.expect("\x1b[?1049h");
    repl.expect("Rewind: back to before which prompt?");
    // The checkpoint names the prompt it was taken before; it is marked as chosen.
    let listed = repl.expect("write the notes");
    assert!(listed.contains("\x1b[7m 1. "), "{listed:?}");
    repl.send("\r");
    repl.expect("restore what?");
    repl.expect("files and conversation");
    repl.send("\r");
    repl.expect("\x1b[?1049l");
    // It runs as the `/rewind` line it stands for, shown as typed.
    repl.expect("/rewind ");
    repl.expect(prompt);
    assert!(
        !ws.root().join("notes.txt").exists(),
        "the write was undone"
    );
    repl.line("/quit");
}

#[test]
fn esc_esc_with_nothing_to_rewind_says_so_and_one_esc_does_nothing() {
    let (ws, _server) = workspace(vec![Step::from(Reply::text("hello"))]);
    let mut repl = Repl::start(&ws, &[]);
    esc_esc(&mut repl);
    repl.expect("no checkpoints in this session yet");
    // A single Esc at the prompt does nothing; two far apart are two singles.
    repl.send(ESC);
    std::thread::sleep(Duration::from_millis(1800));
    repl.send(ESC);
    assert!(!repl.shows_within("\x1b[?1049h", Duration::from_millis(500)));
    repl.line("/quit");
}

#[test]
fn esc_again_while_a_turn_runs_drops_the_queue() {
    let slow = |text: &str| {
        let words: Vec<String> = (0..80).map(|i| format!("{text}{i:02}")).collect();
        Step::from(
            Reply::text(words.join(" "))
                .delta_bytes(6)
                .chunk_delay(Duration::from_millis(50)),
        )
    };
    let (ws, server) = workspace(vec![slow("first"), slow("second"), slow("third")]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("one");
    repl.expect("first01");
    repl.line("two");
    repl.line("three");
    repl.expect("queued");
    repl.send(ESC);
    repl.expect("2 queued messages run next · esc again to drop them");
    std::thread::sleep(Duration::from_millis(300));
    repl.send(ESC);
    repl.expect("dropped 1 queued message");
    repl.expect("ling › ");
    std::thread::sleep(Duration::from_millis(500));
    let users: Vec<String> = server
        .chat_requests()
        .iter()
        .flat_map(|r| support::texts(r, "user"))
        .collect();
    assert!(users.iter().any(|u| u == "two"), "{users:?}");
    assert!(!users.iter().any(|u| u == "three"), "{users:?}");
    repl.line("/quit");
}
