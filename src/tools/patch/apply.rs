//! A file's hunks applied to its current text.

use super::{FilePatch, Hunk};

/// `original` (the file's text; empty for a new file) with `file`'s hunks applied, or why
/// a hunk does not apply. Hunks apply in order, each after the previous one.
pub(in crate::tools) fn apply(file: &FilePatch, original: &str) -> Result<String, String> {
    if file.new_path.is_none() {
        return Ok(String::new());
    }
    let ends_with_newline = original.is_empty() || original.ends_with('\n');
    let mut lines: Vec<String> = original.lines().map(str::to_string).collect();
    // Where the next hunk may start: hunks do not overlap and come in order.
    let mut floor = 0;
    for (i, hunk) in file.hunks.iter().enumerate() {
        let old = hunk.old_lines();
        let at = find(&lines, &old, hunk.old_start.saturating_sub(1), floor)
            .ok_or_else(|| not_found(file, i, hunk, &lines, floor))?;
        let new: Vec<String> = hunk.new_lines().iter().map(|l| l.to_string()).collect();
        let added = new.len();
        lines.splice(at..at + old.len(), new);
        floor = at + added;
    }
    let mut text = lines.join("\n");
    if !lines.is_empty() && ends_with_newline {
        text.push('\n');
    }
    Ok(text)
}

/// The position at or after `floor`, nearest to `expected`, where `old` matches: exactly,
/// else ignoring trailing whitespace. Nearest, because line numbers drift when the model
/// counted wrong; the whole file, because a hunk that applies somewhere is what was meant.
fn find(lines: &[String], old: &[&str], expected: usize, floor: usize) -> Option<usize> {
    if old.is_empty() {
        return Some(expected.clamp(floor, lines.len()));
    }
    let exact = |at: usize| old.iter().zip(&lines[at..]).all(|(a, b)| *a == b);
    let loose = |at: usize| {
        old.iter()
            .zip(&lines[at..])
            .all(|(a, b)| a.trim_end() == b.trim_end())
    };
    let last = lines.len().checked_sub(old.len())?;
    for matches in [&exact as &dyn Fn(usize) -> bool, &loose] {
        for offset in 0..=lines.len() {
            for at in [expected.checked_sub(offset), expected.checked_add(offset)]
                .into_iter()
                .flatten()
            {
                if at >= floor && at <= last && matches(at) {
                    return Some(at);
                }
            }
            if expected.saturating_sub(offset) <= floor && expected + offset >= last {
                break;
            }
        }
    }
    None
}

/// Hunk `i` does not apply: which one, and the first of its lines the file does not have
/// where the hunk would go.
fn not_found(file: &FilePatch, i: usize, hunk: &Hunk, lines: &[String], floor: usize) -> String {
    let old = hunk.old_lines();
    let start = hunk.old_start.saturating_sub(1).max(floor);
    let missing = old
        .iter()
        .find(|l| {
            !lines[floor.min(lines.len())..]
                .iter()
                .any(|have| have.trim_end() == l.trim_end())
        })
        .or_else(|| old.first());
    let near = lines.get(start).map_or_else(
        || format!("the file has {} lines", lines.len()),
        |l| format!("line {} of the file is `{}`", start + 1, l),
    );
    format!(
        "hunk {} of {} (`{}`) does not apply to {}: its line `{}` is not in the file there \
         ({near}); read the file again and make the context lines match it exactly",
        i + 1,
        file.hunks.len(),
        hunk.header,
        file.path(),
        missing.copied().unwrap_or_default()
    )
}
