//! The agent's todo list in the terminal: printed once under each `TodoWrite` that changed
//! it (`⎿ ☒ done / ☐ in progress / ☐ pending`, as Claude Code shows it), the item in
//! progress as one row of the live area while a turn runs, and the whole list on Ctrl+T.
//! The list itself is the session's projection's (`SessionView::todos`); nothing is kept
//! here.

use super::View;
use super::live::cut;
use crate::repl::render::RenderStyle;
use crate::repl::render::paint::{Ink, Span, paint};
use crate::tools::terminal_text::strip_controls;
use crate::tools::todo::{Todo, TodoStatus};

impl View {
    /// Ctrl+T: the whole list above the prompt, or one dim line saying there is none.
    pub fn show_todos(&mut self) {
        if self.session.todos.is_empty() {
            self.hint("no todo list in this session");
            return;
        }
        let counts = crate::tools::todo::counts(&self.session.todos);
        let mut lines = vec![self.style.dim(&format!("todo list · {counts}"))];
        lines.extend(rows(&self.session.todos, &self.style));
        self.print(lines);
    }

    /// The rows a successful `TodoWrite` shows in place of its result line.
    pub(super) fn todo_result_rows(&self) -> Vec<String> {
        if self.session.todos.is_empty() {
            return vec![self.style.dim("  ⎿ todo list cleared")];
        }
        rows(&self.session.todos, &self.style)
    }

    /// `☐ 2/5 · Running the tests`: the item in progress, for the live area.
    pub(super) fn todo_live_row(&self, width: usize) -> Option<String> {
        let todos = &self.session.todos;
        let at = todos
            .iter()
            .position(|t| t.status == TodoStatus::InProgress)?;
        let doing = one_row(&todos[at].active_form);
        let line = format!("☐ {}/{} · {doing}", at + 1, todos.len());
        Some(self.style.dim(&cut(&line, width)))
    }
}

/// `  ⎿ ☒ first` then `    ☐ second`…: completed items struck through and dim, the one in
/// progress bold. Colours follow `NO_COLOR` through `paint`; in plain output the markers
/// alone tell the states apart, with `(in progress)` where bold would.
fn rows(todos: &[Todo], style: &RenderStyle) -> Vec<String> {
    todos
        .iter()
        .enumerate()
        .map(|(i, todo)| {
            let lead = if i == 0 { "  ⎿ " } else { "    " };
            let marker = match todo.status {
                TodoStatus::Completed => "☒",
                TodoStatus::InProgress | TodoStatus::Pending => "☐",
            };
            let text = one_row(&todo.content);
            let Some(theme) = style.theme() else {
                let note = match todo.status {
                    TodoStatus::InProgress => " (in progress)",
                    _ => "",
                };
                return format!("{lead}{marker} {text}{note}");
            };
            let ink = match todo.status {
                TodoStatus::Completed => Ink {
                    strike: true,
                    ..Ink::fg(theme.colors.dim)
                },
                TodoStatus::InProgress => Ink::default().bold(),
                TodoStatus::Pending => Ink::default(),
            };
            paint(&[
                Span::plain(format!("{lead}{marker} ")),
                Span::new(text, ink),
            ])
        })
        .collect()
}

/// The model's text on one row, without control sequences.
fn one_row(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    strip_controls(&text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn todo(content: &str, status: TodoStatus) -> Todo {
        Todo {
            content: content.into(),
            status,
            active_form: format!("{content}ing"),
        }
    }

    #[test]
    fn plain_rows_tell_the_states_apart_and_hold_no_escapes() {
        let todos = [
            todo("Read\x1b[31m", TodoStatus::Completed),
            todo("Test\nit", TodoStatus::InProgress),
            todo("Ship", TodoStatus::Pending),
        ];
        assert_eq!(
            rows(&todos, &RenderStyle::Plain),
            ["  ⎿ ☒ Read", "    ☐ Test it (in progress)", "    ☐ Ship"]
        );
    }
}
