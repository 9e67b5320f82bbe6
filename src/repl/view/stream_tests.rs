//! The streaming property: whatever the markdown, the chunking and the width, what a
//! terminal shows after an answer streamed through the view (the live area redrawn in place,
//! finished rows pushed to the scrollback) is exactly the answer rendered whole at once.
//!
//! The view writes through the same printer the shell gives it; here that printer does what
//! rustyline's external printer does on a pty (erase the prompt row, write, newline, draw
//! the prompt again) into a `vt100` terminal emulator. Deterministic per seed.

use std::sync::{Arc, Mutex};

use super::*;
use crate::repl::render::ColorDepth;
use crate::repl::theme::Theme;

/// Seeds tried by `cargo test` (each a whole answer at its own width and chunking).
const SEEDS: u64 = 256;

const PROMPT: &str = "› ";

/// A terminal, fed what the printer writes, as rustyline writes it in raw mode (output
/// post-processing stays on there, so `\n` reaches the terminal as `\r\n`).
#[derive(Clone)]
struct Terminal(Arc<Mutex<vt100::Parser>>);

impl Terminal {
    fn new(rows: u16, cols: u16) -> Self {
        let size = |n: u16| std::num::NonZeroU16::new(n).unwrap_or(std::num::NonZeroU16::MIN);
        let mut parser = vt100::Parser::new(size(rows), size(cols), 100_000);
        parser.process(PROMPT.as_bytes());
        Terminal(Arc::new(Mutex::new(parser)))
    }

    /// Narrows the terminal: rows that no longer fit are cut (xterm), or split into several
    /// (`reflows`: tmux and most terminals), the cursor staying at the end of its line.
    fn resize(&self, cols: u16, reflows: bool) {
        let size = |n: u16| std::num::NonZeroU16::new(n).unwrap_or(std::num::NonZeroU16::MIN);
        let mut parser = crate::session::lock(&self.0);
        let rows = parser.screen().size().0;
        if !reflows {
            parser.screen_mut().set_size(rows, size(cols));
            return;
        }
        let (cursor_row, _) = parser.screen().cursor_position();
        let screen = parser.screen_mut();
        screen.set_scrollback(usize::MAX);
        let above = screen.scrollback();
        let width = screen.size().1.get();
        let mut lines = vec![String::new()];
        let take = |screen: &vt100::Screen, row: u16, lines: &mut Vec<String>| {
            let text: String = screen
                .rows(0, width)
                .nth(usize::from(row))
                .unwrap_or_default();
            if let Some(last) = lines.last_mut() {
                if screen.row_wrapped(row) {
                    last.push_str(&text);
                } else {
                    last.push_str(text.trim_end());
                    lines.push(String::new());
                }
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
        let mut fresh = vt100::Parser::new(rows, size(cols), 100_000);
        fresh.process(lines.join("\r\n").as_bytes());
        *parser = fresh;
    }

    fn write(&self, text: &str) {
        let bytes = text.replace('\n', "\r\n");
        crate::session::lock(&self.0).process(bytes.as_bytes());
    }

    /// Every row, scrollback first, without trailing spaces and trailing empty rows.
    fn rows(&self) -> Vec<String> {
        let mut parser = crate::session::lock(&self.0);
        let screen = parser.screen_mut();
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
        let mut rows: Vec<String> = rows.iter().map(|r| r.trim_end().to_string()).collect();
        while rows.last().is_some_and(String::is_empty) {
            rows.pop();
        }
        rows
    }
}

impl ExternalPrinter for Terminal {
    /// rustyline's `external_print`: clear the prompt row, the message, a newline when it
    /// lacks one, the prompt again.
    fn print(&mut self, msg: String) -> rustyline::Result<()> {
        let mut text = format!("\r\x1b[K{msg}");
        if !msg.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(PROMPT);
        self.write(&text);
        Ok(())
    }
}

/// splitmix64: small, deterministic, good enough to pick test cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `low..=high`.
    fn range(&mut self, low: usize, high: usize) -> usize {
        low + (self.next() % (high - low + 1) as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.range(0, items.len() - 1)]
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.range(1, 100) <= percent
    }
}

const WORDS: &[&str] = &[
    "the",
    "a",
    "renderer",
    "wraps",
    "words",
    "at",
    "boundaries",
    "and",
    "keeps",
    "spans",
    "intact,",
    "streaming",
    "tokens.",
    "(see",
    "below)",
    "it's",
    "x",
    "foo_bar",
    "—",
    "42",
    "漢字",
    "かな交じり文",
    "🙂",
    "🚀emoji",
    "naïve",
    "e\u{301}",
    "Ünïcödé",
    "…",
    "\"quoted\"",
];

/// One inline piece: a word, or markup around words.
fn inline_piece(rng: &mut Rng, width: usize) -> String {
    let word = |rng: &mut Rng| rng.pick(WORDS).to_string();
    match rng.range(0, 13) {
        0 => format!("**{} {}**", word(rng), word(rng)),
        1 => format!("*{}*", word(rng)),
        2 => format!("`{}`", word(rng)),
        3 => format!("`{} {} {}`", word(rng), word(rng), word(rng)),
        4 => format!("[{}]({})", word(rng), "https://example.com/a/b"),
        5 => {
            // Longer than the row: broken between characters.
            let len = rng.range(width / 2, width * 2);
            let c = rng.pick(&["a", "漢", "-", "🙂"]);
            c.repeat(len / c.chars().count().max(1))
        }
        6 => format!("`{}`,", "code_".repeat(rng.range(1, width / 4 + 1))),
        7 => format!("__{}__", word(rng)),
        8 => format!("~~{}~~", word(rng)),
        _ => word(rng),
    }
}

fn paragraph_line(rng: &mut Rng, width: usize) -> String {
    let count = rng.range(1, 40);
    let mut line = String::new();
    for i in 0..count {
        if i > 0 {
            line.push_str(if rng.chance(10) { "  " } else { " " });
        }
        line.push_str(&inline_piece(rng, width));
    }
    if rng.chance(20) {
        line.push_str("   ");
    }
    line
}

/// A random answer: paragraphs, lists, headings, quotes, fences, tables, rules.
fn markdown(rng: &mut Rng, width: usize) -> String {
    let mut out = String::new();
    for _ in 0..rng.range(1, 8) {
        match rng.range(0, 9) {
            0 => {
                let level = rng.range(1, 3);
                out.push_str(&format!(
                    "{} {}\n",
                    "#".repeat(level),
                    paragraph_line(rng, width)
                ));
            }
            1 => {
                for _ in 0..rng.range(1, 4) {
                    let indent = "  ".repeat(rng.range(0, 2));
                    let marker = rng.pick(&["-", "*", "1.", "2."]);
                    let text = paragraph_line(rng, width);
                    out.push_str(&format!("{indent}{marker} {text}\n"));
                }
            }
            2 => {
                out.push_str(rng.pick(&["```\n", "```text\n", "~~~\n"]));
                for _ in 0..rng.range(0, 4) {
                    out.push_str(&format!("    {}\n", paragraph_line(rng, width)));
                }
                out.push_str(if out.ends_with("~~~\n") {
                    "~~~\n"
                } else {
                    "```\n"
                });
            }
            3 => {
                out.push_str("| name | what it does |\n|---|:---:|\n");
                for _ in 0..rng.range(0, 3) {
                    let cell = inline_piece(rng, width).replace('|', "");
                    out.push_str(&format!("| {cell} | {} |\n", rng.pick(WORDS)));
                }
            }
            4 => out.push_str(&format!("> {}\n", paragraph_line(rng, width))),
            5 => out.push('\n'),
            6 => out.push_str("---\n"),
            _ => {
                for _ in 0..rng.range(1, 3) {
                    out.push_str(&paragraph_line(rng, width));
                    out.push('\n');
                }
            }
        }
        if rng.chance(60) {
            out.push('\n');
        }
    }
    // An answer need not end with a newline.
    if rng.chance(40) {
        out.pop();
        if rng.chance(50) {
            out.push_str(&paragraph_line(rng, width));
        }
    }
    out
}

/// `text` cut at random char boundaries, 1 byte to the whole.
fn chunks(rng: &mut Rng, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let size = match rng.range(0, 3) {
            0 => 1,
            1 => rng.range(1, 8),
            2 => rng.range(1, 64),
            _ => rng.range(1, rest.len()),
        };
        let mut cut = size.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (chunk, after) = rest.split_at(cut);
        out.push(chunk.to_string());
        rest = after;
    }
    out
}

/// This thread's colour depth until dropped (a test thread may run other tests next).
struct Depth;

impl Depth {
    fn set(depth: ColorDepth) -> Depth {
        crate::repl::render::paint::TEST_DEPTH.with(|d| d.set(Some(depth)));
        Depth
    }
}

impl Drop for Depth {
    fn drop(&mut self) {
        crate::repl::render::paint::TEST_DEPTH.with(|d| d.set(None));
    }
}

fn style() -> RenderStyle {
    RenderStyle::styled(Theme::uncoloured())
}

/// The answer streamed through the view, as the shell drives it.
fn streamed(answer: &[String], width: u16, rows: u16, rng: &mut Rng) -> Vec<String> {
    let terminal = Terminal::new(rows, width);
    let mut view = View::new(
        Box::new(terminal.clone()),
        style(),
        width,
        Arc::new(Shared::default()),
        "ling",
    );
    view.on_event(&run_started());
    // A run's start measures the real terminal; this one is `width`×`rows`.
    view.set_width(width);
    view.set_height(rows);
    for chunk in answer {
        view.on_event(&token(chunk, false));
        if rng.chance(30) {
            view.tick();
        }
        // Messages typed meanwhile wait in the queue, a row of the live area.
        if rng.chance(3) {
            let queued = (0..rng.range(0, 3))
                .map(|_| paragraph_line(rng, usize::from(width) / 3))
                .collect();
            view.on_event(&Event::QueueUpdated { queued });
        }
    }
    view.on_event(&Event::QueueUpdated { queued: Vec::new() });
    finish(&mut view);
    terminal.rows()
}

fn run_started() -> Event {
    Event::RunStarted {
        run_id: "r".into(),
        parent_id: None,
        agent_id: "ling".into(),
        task: "task".into(),
    }
}

/// The answer's last token, the turn's outcome, and the tick that takes the busy line.
fn finish(view: &mut View) {
    view.on_event(&token("", true));
    view.on_event(&Event::Outcome {
        run_id: "r".into(),
        status: OutcomeStatus::Completed,
        result: String::new().into(),
        num_turns: 1,
        usage: crate::llm::Usage::default(),
        duration_ms: 0,
    });
    view.tick();
}

fn token(text: &str, done: bool) -> Event {
    Event::Token {
        run_id: "r".into(),
        agent_id: "ling".into(),
        token: text.into(),
        thinking: false,
        done,
    }
}

/// The answer rendered whole, written once.
fn whole(answer: &str, width: u16, rows: u16) -> Vec<String> {
    let mut stream = MarkdownStream::new(style(), width);
    let mut lines = stream.push(answer);
    lines.extend(stream.finish());
    let terminal = Terminal::new(rows, width);
    let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    if text.is_empty() {
        text.push('\n');
    }
    let mut printer = terminal.clone();
    let _ = printer.print(text);
    terminal.rows()
}

/// Where two screens first differ, with a few rows around it.
fn first_difference(got: &[String], want: &[String]) -> Option<String> {
    let at = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i))?;
    let around = |rows: &[String]| {
        let from = at.saturating_sub(3);
        let to = (at + 4).min(rows.len());
        rows.get(from..to).unwrap_or_default().join("\n")
    };
    Some(format!(
        "first different row {at} (of {} streamed, {} whole)\n--- streamed\n{}\n--- whole\n{}",
        got.len(),
        want.len(),
        around(got),
        around(want)
    ))
}

fn check(seed: u64) -> Result<(), String> {
    let mut rng = Rng(seed);
    // One seed in four without colours (`NO_COLOR`): code spans keep their backticks.
    let depth = match rng.range(0, 3) {
        0 => ColorDepth::None,
        _ => ColorDepth::TrueColor,
    };
    let _depth = Depth::set(depth);
    let width = rng.range(20, 160) as u16;
    let rows = rng.range(4, 50) as u16;
    let mut answer = markdown(&mut rng, usize::from(width));
    if rng.chance(10) {
        answer = answer.replace('\n', "\r\n");
    }
    let pieces = chunks(&mut rng, &answer);
    let got = streamed(&pieces, width, rows, &mut rng);
    let want = whole(&answer, width, rows);
    match first_difference(&got, &want) {
        None => Ok(()),
        Some(difference) => Err(format!(
            "seed {seed}, {width}×{rows}, {depth:?}: the screen differs from the answer rendered whole; \
             {difference}\nanswer: {answer:?}"
        )),
    }
}

#[test]
fn a_streamed_answer_shows_exactly_as_rendered_whole() {
    // `LINGGEN_STREAM_SEED=n` replays one seed; `LINGGEN_STREAM_SEEDS=n` tries n of them.
    let var = |name: &str| std::env::var(name).ok().and_then(|s| s.parse::<u64>().ok());
    let seeds = match (var("LINGGEN_STREAM_SEED"), var("LINGGEN_STREAM_SEEDS")) {
        (Some(seed), _) => seed..seed + 1,
        (None, count) => 0..count.unwrap_or(SEEDS),
    };
    let tried = seeds.end - seeds.start;
    let failures: Vec<String> = seeds.filter_map(|seed| check(seed).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {tried} seeds differ; the first:\n{}",
        failures.len(),
        failures.first().map(String::as_str).unwrap_or_default()
    );
}

/// Without colours a code span keeps its backticks: the closing one, added to render a
/// span still open, must not push the span's first word off the row it ends up on.
#[test]
fn an_open_code_span_without_colours_keeps_its_words_on_their_rows() {
    let _depth = Depth::set(ColorDepth::None);
    // Seven rows of one word, then a row that `` `foo`` fills exactly (20 columns).
    let mut answer = "x".repeat(19);
    for _ in 0..6 {
        answer.push(' ');
        answer.push_str(&"x".repeat(19));
    }
    answer.push_str(&format!(" {} `foo bar` end\n", "a".repeat(15)));
    let cut = answer.find("ar`").unwrap_or_default();
    let pieces = [answer[..cut].to_string(), answer[cut..].to_string()];
    let got = streamed(&pieces, 20, 24, &mut Rng(0));
    let want = whole(&answer, 20, 24);
    assert_eq!(first_difference(&got, &want), None);
}

/// The window narrows while a paragraph streams: the row still filling keeps the width the
/// line's first rows were wrapped at, wider than the terminal now, and the terminal wraps
/// it. No word shows twice or out of order; where the terminal reflows, every word shows.
#[test]
fn a_resize_mid_paragraph_loses_no_word() {
    for reflows in [false, true] {
        for seed in 0..24 {
            let mut rng = Rng(seed);
            let words: Vec<String> = (0..150).map(|i| format!("w{i:03}")).collect();
            let mut answer = words.join(" ");
            answer.push('\n');
            let pieces = chunks(&mut rng, &answer);
            let (wide, narrow) = (rng.range(60, 120) as u16, rng.range(20, 59) as u16);
            let terminal = Terminal::new(30, wide);
            let mut view = View::new(
                Box::new(terminal.clone()),
                style(),
                wide,
                Arc::new(Shared::default()),
                "ling",
            );
            view.live.reflows = reflows;
            view.on_event(&run_started());
            view.set_width(wide);
            let at = rng.range(1, pieces.len());
            for (i, chunk) in pieces.iter().enumerate() {
                if i == at {
                    terminal.resize(narrow, reflows);
                    view.set_width(narrow);
                    view.tick();
                }
                view.on_event(&token(chunk, false));
            }
            finish(&mut view);
            // Rows joined as they are: a word the terminal split at its edge is whole again.
            let text: String = terminal.rows().concat();
            let shown: Vec<String> = text
                .match_indices('w')
                .filter_map(|(at, _)| text.get(at..at + 4))
                .filter(|w| w[1..].chars().all(|c| c.is_ascii_digit()))
                .map(str::to_string)
                .collect();
            // A terminal that cuts its rows hides the ends of the rows written before; what
            // is left must still be in order, none twice.
            let in_order = shown.windows(2).all(|pair| pair[0] < pair[1]);
            assert!(
                in_order && (shown == words || !reflows),
                "seed {seed}, {wide}→{narrow}, reflows: {reflows}:\n{}",
                terminal.rows().join("\n")
            );
        }
    }
}
