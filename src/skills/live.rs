//! Live reload: a discovered set (skills or agents) held behind a lock, re-discovered when a
//! file in one of its folders changes (notify), so `/skills`, completion and the model's
//! catalog follow the disk within about a second, without a restart.
//!
//! How it watches: an existing folder from `watch_dirs` is watched recursively; a missing
//! one is covered by watching its nearest existing ancestor (not recursively, and never
//! above the person's home or at the filesystem root), so creating `.linggen/skills/x/`
//! later is noticed. Events are debounced on one background thread: the set is re-read
//! [`QUIET`] after the last relevant event (at most [`MAX_DELAY`] after the first), and the
//! watches are re-established before re-reading, since folders may have appeared or gone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::watch;

use crate::sync::{lock, read, write};

/// How long the folders must be quiet before the set is re-read: an editor's save is often
/// several events (write to a temp file, rename, chmod) within a few milliseconds.
pub const QUIET: Duration = Duration::from_millis(200);
/// A steady stream of events (a tool writing continuously) still reloads this often.
pub const MAX_DELAY: Duration = Duration::from_millis(1000);

/// Something that can be discovered again from disk.
pub trait Discover: Send + Sync + Sized + 'static {
    type Dirs: Clone + Send + Sync + 'static;
    fn discover(dirs: &Self::Dirs) -> Self;
    fn watch_dirs(dirs: &Self::Dirs) -> Vec<PathBuf>;
    /// Warnings from the last discovery (skipped files), for the frontends to show.
    fn warnings(&self) -> &[String];
}

/// The current set plus a generation counter frontends can wait on.
pub struct Live<T: Discover> {
    current: RwLock<Arc<T>>,
    dirs: T::Dirs,
    changed: watch::Sender<u64>,
    /// Keeps the notify watcher alive; `None` when watching failed or is off. Dropping it
    /// closes the event channel, which ends the debounce thread.
    watcher: Mutex<Option<Watching>>,
}

/// The watcher and what it currently watches.
struct Watching {
    watcher: RecommendedWatcher,
    watched: BTreeMap<PathBuf, RecursiveMode>,
    /// Read by the event handler to drop events that cannot change the set.
    relevant: Arc<RwLock<Vec<PathBuf>>>,
}

impl<T: Discover> Live<T> {
    /// Discovers once; call [`Live::watch`] to follow changes.
    pub fn new(dirs: T::Dirs) -> Arc<Live<T>> {
        let set = T::discover(&dirs);
        let (changed, _) = watch::channel(0);
        Arc::new(Live {
            current: RwLock::new(Arc::new(set)),
            dirs,
            changed,
            watcher: Mutex::new(None),
        })
    }

    /// The folders the set is discovered from.
    pub fn dirs(&self) -> &T::Dirs {
        &self.dirs
    }

    /// The current set.
    pub fn get(&self) -> Arc<T> {
        read(&self.current).clone()
    }

    /// Re-discovers now and tells subscribers.
    pub fn reload(&self) {
        let set = Arc::new(T::discover(&self.dirs));
        *write(&self.current) = set;
        self.changed.send_modify(|g| *g += 1);
    }

    /// Resolves each time the set was reloaded.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Starts watching the folders; errors (no inotify, say) are returned as a warning and
    /// the set simply stays as discovered. Calling it again replaces the earlier watcher.
    pub fn watch(self: &Arc<Self>) -> Result<(), WatchError> {
        // Bounded at one tick, coalescing: the watcher's events come from outside (a
        // checkout touching thousands of files), and one pending tick already means "read
        // again once it is quiet"; a tick that finds one waiting is dropped.
        let (tx, rx) = mpsc::sync_channel::<()>(1);
        // A file written between the first discovery and the watches taking hold raised no
        // event: one queued tick makes the reload thread read the sets once more, off the
        // caller's path, once nothing can slip through.
        let first_read = tx.clone();
        let relevant = Arc::new(RwLock::new(Vec::new()));
        let handler_relevant = Arc::clone(&relevant);
        let handler = move |event: notify::Result<notify::Event>| {
            let matters = match &event {
                Ok(event) => {
                    let prefixes = read(&handler_relevant);
                    is_relevant(event, &prefixes)
                }
                // An error (a queue overflow, say) may have hidden a change: re-read.
                Err(_) => true,
            };
            if matters {
                // Full: a reload is already due. Disconnected: the receiver is gone only
                // while shutting down; nothing left to tell.
                let _ = tx.try_send(());
            }
        };
        let watcher = notify::recommended_watcher(handler).map_err(WatchError::NoWatcher)?;
        let mut watching = Watching {
            watcher,
            watched: BTreeMap::new(),
            relevant,
        };
        let problems = watching.establish(&T::watch_dirs(&self.dirs));
        *lock(&self.watcher) = Some(watching);

        let _ = first_read.try_send(());
        let live = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("linggen-live-reload".into())
            .spawn(move || debounce_loop(rx, live))
            .map_err(WatchError::NoThread)?;
        match problems.into_iter().next() {
            None => Ok(()),
            Some(first) => Err(first),
        }
    }

    /// Re-establishes the watches (folders may have appeared or gone), then re-reads.
    fn rewatch_and_reload(&self) {
        {
            let mut guard = lock(&self.watcher);
            if let Some(watching) = guard.as_mut() {
                // A failure here leaves that folder unwatched; the next event retries.
                let _ = watching.establish(&T::watch_dirs(&self.dirs));
            }
        }
        self.reload();
    }
}

/// Waits for a first event, then for [`QUIET`] without events (or [`MAX_DELAY`]), then
/// reloads. Ends when the watcher (and so the sender) or the `Live` is dropped.
fn debounce_loop<T: Discover>(rx: mpsc::Receiver<()>, live: Weak<Live<T>>) {
    while rx.recv().is_ok() {
        let first = Instant::now();
        loop {
            let left = MAX_DELAY.saturating_sub(first.elapsed());
            if left.is_zero() {
                break;
            }
            match rx.recv_timeout(QUIET.min(left)) {
                Ok(()) => continue,
                Err(mpsc::RecvTimeoutError::Timeout) => break,
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
        let Some(live) = live.upgrade() else { return };
        live.rewatch_and_reload();
    }
}

impl Watching {
    /// Brings the watches in line with what `dirs` needs now. Returns one message per
    /// folder that could not be watched.
    fn establish(&mut self, dirs: &[PathBuf]) -> Vec<WatchError> {
        let wanted = wanted_watches(dirs, home().as_deref());
        // Which events matter is known before the first watch is added, so an event that
        // arrives while the rest are being added is not dropped as irrelevant.
        let mut relevant: Vec<PathBuf> = dirs.to_vec();
        relevant.extend(dirs.iter().filter_map(|d| canonical_form(d)));
        *write(&self.relevant) = relevant;
        let mut problems = Vec::new();
        // Everything is re-added, not just the difference: a folder deleted and created
        // again between two reloads keeps its path but lost its kernel watch.
        for path in self.watched.keys() {
            let _ = self.watcher.unwatch(path);
        }
        self.watched.clear();
        for (path, mode) in wanted {
            match self.watcher.watch(&path, mode) {
                Ok(()) => {
                    self.watched.insert(path, mode);
                }
                Err(source) => problems.push(WatchError::Folder { path, source }),
            }
        }
        problems
    }
}

/// Why live reload is off (the set stays as discovered); each says edits need a restart.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("cannot watch for changes ({0}); edits to these files need a restart")]
    NoWatcher(notify::Error),
    #[error("cannot start the reload thread ({0}); edits to these files need a restart")]
    NoThread(std::io::Error),
    #[error("{}: cannot watch for changes ({source}); edits there need a restart", path.display())]
    Folder {
        path: PathBuf,
        source: notify::Error,
    },
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// What to watch for `dirs`: each existing folder recursively, else its nearest existing
/// ancestor non-recursively. A folder covered by another's recursive watch is skipped.
fn wanted_watches(dirs: &[PathBuf], home: Option<&Path>) -> BTreeMap<PathBuf, RecursiveMode> {
    let mut wanted: BTreeMap<PathBuf, RecursiveMode> = BTreeMap::new();
    for dir in dirs {
        if dir.is_dir() {
            wanted.insert(dir.clone(), RecursiveMode::Recursive);
        } else if let Some(ancestor) = nearest_existing_ancestor(dir, home) {
            wanted
                .entry(ancestor)
                .or_insert(RecursiveMode::NonRecursive);
        }
    }
    let recursive: Vec<PathBuf> = wanted
        .iter()
        .filter(|(_, m)| **m == RecursiveMode::Recursive)
        .map(|(p, _)| p.clone())
        .collect();
    wanted.retain(|path, _| !recursive.iter().any(|r| path != r && path.starts_with(r)));
    wanted
}

/// The closest existing parent folder of `dir`, stopping at the person's home (watched, so
/// creating `~/.claude` is seen) and never the filesystem root (far too busy to watch).
fn nearest_existing_ancestor(dir: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let mut current = dir.parent()?;
    loop {
        current.parent()?;
        if current.is_dir() {
            return Some(current.to_path_buf());
        }
        if home.is_some_and(|h| current == h) {
            return None;
        }
        current = current.parent()?;
    }
}

/// `dir` with its existing part resolved through symlinks, since some platforms report
/// events under the resolved path (`/private/var/…` for `/var/…` on macOS).
fn canonical_form(dir: &Path) -> Option<PathBuf> {
    let mut existing = dir;
    let mut rest = Vec::new();
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            let resolved = rest.iter().rev().fold(canonical, |p, part| p.join(part));
            return (resolved != dir).then_some(resolved);
        }
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    }
}

/// Whether `event` can change a set read from `dirs`: something inside one of them, or an
/// ancestor of one being created, removed or renamed. Reads (`open`, `close` without
/// writing) never matter — discovery itself causes them, and counting them would loop.
fn is_relevant(event: &notify::Event, dirs: &[PathBuf]) -> bool {
    if let EventKind::Access(kind) = event.kind
        && kind != AccessKind::Close(AccessMode::Write)
    {
        return false;
    }
    if event.paths.is_empty() {
        return true;
    }
    event
        .paths
        .iter()
        .any(|p| dirs.iter().any(|d| p.starts_with(d) || d.starts_with(p)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::{SkillDirs, SkillSet};
    use std::fs;

    fn wait_until(live: &Live<SkillSet>, what: &str, done: impl Fn(&SkillSet) -> bool) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if done(&live.get()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("timed out waiting until {what}");
    }

    /// A fresh `repo` folder (and `$LINGGEN_HOME`) in a temporary folder, its skills
    /// watched. The folder is returned so it lives as long as the test.
    fn watched_repo() -> (
        tempfile::TempDir,
        std::path::PathBuf,
        std::sync::Arc<Live<SkillSet>>,
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        fs::create_dir_all(&root).unwrap();
        let dirs = SkillDirs {
            linggen_home: tmp.path().join("lh"),
            root: root.clone(),
            user_home: None,
        };
        let live = Live::<SkillSet>::new(dirs);
        live.watch().unwrap();
        (tmp, root, live)
    }

    fn write_skill(dir: &Path, name: &str, description: &str) {
        fs::create_dir_all(dir.join(name)).unwrap();
        fs::write(
            dir.join(name).join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\nbody\n"),
        )
        .unwrap();
    }

    #[test]
    fn follows_skills_added_edited_and_deleted() {
        let (_tmp, root, live) = watched_repo();
        let generation = live.subscribe();
        assert!(live.get().get("fresh").is_none());

        // `.linggen` does not exist yet: the root's watch must notice it appear.
        let skills = root.join(".linggen").join("skills");
        write_skill(&skills, "fresh", "first");
        wait_until(&live, "the new skill appears", |s| s.get("fresh").is_some());
        assert!(generation.has_changed().unwrap());

        write_skill(&skills, "fresh", "second");
        wait_until(&live, "the edit shows", |s| {
            s.get("fresh").is_some_and(|k| k.description == "second")
        });

        fs::remove_dir_all(skills.join("fresh")).unwrap();
        wait_until(&live, "the skill disappears", |s| s.get("fresh").is_none());

        // The watch survives the folder going away and coming back.
        fs::remove_dir_all(root.join(".linggen")).unwrap();
        std::thread::sleep(QUIET * 2);
        write_skill(&skills, "again", "back");
        wait_until(&live, "the recreated folder is seen", |s| {
            s.get("again").is_some()
        });

        // Re-reading opens the files; that must not count as a change (or it would loop).
        std::thread::sleep(MAX_DELAY);
        let settled = *live.subscribe().borrow();
        std::thread::sleep(MAX_DELAY);
        assert_eq!(*live.subscribe().borrow(), settled, "reloads keep firing");
    }

    #[test]
    fn follows_command_files_in_nested_folders_that_appear_later() {
        let (_tmp, root, live) = watched_repo();
        // Neither `.claude` nor its `commands` exist yet.
        let group = root.join(".claude/commands/frontend");
        fs::create_dir_all(&group).unwrap();
        fs::write(group.join("review.md"), "Review the UI\n").unwrap();
        wait_until(&live, "the nested command appears", |s| {
            s.get("frontend:review").is_some()
        });
        fs::remove_file(group.join("review.md")).unwrap();
        wait_until(&live, "the command disappears", |s| {
            s.get("frontend:review").is_none()
        });
    }

    #[test]
    fn wanted_watches_cover_missing_folders() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        fs::create_dir_all(base.join("a/skills")).unwrap();
        fs::create_dir_all(base.join("b")).unwrap();
        let dirs = vec![
            base.join("a/skills"),
            base.join("b/x/skills"),
            base.join("a/skills/inner/deeper"),
        ];
        let wanted = wanted_watches(&dirs, None);
        assert_eq!(
            wanted.into_iter().collect::<Vec<_>>(),
            vec![
                (base.join("a/skills"), RecursiveMode::Recursive),
                (base.join("b"), RecursiveMode::NonRecursive),
            ]
        );
        // Bounded by home: nothing above it is watched.
        let home = base.join("home");
        assert_eq!(
            nearest_existing_ancestor(&home.join(".claude/skills"), Some(&home)),
            None
        );
        fs::create_dir_all(&home).unwrap();
        assert_eq!(
            nearest_existing_ancestor(&home.join(".claude/skills"), Some(&home)),
            Some(home.clone())
        );
        assert_eq!(
            nearest_existing_ancestor(Path::new("/nonexistent-zz/x"), None),
            None
        );
    }

    #[test]
    fn reads_are_not_relevant() {
        let dirs = vec![PathBuf::from("/r/.linggen/skills")];
        let event = |kind, path: &str| notify::Event::new(kind).add_path(PathBuf::from(path));
        let open = EventKind::Access(AccessKind::Open(AccessMode::Any));
        let create = EventKind::Create(notify::event::CreateKind::Any);
        assert!(!is_relevant(
            &event(open, "/r/.linggen/skills/x/SKILL.md"),
            &dirs
        ));
        assert!(is_relevant(&event(create, "/r/.linggen/skills/x"), &dirs));
        assert!(is_relevant(&event(create, "/r/.linggen"), &dirs));
        assert!(!is_relevant(&event(create, "/r/Cargo.toml"), &dirs));
        let closed = EventKind::Access(AccessKind::Close(AccessMode::Write));
        assert!(is_relevant(
            &event(closed, "/r/.linggen/skills/x/SKILL.md"),
            &dirs
        ));
    }
}
