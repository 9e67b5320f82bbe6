//! Making the working tree's snapshotted files as they were in an earlier snapshot, without
//! ever writing or deleting through a symlink an agent may have put in a leading path.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{ChangeKind, CheckpointError, Checkpoints, FileChange, FolderCheck, join_paths};

impl Checkpoints {
    /// Makes the snapshotted files as they are in `target`, given `current`, a snapshot of
    /// the tree as it is now: take it just before with
    /// [`snapshot_keeping`](Checkpoints::snapshot_keeping)`(.., target)`, so that it holds
    /// every file `target` recorded whatever the ignore rules say now. Files that differ are
    /// rewritten from `target` (content, exec bit, symlinks), files absent from `target` are
    /// deleted (with the folders that this empties, never the root), files only in `target`
    /// are recreated. A file `current` does not hold is never overwritten or deleted (too
    /// large now, or ignored when `current` is a plain snapshot): its content could not be
    /// given back. Returns what it changed, sorted by path.
    ///
    /// The store's own index needs no reset afterwards: it is a stat cache, and every file
    /// written here has a new inode and mtime, so the next snapshot re-reads it.
    pub fn restore(&self, target: &str, current: &str) -> Result<Vec<FileChange>, CheckpointError> {
        let target = self.snapshot_commit(target)?;
        let current = self.snapshot_commit(current)?;
        let diff = self.diff(&current, &target)?;

        let mut done = Vec::new();
        // Deletions first: a file in `current` may stand where `target` has a folder.
        let mut folders = FolderCheck::new(&self.root);
        for (kind, path) in &diff {
            if *kind == ChangeKind::Deleted && self.delete(path, &mut folders)? {
                done.push((ChangeKind::Deleted, path.clone()));
            }
        }

        let mut write = Vec::new();
        for (kind, path) in &diff {
            // Something no snapshot of now holds (an ignored file, a symlink made after
            // `current`) in a leading path: `checkout-index -f` would delete it to make room.
            if *kind == ChangeKind::Deleted || !plain_relative(path) || !self.leading_clear(path) {
                continue;
            }
            match std::fs::symlink_metadata(self.root.join(OsStr::from_bytes(path))) {
                // `checkout-index -f` would delete a folder in the way, with whatever
                // unsnapshotted files it holds.
                Ok(meta) if meta.is_dir() => continue,
                // Here but in no snapshot of now: ignored or too large (or made after
                // `current`); not ours to overwrite.
                Ok(_) if *kind == ChangeKind::Added => continue,
                _ => write.push((*kind, path.clone())),
            }
        }
        if !write.is_empty() {
            let paths: Vec<Vec<u8>> = write.iter().map(|(_, path)| path.clone()).collect();
            self.check_out(&target, &paths)?;
            done.extend(write);
        }

        Ok(super::file_changes(done))
    }

    /// Writes `paths` as they are in `commit`. A temporary index holds the commit's tree so
    /// the store's own index (the stat cache of the tree as it is) stays as it was.
    /// `checkout-index` would also replace a symlink or file in a leading path with a real
    /// folder rather than write through it, should one appear after our own check.
    fn check_out(&self, commit: &str, paths: &[Vec<u8>]) -> Result<(), CheckpointError> {
        let index = TempIndex::new(&self.git_dir);
        let git = self.git.with_index(&index.0);
        git.run("read the snapshot to restore", ["read-tree", commit], None)?;
        git.run(
            "write the restored files",
            ["checkout-index", "-f", "-z", "--stdin"],
            Some(&join_paths(paths)),
        )?;
        Ok(())
    }

    /// Whether every leading folder of `path` is a real folder, or missing (then created).
    /// Checked afresh: the deletions just before may have removed folders.
    fn leading_clear(&self, path: &[u8]) -> bool {
        let mut dir = self.root.clone();
        let mut parts = path.split(|b| *b == b'/').peekable();
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                break;
            }
            dir.push(OsStr::from_bytes(part));
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) if meta.is_dir() => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return true,
                _ => return false,
            }
        }
        true
    }

    /// Deletes one file (or symlink) when every folder leading to it is a real folder under
    /// the root, then the folders this leaves empty. Whether it deleted anything.
    fn delete(&self, path: &[u8], folders: &mut FolderCheck) -> Result<bool, CheckpointError> {
        if !plain_relative(path) || !folders.leading_are_folders(path) {
            return Ok(false);
        }
        let full = self.root.join(OsStr::from_bytes(path));
        match std::fs::symlink_metadata(&full) {
            // A folder now stands there: it may hold files no snapshot has.
            Ok(meta) if meta.is_dir() => return Ok(false),
            Ok(_) => {}
            Err(_) => return Ok(false),
        }
        match std::fs::remove_file(&full) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => {
                return Err(CheckpointError::Io {
                    what: "delete".to_owned(),
                    path: full,
                    source: e,
                });
            }
        }
        // `remove_dir` refuses a non-empty folder, which ends the walk up.
        let mut folder = full.parent();
        while let Some(dir) = folder {
            if dir == self.root || !dir.starts_with(&self.root) || std::fs::remove_dir(dir).is_err()
            {
                break;
            }
            folder = dir.parent();
        }
        Ok(true)
    }
}

/// A path from our own trees with no empty, `.` or `..` component; git never records such
/// paths, and this keeps a damaged store from steering a write outside the root.
fn plain_relative(path: &[u8]) -> bool {
    !path.is_empty()
        && path
            .split(|b| *b == b'/')
            .all(|part| !matches!(part, b"" | b"." | b".."))
}

/// An index file inside the store, removed when dropped.
struct TempIndex(PathBuf);

impl TempIndex {
    fn new(git_dir: &Path) -> Self {
        // Unique within this process by the counter, across processes by the pid.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Self(git_dir.join(format!("restore-index-{}-{n}", std::process::id())))
    }
}

impl Drop for TempIndex {
    fn drop(&mut self) {
        // Absent when git failed before writing it; a leftover is only wasted space.
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(self.0.with_extension("lock"));
    }
}
