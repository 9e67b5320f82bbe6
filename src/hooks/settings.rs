//! Reading the `hooks` of a settings file, Claude Code's format:
//!
//! ```json
//! {"hooks": {"PreToolUse": [{"matcher": "Bash",
//!   "hooks": [{"type": "command", "command": "./check.py", "timeout": 30}]}]}}
//! ```
//!
//! A file that is not JSON is one warning naming its line, and nothing of it applies; an
//! entry linggen cannot run (an unknown event, a `prompt` hook, a bad matcher) is one
//! warning and the rest of the file still applies. `"disableAllHooks": true` in a file
//! turns off every hook read before it and in it, as in Claude Code.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::{DEFAULT_TIMEOUT, Group, Handler, HookEvent, HookSet, Matcher, Scope};

/// Where hooks are read, in order: the person's files, then the workspace's.
pub fn places(user_home: Option<&Path>, linggen_home: &Path, root: &Path) -> Vec<(PathBuf, Scope)> {
    let mut places = Vec::new();
    if let Some(home) = user_home {
        places.push((home.join(".claude/settings.json"), Scope::User));
    }
    places.push((linggen_home.join("settings.json"), Scope::User));
    for rel in [
        ".claude/settings.json",
        ".claude/settings.local.json",
        ".linggen/settings.json",
    ] {
        let path = root.join(rel);
        // `~/.claude/settings.json` is the person's own even when the root is `~`.
        if !places.iter().any(|(p, _)| *p == path) {
            places.push((path, Scope::Project));
        }
    }
    places
}

/// Adds the hooks of `path` to `set` (nothing when the file does not exist).
pub fn read_into(path: &Path, scope: Scope, set: &mut HookSet) {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            set.warnings.push(format!(
                "{}: cannot read: {e}; its hooks are not used",
                path.display()
            ));
            return;
        }
    };
    let value: Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(e) => {
            set.warnings.push(format!(
                "{}:{}: not JSON ({e}); its hooks are not used",
                path.display(),
                e.line()
            ));
            return;
        }
    };
    if value["disableAllHooks"] == Value::Bool(true) {
        set.groups.clear();
        return;
    }
    match &value["hooks"] {
        Value::Null => {}
        Value::Object(events) => {
            for (name, groups) in events {
                read_event(path, scope, name, groups, set);
            }
        }
        _ => set.warnings.push(format!(
            "{}: `hooks` must be an object of events; its hooks are not used",
            path.display()
        )),
    }
}

fn read_event(path: &Path, scope: Scope, name: &str, groups: &Value, set: &mut HookSet) {
    let at = |what: String| format!("{}: hooks.{name}: {what}", path.display());
    let Some(event) = HookEvent::parse(name) else {
        set.warnings.push(at(format!(
            "linggen has no such event (it has {}); skipped",
            HookEvent::ALL.map(HookEvent::name).join(", ")
        )));
        return;
    };
    let Some(groups) = groups.as_array() else {
        set.warnings.push(at(
            "must be a list of {\"matcher\", \"hooks\"} entries; skipped".into(),
        ));
        return;
    };
    for group in groups {
        match read_group(path, scope, event, group) {
            Ok(group) => set.groups.push(group),
            Err(why) => set.warnings.push(at(why)),
        }
    }
}

fn read_group(path: &Path, scope: Scope, event: HookEvent, group: &Value) -> Result<Group, String> {
    let matcher = match &group["matcher"] {
        Value::Null => Matcher::new("")?,
        Value::String(m) => Matcher::new(m)?,
        _ => return Err("`matcher` must be a string; entry skipped".into()),
    };
    let Some(entries) = group["hooks"].as_array() else {
        return Err("an entry without a `hooks` list; skipped".into());
    };
    let mut handlers = Vec::new();
    for entry in entries {
        match entry["type"].as_str() {
            Some("command") | None => {}
            Some(other) => {
                return Err(format!(
                    "`type: \"{other}\"` hooks are not supported (only `command`); entry skipped"
                ));
            }
        }
        let Some(command) = entry["command"].as_str().filter(|c| !c.trim().is_empty()) else {
            return Err("a hook without a `command`; entry skipped".into());
        };
        let timeout = match &entry["timeout"] {
            Value::Null => DEFAULT_TIMEOUT,
            value => match value.as_f64() {
                Some(secs) if secs > 0.0 && secs <= 24.0 * 3600.0 => Duration::from_secs_f64(secs),
                _ => {
                    return Err(format!(
                        "`timeout` must be seconds, not {value}; entry skipped"
                    ));
                }
            },
        };
        handlers.push(Handler {
            command: command.to_string(),
            timeout,
            file: path.to_path_buf(),
            scope,
        });
    }
    Ok(Group {
        event,
        matcher,
        handlers,
    })
}
