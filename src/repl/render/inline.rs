//! Inline markdown within one line: emphasis, strong, strikethrough, code spans, links,
//! autolinks and bare URLs, and backslash escapes.
//!
//! Hand-rolled rather than termimad's `minimad` because minimad has no links, and the
//! stream renders one source line at a time: a delimiter only opens when its closer is on
//! the same line, otherwise it is shown literally (an unmatched `*` stays a `*`).

use super::paint::{ColorDepth, Ink, Span, color_depth};
use crate::repl::theme::Colors;

/// Renders the inline markdown of `text` into runs, starting from `base`.
pub(crate) fn inline(text: &str, base: Ink, colors: &Colors) -> Vec<Span> {
    inline_at(text, base, colors, color_depth())
}

/// [`inline`] at a given colour depth: without colours (`NO_COLOR`) a code span keeps its
/// backticks, the one mark that sets it apart from prose without an escape code.
pub(crate) fn inline_at(text: &str, base: Ink, colors: &Colors, depth: ColorDepth) -> Vec<Span> {
    let mut p = Inline {
        keep_ticks: depth == ColorDepth::None,
        text,
        pos: 0,
        prev: None,
        out: Vec::new(),
        buf: String::new(),
        base,
        colors,
        bold: false,
        italic: false,
        strike: false,
    };
    while p.pos < text.len() {
        p.step();
    }
    p.flush();
    p.out
}

struct Inline<'a> {
    text: &'a str,
    pos: usize,
    /// The character before `pos`, for word-boundary rules of `_` and flanking spaces.
    prev: Option<char>,
    out: Vec<Span>,
    /// Literal text in the current ink, not yet pushed to `out`.
    buf: String,
    base: Ink,
    colors: &'a Colors,
    bold: bool,
    italic: bool,
    strike: bool,
    /// Whether code spans are shown with their backticks (no colour to mark them).
    keep_ticks: bool,
}

impl Inline<'_> {
    fn ink(&self) -> Ink {
        let mut ink = self.base;
        if self.bold {
            ink.bold = true;
            ink.fg = ink.fg.or(Some(self.colors.strong));
        }
        if self.italic {
            ink.italic = true;
            ink.fg = ink.fg.or(Some(self.colors.emphasis));
        }
        ink.strike |= self.strike;
        ink
    }

    fn flush(&mut self) {
        if !self.buf.is_empty() {
            let ink = self.ink();
            self.out.push(Span::new(std::mem::take(&mut self.buf), ink));
        }
    }

    fn literal(&mut self, len: usize) {
        let s = &self.text[self.pos..self.pos + len];
        self.buf.push_str(s);
        self.advance(len);
    }

    fn advance(&mut self, len: usize) {
        self.prev = self.text[..self.pos + len].chars().next_back();
        self.pos += len;
    }

    fn step(&mut self) {
        let rest = &self.text[self.pos..];
        let Some(c) = rest.chars().next() else {
            return;
        };
        let handled = match c {
            '\\' => self.escape(rest),
            '`' => self.code_span(rest),
            '*' | '_' | '~' => self.delimiter(rest, c),
            '[' => self.link(rest),
            '!' if rest.starts_with("![") => self.link(&rest[1..]),
            '<' => self.autolink(rest),
            'h' => self.bare_url(rest),
            _ => false,
        };
        if !handled {
            self.literal(c.len_utf8());
        }
    }

    fn escape(&mut self, rest: &str) -> bool {
        match rest[1..].chars().next() {
            Some(next) if next.is_ascii_punctuation() => {
                self.advance(1);
                self.literal(1);
                true
            }
            _ => false,
        }
    }

    fn code_span(&mut self, rest: &str) -> bool {
        let ticks = rest.len() - rest.trim_start_matches('`').len();
        let fence = &rest[..ticks];
        let Some(end) = rest[ticks..].find(fence) else {
            self.literal(ticks);
            return true;
        };
        let content = &rest[ticks..ticks + end];
        // One space on both sides lets a code span start or end with a backtick.
        let content = match content.strip_prefix(' ').and_then(|c| c.strip_suffix(' ')) {
            Some(inner) if !inner.trim().is_empty() => inner,
            _ => content,
        };
        self.flush();
        let ink = Ink {
            fg: Some(self.colors.code_inline),
            ..self.ink()
        };
        if self.keep_ticks {
            // The original fence, so a span holding a backtick still reads back right.
            self.out.push(Span::new(&rest[..ticks + end + ticks], ink));
        } else {
            self.out.push(Span::new(content, ink));
        }
        self.advance(ticks + end + ticks);
        true
    }

    fn delimiter(&mut self, rest: &str, c: char) -> bool {
        let doubled = rest[1..].starts_with(c);
        let len = if doubled { 2 } else { 1 };
        if c == '~' && !doubled {
            return false;
        }
        let after = rest[len..].chars().next();
        let before = self.prev;
        let is_open = match (c, doubled) {
            ('~', _) => self.strike,
            (_, true) => self.bold,
            (_, false) => self.italic,
        };
        // `_` never opens or closes inside a word: snake_case stays as written.
        let intraword = c == '_'
            && before.is_some_and(char::is_alphanumeric)
            && after.is_some_and(char::is_alphanumeric);
        if intraword {
            return false;
        }
        let can_close = before.is_some_and(|b| !b.is_whitespace());
        let can_open = after.is_some_and(|a| !a.is_whitespace())
            && !(c == '_' && before.is_some_and(char::is_alphanumeric))
            && rest[len..].contains(&rest[..len]);
        let acts = if is_open { can_close } else { can_open };
        if acts {
            self.toggle(c, doubled, len);
        }
        acts
    }

    fn toggle(&mut self, c: char, doubled: bool, len: usize) {
        self.flush();
        match (c, doubled) {
            ('~', _) => self.strike = !self.strike,
            (_, true) => self.bold = !self.bold,
            (_, false) => self.italic = !self.italic,
        }
        self.advance(len);
    }

    /// `[text](url)`: the text in link colour, then the URL dimmed (the terminal can open
    /// it, and a copied answer keeps it) unless the text already is the URL.
    fn link(&mut self, rest: &str) -> bool {
        let Some(close) = rest.find("](") else {
            return false;
        };
        let label = &rest[1..close];
        let Some(url_len) = rest[close + 2..].find(')') else {
            return false;
        };
        let url = &rest[close + 2..close + 2 + url_len];
        if label.contains('[') || url.contains(' ') {
            return false;
        }
        let consumed = close + 2 + url_len + 1;
        let skipped_bang = self.text[self.pos..].starts_with('!');
        self.flush();
        let ink = self.link_ink();
        self.out.push(Span::new(label, ink));
        if !url.is_empty() && url != label {
            let dim = Ink::fg(self.colors.dim);
            self.out.push(Span::new(format!(" ({url})"), dim));
        }
        self.advance(consumed + usize::from(skipped_bang));
        true
    }

    fn link_ink(&self) -> Ink {
        Ink {
            fg: Some(self.colors.link),
            underline: true,
            ..self.ink()
        }
    }

    fn autolink(&mut self, rest: &str) -> bool {
        let Some(end) = rest.find('>') else {
            return false;
        };
        let url = &rest[1..end];
        if !(url.starts_with("http://") || url.starts_with("https://")) || url.contains(' ') {
            return false;
        }
        self.flush();
        let ink = self.link_ink();
        self.out.push(Span::new(url, ink));
        self.advance(end + 1);
        true
    }

    fn bare_url(&mut self, rest: &str) -> bool {
        let at_word_start = self.prev.is_none_or(|p| !p.is_alphanumeric());
        if !at_word_start || !(rest.starts_with("http://") || rest.starts_with("https://")) {
            return false;
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        // Sentence punctuation after a URL is not part of it.
        let url = rest[..end].trim_end_matches(['.', ',', ';', ':', ')', '!', '?', '"', '\'']);
        self.flush();
        let ink = self.link_ink();
        self.out.push(Span::new(url, ink));
        self.advance(url.len());
        true
    }
}

/// What closes the inline constructs still open at the end of `text`, innermost first: a
/// line still streaming renders, with them appended, as it will once the model closes them
/// (a code span's words without its backticks, a bold run in bold). Follows [`inline`]'s
/// rules, except that an opener needs no closer further on.
pub(crate) fn closers(text: &str) -> String {
    let mut open: Vec<String> = Vec::new();
    let mut prev: Option<char> = None;
    let mut pos = 0;
    while let Some(c) = text[pos..].chars().next() {
        let rest = &text[pos..];
        let len = match c {
            '\\' if rest[1..].starts_with(|n: char| n.is_ascii_punctuation()) => 2,
            '`' => {
                let ticks = rest.len() - rest.trim_start_matches('`').len();
                match rest[ticks..].find(&rest[..ticks]) {
                    Some(end) => ticks + end + ticks,
                    None => {
                        // Everything after is code: nothing in it opens anything.
                        open.push(rest[..ticks].to_string());
                        break;
                    }
                }
            }
            '*' | '_' | '~' => delimiter(rest, c, prev, &mut open),
            '[' => match (rest.find("]("), rest.find(']')) {
                (Some(close), _) => match rest[close + 2..].find(')') {
                    Some(url_len) => close + 2 + url_len + 1,
                    None if !rest[close + 2..].contains(' ') => {
                        // Inside the target: its text is not markdown.
                        open.push(")".to_string());
                        break;
                    }
                    None => 1,
                },
                // A label holds no `[`: only the first opens one.
                (None, None) if !open.iter().any(|m| m == "]()") => {
                    open.push("]()".to_string());
                    1
                }
                (None, None) => 1,
                (None, Some(_)) => 1,
            },
            _ => c.len_utf8(),
        };
        pos += len;
        prev = text[..pos].chars().next_back();
    }
    open.iter().rev().map(String::as_str).collect()
}

/// A `*`, `_` or `~` run in [`closers`]: opens or closes a marker as [`Inline::delimiter`]
/// would; returns the bytes it takes.
fn delimiter(rest: &str, c: char, before: Option<char>, open: &mut Vec<String>) -> usize {
    let doubled = rest[1..].starts_with(c);
    let len = if doubled { 2 } else { 1 };
    if c == '~' && !doubled {
        return 1;
    }
    let after = rest[len..].chars().next();
    let intraword = c == '_'
        && before.is_some_and(char::is_alphanumeric)
        && after.is_some_and(char::is_alphanumeric);
    if intraword {
        return 1;
    }
    // Bold is `**` or `__`, emphasis `*` or `_`: either closes what the other opened.
    let kind = |marker: &str| match marker {
        "~~" => 0,
        "**" | "__" => 1,
        _ => 2,
    };
    let marker = &rest[..len];
    let is_open = open.iter().position(|m| kind(m) == kind(marker));
    let can_close = before.is_some_and(|b| !b.is_whitespace());
    let can_open = after.is_some_and(|a| !a.is_whitespace())
        && !(c == '_' && before.is_some_and(char::is_alphanumeric));
    match is_open {
        Some(at) if can_close => {
            open.remove(at);
            len
        }
        None if can_open => {
            open.push(marker.to_string());
            len
        }
        // Shown as it is, one character at a time (the next may act).
        _ => 1,
    }
}
