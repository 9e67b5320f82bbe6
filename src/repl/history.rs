//! The shell's line history, kept per project in `$LINGGEN_HOME/history.jsonl`: one JSON
//! object a line (`{"root": …, "line": …}`), appended with one write under an exclusive
//! lock, so shells sharing the home never lose each other's lines; compacted (also under
//! the lock, by an atomic rename) once it holds far more than is loaded. Approval answers
//! are not lines of history: the shell does not record them.
//!
//! The history file of earlier versions (`history`, rustyline's format, every project's
//! lines together) is read first and left in place.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Lines kept per project (and loaded into the editor).
pub const KEPT: usize = 10_000;
/// Lines kept in all, newest first, whatever their project.
const KEPT_IN_ALL: usize = 4 * KEPT;
/// The file is compacted once it is this large (a few MiB: reading it stays quick).
const COMPACT_BYTES: u64 = 8 << 20;

#[derive(Serialize, Deserialize)]
struct Entry {
    root: String,
    line: String,
}

/// One project's history in one home.
pub struct History {
    file: PathBuf,
    legacy: PathBuf,
    root: String,
    compact_bytes: u64,
}

impl History {
    pub fn new(home: &Path, root: &Path) -> History {
        History {
            file: home.join("history.jsonl"),
            legacy: home.join("history"),
            root: root.display().to_string(),
            compact_bytes: COMPACT_BYTES,
        }
    }

    /// This project's lines, oldest first (at most [`KEPT`]); a file that cannot be read
    /// is an empty history, never an error that stops the shell.
    pub fn load(&self) -> Vec<String> {
        let mut lines = legacy_lines(&self.legacy);
        if let Ok(file) = File::open(&self.file) {
            for row in BufReader::new(file).lines().map_while(Result::ok) {
                // A line cut short by a crash (or not ours) is skipped, not fatal.
                if let Ok(entry) = serde_json::from_str::<Entry>(&row)
                    && entry.root == self.root
                {
                    lines.push(entry.line);
                }
            }
        }
        let excess = lines.len().saturating_sub(KEPT);
        lines.drain(..excess);
        lines
    }

    /// Appends `line` for this project. Errors are returned for the caller to report once;
    /// losing a history line must not stop the shell.
    pub fn append(&self, line: &str) -> std::io::Result<()> {
        let entry = Entry {
            root: self.root.clone(),
            line: line.to_string(),
        };
        let mut row = serde_json::to_string(&entry).map_err(std::io::Error::other)?;
        row.push('\n');
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.file)?;
        let _lock = crate::durable::FileLock::exclusive(&file)?;
        (&file).write_all(row.as_bytes())?;
        if file.metadata()?.len() > self.compact_bytes {
            self.compact()?;
        }
        Ok(())
    }

    /// Keeps the last [`KEPT`] lines of each project, [`KEPT_IN_ALL`] in all; called with the
    /// lock held.
    fn compact(&self) -> std::io::Result<()> {
        let rows: Vec<String> = BufReader::new(File::open(&self.file)?)
            .lines()
            .map_while(Result::ok)
            .collect();
        let mut per_root: std::collections::HashMap<String, usize> = Default::default();
        let mut keep = vec![false; rows.len()];
        let mut kept = 0;
        for (i, row) in rows.iter().enumerate().rev() {
            let root = serde_json::from_str::<Entry>(row)
                .map(|e| e.root)
                .unwrap_or_default();
            let count = per_root.entry(root).or_default();
            if *count < KEPT && kept < KEPT_IN_ALL {
                *count += 1;
                kept += 1;
                keep[i] = true;
            }
        }
        let mut out = String::new();
        for (row, _) in rows.iter().zip(&keep).filter(|(_, keep)| **keep) {
            out.push_str(row);
            out.push('\n');
        }
        // Durable: a full disk leaves the whole history, never a cut one.
        crate::durable::replace(
            &self.file,
            out.as_bytes(),
            crate::durable::Options::private(),
        )
        .map_err(std::io::Error::other)
    }
}

/// Lines of rustyline's history file (`#V2` then one escaped line each), if there is one.
fn legacy_lines(path: &Path) -> Vec<String> {
    let Ok(file) = File::open(path) else {
        return Vec::new();
    };
    BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter(|row| row != "#V2" && !row.is_empty())
        .map(|row| unescape(&row))
        .collect()
}

/// rustyline's V2 escapes: `\n` for a newline, `\\` for a backslash.
fn unescape(row: &str) -> String {
    let mut out = String::new();
    let mut chars = row.chars();
    while let Some(c) = chars.next() {
        match (c, chars.clone().next()) {
            ('\\', Some('n')) => {
                out.push('\n');
                chars.next();
            }
            ('\\', Some('\\')) => {
                out.push('\\');
                chars.next();
            }
            (c, _) => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_per_project_and_shared_by_shells_of_one_home() {
        let home = tempfile::tempdir().unwrap();
        let a = History::new(home.path(), Path::new("/work/a"));
        let b = History::new(home.path(), Path::new("/work/b"));
        let a_again = History::new(home.path(), Path::new("/work/a"));
        a.append("first in a").unwrap();
        b.append("in b").unwrap();
        a_again.append("multi\nline").unwrap();
        assert_eq!(a.load(), ["first in a", "multi\nline"]);
        assert_eq!(b.load(), ["in b"]);
    }

    /// Many shells appending at once: every line is kept.
    #[test]
    fn concurrent_appends_lose_nothing() {
        let home = tempfile::tempdir().unwrap();
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let home = home.path().to_path_buf();
                std::thread::spawn(move || {
                    let history = History::new(&home, Path::new("/w"));
                    for i in 0..50 {
                        history.append(&format!("{t}-{i}")).unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(History::new(home.path(), Path::new("/w")).load().len(), 400);
    }

    #[test]
    fn the_old_history_file_is_read_first_and_kept() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("history"), "#V2\nold one\nold\\ntwo\n").unwrap();
        let history = History::new(home.path(), Path::new("/w"));
        history.append("new").unwrap();
        assert_eq!(history.load(), ["old one", "old\ntwo", "new"]);
        assert!(home.path().join("history").exists());
    }

    #[test]
    fn compaction_keeps_the_newest_lines_of_each_project() {
        let home = tempfile::tempdir().unwrap();
        let mut history = History::new(home.path(), Path::new("/w"));
        let rows: String = (0..KEPT + 10)
            .map(|i| format!("{{\"root\":\"/w\",\"line\":\"{i}\"}}\n"))
            .collect();
        history.compact_bytes = rows.len() as u64;
        std::fs::write(home.path().join("history.jsonl"), rows).unwrap();
        history.append("last").unwrap();
        let kept = history.load();
        assert_eq!(kept.len(), KEPT);
        assert_eq!(kept.last().map(String::as_str), Some("last"));
        let on_disk = std::fs::read_to_string(home.path().join("history.jsonl")).unwrap();
        assert_eq!(on_disk.lines().count(), KEPT);
    }
}
