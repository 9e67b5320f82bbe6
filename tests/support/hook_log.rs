//! Hooks for tests: settings written where the person keeps theirs, and a hook command that
//! records every input it is given, one JSON line each, for the test to read back.

use super::Workspace;

/// A hook command that appends its stdin (the event's JSON) to `events.jsonl` in the root,
/// as one line in one write: hooks of two sessions (`/clear`) may append at once.
pub const RECORD: &str =
    "line=$(cat); printf '%s\\n' \"$line\" >> \"$CLAUDE_PROJECT_DIR/events.jsonl\"";

/// `settings` as the person's own `~/.claude/settings.json`.
pub fn user_settings(ws: &Workspace, settings: &serde_json::Value) {
    let dir = ws.home().join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
}

/// How many complete lines [`RECORD`] wrote so far (for waiting; a line being written is
/// not counted).
pub fn complete(ws: &Workspace) -> usize {
    std::fs::read_to_string(ws.root().join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
        .count()
}

/// What [`RECORD`] recorded so far, in order.
pub fn recorded(ws: &Workspace) -> Vec<serde_json::Value> {
    std::fs::read_to_string(ws.root().join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `hook_event_name` of each recorded input.
pub fn names(events: &[serde_json::Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["hook_event_name"].as_str().unwrap_or_default())
        .collect()
}
