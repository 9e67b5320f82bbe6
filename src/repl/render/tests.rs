//! Snapshots of what a person sees, for a fixture set of markdown, and the streaming
//! contract: chunking never changes output, the open line is never returned, nothing is
//! returned twice.

use std::path::Path;

use super::*;
use crate::repl::theme;

const WIDTH: u16 = 60;

const FIXTURES: &[(&str, &str)] = &[
    ("lists", include_str!("fixtures/lists.md")),
    ("tables", include_str!("fixtures/tables.md")),
    ("code", include_str!("fixtures/code.md")),
    ("long_unicode", include_str!("fixtures/long_unicode.md")),
];

fn dark() -> RenderStyle {
    RenderStyle::styled(theme::load("dark", Path::new("/nonexistent")).unwrap())
}

/// Feeds `md` in chunks of about `size` bytes (cut at character boundaries, as a token
/// stream would be) and collects everything returned, `finish` included.
fn render_chunked(md: &str, style: &RenderStyle, size: usize) -> Vec<String> {
    let mut stream = MarkdownStream::new(style.clone(), WIDTH);
    let mut out = Vec::new();
    let mut rest = md;
    while !rest.is_empty() {
        let mut end = size.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        out.extend(stream.push(&rest[..end]));
        rest = &rest[end..];
    }
    out.extend(stream.finish());
    out
}

/// Escape codes made visible, so a snapshot shows where each style starts and ends.
fn escaped(lines: &[String]) -> String {
    lines.join("\n").replace('\x1b', "␛")
}

/// What the lines look like on screen, without styles: the layout.
fn visible(lines: &[String]) -> String {
    let mut out = String::new();
    let mut in_escape = false;
    for c in lines.join("\n").chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, c) => out.push(c),
        }
    }
    out
}

#[test]
fn fixtures_render_as_snapshotted() {
    let style = dark();
    for (name, md) in FIXTURES {
        let lines = render_chunked(md, &style, md.len());
        insta::assert_snapshot!(format!("{name}_visible"), visible(&lines));
        insta::assert_snapshot!(format!("{name}_styled"), escaped(&lines));
    }
}

#[test]
fn chunk_size_never_changes_the_output() {
    for style in [dark(), RenderStyle::Plain] {
        for (name, md) in FIXTURES {
            let whole = render_chunked(md, &style, md.len());
            for size in [1, 7] {
                assert_eq!(
                    render_chunked(md, &style, size),
                    whole,
                    "{name} in {size}-byte chunks"
                );
            }
        }
    }
}

#[test]
fn rendered_lines_stay_within_the_width() {
    let style = dark();
    for (name, md) in FIXTURES {
        for line in visible(&render_chunked(md, &style, 5)).lines() {
            assert!(
                paint::str_width(line) <= usize::from(WIDTH),
                "{name}: {line:?} is wider than {WIDTH}"
            );
        }
    }
}

#[test]
fn plain_mode_keeps_the_markdown_as_written_wrapped_and_never_a_line_twice() {
    // Every character once, in order (a word longer than a row is broken in it).
    let text = |text: &str| {
        text.chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
    };
    for (name, md) in FIXTURES {
        let lines = render_chunked(md, &RenderStyle::Plain, 1);
        assert_eq!(text(&lines.join("\n")), text(md), "{name}");
        assert!(lines.iter().all(|l| !l.contains('\x1b')));
        // A line is as written (code, tables, what fits) or a row of one wrapped at a space.
        for line in &lines {
            assert!(
                md.lines().any(|l| l == line) || paint::str_width(line) <= usize::from(WIDTH),
                "{name}: {line:?}"
            );
        }
    }
}

#[test]
fn the_open_line_is_held_back_until_its_newline() {
    for style in [dark(), RenderStyle::Plain] {
        let mut stream = MarkdownStream::new(style, WIDTH);
        assert!(stream.push("Hello **wor").is_empty());
        let first = stream.push("ld**\nsecond li");
        assert_eq!(first.len(), 1);
        assert_eq!(visible(&first).replace('*', ""), "Hello world");
        assert!(stream.push("ne").is_empty());
        assert_eq!(visible(&stream.finish()), "second line");
        assert!(
            stream.finish().is_empty(),
            "finish twice returns nothing new"
        );
    }
}

#[test]
fn code_lines_appear_as_they_complete_and_tables_when_they_end() {
    let mut stream = MarkdownStream::new(dark(), WIDTH);
    assert!(stream.push("```rust\n").is_empty());
    assert_eq!(visible(&stream.push("fn main() {}\n")), "fn main() {}");
    assert!(
        stream
            .push("```\n| a | b |\n|---|---|\n| 1 | 2 |\n")
            .is_empty()
    );
    let table = stream.push("\n");
    assert_eq!(table.len(), 6, "{}", visible(&table));
    assert_eq!(table.last().map(String::as_str), Some(""));
}

#[test]
fn a_pipe_line_without_delimiter_row_is_text() {
    let mut stream = MarkdownStream::new(dark(), WIDTH);
    assert!(stream.push("| not a table\n").is_empty());
    let lines = stream.push("next\n");
    assert_eq!(visible(&lines), "| not a table\nnext");
}

#[test]
fn a_width_change_applies_to_later_lines_only() {
    let mut stream = MarkdownStream::new(dark(), 80);
    let text = "word ".repeat(10);
    let wide = stream.push(&format!("{text}\n"));
    stream.set_width(20);
    let narrow = stream.push(&format!("{text}\n"));
    assert_eq!(wide.len(), 1);
    assert_eq!(narrow.len(), 3);
}

#[test]
fn thinking_is_dimmed_and_plain_is_untouched() {
    assert_eq!(render_thinking("hmm", &RenderStyle::Plain), "hmm");
    assert_eq!(
        escaped(&[render_thinking("hmm", &dark())]),
        "␛[2;3;90mhmm␛[0m"
    );
}

#[test]
fn style_detection_respects_dumb_terminals_and_pipes() {
    let theme = || theme::Theme::uncoloured();
    assert!(RenderStyle::choose(Some("dumb"), true, theme()).is_plain());
    assert!(RenderStyle::choose(Some("xterm"), false, theme()).is_plain());
    assert!(!RenderStyle::choose(Some("xterm-256color"), true, theme()).is_plain());
    assert!(!RenderStyle::choose(None, true, theme()).is_plain());
}

/// `NO_COLOR` takes the colours away and keeps the formatting; 24-bit colour only when
/// `COLORTERM` says the terminal has it, the 256-colour palette otherwise.
#[test]
fn colour_depth_follows_no_color_and_colorterm() {
    use super::paint::{ColorDepth, fg_param_at, nearest_256};
    use crossterm::style::Color;
    assert_eq!(
        RenderStyle::color_depth(true, Some("truecolor")),
        ColorDepth::None
    );
    assert_eq!(
        RenderStyle::color_depth(false, Some("truecolor")),
        ColorDepth::TrueColor
    );
    assert_eq!(
        RenderStyle::color_depth(false, Some("24bit")),
        ColorDepth::TrueColor
    );
    assert_eq!(
        RenderStyle::color_depth(false, None),
        ColorDepth::Palette256
    );
    let orange = Color::Rgb {
        r: 229,
        g: 192,
        b: 123,
    };
    assert_eq!(
        fg_param_at(orange, ColorDepth::TrueColor).as_deref(),
        Some("38;2;229;192;123")
    );
    assert_eq!(
        fg_param_at(orange, ColorDepth::Palette256).as_deref(),
        Some("38;5;180")
    );
    assert_eq!(fg_param_at(orange, ColorDepth::None), None);
    assert_eq!(nearest_256(0, 0, 0), 16);
    assert_eq!(nearest_256(255, 255, 255), 231);
    assert_eq!(nearest_256(128, 128, 128), 244);
    // Under NO_COLOR the formatting stays: bold text is still bold.
    let bold = super::paint::Ink::fg(Color::Red).bold();
    let mut sgr = String::new();
    bold.sgr_at(&mut sgr, ColorDepth::None);
    assert_eq!(sgr, "\x1b[1m");
}

const DIFF: &str = "\
--- a/src/main.rs
+++ b/src/main.rs
@@ -1,4 +1,4 @@
 fn main() {
-    println!(\"hello\");
+    println!(\"hello, world\");
 }
";

#[test]
fn diffs_and_tool_lines() {
    let style = dark();
    insta::assert_snapshot!("diff_styled", escaped(&render_diff(DIFF, &style, 100)));
    let cut = render_diff(DIFF, &RenderStyle::Plain, 4);
    assert_eq!(cut.len(), 5);
    assert_eq!(cut[4], "… 3 more lines");
    assert_eq!(
        render_diff(DIFF, &RenderStyle::Plain, 6)[6],
        "… 1 more line"
    );
    // A diff the tool already cut: the count is every line hidden, not the shown rest.
    let long: String =
        (0..200).map(|i| format!("+{i}\n")).collect::<String>() + "… 103 more lines\n";
    let cut = render_diff(&long, &RenderStyle::Plain, 40);
    assert_eq!(cut.len(), 41);
    assert_eq!(cut[40], "… 263 more lines");
    // Short enough to show whole: the tool's own count stays as it was.
    let whole = render_diff(&long, &RenderStyle::Plain, 300);
    assert_eq!(whole.last().map(String::as_str), Some("… 103 more lines"));
    let tools = [
        tool_line("Read src/main.rs (1-120)", &style),
        tool_result_line("120 lines", true, &style),
        tool_result_line("no such file: src/nope.rs", false, &style),
    ];
    insta::assert_snapshot!("tool_lines_styled", escaped(&tools));
    assert_eq!(
        tool_line("Read src/main.rs (1-120)", &RenderStyle::Plain),
        "⏺ Read src/main.rs (1-120)"
    );
    assert_eq!(
        tool_result_line("120 lines", true, &RenderStyle::Plain),
        "  ⎿ 120 lines"
    );
    assert_eq!(
        tool_result_line("denied", false, &RenderStyle::Plain),
        "  ⎿ ✗ denied"
    );
}

#[test]
fn role_helpers_colour_only_when_styled() {
    let style = dark();
    assert_eq!(escaped(&[style.dim("hint")]), "␛[90mhint␛[0m");
    assert_eq!(escaped(&[style.warn("careful")]), "␛[1;93mcareful␛[0m");
    assert_eq!(escaped(&[style.error("failed")]), "␛[91mfailed␛[0m");
    for text in ["hint", "careful"] {
        assert_eq!(RenderStyle::Plain.dim(text), text);
        assert_eq!(RenderStyle::Plain.warn(text), text);
    }
}

/// The model's escape sequences never reach the screen, however the stream is cut; the
/// renderer's own styling is the only escape output.
#[test]
fn control_sequences_in_the_model_text_are_stripped() {
    let hostile = "Hi \x1b]52;c;ZWNobyBwd25lZA==\x07there \x1b[2J**bold** \u{9b}31mred safe\rEVIL\n\
                   `code\x1b[1A` and \x1bP+q\x1b\\done\n";
    for size in [1, 3, 7, 1000] {
        for style in [RenderStyle::Plain, dark()] {
            let lines = render_chunked(hostile, &style, size);
            let text = lines.join("\n");
            for bad in [
                "\x1b]", "\x1b[2J", "\x1b[1A", "\x1bP", "\u{9b}", "\x07", "\r",
            ] {
                assert!(
                    !text.contains(bad),
                    "{bad:?} in {text:?} (chunks of {size})"
                );
            }
            assert!(text.contains("safeEVIL"), "{text:?}");
            if style.is_plain() {
                assert!(!text.contains('\x1b'), "{text:?}");
            }
        }
    }
    let plain = RenderStyle::Plain;
    for line in [
        render_thinking("think\x1b]0;title\x07ing", &plain),
        tool_line("Bash: ls\x1b[2J", &plain),
        tool_result_line("\u{9b}2Jexit 0", true, &plain),
        plain.error("model said \x1b]52;c;AA==\x07"),
    ] {
        assert!(!line.contains(['\x1b', '\x07', '\u{9b}']), "{line:?}");
    }
}

/// An approval is wrapped to the width, never cut: all of a long call is on screen.
#[test]
fn an_approval_head_wraps_the_whole_call() {
    let display = format!("Bash: echo {}&& touch tail-end", "y".repeat(90));
    let lines = approval_head(&display, 40, &RenderStyle::Plain);
    assert!(lines.len() >= 3, "{lines:?}");
    assert!(lines.iter().all(|l| l.chars().count() <= 40), "{lines:?}");
    assert_eq!(lines.concat(), format!("⏵ Allow {display}"));
    let styled = approval_head(&display, 40, &dark());
    // Styled, the same characters are on screen, only broken into lines.
    assert_eq!(
        visible(&styled).replace('\n', ""),
        format!("⏵ Allow {display}")
    );
}

/// A paragraph still streaming (no newline yet) gives its full rows as they fill, keeps the
/// row still filling as the tail, and when it ends returns only what was not out yet.
#[test]
fn a_streaming_paragraph_gives_its_final_rows_before_it_ends() {
    let mut stream = MarkdownStream::new(dark(), 20);
    let words = "alpha beta gamma delta epsilon zeta eta theta iota kappa";
    let mut out = Vec::new();
    for word in words.split(' ') {
        out.extend(stream.push(&format!("{word} ")));
    }
    assert!(!out.is_empty(), "no row before the paragraph ended");
    assert_eq!(visible(&out[..1]), "alpha beta gamma");
    let tail = visible(&stream.tail());
    assert!(tail.contains("kappa"), "{tail:?}");
    out.extend(stream.push("\n"));
    assert!(stream.tail().is_empty());
    let mut whole = MarkdownStream::new(dark(), 20);
    let mut expected = whole.push(&format!("{words} \n"));
    expected.extend(whole.finish());
    assert_eq!(out, expected, "streamed rows differ from the whole line's");
}

/// Rows with an inline marker still open wait for it to close, so styling that spans rows
/// is final when they come out; a width change waits for the open line to end.
#[test]
fn rows_wait_for_an_open_marker_and_the_open_line_keeps_its_width() {
    let mut stream = MarkdownStream::new(dark(), 20);
    let first = stream.push("plain words come first and fill a row ");
    assert!(!first.is_empty());
    let held = stream.push("then **bold words that run across rows");
    assert!(held.is_empty(), "{}", visible(&held));
    stream.set_width(40);
    let mut out = first;
    out.extend(stream.push("** end of it\n"));
    let all = visible(&out);
    assert!(!all.contains('*'), "{all:?}");
    assert!(all.lines().all(|l| paint::str_width(l) <= 20), "{all:?}");
    let next = stream.push(&format!("{}\n", "word ".repeat(7)));
    assert_eq!(next.len(), 1, "the new width applies to the next line");
}

/// Code, tables and plain mode have no tail: only paragraphs are shown while they fill.
#[test]
fn only_paragraph_text_has_a_tail() {
    let mut stream = MarkdownStream::new(dark(), WIDTH);
    stream.push("```rust\nfn ma");
    assert!(stream.tail().is_empty());
    let mut plain = MarkdownStream::new(RenderStyle::Plain, WIDTH);
    plain.push("some text");
    assert!(plain.tail().is_empty());
}

/// A table too wide for the terminal becomes blocks of `Header: value` lines instead of a
/// grid whose words are broken into pieces; a table that fits keeps its grid.
#[test]
fn a_table_too_wide_for_the_terminal_is_stacked() {
    let md = "| Name | Purpose | Where it lives | Notes |\n|---|---|---|---|\n| session | owns one conversation and its state | src/session | every frontend talks to it |\n| store | keeps sessions in SQLite across restarts | src/store | written on its own thread |\n\n";
    let mut stream = MarkdownStream::new(dark(), 40);
    let mut lines = stream.push(md);
    lines.extend(stream.finish());
    let shown = visible(&lines);
    assert!(shown.contains("Name: session"), "{shown}");
    assert!(shown.contains("Purpose: owns one conversation"), "{shown}");
    assert!(!shown.contains('┬'), "{shown}");
    assert!(shown.lines().all(|l| paint::str_width(l) <= 40), "{shown}");
    let mut wide = MarkdownStream::new(dark(), 160);
    let mut grid = wide.push(md);
    grid.extend(wide.finish());
    assert!(visible(&grid).contains('┬'));
}

/// Under `NO_COLOR` a code span has no colour to set it apart, so it keeps its backticks
/// (plain text, no escape); with colours it is shown without them.
#[test]
fn no_color_keeps_code_spans_in_backticks() {
    use super::inline::inline_at;
    use super::paint::{ColorDepth, Ink};
    let colors = &dark().theme().unwrap().colors.clone();
    let text = |depth| -> String {
        inline_at(
            "run `cargo test` or ``a`b`` now",
            Ink::default(),
            colors,
            depth,
        )
        .iter()
        .map(|s| s.text.as_str())
        .collect()
    };
    assert_eq!(text(ColorDepth::None), "run `cargo test` or ``a`b`` now");
    assert_eq!(text(ColorDepth::TrueColor), "run cargo test or a`b now");
}

fn wrapped(text: &str, width: usize) -> Vec<String> {
    use super::inline::inline_at;
    use super::paint::{ColorDepth, Ink, wrap};
    let colors = &dark().theme().unwrap().colors.clone();
    let spans = inline_at(text, Ink::default(), colors, ColorDepth::TrueColor);
    wrap(&spans, width, &[], &[])
        .iter()
        .map(|l| l.iter().map(|s| s.text.as_str()).collect())
        .collect()
}

/// Lines break at the last space that fits: every word is whole on one row.
#[test]
fn wrapping_keeps_words_whole() {
    let text = "the quick brown fox jumps over the lazy dog ".repeat(4);
    let rows = wrapped(text.trim_end(), 80);
    assert!(rows.len() > 1, "{rows:?}");
    for row in &rows {
        assert!(str_width(row) <= 80, "{row:?}");
        assert!(!row.starts_with(' ') && !row.ends_with(' '), "{row:?}");
        for word in row.split(' ') {
            assert!(
                text.split(' ').any(|w| w == word),
                "{word:?} was cut: {rows:?}"
            );
        }
    }
}

/// A word longer than the line is broken between characters, filling each row.
#[test]
fn wrapping_breaks_a_word_longer_than_the_line() {
    let long = "x".repeat(50);
    let rows = wrapped(&format!("see {long} end"), 20);
    assert_eq!(rows[0], format!("see {}", "x".repeat(16)));
    assert_eq!(rows[1], "x".repeat(20));
    assert_eq!(rows[2], format!("{} end", "x".repeat(14)));
}

/// CJK characters take two columns: a row of them holds half as many.
#[test]
fn wrapping_counts_wide_characters_twice() {
    let rows = wrapped(&"漢字".repeat(15), 20);
    assert_eq!(rows[0], "漢字".repeat(5));
    assert!(rows.iter().all(|r| str_width(r) <= 20), "{rows:?}");
    // Ideographs have no spaces to break at: a run wider than the row fills it.
    let rows = wrapped("ab 漢字漢字漢字漢字漢字", 12);
    assert_eq!(rows, vec!["ab 漢字漢字", "漢字漢字漢字"]);
}

/// A code span is wrapped like the words around it, and the punctuation right after it
/// stays on its row; a span with spaces may break at them.
#[test]
fn wrapping_keeps_code_spans_with_their_punctuation() {
    let rows = wrapped("aaaa bbbb `cccc`, dddd", 14);
    assert_eq!(rows, vec!["aaaa bbbb", "cccc, dddd"]);
}

#[test]
fn closers_close_what_a_streaming_line_left_open_innermost_first() {
    use super::inline::closers;
    assert_eq!(closers("run `cargo test --locked"), "`");
    assert_eq!(closers("a ``tick ` inside"), "``");
    assert_eq!(closers("**bold *and italic"), "***");
    assert_eq!(closers("~~gone and **bold"), "**~~");
    assert_eq!(closers("see [the docs"), "]()");
    assert_eq!(closers("see [[the docs"), "]()");
    assert_eq!(closers("see [the docs](https://example.com/a"), ")");
    // Closed, escaped, inside code, or not markers at all: nothing to close.
    for text in [
        "`a` **b** *c* [d](e)",
        "\\*not emphasis",
        "`**` in code",
        "snake_case_name",
        "2 * 3",
    ] {
        assert_eq!(closers(text), "", "{text}");
    }
}
