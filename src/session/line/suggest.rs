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

pub(crate) use crate::text::edit_distance;
