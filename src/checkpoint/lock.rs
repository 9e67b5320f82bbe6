//! One linggen at a time in a checkpoint store. Every run in a workspace shares its store
//! (and the store's one index), and git's own lock files fail at once when another git
//! holds them: twenty `-p` runs started together lost half their checkpoints to
//! `index.lock: File exists`. So each snapshot, restore and store creation first takes an
//! advisory `flock` on `linggen.lock` in the store and waits its turn, for a bounded time;
//! the kernel releases the lock when its holder exits, however it dies.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::time::{Duration, Instant};

use super::CheckpointError;

/// How long a snapshot waits for another linggen's before it gives up: far longer than a
/// snapshot takes (well under a second in a tree within the limits), so a wait this long
/// means the other one is stuck.
pub const WAIT: Duration = Duration::from_secs(60);

/// The lock file, inside the store (git ignores files it does not know there).
const FILE: &str = "linggen.lock";

/// Git's lock files that a snapshot or restore takes in the store. Under our lock no other
/// linggen is in the store, so one found then was left by a linggen that died mid-git, and
/// would fail every later snapshot with "File exists".
const GIT_LOCKS: &[&str] = &["index.lock", "HEAD.lock"];

/// Held while the store is used; dropping it (or dying) releases it.
#[derive(Debug)]
pub(super) struct StoreLock {
    _file: File,
}

impl StoreLock {
    /// Waits up to `wait` for the store at `git_dir` (which must exist) to be free.
    pub(super) fn acquire(git_dir: &Path, wait: Duration) -> Result<StoreLock, CheckpointError> {
        let path = git_dir.join(FILE);
        let io_error = |source| CheckpointError::Io {
            what: "lock the checkpoint store with".to_owned(),
            path: path.clone(),
            source,
        };
        // Close-on-exec (std's default): a git we start must not hold the lock after us.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(io_error)?;
        let started = Instant::now();
        // Polled rather than a blocking `flock`: that one cannot be given a time limit.
        let mut pause = Duration::from_millis(2);
        while !crate::durable::try_lock_exclusive(&file).map_err(io_error)? {
            let waited = started.elapsed();
            if waited >= wait {
                return Err(CheckpointError::Busy {
                    store: git_dir.to_path_buf(),
                    waited_secs: wait.as_secs(),
                });
            }
            std::thread::sleep(pause.min(wait - waited));
            pause = (pause * 2).min(Duration::from_millis(50));
        }
        for stale in GIT_LOCKS {
            // Absent is the usual case; one we cannot remove makes git say so itself.
            let _ = std::fs::remove_file(git_dir.join(stale));
        }
        Ok(StoreLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_waits_then_gives_up_in_one_line() {
        let store = tempfile::tempdir().unwrap();
        let first = StoreLock::acquire(store.path(), WAIT).unwrap();
        let started = Instant::now();
        let err = StoreLock::acquire(store.path(), Duration::from_millis(300)).unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(300));
        let message = err.to_string();
        assert!(message.contains("in use by another linggen"), "{message}");
        assert!(message.contains(&store.path().display().to_string()));
        assert_eq!(message.lines().count(), 1, "{message}");
        drop(first);
        StoreLock::acquire(store.path(), Duration::from_millis(300)).unwrap();
    }

    #[test]
    fn a_waiter_gets_the_store_when_the_holder_lets_go() {
        let store = tempfile::tempdir().unwrap();
        let first = StoreLock::acquire(store.path(), WAIT).unwrap();
        let path = store.path().to_path_buf();
        let waiter = std::thread::spawn(move || StoreLock::acquire(&path, WAIT).map(|_| ()));
        std::thread::sleep(Duration::from_millis(100));
        drop(first);
        waiter.join().unwrap().unwrap();
    }

    #[test]
    fn git_lock_files_left_by_a_dead_linggen_are_cleared() {
        let store = tempfile::tempdir().unwrap();
        std::fs::write(store.path().join("index.lock"), "").unwrap();
        std::fs::write(store.path().join("HEAD.lock"), "").unwrap();
        let _held = StoreLock::acquire(store.path(), WAIT).unwrap();
        assert!(!store.path().join("index.lock").exists());
        assert!(!store.path().join("HEAD.lock").exists());
    }
}
