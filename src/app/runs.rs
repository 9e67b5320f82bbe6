//! `linggen runs show ID`: a run's audit trail — every call with its arguments, each result
//! (a command's exit code, a patch's diff), the checkpoints taken, the files changed and how
//! it ended — with the runs it delegated to nested under it.

use super::{Failure, Start, exit, load_workspace};
use crate::store::{LogEntry, RunDetail, Store};

/// Lines of a diff or output shown per result; the store keeps them all.
const DETAIL_LINES: usize = 40;

/// `linggen runs show ID`.
pub fn show_run(start: &Start, id: &str) -> i32 {
    let lines = load_workspace(start).and_then(|ws| run_lines(&ws.home, id));
    match lines {
        Ok(lines) => {
            for line in lines {
                println!("{line}");
            }
            exit::SUCCESS
        }
        Err(f) => {
            eprintln!("linggen: error: {}", f.message);
            f.code
        }
    }
}

/// The audit trail of run `id` (or the one run it is a prefix of).
pub fn run_lines(home: &std::path::Path, id: &str) -> Result<Vec<String>, Failure> {
    let store = Store::open(home)?;
    let run = store.find_run(id)?.ok_or_else(|| Failure {
        code: exit::USAGE,
        message: format!(
            "no run `{id}`; `/runs` in the shell lists a session's runs with their ids"
        ),
    })?;
    let mut lines = Vec::new();
    push_run(&store, &run, 0, &mut lines)?;
    Ok(lines)
}

fn push_run(
    store: &Store,
    run: &RunDetail,
    depth: usize,
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
    for entry in store.run_log(&run.id)? {
        push_entry(&entry, &pad, lines);
    }
    // The runs it delegated to, each with its own trail.
    for child in &children {
        push_run(store, child, depth + 1, lines)?;
    }
    Ok(())
}

fn push_entry(entry: &LogEntry, pad: &str, lines: &mut Vec<String>) {
    match entry.kind.as_str() {
        "call" => {
            let args = entry.detail.as_deref().unwrap_or("");
            lines.push(format!("{pad}  → {}", first_line(&entry.text)));
            if !args.is_empty() && args != "{}" && args.len() <= 200 {
                lines.push(format!("{pad}      {args}"));
            }
        }
        "result" => {
            let mark = if entry.ok == Some(true) { "✓" } else { "✗" };
            lines.push(format!("{pad}    {mark} {}", first_line(&entry.text)));
            if let Some(detail) = &entry.detail {
                let all: Vec<&str> = detail.lines().collect();
                for line in all.iter().take(DETAIL_LINES) {
                    lines.push(format!("{pad}      {line}"));
                }
                if all.len() > DETAIL_LINES {
                    lines.push(format!(
                        "{pad}      … {} more lines",
                        all.len() - DETAIL_LINES
                    ));
                }
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
