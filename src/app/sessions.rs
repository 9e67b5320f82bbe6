//! `linggen sessions` and `/sessions`: this workspace's stored sessions as a table.

use std::path::Path;

use super::{Failure, Start, load_workspace};
use crate::session::ids;
use crate::store::Store;

/// `linggen sessions`.
pub fn list_sessions(start: &Start) -> i32 {
    super::print_lines(load_workspace(start).and_then(|ws| session_lines(&ws.home, &ws.root)))
}

/// The sessions of the workspace at `root` as a table, newest first (`linggen sessions`,
/// `/sessions`). Reads SQLite: off the async runtime.
pub fn session_lines(home: &Path, root: &Path) -> Result<Vec<String>, Failure> {
    let store = Store::open(home)?;
    let sessions = store.list_sessions(&root.display().to_string())?;
    if sessions.is_empty() {
        return Ok(vec![format!(
            "No sessions in {} yet. Start one with `linggen -p \"task\"`.",
            root.display()
        )]);
    }
    let now = ids::now_ms();
    let mut lines = vec![format!(
        "{:<16}  {:>10}  {:>5}  {:<20}  TITLE",
        "ID", "UPDATED", "MSGS", "MODEL"
    )];
    for s in sessions {
        lines.push(format!(
            "{:<16}  {:>10}  {:>5}  {:<20}  {}",
            s.id,
            ago(now - s.updated_at),
            s.message_count,
            truncate(&s.model, 20),
            truncate(&s.title, 60)
        ));
    }
    Ok(lines)
}

pub(super) fn ago(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m ago", s / 60),
        3600..86400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86400),
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let cut: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}
