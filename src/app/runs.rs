//! `linggen runs show ID`: a run's audit trail — every call with its arguments, each result
//! (a command's exit code, a patch's diff), the checkpoints taken, the files changed and how
//! it ended — with the runs it delegated to nested under it. `--full` adds everything the
//! summaries leave out: each call's whole arguments and output, and diffs uncut.

use super::{Failure, Start, exit, load_workspace};
use crate::llm::{ChatMessage, Role};
use crate::store::{LogEntry, RunDetail, RunRecord, Store};
use crate::text::one_line;

/// `/runs` and `linggen runs` cut a task to this many characters.
const TASK_CHARS: usize = 80;

/// Lines of a diff or output shown per result; the store keeps them all.
const DETAIL_LINES: usize = 40;

/// `linggen runs show ID [--full]`.
pub fn show_run(start: &Start, id: &str, full: bool) -> i32 {
    let lines = load_workspace(start).and_then(|ws| run_lines(&ws.home, id, Some(&ws.root), full));
    super::print_lines(lines)
}

/// `linggen runs`: the newest session's runs as a tree, ids first.
pub fn list_runs(start: &Start) -> i32 {
    let lines = load_workspace(start).and_then(|ws| {
        let store = Store::open(&ws.home)?;
        let session = store.latest_session(&ws.root.display().to_string())?;
        let Some(session) = session else {
            return Ok(vec![format!(
                "No sessions in {} yet. Start one with `linggen -p \"task\"`.",
                ws.root.display()
            )]);
        };
        let mut lines = vec![format!("session {} · {}", session.id, session.title)];
        lines.extend(tree_lines(&store.runs(&session.id)?));
        // Hooks that ran outside any run (`SessionStart`, `SessionEnd`, a blocked prompt)
        // are logged under the session's id.
        for entry in store.run_log(&session.id)? {
            push_entry(&entry, "", None, &mut lines);
        }
        lines.push("linggen runs show ID prints a run's calls, results and changes".into());
        Ok(lines)
    });
    super::print_lines(lines)
}

/// The audit trail of run `id` (or the one run it is a prefix of). With `root`, only a
/// run of that folder's sessions: another project's run is not shown. `full`: every call's
/// whole arguments, output and diff.
pub fn run_lines(
    home: &std::path::Path,
    id: &str,
    root: Option<&std::path::Path>,
    full: bool,
) -> Result<Vec<String>, Failure> {
    let store = Store::open(home)?;
    let not_found = || Failure {
        code: exit::USAGE,
        message: format!(
            "no run `{id}` here (or the prefix names several); `linggen runs` lists this \
             folder's runs with their ids"
        ),
    };
    let run = store.find_run(id)?.ok_or_else(not_found)?;
    if let Some(root) = root {
        let sessions = store.list_sessions(&root.display().to_string())?;
        if !sessions.iter().any(|s| s.id == run.session_id) {
            return Err(not_found());
        }
    }
    let mut lines = Vec::new();
    push_run(&store, &run, 0, full, &mut lines)?;
    Ok(lines)
}

fn push_run(
    store: &Store,
    run: &RunDetail,
    depth: usize,
    full: bool,
    lines: &mut Vec<String>,
) -> Result<(), Failure> {
    let pad = "  ".repeat(depth);
    let took = run
        .ended_at
        .map(|end| format!(" · {:.1} s", (end - run.started_at) as f64 / 1000.0))
        .unwrap_or_default();
    let model = run
        .model
        .as_deref()
        .map(|m| format!(" · {m}"))
        .unwrap_or_default();
    lines.push(format!(
        "{pad}run {} · {} · {}{model}{took}",
        run.id, run.agent_id, run.status
    ));
    lines.push(format!("{pad}task: {}", first_line(&run.task)));
    let children = store.run_children(&run.id)?;
    let mut outputs = match full {
        true => Some(Outputs(store.run_messages(&run.id)?)),
        false => None,
    };
    for entry in store.run_log(&run.id)? {
        push_entry(&entry, &pad, outputs.as_mut(), lines);
    }
    // The runs it delegated to, each with its own trail.
    for child in &children {
        push_run(store, child, depth + 1, full, lines)?;
    }
    Ok(())
}

/// A run's stored messages, from which `--full` takes each call's whole output.
struct Outputs(Vec<ChatMessage>);

impl Outputs {
    /// The output of the run's next `tool` call. The trail does not keep call ids, so
    /// results are matched to the run's tool messages in order, by tool; a person's `!cmd`
    /// has no tool message, and its output is the message that handed it to the model.
    fn take(&mut self, tool: &str) -> Option<String> {
        let found = self
            .0
            .iter()
            .position(|m| m.role == Role::Tool && m.tool_name.as_deref() == Some(tool))
            .or_else(|| {
                self.0.iter().position(|m| {
                    m.role == Role::User && tool == "Bash" && m.content.starts_with("I ran `")
                })
            })?;
        Some(self.0.remove(found).content.to_string())
    }
}

fn push_entry(
    entry: &LogEntry,
    pad: &str,
    mut outputs: Option<&mut Outputs>,
    lines: &mut Vec<String>,
) {
    let full = outputs.is_some();
    let indented = |text: &str, lines: &mut Vec<String>| {
        lines.extend(text.lines().map(|line| format!("{pad}      {line}")));
    };
    match entry.kind.as_str() {
        "call" => {
            let args = entry.detail.as_deref().unwrap_or("");
            lines.push(format!("{pad}  → {}", first_line(&entry.text)));
            // A patch's diff shows with its result, as the files changed.
            let patch = ["apply_patch", "propose_patch"]
                .iter()
                .any(|p| entry.text.starts_with(p));
            if full && !args.is_empty() && args != "{}" {
                let pretty = serde_json::from_str::<serde_json::Value>(args)
                    .ok()
                    .and_then(|v| serde_json::to_string_pretty(&v).ok());
                indented(pretty.as_deref().unwrap_or(args), lines);
            } else if !patch && !args.is_empty() && args != "{}" && args.len() <= 200 {
                lines.push(format!("{pad}      {args}"));
            }
        }
        "result" => {
            let mark = if entry.ok == Some(true) { "✓" } else { "✗" };
            lines.push(format!("{pad}    {mark} {}", first_line(&entry.text)));
            let output = outputs.as_mut().and_then(|o| {
                let tool = entry.text.split_once(": ").map_or("", |(tool, _)| tool);
                o.take(tool)
            });
            if let Some(detail) = &entry.detail {
                let all: Vec<&str> = detail.lines().collect();
                let shown = if full { all.len() } else { DETAIL_LINES };
                // The whole output below says all a person's command's excerpt says.
                if output.is_none() || detail.starts_with("---") {
                    for line in all.iter().take(shown) {
                        lines.push(format!("{pad}      {line}"));
                    }
                }
                if all.len() > shown {
                    lines.push(format!(
                        "{pad}      … {} more lines (all of them: --full)",
                        all.len() - shown
                    ));
                }
            }
            if let Some(output) = output {
                lines.push(format!("{pad}      output:"));
                indented(&output, lines);
            }
        }
        "checkpoint" => lines.push(format!("{pad}  ◆ {}", entry.text)),
        "changes" => lines.push(format!("{pad}  changed: {}", entry.text)),
        "outcome" => {
            let result = entry.detail.as_deref().map(first_line).unwrap_or_default();
            lines.push(format!("{pad}  outcome: {} — {result}", entry.text));
        }
        other => lines.push(format!("{pad}  {other}: {}", entry.text)),
    }
}

fn first_line(text: &str) -> String {
    let mut rows = text.trim().lines();
    let first: String = rows.next().unwrap_or("").chars().take(160).collect();
    if rows.next().is_some() {
        format!("{first} …")
    } else {
        first
    }
}

/// `/runs`: one line per run, `id status agent task` (the id for `linggen runs show`),
/// children under their parent and indented, in the order the runs started.
pub fn tree_lines(runs: &[RunRecord]) -> Vec<String> {
    let known = |id: &str| runs.iter().any(|r| r.id == id);
    let mut lines = Vec::new();
    // A run whose parent is not in the list (never expected) is shown as a root, not lost.
    for root in runs
        .iter()
        .filter(|r| r.parent_id.as_deref().is_none_or(|p| !known(p)))
    {
        push_subtree(runs, root, 0, &mut lines);
    }
    lines
}

fn push_subtree(runs: &[RunRecord], run: &RunRecord, depth: usize, lines: &mut Vec<String>) {
    let task = one_line(&run.task, TASK_CHARS);
    let model = run
        .model
        .as_deref()
        .map(|m| format!(" [{m}]"))
        .unwrap_or_default();
    lines.push(format!(
        "{}{}  {:<9} {}{model} {task}",
        "  ".repeat(depth),
        run.id,
        run.status,
        run.agent_id
    ));
    // Ids are unique, so a parent cycle cannot occur; the depth cap is a guard anyway.
    if depth > 64 {
        return;
    }
    for child in runs
        .iter()
        .filter(|r| r.parent_id.as_deref() == Some(run.id.as_str()))
    {
        push_subtree(runs, child, depth + 1, lines);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str, parent: Option<&str>, agent: &str, task: &str, status: &str) -> RunRecord {
        RunRecord {
            id: id.into(),
            parent_id: parent.map(str::to_string),
            agent_id: agent.into(),
            task: task.into(),
            status: status.into(),
            model: None,
        }
    }

    #[test]
    fn runs_are_listed_as_a_tree_in_start_order() {
        let runs = [
            run("1", None, "ling", "fix the build", "completed"),
            run(
                "2",
                Some("1"),
                "coder",
                "patch lib.rs\nwith details",
                "completed",
            ),
            run("3", Some("2"), "coder", "inner", "failed"),
            run("4", None, "ling", "second turn", "running"),
            run("5", Some("1"), "coder", "another", "cancelled"),
            run("6", Some("gone"), "coder", "orphan", "completed"),
        ];
        assert_eq!(
            tree_lines(&runs),
            [
                "1  completed ling fix the build",
                "  2  completed coder patch lib.rs…",
                "    3  failed    coder inner",
                "  5  cancelled coder another",
                "4  running   ling second turn",
                "6  completed coder orphan",
            ]
        );
        assert!(tree_lines(&[]).is_empty());
    }
}
