//! A full-screen, read-only viewer for long text: the session transcript behind Ctrl+O.
//!
//! It takes the alternate screen, so the scrollback the shell keeps is untouched when it
//! closes. The state and its keys ([`Pager`]) are plain data, tested without a terminal;
//! [`run`] only moves bytes between the terminal and it.

use std::io::Write;

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::terminal;

use crate::tools::terminal_text::strip_controls;

/// What a key did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Stay,
    Quit,
}

/// The lines, where the window is, and the search.
pub struct Pager {
    title: String,
    /// Finished terminal lines (escape codes included), each at most the width wide.
    lines: Vec<String>,
    /// The same lines without escape codes, searched.
    plain: Vec<String>,
    /// The first line shown.
    top: usize,
    /// Rows for lines (the terminal's rows less the status row).
    page: usize,
    /// The query being typed after `/`, while it is typed.
    typing: Option<String>,
    /// The last query confirmed with Enter.
    query: Option<String>,
    /// A one-off note on the status row (no match, wrapped around).
    note: Option<String>,
}

impl Pager {
    /// A pager on `lines` for a terminal `rows` high, showing the end (the newest).
    pub fn new(title: &str, lines: Vec<String>, rows: u16) -> Pager {
        let mut pager = Pager {
            title: title.to_string(),
            lines: Vec::new(),
            plain: Vec::new(),
            top: 0,
            page: 1,
            typing: None,
            query: None,
            note: None,
        };
        pager.resize(rows);
        pager.replace(lines);
        pager.top = pager.last_top();
        pager
    }

    /// New lines (the terminal's width changed), keeping the position as near as it can.
    pub fn replace(&mut self, lines: Vec<String>) {
        let at_end = self.top >= self.last_top();
        self.plain = lines
            .iter()
            .map(|l| strip_controls(l).into_owned())
            .collect();
        self.lines = lines;
        self.top = if at_end {
            self.last_top()
        } else {
            self.top.min(self.last_top())
        };
    }

    pub fn resize(&mut self, rows: u16) {
        let at_end = self.top >= self.last_top();
        self.page = usize::from(rows.saturating_sub(1)).max(1);
        self.top = match at_end {
            true => self.last_top(),
            false => self.top.min(self.last_top()),
        };
    }

    fn last_top(&self) -> usize {
        self.lines.len().saturating_sub(self.page)
    }

    fn scroll(&mut self, by: isize) {
        self.top = self.top.saturating_add_signed(by).min(self.last_top());
    }

    /// Handles one key.
    pub fn key(&mut self, key: KeyEvent) -> Action {
        self.note = None;
        if self.typing.is_some() {
            self.search_key(key);
            return Action::Stay;
        }
        let page = self.page as isize;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('c' | 'o') if ctrl => return Action::Quit,
            KeyCode::Char('q') | KeyCode::Esc => return Action::Quit,
            KeyCode::Char('b') if ctrl => self.scroll(-page),
            KeyCode::Char('f') if ctrl => self.scroll(page),
            KeyCode::Char('u') if ctrl => self.scroll(-page / 2),
            KeyCode::Char('d') if ctrl => self.scroll(page / 2),
            KeyCode::Up | KeyCode::Char('k') => self.scroll(-1),
            KeyCode::Down | KeyCode::Char('j') | KeyCode::Enter => self.scroll(1),
            KeyCode::PageUp | KeyCode::Char('b') => self.scroll(-page),
            KeyCode::PageDown | KeyCode::Char(' ' | 'f') => self.scroll(page),
            KeyCode::Home | KeyCode::Char('g') => self.top = 0,
            KeyCode::End | KeyCode::Char('G') => self.top = self.last_top(),
            KeyCode::Char('/') => self.typing = Some(String::new()),
            KeyCode::Char('n') => self.find(true, false),
            KeyCode::Char('N') => self.find(false, false),
            _ => {}
        }
        Action::Stay
    }

    fn search_key(&mut self, key: KeyEvent) {
        let Some(typing) = self.typing.as_mut() else {
            return;
        };
        match key.code {
            KeyCode::Esc => self.typing = None,
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.typing = None;
            }
            KeyCode::Backspace => {
                typing.pop();
            }
            KeyCode::Char(c) => typing.push(c),
            KeyCode::Enter => {
                let query = self.typing.take().unwrap_or_default();
                if !query.is_empty() {
                    self.query = Some(query);
                }
                self.find(true, true);
            }
            _ => {}
        }
    }

    /// Moves to the next (or previous) line holding the query; `here` counts the line at
    /// the top (a new search starts where the person is reading).
    fn find(&mut self, forward: bool, here: bool) {
        let Some(query) = self.query.clone() else {
            self.note = Some("no search yet: / then text, Enter".into());
            return;
        };
        let query = query.to_lowercase();
        let hit = |i: &usize| self.plain[*i].to_lowercase().contains(&query);
        let n = self.plain.len();
        let start = match (forward, here) {
            (true, true) => self.top,
            (true, false) => self.top + 1,
            (false, _) => self.top + n.saturating_sub(1),
        };
        let order: Box<dyn Iterator<Item = usize>> = match forward {
            true => Box::new((0..n).map(|k| (start + k) % n.max(1))),
            false => Box::new((0..n).map(|k| (start + n - k) % n.max(1))),
        };
        let found = order.filter(|i| *i < n).find(hit);
        match found {
            Some(line) => {
                let wrapped = (forward && line < self.top) || (!forward && line > self.top);
                if wrapped {
                    self.note = Some("search wrapped around".into());
                }
                // The match shows on the top row unless the text ends before.
                self.top = line.min(self.last_top());
            }
            None => self.note = Some(format!("no match for `{}`", one_line(&query))),
        }
    }

    /// The whole screen: `page` rows of lines, then the status row, `cols` wide.
    pub fn frame(&self, cols: u16) -> String {
        let width = usize::from(cols.max(10));
        let mut out = String::from("\x1b[H");
        let query = self.query.as_deref().map(str::to_lowercase);
        for row in 0..self.page {
            out.push_str("\x1b[2K");
            let i = self.top + row;
            if let Some(line) = self.lines.get(i) {
                match query.as_deref() {
                    Some(q) if !q.is_empty() && self.plain[i].to_lowercase().contains(q) => {
                        out.push_str(&highlight(&self.plain[i], q));
                    }
                    _ => out.push_str(line),
                }
                out.push_str("\x1b[0m");
            }
            out.push_str("\r\n");
        }
        out.push_str("\x1b[2K\x1b[7m");
        out.push_str(&fit(&self.status(), width));
        out.push_str("\x1b[0m");
        out
    }

    fn status(&self) -> String {
        if let Some(typing) = &self.typing {
            return format!("/{typing}▏ (Enter to search, Esc to cancel)");
        }
        let total = self.lines.len();
        let last = (self.top + self.page).min(total);
        let percent = match total {
            0 => 100,
            _ => last * 100 / total,
        };
        let where_ = format!(
            "{} · lines {}–{last} of {total} ({percent}%)",
            self.title,
            (self.top + 1).min(total)
        );
        match &self.note {
            Some(note) => format!(" {where_} · {note}"),
            None => format!(" {where_} · ↑↓ PgUp PgDn g G · / search, n N · q to leave"),
        }
    }
}

/// `line` (without escape codes) with every match of `query` (lower case) in reverse video.
fn highlight(line: &str, query: &str) -> String {
    let lower = line.to_lowercase();
    // Lower-casing can change byte lengths outside ASCII; then the whole line is marked.
    if lower.len() != line.len() {
        return format!("\x1b[7m{line}\x1b[0m");
    }
    let mut out = String::new();
    let mut at = 0;
    while let Some(found) = lower[at..].find(query) {
        let start = at + found;
        let end = start + query.len();
        if !line.is_char_boundary(start) || !line.is_char_boundary(end) {
            break;
        }
        out.push_str(&line[at..start]);
        out.push_str("\x1b[7m");
        out.push_str(&line[start..end]);
        out.push_str("\x1b[0m");
        at = end;
    }
    out.push_str(&line[at..]);
    out
}

/// `text` cut or padded to exactly `width` columns.
fn fit(text: &str, width: usize) -> String {
    let (cut, used) = crate::repl::render::paint::cut_to_width(text, width);
    format!("{cut}{}", " ".repeat(width.saturating_sub(used)))
}

fn one_line(text: &str) -> String {
    crate::text::one_line(text, 40)
}

/// A list to pick one item from (the rewind picker): ↑↓ or j k move, Enter or a digit
/// picks, Esc or q leaves without a pick.
pub struct Choice {
    title: String,
    items: Vec<String>,
    selected: usize,
}

/// What a key did to a [`Choice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Picked {
    Stay,
    Item(usize),
    Nothing,
}

impl Choice {
    /// The list with `selected` marked first.
    pub fn new(title: &str, items: Vec<String>, selected: usize) -> Choice {
        let selected = selected.min(items.len().saturating_sub(1));
        Choice {
            title: title.to_string(),
            items,
            selected,
        }
    }

    pub fn key(&mut self, key: KeyEvent) -> Picked {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('c') if ctrl => Picked::Nothing,
            KeyCode::Esc | KeyCode::Char('q') => Picked::Nothing,
            KeyCode::Up | KeyCode::Char('k') => {
                self.selected = self.selected.saturating_sub(1);
                Picked::Stay
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(self.items.len().saturating_sub(1));
                Picked::Stay
            }
            KeyCode::Enter if !self.items.is_empty() => Picked::Item(self.selected),
            KeyCode::Char(c @ '1'..='9') => {
                let n = usize::from(c as u8 - b'1');
                match n < self.items.len() {
                    true => Picked::Item(n),
                    false => Picked::Stay,
                }
            }
            _ => Picked::Stay,
        }
    }

    /// The screen: the title, the items numbered (the selected one in reverse video, the
    /// list scrolled to keep it in view), and the keys.
    pub fn frame(&self, cols: u16, rows: u16) -> String {
        let width = usize::from(cols.max(10));
        let room = usize::from(rows.saturating_sub(3)).max(1);
        let first = (self.selected + 1).saturating_sub(room);
        let mut out = format!(
            "\x1b[H\x1b[2J\x1b[1m{}\x1b[0m\r\n\r\n",
            fit(&self.title, width)
        );
        for (i, item) in self.items.iter().enumerate().skip(first).take(room) {
            let number = match i < 9 {
                true => format!("{}.", i + 1),
                false => "  ".into(),
            };
            let text = fit(&format!(" {number} {}", strip_controls(item)), width);
            if i == self.selected {
                out.push_str(&format!("\x1b[7m{text}\x1b[0m\r\n"));
            } else {
                out.push_str(text.trim_end());
                out.push_str("\r\n");
            }
        }
        out.push_str(&format!(
            "\x1b[{rows};1H\x1b[2m{}\x1b[0m",
            fit(" ↑↓ choose · Enter or a digit picks · Esc leaves", width)
        ));
        out
    }
}

/// Asks the person to pick one of `items` on the alternate screen; `None` when they left.
pub fn choose(title: &str, items: Vec<String>, selected: usize) -> std::io::Result<Option<usize>> {
    let mut choice = Choice::new(title, items, selected);
    let _screen = Screen::enter()?;
    loop {
        let (cols, rows) = terminal::size()?;
        {
            let mut out = std::io::stdout().lock();
            out.write_all(choice.frame(cols, rows).as_bytes())?;
            out.flush()?;
        }
        if let Event::Key(key) = event::read()?
            && key.kind != KeyEventKind::Release
        {
            match choice.key(key) {
                Picked::Stay => {}
                Picked::Item(i) => return Ok(Some(i)),
                Picked::Nothing => return Ok(None),
            }
        }
    }
}

/// Restores the terminal however the pager ends (an error, a panic in a caller).
struct Screen;

impl Screen {
    fn enter() -> std::io::Result<Screen> {
        terminal::enable_raw_mode()?;
        let mut out = std::io::stdout().lock();
        // The alternate screen, cursor hidden.
        out.write_all(b"\x1b[?1049h\x1b[?25l")?;
        out.flush()?;
        Ok(Screen)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(b"\x1b[?25h\x1b[?1049l");
        let _ = out.flush();
        let _ = terminal::disable_raw_mode();
    }
}

/// Shows the lines `build` makes for a width until the person leaves (q, Esc, Ctrl+O).
/// `build` is called again when the width changes, so text wraps to the new size.
pub fn run(title: &str, mut build: impl FnMut(u16) -> Vec<String>) -> std::io::Result<()> {
    let (mut cols, rows) = terminal::size()?;
    let mut pager = Pager::new(title, build(cols), rows);
    let _screen = Screen::enter()?;
    loop {
        {
            let mut out = std::io::stdout().lock();
            out.write_all(pager.frame(cols).as_bytes())?;
            out.flush()?;
        }
        match event::read()? {
            Event::Key(key)
                if key.kind != KeyEventKind::Release && pager.key(key) == Action::Quit =>
            {
                return Ok(());
            }
            Event::Resize(new_cols, new_rows) => {
                pager.resize(new_rows);
                if new_cols != cols {
                    cols = new_cols;
                    pager.replace(build(cols));
                }
                // Rows the old size had below the new bottom are cleared by the next frame.
                std::io::stdout().lock().write_all(b"\x1b[2J")?;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn lines(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("line {i}")).collect()
    }

    fn typed(pager: &mut Pager, text: &str) {
        for c in text.chars() {
            pager.key(key(KeyCode::Char(c)));
        }
    }

    #[test]
    fn it_opens_at_the_end_and_scrolls_within_the_text() {
        let mut p = Pager::new("t", lines(100), 11);
        assert_eq!(p.top, 90);
        p.key(key(KeyCode::Down));
        assert_eq!(p.top, 90, "the last page is the bottom");
        p.key(key(KeyCode::PageUp));
        assert_eq!(p.top, 80);
        p.key(key(KeyCode::Char('g')));
        assert_eq!(p.top, 0);
        p.key(key(KeyCode::Up));
        assert_eq!(p.top, 0);
        p.key(key(KeyCode::Char(' ')));
        assert_eq!(p.top, 10);
        p.key(key(KeyCode::Char('G')));
        assert_eq!(p.top, 90);
        assert_eq!(p.key(key(KeyCode::Char('q'))), Action::Quit);
    }

    #[test]
    fn short_text_starts_at_the_top() {
        let p = Pager::new("t", lines(3), 40);
        assert_eq!(p.top, 0);
        let frame = p.frame(30);
        assert!(frame.contains("line 1") && frame.contains("line 3"));
        assert!(frame.contains("lines 1–3 of 3 (100%)"));
    }

    #[test]
    fn search_finds_the_next_match_wraps_and_says_when_none() {
        let mut p = Pager::new("t", lines(100), 11);
        p.key(key(KeyCode::Char('g')));
        p.key(key(KeyCode::Char('/')));
        typed(&mut p, "LINE 5");
        assert!(p.frame(60).contains("/LINE 5"));
        p.key(key(KeyCode::Enter));
        assert_eq!(p.top, 4, "line 5 is the first match, case-insensitive");
        p.key(key(KeyCode::Char('n')));
        assert_eq!(p.top, 49, "line 50");
        p.key(key(KeyCode::Char('N')));
        assert_eq!(p.top, 4);
        p.key(key(KeyCode::Char('N')));
        // Backwards from line 5 wraps to the last match (line 59), shown as far down as the
        // text allows.
        assert_eq!(p.top, 58);
        assert!(p.frame(80).contains("wrapped"));
        // The match is marked on screen.
        assert!(p.frame(80).contains("\x1b[7mline 5\x1b[0m9"));
        p.key(key(KeyCode::Char('/')));
        typed(&mut p, "nothing");
        p.key(key(KeyCode::Enter));
        assert!(p.frame(80).contains("no match for `nothing`"));
        // Esc leaves a search being typed, not the pager.
        p.key(key(KeyCode::Char('/')));
        assert_eq!(p.key(key(KeyCode::Esc)), Action::Stay);
        assert_eq!(p.key(key(KeyCode::Esc)), Action::Quit);
    }

    #[test]
    fn a_narrower_text_keeps_the_reader_near_where_they_were() {
        let mut p = Pager::new("t", lines(100), 11);
        p.key(key(KeyCode::Char('g')));
        p.scroll(20);
        p.replace(lines(200));
        assert_eq!(p.top, 20);
        p.key(key(KeyCode::Char('G')));
        p.replace(lines(50));
        assert_eq!(p.top, 40, "at the end it stays at the end");
        p.resize(5);
        assert_eq!(p.page, 4);
        assert_eq!(p.top, 46, "fewer rows at the end: still the end");
    }

    #[test]
    fn a_choice_moves_within_the_list_and_picks_by_enter_or_digit() {
        let items = vec!["a".to_string(), "b".into(), "c".into()];
        let mut c = Choice::new("pick", items, 0);
        assert_eq!(c.key(key(KeyCode::Up)), Picked::Stay);
        assert_eq!(c.selected, 0);
        c.key(key(KeyCode::Down));
        c.key(key(KeyCode::Down));
        c.key(key(KeyCode::Down));
        assert_eq!(c.selected, 2);
        assert!(c.frame(20, 10).contains("\x1b[7m 3. c"));
        assert_eq!(c.key(key(KeyCode::Enter)), Picked::Item(2));
        assert_eq!(c.key(key(KeyCode::Char('2'))), Picked::Item(1));
        assert_eq!(c.key(key(KeyCode::Char('7'))), Picked::Stay);
        assert_eq!(c.key(key(KeyCode::Esc)), Picked::Nothing);
    }

    #[test]
    fn the_status_row_fits_the_width() {
        let p = Pager::new("transcript", lines(5), 10);
        let frame = p.frame(20);
        let status = frame.rsplit("\x1b[7m").next().unwrap();
        assert_eq!(strip_controls(status).chars().count(), 20);
    }
}
