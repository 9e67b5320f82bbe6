//! Durable replacement of a file: what linggen writes (a person's file through `Write`,
//! `Edit`, `apply_patch` or a rewind, its own trust, rules and memory) is either all there
//! or not there at all, whatever fails midway.
//!
//! Writing in place truncates the old content before the new one is on disk: on a full disk
//! a 112 KB source file became the first 112 KB of its new version, cut mid-line. Here the
//! new content goes to a private temporary file beside the target (same folder, so the same
//! file system, where a rename is atomic), is written whole and flushed to the disk
//! (`fsync`), takes the original's permission bits (and owner, where we may set it), and
//! only then is renamed over the target; the folder is synced so the rename survives a
//! crash too. Any failure before the rename removes the temporary file and leaves the
//! original byte for byte as it was.
//!
//! A symlink at the path is followed by default (the file it leads to is replaced and the
//! link stays a link, as writing in place did); a rewind, which puts back the path itself,
//! replaces the link. FIFOs, sockets and devices are never replaced nor opened.
//!
//! This sits below every other module: it knows files, not who writes them.

use std::ffi::OsString;
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// How a file is replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Permission bits of a file that does not exist yet (the umask applies); an existing
    /// file keeps its own.
    pub new_mode: u32,
    /// A symlink at the path: replace the file it leads to (`true`), or the link itself.
    pub through_symlinks: bool,
    /// Set (`Some(true)`) or clear the executable bits: for content whose mode is recorded
    /// elsewhere (a checkpoint), where the record wins over the file being replaced.
    pub executable: Option<bool>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            new_mode: 0o666,
            through_symlinks: true,
            executable: None,
        }
    }
}

impl Options {
    /// For linggen's own state (trust, rules, memory): readable by its owner only when new.
    pub fn private() -> Self {
        Options {
            new_mode: 0o600,
            ..Options::default()
        }
    }
}

/// A failure the machine has, not the content: the person must act (free space, remount),
/// and trying again unchanged cannot help.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageFault {
    DiskFull,
    QuotaExceeded,
    ReadOnly,
    DeviceError,
}

impl StorageFault {
    pub fn of(error: &io::Error) -> Option<StorageFault> {
        match error.raw_os_error()? {
            libc::ENOSPC => Some(StorageFault::DiskFull),
            libc::EDQUOT => Some(StorageFault::QuotaExceeded),
            libc::EROFS => Some(StorageFault::ReadOnly),
            libc::EIO => Some(StorageFault::DeviceError),
            _ => None,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            StorageFault::DiskFull => "the disk is full",
            StorageFault::QuotaExceeded => "the disk quota is used up",
            StorageFault::ReadOnly => "the file system is read-only",
            StorageFault::DeviceError => "the disk reported an input/output error",
        }
    }

    fn advice(self) -> &'static str {
        match self {
            StorageFault::DiskFull => "free space and retry",
            StorageFault::QuotaExceeded => "free space within the quota and retry",
            StorageFault::ReadOnly => "make it writable, or work in another folder",
            StorageFault::DeviceError => "check the disk (`dmesg`) before retrying",
        }
    }
}

/// What went wrong replacing a file. Nothing was changed, except where
/// [`WriteError::Rename`] says the rename itself failed (then nothing was changed either:
/// a rename is all or nothing).
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{} is {kind}, not a regular file; nothing was written", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("cannot {step} {}: {}", path.display(), explain(source))]
    Io {
        step: Step,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Where a replacement failed, for the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Inspect,
    CreateFolder,
    WriteTemporary,
    Rename,
    Remove,
    Append,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Step::Inspect => "inspect",
            Step::CreateFolder => "create the folder",
            Step::WriteTemporary => "write a temporary file for",
            Step::Rename => "put the new version in place of",
            Step::Remove => "remove",
            Step::Append => "append to",
        })
    }
}

impl WriteError {
    /// The machine's fault, if it is one (see [`StorageFault`]).
    pub fn fault(&self) -> Option<StorageFault> {
        match self {
            WriteError::Io { source, .. } => StorageFault::of(source),
            WriteError::NotRegular { .. } => None,
        }
    }

    /// Why, without the path (the caller names the file its own way), and what to do when
    /// the machine is at fault: "the disk is full (No space left on device); free space and
    /// retry".
    pub fn reason(&self) -> String {
        match self {
            WriteError::NotRegular { kind, .. } => {
                format!("it is {kind}, not a regular file; nothing was written")
            }
            WriteError::Io { source, .. } => explain(source),
        }
    }
}

fn explain(error: &io::Error) -> String {
    let text = error.to_string();
    // "No space left on device (os error 28)": the number tells a person nothing.
    let text = text.split(" (os error").next().unwrap_or(&text).to_string();
    match StorageFault::of(error) {
        Some(fault) => format!("{} ({text}); {}", fault.describe(), fault.advice()),
        None => text,
    }
}

/// Replaces `path` with `bytes` (see the module's documentation). The folder must exist.
pub fn replace(path: &Path, bytes: &[u8], options: Options) -> Result<(), WriteError> {
    stage(path, bytes, options)?.commit()
}

/// Adds `bytes` at the end of `path` (created when missing), whole or not at all: a
/// failed write is cut back off, so a full disk never leaves half a line. Appenders that
/// all come through here take turns (an exclusive `flock` while appending), so cutting
/// back never removes another's line.
pub fn append(path: &Path, bytes: &[u8], options: Options) -> Result<(), WriteError> {
    let target = if options.through_symlinks {
        final_target(path)?
    } else {
        path.to_path_buf()
    };
    existing(&target)?;
    let failed = |step, source| WriteError::Io {
        step,
        path: target.clone(),
        source,
    };
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(options.new_mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(&target)
        .map_err(|e| failed(Step::Append, e))?;
    let _turn = FileLock::exclusive(&file).map_err(|e| failed(Step::Append, e))?;
    let meta = file.metadata().map_err(|e| failed(Step::Inspect, e))?;
    if let Some(kind) = special_kind(&meta.file_type()) {
        return Err(WriteError::NotRegular { path: target, kind });
    }
    let written = (&file).write_all(bytes).and_then(|()| file.sync_all());
    if let Err(e) = written {
        // Best effort: truncating frees space, so it works on a full disk too.
        let _ = file.set_len(meta.len());
        return Err(failed(Step::Append, e));
    }
    Ok(())
}

/// An exclusive `flock` on an open file, released when dropped (and by the kernel when the
/// process dies).
pub struct FileLock<'a>(&'a File);

impl<'a> FileLock<'a> {
    /// Waits for the lock.
    pub fn exclusive(file: &'a File) -> io::Result<FileLock<'a>> {
        flock(file, libc::LOCK_EX)?;
        Ok(FileLock(file))
    }
}

impl Drop for FileLock<'_> {
    fn drop(&mut self) {
        let _ = flock(self.0, libc::LOCK_UN);
    }
}

/// Waits for the exclusive advisory lock on `file` and keeps it as long as the open file
/// (or the process) lasts: for a holder that cannot keep a [`FileLock`]'s borrow (one held
/// across awaits owns the file instead).
pub fn lock_exclusive(file: &File) -> io::Result<()> {
    flock(file, libc::LOCK_EX)
}

/// Takes the exclusive advisory lock on `file` if no other open file holds it: `Ok(false)`
/// when one does. The lock lasts as long as the open file (or the process) does; the
/// session lease and the checkpoint store's lock are built on it.
pub fn try_lock_exclusive(file: &File) -> io::Result<bool> {
    match flock(file, libc::LOCK_EX | libc::LOCK_NB) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Ok(false),
        Err(e) => Err(e),
    }
}

/// `flock(2)`, retried when a signal interrupts it.
fn flock(file: &File, operation: libc::c_int) -> io::Result<()> {
    use std::os::fd::AsRawFd as _;
    loop {
        // SAFETY: flock on a descriptor the caller borrows; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), operation) } == 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EINTR) {
            return Err(error);
        }
    }
}

/// New content written and flushed beside its target, not yet in place: [`Staged::commit`]
/// puts it there, dropping it removes it. Several files staged first and committed after
/// change all or none of them on a full disk.
#[derive(Debug)]
pub struct Staged {
    temp: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl Staged {
    /// The file this will replace (a symlink at the path given resolved, when followed).
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Renames the new content over the target, then syncs the folder.
    pub fn commit(mut self) -> Result<(), WriteError> {
        fs::rename(&self.temp, &self.target).map_err(|source| WriteError::Io {
            step: Step::Rename,
            path: self.target.clone(),
            source,
        })?;
        self.committed = true;
        sync_folder(&self.target);
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            // Gone already is fine; anything else leaves a hidden file, never a broken one.
            let _ = fs::remove_file(&self.temp);
        }
    }
}

/// Writes `bytes` beside `path`, ready to replace it.
pub fn stage(path: &Path, bytes: &[u8], options: Options) -> Result<Staged, WriteError> {
    stage_with(path, options, |file| file.write_all(bytes))
}

/// Makes a symlink to `link` beside `path`, ready to replace it (the path itself, never
/// what a link there leads to).
pub fn stage_symlink(path: &Path, link: &Path) -> Result<Staged, WriteError> {
    existing(path)?;
    let failed = |source| WriteError::Io {
        step: Step::WriteTemporary,
        path: path.to_path_buf(),
        source,
    };
    for _ in 0..TEMP_ATTEMPTS {
        let temp = temp_name(path);
        match std::os::unix::fs::symlink(link, &temp) {
            Ok(()) => {
                return Ok(Staged {
                    temp,
                    target: path.to_path_buf(),
                    committed: false,
                });
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(failed(e)),
        }
    }
    Err(failed(io::Error::from(io::ErrorKind::AlreadyExists)))
}

/// [`stage`] with the writing given: the seam the tests fail on purpose.
fn stage_with(
    path: &Path,
    options: Options,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<Staged, WriteError> {
    let target = if options.through_symlinks {
        final_target(path)?
    } else {
        path.to_path_buf()
    };
    let before = existing(&target)?.filter(|meta| meta.is_file());
    let failed = |source| WriteError::Io {
        step: Step::WriteTemporary,
        path: target.clone(),
        source,
    };
    let mode = match &before {
        Some(meta) => with_exec(meta.permissions().mode() & 0o7777, options.executable),
        None => match options.executable {
            Some(true) => options.new_mode | 0o111,
            Some(false) => options.new_mode & !0o111,
            None => options.new_mode,
        },
    };
    // Private until its mode is set: an existing file's mode may be stricter than the
    // umask would make a new one.
    let create_mode = if before.is_some() { 0o600 } else { mode };
    let (mut file, temp) = create_temp(&target, create_mode).map_err(failed)?;
    let staged = Staged {
        temp,
        target: target.clone(),
        committed: false,
    };
    if let Some(meta) = &before {
        keep_owner(&file, meta);
        // After the owner: changing it clears set-user-ID and set-group-ID bits.
        file.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(failed)?;
    }
    write(&mut file).map_err(failed)?;
    file.sync_all().map_err(failed)?;
    Ok(staged)
}

/// `mode` with the executable bits set (for whoever may read) or cleared, as asked.
fn with_exec(mode: u32, executable: Option<bool>) -> u32 {
    match executable {
        Some(true) => mode | ((mode & 0o444) >> 2),
        Some(false) => mode & !0o111,
        None => mode,
    }
}

/// What is at `path` now (not following a symlink), refusing what is never replaced.
fn existing(path: &Path) -> Result<Option<Metadata>, WriteError> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(WriteError::Io {
                step: Step::Inspect,
                path: path.to_path_buf(),
                source,
            });
        }
    };
    if let Some(kind) = special_kind(&meta.file_type()) {
        return Err(WriteError::NotRegular {
            path: path.to_path_buf(),
            kind,
        });
    }
    if meta.is_dir() {
        return Err(WriteError::NotRegular {
            path: path.to_path_buf(),
            kind: "a folder",
        });
    }
    Ok(Some(meta))
}

/// What a file that is neither a regular file, a folder nor a symlink is, in words.
pub fn special_kind(file_type: &fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt as _;
    if file_type.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if file_type.is_socket() {
        Some("a socket")
    } else if file_type.is_block_device() {
        Some("a block device")
    } else if file_type.is_char_device() {
        Some("a character device")
    } else {
        None
    }
}

/// Linux's limit on symlinks followed in one resolution.
const MAX_LINKS: usize = 40;

/// `path` with a symlink in its last component followed, link after link, to what it
/// finally names (which may not exist yet: a dangling link creates its target, as an
/// in-place write through it did).
fn final_target(path: &Path) -> Result<PathBuf, WriteError> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&current).map_err(|source| WriteError::Io {
                    step: Step::Inspect,
                    path: current.clone(),
                    source,
                })?;
                // `join` keeps an absolute link as it is.
                current = match current.parent() {
                    Some(parent) => parent.join(link),
                    None => link,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(WriteError::Io {
        step: Step::Inspect,
        path: path.to_path_buf(),
        source: io::Error::from_raw_os_error(libc::ELOOP),
    })
}

/// Names tried before giving up; another process would have to be racing us on purpose.
const TEMP_ATTEMPTS: usize = 16;

/// A new file beside `target` that nobody else has: created exclusively (`O_EXCL`, which
/// also never follows a symlink planted under the name).
fn create_temp(target: &Path, mode: u32) -> io::Result<(File, PathBuf)> {
    for _ in 0..TEMP_ATTEMPTS {
        let temp = temp_name(target);
        let opened = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NOCTTY)
            .open(&temp);
        match opened {
            Ok(file) => return Ok((file, temp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::from(io::ErrorKind::AlreadyExists))
}

/// `.<name>.<pid>.<n>.linggen-tmp` beside `target`: hidden, unique per process and call,
/// and recognisable should a crash leave one. Long names are shortened to stay under the
/// file system's 255 bytes.
fn temp_name(target: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = target.file_name().map_or(&[][..], |n| n.as_bytes());
    let mut temp = b".".to_vec();
    temp.extend_from_slice(&name[..name.len().min(160)]);
    temp.extend_from_slice(format!(".{}.{n}.linggen-tmp", std::process::id()).as_bytes());
    target.with_file_name(OsString::from_vec(temp))
}

/// Gives the new file the old one's owner and group, so replacing a file does not quietly
/// take it over. Only root may give a file away; anyone may set a group they belong to. A
/// refusal leaves the file ours, which a person writing it by hand would get too.
fn keep_owner(file: &File, before: &Metadata) {
    use std::os::fd::AsRawFd as _;
    let Ok(now) = file.metadata() else {
        return;
    };
    if now.uid() == before.uid() && now.gid() == before.gid() {
        return;
    }
    let fd = file.as_raw_fd();
    // SAFETY: fchown on a descriptor we own; no memory is involved.
    let done = unsafe { libc::fchown(fd, before.uid(), before.gid()) } == 0;
    if !done {
        // SAFETY: as above; -1 (as uid_t) leaves the owner as it is.
        let _ = unsafe { libc::fchown(fd, u32::MAX, before.gid()) };
    }
}

/// Syncs the folder holding `path`, so the rename survives a crash. The new content is in
/// place either way: a failure here only weakens that promise, and reporting the write as
/// failed would be false, so it is not reported.
fn sync_folder(path: &Path) {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if let Ok(dir) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(folder)
    {
        let _ = dir.sync_all();
    }
}

#[cfg(test)]
mod tests;
