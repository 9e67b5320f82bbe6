//! Traps left for the person: a confined command cannot run anything outside the sandbox,
//! but it can write a nested repository (`sub/.git`, or a `.git` file pointing elsewhere)
//! whose configuration or hooks make the person's own `git status` in that folder run a
//! program, unconfined, later. The workspace's own `.git` is read-only to commands for this
//! reason; this covers the ones below it, and the root's when it had none.
//!
//! Before the first command, the `.git` entries under the root are recorded with their
//! configuration and hooks. After each command they are compared: a new or changed one
//! whose configuration names anything beyond plain repository facts, or whose hooks folder
//! holds a hook, is undone — a new one is removed, a changed one gets its recorded
//! configuration back and loses the new hooks — and named in one line. Repositories that
//! were already there are the person's and are left as they were.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Configuration keys that only describe a repository and run nothing. Anything else in a
/// new or changed nested repository counts as a trap (an allow-list: the list of keys that
/// run programs is long and grows with every git release).
const PLAIN_KEYS: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.quotepath",
    "core.sharedrepository",
    "core.compression",
    "init.defaultbranch",
    "user.name",
    "user.email",
    "extensions.objectformat",
    "extensions.worktreeconfig",
    "extensions.refstorage",
    "gc.auto",
];

/// Keys with a free middle part (`remote.<name>.url`) that are plain too.
const PLAIN_SUBSECTION_KEYS: &[(&str, &str)] = &[
    ("remote", "url"),
    ("remote", "fetch"),
    ("remote", "pushurl"),
    ("branch", "remote"),
    ("branch", "merge"),
    ("branch", "rebase"),
];

/// What a `.git` looked like.
#[derive(Debug, Clone, PartialEq, Eq)]
struct GitEntry {
    /// `config` of a `.git` folder, or the text of a `.git` file.
    config: Option<Vec<u8>>,
    /// Hooks that would run (not `*.sample`).
    hooks: Vec<PathBuf>,
}

/// The `.git` entries under a root, as they were after the last command.
#[derive(Debug, Default)]
pub struct Baseline {
    entries: HashMap<PathBuf, GitEntry>,
}

impl Baseline {
    pub fn take(root: &Path) -> Baseline {
        Baseline {
            entries: scan(root),
        }
    }

    /// Compares the tree with the baseline, undoes every trap, and returns one line per
    /// trap undone. The baseline then describes the tree as left.
    pub fn sweep(&mut self, root: &Path) -> Vec<String> {
        let now = scan(root);
        let mut lines = Vec::new();
        for (path, entry) in &now {
            let before = self.entries.get(path);
            if before == Some(entry) || !is_trap(entry) {
                continue;
            }
            let shown = path
                .strip_prefix(root)
                .unwrap_or(path)
                .display()
                .to_string();
            match before {
                None => {
                    let removed = if path.is_dir() {
                        std::fs::remove_dir_all(path)
                    } else {
                        std::fs::remove_file(path)
                    };
                    lines.push(match removed {
                        Ok(()) => format!(
                            "sandbox: removed {shown}, a repository the command made whose \
                             configuration or hooks would run a program when the person runs \
                             git there"
                        ),
                        Err(e) => format!(
                            "sandbox: {shown} would run a program when the person runs git \
                             there, and could not be removed ({e}); delete it before using git \
                             in that folder"
                        ),
                    });
                }
                Some(old) => lines.push(restore(path, old, entry, &shown)),
            }
        }
        // Only an undone trap changed the tree since the walk above.
        self.entries = if lines.is_empty() { now } else { scan(root) };
        lines
    }
}

/// Puts a changed `.git` back: its recorded configuration, and no hook it did not have.
fn restore(path: &Path, old: &GitEntry, new: &GitEntry, shown: &str) -> String {
    let config = if path.is_dir() {
        path.join("config")
    } else {
        path.to_path_buf()
    };
    let mut failed = Vec::new();
    let put_back = match &old.config {
        Some(bytes) => replace(&config, bytes),
        None => std::fs::remove_file(&config),
    };
    if let Err(e) = put_back {
        failed.push(format!("{}: {e}", config.display()));
    }
    for hook in new.hooks.iter().filter(|h| !old.hooks.contains(h)) {
        if let Err(e) = std::fs::remove_file(hook) {
            failed.push(format!("{}: {e}", hook.display()));
        }
    }
    if failed.is_empty() {
        format!(
            "sandbox: undid the command's change to {shown}, whose configuration or hooks would \
             have run a program when the person runs git there"
        )
    } else {
        format!(
            "sandbox: {shown} was changed to run a program when the person runs git there, and \
             could not be put back ({}); check it before using git in that folder",
            failed.join("; ")
        )
    }
}

/// Writes `bytes` as `path` durably (see [`crate::durable`]), so a failure midway leaves
/// the command's version, never half of the old one. A symlink the command put there is
/// replaced, not followed.
fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let options = crate::durable::Options {
        through_symlinks: false,
        ..crate::durable::Options::default()
    };
    crate::durable::replace(path, bytes, options).map_err(std::io::Error::other)
}

/// Every `.git` under `root` (the root's own included), not following symlinks.
fn scan(root: &Path) -> HashMap<PathBuf, GitEntry> {
    let mut found = HashMap::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            if name == ".git" && (kind.is_dir() || kind.is_file()) {
                found.insert(entry.path(), describe(&entry.path(), kind.is_dir()));
            } else if kind.is_dir() {
                folders.push(entry.path());
            }
        }
    }
    found
}

fn describe(path: &Path, is_dir: bool) -> GitEntry {
    if !is_dir {
        return GitEntry {
            config: std::fs::read(path).ok(),
            hooks: Vec::new(),
        };
    }
    let mut hooks: Vec<PathBuf> = std::fs::read_dir(path.join("hooks"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_none_or(|e| e != "sample"))
        .collect();
    hooks.sort();
    GitEntry {
        config: std::fs::read(path.join("config")).ok(),
        hooks,
    }
}

fn is_trap(entry: &GitEntry) -> bool {
    if !entry.hooks.is_empty() {
        return true;
    }
    let Some(config) = &entry.config else {
        return false;
    };
    let text = String::from_utf8_lossy(config);
    // A `.git` file: `gitdir: <path>` sends git to a repository elsewhere, whose
    // configuration this sweep cannot vouch for.
    if text.trim_start().starts_with("gitdir:") {
        return true;
    }
    config_keys(&text).is_none_or(|keys| keys.iter().any(|k| !is_plain(k)))
}

fn is_plain(key: &str) -> bool {
    if PLAIN_KEYS.contains(&key) {
        return true;
    }
    let mut parts = key.splitn(2, '.');
    let section = parts.next().unwrap_or_default();
    let rest = parts.next().unwrap_or_default();
    let name = rest.rsplit('.').next().unwrap_or_default();
    rest.contains('.')
        && PLAIN_SUBSECTION_KEYS
            .iter()
            .any(|(s, n)| *s == section && *n == name)
}

/// The keys of a git configuration file (`section.key` or `section.sub.key`, section and
/// key lowercased); `None` when a line is not understood, which counts as a trap.
fn config_keys(text: &str) -> Option<Vec<String>> {
    let mut keys = Vec::new();
    let mut section = String::new();
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let header = header.split(']').next()?;
            section = match header.split_once(char::is_whitespace) {
                Some((name, sub)) => {
                    let sub = sub.trim().trim_matches('"');
                    format!("{}.{sub}", name.to_ascii_lowercase())
                }
                None => header.to_ascii_lowercase(),
            };
            // `[section] key = value` on one line.
            let after = line.split_once(']')?.1.trim();
            if after.is_empty() {
                continue;
            }
            keys.push(format!("{section}.{}", key_name(after)?));
            continue;
        }
        if section.is_empty() {
            return None;
        }
        keys.push(format!("{section}.{}", key_name(line)?));
    }
    Some(keys)
}

fn key_name(line: &str) -> Option<String> {
    let name = line.split('=').next()?.trim();
    let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    valid.then(|| name.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(config: &str) -> GitEntry {
        GitEntry {
            config: Some(config.as_bytes().to_vec()),
            hooks: Vec::new(),
        }
    }

    #[test]
    fn plain_repositories_are_not_traps_and_programs_are() {
        let fresh = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                     \tlogallrefupdates = true\n[remote \"origin\"]\n\turl = x\n\
                     \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\
                     \tremote = origin\n\tmerge = refs/heads/main\n";
        assert!(!is_trap(&entry(fresh)));
        for trap in [
            "[core]\n\tfsmonitor = ./evil\n",
            "[core]\n\thooksPath = h\n",
            "[core]\npager = evil\n",
            "[filter \"x\"]\n\tclean = evil\n",
            "[include]\n\tpath = ../other\n",
            "[alias]\n\tst = !evil\n",
            "[core] fsmonitor = evil\n",
            "gitdir: /elsewhere\n",
            "not a config\n",
        ] {
            assert!(is_trap(&entry(trap)), "{trap:?}");
        }
        let hooked = GitEntry {
            config: Some(fresh.as_bytes().to_vec()),
            hooks: vec![PathBuf::from("hooks/pre-commit")],
        };
        assert!(is_trap(&hooked));
    }

    #[test]
    fn a_new_trap_is_removed_a_changed_one_restored_and_old_ones_left() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("theirs/.git")).unwrap();
        std::fs::write(root.join("theirs/.git/config"), "[core]\n\tpager = less\n").unwrap();
        std::fs::create_dir_all(root.join("old/.git")).unwrap();
        std::fs::write(root.join("old/.git/config"), "[core]\n\tbare = false\n").unwrap();
        let mut baseline = Baseline::take(root);

        std::fs::create_dir_all(root.join("new/.git")).unwrap();
        std::fs::write(root.join("new/.git/config"), "[core]\n\tfsmonitor = x\n").unwrap();
        std::fs::write(root.join("old/.git/config"), "[core]\n\tfsmonitor = x\n").unwrap();
        let lines = baseline.sweep(root);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(!root.join("new/.git").exists());
        assert_eq!(
            std::fs::read_to_string(root.join("old/.git/config")).unwrap(),
            "[core]\n\tbare = false\n"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("theirs/.git/config")).unwrap(),
            "[core]\n\tpager = less\n"
        );
        assert!(baseline.sweep(root).is_empty());
    }
}
