//! Matching what was typed against names and paths. Case-insensitive throughout: a person
//! typing `@readme` means `README.md`.

use super::files::IndexedFile;

/// Whether every character of `query` appears in `candidate` in order (`smr` ⊂ `src/main.rs`).
/// Both are expected lowercased.
pub(super) fn is_subsequence(query: &str, candidate: &str) -> bool {
    let mut remaining = candidate.chars();
    query.chars().all(|q| remaining.any(|c| c == q))
}

/// The items whose name starts with `query`, in their given order; when none does, those
/// that contain it as a subsequence. Prefix matches alone keep Tab's common-prefix
/// completion useful (`/he` must complete to `/help`, not stall on `/help` vs `/theme`);
/// the fallback still finds `/hlp`.
pub(super) fn filter_names<T>(
    query: &str,
    items: impl Iterator<Item = T> + Clone,
    name: impl Fn(&T) -> &str,
) -> Vec<T> {
    let query = query.to_lowercase();
    let prefixed: Vec<T> = items
        .clone()
        .filter(|item| name(item).to_lowercase().starts_with(&query))
        .collect();
    if !prefixed.is_empty() || query.is_empty() {
        return prefixed;
    }
    items
        .filter(|item| is_subsequence(&query, &name(item).to_lowercase()))
        .collect()
}

/// How well a path matches: lower is better. Tiers first (path prefix, file-name prefix,
/// start of a word inside the path, any substring, subsequence), then shorter paths, then alphabetical, so the file a person
/// most likely means is at the top and the order is stable between keystrokes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Rank {
    tier: u8,
    length: usize,
}

fn rank(query: &str, file: &IndexedFile) -> Option<Rank> {
    let tier = if file.lower.starts_with(query) {
        0
    } else if file.lower_basename().starts_with(query) {
        1
    } else if starts_a_word(query, &file.lower) {
        2
    } else if file.lower.contains(query) {
        3
    } else if is_subsequence(query, &file.lower) {
        4
    } else {
        return None;
    };
    Some(Rank {
        tier,
        length: file.path.chars().count(),
    })
}

/// Whether `query` occurs right after a separator (`tests/mainline` for `main`), which is
/// where a person's memory of a name starts, unlike `domain`.
fn starts_a_word(query: &str, lower: &str) -> bool {
    lower.match_indices(query).any(|(at, _)| {
        lower[..at]
            .chars()
            .next_back()
            .is_some_and(|c| matches!(c, '/' | '_' | '-' | '.' | ' '))
    })
}

/// The best `limit` files for `query`, best first.
pub(super) fn best_files<'f>(query: &str, files: &'f [IndexedFile], limit: usize) -> Vec<&'f str> {
    // `@./src/x` and `@src/x` name the same file; the index stores the latter.
    let query = query.to_lowercase();
    let query = query.strip_prefix("./").unwrap_or(&query);
    let mut matches: Vec<(Rank, &IndexedFile)> = files
        .iter()
        .filter_map(|file| rank(query, file).map(|r| (r, file)))
        .collect();
    let key = |(rank, file): &(Rank, &'f IndexedFile)| (*rank, file.path.as_str());
    // Only the top `limit` are shown: select them in linear time, then sort just those.
    if matches.len() > limit && limit > 0 {
        matches.select_nth_unstable_by(limit - 1, |a, b| key(a).cmp(&key(b)));
    }
    matches.truncate(limit);
    matches.sort_by(|a, b| key(a).cmp(&key(b)));
    matches
        .into_iter()
        .map(|(_, file)| file.path.as_str())
        .collect()
}
