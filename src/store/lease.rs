//! One writer per session. A process that runs a session holds an advisory lock on
//! `$LINGGEN_HOME/locks/SESSION.lock`; a second process finds it held and either waits
//! (a one-shot run behind another one-shot run) or refuses, naming the holder. Two writers
//! would interleave their turns and separate tool calls from their results.
//!
//! The lock is `flock(2)`: the kernel drops it when the holder dies, however it dies, so a
//! `kill -9` never leaves a stale lock. The file is opened close-on-exec, so no child
//! process keeps it.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

/// How a holder uses its session: whether it ends by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HolderKind {
    /// `-p`: it ends when its task does, so another one-shot run waits for it.
    OneShot,
    /// The shell or `linggen serve`: it lasts as long as a person keeps it.
    Interactive,
}

/// Who holds a session, as it wrote itself into the lock file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    pub kind: HolderKind,
    /// The holder's command line, cut short.
    pub command: String,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.pid {
            0 => write!(f, "another linggen"),
            pid => write!(f, "another linggen (pid {pid}: `{}`)", self.command),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error(
        "session {id} is in use by {holder}; close that one first, or start a new session (without --continue / --resume)"
    )]
    Held { id: String, holder: Holder },
    #[error("cannot lock session {id} at {path}: {source}")]
    Io {
        id: String,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A session held by this process; dropping the last handle releases it.
#[derive(Clone)]
pub struct SessionLease {
    _file: Arc<File>,
}

/// Sessions this process holds: switching the shell to the session it already runs
/// (rewinding the conversation) starts the new one before the old one stops, and must not
/// find itself in the way.
static HELD: Mutex<Vec<(PathBuf, Weak<File>)>> = Mutex::new(Vec::new());

/// How often a waiting one-shot run looks again.
const POLL: Duration = Duration::from_millis(100);

impl SessionLease {
    /// Takes session `id` for this process, or says who holds it.
    pub fn try_acquire(home: &Path, id: &str, kind: HolderKind) -> Result<Self, LeaseError> {
        let path = lock_path(home, id);
        let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        held.retain(|(_, file)| file.strong_count() > 0);
        if let Some(file) = held
            .iter()
            .find(|(p, _)| *p == path)
            .and_then(|(_, f)| f.upgrade())
        {
            return Ok(SessionLease { _file: file });
        }
        let io = |source| LeaseError::Io {
            id: id.to_string(),
            path: path.clone(),
            source,
        };
        let mut file = open(&path).map_err(io)?;
        if !crate::durable::try_lock_exclusive(&file).map_err(io)? {
            let holder = read_holder(&mut file);
            return Err(LeaseError::Held {
                id: id.to_string(),
                holder,
            });
        }
        write_holder(&mut file, kind).map_err(io)?;
        let file = Arc::new(file);
        held.push((path, Arc::downgrade(&file)));
        Ok(SessionLease { _file: file })
    }

    /// Takes session `id`, waiting while a one-shot run holds it; `waiting` is told once
    /// whom it waits for. An interactive holder does not end by itself: refused at once.
    pub fn acquire_waiting(
        home: &Path,
        id: &str,
        kind: HolderKind,
        waiting: impl FnOnce(&Holder),
    ) -> Result<Self, LeaseError> {
        let mut waiting = Some(waiting);
        loop {
            match Self::try_acquire(home, id, kind) {
                Err(LeaseError::Held { holder, .. }) if holder.kind == HolderKind::OneShot => {
                    if let Some(tell) = waiting.take() {
                        tell(&holder);
                    }
                    std::thread::sleep(POLL);
                }
                other => return other,
            }
        }
    }
}

fn lock_path(home: &Path, id: &str) -> PathBuf {
    // Ids are ours (hex); anything else cannot name a path outside the folder.
    let name: String = id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    home.join("locks").join(format!("{name}.lock"))
}

fn open(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        super::private_dir(dir)?;
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

fn write_holder(file: &mut File, kind: HolderKind) -> std::io::Result<()> {
    let kind = match kind {
        HolderKind::OneShot => "one-shot",
        HolderKind::Interactive => "interactive",
    };
    let command: String = std::env::args()
        .map(|a| if a.contains(' ') { format!("{a:?}") } else { a })
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .take(80)
        .collect();
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    write!(file, "{}\n{kind}\n{command}\n", std::process::id())?;
    file.flush()
}

/// The holder as it described itself; a holder that has not written yet (it took the lock
/// a moment ago) is an unnamed one-shot run, which is waited for (a moment).
fn read_holder(file: &mut File) -> Holder {
    let mut text = String::new();
    let _ = file.seek(SeekFrom::Start(0));
    let _ = file.read_to_string(&mut text);
    let mut lines = text.lines();
    let pid = lines.next().and_then(|l| l.parse().ok()).unwrap_or(0);
    let kind = match lines.next() {
        Some("interactive") => HolderKind::Interactive,
        _ => HolderKind::OneShot,
    };
    let command = lines.next().unwrap_or_default().to_string();
    // What a holder that has just taken the lock has not overwritten yet is its
    // predecessor's: a process that no longer exists says nothing about the holder.
    // SAFETY: signal 0 only checks that the process exists.
    let alive = pid > 0 && unsafe { libc::kill(pid as i32, 0) } == 0;
    if !alive {
        return Holder {
            pid: 0,
            kind: HolderKind::OneShot,
            command: String::new(),
        };
    }
    Holder { pid, kind, command }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_open_file_finds_the_session_held_and_the_holder_named() {
        let home = tempfile::tempdir().unwrap();
        let lease = SessionLease::try_acquire(home.path(), "abc", HolderKind::Interactive);
        assert!(lease.is_ok());
        // Another process is another open file description: flock sees it as a rival.
        let mut rival = open(&lock_path(home.path(), "abc")).unwrap();
        assert!(!crate::durable::try_lock_exclusive(&rival).unwrap());
        let holder = read_holder(&mut rival);
        assert_eq!(holder.pid, std::process::id());
        assert_eq!(holder.kind, HolderKind::Interactive);
        drop(lease);
        assert!(
            crate::durable::try_lock_exclusive(&rival).unwrap(),
            "released when the lease is dropped"
        );
    }

    #[test]
    fn the_same_process_may_take_a_session_it_holds() {
        let home = tempfile::tempdir().unwrap();
        let first = SessionLease::try_acquire(home.path(), "s", HolderKind::OneShot).unwrap();
        let second = SessionLease::try_acquire(home.path(), "s", HolderKind::OneShot).unwrap();
        drop(first);
        let rival = open(&lock_path(home.path(), "s")).unwrap();
        assert!(
            !crate::durable::try_lock_exclusive(&rival).unwrap(),
            "still held by the second handle"
        );
        drop(second);
        assert!(crate::durable::try_lock_exclusive(&rival).unwrap());
    }
}
