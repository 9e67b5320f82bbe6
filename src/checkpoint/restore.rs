//! Making the working tree's snapshotted files as they were in an earlier snapshot, without
//! ever writing or deleting through a symlink an agent may have put in a leading path, and
//! without leaving a file half written.
//!
//! Each file comes back through [`crate::durable`]: its snapshot content is staged in a
//! temporary file beside it, and only when every file is staged are they renamed into
//! place. A full disk therefore fails the restore before anything changed (the usual case),
//! never with a source file cut in the middle.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use super::{ChangeKind, CheckpointError, Checkpoints, FileChange, FolderCheck};
use crate::durable::{self, Staged, WriteError};

/// A path as the snapshots hold it (relative, '/' separated, raw bytes).
type RawPath = Vec<u8>;

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
    /// Writes are staged before anything is deleted or renamed, so a failure to write
    /// (a full disk) changes nothing. Only a file that must replace a folder or a file in
    /// its own leading path is staged after the deletions that make room for it.
    ///
    /// The store's own index needs no reset afterwards: it is a stat cache, and every file
    /// written here is a new inode with a new mtime, so the next snapshot re-reads it.
    pub fn restore(&self, target: &str, current: &str) -> Result<Vec<FileChange>, CheckpointError> {
        let _turn = self.lock()?;
        let target = self.snapshot_commit(target)?;
        let current = self.snapshot_commit(current)?;
        let diff = self.diff(&current, &target)?;

        let (ready, later): (Vec<_>, Vec<_>) = diff
            .iter()
            .filter(|(kind, _)| *kind != ChangeKind::Deleted)
            .cloned()
            .partition(|(kind, path)| self.writable(*kind, path));
        let mut done = Vec::new();
        let mut staging = Staging::default();
        self.stage_restored(&target, &ready, &mut staging, &done)?;

        // A file in `current` may stand where `target` has a folder.
        let mut folders = FolderCheck::new(&self.root);
        for (kind, path) in &diff {
            if *kind == ChangeKind::Deleted && self.delete(path, &mut folders)? {
                done.push((ChangeKind::Deleted, path.clone()));
            }
        }
        let later: Vec<_> = later
            .into_iter()
            .filter(|(kind, path)| self.writable(*kind, path))
            .collect();
        self.stage_restored(&target, &later, &mut staging, &done)?;

        staging.commit(&mut done)?;
        Ok(super::file_changes(done))
    }

    /// Whether the restore may write `path`: a plain path whose leading folders are real
    /// folders (or missing, then created), with no folder in its place, and, for a file
    /// `target` adds, nothing there yet (something no snapshot of now holds: ignored, too
    /// large, or made after `current`, and not ours to overwrite).
    fn writable(&self, kind: ChangeKind, path: &[u8]) -> bool {
        if !plain_relative(path) || !self.leading_clear(path) {
            return false;
        }
        match std::fs::symlink_metadata(self.root.join(OsStr::from_bytes(path))) {
            // Replacing it would lose whatever unsnapshotted files it holds.
            Ok(meta) if meta.is_dir() => false,
            Ok(_) if kind == ChangeKind::Added => false,
            _ => true,
        }
    }

    /// Stages `paths` as they are in `commit` (content, exec bit, symlink), creating missing
    /// leading folders. `done` is what the restore changed so far, for the message.
    fn stage_restored(
        &self,
        commit: &str,
        paths: &[(ChangeKind, RawPath)],
        staging: &mut Staging,
        done: &[(ChangeKind, RawPath)],
    ) -> Result<(), CheckpointError> {
        if paths.is_empty() {
            return Ok(());
        }
        let entries = self.entries(commit)?;
        let mut wanted = Vec::new();
        for (kind, path) in paths {
            // A gitlink (a nested repository's commit) has no content to write.
            if let Some(entry) = entries.get(path).filter(|e| e.mode != "160000") {
                wanted.push((*kind, path, entry));
            }
        }
        let oids: Vec<String> = wanted.iter().map(|(_, _, e)| e.oid.clone()).collect();
        self.git.each_blob(&oids, |i, content| {
            let (kind, path, entry) = wanted[i];
            staging
                .add(&self.root, kind, path, &entry.mode, &content)
                .map_err(|e| restore_failed(path, e, done))
        })
    }

    /// Every file of `commit`: its mode and blob, by path.
    fn entries(&self, commit: &str) -> Result<HashMap<RawPath, Entry>, CheckpointError> {
        let out = self.git.run(
            "list the files of a snapshot",
            ["ls-tree", "-r", "-z", "--full-tree", commit],
            None,
        )?;
        // `<mode> <type> <oid>\t<path>`, NUL-terminated.
        let mut entries = HashMap::new();
        for record in super::split_paths(&out) {
            let Some(tab) = record.iter().position(|b| *b == b'\t') else {
                continue;
            };
            let head = String::from_utf8_lossy(&record[..tab]);
            let mut fields = head.split(' ');
            if let (Some(mode), Some(_), Some(oid)) = (fields.next(), fields.next(), fields.next())
            {
                let entry = Entry {
                    mode: mode.to_owned(),
                    oid: oid.to_owned(),
                };
                entries.insert(record[tab + 1..].to_vec(), entry);
            }
        }
        Ok(entries)
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

/// A file of a snapshot's tree.
struct Entry {
    /// `100644`, `100755`, `120000` (symlink) or `160000` (gitlink).
    mode: String,
    oid: String,
}

/// Files staged for a restore and the folders made for them. Dropped before
/// [`Staging::commit`], it removes both: nothing of a failed restore stays behind.
#[derive(Default)]
struct Staging {
    staged: Vec<(ChangeKind, RawPath, Staged)>,
    /// In the order made (a folder before the ones inside it).
    made: Vec<PathBuf>,
}

impl Staging {
    /// Stages `path` (relative to `root`) with `content` as a file of `mode`.
    fn add(
        &mut self,
        root: &Path,
        kind: ChangeKind,
        path: &[u8],
        mode: &str,
        content: &[u8],
    ) -> Result<(), WriteError> {
        let full = root.join(OsStr::from_bytes(path));
        self.make_folders(root, path)?;
        let staged = if mode == "120000" {
            durable::stage_symlink(&full, Path::new(OsStr::from_bytes(content)))?
        } else {
            let options = durable::Options {
                // The path itself is put back, whatever a symlink there now leads to.
                through_symlinks: false,
                executable: Some(mode == "100755"),
                ..durable::Options::default()
            };
            durable::stage(&full, content, options)?
        };
        self.staged.push((kind, path.to_vec(), staged));
        Ok(())
    }

    /// Creates the missing leading folders of `path` one by one, remembering each.
    fn make_folders(&mut self, root: &Path, path: &[u8]) -> Result<(), WriteError> {
        let parts: Vec<&[u8]> = path.split(|b| *b == b'/').collect();
        let mut dir = root.to_path_buf();
        for part in &parts[..parts.len().saturating_sub(1)] {
            dir.push(OsStr::from_bytes(part));
            match std::fs::create_dir(&dir) {
                Ok(()) => self.made.push(dir.clone()),
                // A real folder (checked just before).
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(source) => {
                    return Err(WriteError::Io {
                        step: durable::Step::CreateFolder,
                        path: dir,
                        source,
                    });
                }
            }
        }
        Ok(())
    }

    /// Puts every staged file in place, adding each to `done`.
    fn commit(mut self, done: &mut Vec<(ChangeKind, RawPath)>) -> Result<(), CheckpointError> {
        let staged = std::mem::take(&mut self.staged);
        for (kind, path, file) in staged {
            if let Err(e) = file.commit() {
                return Err(restore_failed(&path, e, done));
            }
            done.push((kind, path));
        }
        self.made.clear();
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // The temporary files first: a folder must be empty to go.
        self.staged.clear();
        for folder in self.made.iter().rev() {
            let _ = std::fs::remove_dir(folder);
        }
    }
}

/// Why a restore stopped at `path`, and what it had changed by then.
fn restore_failed(
    path: &[u8],
    source: WriteError,
    done: &[(ChangeKind, RawPath)],
) -> CheckpointError {
    const NAMED: usize = 5;
    let changed = if done.is_empty() {
        "no file was changed".to_owned()
    } else {
        let mut names: Vec<String> = done
            .iter()
            .take(NAMED)
            .map(|(_, p)| String::from_utf8_lossy(p).into_owned())
            .collect();
        if done.len() > NAMED {
            names.push(format!("and {} more", done.len() - NAMED));
        }
        format!("already restored: {}", names.join(", "))
    };
    CheckpointError::Restore {
        message: format!(
            "cannot restore {}: {} — {changed}",
            String::from_utf8_lossy(path),
            source.reason()
        ),
        source,
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
