//! Where things live: `$LINGGEN_HOME` and the workspace root.

use std::path::{Path, PathBuf};

use super::ConfigError;

/// `$LINGGEN_HOME`, else `~/.linggen`.
pub fn linggen_home() -> Result<PathBuf, ConfigError> {
    if let Some(home) = std::env::var_os("LINGGEN_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".linggen")),
        None => Err(ConfigError::Usage(
            "neither LINGGEN_HOME nor HOME is set; set LINGGEN_HOME to a directory for linggen's data"
                .into(),
        )),
    }
}

/// The workspace root: `--root` if given (it must exist), else the nearest ancestor of `cwd`
/// holding `.git`, else `cwd` itself. Always canonical, so every later containment check
/// compares like with like.
pub fn workspace_root(flag: Option<&Path>, cwd: &Path) -> Result<PathBuf, ConfigError> {
    if let Some(root) = flag {
        let joined = cwd.join(root);
        return match joined.canonicalize() {
            Ok(p) if p.is_dir() => Ok(p),
            Ok(_) => Err(ConfigError::Usage(format!(
                "--root {}: not a directory",
                root.display()
            ))),
            Err(e) => Err(ConfigError::Usage(format!(
                "--root {}: {e}; pass an existing directory",
                root.display()
            ))),
        };
    }
    let cwd = cwd.canonicalize().map_err(|e| {
        ConfigError::Usage(format!(
            "cannot use the current directory {}: {e}",
            cwd.display()
        ))
    })?;
    let found = cwd.ancestors().find(|dir| dir.join(".git").exists());
    Ok(found.unwrap_or(&cwd).to_path_buf())
}

/// What to tell the person when the root is their home directory or `/`: the agent's file
/// tools then reach every project and dotfile below it. Said once, at start; the secret
/// stores and `$LINGGEN_HOME` stay hidden whatever the root.
pub fn broad_root_warning(root: &Path, home: Option<&Path>) -> Option<String> {
    let is_home = home
        .and_then(|h| h.canonicalize().ok())
        .is_some_and(|h| h == root);
    let what = if root == Path::new("/") {
        "/, the whole file system"
    } else if is_home {
        "your home directory"
    } else {
        return None;
    };
    Some(format!(
        "the workspace root is {what} ({}): the agent's tools can read every project and \
         dotfile below it (secret stores and $LINGGEN_HOME stay hidden); start linggen in a \
         project folder, or pass --root, to confine it to one project",
        root.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_nearest_git_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(base.join("repo/.git")).unwrap();
        std::fs::create_dir_all(base.join("repo/src/deep")).unwrap();
        let root = workspace_root(None, &base.join("repo/src/deep")).unwrap();
        assert_eq!(root, base.join("repo"));
    }

    #[test]
    fn root_without_git_is_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        assert_eq!(workspace_root(None, &base).unwrap(), base);
    }

    #[test]
    fn root_flag_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let err = workspace_root(Some(Path::new("nope")), dir.path()).unwrap_err();
        assert!(err.to_string().contains("--root nope"), "{err}");
    }

    #[test]
    fn a_root_at_home_or_slash_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        let warning = broad_root_warning(&home, Some(dir.path())).unwrap();
        assert!(warning.contains("your home directory"), "{warning}");
        let slash = broad_root_warning(Path::new("/"), Some(&home)).unwrap();
        assert!(slash.contains("the whole file system"), "{slash}");
        assert_eq!(broad_root_warning(&home.join("project"), Some(&home)), None);
        assert_eq!(broad_root_warning(&home, None), None);
    }
}
