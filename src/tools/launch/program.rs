//! Which file runs when linggen starts a program by name.
//!
//! A confined command can write files in the workspace and in a few other folders. When the
//! person's `PATH` holds one of those folders (an activated `.venv/bin`, direnv's
//! `PATH_add bin`, `node_modules/.bin`), a command could plant `git` there, and linggen's next
//! own `git` would run it unconfined. So a name is looked up only in `PATH` entries that are
//! absolute and lie outside every such folder (symlinks resolved), and a file found there
//! must itself resolve outside them. The folders are registered by the sandbox as it opens
//! them ([`distrust`]), and by the commands that work on a folder without a sandbox
//! (`linggen rewind`).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The program to start.
#[derive(Debug, Clone, Copy)]
pub enum Program<'a> {
    /// A name looked up on the trusted `PATH`.
    Named(&'a OsStr),
    /// An absolute path (the shell `/bin/sh`, a configured browser).
    Path(&'a Path),
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ProgramError {
    #[error(
        "`{name}` is not on PATH (folders a command could write, like the workspace, are not searched); install it or put it in a folder outside the workspace"
    )]
    NotFound { name: String },
    #[error(
        "{} lies in a folder that commands can write ({}), so linggen will not run it; install the program outside the workspace",
        path.display(), folder.display()
    )]
    Writable { path: PathBuf, folder: PathBuf },
    #[error("{} is not an absolute path to a program", .0.display())]
    NotAbsolute(PathBuf),
}

impl Program<'_> {
    /// The file to run. A name is resolved once per process (the answer is kept while it
    /// stays outside every distrusted folder).
    pub fn resolve(&self) -> Result<PathBuf, ProgramError> {
        match self {
            Program::Path(path) => {
                if !path.is_absolute() {
                    return Err(ProgramError::NotAbsolute(path.to_path_buf()));
                }
                check_outside(path)?;
                Ok(path.to_path_buf())
            }
            Program::Named(name) => resolve_named(name),
        }
    }
}

/// Folders commands can write, registered as they are opened (canonical).
fn distrusted() -> &'static Mutex<Vec<PathBuf>> {
    static FOLDERS: OnceLock<Mutex<Vec<PathBuf>>> = OnceLock::new();
    FOLDERS.get_or_init(|| Mutex::new(Vec::new()))
}

fn distrusted_now() -> Vec<PathBuf> {
    match distrusted().lock() {
        Ok(folders) => folders.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

pub fn distrust(paths: &[&Path]) {
    let mut folders = match distrusted().lock() {
        Ok(folders) => folders,
        Err(poisoned) => poisoned.into_inner(),
    };
    for path in paths {
        let path = canonical(path);
        if !folders.contains(&path) {
            folders.push(path);
        }
    }
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// The distrusted folder holding `path` (symlinks resolved), if any.
fn writable_folder(path: &Path, folders: &[PathBuf]) -> Option<PathBuf> {
    let lexical = path.to_path_buf();
    let real = canonical(path);
    folders
        .iter()
        .find(|f| real.starts_with(f) || lexical.starts_with(f))
        .cloned()
}

fn check_outside(path: &Path) -> Result<(), ProgramError> {
    match writable_folder(path, &distrusted_now()) {
        Some(folder) => Err(ProgramError::Writable {
            path: path.to_path_buf(),
            folder,
        }),
        None => Ok(()),
    }
}

/// `PATH` as linggen started with it: read once, so a later change of the variable (there
/// is none in linggen, but a library could make one) changes nothing.
fn start_path() -> &'static OsString {
    static PATH: OnceLock<OsString> = OnceLock::new();
    PATH.get_or_init(|| std::env::var_os("PATH").unwrap_or_default())
}

/// The `PATH` entries programs may come from now.
pub fn trusted_dirs() -> Vec<PathBuf> {
    let folders = distrusted_now();
    std::env::split_paths(start_path())
        .filter(|dir| dir.is_absolute() && writable_folder(dir, &folders).is_none())
        .collect()
}

/// [`trusted_dirs`] as a `PATH` value, for processes that look up programs themselves.
pub fn trusted_path_var() -> OsString {
    std::env::join_paths(trusted_dirs()).unwrap_or_default()
}

fn resolve_named(name: &OsStr) -> Result<PathBuf, ProgramError> {
    static RESOLVED: OnceLock<Mutex<HashMap<OsString, PathBuf>>> = OnceLock::new();
    let cache = RESOLVED.get_or_init(|| Mutex::new(HashMap::new()));
    let cached = match cache.lock() {
        Ok(map) => map.get(name).cloned(),
        Err(poisoned) => poisoned.into_inner().get(name).cloned(),
    };
    // A folder distrusted after the name was resolved (a second session's root) voids it.
    if let Some(path) = cached.filter(|p| check_outside(p).is_ok()) {
        return Ok(path);
    }
    let not_found = || ProgramError::NotFound {
        name: name.to_string_lossy().into_owned(),
    };
    if Path::new(name).components().count() != 1 {
        return Err(not_found());
    }
    let folders = distrusted_now();
    let found = trusted_dirs()
        .into_iter()
        .map(|dir| dir.join(name))
        .find(|candidate| {
            is_executable(candidate) && writable_folder(candidate, &folders).is_none()
        })
        .ok_or_else(not_found)?;
    if let Ok(mut map) = cache.lock() {
        map.insert(name.to_owned(), found.clone());
    }
    Ok(found)
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
