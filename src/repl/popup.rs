//! The live list under the line while a `/` command or an `@` mention is being typed:
//! what matches so far, one entry chosen. ↑↓ choose, Tab or Enter takes the chosen entry
//! into the line (Enter sends only a line that needs no completing), Esc closes the list
//! until the line changes.
//!
//! Like the footer, the rows are part of the editor's hint: the editor draws and clears
//! them with the line, and takes them away when a line is sent. The list is made of the
//! same candidates Tab completion offers, so the two never differ; they are searched again
//! when the line changes or what they are found in does (see [`Popup::rows`]).

use std::sync::{Arc, Mutex};

use crate::repl::complete::Candidate;
use crate::repl::render::paint::{cut_to_width, str_width};
use crate::session::lock;

/// What marks the chosen row (the highlighter also makes it bold).
pub const CHOSEN: &str = "❯ ";
/// Most rows the list takes; fewer on a short terminal.
const MAX_ROWS: usize = 8;
/// Names are padded to a common width up to this, so descriptions line up.
const NAME_COLUMN: usize = 28;

/// The list, shared by the hint (which builds it) and the keys (which move in it).
#[derive(Clone, Default)]
pub struct Popup(Arc<Mutex<State>>);

#[derive(Default)]
struct State {
    /// The line the list was built for: a key acts on the list only if the line is the same.
    line: String,
    /// Where the word the list completes starts (a byte offset into `line`).
    start: usize,
    items: Vec<Candidate>,
    chosen: usize,
    /// The line Esc closed the list on: it stays closed until the line changes.
    closed_on: Option<String>,
    /// The candidates found for `line`, and the version of what they were found in: the
    /// line is drawn again for every print above it while an answer streams, and ranking
    /// 50,000 files each time would cost milliseconds a redraw.
    found: Option<(u64, usize, Vec<Candidate>)>,
}

impl State {
    fn shown(&self, line: &str) -> bool {
        !self.items.is_empty() && self.line == line
    }
}

impl Popup {
    /// The rows to draw under `line` (empty: no list). `found` gives the completion
    /// candidates and where the word they replace starts, `version` a number that changes
    /// when what `found` searches does. Both are asked only when a list may show, and
    /// `found` again only when the line or the version changed. `columns` and `rows` are
    /// the terminal's size.
    pub fn rows(
        &self,
        line: &str,
        pos: usize,
        version: impl FnOnce() -> u64,
        found: impl FnOnce() -> (usize, Vec<Candidate>),
        (columns, rows): (u16, u16),
    ) -> Vec<String> {
        let mut state = lock(&self.0);
        if state.line != line {
            state.line = line.to_string();
            state.chosen = 0;
            state.closed_on = None;
            state.found = None;
        }
        state.items.clear();
        if !may_show(line, pos) || state.closed_on.as_deref() == Some(line) {
            return Vec::new();
        }
        let version = version();
        let (start, items) = match state.found.take() {
            Some((v, start, items)) if v == version => (start, items),
            _ => found(),
        };
        state.found = Some((version, start, items.clone()));
        let word = &line[start.min(pos)..pos];
        if !wanted(line, start, word) || items.iter().any(|c| c.display == word) {
            return Vec::new();
        }
        state.start = start;
        state.items = items;
        state.chosen = state.chosen.min(state.items.len().saturating_sub(1));
        let limit = MAX_ROWS.min(usize::from(rows) / 3).max(3);
        draw(&state.items, state.chosen, limit, usize::from(columns))
    }

    /// Whether the list shows for `line` (what the keys ask before taking over).
    pub fn shown(&self, line: &str) -> bool {
        lock(&self.0).shown(line)
    }

    /// Moves the choice by `step` rows, wrapping around; whether the list shows.
    pub fn step(&self, line: &str, step: isize) -> bool {
        let mut state = lock(&self.0);
        if !state.shown(line) {
            return false;
        }
        let count = state.items.len() as isize;
        state.chosen = (state.chosen as isize + step).rem_euclid(count) as usize;
        true
    }

    /// The chosen entry, as a completion: where the word it replaces starts, and the text
    /// that replaces it (the editor's completer hands it over when Tab or Enter takes it).
    pub fn take(&self, line: &str, pos: usize) -> Option<(usize, String)> {
        let state = lock(&self.0);
        if !state.shown(line) || state.start > pos {
            return None;
        }
        Some((state.start, state.items[state.chosen].replacement.clone()))
    }

    /// Esc: closes the list for this line; whether there was one.
    pub fn close(&self, line: &str) -> bool {
        let mut state = lock(&self.0);
        if !state.shown(line) {
            return false;
        }
        state.closed_on = Some(line.to_string());
        state.items.clear();
        true
    }
}

/// A list is for the end of a one-row line whose last word starts with `@`, or with `/` as
/// the first word. Checked before asking for candidates: most keystrokes need none.
fn may_show(line: &str, pos: usize) -> bool {
    if pos != line.len() || line.contains('\n') {
        return false;
    }
    let word = line.rsplit(char::is_whitespace).next().unwrap_or_default();
    word.starts_with('@') || (word.starts_with('/') && line.trim_start() == word)
}

/// A list is for a command or skill name (the first word, `/…`) or a mention (`@…`).
fn wanted(line: &str, start: usize, word: &str) -> bool {
    let first = line[..start].trim().is_empty();
    (first && word.starts_with('/')) || word.starts_with('@')
}

/// The visible rows: a window of `limit` entries that keeps the chosen one in view, and a
/// last row counting the rest.
fn draw(items: &[Candidate], chosen: usize, limit: usize, columns: usize) -> Vec<String> {
    let first = chosen.saturating_sub(limit - 1);
    let window = &items[first..items.len().min(first + limit)];
    let name_width = window
        .iter()
        .map(|c| str_width(&name(c)))
        .max()
        .unwrap_or(0)
        .min(NAME_COLUMN);
    let fit = columns.saturating_sub(1);
    let mut rows: Vec<String> = window
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let marker = if first + i == chosen { CHOSEN } else { "  " };
            let name = name(c);
            let pad = " ".repeat(name_width.saturating_sub(str_width(&name)));
            let row = match &c.description {
                Some(d) => format!("{marker}{name}{pad}  {d}"),
                None => format!("{marker}{name}"),
            };
            cut_to_width(&row, fit).0.to_string()
        })
        .collect();
    let hidden = items.len() - window.len();
    if hidden > 0 {
        let more = format!("  … {hidden} more (↑↓ to see them)");
        rows.push(cut_to_width(&more, fit).0.to_string());
    }
    rows
}

/// `/model <id>`: the name with its argument's shape.
fn name(c: &Candidate) -> String {
    match &c.hint {
        Some(hint) => format!("{} {hint}", c.display),
        None => c.display.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(display: &str, description: Option<&str>) -> Candidate {
        Candidate {
            replacement: format!("{display} "),
            display: display.into(),
            hint: None,
            description: description.map(str::to_string),
        }
    }

    fn commands() -> (usize, Vec<Candidate>) {
        (
            0,
            vec![
                candidate("/model", Some("switch the model")),
                candidate("/models", None),
                candidate("/mode", Some("chat or auto")),
            ],
        )
    }

    const SIZE: (u16, u16) = (80, 24);

    #[test]
    fn it_lists_what_the_word_matches_and_moves_the_choice() {
        let popup = Popup::default();
        let rows = popup.rows("/mo", 3, || 0, commands, SIZE);
        assert_eq!(rows.len(), 3);
        assert!(
            rows[0].starts_with("❯ /model   switch the model"),
            "{rows:?}"
        );
        assert!(rows[1].starts_with("  /models"), "{rows:?}");
        assert!(popup.step("/mo", -1));
        let rows = popup.rows("/mo", 3, || 0, commands, SIZE);
        assert!(rows[2].starts_with("❯ /mode"), "{rows:?}");
        assert_eq!(popup.take("/mo", 3), Some((0, "/mode ".into())));
        // A new line starts at the top again.
        let rows = popup.rows("/mod", 4, || 0, commands, SIZE);
        assert!(rows[0].starts_with(CHOSEN), "{rows:?}");
    }

    #[test]
    fn it_stays_away_where_there_is_nothing_to_complete() {
        let popup = Popup::default();
        // The word is already a whole name (a line recalled from history, for one).
        assert!(popup.rows("/model", 6, || 0, commands, SIZE).is_empty());
        assert!(!popup.step("/model", 1), "keys go to the editor");
        // Not the first word; the cursor inside the line; two rows.
        assert!(
            popup
                .rows("say /mo", 7, || 0, || (4, commands().1), SIZE)
                .is_empty()
        );
        assert!(popup.rows("/mo x", 2, || 0, commands, SIZE).is_empty());
        assert!(
            popup
                .rows("a\n/mo", 5, || 0, || (2, commands().1), SIZE)
                .is_empty()
        );
        // Mentions anywhere.
        let files = || (4, vec![candidate("@src/main.rs", None)]);
        assert_eq!(popup.rows("fix @ma", 7, || 0, files, SIZE).len(), 1);
        assert_eq!(popup.take("fix @ma", 7), Some((4, "@src/main.rs ".into())));
    }

    #[test]
    fn the_same_line_and_version_do_not_search_again() {
        let popup = Popup::default();
        let asked = std::cell::Cell::new(0);
        let found = || {
            asked.set(asked.get() + 1);
            commands()
        };
        popup.rows("/mo", 3, || 1, found, SIZE);
        popup.rows("/mo", 3, || 1, found, SIZE);
        assert_eq!(asked.get(), 1);
        popup.rows("/mo", 3, || 2, found, SIZE);
        popup.rows("/mod", 4, || 2, found, SIZE);
        assert_eq!(asked.get(), 3);
    }

    #[test]
    fn esc_closes_it_until_the_line_changes() {
        let popup = Popup::default();
        assert!(!popup.rows("/mo", 3, || 0, commands, SIZE).is_empty());
        assert!(popup.close("/mo"));
        assert!(popup.rows("/mo", 3, || 0, commands, SIZE).is_empty());
        assert!(popup.take("/mo", 3).is_none());
        assert!(!popup.rows("/m", 2, || 0, commands, SIZE).is_empty());
    }

    #[test]
    fn a_long_list_scrolls_with_the_choice_and_fits_the_width() {
        let many = || {
            let items = (0..20)
                .map(|i| candidate(&format!("@file{i:02}.rs"), Some(&"x".repeat(200))))
                .collect();
            (0, items)
        };
        let popup = Popup::default();
        let rows = popup.rows("@f", 2, || 0, many, (40, 15));
        assert_eq!(
            rows.len(),
            6,
            "5 entries on 15 rows, then the count: {rows:?}"
        );
        assert_eq!(rows[5], "  … 15 more (↑↓ to see them)");
        assert!(rows.iter().all(|r| str_width(r) <= 39), "{rows:?}");
        for _ in 0..7 {
            popup.step("@f", 1);
        }
        let rows = popup.rows("@f", 2, || 0, many, (40, 15));
        assert!(rows[4].starts_with("❯ @file07.rs"), "{rows:?}");
        assert_eq!(popup.take("@f", 2), Some((0, "@file07.rs ".into())));
    }
}
