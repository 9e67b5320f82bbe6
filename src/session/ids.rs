//! Short random ids for sessions, runs and approvals.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// 16 hex digits. `RandomState` is seeded from the OS's randomness per process, and the
/// time and a counter make ids distinct within a process; these ids name things, they are
/// not secrets (the web mirror's token will come from a real CSPRNG).
pub fn new_id() -> String {
    let mut h = RandomState::new().build_hasher();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.write_u128(nanos);
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

pub use crate::clock::now_ms;

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_distinct() {
        let ids: std::collections::HashSet<_> = (0..1000).map(|_| super::new_id()).collect();
        assert_eq!(ids.len(), 1000);
    }
}
