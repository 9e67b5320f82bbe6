//! Fenced code blocks, highlighted with syntect one line at a time as lines complete.
//!
//! The syntax and theme sets take tens of milliseconds to load, so they are loaded on the
//! first code block, not at startup (aichat's lesson: a REPL that starts in 2 ms).

use std::sync::OnceLock;

use crossterm::style::Color;
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme as SyntaxTheme, ThemeSet};
use syntect::parsing::SyntaxSet;

use super::paint::{Ink, Span};

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn themes() -> &'static ThemeSet {
    static SET: OnceLock<ThemeSet> = OnceLock::new();
    SET.get_or_init(ThemeSet::load_defaults)
}

/// The highlighting state of one open code block.
pub(crate) struct CodeHighlighter {
    /// `None` when the theme is missing: lines are then shown uncoloured.
    lines: Option<HighlightLines<'static>>,
}

impl CodeHighlighter {
    /// `lang` is the fence's info word (`rust`, `py`, `json`…); an unknown or empty one
    /// highlights as plain text.
    pub fn new(lang: &str, syntax_theme: &str) -> Self {
        let set = syntaxes();
        let syntax = set
            .find_syntax_by_token(lang)
            .unwrap_or_else(|| set.find_syntax_plain_text());
        let theme: Option<&'static SyntaxTheme> = themes().themes.get(syntax_theme);
        CodeHighlighter {
            lines: theme.map(|theme| HighlightLines::new(syntax, theme)),
        }
    }

    /// Highlights one line (without its newline). The parser state carries over, so a
    /// string or comment spanning lines stays coloured.
    pub fn line(&mut self, line: &str) -> Vec<Span> {
        // Tabs have no fixed width in a terminal; four columns is what editors show.
        let line = line.replace('\t', "    ");
        let Some(lines) = self.lines.as_mut() else {
            return vec![Span::plain(line)];
        };
        let with_newline = format!("{line}\n");
        match lines.highlight_line(&with_newline, syntaxes()) {
            Ok(regions) => regions
                .into_iter()
                .map(|(style, text)| Span::new(text.trim_end_matches('\n'), ink_of(style)))
                .filter(|span| !span.text.is_empty())
                .collect(),
            // A syntax definition failing on odd input must not lose the line.
            Err(_) => vec![Span::plain(line)],
        }
    }
}

fn ink_of(style: syntect::highlighting::Style) -> Ink {
    let fg = style.foreground;
    Ink {
        fg: Some(Color::Rgb {
            r: fg.r,
            g: fg.g,
            b: fg.b,
        }),
        bold: style.font_style.contains(FontStyle::BOLD),
        italic: style.font_style.contains(FontStyle::ITALIC),
        underline: style.font_style.contains(FontStyle::UNDERLINE),
        ..Ink::default()
    }
}
