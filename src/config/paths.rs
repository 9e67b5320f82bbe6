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
}
