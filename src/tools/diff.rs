//! Unified diffs for Write and Edit: shown to a person before approving and after the fact.

use std::time::Duration;

use similar::{ChangeTag, TextDiff};

/// Longest diff shown; the rest is summarised as a count.
const MAX_DIFF_LINES: usize = 200;

/// A pathological input (huge files, no common lines) must not stall a turn; past this the
/// diff is coarser but still correct.
const DIFF_TIMEOUT: Duration = Duration::from_millis(500);

/// Lines added and removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DiffStat {
    pub added: usize,
    pub removed: usize,
}

impl DiffStat {
    /// `+3 -1`, the way a person scans a change.
    pub fn label(&self) -> String {
        format!("+{} -{}", self.added, self.removed)
    }
}

/// The unified diff from `old` to `new` for the file `rel`, truncated to
/// [`MAX_DIFF_LINES`], and its line counts. `None` when nothing changed.
pub fn unified(rel: &str, old: &str, new: &str) -> (Option<String>, DiffStat) {
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new);
    let mut stat = DiffStat::default();
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => stat.added += 1,
            ChangeTag::Delete => stat.removed += 1,
            ChangeTag::Equal => {}
        }
    }
    if stat == DiffStat::default() {
        return (None, stat);
    }
    let old_name = if old.is_empty() {
        "/dev/null".to_string()
    } else {
        format!("a/{rel}")
    };
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&old_name, &format!("b/{rel}"))
        .to_string();
    (Some(truncate_lines(&text, MAX_DIFF_LINES)), stat)
}

/// Keeps the first `max` lines and says how many were left out.
pub fn truncate_lines(text: &str, max: usize) -> String {
    let total = text.lines().count();
    if total <= max {
        return text.to_string();
    }
    let mut out: String = text
        .lines()
        .take(max)
        .flat_map(|line| [line, "\n"])
        .collect();
    out.push_str(&format!("… {} more lines\n", total - max));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_file_is_all_added() {
        let (diff, stat) = unified("a.txt", "", "one\ntwo\n");
        let diff = diff.unwrap();
        assert!(diff.starts_with("--- /dev/null\n+++ b/a.txt\n"), "{diff}");
        assert!(diff.contains("+one\n+two\n"));
        assert_eq!(
            stat,
            DiffStat {
                added: 2,
                removed: 0
            }
        );
    }

    #[test]
    fn unchanged_is_none() {
        assert_eq!(unified("a", "x\n", "x\n").0, None);
    }

    #[test]
    fn long_diffs_are_truncated_with_a_count() {
        let new: String = (0..500).map(|i| format!("{i}\n")).collect();
        let (diff, stat) = unified("a", "", &new);
        let diff = diff.unwrap();
        assert_eq!(stat.added, 500);
        assert_eq!(diff.lines().count(), 201);
        assert!(
            diff.ends_with("… 303 more lines\n"),
            "{}",
            diff.lines().last().unwrap()
        );
    }
}
