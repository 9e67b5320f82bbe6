//! The workspace file list behind `@path` completion. Walking a large repository takes far
//! longer than a keystroke may, so the walk runs on a background thread and a keystroke only
//! ever reads the last finished list ([`FileIndex::snapshot`]). A stale list is refreshed in
//! the background while the old one keeps answering.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ignore::WalkBuilder;

/// Enough for any repository a person attaches files from by name; past this the walk
/// stops, so a home directory opened by mistake costs bounded memory and time.
pub const DEFAULT_MAX_FILES: usize = 50_000;

/// How old a list may get before a keystroke asks for a fresh one (files created by the
/// agent show up within this time).
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(5);

/// One workspace file, relative to the root with `/` separators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedFile {
    pub path: String,
    /// Lowercased once at index time so matching a keystroke does not allocate per file.
    pub(super) lower: String,
}

impl IndexedFile {
    fn new(path: String) -> Self {
        let lower = path.to_lowercase();
        IndexedFile { path, lower }
    }

    /// The lowercased file name (after the last `/`).
    pub(super) fn lower_basename(&self) -> &str {
        self.lower.rsplit('/').next().unwrap_or(&self.lower)
    }
}

/// A cached, ignore-aware list of workspace files. Cheap to clone (shared).
#[derive(Debug, Clone)]
pub struct FileIndex {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    root: PathBuf,
    max_files: usize,
    max_age: Duration,
    state: Mutex<State>,
    built: Condvar,
}

#[derive(Debug, Default)]
struct State {
    files: Arc<[IndexedFile]>,
    built_at: Option<Instant>,
    building: bool,
}

impl FileIndex {
    /// An index of `root` with the default limits. Nothing is walked until the first
    /// [`snapshot`](Self::snapshot) or [`refresh_in_background`](Self::refresh_in_background).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self::with_limits(root, DEFAULT_MAX_FILES, DEFAULT_MAX_AGE)
    }

    pub fn with_limits(root: impl Into<PathBuf>, max_files: usize, max_age: Duration) -> Self {
        FileIndex {
            shared: Arc::new(Shared {
                root: root.into(),
                max_files,
                max_age,
                state: Mutex::new(State::default()),
                built: Condvar::new(),
            }),
        }
    }

    /// The last finished list, never waiting for a walk. When there is none yet or it is
    /// older than the maximum age, a background refresh starts and a later keystroke sees it.
    pub fn snapshot(&self) -> Arc<[IndexedFile]> {
        let (files, stale) = {
            let state = self.shared.lock();
            let stale = !state.building
                && state
                    .built_at
                    .is_none_or(|at| at.elapsed() >= self.shared.max_age);
            (Arc::clone(&state.files), stale)
        };
        if stale {
            self.refresh_in_background();
        }
        files
    }

    /// Start a walk on a background thread unless one is running. Call it when the REPL
    /// starts so the first `@` already has files to offer.
    pub fn refresh_in_background(&self) {
        {
            let mut state = self.shared.lock();
            if state.building {
                return;
            }
            state.building = true;
        }
        let shared = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new()
            .name("linggen-file-index".into())
            .spawn(move || shared.rebuild());
        if spawned.is_err() {
            // No thread, no index: completion offers agents only, which is still usable.
            self.shared.lock().building = false;
            self.shared.built.notify_all();
        }
    }

    /// Walk now on this thread and return how many files were found. For callers that can
    /// afford to wait (tests, a one-off listing); keystrokes use [`snapshot`](Self::snapshot).
    pub fn refresh_now(&self) -> usize {
        self.shared.lock().building = true;
        self.shared.rebuild();
        self.shared.lock().files.len()
    }

    /// Block until no walk is running and a list exists, or the timeout passes. Returns
    /// whether a list is ready.
    pub fn wait_until_built(&self, timeout: Duration) -> bool {
        let state = self.shared.lock();
        let (state, _) = self
            .shared
            .built
            .wait_timeout_while(state, timeout, |s| s.building || s.built_at.is_none())
            .unwrap_or_else(PoisonError::into_inner);
        !state.building && state.built_at.is_some()
    }
}

impl Shared {
    /// The state is only ever replaced whole under the lock, so a panic elsewhere while it
    /// was held cannot leave it half-written: recovering from poisoning is safe.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn rebuild(&self) {
        let files: Arc<[IndexedFile]> = walk(&self.root, self.max_files).into();
        let mut state = self.lock();
        state.files = files;
        state.built_at = Some(Instant::now());
        state.building = false;
        drop(state);
        self.built.notify_all();
    }
}

/// Files under `root` as git would list them: `.gitignore`, `.ignore` and git's excludes
/// honoured (even outside a git repository, like a fresh workspace), `.git` itself skipped,
/// other hidden files kept (`.github/workflows/ci.yml` is worth attaching). Sorted shortest
/// first so an empty query offers the top-level files.
fn walk(root: &Path, max_files: usize) -> Vec<IndexedFile> {
    let walker = WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build();
    let mut files = Vec::new();
    // Unreadable entries are skipped: a missing permission must not hide the rest.
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        let parts: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        files.push(IndexedFile::new(parts.join("/")));
        if files.len() >= max_files {
            break;
        }
    }
    files.sort_by(|a, b| (a.path.chars().count(), &a.path).cmp(&(b.path.chars().count(), &b.path)));
    files
}
