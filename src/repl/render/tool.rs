//! One-line tool calls and results, and coloured unified diffs for `Edit`/`Write`.

use super::RenderStyle;
use super::paint::{Ink, Span, paint};

/// `⏺ Read src/main.rs (1-120)`: the tool name in bold, the marker in the tool colour.
pub fn tool_line(summary: &str, style: &RenderStyle) -> String {
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

/// A unified diff with added lines green, removed red, hunk headers cyan and file headers
/// bold (colours from the theme). More than `max_lines` lines are cut, ending with
/// `… N more lines`.
pub fn render_diff(diff: &str, style: &RenderStyle, max_lines: usize) -> Vec<String> {
    let lines: Vec<&str> = diff.lines().collect();
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
    let hidden = lines.len() - shown;
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
