//! One-line tool calls and results, and coloured unified diffs for `Edit`/`Write`.

use super::RenderStyle;
use super::paint::{Ink, Span, hard_wrap, paint};
use crate::tools::terminal_text::strip_controls;

/// Narrower than this, an approval is broken at this width and the terminal wraps the rest.
const MIN_WIDTH: usize = 20;

/// `⏺ Read src/main.rs (1-120)`: the tool name in bold, the marker in the tool colour.
/// Summaries quote the model's arguments, so control sequences are stripped first.
pub fn tool_line(summary: &str, style: &RenderStyle) -> String {
    let summary = strip_controls(summary);
    let summary = summary.as_ref();
    let Some(theme) = style.theme() else {
        return format!("⏺ {summary}");
    };
    let (name, args) = summary.split_once(' ').unwrap_or((summary, ""));
    let mut spans = vec![
        Span::new("⏺ ", Ink::fg(theme.colors.tool)),
        Span::new(name, Ink::default().bold()),
    ];
    if !args.is_empty() {
        spans.push(Span::plain(format!(" {args}")));
    }
    paint(&spans)
}

/// `  ⎿ 120 lines` dimmed, or `  ⎿ ✗ no such file` in the error colour.
pub fn tool_result_line(summary: &str, ok: bool, style: &RenderStyle) -> String {
    let summary = strip_controls(summary);
    let text = if ok {
        format!("  ⎿ {summary}")
    } else {
        format!("  ⎿ ✗ {summary}")
    };
    match style.theme() {
        None => text,
        Some(theme) if ok => paint(&[Span::new(text, Ink::fg(theme.colors.tool_ok))]),
        Some(theme) => paint(&[Span::new(text, Ink::fg(theme.colors.tool_error))]),
    }
}

/// The count in a diff's closing `… N more lines`.
fn more_lines(line: &str) -> Option<usize> {
    line.strip_prefix("… ")?
        .strip_suffix(" more lines")?
        .parse()
        .ok()
}

/// `⏵ Allow <display>` in the warning style, broken into lines of at most `width` columns
/// between any two characters: every character of `display` (an approval's full, escaped
/// call, which starts with the tool's name) is on screen and every space kept, however
/// long it is.
pub fn approval_head(display: &str, width: usize, style: &RenderStyle) -> Vec<String> {
    let text = format!("⏵ Allow {display}");
    let text = strip_controls(&text);
    let ink = style
        .theme()
        .map_or_else(Ink::default, |t| Ink::fg(t.colors.warning).bold());
    hard_wrap(&[Span::new(text.as_ref(), ink)], width.max(MIN_WIDTH))
        .iter()
        .map(|line| paint(line))
        .collect()
}

/// A unified diff with added lines green, removed red, hunk headers cyan and file headers
/// bold (colours from the theme). More than `max_lines` lines are cut, ending with
/// `… N more lines`, N counting every line hidden: those cut here and those the diff
/// itself already summarised in its last line (see `tools::diff::truncate_lines`).
pub fn render_diff(diff: &str, style: &RenderStyle, max_lines: usize) -> Vec<String> {
    // The diff shows content the model wrote.
    let diff = strip_controls(diff);
    let mut lines: Vec<&str> = diff.lines().collect();
    let summarised = match lines.last().and_then(|l| more_lines(l)) {
        Some(n) if lines.len() > max_lines => {
            lines.pop();
            n
        }
        _ => 0,
    };
    let shown = lines.len().min(max_lines);
    let theme = style.theme();
    let mut out: Vec<String> = lines[..shown]
        .iter()
        .map(|line| match theme {
            None => line.to_string(),
            Some(theme) => {
                let c = &theme.colors;
                let ink = if line.starts_with("+++")
                    || line.starts_with("---")
                    || line.starts_with("diff ")
                    || line.starts_with("index ")
                {
                    Ink::fg(c.diff_header).bold()
                } else if line.starts_with('+') {
                    Ink::fg(c.diff_add)
                } else if line.starts_with('-') {
                    Ink::fg(c.diff_del)
                } else if line.starts_with("@@") {
                    Ink::fg(c.diff_hunk)
                } else {
                    Ink::default()
                };
                paint(&[Span::new(*line, ink)])
            }
        })
        .collect();
    let hidden = lines.len() - shown + summarised;
    if hidden > 0 {
        let plural = if hidden == 1 { "line" } else { "lines" };
        let note = format!("… {hidden} more {plural}");
        out.push(match theme {
            None => note,
            Some(theme) => paint(&[Span::new(note, Ink::fg(theme.colors.dim))]),
        });
    }
    out
}
