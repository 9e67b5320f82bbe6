//! The approval menu: while a call waits for the person, the live area shows its choices,
//! one highlighted, named for what they allow (`Yes, always this session: Bash(cargo*)`).
//! It stands apart from the input line, so a message typed for the agent is not mistaken
//! for an answer: arrows move, Enter takes the highlighted choice once it was moved to,
//! 1–4 and `y` `a` `p` `n` take a choice at once, Esc denies, and typed text with Enter
//! denies with that text as the reason.

use super::View;
use crate::session::Decision;

/// One approval's choices and which is highlighted.
pub(super) struct Menu {
    choices: Vec<(Decision, String)>,
    selected: usize,
    /// The person moved the highlight: Enter takes it. Before that, Enter alone never
    /// approves (a stray Enter must not run anything).
    moved: bool,
}

/// What a key does to the menu.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MenuKey {
    Up,
    Down,
    Enter,
    /// A digit: that choice (1-based).
    Pick(usize),
    /// `y` once, `a` this session, `p` this project, `n` deny, as typed on a plain line.
    Letter(char),
    /// Esc: deny.
    Deny,
}

impl Menu {
    pub(super) fn new(once_only: bool, always: &[String]) -> Menu {
        let covers = if always.is_empty() {
            "this call".to_string()
        } else {
            always.join(", ")
        };
        let choices = if once_only {
            vec![
                (
                    Decision::AllowOnce,
                    "Yes, once (asked again next time)".to_string(),
                ),
                (Decision::Deny { reason: None }, "No".to_string()),
            ]
        } else {
            vec![
                (Decision::AllowOnce, "Yes, once".to_string()),
                (
                    Decision::AllowSession,
                    format!("Yes, always this session: {covers}"),
                ),
                (
                    Decision::AllowProject,
                    format!("Yes, always in this project: {covers}"),
                ),
                (Decision::Deny { reason: None }, "No".to_string()),
            ]
        };
        Menu {
            choices,
            selected: 0,
            moved: false,
        }
    }
}

impl View {
    /// Applies a menu key; returns the decision it makes, if it makes one.
    pub fn menu_key(&mut self, key: MenuKey) -> Option<Decision> {
        if let MenuKey::Letter(letter) = key {
            // A letter answers also without the menu (a plain terminal shows only the line
            // of choices); the editor sends only the letters that answer this request.
            let decided = match crate::repl::approval::parse(&letter.to_string()) {
                crate::repl::approval::Answer::Decide(decision) => decision,
                crate::repl::approval::Answer::Repeat => return None,
            };
            self.decided();
            return Some(decided);
        }
        let menu = self.menu.as_mut()?;
        let last = menu.choices.len() - 1;
        let decided = match key {
            MenuKey::Up => {
                menu.selected = menu.selected.checked_sub(1).unwrap_or(last);
                menu.moved = true;
                None
            }
            MenuKey::Down => {
                menu.selected = if menu.selected == last {
                    0
                } else {
                    menu.selected + 1
                };
                menu.moved = true;
                None
            }
            MenuKey::Enter if menu.moved => Some(menu.choices[menu.selected].0.clone()),
            MenuKey::Enter => {
                self.hint("  choose with ↑↓ and Enter, a number, or Esc to deny");
                return None;
            }
            MenuKey::Pick(n) => menu.choices.get(n.wrapping_sub(1)).map(|c| c.0.clone()),
            MenuKey::Deny => Some(Decision::Deny { reason: None }),
            MenuKey::Letter(_) => None,
        };
        if decided.is_some() {
            self.decided();
        } else {
            // Redraw the live area with the new highlight.
            self.print(Vec::new());
        }
        decided
    }

    /// The menu answered: it goes at once, so a key right after the answer (the Enter of a
    /// habitual `y⏎`) finds no menu to act on.
    fn decided(&mut self) {
        self.menu = None;
        self.print(Vec::new());
    }

    /// The menu's rows for the live area.
    pub(super) fn menu_lines(&self, width: usize) -> Vec<String> {
        let Some(menu) = &self.menu else {
            return Vec::new();
        };
        let mut lines: Vec<String> = menu
            .choices
            .iter()
            .enumerate()
            .map(|(i, (_, label))| {
                let row = super::live::cut(
                    &format!(
                        "  {} {}. {label}",
                        if i == menu.selected { "❯" } else { " " },
                        i + 1
                    ),
                    width,
                );
                if i == menu.selected {
                    self.style.warn(&row)
                } else {
                    row
                }
            })
            .collect();
        // The keys this request takes: one only "once" can answer takes no `a` or `p`.
        let keys = if menu.choices.len() == 2 {
            "  ↑↓ Enter · 1-2 · y n · Esc denies · or type a reason, then Enter"
        } else {
            "  ↑↓ Enter · 1-4 · y a p n · Esc denies · or type a reason, then Enter"
        };
        lines.push(self.style.dim(&super::live::cut(keys, width)));
        lines
    }
}
