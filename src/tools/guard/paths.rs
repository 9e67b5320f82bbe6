//! Confines file tools to the workspace root.
//!
//! A path is resolved in two steps. First lexically: relative paths are joined to the root,
//! `.` and `..` are folded, and the result must still be under the root. Then physically:
//! the longest prefix that exists is canonicalized, which follows every symlink in it, and
//! that must be under the canonical root too. Checking only the lexical form would let a
//! symlink committed to a repository (`docs -> /etc`) hand out files anywhere.
//!
//! The check happens when a call is prepared and again just before a write, which narrows
//! (but cannot close) the window in which another process could swap a directory for a
//! symlink; the workspace is assumed not to be under attack by a concurrent local process.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::shell::work;

/// linggen's configuration file, in the root and in `$LINGGEN_HOME` (its name is the
/// config's contract; it lives here because the write guard must know it).
pub const CONFIG_FILE: &str = "linggen-agent.toml";
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

/// Resolves a path given by the model against `root`; the error says what to do instead.
/// `home` is `$LINGGEN_HOME` (from the tool context), refused for writes when it lies inside
/// the root.
pub fn resolve(
    root: &Path,
    home: Option<&Path>,
    raw: &str,
    usage: PathUse,
) -> Result<ResolvedPath, String> {
    let given_root = root;
    let root = canonical_root(root);
    if raw.trim().is_empty() {
        return Err(
            "the path is empty; give a path relative to the workspace root, e.g. src/main.rs"
                .to_string(),
        );
    }
    // An absolute path spelled through a non-canonical root (`/tmp/ws/x` when `/tmp` is a
    // symlink) is still inside; re-anchor it before the lexical check.
    let raw_path = Path::new(raw);
    let anchored = match raw_path.strip_prefix(given_root) {
        Ok(rest) if given_root != root.as_path() => root.join(rest),
        _ => raw_path.to_path_buf(),
    };
    let abs = locate(&root, &root, &anchored.to_string_lossy())?;
    let rel = relative(&root, &abs);
    if usage == PathUse::Write {
        if rel == "." {
            return Err("cannot write to the workspace root itself; name a file inside it".into());
        }
        if let Some(why) = protected(&abs, &rel, home) {
            return Err(format!("`{raw}` {why}"));
        }
    }
    Ok(ResolvedPath { abs, rel })
}

/// Resolves `raw` relative to `base` (a directory inside `root`, which must be canonical)
/// and checks that the result, symlinks followed, stays inside `root`. Shared with the shell
/// analysis, which checks every argument that could name a file.
pub fn locate(root: &Path, base: &Path, raw: &str) -> Result<PathBuf, String> {
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
/// and also the folders linggen loads agents, skills and project permissions from
/// (`.linggen/`, `agents/`, `.agents/`) and a `linggen-agent.toml` at any depth. A command
/// that planted an agent or a skill there would grant itself tools the next time linggen
/// starts; the kernel confinement keeps the same paths read-only for commands.
pub fn protected_for_commands(abs: &Path, rel: &str, home: Option<&Path>) -> Option<&'static str> {
    if let Some(why) = protected(abs, rel, home) {
        return Some(why);
    }
    let first = rel.split('/').next().unwrap_or_default();
    if [".linggen", "agents", ".agents"]
        .iter()
        .any(|dir| first.eq_ignore_ascii_case(dir))
    {
        return Some(
            "is in a folder linggen loads agents, skills or permissions from; a command may \
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    fn root() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        fs::create_dir_all(root.join("src")).unwrap();
        fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
        (dir, root)
    }

    /// `$LINGGEN_HOME` inside the root (the root is `~`) is protected because the tool
    /// context names it, not because the guard read the environment.
    #[test]
    fn the_linggen_home_from_the_context_is_never_written() {
        let (_dir, root) = root();
        let home = root.join(".linggen-home");
        fs::create_dir_all(&home).unwrap();
        let err = resolve(
            &root,
            Some(&home),
            ".linggen-home/skills/x/SKILL.md",
            PathUse::Write,
        )
        .unwrap_err();
        assert!(err.contains("linggen's own configuration"), "{err}");
        assert!(resolve(&root, Some(&home), ".linggen-home/x", PathUse::Read).is_ok());
        assert!(resolve(&root, None, ".linggen-home/x", PathUse::Write).is_ok());
        use crate::tools::guard::shell::{SegmentClass, analyze};
        let class = |home| {
            analyze("echo x > .linggen-home/x", &root, home)
                .unwrap()
                .segments[0]
                .class
                .clone()
        };
        assert!(matches!(class(Some(&home)), SegmentClass::Never { .. }));
        assert!(matches!(class(None), SegmentClass::Writes { .. }));
    }

    fn refused(root: &Path, raw: &str, usage: PathUse) -> String {
        match resolve(root, None, raw, usage) {
            Ok(p) => panic!("`{raw}` should be refused, resolved to {}", p.abs.display()),
            Err(e) => e,
        }
    }

    #[test]
    fn relative_paths_resolve_inside() {
        let (_d, root) = root();
        let p = resolve(&root, None, "src/main.rs", PathUse::Read).unwrap();
        assert_eq!(p.abs, root.join("src/main.rs"));
        assert_eq!(p.rel, "src/main.rs");
        let p = resolve(&root, None, "./src/../src/main.rs", PathUse::Read).unwrap();
        assert_eq!(p.rel, "src/main.rs");
        assert_eq!(resolve(&root, None, ".", PathUse::Read).unwrap().rel, ".");
    }

    #[test]
    fn parent_escape_is_refused() {
        let (_d, root) = root();
        assert!(refused(&root, "../x", PathUse::Read).contains("outside the workspace root"));
        assert!(refused(&root, "a/../../x", PathUse::Read).contains("outside"));
        refused(&root, "src/../../../etc/passwd", PathUse::Write);
    }

    #[test]
    fn absolute_paths_outside_are_refused_inside_are_fine() {
        let (_d, root) = root();
        assert!(refused(&root, "/etc/passwd", PathUse::Read).contains("outside"));
        let inside = root.join("src/main.rs");
        let p = resolve(&root, None, inside.to_str().unwrap(), PathUse::Read).unwrap();
        assert_eq!(p.rel, "src/main.rs");
    }

    #[test]
    fn home_paths_are_refused() {
        let (_d, root) = root();
        assert!(refused(&root, "~/.ssh/id_rsa", PathUse::Read).contains("home directory"));
        refused(&root, "~", PathUse::Read);
    }

    #[test]
    fn symlink_to_outside_file_is_refused() {
        let (_d, root) = root();
        symlink("/etc/passwd", root.join("passwd")).unwrap();
        assert!(refused(&root, "passwd", PathUse::Read).contains("through a symlink"));
    }

    #[test]
    fn symlinked_directory_escaping_is_refused() {
        let (_d, root) = root();
        symlink("/etc", root.join("etc")).unwrap();
        assert!(refused(&root, "etc/hostname", PathUse::Read).contains("symlink"));
        // Creating a new file under the link would create it in /etc.
        assert!(refused(&root, "etc/new/file", PathUse::Write).contains("symlink"));
    }

    #[test]
    fn symlink_inside_root_is_fine() {
        let (_d, root) = root();
        symlink(root.join("src"), root.join("code")).unwrap();
        let p = resolve(&root, None, "code/main.rs", PathUse::Read).unwrap();
        assert_eq!(p.rel, "src/main.rs");
    }

    #[test]
    fn dot_dot_applies_after_the_symlink_before_it() {
        let (_d, root) = root();
        let outside = tempfile::tempdir().unwrap();
        let deep = outside.path().join("a/b/c");
        fs::create_dir_all(&deep).unwrap();
        fs::write(outside.path().join("a/b/secret"), "s").unwrap();
        symlink(&deep, root.join("link")).unwrap();
        // The kernel reads `link/../secret` as `/…/a/b/secret`, not `secret` in the root.
        assert!(refused(&root, "link/../secret", PathUse::Read).contains("symlink"));
        refused(&root, "link/../new", PathUse::Write);
        // A link inside the root with `..` after it resolves where the kernel goes.
        fs::create_dir_all(root.join("x/y")).unwrap();
        symlink(root.join("x/y"), root.join("in")).unwrap();
        let p = resolve(&root, None, "in/../z", PathUse::Read).unwrap();
        assert_eq!(p.rel, "x/z");
        // A loop is an error, not a hang.
        symlink("loop", root.join("loop")).unwrap();
        refused(&root, "loop/x", PathUse::Read);
    }

    #[test]
    fn dangling_symlink_is_refused() {
        let (_d, root) = root();
        symlink("/nonexistent-linggen-target", root.join("dangling")).unwrap();
        assert!(refused(&root, "dangling", PathUse::Write).contains("missing target"));
    }

    #[test]
    fn git_dir_writes_are_refused_reads_allowed() {
        let (_d, root) = root();
        fs::create_dir_all(root.join(".git/hooks")).unwrap();
        assert!(refused(&root, ".git/config", PathUse::Write).contains(".git"));
        refused(&root, ".git/hooks/pre-commit", PathUse::Write);
        refused(&root, "sub/.GIT/config", PathUse::Write);
        assert!(resolve(&root, None, ".git/config", PathUse::Read).is_ok());
        // A symlink pointing into .git is resolved first, so it is caught too.
        symlink(root.join(".git"), root.join("g")).unwrap();
        refused(&root, "g/config", PathUse::Write);
    }

    #[test]
    fn own_config_is_not_writable() {
        let (_d, root) = root();
        assert!(refused(&root, "linggen-agent.toml", PathUse::Write).contains("permission"));
        assert!(resolve(&root, None, "linggen-agent.toml", PathUse::Read).is_ok());
        assert!(resolve(&root, None, "docs/linggen-agent.toml", PathUse::Write).is_ok());
    }

    #[test]
    fn nonexistent_nested_path_inside_root_is_fine_for_writes() {
        let (_d, root) = root();
        let p = resolve(&root, None, "new/deep/dir/file.txt", PathUse::Write).unwrap();
        assert_eq!(p.abs, root.join("new/deep/dir/file.txt"));
        assert_eq!(p.rel, "new/deep/dir/file.txt");
    }

    #[test]
    fn empty_and_root_writes_are_refused() {
        let (_d, root) = root();
        assert!(refused(&root, "  ", PathUse::Read).contains("empty"));
        refused(&root, ".", PathUse::Write);
        refused(&root, "x\0y", PathUse::Read);
    }

    #[test]
    fn non_canonical_root_is_handled() {
        let (_d, root) = root();
        let link_parent = tempfile::tempdir().unwrap();
        let alias = link_parent.path().join("alias");
        symlink(&root, &alias).unwrap();
        let p = resolve(&alias, None, "src/main.rs", PathUse::Read).unwrap();
        assert_eq!(p.abs, root.join("src/main.rs"));
        let spelled = alias.join("src/main.rs");
        let p = resolve(&alias, None, spelled.to_str().unwrap(), PathUse::Read).unwrap();
        assert_eq!(p.rel, "src/main.rs");
    }
}
