//! A resumed conversation shown again (`linggen -c`, `/resume`): the last exchanges as they
//! read in the transcript, the person's lines, the answers rendered, tool calls folded to
//! one line per answer. Tool output is not repeated.

use super::View;
use crate::llm::{ChatMessage, Role};
use crate::repl::render::{self, MarkdownStream};

/// How many of the person's messages (with what followed each) are shown again.
const EXCHANGES: usize = 10;
/// Longest answer shown again; the rest is counted.
const ANSWER_LINES: usize = 40;

impl View {
    /// Shows the end of a resumed conversation before the first prompt.
    pub fn replay(&mut self, session_id: &str, history: &[ChatMessage]) {
        // The list the session is about to announce (`TodosUpdated`), known now: Ctrl+T
        // pressed at the first prompt must not find it missing.
        if let Some(todos) = crate::tools::todo::last_in(history) {
            self.session.todos = todos;
        }
        let said: Vec<usize> = history
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::User && !crate::session::is_observation(m))
            .map(|(i, _)| i)
            .collect();
        if said.is_empty() {
            return;
        }
        self.resumed = true;
        let from = said[said.len().saturating_sub(EXCHANGES)];
        let shown = said.len() - said.iter().filter(|&&i| i < from).count();
        let mut lines = vec![self.style.dim(&format!(
            "resumed session {session_id} · the last {shown} of {} exchanges:",
            said.len()
        ))];
        // An auto-mode observation is not the person's line; its tool call shows instead.
        for message in history[from..]
            .iter()
            .filter(|m| !crate::session::is_observation(m))
        {
            lines.extend(self.replayed(message));
        }
        lines.push(self.style.dim("─── resumed ───"));
        self.print(lines);
    }

    fn replayed(&self, message: &ChatMessage) -> Vec<String> {
        let strip = |s: &str| crate::tools::terminal_text::strip_controls(s).into_owned();
        match message.role {
            Role::User => {
                let mut rows = message.content.trim().lines();
                let first = rows.next().unwrap_or_default();
                let more = if rows.next().is_some() { " …" } else { "" };
                vec![self.style.dim(&strip(&format!("› {first}{more}")))]
            }
            Role::Assistant => {
                let mut lines = Vec::new();
                if !message.content.trim().is_empty() {
                    let mut stream = MarkdownStream::new(self.style.clone(), self.width);
                    let mut rendered = stream.push(message.content.trim());
                    rendered.extend(stream.finish());
                    if rendered.len() > ANSWER_LINES {
                        let hidden = rendered.len() - ANSWER_LINES;
                        rendered.truncate(ANSWER_LINES);
                        let more = crate::text::plural(hidden, "more line", "more lines");
                        rendered.push(self.style.dim(&format!("… {more}")));
                    }
                    lines.extend(rendered);
                }
                if !message.tool_calls.is_empty() {
                    let names: Vec<&str> =
                        message.tool_calls.iter().map(|c| c.name.as_str()).collect();
                    let summary = folded(&names);
                    lines.push(render::tool_line(&strip(&summary), &self.style));
                }
                lines
            }
            Role::System | Role::Tool => Vec::new(),
        }
    }
}

/// `Read ×2, Bash`: tool names in order of first use, with a count where repeated.
fn folded(names: &[&str]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for name in names {
        match counts.iter_mut().find(|(n, _)| n == name) {
            Some((_, count)) => *count += 1,
            None => counts.push((name, 1)),
        }
    }
    counts
        .iter()
        .map(|(name, count)| match count {
            1 => name.to_string(),
            n => format!("{name} ×{n}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn tool_names_fold_with_counts() {
        assert_eq!(super::folded(&["Read", "Bash", "Read"]), "Read ×2, Bash");
    }
}
