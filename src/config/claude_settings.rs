//! Claude Code's own settings file, read as it is: the `permissions` of
//! `~/.claude/settings.json` (the person's own, so no trust is needed) apply as linggen
//! rules — `allow`, `ask` and `deny` with Claude Code's rule syntax (`Bash(npm run
//! test:*)`), and `defaultMode` unless linggen's own configuration chose a mode. A rule
//! linggen cannot express (a tool it has not, such as `WebFetch`, or a `Read` pattern) is
//! one warning when a session starts, never a failed start. A project's
//! `.claude/settings.json` is not read yet: its rules would be grants.

use std::path::{Path, PathBuf};

use super::PermissionMode;

/// What the file says about permissions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaudePermissions {
    pub path: PathBuf,
    pub allow: Vec<String>,
    pub ask: Vec<String>,
    pub deny: Vec<String>,
    pub default_mode: Option<PermissionMode>,
}

/// Reads `path`; `Ok(None)` when there is no such file. A file that is not valid JSON, or a
/// `permissions` of the wrong shape, is an `Err` naming the file and line, for a warning:
/// nothing of it applies, and everything else still works.
pub fn read(path: &Path) -> Result<Option<ClaudePermissions>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: cannot read: {e}", path.display())),
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}:{}: not JSON ({e}); Claude Code's permissions there are not used",
            path.display(),
            e.line()
        )
    })?;
    let permissions = &value["permissions"];
    if permissions.is_null() {
        return Ok(None);
    }
    let wrong = |what: &str| {
        format!(
            "{}: `permissions.{what}` is not what Claude Code writes; its permissions are not used",
            path.display()
        )
    };
    let list = |key: &str| -> Result<Vec<String>, String> {
        match &permissions[key] {
            serde_json::Value::Null => Ok(Vec::new()),
            serde_json::Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map(str::to_string).ok_or_else(|| wrong(key)))
                .collect(),
            _ => Err(wrong(key)),
        }
    };
    let default_mode = match &permissions["defaultMode"] {
        serde_json::Value::Null => None,
        serde_json::Value::String(mode) => match PermissionMode::parse(mode) {
            Some(mode) => Some(mode),
            None => return Err(wrong("defaultMode")),
        },
        _ => return Err(wrong("defaultMode")),
    };
    Ok(Some(ClaudePermissions {
        path: path.to_path_buf(),
        allow: list("allow")?,
        ask: list("ask")?,
        deny: list("deny")?,
        default_mode,
    }))
}

impl super::Config {
    /// Keeps the rules for the session's permissions, which take each one it can express
    /// and warn about the others (Claude Code has tools linggen has not, such as
    /// `WebFetch`): a rule written for another program must not stop linggen. Takes the
    /// mode when linggen's files chose none.
    pub(super) fn apply_claude(&mut self, claude: ClaudePermissions) {
        if let Some(mode) = claude.default_mode
            && !self.origins.contains_key("permission_mode")
        {
            self.permission_mode = mode;
            self.set_origin("permission_mode", claude.path.display());
        }
        self.claude = Some(claude);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_codes_permissions_are_read_and_a_broken_file_names_its_line() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("settings.json");
        assert_eq!(read(&path), Ok(None));
        let good = r#"{"permissions": {"allow": ["Bash(npm run test:*)"], "ask": ["Bash(git push:*)"],
            "deny": ["Read(./.env)"], "defaultMode": "acceptEdits"}, "hooks": {}}"#;
        std::fs::write(&path, good).unwrap_or_else(|e| panic!("{e}"));
        let read_back = read(&path)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_default();
        assert_eq!(read_back.allow, vec!["Bash(npm run test:*)".to_string()]);
        assert_eq!(read_back.ask, vec!["Bash(git push:*)".to_string()]);
        assert_eq!(read_back.default_mode, Some(PermissionMode::AcceptEdits));
        std::fs::write(&path, "{\n\"permissions\": [\n").unwrap_or_else(|e| panic!("{e}"));
        let err = read(&path).unwrap_err();
        assert!(err.contains("settings.json:3"), "{err}");
        std::fs::write(&path, r#"{"permissions": {"allow": "Bash"}}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(read(&path).unwrap_err().contains("permissions.allow"));
    }
}
