//! The streaming markdown renderer. Completed source lines are rendered and returned; of
//! the open line (a paragraph still streaming, with no newline yet) the wrapped rows that can
//! no longer change are returned as they fill, and the row still filling is offered as a
//! [`MarkdownStream::tail`] for the view to redraw. Nothing returned is ever redrawn.
//!
//! Appending text to a line only changes its last wrapped row (earlier rows end in a break
//! after a complete word), so every row but the last is final — unless an inline marker
//! (`**`, `` ` ``) is still open: closing it would restyle earlier rows, so those rows wait
//! (up to [`HELD_ROWS`]) until it closes.
//!
//! Each source line is rendered on its own (a soft line break stays a break) because
//! joining it with the next would mean holding text back until the paragraph ends. The
//! exceptions are tables, buffered whole, and a `|` line, held until the next line says
//! whether it starts a table.

use std::sync::Arc;

use super::code::CodeHighlighter;
use super::inline::{closers, inline};
use super::paint::{Ink, Span, hard_wrap, paint, str_width, wrap};
use super::table::{Table, delimiter_row, is_row, split_row};
use super::{RenderStyle, blocks};
use crate::repl::theme::Theme;
use crate::tools::terminal_text::strip_controls;

/// Narrower than this, wrapping produces more noise than text; we let the terminal wrap.
const MIN_WIDTH: usize = 20;

/// Rows of the open line held back while an inline marker is open; past this they are
/// returned anyway, so the part redrawn in place stays small.
pub const HELD_ROWS: usize = 6;

/// Renders a markdown answer as it streams in. See the module docs.
pub struct MarkdownStream {
    /// `None` in plain mode: lines are returned as written.
    theme: Option<Arc<Theme>>,
    width: usize,
    /// The incomplete last line.
    open_line: String,
    block: Block,
    /// A `|` line that starts a table if the next line is a delimiter row.
    pending_row: Option<String>,
    /// Open list items, outermost first.
    lists: Vec<ListLevel>,
    /// Wrapped rows of the open line already returned (final rows of a paragraph still
    /// streaming); when the line completes, its rendering skips them.
    open_rows_shown: usize,
    /// A new width asked for while rows of the open line were out: it applies from the
    /// next line, so the open line keeps the width its first rows were wrapped at.
    next_width: Option<usize>,
    /// Plain mode: the fence of the code block the lines are in (they are not wrapped).
    plain_fence: Option<(char, usize)>,
}

enum Block {
    Text,
    Code {
        fence: char,
        fence_len: usize,
        highlighter: CodeHighlighter,
    },
    Table(Table),
}

#[derive(Clone)]
struct ListLevel {
    /// Columns of indentation of the marker in the source.
    source_indent: usize,
    /// Where the item's text starts on screen, for wrapped and continuation lines.
    hang: usize,
}

impl MarkdownStream {
    /// `width` is the terminal's width in columns.
    pub fn new(style: RenderStyle, width: u16) -> Self {
        let theme = match style {
            RenderStyle::Plain => None,
            RenderStyle::Styled(theme) => Some(theme),
        };
        MarkdownStream {
            theme,
            width: usize::from(width).max(MIN_WIDTH),
            open_line: String::new(),
            block: Block::Text,
            pending_row: None,
            lists: Vec::new(),
            open_rows_shown: 0,
            next_width: None,
            plain_fence: None,
        }
    }

    /// Takes effect from the next rendered line (after the open line, when rows of it are
    /// out already); what was returned stays as it was.
    pub fn set_width(&mut self, width: u16) {
        let width = usize::from(width).max(MIN_WIDTH);
        if self.open_rows_shown > 0 {
            self.next_width = Some(width);
        } else {
            self.width = width;
        }
    }

    /// Feeds a chunk of the answer; returns the terminal lines completed by it, and the
    /// rows of the open line that became final.
    pub fn push(&mut self, chunk: &str) -> Vec<String> {
        let mut out = Vec::new();
        for piece in chunk.split_inclusive('\n') {
            match piece.strip_suffix('\n') {
                Some(rest) => {
                    self.open_line.push_str(rest);
                    let line = std::mem::take(&mut self.open_line);
                    self.complete_open_line(line.strip_suffix('\r').unwrap_or(&line), &mut out);
                }
                None => self.open_line.push_str(piece),
            }
        }
        self.release_final_rows(&mut out);
        out
    }

    /// Returns the rows of the open line that can no longer change. Those are the rows
    /// before the one holding the start of the last word: the last word may still grow,
    /// and a word grown too long for a row is broken across rows starting on the row before
    /// (`and a very-long-identifier…`), so that row is not final either. Rendering the
    /// line up to its last word gives exactly the final rows, plus that one.
    fn release_final_rows(&mut self, out: &mut Vec<String>) {
        let Some(cut) = self.open_line.trim_end().rfind(char::is_whitespace) else {
            return;
        };
        let settled_text = &self.open_line[..cut];
        let closing = closed(settled_text);
        let Some(rows) = self.rows_of(&closing) else {
            return;
        };
        // Only with a marker open is the whole line rendered once more, to bound the wait.
        let settled = inline_markers_closed(settled_text)
            || self
                .open_line_rows()
                .is_some_and(|rows| rows.len() > HELD_ROWS);
        let mut last = rows.len().saturating_sub(1);
        // A closer that shows (a backtick without colours) widens the last word, which may
        // then start a row of its own while the text as written keeps it on the row before:
        // that row is not final either.
        if closing.len() > settled_text.trim_end().len()
            && let Some(raw) = self.rows_of(settled_text)
        {
            last = last.min(raw.len().saturating_sub(1));
        }
        if settled && last > self.open_rows_shown {
            out.extend(rows[self.open_rows_shown..last].iter().cloned());
            self.open_rows_shown = last;
        }
    }

    /// The rows of the open line not returned yet (the one still filling, and any held
    /// back while a marker is open), for the view to show in place until they are final.
    /// Empty outside paragraphs (code, tables) and in plain mode.
    pub fn tail(&self) -> Vec<String> {
        self.open_line_rows()
            .map(|rows| rows.into_iter().skip(self.open_rows_shown).collect())
            .unwrap_or_default()
    }

    /// Renders the line that just completed, without the rows of it already returned.
    fn complete_open_line(&mut self, line: &str, out: &mut Vec<String>) {
        let mut rows = Vec::new();
        self.line(line, &mut rows);
        let shown = std::mem::take(&mut self.open_rows_shown).min(rows.len());
        out.extend(rows.into_iter().skip(shown));
        if let Some(width) = self.next_width.take() {
            self.width = width;
        }
    }

    /// The open line as it would render now, when it is paragraph text (not code, a table
    /// row, or a fence that opens a block); `None` otherwise and in plain mode.
    /// Markers still open are rendered closed (see [`closed`]), as the rows returned were.
    fn open_line_rows(&self) -> Option<Vec<String>> {
        self.rows_of(&closed(&self.open_line))
    }

    /// How `line` would render as the next paragraph line (see [`Self::open_line_rows`]).
    fn rows_of(&self, line: &str) -> Option<Vec<String>> {
        let line = strip_controls(line);
        let line = line.as_ref();
        let is_text = matches!(self.block, Block::Text) && self.pending_row.is_none();
        if self.theme.is_none()
            || !is_text
            || line.trim().is_empty()
            || is_row(line)
            || blocks::opens_fence(line).is_some()
        {
            return None;
        }
        let mut scratch = MarkdownStream {
            theme: self.theme.clone(),
            width: self.width,
            open_line: String::new(),
            block: Block::Text,
            pending_row: None,
            lists: self.lists.clone(),
            open_rows_shown: 0,
            next_width: None,
            plain_fence: None,
        };
        let mut rows = Vec::new();
        scratch.text_line(line, &mut rows);
        Some(rows)
    }

    /// Ends the answer: renders the open line and anything buffered (a table), and resets
    /// the stream for the next answer.
    pub fn finish(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.open_line.is_empty() {
            let line = std::mem::take(&mut self.open_line);
            self.complete_open_line(&line, &mut out);
        }
        self.open_rows_shown = 0;
        if let Some(row) = self.pending_row.take() {
            self.text_line(&row, &mut out);
        }
        self.end_table(&mut out);
        self.block = Block::Text;
        self.plain_fence = None;
        self.lists.clear();
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<String>) {
        // Every source line comes through here, whole (an escape sequence split across
        // tokens is whole again): the model's text loses its control sequences before it is
        // laid out, so the renderer's own styling is the only escape output.
        let line = strip_controls(line);
        let line = line.as_ref();
        if self.theme.is_none() {
            self.plain_line(line, out);
            return;
        }
        match &mut self.block {
            Block::Code {
                fence,
                fence_len,
                highlighter,
            } => {
                if blocks::closes_fence(line, *fence, *fence_len) {
                    self.block = Block::Text;
                } else {
                    let spans = highlighter.line(line);
                    out.extend(hard_wrap(&spans, self.width).iter().map(|l| paint(l)));
                }
                return;
            }
            Block::Table(table) if is_row(line) => {
                table.rows.push(split_row(line));
                return;
            }
            Block::Table(_) => self.end_table(out),
            Block::Text => {}
        }
        if let Some(previous) = self.pending_row.take() {
            if let Some(aligns) = delimiter_row(line) {
                let header = split_row(&previous);
                self.block = Block::Table(Table {
                    header,
                    aligns,
                    rows: Vec::new(),
                });
                return;
            }
            self.text_line(&previous, out);
        }
        if is_row(line) {
            self.pending_row = Some(line.to_string());
            return;
        }
        self.text_line(line, out);
    }

    /// Plain mode (`TERM=dumb`): the text as written, wrapped at word boundaries (a list
    /// item's rows under its text); code blocks and table rows as they are, where a break
    /// would change what they say.
    fn plain_line(&mut self, line: &str, out: &mut Vec<String>) {
        if let Some((fence, fence_len)) = self.plain_fence {
            if blocks::closes_fence(line, fence, fence_len) {
                self.plain_fence = None;
            }
            out.push(line.to_string());
            return;
        }
        if let Some((fence, fence_len, _)) = blocks::opens_fence(line) {
            self.plain_fence = Some((fence, fence_len));
        }
        if self.plain_fence.is_some() || is_row(line) || str_width(line) <= self.width {
            out.push(line.to_string());
            return;
        }
        let indent = blocks::indent_of(line);
        let hang = match blocks::list_item(line) {
            Some(item) => indent + item.number.map_or(1, |n| n.len()) + 1,
            None => indent,
        };
        let first = [Span::plain(" ".repeat(indent))];
        let rest = [Span::plain(" ".repeat(hang))];
        let rows = wrap(&[Span::plain(line.trim_start())], self.width, &first, &rest);
        out.extend(rows.iter().map(|row| paint(row)));
    }

    fn end_table(&mut self, out: &mut Vec<String>) {
        if let Block::Table(table) = std::mem::replace(&mut self.block, Block::Text)
            && let Some(theme) = &self.theme
        {
            out.extend(table.render(self.width, &theme.colors));
        }
    }

    /// Renders one line outside code blocks and tables.
    fn text_line(&mut self, line: &str, out: &mut Vec<String>) {
        let Some(theme) = self.theme.clone() else {
            out.push(line.to_string());
            return;
        };
        let colors = &theme.colors;
        let emit = |lines: Vec<Vec<Span>>, out: &mut Vec<String>| {
            out.extend(lines.iter().map(|l| paint(l)));
        };
        if line.trim().is_empty() {
            out.push(String::new());
            return;
        }
        if let Some((fence, fence_len, lang)) = blocks::opens_fence(line) {
            self.block = Block::Code {
                fence,
                fence_len,
                highlighter: CodeHighlighter::new(lang, &theme.syntax_theme),
            };
            return;
        }
        if blocks::is_rule(line) {
            self.lists.clear();
            let rule = "─".repeat(self.width);
            out.push(paint(&[Span::new(rule, Ink::fg(colors.dim))]));
            return;
        }
        if let Some((level, text)) = blocks::heading(line) {
            self.lists.clear();
            let mut ink = Ink::fg(colors.heading).bold();
            ink.underline = level == 1;
            emit(wrap(&inline(text, ink, colors), self.width, &[], &[]), out);
            return;
        }
        if let Some((depth, text)) = blocks::quote(line) {
            let bar = vec![Span::new("│ ", Ink::fg(colors.quote)); depth];
            let ink = Ink::fg(colors.quote).italic();
            emit(
                wrap(&inline(text, ink, colors), self.width, &bar, &bar),
                out,
            );
            return;
        }
        if let Some(item) = blocks::list_item(line) {
            let (first, rest) = self.list_prefixes(&item, &theme);
            let spans = inline(&item.text, Ink::default(), colors);
            emit(wrap(&spans, self.width, &first, &rest), out);
            return;
        }
        let indent = blocks::indent_of(line);
        let hang = self.continuation_hang(indent);
        let prefix = [Span::plain(" ".repeat(hang))];
        let spans = inline(line.trim_start(), Ink::default(), colors);
        emit(wrap(&spans, self.width, &prefix, &prefix), out);
    }

    /// Places a list item in the open lists (by its source indentation) and returns the
    /// prefix of its first line (indent, bullet or number) and of its wrapped lines.
    fn list_prefixes(&mut self, item: &blocks::ListItem, theme: &Theme) -> (Vec<Span>, Vec<Span>) {
        while self
            .lists
            .last()
            .is_some_and(|l| l.source_indent >= item.indent)
        {
            self.lists.pop();
        }
        let depth = self.lists.len();
        let marker = match &item.number {
            Some(number) => number.clone(),
            None => ["•", "◦", "▪"][depth % 3].to_string(),
        };
        let indent = "  ".repeat(depth);
        let hang = str_width(&indent) + str_width(&marker) + 1;
        self.lists.push(ListLevel {
            source_indent: item.indent,
            hang,
        });
        let first = vec![
            Span::plain(indent),
            Span::new(marker, Ink::fg(theme.colors.list_bullet)),
            Span::plain(" "),
        ];
        (first, vec![Span::plain(" ".repeat(hang))])
    }

    /// An indented line inside a list continues the deepest item it is indented under;
    /// an unindented one ends all lists.
    fn continuation_hang(&mut self, indent: usize) -> usize {
        if indent == 0 {
            self.lists.clear();
            return 0;
        }
        while self.lists.last().is_some_and(|l| l.source_indent >= indent) {
            self.lists.pop();
        }
        self.lists.last().map_or(0, |l| l.hang)
    }
}

/// `text` (the open line, or its part before the last word) with the inline markers still
/// open closed at its end. Its rows then read as they will once the model closes them: a
/// row returned while a code span is open shows the span's words as code, not a raw
/// backtick that the line's final rendering (without it) would lay out differently.
fn closed(text: &str) -> String {
    let text = text.trim_end();
    format!("{text}{}", closers(text))
}

/// Whether every inline construct the renderer pairs up is closed in `text`: an even number
/// of backticks, `**`, `__` and `~~`, no `[` without its `]`, no `](` or `<` without its
/// closing `)` or `>`. Only then are its wrapped rows final (a link's text and target
/// render differently once closed).
fn inline_markers_closed(text: &str) -> bool {
    let after = |open: &str, close: char| {
        text.rfind(open)
            .is_none_or(|at| text[at + open.len()..].contains(close))
    };
    text.matches('`').count().is_multiple_of(2)
        && ["**", "__", "~~"]
            .iter()
            .all(|marker| text.matches(marker).count().is_multiple_of(2))
        && after("[", ']')
        && after("](", ')')
        && after("<", '>')
}
