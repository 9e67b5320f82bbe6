//! Claude Code's own settings file, read as it is: the `permissions` of
//! `~/.claude/settings.json` (the person's own, so no trust is needed) apply as linggen
//! rules — `allow`, `ask` and `deny` with Claude Code's rule syntax (`Bash(npm run
//! test:*)`), and `defaultMode` unless linggen's own configuration chose a mode. A rule
//! linggen cannot express (a tool it has not, such as `WebFetch`, or a `Read` pattern) is
//! one warning when a session starts, never a failed start.
//!
//! A workspace's `.claude/settings.json` and `.claude/settings.local.json` are read too,
//! as files that came with the folder: their `ask` and `deny` rules (and a `plan` or
//! `default` mode) restrict at once, while their `allow` rules and an `acceptEdits` or
//! `bypassPermissions` mode are trust grants, held back until the person trusts them.

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
    /// `disableSkillShellExecution: true`: the `!` lines of skills and commands do not run.
    /// A restriction, so a workspace's file applies without trust.
    pub disable_skill_shell: bool,
}

/// Reads `path`; `Ok(None)` when there is no such file. A file that is not valid JSON, or a
/// `permissions` of the wrong shape, is an `Err` naming the file and line, for a warning:
/// nothing of it applies, and everything else still works.
pub(in crate::config) fn read(path: &Path) -> Result<Option<ClaudePermissions>, String> {
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
    let disable_skill_shell = match &value["disableSkillShellExecution"] {
        serde_json::Value::Null => false,
        serde_json::Value::Bool(off) => *off,
        _ => {
            return Err(format!(
                "{}: `disableSkillShellExecution` is not `true` or `false`; nothing of the \
                 file is used",
                path.display()
            ));
        }
    };
    let permissions = &value["permissions"];
    if permissions.is_null() {
        return Ok(disable_skill_shell.then(|| ClaudePermissions {
            path: path.to_path_buf(),
            disable_skill_shell,
            ..ClaudePermissions::default()
        }));
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
        disable_skill_shell,
    }))
}

/// The workspace's Claude Code settings files, relative to the root.
pub const PROJECT_FILES: [&str; 2] = [".claude/settings.json", ".claude/settings.local.json"];

/// A workspace's Claude Code permissions and the file they came from (relative).
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectClaude {
    pub file: String,
    pub permissions: ClaudePermissions,
}

impl ProjectClaude {
    /// A mode that would let more run without asking: a grant, not a restriction.
    fn loose_mode(&self) -> Option<PermissionMode> {
        self.permissions
            .default_mode
            .filter(|m| matches!(m, PermissionMode::AcceptEdits | PermissionMode::Bypass))
    }

    /// One line per grant: each `allow` rule, and a looser mode.
    pub fn grants(&self) -> Vec<String> {
        let file = self.file.as_str();
        let mut grants: Vec<String> = self
            .loose_mode()
            .map(|m| super::trust::mode_grant(m, file))
            .into_iter()
            .collect();
        grants.extend(
            self.permissions
                .allow
                .iter()
                .map(|r| super::trust::allow_grant(r, file)),
        );
        grants
    }

    /// The `allow` rules the person accepted.
    pub fn accepted_allow(&self, accepted: impl Fn(&str) -> bool) -> Vec<String> {
        self.permissions
            .allow
            .iter()
            .filter(|r| accepted(&super::trust::allow_grant(r, &self.file)))
            .cloned()
            .collect()
    }
}

impl super::Config {
    /// Keeps a workspace's Claude Code permissions. A restrictive mode (`plan`, `default`)
    /// applies at once unless linggen's own files chose one; a looser one waits for trust
    /// ([`Self::apply_trusted_claude`]).
    pub(super) fn apply_claude_project(&mut self, claude: ClaudePermissions, file: &str) {
        self.apply_skill_shell(&claude);
        let project = ProjectClaude {
            file: file.to_string(),
            permissions: claude,
        };
        if let Some(mode) = project.permissions.default_mode
            && project.loose_mode().is_none()
            && self.mode_open_to_claude()
        {
            self.permission_mode = mode;
            self.set_origin("permission_mode", file);
        }
        self.claude_project.push(project);
    }

    /// Applies a trusted looser mode from a workspace's Claude Code settings.
    pub(super) fn apply_trusted_claude(&mut self, accepted: &std::collections::BTreeSet<String>) {
        let trusted: Vec<(PermissionMode, String)> = self
            .claude_project
            .iter()
            .filter_map(|p| p.loose_mode().map(|m| (m, p.file.clone())))
            .filter(|(m, file)| accepted.contains(&super::trust::mode_grant(*m, file)))
            .collect();
        for (mode, file) in trusted {
            if self.mode_open_to_claude() {
                self.permission_mode = mode;
                self.set_origin("permission_mode", format!("{file} (trusted)"));
            }
        }
    }

    /// Whether Claude Code's settings may set the mode: linggen's own files did not, or
    /// only another Claude Code settings file did.
    fn mode_open_to_claude(&self) -> bool {
        match self.origins.get("permission_mode") {
            None => true,
            Some(origin) => origin.contains(".claude/settings"),
        }
    }

    /// Keeps the rules for the session's permissions, which take each one it can express
    /// and warn about the others (Claude Code has tools linggen has not, such as
    /// `WebFetch`): a rule written for another program must not stop linggen. Takes the
    /// mode when linggen's files chose none.
    pub(super) fn apply_claude(&mut self, claude: ClaudePermissions) {
        self.apply_skill_shell(&claude);
        if let Some(mode) = claude.default_mode
            && !self.origins.contains_key("permission_mode")
        {
            self.permission_mode = mode;
            self.set_origin("permission_mode", claude.path.display());
        }
        self.claude = Some(claude);
    }

    /// `disableSkillShellExecution: true` turns the `!` lines off; `false` leaves them as
    /// linggen's own files set them.
    fn apply_skill_shell(&mut self, claude: &ClaudePermissions) {
        if claude.disable_skill_shell {
            self.skill_shell = false;
            self.set_origin("skill_shell", claude.path.display());
        }
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

    #[test]
    fn disable_skill_shell_execution_is_read_with_or_without_permissions() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("settings.json");
        let off = |text: &str| {
            std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
            read(&path).map(|c| c.map(|c| c.disable_skill_shell))
        };
        assert_eq!(
            off(r#"{"disableSkillShellExecution": true}"#),
            Ok(Some(true))
        );
        assert_eq!(off(r#"{"disableSkillShellExecution": false}"#), Ok(None));
        let both = r#"{"disableSkillShellExecution": true, "permissions": {"deny": ["Bash"]}}"#;
        assert_eq!(off(both), Ok(Some(true)));
        let err = off(r#"{"disableSkillShellExecution": "yes"}"#).unwrap_err();
        assert!(
            err.contains("settings.json: `disableSkillShellExecution`"),
            "{err}"
        );

        // A workspace's file turns them off without trust: it only restricts.
        let mut config = crate::config::Config::default();
        let claude = read(&path.with_file_name("none.json")).unwrap_or_default();
        config.apply_claude_project(claude.unwrap_or_default(), ".claude/settings.json");
        assert!(config.skill_shell);
        std::fs::write(&path, both).unwrap_or_else(|e| panic!("{e}"));
        let claude = read(&path).unwrap_or_default().unwrap_or_default();
        config.apply_claude_project(claude, ".claude/settings.json");
        assert!(!config.skill_shell);
    }
}
