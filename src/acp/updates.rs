//! The session's events as ACP `session/update`s: streamed text and thoughts, tool calls
//! with their kind, title, locations and status changes, diffs of edits, the todo list as
//! a plan, and the permission mode as the current mode.
//!
//! Keeps what translating needs between events: which runs were delegated (their text is
//! not the answer; their tool calls are shown), which calls are still open, and each
//! edited file's text from before the edit (an ACP diff carries both texts, linggen's
//! events a unified diff).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::model::{
    ContentChunk, CurrentModeUpdate, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionUpdate, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate,
    ToolKind,
};
use crate::llm::{ChatMessage, Role};
use crate::session::Event;
use crate::tools::ToolName;
use crate::tools::args::keys;
use crate::tools::todo::{Todo, TodoStatus};

/// A file larger than this is not sent whole in a diff (the change still shows as text).
const DIFF_MAX_BYTES: u64 = 1_000_000;

/// A tool call announced and not yet finished.
struct OpenCall {
    call_id: String,
    run_id: String,
    summary: String,
}

/// One session's translation state.
pub struct Translator {
    root: PathBuf,
    /// Runs started by another run: their words go to their parent, not to the editor.
    delegated: HashSet<String>,
    /// Calls started and not finished, oldest first.
    open: Vec<OpenCall>,
    /// An edited file's path and its text before the edit (`None`: it did not exist), by
    /// call id.
    before: HashMap<String, (PathBuf, Option<String>)>,
}

impl Translator {
    pub fn new(root: &Path) -> Translator {
        Translator {
            root: root.to_path_buf(),
            delegated: HashSet::new(),
            open: Vec::new(),
            before: HashMap::new(),
        }
    }

    /// The updates one event makes (none for most). Reads an edited file before and after
    /// the edit.
    pub async fn translate(&mut self, event: &Event) -> Vec<SessionUpdate> {
        match event {
            Event::RunStarted {
                run_id,
                parent_id: Some(_),
                ..
            } => {
                self.delegated.insert(run_id.clone());
                Vec::new()
            }
            Event::Token {
                run_id,
                token,
                thinking,
                ..
            } if !token.is_empty() && !self.delegated.contains(run_id) => {
                let chunk = ContentChunk::text(token.as_str());
                vec![if *thinking {
                    SessionUpdate::AgentThoughtChunk(chunk)
                } else {
                    SessionUpdate::AgentMessageChunk(chunk)
                }]
            }
            Event::ToolCallStarted {
                run_id,
                call_id,
                tool,
                args,
                summary,
            } => vec![self.started(run_id, call_id, tool, args, summary).await],
            Event::AgentStatus {
                run_id,
                status: crate::session::AgentState::RunningTool,
                detail,
                ..
            } => self
                .call_of(run_id, detail.as_deref())
                .map(|id| status_update(&id, ToolCallStatus::InProgress))
                .into_iter()
                .collect(),
            Event::ToolCallFinished {
                call_id,
                ok,
                summary,
                diff,
                excerpt,
                ..
            } => vec![self.finished(call_id, *ok, summary, diff, excerpt).await],
            Event::TodosUpdated { todos } => vec![SessionUpdate::Plan(plan(todos))],
            Event::SettingsUpdated {
                permission_mode, ..
            } => vec![SessionUpdate::CurrentModeUpdate(CurrentModeUpdate {
                current_mode_id: permission_mode.as_str().to_string(),
            })],
            _ => Vec::new(),
        }
    }

    /// The open call a run's approval or status is about: the one with the same summary,
    /// else the run's latest.
    pub fn call_of(&self, run_id: &str, summary: Option<&str>) -> Option<String> {
        let in_run = || self.open.iter().rev().filter(|c| c.run_id == run_id);
        in_run()
            .find(|c| Some(c.summary.as_str()) == summary)
            .or_else(|| in_run().next())
            .map(|c| c.call_id.clone())
    }

    async fn started(
        &mut self,
        run_id: &str,
        call_id: &str,
        tool: &str,
        args: &Value,
        summary: &str,
    ) -> SessionUpdate {
        self.open.push(OpenCall {
            call_id: call_id.to_string(),
            run_id: run_id.to_string(),
            summary: summary.to_string(),
        });
        let path = path_arg(args).map(|p| self.root.join(p));
        if is_edit(tool)
            && let Some(path) = &path
        {
            let text = read_small(path).await;
            self.before
                .insert(call_id.to_string(), (path.clone(), text));
        }
        SessionUpdate::ToolCall(ToolCall {
            tool_call_id: call_id.to_string(),
            title: summary.to_string(),
            kind: kind(tool),
            status: ToolCallStatus::Pending,
            locations: path
                .map(|path| ToolCallLocation { path })
                .into_iter()
                .collect(),
            raw_input: Some(args.clone()),
        })
    }

    async fn finished(
        &mut self,
        call_id: &str,
        ok: bool,
        summary: &str,
        diff: &Option<String>,
        excerpt: &Option<String>,
    ) -> SessionUpdate {
        self.open.retain(|c| c.call_id != call_id);
        let before = self.before.remove(call_id);
        let mut content = Vec::new();
        match (before, diff) {
            (Some((path, old_text)), Some(_)) if ok => match read_small(&path).await {
                // Unchanged on disk: the editor holds the change (linggen wrote through its
                // `fs/write_text_file`), so only linggen's own diff shows it.
                Some(new_text) if Some(&new_text) != old_text.as_ref() => {
                    content.push(ToolCallContent::Diff(Diff {
                        path,
                        old_text,
                        new_text,
                    }))
                }
                _ => content.extend(diff.as_deref().map(fenced_diff)),
            },
            _ => content.extend(diff.as_deref().map(fenced_diff)),
        }
        let text = match excerpt {
            Some(excerpt) => format!("{summary}\n\n```\n{excerpt}\n```"),
            None => summary.to_string(),
        };
        content.push(ToolCallContent::text(text));
        let status = if ok {
            ToolCallStatus::Completed
        } else {
            ToolCallStatus::Failed
        };
        SessionUpdate::ToolCallUpdate(ToolCallUpdate {
            tool_call_id: call_id.to_string(),
            status: Some(status),
            content: Some(content),
            ..Default::default()
        })
    }
}

/// A stored conversation as the updates that show it (`session/load`): the person's
/// messages, the answers, and each tool call with its result.
pub fn replay(history: &[ChatMessage]) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    for message in history {
        let text = message.content.to_string();
        match message.role {
            Role::User if !text.is_empty() => {
                updates.push(SessionUpdate::UserMessageChunk(ContentChunk::text(text)))
            }
            Role::Assistant => {
                if !text.is_empty() {
                    updates.push(SessionUpdate::AgentMessageChunk(ContentChunk::text(text)));
                }
                for call in &message.tool_calls {
                    let title = match call_detail(&call.arguments) {
                        Some(detail) => format!("{} {detail}", call.name),
                        None => call.name.clone(),
                    };
                    updates.push(SessionUpdate::ToolCall(ToolCall {
                        tool_call_id: call.id.clone(),
                        title,
                        kind: kind(&call.name),
                        status: ToolCallStatus::Completed,
                        locations: Vec::new(),
                        raw_input: Some(call.arguments.clone()),
                    }));
                }
            }
            Role::Tool => {
                let Some(call_id) = &message.tool_call_id else {
                    continue;
                };
                let status = if message.is_error {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Completed
                };
                let shown = crate::text::prefix_bytes(&text, REPLAYED_RESULT_BYTES);
                updates.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate {
                    tool_call_id: call_id.clone(),
                    status: Some(status),
                    content: Some(vec![ToolCallContent::text(format!("```\n{shown}\n```"))]),
                    ..Default::default()
                }));
            }
            _ => {}
        }
    }
    updates
}

/// How much of a stored tool result a replay shows.
const REPLAYED_RESULT_BYTES: usize = 2_000;

/// What a replayed call was about: its file, command or pattern.
fn call_detail(args: &Value) -> Option<String> {
    let keys = [
        keys::PATH,
        keys::COMMAND,
        keys::GLOBS,
        keys::QUERY,
        keys::AGENT,
    ];
    keys.iter()
        .flat_map(|k| k.iter())
        .find_map(|key| args.get(*key).and_then(Value::as_str))
        .map(|s| crate::text::one_line(s, 80))
}

/// A tool call's new status, alone.
pub fn status_update(call_id: &str, status: ToolCallStatus) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate {
        tool_call_id: call_id.to_string(),
        status: Some(status),
        ..Default::default()
    })
}

/// A unified diff shown as text (several files, or a file too large to send whole).
pub fn fenced_diff(diff: &str) -> ToolCallContent {
    ToolCallContent::text(format!("```diff\n{}\n```", diff.trim_end()))
}

/// What kind of work a tool does, for the editor's icon.
pub fn kind(tool: &str) -> ToolKind {
    match ToolName::resolve(tool) {
        Some(ToolName::Read | ToolName::RepoInfo | ToolName::BashOutput) => ToolKind::Read,
        Some(ToolName::Glob | ToolName::Grep) => ToolKind::Search,
        Some(ToolName::Write | ToolName::Edit | ToolName::ApplyPatch | ToolName::ProposePatch) => {
            ToolKind::Edit
        }
        Some(ToolName::Bash | ToolName::KillShell) => ToolKind::Execute,
        Some(ToolName::TodoWrite | ToolName::Delegate | ToolName::Skill) => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

fn is_edit(tool: &str) -> bool {
    matches!(
        ToolName::resolve(tool),
        Some(ToolName::Write | ToolName::Edit)
    )
}

/// The file a call names, as the model spelled it.
fn path_arg(args: &Value) -> Option<&str> {
    keys::PATH
        .iter()
        .find_map(|key| args.get(*key).and_then(Value::as_str))
        .filter(|p| !p.is_empty())
}

/// A text file's contents, unless it is missing, not text, or too large to send.
async fn read_small(path: &Path) -> Option<String> {
    let meta = tokio::fs::metadata(path).await.ok()?;
    if !meta.is_file() || meta.len() > DIFF_MAX_BYTES {
        return None;
    }
    tokio::fs::read_to_string(path).await.ok()
}

/// The todo list as an ACP plan.
pub fn plan(todos: &[Todo]) -> Plan {
    let entries = todos
        .iter()
        .map(|t| PlanEntry {
            content: t.content.clone(),
            priority: PlanEntryPriority::Medium,
            status: match t.status {
                TodoStatus::Pending => PlanEntryStatus::Pending,
                TodoStatus::InProgress => PlanEntryStatus::InProgress,
                TodoStatus::Completed => PlanEntryStatus::Completed,
            },
        })
        .collect();
    Plan { entries }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn started(call_id: &str, tool: &str, args: Value) -> Event {
        Event::ToolCallStarted {
            run_id: "r1".into(),
            call_id: call_id.into(),
            tool: tool.into(),
            args,
            summary: format!("{tool} call"),
        }
    }

    #[tokio::test]
    async fn an_edit_becomes_a_tool_call_with_a_location_and_a_two_sided_diff() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "old\n").unwrap();
        let mut t = Translator::new(dir.path());
        let call = t
            .translate(&started("c1", "Edit", json!({"file_path": "a.txt"})))
            .await;
        let call = serde_json::to_value(&call[0]).unwrap();
        assert_eq!(call["sessionUpdate"], "tool_call");
        assert_eq!(call["kind"], "edit");
        assert_eq!(
            call["locations"][0]["path"],
            json!(dir.path().join("a.txt"))
        );
        std::fs::write(dir.path().join("a.txt"), "new\n").unwrap();
        let done = Event::ToolCallFinished {
            run_id: "r1".into(),
            call_id: "c1".into(),
            tool: "Edit".into(),
            ok: true,
            summary: "1 line changed".into(),
            diff: Some("-old\n+new".into()),
            excerpt: None,
        };
        let done = serde_json::to_value(&t.translate(&done).await[0]).unwrap();
        assert_eq!(done["status"], "completed");
        assert_eq!(done["content"][0]["type"], "diff");
        assert_eq!(done["content"][0]["oldText"], "old\n");
        assert_eq!(done["content"][0]["newText"], "new\n");
    }

    #[tokio::test]
    async fn delegated_runs_keep_their_words_and_show_their_calls() {
        let mut t = Translator::new(Path::new("/"));
        let child = Event::RunStarted {
            run_id: "child".into(),
            parent_id: Some("r1".into()),
            agent_id: "coder".into(),
            task: "t".into(),
        };
        assert!(t.translate(&child).await.is_empty());
        let token = |run: &str| Event::Token {
            run_id: run.into(),
            agent_id: "a".into(),
            token: "hi".into(),
            thinking: false,
            done: false,
        };
        assert!(t.translate(&token("child")).await.is_empty());
        assert_eq!(t.translate(&token("r1")).await.len(), 1);
        let glob = Event::ToolCallStarted {
            run_id: "child".into(),
            call_id: "c9".into(),
            tool: "Glob".into(),
            args: json!({"pattern": "*"}),
            summary: "Glob *".into(),
        };
        let shown = serde_json::to_value(&t.translate(&glob).await[0]).unwrap();
        assert_eq!(shown["kind"], "search");
    }

    #[tokio::test]
    async fn a_running_status_finds_its_call_by_summary() {
        let mut t = Translator::new(Path::new("/"));
        t.translate(&started("c1", "Read", json!({"file_path": "x"})))
            .await;
        t.translate(&started("c2", "Bash", json!({"command": "ls"})))
            .await;
        assert_eq!(t.call_of("r1", Some("Read call")).as_deref(), Some("c1"));
        assert_eq!(t.call_of("r1", Some("Bash call")).as_deref(), Some("c2"));
        assert_eq!(t.call_of("r2", None), None);
        // Without a matching summary, the run's latest call, whatever its id sorts as.
        t.translate(&started("a0", "Glob", json!({"pattern": "*"})))
            .await;
        assert_eq!(t.call_of("r1", Some("other")).as_deref(), Some("a0"));
    }
}
