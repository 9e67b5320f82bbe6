//! Just enough of `sh` pathname matching to ask what a glob could name: whether one of its
//! components matches `..` (`.*` does, in dash and older bash) or the name of a protected
//! file (`.gi?`, `*.toml`). Matching is only ever against short, fixed names, so its cost is
//! linear in the pattern.

use super::lexer::{QChar, Word};
use super::work;

/// The `/`-separated components of a word, each with its quoting.
pub fn components(word: &Word) -> impl Iterator<Item = &[QChar]> {
    word.chars.split(|q| q.c == '/')
}

/// Whether a component contains an unquoted pattern character.
pub fn is_pattern(component: &[QChar]) -> bool {
    let last_close = component.iter().rposition(|q| !q.quoted && q.c == ']');
    component.iter().enumerate().any(|(i, q)| {
        !q.quoted
            && match q.c {
                '*' | '?' => true,
                '[' => last_close.is_some_and(|close| close > i),
                _ => false,
            }
    })
}

/// Whether `name` matches the pattern `component` as `sh` matches a file name: `*` and `?`
/// do not match a leading `.`, `[...]` is a set (`!` or `^` negates, `a-z` a range), and
/// quoted characters are literal. Compared without case, as on case-insensitive file
/// systems; erring towards a match only costs a question.
pub fn matches(component: &[QChar], name: &str) -> bool {
    let name: Vec<char> = name.chars().map(|c| c.to_ascii_lowercase()).collect();
    let leading_dot_literal = component.first().is_some_and(|q| q.c == '.');
    if name.first() == Some(&'.') && !leading_dot_literal {
        return false;
    }
    let (mut p, mut n) = (0, 0);
    // The last `*` seen and the name position it currently stands up to.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        work::tick(1);
        if let Some(q) = component.get(p) {
            if !q.quoted && q.c == '*' {
                star = Some((p, n));
                p += 1;
                continue;
            }
            let (matched, next) = element(component, p, name[n]);
            if matched {
                p = next;
                n += 1;
                continue;
            }
        }
        match star {
            Some((star_p, star_n)) => {
                p = star_p + 1;
                n = star_n + 1;
                star = Some((star_p, star_n + 1));
            }
            None => return false,
        }
    }
    component[p..].iter().all(|q| !q.quoted && q.c == '*')
}

/// Matches the pattern element at `p` against `c`: whether it matched, and where the next
/// element starts.
fn element(pattern: &[QChar], p: usize, c: char) -> (bool, usize) {
    let q = pattern[p];
    let lower = q.c.to_ascii_lowercase();
    if q.quoted {
        return (lower == c, p + 1);
    }
    match q.c {
        '?' => (true, p + 1),
        '[' => bracket(pattern, p + 1, c).unwrap_or((c == '[', p + 1)),
        _ => (lower == c, p + 1),
    }
}

/// The set starting after a `[`: whether `c` is in it, and the index after its `]`; `None`
/// when no `]` closes it (the `[` is then literal).
fn bracket(pattern: &[QChar], start: usize, c: char) -> Option<(bool, usize)> {
    let mut i = start;
    let negate = pattern
        .get(i)
        .is_some_and(|q| !q.quoted && matches!(q.c, '!' | '^'));
    if negate {
        i += 1;
    }
    let first = i;
    let mut found = false;
    loop {
        work::tick(1);
        let q = pattern.get(i)?;
        if !q.quoted && q.c == ']' && i > first {
            return Some((found != negate, i + 1));
        }
        let lo = q.c.to_ascii_lowercase();
        let range_end = match (pattern.get(i + 1), pattern.get(i + 2)) {
            (Some(dash), Some(hi)) if dash.c == '-' && (hi.c != ']' || hi.quoted) => Some(hi),
            _ => None,
        };
        match range_end {
            Some(hi) => {
                found |= (lo..=hi.c.to_ascii_lowercase()).contains(&c);
                i += 3;
            }
            None => {
                found |= lo == c;
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> Vec<QChar> {
        text.chars().map(|c| QChar { c, quoted: false }).collect()
    }

    #[test]
    fn matches_like_sh() {
        for (p, name, expected) in [
            ("*", "agents", true),
            ("*", ".git", false),
            (".*", ".git", true),
            (".*", "..", true),
            (".?", "..", true),
            ("..*", "..", true),
            (".gi?", ".git", true),
            (".gi[t]", ".git", true),
            (".gi[!t]", ".git", false),
            (".g[a-z]t", ".GIT", true),
            ("*.toml", "linggen-agent.toml", true),
            ("*.rs", "linggen-agent.toml", false),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "aXbY", false),
            ("[", "[", true),
            ("[]x]", "]", true),
        ] {
            assert_eq!(matches(&pattern(p), name), expected, "{p} vs {name}");
        }
        let quoted: Vec<QChar> = "*".chars().map(|c| QChar { c, quoted: true }).collect();
        assert!(!matches(&quoted, "agents"));
        assert!(is_pattern(&pattern(".gi?")) && !is_pattern(&quoted));
    }
}
