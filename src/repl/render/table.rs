//! GitHub-style tables. Column widths depend on every row, so the stream buffers a table
//! until its first non-table line and then renders it at once, in box-drawing borders.
//! Too wide for the terminal: the widest columns shrink and their cells wrap.

use super::inline::inline;
use super::paint::{Ink, Span, paint, spans_width, wrap};
use crate::repl::theme::Colors;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Center,
    Right,
}

/// A table being received: the header and body rows as source cells.
#[derive(Debug, Default)]
pub(crate) struct Table {
    pub header: Vec<String>,
    pub aligns: Vec<Align>,
    pub rows: Vec<Vec<String>>,
}

/// Whether `line` can be a table row (LLMs always write the leading pipe; requiring it
/// keeps prose with a `|` in it from being held back).
pub(crate) fn is_row(line: &str) -> bool {
    line.trim_start().starts_with('|')
}

/// Cells of a row: outer pipes dropped, split on pipes outside code spans and escapes.
pub(crate) fn split_row(line: &str) -> Vec<String> {
    let trimmed = line.trim();
    let inner = trimmed.strip_prefix('|').unwrap_or(trimmed);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut in_code = false;
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('|') => cell.push('|'),
                Some(next) => {
                    cell.push('\\');
                    cell.push(next);
                }
                None => cell.push('\\'),
            },
            '`' => {
                in_code = !in_code;
                cell.push(c);
            }
            '|' if !in_code => cells.push(std::mem::take(&mut cell).trim().to_string()),
            _ => cell.push(c),
        }
    }
    cells.push(cell.trim().to_string());
    cells
}

/// The alignments of a delimiter row (`|:--|:-:|--:|`), or `None` if it isn't one.
pub(crate) fn delimiter_row(line: &str) -> Option<Vec<Align>> {
    if !is_row(line) {
        return None;
    }
    split_row(line)
        .iter()
        .map(|cell| {
            let left = cell.starts_with(':');
            let right = cell.ends_with(':');
            let dashes = cell.trim_matches(':');
            if dashes.is_empty() || !dashes.chars().all(|c| c == '-') {
                return None;
            }
            Some(match (left, right) {
                (true, true) => Align::Center,
                (false, true) => Align::Right,
                _ => Align::Left,
            })
        })
        .collect()
}

/// Column widths within `available` columns: a column narrower than its fair share keeps
/// its natural width, the rest split what remains evenly (never below 3).
/// A column squeezed narrower than this (and narrower than its content) reads as noise.
const MIN_READABLE: usize = 10;

/// The table for a narrow terminal: each row a block of `Header: value` lines (wrapped,
/// continuation lines indented), rows separated by a short rule.
fn stacked(
    header: &[Vec<Span>],
    body: &[Vec<Vec<Span>>],
    width: usize,
    border: Ink,
) -> Vec<String> {
    let mut out = Vec::new();
    for (n, row) in body.iter().enumerate() {
        if n > 0 {
            out.push(paint(&[Span::new("─".repeat(width.min(20)), border)]));
        }
        for (name, cell) in header.iter().zip(row) {
            let mut spans = name.clone();
            spans.push(Span::plain(": "));
            spans.extend(cell.iter().cloned());
            let hang = [Span::plain("  ")];
            out.extend(wrap(&spans, width, &[], &hang).iter().map(|l| paint(l)));
        }
    }
    out
}

fn fit_columns(natural: &[usize], available: usize) -> Vec<usize> {
    if natural.iter().sum::<usize>() <= available {
        return natural.to_vec();
    }
    let mut widths = vec![0; natural.len()];
    let mut open: Vec<usize> = (0..natural.len()).collect();
    let mut left = available;
    loop {
        let share = left / open.len().max(1);
        let (fits, rest): (Vec<usize>, Vec<usize>) =
            open.iter().partition(|&&i| natural[i] <= share);
        if fits.is_empty() {
            let extra = left.saturating_sub(share * rest.len());
            for (n, &i) in rest.iter().enumerate() {
                widths[i] = (share + usize::from(n < extra)).max(3);
            }
            return widths;
        }
        for &i in &fits {
            widths[i] = natural[i];
            left -= natural[i];
        }
        open = rest;
        if open.is_empty() {
            return widths;
        }
    }
}

impl Table {
    /// Renders the whole table for a terminal `width` columns wide.
    pub fn render(&self, width: usize, colors: &Colors) -> Vec<String> {
        let cols = self.header.len().max(1);
        let cell_spans = |cells: &[String], header: bool| -> Vec<Vec<Span>> {
            let base = if header {
                Ink::default().bold()
            } else {
                Ink::default()
            };
            (0..cols)
                .map(|i| inline(cells.get(i).map_or("", String::as_str), base, colors))
                .collect()
        };
        let header = cell_spans(&self.header, true);
        let body: Vec<Vec<Vec<Span>>> = self.rows.iter().map(|r| cell_spans(r, false)).collect();
        let mut natural = vec![1; cols];
        for row in std::iter::once(&header).chain(&body) {
            for (i, cell) in row.iter().enumerate() {
                natural[i] = natural[i].max(spans_width(cell));
            }
        }
        // Each column costs its width plus a space each side and one border.
        let available = width.saturating_sub(3 * cols + 1);
        let widths = fit_columns(&natural, available);
        let border = Ink::fg(colors.table_border);
        // Squeezed below a readable width, a grid breaks every word into pieces: each row
        // becomes a block of `Header: value` lines instead.
        let squeezed = widths
            .iter()
            .zip(&natural)
            .any(|(&w, &n)| w < n && w < MIN_READABLE);
        if squeezed {
            return stacked(&header, &body, width, border);
        }
        let rule = |l: &str, m: &str, r: &str| {
            let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
            paint(&[Span::new(format!("{l}{}{r}", parts.join(m)), border)])
        };
        let mut out = vec![rule("┌", "┬", "┐")];
        out.extend(self.row_lines(&header, &widths, border));
        out.push(rule("├", "┼", "┤"));
        for row in &body {
            out.extend(self.row_lines(row, &widths, border));
        }
        out.push(rule("└", "┴", "┘"));
        out
    }

    fn row_lines(&self, cells: &[Vec<Span>], widths: &[usize], border: Ink) -> Vec<String> {
        let wrapped: Vec<Vec<Vec<Span>>> = cells
            .iter()
            .zip(widths)
            .map(|(cell, &w)| wrap(cell, w, &[], &[]))
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        (0..height)
            .map(|line| {
                let mut spans = vec![Span::new("│", border)];
                for (i, cell) in wrapped.iter().enumerate() {
                    let content = cell.get(line).cloned().unwrap_or_default();
                    let pad = widths[i].saturating_sub(spans_width(&content));
                    let align = self.aligns.get(i).copied().unwrap_or(Align::Left);
                    let (before, after) = match align {
                        Align::Left => (0, pad),
                        Align::Right => (pad, 0),
                        Align::Center => (pad / 2, pad - pad / 2),
                    };
                    spans.push(Span::plain(" ".repeat(before + 1)));
                    spans.extend(content);
                    spans.push(Span::plain(" ".repeat(after + 1)));
                    spans.push(Span::new("│", border));
                }
                paint(&spans)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_split_on_pipes_outside_code_and_escapes() {
        assert_eq!(
            split_row("| a | `b|c` | d\\|e |"),
            vec!["a", "`b|c`", "d|e"]
        );
        assert_eq!(
            delimiter_row("|:--|:-:|--:|---|"),
            Some(vec![Align::Left, Align::Center, Align::Right, Align::Left])
        );
        assert_eq!(delimiter_row("| a | b |"), None);
    }

    #[test]
    fn columns_shrink_widest_first() {
        assert_eq!(fit_columns(&[5, 10], 20), vec![5, 10]);
        assert_eq!(fit_columns(&[5, 40, 30], 35), vec![5, 15, 15]);
        assert_eq!(fit_columns(&[1, 1, 1], 0), vec![3, 3, 3]);
    }
}
