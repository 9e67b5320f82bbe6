//! Unified diffs as the model writes them (auto mode's `patch` action, and the
//! `propose_patch` / `apply_patch` tools): parsed leniently, since small models get hunk
//! counts and blank context lines wrong, then applied to the files' current text with
//! nothing written until every hunk of every file applies. A hunk that does not apply is
//! reported by number, header and the first line that is not where it says.

mod apply;
mod check;
pub mod tool;

pub(in crate::tools) use apply::apply;
pub(in crate::tools) use check::check;
pub use check::{CONFIRM_ABOVE_FILES, CONFIRM_ABOVE_LINES, Change, Checked};

/// One file's part of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// The path before (`None` for a new file, `--- /dev/null`).
    pub old_path: Option<String>,
    /// The path after (`None` when the file is deleted, `+++ /dev/null`).
    pub new_path: Option<String>,
    pub hunks: Vec<Hunk>,
}

impl FilePatch {
    /// The path the patch writes (or deletes).
    pub fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or_default()
    }
}

/// One `@@ … @@` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The header as written, for messages.
    pub header: String,
    /// Where the old lines start (1-based; 0 for a new file).
    pub old_start: usize,
    pub lines: Vec<Line>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Context(String),
    Remove(String),
    Add(String),
}

impl Hunk {
    /// The lines the file has before the change, in order.
    pub fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                Line::Context(t) | Line::Remove(t) => Some(t.as_str()),
                Line::Add(_) => None,
            })
            .collect()
    }

    /// The lines it has after.
    pub fn new_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                Line::Context(t) | Line::Add(t) => Some(t.as_str()),
                Line::Remove(_) => None,
            })
            .collect()
    }
}

/// Parses a unified diff (`git diff` output or plain `diff -u`; `diff --git`, `index` and
/// mode lines are skipped). Hunk line counts in headers are not trusted: the body says
/// how long a hunk is. `Err` says what is wrong and where.
pub(in crate::tools) fn parse(diff: &str) -> Result<Vec<FilePatch>, String> {
    let diff = strip_fence(diff);
    let mut files: Vec<FilePatch> = Vec::new();
    let lines: Vec<&str> = diff.lines().collect();
    // `--- ` starts a file only when `+++ ` follows: removing a line that begins with
    // `-- ` (an SQL or Lua comment) also makes a `--- ` line.
    let file_header = |n: usize| {
        lines[n].starts_with("--- ") && lines.get(n + 1).is_some_and(|l| l.starts_with("+++ "))
    };
    let mut n = 0;
    while n < lines.len() {
        let line = lines[n];
        n += 1;
        if let Some(old) = line.strip_prefix("--- ") {
            let Some(new) = lines.get(n).and_then(|l| l.strip_prefix("+++ ")) else {
                return Err(format!("line {n}: `---` must be followed by `+++`"));
            };
            n += 1;
            files.push(FilePatch {
                old_path: path_of(old),
                new_path: path_of(new),
                hunks: Vec::new(),
            });
        } else if line.starts_with("@@") {
            let Some(file) = files.last_mut() else {
                return Err(format!(
                    "line {n}: a hunk before any `--- a/path` / `+++ b/path` header"
                ));
            };
            let old_start =
                old_start(line).ok_or_else(|| format!("line {n}: not a hunk header: `{line}`"))?;
            let mut hunk = Hunk {
                header: line.to_string(),
                old_start,
                lines: Vec::new(),
            };
            while n < lines.len() && !lines[n].starts_with("@@") && !file_header(n) {
                let body = lines[n];
                if body.starts_with("diff ") {
                    break;
                }
                n += 1;
                match body.chars().next() {
                    Some('+') => hunk.lines.push(Line::Add(body[1..].to_string())),
                    Some('-') => hunk.lines.push(Line::Remove(body[1..].to_string())),
                    Some(' ') => hunk.lines.push(Line::Context(body[1..].to_string())),
                    // Models often drop the space of an empty context line.
                    None => hunk.lines.push(Line::Context(String::new())),
                    Some('\\') => {} // "\ No newline at end of file"
                    Some(_) => break,
                }
            }
            if !hunk.lines.iter().any(|l| !matches!(l, Line::Context(_))) {
                return Err(format!("hunk `{}` changes nothing", hunk.header));
            }
            file.hunks.push(hunk);
        }
    }
    if files.is_empty() {
        return Err("no `--- a/path` / `+++ b/path` header: not a unified diff".to_string());
    }
    if let Some(empty) = files
        .iter()
        .find(|f| f.hunks.is_empty() && f.new_path.is_some())
    {
        return Err(format!("`{}` has no hunks", empty.path()));
    }
    Ok(files)
}

/// `a/src/main.rs\t2026-…` → `src/main.rs`; `/dev/null` → `None`.
fn path_of(raw: &str) -> Option<String> {
    let raw = raw.split('\t').next().unwrap_or(raw).trim();
    if raw == "/dev/null" {
        return None;
    }
    let raw = raw
        .strip_prefix("a/")
        .or_else(|| raw.strip_prefix("b/"))
        .unwrap_or(raw);
    Some(raw.to_string())
}

/// `@@ -12,7 +12,8 @@ fn x` → 12.
fn old_start(header: &str) -> Option<usize> {
    let rest = header.strip_prefix("@@")?.trim_start().strip_prefix('-')?;
    let number: String = rest.chars().take_while(char::is_ascii_digit).collect();
    number.parse().ok()
}

/// A diff a model wrapped in a markdown fence.
fn strip_fence(diff: &str) -> &str {
    let trimmed = diff.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return diff;
    };
    let body = rest.split_once('\n').map_or("", |(_, body)| body);
    body.strip_suffix("```").unwrap_or(body)
}

#[cfg(test)]
mod tests;
