//! The system prompt. Written for small local models: short, concrete, imperative. The
//! default agent's prompt plus its tools' definitions stay under 5,000 characters, and a
//! model with a small window gets compact rules and tools (`tools::compact`);
//! `tests/prompt_size.rs` pins both through the binary and `doc/performance.md` reports
//! the figures.

use std::path::Path;

/// Project instruction files, in the order they are looked for; all that exist are used.
const PROJECT_DOCS: &[&str] = &["AGENTS.md", "CLAUDE.md"];

/// Project docs are the person's own words and usually worth their tokens, but a huge file
/// would crowd out the conversation on a small context window.
const PROJECT_DOC_MAX_CHARS: usize = 8_000;

/// What starts the project docs in the prompt (they come last in [`context_prompt`]).
pub const PROJECT_DOCS_HEADING: &str = "\n\nProject instructions from ";

/// Facts about the workspace the prompt states up front, so the model does not need a tool
/// call to learn them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    pub root: String,
    pub platform: String,
    pub git_branch: Option<String>,
    pub is_git: bool,
}

impl Workspace {
    pub fn detect(root: &Path) -> Workspace {
        let git_dir = root.join(".git");
        let is_git = git_dir.exists();
        // Reading HEAD directly avoids spawning git on every start.
        let git_branch = std::fs::read_to_string(git_dir.join("HEAD"))
            .ok()
            .and_then(|head| {
                head.trim()
                    .strip_prefix("ref: refs/heads/")
                    .map(str::to_string)
            });
        Workspace {
            root: root.display().to_string(),
            platform: format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
            git_branch,
            is_git,
        }
    }
}

const TOOL_RULES: &str = "\
Rules:
- Use tools to look before you answer; never guess file contents.
- Paths are relative to the workspace root; you cannot leave it.
- Read a file before you Edit it. Edit needs old_string copied exactly from the file.
- Prefer Grep and Glob over Bash for searching.
- Bash runs one simple command line: no $(...), backticks, or newlines. Commands that \
are not read-only may need the user's approval; if a call is denied, do not retry it — \
explain or take another way.
- Use native tool calls. When you are done, answer in plain markdown.";

/// [`TOOL_RULES`] for a model with a small window (see `tools::compact`): the same rules,
/// in the fewest words a small model still follows.
const COMPACT_RULES: &str = "\
Rules:
- Look with tools before you answer; never guess file contents.
- Paths are relative to the root. Read a file before you Edit it.
- Bash: one simple command line, no $(...), backticks or newlines. Do not retry a denied call.
- Use native tool calls; when done, answer in plain markdown.";

/// The workspace part of the prompt (`context_prompt`, with what the session added to it)
/// for a model whose window is `window`: on a small one, with the compact rules.
pub fn for_window(context_prompt: &str, window: Option<u32>) -> std::borrow::Cow<'_, str> {
    if crate::tools::compact::is_small(window) {
        context_prompt.replacen(TOOL_RULES, COMPACT_RULES, 1).into()
    } else {
        context_prompt.into()
    }
}

/// The part of every agent's system prompt that describes the workspace: facts, tool rules
/// and the project's instruction files. The agent's own prompt (its file's body) goes first.
pub fn context_prompt(ws: &Workspace, root: &Path) -> String {
    let mut prompt = String::with_capacity(2048);
    prompt.push_str("Workspace:\n");
    prompt.push_str(&format!("- root: {}\n", ws.root));
    prompt.push_str(&format!("- platform: {}\n", ws.platform));
    match (&ws.is_git, &ws.git_branch) {
        (true, Some(branch)) => prompt.push_str(&format!("- git: yes, branch {branch}\n")),
        (true, None) => prompt.push_str("- git: yes (detached HEAD)\n"),
        (false, _) => prompt.push_str("- git: no\n"),
    }
    prompt.push('\n');
    prompt.push_str(TOOL_RULES);
    for name in PROJECT_DOCS {
        if let Some(doc) = project_doc(root, name) {
            prompt.push_str(&format!("{PROJECT_DOCS_HEADING}{name}:\n{doc}"));
        }
    }
    prompt
}

fn project_doc(root: &Path, name: &str) -> Option<String> {
    let text = std::fs::read_to_string(root.join(name)).ok()?;
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if text.len() <= PROJECT_DOC_MAX_CHARS {
        return Some(text.to_string());
    }
    Some(format!(
        "{}\n[… {name} truncated at {PROJECT_DOC_MAX_CHARS} characters]",
        crate::text::prefix_bytes(text, PROJECT_DOC_MAX_CHARS)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_docs_are_included_and_capped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "Use tabs.\n").unwrap();
        std::fs::write(dir.path().join("CLAUDE.md"), "x".repeat(20_000)).unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let ws = Workspace::detect(dir.path());
        assert_eq!(ws.git_branch.as_deref(), Some("main"));
        let prompt = context_prompt(&ws, dir.path());
        assert!(prompt.contains("Project instructions from AGENTS.md:\nUse tabs."));
        assert!(prompt.contains("CLAUDE.md truncated"));
        assert!(prompt.contains("branch main"));
        assert!(prompt.len() < 12_000);
    }
}
