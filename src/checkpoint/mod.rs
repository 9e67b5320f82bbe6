//! Checkpoints: snapshots of a folder's files taken before an agent changes them, so the
//! person can rewind later.
//!
//! A snapshot is a git commit of the whole working tree, so whatever changed the files (a
//! file tool or any shell command) is covered. The commits live in a PRIVATE git directory
//! that the caller chooses (e.g. `$LINGGEN_HOME/projects/<name>/checkpoints.git`), used with
//! `GIT_DIR=<store>` and `GIT_WORK_TREE=<root>`. The person's own repository is never
//! written: its branch, HEAD, index, stash, refs and objects are theirs, and a rewind that
//! moved any of them (or left objects and reflog entries behind) would surprise them. Their
//! repository is only read, for its `info/exclude`.
//!
//! How a snapshot is taken: the store keeps a persistent index, so git's stat cache makes a
//! later snapshot re-read only the files that changed. Each snapshot lists that index plus
//! the untracked files that are not ignored (`.gitignore`, the person's `info/exclude`, a few
//! heavy folders), drops what is gone, too large or ignored, adds the rest, and writes a
//! commit whose parent is the previous snapshot (the store's detached `HEAD`). The ref
//! `refs/checkpoints/<name>` keeps it alive. Two things are held whatever the rules say: the
//! `.gitignore` files of the folders it covers (the rules are part of what a rewind puts
//! back), and, when asked ([`Checkpoints::snapshot_keeping`]), every file an earlier
//! snapshot recorded. A rewind asks for the snapshot it goes back to, so a rule written
//! since (a `*`, say) cannot hide the files it must restore; a turn's end asks for the
//! turn's first, so the turn's changes stay visible.
//!
//! Restore writes through `git checkout-index` from a temporary index, which replaces a
//! symlink found in a leading path instead of following it; deletions check every leading
//! folder themselves. Files that no snapshot holds (ignored and never recorded, too large)
//! are never touched.
//!
//! Every call runs `git` and waits for it: call from a blocking thread, not an async task.

mod git;
mod lock;
mod restore;

#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use git::Git;
use lock::StoreLock;

/// Files larger than this are left out of snapshots (and reported): a checkpoint is for the
/// sources an agent edits, not for build outputs or data sets.
pub const MAX_FILE_BYTES: u64 = 5 * 1024 * 1024;

/// A snapshot of more files than this fails instead of taking minutes; the fix is a
/// `.gitignore` entry for the bulky folders.
pub const MAX_FILES: usize = 50_000;

/// Folders never worth a checkpoint, excluded even when no `.gitignore` says so.
const ALWAYS_EXCLUDED: &[&str] = &["node_modules/", ".venv/", "__pycache__/"];

/// Where snapshots of one folder are kept: a private git directory and the folder.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    git: Git,
    git_dir: PathBuf,
    root: PathBuf,
    program: std::ffi::OsString,
    max_files: usize,
    max_file_bytes: u64,
    /// How long a snapshot or restore waits for another linggen's (see [`lock`]).
    lock_wait: std::time::Duration,
}

/// A snapshot just taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The commit id; give it to [`Checkpoints::changed`] and [`Checkpoints::restore`].
    pub commit: String,
    /// Files left out because they are larger than [`MAX_FILE_BYTES`] (relative, '/'
    /// separated, sorted).
    pub skipped: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One file that differs between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// Relative to the root, '/' separated (a name that is not UTF-8 is shown lossily).
    pub path: String,
    pub kind: ChangeKind,
}

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error(
        "checkpoints need the `git` program, which is not installed or not on PATH; install git"
    )]
    NoGit,
    /// One line: git's first (its hints would make seven).
    #[error(
        "the checkpoint store {} could not {what} (git: {stderr}); if it is damaged, move it aside and linggen starts a new one",
        store.display()
    )]
    Git {
        store: PathBuf,
        what: String,
        stderr: String,
    },
    #[error(
        "the checkpoint store {} is in use by another linggen for over {waited_secs} s; try again when it is done",
        store.display()
    )]
    Busy { store: PathBuf, waited_secs: u64 },
    #[error("{0}")]
    Write(#[source] crate::durable::WriteError),
    /// A restore that failed to write a file; `message` says what was restored before.
    #[error("{message}")]
    Restore {
        message: String,
        #[source]
        source: crate::durable::WriteError,
    },
    #[error("could not {what} {}: {source}", path.display())]
    Io {
        what: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the folder has more than {limit} files to snapshot; add its bulky folders (build output, dependencies, data) to .gitignore"
    )]
    TooMany {
        /// How many were counted before giving up (one more than `limit`).
        files: usize,
        limit: usize,
    },
    #[error("cannot start git for checkpoints: {0}")]
    Launch(#[source] crate::tools::launch::LaunchError),
    #[error(
        "`{0}` is not a valid checkpoint name; use letters, digits, '.', '_' and '-' (not starting or ending with '.')"
    )]
    BadName(String),
    #[error(
        "`{0}` is not a snapshot in this checkpoint store; use a commit id that a snapshot returned"
    )]
    UnknownSnapshot(String),
}

impl Checkpoints {
    /// Opens the store at `git_dir` for the folder `root`, creating the store (mode 0700)
    /// when it is missing.
    pub fn open(git_dir: &Path, root: &Path) -> Result<Self, CheckpointError> {
        Self::open_with(OsStr::new("git"), git_dir, root)
    }

    fn open_with(program: &OsStr, git_dir: &Path, root: &Path) -> Result<Self, CheckpointError> {
        let root = root
            .canonicalize()
            .map_err(io_error("find the folder to snapshot", root))?;
        if !root.is_dir() {
            return Err(CheckpointError::Io {
                what: "snapshot".to_owned(),
                path: root,
                source: std::io::Error::new(
                    std::io::ErrorKind::NotADirectory,
                    "it is not a folder",
                ),
            });
        }
        // Agents write here: git is never taken from this folder (a `.venv/bin` on PATH).
        crate::tools::launch::distrust(&[&root]);
        create_folder(git_dir)?;
        let git_dir = git_dir
            .canonicalize()
            .map_err(io_error("open the checkpoint store", git_dir))?;
        // Runs starting together would otherwise create the store together.
        let _turn = StoreLock::acquire(&git_dir, lock::WAIT)?;
        if !git_dir.join("HEAD").exists() {
            init_store(program, &git_dir)?;
        }
        let info = git_dir.join("info");
        std::fs::create_dir_all(&info).map_err(io_error("create", &info))?;
        // Highest-precedence attributes: no eol conversion (`-text`, and the older `-crlf`),
        // no clean/smudge filter, no `$Id$` expansion, no re-encoding, whatever the tree's
        // own `.gitattributes` say, so a restore gives back the exact bytes.
        let attributes = info.join("attributes");
        write_if_changed(
            &attributes,
            b"* -text -crlf -eol -filter -ident -working-tree-encoding\n",
        )?;
        Ok(Self {
            git: Git::new(program, &git_dir, &root),
            git_dir,
            root,
            program: program.to_owned(),
            max_files: MAX_FILES,
            max_file_bytes: MAX_FILE_BYTES,
            lock_wait: lock::WAIT,
        })
    }

    /// Waits for the store: one snapshot or restore at a time, across processes.
    fn lock(&self) -> Result<StoreLock, CheckpointError> {
        StoreLock::acquire(&self.git_dir, self.lock_wait)
    }

    /// The folder whose files are snapshotted (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Takes a snapshot of the working tree, kept as `refs/checkpoints/<name>` (a name used
    /// before is moved) with `label` as its message.
    pub fn snapshot(&self, name: &str, label: &str) -> Result<Snapshot, CheckpointError> {
        self.take(name, label, None)
    }

    /// A snapshot that also holds every file the snapshot `keep` recorded and that is still
    /// there, whatever the ignore rules say now. Take it before restoring `keep` (the tree's
    /// current content of those files is then what an undo gives back, and the restore can
    /// write them), and at the end of a turn with the turn's first snapshot (a command that
    /// makes a rule covering its own changes does not hide them).
    pub fn snapshot_keeping(
        &self,
        name: &str,
        label: &str,
        keep: &str,
    ) -> Result<Snapshot, CheckpointError> {
        self.take(name, label, Some(keep))
    }

    fn take(
        &self,
        name: &str,
        label: &str,
        keep: Option<&str>,
    ) -> Result<Snapshot, CheckpointError> {
        check_name(name)?;
        let _turn = self.lock()?;
        let kept = match keep {
            Some(commit) => self.recorded(&self.snapshot_commit(commit)?)?,
            None => HashSet::new(),
        };
        self.write_excludes()?;
        let mut skipped = self.stage(kept)?;
        let commit = self.commit_index(name, label)?;
        skipped.sort();
        Ok(Snapshot { commit, skipped })
    }

    /// Makes the store's index the tree as it is now: the files it lists plus the untracked
    /// ones that are not ignored, plus `kept` and the ignore files that decide what is
    /// listed. Returns the files left out for their size.
    fn stage(&self, kept: HashSet<Vec<u8>>) -> Result<Vec<String>, CheckpointError> {
        // Files snapshotted before that an ignore rule now covers leave the index, so a
        // rule added later is honoured too.
        let mut ignored: HashSet<Vec<u8>> = split_paths(&self.git.run(
            "list ignored files in the checkpoint index",
            [
                "ls-files",
                "-z",
                "--cached",
                "--ignored",
                "--exclude-standard",
            ],
            None,
        )?)
        .filter(|path| !kept.contains(*path))
        .map(<[u8]>::to_vec)
        .collect();
        // `--others` prints a nested repository as `dir/`; its files are its own
        // repository's business, and git could only record its HEAD.
        let mut listed = self.git.list_paths(
            "list the files to snapshot",
            [
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ],
            self.max_files,
            |path| !path.ends_with(b"/") && !ignored.contains(path),
        )?;
        let mut seen: HashSet<Vec<u8>> = listed.iter().cloned().collect();
        let mut also = |path: Vec<u8>, listed: &mut Vec<Vec<u8>>| {
            if seen.insert(path.clone()) {
                ignored.remove(&path);
                listed.push(path);
            }
        };
        for path in kept {
            also(path, &mut listed);
        }
        for path in self.ignore_files(&listed) {
            also(path, &mut listed);
        }

        let mut add = Vec::new();
        let mut remove: Vec<Vec<u8>> = ignored.into_iter().collect();
        let mut skipped = Vec::new();
        let mut folders = FolderCheck::new(&self.root);
        for path in listed {
            match self.classify(&path, &mut folders) {
                Entry::Keep => add.push(path),
                Entry::Gone => remove.push(path),
                Entry::TooLarge => {
                    skipped.push(String::from_utf8_lossy(&path).into_owned());
                    remove.push(path);
                }
            }
        }
        // `--force-remove` never looks at the file: for paths beyond a symlink, which
        // `update-index --remove` refuses with a fatal error, and for what we chose to drop.
        if !remove.is_empty() {
            self.git.run(
                "drop files from the checkpoint index",
                ["update-index", "--force-remove", "-z", "--stdin"],
                Some(&join_paths(&remove)),
            )?;
        }
        if !add.is_empty() {
            // `--remove` covers a file deleted since we looked at it.
            self.git.run(
                "add files to the checkpoint index",
                ["update-index", "--add", "--remove", "-z", "--stdin"],
                Some(&join_paths(&add)),
            )?;
        }
        Ok(skipped)
    }

    /// The `.gitignore` files of the root and of every folder leading to one of `paths`
    /// that are there, ignored or not. They decide what a snapshot holds, so a snapshot
    /// holds them: a `*` written by a command (which ignores itself too) is then a change a
    /// rewind undoes, not a rule that hides itself.
    fn ignore_files(&self, paths: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut folders: HashSet<&[u8]> = HashSet::from([&b""[..]]);
        for path in paths {
            let mut end = 0;
            while let Some(slash) = path[end..].iter().position(|b| *b == b'/') {
                end += slash;
                folders.insert(&path[..end]);
                end += 1;
            }
        }
        let mut files: Vec<Vec<u8>> = folders
            .into_iter()
            .map(|folder| match folder {
                b"" => b".gitignore".to_vec(),
                _ => [folder, b"/.gitignore"].concat(),
            })
            .filter(|file| {
                std::fs::symlink_metadata(self.root.join(OsStr::from_bytes(file)))
                    .is_ok_and(|meta| meta.is_file())
            })
            .collect();
        files.sort();
        files
    }

    /// Writes the store's index as a commit whose parent is the previous snapshot, and
    /// points `refs/checkpoints/<name>` and the store's `HEAD` at it.
    fn commit_index(&self, name: &str, label: &str) -> Result<String, CheckpointError> {
        let tree = self
            .git
            .run("write the snapshot tree", ["write-tree"], None)?;
        let tree = String::from_utf8_lossy(&tree).trim().to_owned();
        let mut args = vec!["commit-tree".to_owned(), "--no-gpg-sign".to_owned(), tree];
        if let Some(parent) = self.git.commit_of("HEAD")? {
            args.push("-p".to_owned());
            args.push(parent);
        }
        let commit = self
            .git
            .run("write the snapshot commit", &args, Some(label.as_bytes()))?;
        let commit = String::from_utf8_lossy(&commit).trim().to_owned();
        // One transaction: the named ref, and the store's detached HEAD, which is the parent
        // of the next snapshot.
        let updates = format!(
            "update refs/checkpoints/{name} {commit}\noption no-deref\nupdate HEAD {commit}\n"
        );
        self.git.run(
            "record the snapshot",
            ["update-ref", "--stdin"],
            Some(updates.as_bytes()),
        )?;
        Ok(commit)
    }

    /// The paths a snapshot commit holds.
    fn recorded(&self, commit: &str) -> Result<HashSet<Vec<u8>>, CheckpointError> {
        let out = self.git.run(
            "list the files of a snapshot",
            ["ls-tree", "-r", "-z", "--name-only", "--full-tree", commit],
            None,
        )?;
        Ok(split_paths(&out).map(<[u8]>::to_vec).collect())
    }

    /// Files that differ between two snapshot commits, sorted by path, each with its kind
    /// as seen going from `from` to `to`.
    pub fn changed(&self, from: &str, to: &str) -> Result<Vec<FileChange>, CheckpointError> {
        let from = self.snapshot_commit(from)?;
        let to = self.snapshot_commit(to)?;
        Ok(file_changes(self.diff(&from, &to)?))
    }

    /// The commit `refs/checkpoints/<name>` points at, if there is one.
    pub fn resolve(&self, name: &str) -> Result<Option<String>, CheckpointError> {
        check_name(name)?;
        self.git.commit_of(&format!("refs/checkpoints/{name}"))
    }

    /// The full id of a snapshot commit given by (a prefix of) its hex id. Only hex is
    /// accepted: anything else could reach git as an option or a revision expression.
    fn snapshot_commit(&self, commit: &str) -> Result<String, CheckpointError> {
        let hex = (4..=64).contains(&commit.len()) && commit.bytes().all(|b| b.is_ascii_hexdigit());
        if !hex {
            return Err(CheckpointError::UnknownSnapshot(commit.to_owned()));
        }
        self.git
            .commit_of(commit)?
            .ok_or_else(|| CheckpointError::UnknownSnapshot(commit.to_owned()))
    }

    /// (kind going from `from` to `to`, raw path) for each file that differs.
    fn diff(&self, from: &str, to: &str) -> Result<Vec<(ChangeKind, Vec<u8>)>, CheckpointError> {
        let out = self.git.run(
            "compare snapshots",
            [
                "diff-tree",
                "-r",
                "-z",
                "--no-renames",
                "--name-status",
                from,
                to,
            ],
            None,
        )?;
        let mut fields = split_paths(&out);
        let mut changes = Vec::new();
        while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
            let kind = match status.first() {
                Some(b'A') => ChangeKind::Added,
                Some(b'D') => ChangeKind::Deleted,
                // M (content or mode), T (file <-> symlink).
                _ => ChangeKind::Modified,
            };
            changes.push((kind, path.to_vec()));
        }
        Ok(changes)
    }

    /// What a snapshot does with one listed path.
    fn classify(&self, path: &[u8], folders: &mut FolderCheck) -> Entry {
        if !folders.leading_are_folders(path) {
            // Beyond a symlink (or a file): not part of this tree any more.
            return Entry::Gone;
        }
        match std::fs::symlink_metadata(self.root.join(OsStr::from_bytes(path))) {
            Ok(meta) if meta.is_file() && meta.len() > self.max_file_bytes => Entry::TooLarge,
            Ok(meta) if meta.is_file() || meta.is_symlink() => Entry::Keep,
            // A folder (its files are listed on their own), a fifo or socket, missing, or
            // unreadable: nothing git could record here.
            _ => Entry::Gone,
        }
    }

    /// Writes the store's `info/exclude`: the person's own, then the always-excluded
    /// folders, then the store itself when it sits inside the root.
    fn write_excludes(&self) -> Result<(), CheckpointError> {
        let mut text = b"# Written by linggen before each snapshot.\n".to_vec();
        if let Some(exclude) = self.person_exclude() {
            text.extend_from_slice(&exclude);
            if !text.ends_with(b"\n") {
                text.push(b'\n');
            }
        }
        for folder in ALWAYS_EXCLUDED {
            text.extend_from_slice(folder.as_bytes());
            text.push(b'\n');
        }
        if let Ok(inside) = self.git_dir.strip_prefix(&self.root) {
            text.push(b'/');
            text.extend_from_slice(&escape_pattern(inside.as_os_str().as_bytes()));
            text.extend_from_slice(b"/\n");
        }
        write_if_changed(&self.git_dir.join("info/exclude"), &text)
    }

    /// The `info/exclude` of the repository the root belongs to, if any. Found by git
    /// itself (worktrees keep it in the common dir), with the person's environment and
    /// global config left out like everywhere else; `rev-parse` runs no hook or filter.
    fn person_exclude(&self) -> Option<Vec<u8>> {
        let mut cmd = git::neutral(&self.program).ok()?;
        cmd.current_dir(&self.root).args([
            "rev-parse",
            "--path-format=absolute",
            "--git-common-dir",
        ]);
        // No repository (or an unusable one) simply means no person's rules to copy.
        let (code, stdout, _) = git::execute(cmd, &self.program, None).ok()?;
        if code != Some(0) {
            return None;
        }
        let common = PathBuf::from(OsStr::from_bytes(stdout.trim_ascii_end()));
        std::fs::read(common.join("info/exclude")).ok()
    }
}

enum Entry {
    Keep,
    Gone,
    TooLarge,
}

/// Whether each leading component of a relative path is a real folder (not a symlink),
/// remembered per folder: a tree has far fewer folders than files.
struct FolderCheck<'a> {
    root: &'a Path,
    seen: HashMap<Vec<u8>, bool>,
}

impl<'a> FolderCheck<'a> {
    fn new(root: &'a Path) -> Self {
        Self {
            root,
            seen: HashMap::new(),
        }
    }

    fn leading_are_folders(&mut self, path: &[u8]) -> bool {
        let mut end = 0;
        while let Some(slash) = path[end..].iter().position(|b| *b == b'/') {
            end += slash;
            let folder = &path[..end];
            let is_folder = match self.seen.get(folder) {
                Some(known) => *known,
                None => {
                    let full = self.root.join(OsStr::from_bytes(folder));
                    let known = std::fs::symlink_metadata(full).is_ok_and(|m| m.is_dir());
                    self.seen.insert(folder.to_vec(), known);
                    known
                }
            };
            if !is_folder {
                return false;
            }
            end += 1;
        }
        true
    }
}

/// Creates the store directory (0700: snapshots hold the project's files, which may be
/// private); already there is fine.
fn create_folder(git_dir: &Path) -> Result<(), CheckpointError> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(git_dir)
        .map_err(io_error("create the checkpoint store", git_dir))
}

/// Makes the (empty) store folder a bare repository; called with the store locked.
fn init_store(program: &OsStr, git_dir: &Path) -> Result<(), CheckpointError> {
    let mut cmd = git::neutral(program)?;
    // Run inside it with `.`: a path argument could start with '-'.
    cmd.current_dir(git_dir).args([
        "-c",
        "init.defaultBranch=checkpoints",
        "init",
        "--bare",
        "-q",
        ".",
    ]);
    let (code, _, stderr) = git::execute(cmd, program, None)?;
    if code != Some(0) {
        return Err(git::git_error(git_dir, "be created", &stderr));
    }
    Ok(())
}

/// Git ref rules for the part after `refs/checkpoints/`, narrowed to a plain alphabet.
fn check_name(name: &str) -> Result<(), CheckpointError> {
    let alphabet = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    let valid = !name.is_empty()
        && alphabet
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !name.contains("..")
        && !name.ends_with(".lock");
    if valid {
        Ok(())
    } else {
        Err(CheckpointError::BadName(name.to_owned()))
    }
}

/// The non-empty NUL-separated items of git's `-z` output.
fn split_paths(out: &[u8]) -> impl Iterator<Item = &[u8]> {
    out.split(|b| *b == 0).filter(|item| !item.is_empty())
}

/// Paths as git's `--stdin -z` wants them.
fn join_paths(paths: &[Vec<u8>]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(paths.iter().map(|p| p.len() + 1).sum());
    for path in paths {
        bytes.extend_from_slice(path);
        bytes.push(0);
    }
    bytes
}

/// A path as a gitignore pattern matching only itself.
fn escape_pattern(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    for &b in path {
        if matches!(b, b'\\' | b'*' | b'?' | b'[' | b'!' | b'#' | b' ') {
            out.push(b'\\');
        }
        out.push(b);
    }
    out
}

/// Rewrites one of the store's own files when its content changed. Durably: git reads
/// these files, and half of one (a full disk) would change what every snapshot holds.
fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    crate::durable::replace(path, bytes, crate::durable::Options::default())
        .map_err(CheckpointError::Write)
}

fn io_error(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError {
    let what = what.to_owned();
    let path = path.to_owned();
    move |source| CheckpointError::Io { what, path, source }
}

/// Changes as (kind, raw path) pairs, as callers get them: sorted by path.
fn file_changes(pairs: Vec<(ChangeKind, Vec<u8>)>) -> Vec<FileChange> {
    let mut changes: Vec<FileChange> = pairs
        .into_iter()
        .map(|(kind, path)| FileChange {
            path: String::from_utf8_lossy(&path).into_owned(),
            kind,
        })
        .collect();
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes
}
