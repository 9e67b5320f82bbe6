//! Runs as a tree: a turn is a top-level run, each delegation (or forked skill) a child run
//! one level deeper. The view indents a run's output by its depth in the session's projection
//! (`SessionView::depth`); `/runs` lays out the session's stored runs the same way.

use super::catalog::one_line;
use crate::store::RunRecord;

/// Indentation per level of delegation.
const INDENT: &str = "  ";
/// `/runs` cuts a task to this many characters.
const TASK_CHARS: usize = 80;

/// The leading spaces for output of a run at `depth`.
pub fn indent(depth: usize) -> String {
    INDENT.repeat(depth)
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
        indent(depth),
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
