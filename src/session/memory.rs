//! Memory that outlives a session: one markdown file per project, kept outside the
//! repository (`$LINGGEN_HOME/projects/<root as a name>/memory.md`), so what a person asks
//! linggen to remember is theirs and never lands in a commit. Its text goes into every
//! agent's system prompt within a cap; the newest lines win when it grows past it.
//!
//! The person adds to it with `# fact` in the shell and reads or prunes it with `/memory`;
//! they may also edit the file by hand (it is plain markdown). `AGENTS.md` and `CLAUDE.md`
//! stay the project's own, shared instructions.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::durable::{self, WriteError};
use crate::sync::lock;

/// At most this much memory goes into the prompt (about 1,000 tokens): enough for dozens of
/// conventions and commands, small enough for a 4k window.
pub const PROMPT_MAX_CHARS: usize = 4_000;

/// One project's memory file.
#[derive(Debug)]
pub struct Memory {
    path: PathBuf,
    /// The prompt section as last read ([`Memory::refresh`]), so composing a prompt never
    /// touches the disk.
    section: Mutex<Option<String>>,
}

/// Why `/memory forget` removed nothing; the memory file is as it was.
#[derive(Debug, thiserror::Error)]
pub enum ForgetError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("there is no entry {n}; /memory lists {listed} (numbered from 1)")]
    NoEntry { n: usize, listed: usize },
    #[error("cannot write {}: {reason} — the memory is as it was", path.display())]
    Write { path: PathBuf, reason: String },
}

impl Memory {
    pub fn for_project(home: &Path, root: &Path) -> Memory {
        Memory {
            path: home
                .join("projects")
                .join(folder_name(root))
                .join("memory.md"),
            section: Mutex::new(None),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `fact` as one list item. The folder is made private (0700): what a person
    /// remembers may be sensitive.
    pub fn remember(&self, fact: &str) -> Result<(), WriteError> {
        let fact = fact.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(dir) = self.path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|source| WriteError::Io {
                    step: durable::Step::CreateFolder,
                    path: dir.to_path_buf(),
                    source,
                })?;
        }
        // Whole or not at all, and one shell at a time: two shells remembering at once
        // cannot interleave within a line, and a full disk leaves no half line.
        let line = format!("- {fact}\n");
        durable::append(&self.path, line.as_bytes(), durable::Options::private())?;
        self.refresh();
        Ok(())
    }

    /// The list items, in order (`- ` lines), for `/memory`.
    pub fn entries(&self) -> Vec<String> {
        std::fs::read_to_string(&self.path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.strip_prefix("- "))
            .map(str::to_string)
            .collect()
    }

    /// Removes list item `n` (1-based); returns its text.
    pub fn forget(&self, n: usize) -> Result<String, ForgetError> {
        let text = std::fs::read_to_string(&self.path).map_err(|source| ForgetError::Read {
            path: self.path.clone(),
            source,
        })?;
        let mut seen = 0;
        let mut removed = None;
        let kept: Vec<&str> = text
            .lines()
            .filter(|line| {
                if line.starts_with("- ") {
                    seen += 1;
                    if seen == n {
                        removed = line.strip_prefix("- ").map(str::to_string);
                        return false;
                    }
                }
                true
            })
            .collect();
        let Some(removed) = removed else {
            return Err(ForgetError::NoEntry { n, listed: seen });
        };
        let mut out = kept.join("\n");
        out.push('\n');
        // Durable: a crash or a full disk leaves the memory as it was, never half a file.
        durable::replace(&self.path, out.as_bytes(), durable::Options::private()).map_err(|e| {
            ForgetError::Write {
                path: self.path.clone(),
                reason: e.reason(),
            }
        })?;
        self.refresh();
        Ok(removed)
    }

    /// Reads the file again into the prompt section (blocking: call it off the runtime).
    pub fn refresh(&self) {
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        *lock(&self.section) = prompt_section(&text, &self.path);
    }

    /// The prompt section as last read; `None` when there is no memory.
    pub fn section(&self) -> Option<String> {
        lock(&self.section).clone()
    }
}

/// `/home/me/proj` → `-home-me-proj`: one folder per workspace root, readable by people.
pub(crate) fn folder_name(root: &Path) -> String {
    root.display()
        .to_string()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// What starts the memory's section of the prompt.
pub const PROMPT_HEADING: &str =
    "Memory (what the user asked you to remember in this project; follow it):";

/// The memory as the prompt carries it: the newest lines that fit the cap, saying how many
/// older ones were left out and where they are.
fn prompt_section(text: &str, path: &Path) -> Option<String> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut kept = Vec::new();
    let mut size = 0;
    for line in lines.iter().rev() {
        if size + line.len() + 1 > PROMPT_MAX_CHARS {
            break;
        }
        size += line.len() + 1;
        kept.push(*line);
    }
    kept.reverse();
    let left_out = lines.len() - kept.len();
    let mut section = format!("{PROMPT_HEADING}\n");
    if left_out > 0 {
        section.push_str(&format!(
            "[{left_out} older lines are in {}]\n",
            path.display()
        ));
    }
    section.push_str(&kept.join("\n"));
    Some(section)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_facts_are_listed_forgotten_and_reach_the_prompt() {
        let home = tempfile::tempdir().unwrap();
        let memory = Memory::for_project(home.path(), Path::new("/work/my proj"));
        assert!(memory.path().ends_with("projects/-work-my-proj/memory.md"));
        assert_eq!(memory.section(), None);
        memory.remember("use tabs,\n  not spaces").unwrap();
        memory
            .remember("run `cargo xtask ci` before pushing")
            .unwrap();
        assert_eq!(
            memory.entries(),
            [
                "use tabs, not spaces",
                "run `cargo xtask ci` before pushing"
            ]
        );
        let section = memory.section().unwrap();
        assert!(section.ends_with("- use tabs, not spaces\n- run `cargo xtask ci` before pushing"));
        assert_eq!(memory.forget(1).unwrap(), "use tabs, not spaces");
        assert!(
            memory
                .forget(5)
                .unwrap_err()
                .to_string()
                .contains("lists 1")
        );
        assert!(!memory.section().unwrap().contains("tabs"));
        let mode = std::fs::metadata(memory.path().parent().unwrap())
            .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777);
        assert_eq!(mode.ok(), Some(0o700));
    }

    #[test]
    fn the_prompt_keeps_the_newest_lines_within_the_cap() {
        let text: String = (0..1000).map(|i| format!("- fact number {i}\n")).collect();
        let section = prompt_section(&text, Path::new("/m.md")).unwrap();
        assert!(section.len() < PROMPT_MAX_CHARS + 200);
        assert!(section.contains("- fact number 999"));
        assert!(!section.contains("- fact number 0\n"));
        assert!(section.contains("older lines are in /m.md"));
    }
}
