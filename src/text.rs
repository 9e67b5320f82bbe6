//! Small text helpers shared by modules that must not depend on each other (the config
//! reader and the line grammar both suggest what the person probably meant).

/// The first line of `text`, cut to `max` characters; an ellipsis marks anything left out.
pub fn one_line(text: &str, max: usize) -> String {
    let text = text.trim();
    let first = text.lines().next().unwrap_or_default().trim_end();
    if text.lines().nth(1).is_none() && first.chars().count() <= max {
        return first.to_string();
    }
    let kept: String = first.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", kept.trim_end())
}

/// Optimal-string-alignment distance over characters (not bytes, so `/模形` is one edit
/// from `/模型`).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rolling rows: the transposition rule looks two rows back.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(before[j - 2] + 1);
            }
            current[j] = best;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
pub fn prefix_bytes(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `12345` as `12,345`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `text` cut to its first `max` characters, with a last line saying how many were left
/// out; as it is when it fits.
pub fn cut_chars(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_string();
    }
    let mut kept: String = text.chars().take(max).collect();
    kept.push_str(&format!("\n… [{} more characters not shown]", total - max));
    kept
}

/// `1 line`, `3 lines`: a count with its noun in the right number.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The candidate closest to `typed` when it is close enough to be a likely typo (at most
/// a third of its length, and at most 2 edits, away).
pub fn closest<'a>(typed: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let limit = (typed.chars().count() / 3).clamp(1, 2);
    candidates
        .iter()
        .map(|c| (edit_distance(&typed.to_lowercase(), &c.to_lowercase()), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_likely_typo_finds_its_key() {
        assert_eq!(
            super::closest("max_iter", &["max_iters", "theme"]),
            Some("max_iters")
        );
        assert_eq!(
            super::closest("permision_mode", &["permission_mode"]),
            Some("permission_mode")
        );
        assert_eq!(super::closest("colour", &["theme", "show_thinking"]), None);
    }
}
