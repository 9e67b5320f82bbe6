//! Locks that outlive a panic elsewhere: a `Mutex` or `RwLock` whose holder panicked is
//! taken as it is.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, recovering from poisoning. A poisoned lock only says that a holder
/// panicked; what linggen guards this way (maps, queues, counters) is whole between
/// statements, and a panicking turn or connection is reported while the rest go on, so
/// refusing the lock would only lose the session or the server.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Reads `lock`, recovering from poisoning as [`lock`] does.
pub fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Writes `lock`, recovering from poisoning as [`lock`] does.
pub fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
