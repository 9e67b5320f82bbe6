//! The streaming markdown renderer: newline-gated, so only completed source lines are
//! rendered and returned; the open line is held back and nothing returned is ever redrawn.
//!
//! Each source line is rendered on its own (a soft line break stays a break) because
//! joining it with the next would mean holding text back until the paragraph ends. The
//! exceptions are tables, buffered whole, and a `|` line, held until the next line says
//! whether it starts a table.

use std::sync::Arc;

use super::code::CodeHighlighter;
use super::inline::inline;
use super::paint::{Ink, Span, hard_wrap, paint, str_width, wrap};
use super::table::{Table, delimiter_row, is_row, split_row};
use super::{RenderStyle, blocks};
use crate::repl::theme::Theme;
use crate::tools::terminal_text::strip_controls;

/// Narrower than this, wrapping produces more noise than text; we let the terminal wrap.
const MIN_WIDTH: usize = 20;

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
        }
    }

    /// Takes effect from the next rendered line; what was returned stays as it was.
    pub fn set_width(&mut self, width: u16) {
        self.width = usize::from(width).max(MIN_WIDTH);
    }

    /// Feeds a chunk of the answer; returns the terminal lines completed by it.
    pub fn push(&mut self, chunk: &str) -> Vec<String> {
        let mut out = Vec::new();
        for piece in chunk.split_inclusive('\n') {
            match piece.strip_suffix('\n') {
                Some(rest) => {
                    self.open_line.push_str(rest);
                    let line = std::mem::take(&mut self.open_line);
                    self.line(line.strip_suffix('\r').unwrap_or(&line), &mut out);
                }
                None => self.open_line.push_str(piece),
            }
        }
        out
    }

    /// Ends the answer: renders the open line and anything buffered (a table), and resets
    /// the stream for the next answer.
    pub fn finish(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.open_line.is_empty() {
            let line = std::mem::take(&mut self.open_line);
            self.line(&line, &mut out);
        }
        if let Some(row) = self.pending_row.take() {
            self.text_line(&row, &mut out);
        }
        self.end_table(&mut out);
        self.block = Block::Text;
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
            out.push(line.to_string());
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
