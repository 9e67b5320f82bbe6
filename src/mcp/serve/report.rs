//! A task's report as the `task` tool's result: text for the caller's model (the answer,
//! then what changed, then where the session is), and the same facts as structured content
//! for programs.

use crate::mcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

use super::{TaskReport, TaskStatus};

/// The result of a `task` call: an error result unless the task completed.
pub(super) fn tool_result(report: &TaskReport) -> CallToolResult {
    let content = vec![ContentBlock::text(text(report))];
    let mut result = match report.status {
        TaskStatus::Completed => CallToolResult::success(content),
        _ => CallToolResult::error(content),
    };
    result.structured_content = Some(json!({
        "status": report.status,
        "answer": report.answer,
        "files_changed": report.files_changed,
        "more_files_changed": report.more_files_changed,
        "session_id": report.session_id,
        "saved": report.saved,
    }));
    result
}

fn text(report: &TaskReport) -> String {
    let mut text = String::new();
    if let Some(ending) = ending(report.status) {
        text.push_str(&format!("linggen: the task {ending}.\n"));
    }
    let answer = report.answer.trim_end();
    if !answer.is_empty() {
        text.push_str(answer);
        text.push('\n');
    }
    text.push('\n');
    text.push_str(&changes(report));
    if report.saved {
        text.push_str(&format!(
            "Session {id} (`linggen --resume {id}` continues it).",
            id = report.session_id
        ));
    } else {
        text.push_str(&format!(
            "Session {}: it could not be saved, so `linggen --resume` will not find it.",
            report.session_id
        ));
    }
    text
}

/// How a run that did not complete ended, as the end of "the task …".
fn ending(status: TaskStatus) -> Option<&'static str> {
    match status {
        TaskStatus::Completed => None,
        TaskStatus::Error => Some("failed"),
        TaskStatus::Cancelled => Some("was cancelled"),
        TaskStatus::MaxIters => {
            Some("made the most model calls it may (max_iters) before a final answer")
        }
        TaskStatus::Stopped => Some(
            "was stopped by a limit (the same call failing again and again, no progress, \
             or the [auto] time or token budget)",
        ),
    }
}

/// The change report: every file listed, one a line.
fn changes(report: &TaskReport) -> String {
    if report.files_changed.is_empty() && report.more_files_changed == 0 {
        return "No files changed.\n".to_string();
    }
    let total = report.files_changed.len() + report.more_files_changed;
    let mut text = format!("Files changed ({total}):\n");
    for file in &report.files_changed {
        text.push_str(&format!("- {file}\n"));
    }
    if report.more_files_changed > 0 {
        text.push_str(&format!("- … and {} more\n", report.more_files_changed));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(status: TaskStatus, files: &[&str], more: usize) -> TaskReport {
        TaskReport {
            session_id: "s1".into(),
            status,
            answer: "The answer.\n".into(),
            files_changed: files.iter().map(|f| f.to_string()).collect(),
            more_files_changed: more,
            saved: true,
        }
    }

    fn text_of(result: &CallToolResult) -> &str {
        &result.content[0].as_text().unwrap().text
    }

    #[test]
    fn a_completed_task_is_its_answer_then_what_changed() {
        let result = tool_result(&report(TaskStatus::Completed, &["src/a.rs", "b.md"], 0));
        assert_eq!(result.is_error, Some(false));
        assert_eq!(
            text_of(&result),
            "The answer.\n\nFiles changed (2):\n- src/a.rs\n- b.md\n\
             Session s1 (`linggen --resume s1` continues it)."
        );
        let structured = result.structured_content.unwrap();
        assert_eq!(structured["status"], "completed");
        assert_eq!(structured["files_changed"][1], "b.md");
    }

    #[test]
    fn a_task_that_did_not_complete_is_an_error_that_says_how_it_ended() {
        let result = tool_result(&report(TaskStatus::MaxIters, &["a"], 3));
        assert_eq!(result.is_error, Some(true));
        let text = text_of(&result);
        assert!(
            text.starts_with("linggen: the task made the most model calls"),
            "{text}"
        );
        assert!(
            text.contains("Files changed (4):\n- a\n- … and 3 more\n"),
            "{text}"
        );
        let unsaved = TaskReport {
            saved: false,
            ..report(TaskStatus::Completed, &[], 0)
        };
        let text = tool_result(&unsaved).content[0]
            .as_text()
            .unwrap()
            .text
            .clone();
        assert!(text.contains("No files changed.\n"), "{text}");
        assert!(text.contains("could not be saved"), "{text}");
    }
}
