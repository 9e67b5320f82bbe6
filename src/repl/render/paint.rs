//! Styled text runs, their display width, and word wrapping. Everything is wrapped as
//! runs first and turned into escape codes per finished line, so an escape sequence never
//! spans two lines and every line ends with the terminal's attributes reset.

use std::fmt::Write as _;

use crossterm::style::Color;
use unicode_width::UnicodeWidthChar;

/// The attributes of a run of text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Ink {
    pub fg: Option<Color>,
    pub bold: bool,
    pub dim: bool,
    pub italic: bool,
    pub underline: bool,
    pub strike: bool,
}

impl Ink {
    pub fn fg(color: Color) -> Self {
        Ink {
            fg: Some(color),
            ..Ink::default()
        }
    }

    pub fn bold(self) -> Self {
        Ink { bold: true, ..self }
    }

    pub fn dim(self) -> Self {
        Ink { dim: true, ..self }
    }

    pub fn italic(self) -> Self {
        Ink {
            italic: true,
            ..self
        }
    }

    /// No attribute to set; under `NO_COLOR` a colour alone is none (no empty `ESC[m`).
    fn is_plain(&self) -> bool {
        self.fg
            .is_none_or(|c| fg_param_at(c, color_depth()).is_none())
            && !(self.bold || self.dim || self.italic || self.underline || self.strike)
    }

    /// The SGR parameters, written by hand rather than through crossterm's `Display`, which
    /// silently drops colours when `NO_COLOR` is set; the caller already decided that.
    fn sgr(&self, out: &mut String) {
        self.sgr_at(out, color_depth());
    }

    pub(crate) fn sgr_at(&self, out: &mut String, depth: ColorDepth) {
        let mut params: Vec<String> = Vec::new();
        for (on, code) in [
            (self.bold, "1"),
            (self.dim, "2"),
            (self.italic, "3"),
            (self.underline, "4"),
            (self.strike, "9"),
        ] {
            if on {
                params.push(code.to_string());
            }
        }
        if let Some(color) = self.fg.and_then(|c| fg_param_at(c, depth)) {
            params.push(color);
        }
        let _ = write!(out, "\x1b[{}m", params.join(";"));
    }
}

/// How many colours the terminal gets. Decided once at start (see `RenderStyle::detect`);
/// until then, and in tests, 24-bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorDepth {
    /// `NO_COLOR`: bold, italic, underline and layout stay; colours go.
    None,
    /// The xterm 256-colour palette: what a terminal understands unless it says more.
    Palette256,
    /// 24-bit colour, when `COLORTERM` says `truecolor` or `24bit`.
    TrueColor,
}

static DEPTH: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(2);

pub fn set_color_depth(depth: ColorDepth) {
    let n = match depth {
        ColorDepth::None => 0,
        ColorDepth::Palette256 => 1,
        ColorDepth::TrueColor => 2,
    };
    DEPTH.store(n, std::sync::atomic::Ordering::Relaxed);
}

#[cfg(test)]
thread_local! {
    /// A test's own depth (`NO_COLOR`), so it can run beside tests of the others.
    pub(crate) static TEST_DEPTH: std::cell::Cell<Option<ColorDepth>> =
        const { std::cell::Cell::new(None) };
}

pub(crate) fn color_depth() -> ColorDepth {
    #[cfg(test)]
    if let Some(depth) = TEST_DEPTH.with(std::cell::Cell::get) {
        return depth;
    }
    match DEPTH.load(std::sync::atomic::Ordering::Relaxed) {
        0 => ColorDepth::None,
        1 => ColorDepth::Palette256,
        _ => ColorDepth::TrueColor,
    }
}

/// The SGR foreground parameter for a colour at a colour depth; `None` for the terminal
/// default (and for every colour under `NO_COLOR`).
pub(crate) fn fg_param_at(color: Color, depth: ColorDepth) -> Option<String> {
    if depth == ColorDepth::None {
        return None;
    }
    let index = match color {
        Color::Reset => return None,
        Color::Rgb { r, g, b } if depth == ColorDepth::TrueColor => {
            return Some(format!("38;2;{r};{g};{b}"));
        }
        Color::Rgb { r, g, b } => return Some(format!("38;5;{}", nearest_256(r, g, b))),
        Color::AnsiValue(n) => n,
        Color::Black => 0,
        Color::DarkRed => 1,
        Color::DarkGreen => 2,
        Color::DarkYellow => 3,
        Color::DarkBlue => 4,
        Color::DarkMagenta => 5,
        Color::DarkCyan => 6,
        Color::Grey => 7,
        Color::DarkGrey => 8,
        Color::Red => 9,
        Color::Green => 10,
        Color::Yellow => 11,
        Color::Blue => 12,
        Color::Magenta => 13,
        Color::Cyan => 14,
        Color::White => 15,
    };
    // The 16 basic colours use their classic codes, which every terminal (and theme) knows.
    Some(match index {
        0..=7 => format!("{}", 30 + index),
        8..=15 => format!("{}", 90 + index - 8),
        _ => format!("38;5;{index}"),
    })
}

/// The xterm-256 index nearest to an RGB colour: the 6×6×6 cube or the 24 greys,
/// whichever is closer.
pub(crate) fn nearest_256(r: u8, g: u8, b: u8) -> u8 {
    const LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];
    let level = |v: u8| {
        (0..6)
            .min_by_key(|&i| (i32::from(LEVELS[i]) - i32::from(v)).abs())
            .unwrap_or(0)
    };
    let distance = |(r2, g2, b2): (u8, u8, u8)| {
        let d = |a: u8, b: u8| (i32::from(a) - i32::from(b)).pow(2);
        d(r, r2) + d(g, g2) + d(b, b2)
    };
    let (ri, gi, bi) = (level(r), level(g), level(b));
    let cube = (LEVELS[ri], LEVELS[gi], LEVELS[bi]);
    let cube_index = 16 + 36 * ri + 6 * gi + bi;
    let average = (u32::from(r) + u32::from(g) + u32::from(b)) / 3;
    let grey_step = (average.saturating_sub(3) / 10).min(23) as u8;
    let grey_value = 8 + 10 * grey_step;
    if distance((grey_value, grey_value, grey_value)) < distance(cube) {
        232 + grey_step
    } else {
        cube_index as u8
    }
}

/// A run of text in one ink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Span {
    pub text: String,
    pub ink: Ink,
}

impl Span {
    pub fn new(text: impl Into<String>, ink: Ink) -> Self {
        Span {
            text: text.into(),
            ink,
        }
    }

    pub fn plain(text: impl Into<String>) -> Self {
        Span::new(text, Ink::default())
    }
}

/// Terminal columns taken by `s` (wide CJK and emoji count two, combining marks zero).
pub(crate) fn str_width(s: &str) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    count_fitting(s, usize::MAX).1
}

/// The longest start of `s` that fits in `width` columns, and the columns it takes.
pub(crate) fn cut_to_width(s: &str, width: usize) -> (&str, usize) {
    let (bytes, columns) = count_fitting(s, width);
    (&s[..bytes], columns)
}

/// The bytes and columns of the longest start of `s` within `max` columns. A tab counts
/// two columns (the count the shell has always used: code blocks expand their tabs before
/// they are measured), a backspace takes one back, other control characters none.
fn count_fitting(s: &str, max: usize) -> (usize, usize) {
    let (mut bytes, mut columns) = (0, 0usize);
    for (at, c) in s.char_indices() {
        let next = match c {
            '\t' => columns + 2,
            '\x08' => columns.saturating_sub(1),
            _ => columns + c.width().unwrap_or(0),
        };
        if next > max {
            break;
        }
        columns = next;
        bytes = at + c.len_utf8();
    }
    (bytes, columns)
}

pub(crate) fn char_width(c: char) -> usize {
    if c.is_ascii() {
        return 1;
    }
    let mut buf = [0u8; 4];
    str_width(c.encode_utf8(&mut buf))
}

pub(crate) fn spans_width(spans: &[Span]) -> usize {
    spans.iter().map(|s| str_width(&s.text)).sum()
}

/// Turns one line of runs into a string with escape codes; adjacent runs in the same
/// ink share one escape sequence.
pub(crate) fn paint(spans: &[Span]) -> String {
    let mut out = String::new();
    let mut current = Ink::default();
    for span in spans.iter().filter(|s| !s.text.is_empty()) {
        if span.ink != current {
            if !current.is_plain() {
                out.push_str("\x1b[0m");
            }
            if !span.ink.is_plain() {
                span.ink.sgr(&mut out);
            }
            current = span.ink;
        }
        out.push_str(&span.text);
    }
    if !current.is_plain() {
        out.push_str("\x1b[0m");
    }
    out
}

/// Appends `text` to the line, merging with the last run when the ink matches.
fn push_text(line: &mut Vec<Span>, text: &str, ink: Ink) {
    match line.last_mut() {
        Some(last) if last.ink == ink => last.text.push_str(text),
        _ => line.push(Span::new(text, ink)),
    }
}

/// Greedy word wrap of `spans` into lines of at most `width` columns. The first line
/// starts with `first`, later ones with `rest` (a hanging indent or a quote bar). Words
/// wider than a line are broken between characters; spaces at a break are dropped.
pub(crate) fn wrap(spans: &[Span], width: usize, first: &[Span], rest: &[Span]) -> Vec<Vec<Span>> {
    let mut wrapper = Wrapper {
        lines: Vec::new(),
        line: first.to_vec(),
        used: spans_width(first),
        has_word: false,
        pending: Vec::new(),
        width,
        rest,
    };
    // A word can run across inks (`` `code`, ``, `**bold**ly`): its pieces are gathered
    // until the next space, so the punctuation after a code span never starts a row.
    let mut word: Vec<Span> = Vec::new();
    for span in spans {
        for (is_space, token) in tokens(&span.text) {
            if is_space {
                if !word.is_empty() {
                    wrapper.word(&std::mem::take(&mut word));
                }
                if wrapper.has_word {
                    wrapper.pending.push(Span::new(token, span.ink));
                }
            } else {
                push_text(&mut word, token, span.ink);
            }
        }
    }
    if !word.is_empty() {
        wrapper.word(&word);
    }
    wrapper.lines.push(wrapper.line);
    wrapper.lines
}

struct Wrapper<'a> {
    lines: Vec<Vec<Span>>,
    line: Vec<Span>,
    used: usize,
    /// Whether the current line holds a word yet: leading spaces after a break are dropped.
    has_word: bool,
    /// Spaces seen since the last word: kept only if the next word fits on this line.
    pending: Vec<Span>,
    width: usize,
    rest: &'a [Span],
}

impl Wrapper<'_> {
    /// Places one word (its pieces in their inks): after the pending spaces if it fits,
    /// else on a new row, else, longer than any row, broken between characters.
    fn word(&mut self, word: &[Span]) {
        let w = spans_width(word);
        let pending_w = spans_width(&self.pending);
        if self.used + pending_w + w <= self.width {
            for space in std::mem::take(&mut self.pending) {
                push_text(&mut self.line, &space.text, space.ink);
            }
            self.used += pending_w + w;
            for piece in word {
                push_text(&mut self.line, &piece.text, piece.ink);
            }
            self.has_word = true;
            return;
        }
        let indent = spans_width(self.rest);
        if self.has_word && indent + w <= self.width {
            self.pending.clear();
            self.break_line();
            self.word(word);
            return;
        }
        // Too long for any line: fill this one after the space, then continue on the next.
        if self.used + pending_w < self.width {
            for space in std::mem::take(&mut self.pending) {
                push_text(&mut self.line, &space.text, space.ink);
            }
            self.used += pending_w;
        }
        self.pending.clear();
        for piece in word {
            for c in piece.text.chars() {
                let cw = char_width(c);
                if self.used + cw > self.width && self.used > indent {
                    self.break_line();
                }
                let mut buf = [0u8; 4];
                push_text(&mut self.line, c.encode_utf8(&mut buf), piece.ink);
                self.used += cw;
            }
        }
        self.has_word = true;
    }

    fn break_line(&mut self) {
        let line = std::mem::replace(&mut self.line, self.rest.to_vec());
        self.lines.push(line);
        self.used = spans_width(self.rest);
        self.has_word = false;
    }
}

/// Splits text into alternating runs of spaces and non-spaces.
fn tokens(text: &str) -> impl Iterator<Item = (bool, &str)> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let is_space = first == ' ';
        let end = rest
            .find(|c: char| (c == ' ') != is_space)
            .unwrap_or(rest.len());
        let (token, tail) = rest.split_at(end);
        rest = tail;
        Some((is_space, token))
    })
}

/// Breaks runs into lines of at most `width` columns between any two characters, keeping
/// every space: for code, where word boundaries and indentation mean something.
pub(crate) fn hard_wrap(spans: &[Span], width: usize) -> Vec<Vec<Span>> {
    let mut lines = vec![Vec::new()];
    let mut used = 0;
    for span in spans {
        for c in span.text.chars() {
            let cw = char_width(c);
            if used + cw > width && used > 0 {
                lines.push(Vec::new());
                used = 0;
            }
            let mut buf = [0u8; 4];
            if let Some(line) = lines.last_mut() {
                push_text(line, c.encode_utf8(&mut buf), span.ink);
            }
            used += cw;
        }
    }
    lines
}
