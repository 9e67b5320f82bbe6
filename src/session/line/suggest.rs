//! "Did you mean" for unknown `/names`: prefix relations first (`/he`, `/helpme`), then
//! small edit distances counting a swap of neighbours as one edit (`/hlep`).

use super::{Builtin, TriggerContext};

/// How many suggestions an error shows; more reads as noise.
const MAX_SUGGESTIONS: usize = 3;

/// The closest built-in and user-invocable skill names to `typed`, slash included, best first.
pub(super) fn closest_names<C: Builtin>(typed: &str, ctx: &TriggerContext<'_>) -> Vec<String> {
    let typed = typed.to_lowercase();
    let typed_len = typed.chars().count();
    // Short names tolerate fewer edits, or `/x` would suggest half the table.
    let max_distance = match typed_len {
        0..=2 => 1,
        3..=5 => 2,
        _ => 3,
    };
    let names = C::ALL.iter().map(|c| c.name()).chain(
        ctx.skills
            .iter()
            .filter(|s| s.user_invocable)
            .map(|s| s.name.as_str()),
    );
    let mut scored: Vec<(u8, usize, &str)> = Vec::new();
    for name in names {
        let lower = name.to_lowercase();
        let distance = edit_distance(&typed, &lower);
        let prefix_related =
            typed_len > 0 && (lower.starts_with(&typed) || typed.starts_with(&lower));
        let tier = if prefix_related {
            0
        } else if distance <= max_distance {
            1
        } else {
            continue;
        };
        if !scored.iter().any(|(_, _, n)| *n == name) {
            scored.push((tier, distance, name));
        }
    }
    // Stable: equal scores keep table order (built-ins first, in display order).
    scored.sort_by_key(|(tier, distance, _)| (*tier, *distance));
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, _, name)| format!("/{name}"))
        .collect()
}

/// Optimal-string-alignment distance over characters (not bytes, so `/模形` is one edit
/// from `/模型`).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
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
