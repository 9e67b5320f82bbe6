//! Markdown and tool-output rendering for the terminal (behaviour: `doc/rendering.md`).
//!
//! Everything here turns text into finished terminal lines (no trailing newline) and
//! never writes to the terminal itself, so the REPL decides when to print and the tests
//! can snapshot exactly what a person would see.

mod blocks;
mod code;
mod inline;
mod markdown;
pub(crate) mod paint;
mod table;
mod tool;

#[cfg(test)]
mod tests;

use std::io::IsTerminal;
use std::sync::Arc;

pub use markdown::MarkdownStream;
pub use paint::ColorDepth;
pub(crate) use paint::str_width;
pub use tool::{approval_head, render_diff, tool_line, tool_result_line};

use crate::repl::theme::Theme;
use crate::tools::terminal_text::strip_controls;
use paint::{Ink, Span, paint};

/// Whether output gets colours and markdown rendering, and in which theme.
#[derive(Debug, Clone)]
pub enum RenderStyle {
    /// No escape codes at all; markdown is passed through as written.
    Plain,
    Styled(Arc<Theme>),
}

impl RenderStyle {
    pub fn styled(theme: Theme) -> Self {
        RenderStyle::Styled(Arc::new(theme))
    }

    /// Plain when `TERM=dumb` or stdout is not a terminal; styled with `theme` otherwise.
    /// The colours follow the terminal: none with `NO_COLOR` (set and not empty, per
    /// no-color.org: bold, lists and tables stay), 24-bit when `COLORTERM` says so, the
    /// 256-colour palette otherwise. The one place the environment is read for it.
    pub fn detect(theme: Theme) -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let term = std::env::var("TERM").ok();
        let colorterm = std::env::var("COLORTERM").ok();
        paint::set_color_depth(Self::color_depth(no_color, colorterm.as_deref()));
        Self::choose(term.as_deref(), std::io::stdout().is_terminal(), theme)
    }

    /// Styled or plain, the decision of [`RenderStyle::detect`] with the environment passed in.
    pub fn choose(term: Option<&str>, stdout_is_tty: bool, theme: Theme) -> Self {
        if term == Some("dumb") || !stdout_is_tty {
            RenderStyle::Plain
        } else {
            RenderStyle::styled(theme)
        }
    }

    /// A dumb terminal (`TERM=dumb`: Emacs' shell, IDE consoles) often reports no size, or
    /// not its width: answers are wrapped at `$COLUMNS` there, else at 80.
    pub fn dumb_terminal_width() -> Option<u16> {
        if std::env::var("TERM").ok()? != "dumb" {
            return None;
        }
        let columns = std::env::var("COLUMNS").ok();
        let columns = columns.and_then(|c| c.trim().parse::<u16>().ok());
        Some(columns.filter(|w| *w >= 20).unwrap_or(80))
    }

    /// Whether the terminal reflows its rows when it gets narrower (a row longer than the
    /// new width becomes several): tmux, and the terminals of today (VTE, kitty, iTerm2,
    /// Alacritty, WezTerm, Windows Terminal, Konsole) do; xterm, GNU screen and the Linux
    /// console cut the rows instead. The live area erases by counting rows, so it needs to
    /// know which.
    pub fn terminal_reflows() -> bool {
        let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
        let term = std::env::var("TERM").unwrap_or_default();
        if set("TMUX") {
            return true;
        }
        !(set("XTERM_VERSION") || term == "linux" || term.starts_with("screen"))
    }

    /// How many colours, from `NO_COLOR` and `COLORTERM`.
    pub fn color_depth(no_color: bool, colorterm: Option<&str>) -> ColorDepth {
        match colorterm.map(str::trim) {
            _ if no_color => ColorDepth::None,
            Some("truecolor" | "24bit") => ColorDepth::TrueColor,
            _ => ColorDepth::Palette256,
        }
    }

    pub fn is_plain(&self) -> bool {
        matches!(self, RenderStyle::Plain)
    }

    /// Secondary text (hints, status lines) in the theme's dim colour.
    pub fn dim(&self, text: &str) -> String {
        self.role(text, |t| Ink::fg(t.colors.dim))
    }

    /// A warning the person should notice (an approval prompt, a fallback).
    pub fn warn(&self, text: &str) -> String {
        self.role(text, |t| Ink::fg(t.colors.warning).bold())
    }

    /// An error line.
    pub fn error(&self, text: &str) -> String {
        self.role(text, |t| Ink::fg(t.colors.tool_error))
    }

    /// The prompt's text (use only where escape codes may appear, e.g. printed lines).
    pub fn prompt(&self, text: &str) -> String {
        self.role(text, |t| Ink::fg(t.colors.prompt).bold())
    }

    /// Every styled one-liner (errors, warnings, hints, approval cards) passes here, and
    /// many quote the model: control sequences are stripped so only ours reach the screen.
    fn role(&self, text: &str, ink: impl Fn(&Theme) -> Ink) -> String {
        let text = strip_controls(text);
        let text = text.as_ref();
        match self.theme() {
            None => text.to_string(),
            Some(theme) => paint(&[Span::new(text, ink(theme))]),
        }
    }

    /// The theme, or `None` in plain mode.
    pub fn theme(&self) -> Option<&Theme> {
        match self {
            RenderStyle::Plain => None,
            RenderStyle::Styled(theme) => Some(theme),
        }
    }
}

/// `text` (one line, no escape codes) wrapped at word boundaries into rows of at most
/// `width` columns, its leading indentation repeated on each row; a word longer than a row
/// is broken between characters.
pub fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let body = text.trim_start_matches(' ');
    let indent = [Span::plain(&text[..text.len() - body.len()])];
    paint::wrap(&[Span::plain(body)], width, &indent, &indent)
        .iter()
        .map(|row| row.iter().map(|span| span.text.as_str()).collect())
        .collect()
}

/// One line of reasoning ("thinking") text, dimmed and in italics so it reads as an aside.
/// Callers that hide reasoning simply don't call this.
pub fn render_thinking(line: &str, style: &RenderStyle) -> String {
    let line = strip_controls(line);
    let line = line.as_ref();
    match style.theme() {
        None => line.to_string(),
        Some(theme) => paint(&[Span::new(
            line,
            Ink::fg(theme.colors.thinking).dim().italic(),
        )]),
    }
}
