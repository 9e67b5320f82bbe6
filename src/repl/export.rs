//! `/export [file]`: the session's transcript as markdown — the person's messages, the
//! answers, each tool call with its arguments and result, and each approval with its
//! answer — read from the transcript the web mirror keeps (the events a person reads,
//! resumed messages first). Writing the file is the person's own act: no approval, and an
//! existing file is never replaced.

use std::path::{Path, PathBuf};

use super::shell::Shell;
use crate::llm::{Role, ToolCall};
use crate::session::view::SessionView;
use crate::session::{Decision, Event};

/// Lines of a tool's output excerpt or diff kept in the export.
const DETAIL_LINES: usize = 40;

impl Shell {
    pub(super) async fn export(&mut self, args: &str) {
        let Some(id) = self.link.live.as_ref().map(|l| l.session_id.clone()) else {
            return self
                .view
                .hint("no session yet, so nothing to export; send a message first");
        };
        let Some(mirror) = self.link.mirror.as_ref() else {
            return self.view.error(
                "/export works on a session this terminal runs; this one runs elsewhere (its page has it all)",
            );
        };
        let events: Vec<Event> = crate::app::share::transcript(mirror)
            .iter()
            .map(|e| e.event.clone())
            .collect();
        let path = target(args, &self.ws.root, &id);
        let (text, messages) = markdown(&id, &self.ws.root, &events);
        if messages == 0 {
            return self
                .view
                .hint("nothing to export yet: no message in this session");
        }
        let shown = path.display().to_string();
        // A file write: off the runtime.
        let written = tokio::task::spawn_blocking(move || write_new(&path, &text)).await;
        match written.unwrap_or_else(|e| Err(e.to_string())) {
            Ok(()) => self
                .view
                .hint(&format!("exported {messages} messages to {shown}")),
            Err(why) => self.view.error(&why),
        }
    }
}

/// The file to write: the argument (relative to the current directory, as a shell reads
/// it), else `linggen-<session id prefix>.md` in the workspace.
fn target(args: &str, root: &Path, session_id: &str) -> PathBuf {
    let args = args.trim();
    if args.is_empty() {
        let prefix: String = session_id.chars().take(8).collect();
        return root.join(format!("linggen-{prefix}.md"));
    }
    let path = PathBuf::from(args);
    match (path.is_absolute(), std::env::current_dir()) {
        (false, Ok(cwd)) => cwd.join(path),
        _ => path,
    }
}

/// Writes `text` to a file that does not exist yet.
fn write_new(path: &Path, text: &str) -> Result<(), String> {
    if path.symlink_metadata().is_ok() {
        return Err(format!(
            "{} exists; not overwritten (/export OTHER.md writes another file)",
            path.display()
        ));
    }
    crate::durable::replace(path, text.as_bytes(), crate::durable::Options::default())
        .map_err(|e| format!("cannot write {}: {}", path.display(), e.reason()))
}

/// The transcript as markdown, and how many messages (the person's and the agents') it
/// holds.
fn markdown(session_id: &str, root: &Path, events: &[Event]) -> (String, usize) {
    let mut doc = Document {
        out: format!(
            "# linggen session {session_id}\n\nWorkspace: `{}`\n",
            root.display()
        ),
        messages: 0,
        // Resumed messages have no call events: their calls are shown from the messages.
        live_calls: events
            .iter()
            .filter_map(|e| match e {
                Event::ToolCallStarted { call_id, .. } => Some(call_id.as_str()),
                _ => None,
            })
            .collect(),
    };
    // The runs, to tell a delegated run's task and answer from the turn's own.
    let mut runs = SessionView::default();
    for event in events {
        runs.apply(event);
        let delegated = match event {
            Event::Message { run_id, .. } => runs.depth(run_id) > 0,
            _ => false,
        };
        doc.add(event, delegated);
    }
    (doc.out, doc.messages)
}

/// The markdown written so far, and what later events need to know of earlier ones.
struct Document<'a> {
    out: String,
    messages: usize,
    /// Calls that have their own events, so a message's list of calls skips them.
    live_calls: std::collections::HashSet<&'a str>,
}

impl Document<'_> {
    /// Adds one event's part; `delegated` when it is a message of a delegated run.
    fn add(&mut self, event: &Event, delegated: bool) {
        match event {
            Event::Message {
                from,
                to,
                role: Role::User,
                content,
                ..
            } if from != crate::session::OBSERVATION => {
                self.messages += 1;
                let who = match from.as_str() {
                    _ if delegated => format!("{from} → {to} (delegated task)"),
                    "terminal" | "user" => "You".to_string(),
                    other => format!("You (from {other})"),
                };
                self.out
                    .push_str(&format!("\n## {who}\n\n{}\n", content.trim_end()));
            }
            Event::Message {
                from,
                role: Role::Assistant,
                content,
                tool_calls,
                ..
            } => self.answer(from, content, tool_calls, delegated),
            Event::ToolCallStarted {
                tool,
                args,
                summary,
                ..
            } => self.out.push_str(&call_block(tool, summary, args)),
            Event::ToolCallFinished {
                ok,
                summary,
                diff,
                excerpt,
                ..
            } => self.result(*ok, summary, excerpt.as_deref(), diff.as_deref()),
            Event::ApprovalRequested {
                summary, reason, ..
            } => self.out.push_str(&format!(
                "\n> approval asked for `{}`: {reason}\n",
                summary.replace('`', "'")
            )),
            Event::ApprovalResolved { decision, by, .. } => {
                let answer = answer_words(decision);
                self.out.push_str(&format!("> {answer} (by {by})\n"));
            }
            Event::Error { message } => self.out.push_str(&format!("\n**error:** {message}\n")),
            _ => {}
        }
    }

    /// An agent's message: its text, and the calls it made that have no events of their own.
    fn answer(&mut self, from: &str, content: &str, tool_calls: &[ToolCall], delegated: bool) {
        self.messages += 1;
        if !content.trim().is_empty() {
            let who = match delegated {
                true => format!("{from} (delegated)"),
                false => from.to_string(),
            };
            self.out
                .push_str(&format!("\n## {who}\n\n{}\n", content.trim_end()));
        }
        for call in tool_calls
            .iter()
            .filter(|c| !self.live_calls.contains(c.id.as_str()))
        {
            self.out
                .push_str(&call_block(&call.name, &call.name, &call.arguments));
        }
    }

    /// A finished call's result line, then its excerpt and diff, each cut to a few lines.
    fn result(&mut self, ok: bool, summary: &str, excerpt: Option<&str>, diff: Option<&str>) {
        let mark = if ok { "✓" } else { "✗" };
        self.out.push_str(&format!("\n{mark} {summary}\n"));
        for detail in [excerpt, diff].into_iter().flatten() {
            let lang = if detail.starts_with("---") {
                "diff"
            } else {
                ""
            };
            self.out.push_str(&fenced(&first_lines(detail), lang));
        }
    }
}

/// How an approval was answered, in words.
fn answer_words(decision: &Decision) -> String {
    match decision {
        Decision::AllowOnce => "allowed once".to_string(),
        Decision::AllowSession => "allowed for the session".into(),
        Decision::AllowProject => "allowed for the project".into(),
        Decision::Deny { reason: None } => "denied".into(),
        Decision::Deny {
            reason: Some(reason),
        } => format!("denied: {reason}"),
    }
}

fn call_block(tool: &str, summary: &str, args: &serde_json::Value) -> String {
    let mut block = format!("\n**{tool}** `{}`\n", summary.replace('`', "'"));
    let empty = args.as_object().is_some_and(|o| o.is_empty()) || args.is_null();
    if !empty {
        let pretty = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
        block.push_str(&fenced(&pretty, "json"));
    }
    block
}

/// A fenced block whose fence is longer than any run of backticks inside.
fn fenced(text: &str, lang: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("\n{fence}{lang}\n{}\n{fence}\n", text.trim_end())
}

fn first_lines(text: &str) -> String {
    let all: Vec<&str> = text.lines().collect();
    let mut kept = all
        .iter()
        .take(DETAIL_LINES)
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    if all.len() > DETAIL_LINES {
        kept.push_str(&format!("\n… {} more lines", all.len() - DETAIL_LINES));
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(run_id: &str, from: &str, to: &str, role: Role, text: &str) -> Event {
        Event::Message {
            run_id: run_id.into(),
            from: from.into(),
            to: to.into(),
            role,
            content: text.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
            is_error: false,
            images: Vec::new(),
        }
    }

    #[test]
    fn a_delegated_task_is_not_the_persons_message() {
        let events = [
            Event::RunStarted {
                run_id: "r1".into(),
                parent_id: None,
                agent_id: "ling".into(),
                task: "fix it".into(),
            },
            message("r1", "terminal", "ling", Role::User, "fix it"),
            Event::SubagentSpawned {
                parent_id: "r1".into(),
                subagent_id: "r2".into(),
                agent_id: "coder".into(),
                task: "patch main".into(),
                background: false,
            },
            message("r2", "ling", "coder", Role::User, "patch main"),
            message("r2", "coder", "user", Role::Assistant, "patched"),
            message("r1", "ling", "user", Role::Assistant, "fixed"),
        ];
        let (text, messages) = markdown("s1", Path::new("/w"), &events);
        assert_eq!(messages, 4);
        assert!(text.contains("## You\n\nfix it\n"), "{text}");
        assert!(
            text.contains("## ling → coder (delegated task)\n\npatch main"),
            "{text}"
        );
        assert!(text.contains("## coder (delegated)\n\npatched"), "{text}");
        assert!(text.contains("## ling\n\nfixed"), "{text}");
    }

    #[test]
    fn a_fence_outlasts_the_backticks_inside() {
        let block = fenced("a ```` b", "");
        assert!(block.contains("\n`````\n"), "{block}");
        assert!(fenced("plain", "json").starts_with("\n```json\n"));
    }

    #[test]
    fn the_default_file_is_named_after_the_session_in_the_workspace() {
        let root = Path::new("/w");
        assert_eq!(
            target("", root, "0123456789abcdef"),
            PathBuf::from("/w/linggen-01234567.md")
        );
        assert_eq!(target("/tmp/x.md", root, "id"), PathBuf::from("/tmp/x.md"));
    }
}
