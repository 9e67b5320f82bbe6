//! What the terminal shows, through a terminal emulator (`vt100`) fed every byte the shell
//! wrote to its pty: a paragraph with long inline code spans streamed slowly at 120 columns
//! keeps every word once and in order; a resize leaves no stale row of the approval menu;
//! the banner and a dumb terminal's answers wrap at word boundaries.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::num::NonZeroU16;
use std::time::Duration;

use support::pty::{PROMPT, Repl, workspace};
use support::{Reply, Step};

/// A terminal emulator following the pty: everything the shell printed goes through it.
struct Screen {
    parser: vt100::Parser,
    /// Narrowed, it splits the rows that no longer fit, as tmux and most terminals do
    /// (`vt100` itself, like xterm, cuts them).
    reflows: bool,
}

fn size(n: u16) -> NonZeroU16 {
    NonZeroU16::new(n).unwrap()
}

impl Screen {
    fn new(cols: u16, rows: u16) -> Screen {
        Screen {
            parser: vt100::Parser::new(size(rows), size(cols), 10_000),
            reflows: true,
        }
    }

    fn feed(&mut self, printed: &str) {
        self.parser.process(printed.as_bytes());
    }

    /// The pty and the emulator take the new size at once.
    fn resize(&mut self, repl: &mut Repl, cols: u16, rows: u16) {
        repl.resize(cols, rows);
        if !self.reflows {
            self.parser.screen_mut().set_size(size(rows), size(cols));
            return;
        }
        // The lines up to the cursor's, rows a line was wrapped into joined again, written
        // anew at the new width: the cursor stays at the end of its line.
        let (cursor_row, _) = self.parser.screen().cursor_position();
        let screen = self.parser.screen_mut();
        screen.set_scrollback(usize::MAX);
        let above = screen.scrollback();
        let cols_now = screen.size().1.get();
        let mut lines: Vec<String> = vec![String::new()];
        let take = |screen: &vt100::Screen, row: u16, lines: &mut Vec<String>| {
            let text: String = screen.rows(0, cols_now).nth(usize::from(row)).unwrap();
            let last = lines.last_mut().unwrap();
            if screen.row_wrapped(row) {
                last.push_str(&text);
            } else {
                last.push_str(text.trim_end());
                lines.push(String::new());
            }
        };
        for offset in (1..=above).rev() {
            screen.set_scrollback(offset);
            take(screen, 0, &mut lines);
        }
        screen.set_scrollback(0);
        for row in 0..=cursor_row {
            take(screen, row, &mut lines);
        }
        lines.pop();
        let mut parser = vt100::Parser::new(size(rows), size(cols), 10_000);
        parser.process(lines.join("\r\n").as_bytes());
        self.parser = parser;
    }

    /// Every row, the scrollback's first, trailing spaces trimmed.
    fn rows(&mut self) -> Vec<String> {
        let screen = self.parser.screen_mut();
        screen.set_scrollback(usize::MAX);
        let above = screen.scrollback();
        let cols = screen.size().1.get();
        let mut rows = Vec::new();
        for offset in (1..=above).rev() {
            screen.set_scrollback(offset);
            rows.extend(screen.rows(0, cols).take(1));
        }
        screen.set_scrollback(0);
        rows.extend(screen.rows(0, cols));
        rows.iter().map(|r| r.trim_end().to_string()).collect()
    }
}

/// Starts the shell and brings its pty to `cols`×`rows` before the first turn.
fn start_sized(
    ws: &support::Workspace,
    env: &[(&str, &str)],
    cols: u16,
    rows: u16,
) -> (Repl, Screen) {
    let mut repl = Repl::start_with_env(ws, &[], env);
    let mut screen = Screen::new(80, 24);
    screen.feed(&repl.before_prompt.clone());
    screen.resize(&mut repl, cols, rows);
    // The editor redraws its line on SIGWINCH; let it before anything else is printed.
    std::thread::sleep(Duration::from_millis(300));
    (repl, screen)
}

/// The issue's case: at 120 columns, a paragraph with inline code spans longer than a row,
/// streamed 8 bytes every 60 ms. Every word shows once, in order (a row drawn wider than
/// the terminal and then redrawn over used to lose one).
#[test]
fn a_paragraph_with_long_code_spans_keeps_every_word_at_120_columns() {
    let mut paragraph = String::new();
    let mut n = 0;
    let mut word = || {
        n += 1;
        format!("w{n:03}")
    };
    for part in 0..6 {
        for _ in 0..7 {
            paragraph.push_str(&word());
            paragraph.push(' ');
        }
        // A code span of 26 words (about 130 columns): longer than one row.
        let span: Vec<String> = (0..26).map(|_| word()).collect();
        paragraph.push_str(&format!("`{}`", span.join(" ")));
        paragraph.push_str(if part % 2 == 0 { ", " } else { " " });
    }
    paragraph.push_str(&word());
    let last = n;
    let reply = Reply::text(paragraph.clone())
        .delta_bytes(8)
        .chunk_delay(Duration::from_millis(60));
    let (ws, _server) = workspace(vec![Step::from(reply)]);
    let (mut repl, mut screen) = start_sized(&ws, &[], 120, 40);
    repl.line("go");
    screen.feed(&repl.expect(&format!("w{last:03}")));
    screen.feed(&repl.expect(PROMPT));
    // The busy line goes with the next tick.
    std::thread::sleep(Duration::from_millis(400));
    repl.line("/quit");
    screen.feed(&repl.expect("resume this session"));

    let rows = screen.rows();
    let shown: Vec<&str> = rows
        .iter()
        .flat_map(|row| row.split(|c: char| !c.is_ascii_alphanumeric()))
        .filter(|w| w.len() == 4 && w.starts_with('w') && w[1..].parse::<u32>().is_ok())
        .collect();
    let expected: Vec<String> = (1..=last).map(|i| format!("w{i:03}")).collect();
    assert_eq!(
        shown,
        expected,
        "words lost, doubled or out of order; the screen:\n{}",
        rows.join("\n")
    );
    for row in &rows {
        assert!(!row.contains('`'), "a raw backtick on screen: {row:?}");
    }
}

/// An approval menu drawn at 120 columns, then the window narrowed to 60: the menu shows
/// once at the new width, and once answered no row of it is left on screen.
fn menu_survives_a_resize(env: &[(&str, &str)], reflows: bool) {
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool(
            "Write",
            serde_json::json!({"file_path": "a.txt", "content": "x"}),
        )),
        Reply::text("all done").into(),
    ]);
    let (mut repl, mut screen) = start_sized(&ws, env, 120, 40);
    screen.reflows = reflows;
    repl.line("write a");
    screen.feed(&repl.expect("Esc denies"));
    screen.feed(&repl.expect(PROMPT));
    std::thread::sleep(Duration::from_millis(300));
    screen.resize(&mut repl, 60, 40);
    // A tick redraws the menu at the new width.
    screen.feed(&repl.expect(PROMPT));
    std::thread::sleep(Duration::from_millis(300));
    let menu_rows = |rows: &[String]| {
        rows.iter()
            .filter(|r| r.contains("1. Yes, once") || r.contains("Esc denies"))
            .count()
    };
    let during = screen.rows();
    assert_eq!(
        menu_rows(&during),
        2,
        "the menu after the resize:\n{}",
        during.join("\n")
    );
    repl.send("1");
    screen.feed(&repl.expect("all done"));
    screen.feed(&repl.expect(PROMPT));
    std::thread::sleep(Duration::from_millis(300));
    repl.line("/quit");
    screen.feed(&repl.expect("resume this session"));
    let after = screen.rows();
    assert_eq!(
        menu_rows(&after),
        0,
        "a stale menu row after the answer:\n{}",
        after.join("\n")
    );
    for above in ["write a", "Allow Write"] {
        let shown = after.iter().filter(|r| r.contains(above)).count();
        assert_eq!(shown, 1, "{above:?} above the menu:\n{}", after.join("\n"));
    }
    assert!(ws.root().join("a.txt").exists());
}

/// tmux and most terminals split the rows that no longer fit.
#[test]
fn a_resize_leaves_no_stale_row_of_the_approval_menu() {
    menu_survives_a_resize(&[("XTERM_VERSION", ""), ("TMUX", "")], true);
}

/// xterm cuts them: the erase must not reach the lines above the menu.
#[test]
fn a_resize_in_a_terminal_that_cuts_rows_erases_only_the_menu() {
    menu_survives_a_resize(&[("XTERM_VERSION", "XTerm(390)"), ("TMUX", "")], false);
}

/// The banner is wrapped at word boundaries at 80 columns: a long root path stays whole
/// on its row instead of breaking where the terminal runs out of columns.
#[test]
fn the_banner_wraps_at_word_boundaries_at_80_columns() {
    let (ws, _server) = workspace(vec![Step::from(Reply::text("hi"))]);
    let root = ws.root().join("a-rather-long-project-directory-name");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.to_str().unwrap().to_string();
    let mut repl = Repl::start(&ws, &["--root", &root]);
    let mut screen = Screen::new(80, 24);
    screen.feed(&repl.before_prompt.clone());
    if !repl.before_prompt.contains("for commands") {
        screen.feed(&repl.expect("for commands"));
    }
    let rows = screen.rows();
    assert!(
        rows.iter().any(|r| r.contains(&root)),
        "the root path is not whole on a row:\n{}",
        rows.join("\n")
    );
    assert!(
        rows.iter().any(|r| r.contains("/help for commands")),
        "`/help for commands` broken across rows:\n{}",
        rows.join("\n")
    );
}

/// `TERM=dumb` (no escape codes, so no live area): answers are wrapped at word
/// boundaries at 80 columns (`COLUMNS` unset), not left to break mid-word.
#[test]
fn a_dumb_terminal_wraps_answers_at_word_boundaries() {
    let words: Vec<String> = (0..60).map(|i| format!("word{i:02}")).collect();
    let paragraph = words.join(" ");
    let (ws, _server) = workspace(vec![Step::from(Reply::text(format!(
        "{paragraph}\n\n```\n{}\n```",
        "x".repeat(100)
    )))]);
    let mut repl = Repl::start_with_env(&ws, &[], &[("TERM", "dumb")]);
    repl.line("hello");
    let out = repl.expect("word59");
    let out = out + &repl.expect(&"x".repeat(100));
    repl.line("/quit");
    let lines: Vec<&str> = out.lines().filter(|l| l.contains("word")).collect();
    assert!(lines.len() >= 5, "{out}");
    for line in &lines {
        assert!(
            line.trim_end().chars().count() <= 80,
            "a row past 80: {line:?}"
        );
    }
    let joined: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
    assert_eq!(joined, words, "{out}");
}
