//! Locks that outlive a panic elsewhere.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, recovering from poisoning. A poisoned lock only says that a holder
/// panicked; what linggen guards this way (maps, queues, counters) is whole between
/// statements, and a panicking turn or connection is reported while the rest go on, so
/// refusing the lock would only lose the session or the server.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
