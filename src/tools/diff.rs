//! Unified diffs for Write and Edit: shown to a person before approving and after the fact.
//!
//! A line diff of its own (Myers' O(ND) algorithm over the lines between the common start
//! and end) rather than a diff crate: this one use cost 0.4 MB of the release binary.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// Longest diff shown; the rest is summarised as a count.
const MAX_DIFF_LINES: usize = 200;

/// A pathological input (huge files, no common lines) must not stall a turn; past this the
/// diff is coarser but still correct.
const DIFF_TIMEOUT: Duration = Duration::from_millis(500);

/// Past this many differing lines the middle is shown as removed and added whole: the
/// search keeps one row per step, so its memory grows with the square of the steps
/// (16 MB at this bound).
const MAX_EDIT_STEPS: usize = 2_000;

/// Unchanged lines shown around each change.
const CONTEXT: usize = 3;

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

/// What happens to one line on the way from the old text to the new.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Equal,
    Delete,
    Insert,
}

impl Tag {
    /// The old and new line numbers after this line, from those before it.
    fn step(self, (i, j): (usize, usize)) -> (usize, usize) {
        match self {
            Tag::Equal => (i + 1, j + 1),
            Tag::Delete => (i + 1, j),
            Tag::Insert => (i, j + 1),
        }
    }
}

/// The unified diff from `old` to `new` for the file `rel`, truncated to
/// [`MAX_DIFF_LINES`], and its line counts. `None` when nothing changed.
pub fn unified(rel: &str, old: &str, new: &str) -> (Option<String>, DiffStat) {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let script = edit_script(&a, &b, Instant::now() + DIFF_TIMEOUT);
    let stat = DiffStat {
        added: script.iter().filter(|t| **t == Tag::Insert).count(),
        removed: script.iter().filter(|t| **t == Tag::Delete).count(),
    };
    if stat == DiffStat::default() {
        return (None, stat);
    }
    let old_name = if old.is_empty() {
        "/dev/null".to_string()
    } else {
        format!("a/{rel}")
    };
    let mut text = format!("--- {old_name}\n+++ b/{rel}\n");
    // Each hunk starts where the lines before it end: counted once, hunk after hunk.
    let (mut done, mut at) = (0, (0, 0));
    for hunk in hunks(&script) {
        at = script[done..hunk.start]
            .iter()
            .fold(at, |at, tag| tag.step(at));
        at = write_hunk(&mut text, &a, &b, &script[hunk.clone()], at);
        done = hunk.end;
    }
    (Some(truncate_lines(&text, MAX_DIFF_LINES)), stat)
}

/// One tag per line of either side, in order: the common start and end are equal, the
/// middle is Myers' shortest script (or all removed, then all added, when that search
/// would take too long).
fn edit_script(a: &[&str], b: &[&str], deadline: Instant) -> Vec<Tag> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a_rest, b_rest) = (&a[prefix..], &b[prefix..]);
    let suffix = a_rest
        .iter()
        .rev()
        .zip(b_rest.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let middle_a = &a_rest[..a_rest.len() - suffix];
    let middle_b = &b_rest[..b_rest.len() - suffix];
    let (ids_a, ids_b) = intern(middle_a, middle_b);
    let middle = myers(&ids_a, &ids_b, deadline).unwrap_or_else(|| {
        let mut coarse = vec![Tag::Delete; ids_a.len()];
        coarse.extend(std::iter::repeat_n(Tag::Insert, ids_b.len()));
        coarse
    });
    let mut script = vec![Tag::Equal; prefix];
    script.extend(middle);
    script.extend(std::iter::repeat_n(Tag::Equal, suffix));
    script
}

/// Each distinct line as a number, so the search compares numbers, not strings.
fn intern<'t>(a: &[&'t str], b: &[&'t str]) -> (Vec<u32>, Vec<u32>) {
    let mut ids: HashMap<&'t str, u32> = HashMap::new();
    let mut id = |line: &'t str| {
        let next = ids.len() as u32;
        *ids.entry(line).or_insert(next)
    };
    let a = a.iter().map(|l| id(l)).collect();
    let b = b.iter().map(|l| id(l)).collect();
    (a, b)
}

/// Myers' greedy search for the shortest edit script from `a` to `b`; `None` past the
/// deadline or [`MAX_EDIT_STEPS`].
fn myers(a: &[u32], b: &[u32], deadline: Instant) -> Option<Vec<Tag>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = (n + m) as usize;
    let offset = max as isize + 1;
    // `v[k + offset]`: the furthest x reached on diagonal k (x - y = k).
    let mut v = vec![0isize; 2 * max + 3];
    // Row d keeps diagonals -d-1..=d+1 of `v` as it was before step d: all the walk back
    // reads.
    let mut trace: Vec<Vec<u32>> = Vec::new();
    for d in 0..=max.min(MAX_EDIT_STEPS) as isize {
        if d % 64 == 0 && Instant::now() > deadline {
            return None;
        }
        let row = (offset - d - 1) as usize..=(offset + d + 1) as usize;
        trace.push(v[row].iter().map(|&x| x as u32).collect());
        for k in (-d..=d).step_by(2) {
            let down =
                k == -d || (k != d && v[(k - 1 + offset) as usize] < v[(k + 1 + offset) as usize]);
            let mut x = if down {
                v[(k + 1 + offset) as usize]
            } else {
                v[(k - 1 + offset) as usize] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[(k + offset) as usize] = x;
            if x >= n && y >= m {
                return Some(backtrack(&trace, n, m));
            }
        }
    }
    None
}

/// Walks the search's rows back from the end, one edit per row.
fn backtrack(trace: &[Vec<u32>], n: isize, m: isize) -> Vec<Tag> {
    let mut tags = Vec::with_capacity((n + m) as usize);
    let (mut x, mut y) = (n, m);
    for (d, row) in trace.iter().enumerate().rev() {
        let d = d as isize;
        // Diagonal k is at `row[k + d + 1]`.
        let at = |k: isize| row[(k + d + 1) as usize] as isize;
        let k = x - y;
        let down = k == -d || (k != d && at(k - 1) < at(k + 1));
        let prev_k = if down { k + 1 } else { k - 1 };
        let prev_x = at(prev_k);
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            tags.push(Tag::Equal);
            x -= 1;
            y -= 1;
        }
        if d > 0 {
            tags.push(if down { Tag::Insert } else { Tag::Delete });
        }
        (x, y) = (prev_x, prev_y);
    }
    tags.reverse();
    tags
}

/// The script's stretches shown as hunks, as index ranges into it: each change with
/// [`CONTEXT`] equal lines around it, and changes closer than twice that in one hunk.
fn hunks(script: &[Tag]) -> Vec<std::ops::Range<usize>> {
    let mut hunks: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, _) in script.iter().enumerate().filter(|(_, t)| **t != Tag::Equal) {
        let start = i.saturating_sub(CONTEXT);
        let end = (i + 1 + CONTEXT).min(script.len());
        match hunks.last_mut() {
            Some(last) if start <= last.end => last.end = end,
            _ => hunks.push(start..end),
        }
    }
    hunks
}

/// `@@ -old +new @@` and the hunk's lines (`script`, starting at old line `i` and new line
/// `j`); a last line without its newline says so. Returns where the hunk ends.
fn write_hunk(
    out: &mut String,
    a: &[&str],
    b: &[&str],
    script: &[Tag],
    (mut i, mut j): (usize, usize),
) -> (usize, usize) {
    let old_len = script.iter().filter(|t| **t != Tag::Insert).count();
    let new_len = script.iter().filter(|t| **t != Tag::Delete).count();
    let _ = writeln!(out, "@@ -{} +{} @@", range(i, old_len), range(j, new_len));
    for tag in script {
        let (sign, line) = match tag {
            Tag::Equal => (' ', a[i]),
            Tag::Delete => ('-', a[i]),
            Tag::Insert => ('+', b[j]),
        };
        out.push(sign);
        out.push_str(line);
        if !line.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
        (i, j) = tag.step((i, j));
    }
    (i, j)
}

/// A hunk side's `start,length` (1-based; a lone line is just its number; an empty side
/// names the line before it).
fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
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

    /// A small xorshift, so the property tests need no crate and repeat exactly.
    fn lines_from(seed: &mut u64, max_len: u64, alphabet: u64) -> String {
        let mut next = |n: u64| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed % n
        };
        let len = next(max_len);
        let mut text: String = (0..len).map(|_| format!("l{}\n", next(alphabet))).collect();
        if next(4) == 0 {
            text.push_str("last");
        }
        text
    }

    /// The fewest lines removed plus added, from the longest common subsequence.
    fn fewest_edits(a: &[&str], b: &[&str]) -> usize {
        let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
        for i in (0..a.len()).rev() {
            for j in (0..b.len()).rev() {
                lcs[i][j] = if a[i] == b[j] {
                    lcs[i + 1][j + 1] + 1
                } else {
                    lcs[i + 1][j].max(lcs[i][j + 1])
                };
            }
        }
        a.len() + b.len() - 2 * lcs[0][0]
    }

    /// Both sides rebuilt from the script: equal and removed lines are the old text, equal
    /// and added lines the new.
    fn sides(a: &[&str], b: &[&str], script: &[Tag]) -> (String, String) {
        let (mut i, mut j) = (0, 0);
        let (mut old, mut new) = (String::new(), String::new());
        for tag in script {
            match tag {
                Tag::Equal => {
                    old.push_str(a[i]);
                    new.push_str(b[j]);
                    (i, j) = (i + 1, j + 1);
                }
                Tag::Delete => {
                    old.push_str(a[i]);
                    i += 1;
                }
                Tag::Insert => {
                    new.push_str(b[j]);
                    j += 1;
                }
            }
        }
        (old, new)
    }

    #[test]
    fn the_script_rebuilds_both_sides_with_the_fewest_edits() {
        let mut seed = 0x5eed;
        for _ in 0..2_000 {
            let (old, new) = (lines_from(&mut seed, 30, 6), lines_from(&mut seed, 30, 6));
            let a: Vec<&str> = old.split_inclusive('\n').collect();
            let b: Vec<&str> = new.split_inclusive('\n').collect();
            let script = edit_script(&a, &b, Instant::now() + DIFF_TIMEOUT);
            assert_eq!(sides(&a, &b, &script), (old.clone(), new.clone()));
            let edits = script.iter().filter(|t| **t != Tag::Equal).count();
            assert_eq!(edits, fewest_edits(&a, &b), "{old:?} -> {new:?}");
        }
    }

    #[test]
    fn past_the_deadline_the_middle_is_replaced_whole_and_still_correct() {
        let (old, new) = ("same\na\nb\nsame end\n", "same\nb\nc\nsame end\n");
        let a: Vec<&str> = old.split_inclusive('\n').collect();
        let b: Vec<&str> = new.split_inclusive('\n').collect();
        let past = Instant::now() - Duration::from_secs(1);
        let script = edit_script(&a, &b, past);
        use Tag::*;
        assert_eq!(script, [Equal, Delete, Delete, Insert, Insert, Equal]);
        assert_eq!(sides(&a, &b, &script), (old.to_string(), new.to_string()));
    }

    #[test]
    fn a_changed_line_is_removed_then_added_in_one_hunk_with_context() {
        let old = "1\n2\n3\n4\nold\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nnew\n6\n7\n8\n9\n";
        let (diff, stat) = unified("src/x.rs", old, new);
        assert_eq!(
            diff.unwrap(),
            "--- a/src/x.rs\n+++ b/src/x.rs\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-old\n+new\n 6\n 7\n 8\n"
        );
        assert_eq!(stat.label(), "+1 -1");
    }

    #[test]
    fn changes_more_than_six_lines_apart_are_two_hunks_and_closer_ones_one() {
        let old: String = (1..=20).map(|i| format!("{i}\n")).collect();
        let apart = old
            .replace("\n3\n", "\nthree\n")
            .replace("\n11\n", "\neleven\n");
        let (diff, _) = unified("f", &old, &apart);
        let diff = diff.unwrap();
        assert_eq!(diff.matches("@@ -").count(), 2, "{diff}");
        assert!(diff.contains("@@ -1,6 +1,6 @@\n"), "{diff}");
        assert!(diff.contains("@@ -8,7 +8,7 @@\n"), "{diff}");
        let close = old
            .replace("\n3\n", "\nthree\n")
            .replace("\n10\n", "\nten\n");
        let (diff, _) = unified("f", &old, &close);
        assert_eq!(diff.unwrap().matches("@@ -").count(), 1);
    }

    #[test]
    fn a_last_line_without_its_newline_says_so() {
        let (diff, _) = unified("f", "a\nb", "a\nc");
        assert_eq!(
            diff.unwrap(),
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
        );
        let (diff, _) = unified("f", "a\n", "");
        assert!(diff.unwrap().ends_with("@@ -1 +0,0 @@\n-a\n"));
    }

    #[test]
    fn a_rewrite_too_different_to_search_is_shown_removed_and_added_whole() {
        let old: String = (0..30_000).map(|i| format!("old {i}\n")).collect();
        let new: String = (0..30_000).map(|i| format!("new {i}\n")).collect();
        let (diff, stat) = unified("f", &old, &new);
        assert_eq!(stat.label(), "+30000 -30000");
        assert!(diff.unwrap().contains("@@ -1,30000 +1,30000 @@\n-old 0\n"));
    }
}
