//! Confines file tools to the workspace root.
//!
//! A path is resolved in two steps. First lexically: relative paths are joined to the root,
//! `.` and `..` are folded, and the result must still be under the root. Then physically:
//! the longest prefix that exists is canonicalized, which follows every symlink in it, and
//! that must be under the canonical root too. Checking only the lexical form would let a
//! symlink committed to a repository (`docs -> /etc`) hand out files anywhere.
//!
//! A path inside the root may still be refused: a secret store or `$LINGGEN_HOME` (the root
//! is `~`, say) or anything `[sandbox] deny_read` names, for reads as for writes (see
//! `sandbox::secrets`); and a FIFO, socket or device, which file tools never open (a FIFO
//! with no writer would hang a read for ever).
//!
//! The check happens when a call is prepared and again just before a write, which narrows
//! (but cannot close) the window in which another process could swap a directory for a
//! symlink; the workspace is assumed not to be under attack by a concurrent local process.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::shell::work;
use crate::tools::sandbox::Secrets;

/// linggen's configuration file, in the root and in `$LINGGEN_HOME`: the write guard
/// protects it.
pub use crate::config::CONFIG_FILE;
/// The project's rules approved with "always in this project", relative to the root.
pub const PROJECT_RULES_FILE: &str = ".linggen/permissions.toml";

/// What the resolved path will be used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathUse {
    Read,
    Write,
}

/// A path that passed the checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Absolute path with every existing symlink resolved.
    pub abs: PathBuf,
    /// Relative to the root, `/`-separated; `.` for the root itself.
    pub rel: String,
}

/// Why a path given by the model is refused; each message says what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathRefused {
    #[error("the path is empty; give a path relative to the workspace root, e.g. src/main.rs")]
    Empty,
    /// Not inside the root (through `..`, `~` or a symlink), or not resolvable there.
    #[error("{0}")]
    Outside(String),
    /// A hidden path (a secret store, `$LINGGEN_HOME`, `[sandbox] deny_read`) or a FIFO,
    /// socket or device.
    #[error("{0}")]
    Unreadable(String),
    #[error("cannot write to the workspace root itself; name a file inside it")]
    WriteToRoot,
    /// A path no tool writes (`.git/`, the person's settings, ...): `why` says which.
    #[error("`{raw}` {why}")]
    Protected { raw: String, why: &'static str },
}

/// Resolves a path given by the model against `root`; the error says what to do instead.
/// `home` is `$LINGGEN_HOME` (from the tool context), refused for writes when it lies inside
/// the root; `secrets` are refused for reads and writes alike, wherever they lie.
pub fn resolve(
    root: &Path,
    home: Option<&Path>,
    secrets: &Secrets,
    raw: &str,
    usage: PathUse,
) -> Result<ResolvedPath, PathRefused> {
    let given_root = root;
    let root = canonical_root(root);
    if raw.trim().is_empty() {
        return Err(PathRefused::Empty);
    }
    // An absolute path spelled through a non-canonical root (`/tmp/ws/x` when `/tmp` is a
    // symlink) is still inside; re-anchor it before the lexical check.
    let raw_path = Path::new(raw);
    let anchored = match raw_path.strip_prefix(given_root) {
        Ok(rest) if given_root != root.as_path() => root.join(rest),
        _ => raw_path.to_path_buf(),
    };
    let abs = locate(&root, &root, &anchored.to_string_lossy()).map_err(PathRefused::Outside)?;
    let rel = relative(&root, &abs);
    refuse_unreadable(&abs, raw, secrets).map_err(PathRefused::Unreadable)?;
    if usage == PathUse::Write {
        if rel == "." {
            return Err(PathRefused::WriteToRoot);
        }
        if let Some(why) = protected(&abs, &rel, home) {
            return Err(PathRefused::Protected {
                raw: raw.to_string(),
                why,
            });
        }
    }
    Ok(ResolvedPath { abs, rel })
}

/// Resolves `raw` relative to `base` (a directory inside `root`, which must be canonical)
/// and checks that the result, symlinks followed, stays inside `root`. Shared with the shell
/// analysis, which checks every argument that could name a file.
pub(in crate::tools) fn locate(root: &Path, base: &Path, raw: &str) -> Result<PathBuf, String> {
    work::tick(raw.len() + 1);
    if raw.contains('\0') {
        return Err("the path contains a NUL byte".into());
    }
    if raw.starts_with('~') {
        return Err(format!(
            "`{raw}` refers to a home directory, which is outside the workspace root {}; \
             use a path relative to the root",
            root.display()
        ));
    }
    // The kernel refuses longer paths, and the cost of resolving one stays bounded.
    if raw.len() > PATH_MAX {
        return Err(format!(
            "a path of {} bytes is longer than the system allows",
            raw.len()
        ));
    }
    let lexical = normalize(&base.join(raw));
    if !lexical.starts_with(root) {
        return Err(outside(raw, root));
    }
    let physical =
        follow(base, Path::new(raw)).map_err(|e| format!("cannot resolve `{raw}`: {e}"))?;
    if !physical.starts_with(root) {
        return Err(format!(
            "`{raw}` leads outside the workspace root through a symlink (to {}); only files \
             inside {} are reachable",
            physical.display(),
            root.display()
        ));
    }
    Ok(physical)
}

/// Refuses what no file tool may touch however it was reached: a hidden path (a secret
/// store, `$LINGGEN_HOME`, `[sandbox] deny_read`) and a FIFO, socket or device. `abs` is
/// canonical.
pub(in crate::tools) fn refuse_unreadable(
    abs: &Path,
    raw: &str,
    secrets: &Secrets,
) -> Result<(), String> {
    if let Some(hidden) = secrets.hiding(abs) {
        return Err(format!("`{raw}` is refused: {}", hidden.explain()));
    }
    match fs::symlink_metadata(abs) {
        Ok(meta) => match special_kind(&meta.file_type()) {
            Some(kind) => Err(special(raw, kind)),
            None => Ok(()),
        },
        Err(_) => Ok(()),
    }
}

pub use crate::durable::special_kind;

fn special(raw: &str, kind: &str) -> String {
    format!(
        "`{raw}` is {kind}, not a regular file; file tools never open FIFOs, sockets or          devices (reading one can wait for ever). Leave it alone, or ask the person"
    )
}

/// Opens `abs` for reading only if it is a regular file. Checked on the open file, so a
/// FIFO swapped in after the path was resolved is refused, not waited on: the open does
/// not block (`O_NONBLOCK`, which changes nothing for a regular file), and neither does a
/// terminal become the controlling one (`O_NOCTTY`).
pub fn open_regular(abs: &Path, raw: &str) -> io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(abs)?;
    let file_type = file.metadata()?.file_type();
    match special_kind(&file_type) {
        Some(kind) => Err(io::Error::other(special(raw, kind))),
        None => Ok(file),
    }
}

/// Linux's `PATH_MAX`.
const PATH_MAX: usize = 4096;

/// How many symlinks one resolution may follow before it counts as a loop (Linux: 40).
const MAX_LINKS: usize = 40;

/// The root as the checks compare against it. `ToolContext::root` is documented as
/// canonical, but a test or a caller may pass `/tmp/x` where `/tmp` is a symlink.
pub fn canonical_root(root: &Path) -> PathBuf {
    root.canonicalize().unwrap_or_else(|_| normalize(root))
}

/// `abs` relative to `root`, `/`-separated.
pub fn relative(root: &Path, abs: &Path) -> String {
    match abs.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => abs.display().to_string(),
    }
}

/// Why a write to `abs` (`rel` to the root) is refused even though it is inside the root.
pub fn protected(abs: &Path, rel: &str, home: Option<&Path>) -> Option<&'static str> {
    if touches_git_dir(rel) {
        // Git runs programs named in `.git/config` (core.pager, core.fsmonitor,
        // diff.external, aliases) and executes `.git/hooks/*`. Letting a write land there
        // would turn a later, harmless-looking `git status` into arbitrary code.
        return Some(
            "is inside a `.git` directory; writes there are refused because git executes \
             programs named in its config and hooks. Edit working-tree files instead",
        );
    }
    // The model must not grant itself permissions: the project config holds the mode and
    // the allow rules, `.linggen/permissions.toml` the rules approved with "always in this
    // project", and $LINGGEN_HOME (inside the root when the root is `~`) the rest.
    let own_config =
        rel.eq_ignore_ascii_case(CONFIG_FILE) || rel.eq_ignore_ascii_case(PROJECT_RULES_FILE);
    let in_home = home
        .map(|home| home.canonicalize().unwrap_or_else(|_| home.to_path_buf()))
        .is_some_and(|home| abs.starts_with(home));
    if own_config || in_home {
        return Some(
            "is linggen's own configuration, which holds its permission rules; the agent may \
             not change it. Ask the person to edit it",
        );
    }
    None
}

/// Why a shell command may not write `abs` (`rel` to the root): what [`protected`] refuses,
/// and also the folders linggen loads agents, skills, commands and project permissions from
/// (`.linggen/`, `agents/`, `.agents/`, `.claude/commands/`) and a `linggen-agent.toml` at
/// any depth. A command
/// that planted an agent or a skill there would grant itself tools the next time linggen
/// starts; the kernel confinement keeps the same paths read-only for commands.
pub fn protected_for_commands(abs: &Path, rel: &str, home: Option<&Path>) -> Option<&'static str> {
    if let Some(why) = protected(abs, rel, home) {
        return Some(why);
    }
    let mut parts = rel.split('/');
    let first = parts.next().unwrap_or_default();
    // `.claude` itself too: removing or moving it takes its `commands` along.
    let claude_commands = first.eq_ignore_ascii_case(".claude")
        && parts
            .next()
            .is_none_or(|second| second.eq_ignore_ascii_case("commands"));
    if claude_commands
        || [".linggen", "agents", ".agents"]
            .iter()
            .any(|dir| first.eq_ignore_ascii_case(dir))
    {
        return Some(
            "is in a folder linggen loads agents, skills, commands or permissions from; a command may \
             not change it. Ask the person, or use the Write tool where it is allowed",
        );
    }
    let name = rel.rsplit('/').next().unwrap_or_default();
    if name.eq_ignore_ascii_case(CONFIG_FILE) {
        return Some(
            "is a linggen configuration file, which holds permission rules; a command may \
             not change it. Ask the person to edit it",
        );
    }
    None
}

/// True when any component of a root-relative path is a `.git` directory. Compared without
/// case because macOS and Windows file systems treat `.GIT` as `.git`.
pub fn touches_git_dir(rel: &str) -> bool {
    rel.split('/').any(|part| part.eq_ignore_ascii_case(".git"))
}

fn outside(raw: &str, root: &Path) -> String {
    format!(
        "`{raw}` is outside the workspace root {}; use a path inside it, relative to the root \
         (e.g. src/main.rs)",
        root.display()
    )
}

/// Folds `.` and `..` without touching the file system. `..` at `/` stays at `/`, as the
/// kernel does.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

/// Resolves `path` from `base` the way the kernel does: component by component, a symlink
/// replaced by its target before any later `..` applies (`link/../x`, where `link -> /a/b`,
/// is `/a/x`, not `x`). Below a missing component nothing can be a symlink, so the rest is
/// folded lexically, which is what `mkdir -p` would create. A dangling symlink is refused:
/// writing through it would create its target, wherever that is.
fn follow(base: &Path, path: &Path) -> io::Result<PathBuf> {
    let mut current = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        base.to_path_buf()
    };
    // Components still to walk, the next one last.
    let mut pending: Vec<OsString> = Vec::new();
    push_components(&mut pending, path);
    // How many components of `current` are below the first missing one.
    let mut missing_depth = 0usize;
    let mut links = 0usize;
    while let Some(part) = pending.pop() {
        work::tick(1);
        if part == "." {
            continue;
        }
        if part == ".." {
            current.pop();
            missing_depth = missing_depth.saturating_sub(1);
            continue;
        }
        current.push(&part);
        if missing_depth > 0 {
            missing_depth += 1;
            continue;
        }
        work::tick(1);
        match current.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(io::Error::other("too many levels of symlinks"));
                }
                if let Err(e) = current.metadata() {
                    return Err(if e.kind() == io::ErrorKind::NotFound {
                        io::Error::new(
                            io::ErrorKind::NotFound,
                            "it is a symlink to a missing target; use the target path directly",
                        )
                    } else {
                        e
                    });
                }
                let target = fs::read_link(&current)?;
                current.pop();
                if target.is_absolute() {
                    current = PathBuf::from("/");
                }
                push_components(&mut pending, &target);
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => missing_depth = 1,
            Err(e) => return Err(e),
        }
    }
    Ok(current)
}

/// Pushes the components of `path` (without its root) so that the first is popped first.
fn push_components(pending: &mut Vec<OsString>, path: &Path) {
    let start = pending.len();
    for component in path.components() {
        match component {
            Component::Normal(name) => pending.push(name.to_os_string()),
            Component::ParentDir => pending.push("..".into()),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    pending[start..].reverse();
}

/// Makes a FIFO at `path`, for the tests of every tool that must not wait on one.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn mkfifo(path: &Path) {
    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
}

#[cfg(test)]
mod tests;
