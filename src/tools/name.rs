//! Every tool by its typed name. Models call tools by string and events carry that string
//! (the wire stays as it is); inside linggen a tool is a [`ToolName`], so a misspelt name
//! is a compile error instead of a check that silently never matches.

/// A tool linggen implements: the file and command tools first (in the order offered),
/// then the tools the session itself carries out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolName {
    RepoInfo,
    Glob,
    Read,
    Grep,
    Write,
    Edit,
    Bash,
    BashOutput,
    KillShell,
    Screenshot,
    ProposePatch,
    ApplyPatch,
    Skill,
    Delegate,
    LockPaths,
    UnlockPaths,
    TodoWrite,
}

impl ToolName {
    /// The tools `crate::tools` carries out itself, in the order offered.
    pub const FILE_TOOLS: [ToolName; 10] = [
        ToolName::RepoInfo,
        ToolName::Glob,
        ToolName::Read,
        ToolName::Grep,
        ToolName::Write,
        ToolName::Edit,
        ToolName::Bash,
        ToolName::Screenshot,
        ToolName::ProposePatch,
        ToolName::ApplyPatch,
    ];

    /// The tools that read and stop background commands, which `crate::tools` carries out:
    /// offered once the session has started one (`Bash` with `run_in_background`), and to
    /// any agent that may use `Bash`.
    pub const BACKGROUND_TOOLS: [ToolName; 2] = [ToolName::BashOutput, ToolName::KillShell];

    /// The tools the session carries out (see `session_tools`); which of them an agent is
    /// offered depends on its spec and on what exists (skills, delegation targets).
    pub const SESSION_TOOLS: [ToolName; 5] = [
        ToolName::Skill,
        ToolName::Delegate,
        ToolName::LockPaths,
        ToolName::UnlockPaths,
        ToolName::TodoWrite,
    ];

    /// The canonical name, as models call it, rules name it and events carry it.
    pub const fn name(self) -> &'static str {
        match self {
            ToolName::RepoInfo => "get_repo_info",
            ToolName::Glob => "Glob",
            ToolName::Read => "Read",
            ToolName::Grep => "Grep",
            ToolName::Write => "Write",
            ToolName::Edit => "Edit",
            ToolName::Bash => "Bash",
            ToolName::BashOutput => "BashOutput",
            ToolName::KillShell => "KillShell",
            ToolName::Screenshot => "capture_screenshot",
            ToolName::ProposePatch => "propose_patch",
            ToolName::ApplyPatch => "apply_patch",
            ToolName::Skill => "Skill",
            ToolName::Delegate => "delegate_to_agent",
            ToolName::LockPaths => "lock_paths",
            ToolName::UnlockPaths => "unlock_paths",
            ToolName::TodoWrite => "TodoWrite",
        }
    }

    /// Every tool: the file and command tools, the background ones, the session's.
    pub fn all() -> impl Iterator<Item = ToolName> {
        Self::FILE_TOOLS
            .into_iter()
            .chain(Self::BACKGROUND_TOOLS)
            .chain(Self::SESSION_TOOLS)
    }

    /// The tool with exactly this canonical name.
    pub fn from_name(name: &str) -> Option<ToolName> {
        Self::all().find(|t| t.name() == name)
    }

    /// The tool a model most likely meant: the canonical name in any case, or a name other
    /// agents use for it (`read_file`, `str_replace`, `shell`).
    pub fn resolve(name: &str) -> Option<ToolName> {
        let lower = name.trim().to_ascii_lowercase();
        let tool = match lower.as_str() {
            "get_repo_info" | "repo_info" | "getrepoinfo" => ToolName::RepoInfo,
            "glob" | "find_files" | "list_files" => ToolName::Glob,
            "read" | "read_file" | "readfile" | "view" => ToolName::Read,
            "grep" | "search" | "search_files" => ToolName::Grep,
            "write" | "write_file" | "writefile" | "create_file" => ToolName::Write,
            "edit" | "edit_file" | "editfile" | "str_replace" => ToolName::Edit,
            "bash" | "shell" | "run" | "run_command" | "exec" => ToolName::Bash,
            // Claude Code's names, its newer ones (`TaskOutput`, `TaskStop`) included.
            "bashoutput" | "bash_output" | "taskoutput" | "task_output" => ToolName::BashOutput,
            "killshell" | "kill_shell" | "killbash" | "kill_bash" | "taskstop" | "task_stop" => {
                ToolName::KillShell
            }
            "capture_screenshot" | "screenshot" | "take_screenshot" | "capturescreenshot" => {
                ToolName::Screenshot
            }
            "propose_patch" | "check_patch" | "validate_patch" => ToolName::ProposePatch,
            "apply_patch" | "patch" | "apply_diff" => ToolName::ApplyPatch,
            "skill" | "use_skill" | "invoke_skill" => ToolName::Skill,
            "delegate_to_agent" | "delegate" | "delegate_task" => ToolName::Delegate,
            "lock_paths" | "lock" => ToolName::LockPaths,
            "unlock_paths" | "unlock" => ToolName::UnlockPaths,
            "todowrite" | "todo_write" | "write_todos" | "update_todos" => ToolName::TodoWrite,
            _ => return None,
        };
        Some(tool)
    }

    /// `Write`, `Edit` and `apply_patch`: the tools that change a file's contents (one rule,
    /// `Write(path)`, covers them all).
    pub fn changes_files(self) -> bool {
        matches!(
            self,
            ToolName::Write | ToolName::Edit | ToolName::ApplyPatch
        )
    }

    pub fn is_session_tool(self) -> bool {
        Self::SESSION_TOOLS.contains(&self)
    }
}

impl std::fmt::Display for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::ToolName;

    #[test]
    fn every_name_round_trips_and_aliases_resolve() {
        for tool in ToolName::all() {
            assert_eq!(ToolName::from_name(tool.name()), Some(tool));
            assert_eq!(ToolName::resolve(tool.name()), Some(tool));
        }
        assert_eq!(ToolName::resolve("read_file"), Some(ToolName::Read));
        assert_eq!(ToolName::resolve(" BASH "), Some(ToolName::Bash));
        assert_eq!(ToolName::resolve("str_replace"), Some(ToolName::Edit));
        assert_eq!(ToolName::resolve("launch_missiles"), None);
        assert_eq!(ToolName::from_name("bash"), None);
    }
}
