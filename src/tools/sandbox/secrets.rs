//! What the agent may not read, whoever reads it: the secret stores under the home
//! directory, `$LINGGEN_HOME`'s private part and `[sandbox] deny_read`. Commands meet the
//! list as empty mounts ([`super::Sandbox::hidden_paths`]); file tools (Read, Grep, Glob,
//! Write, Edit, patches) meet it as [`Secrets::hiding`], checked on the canonical path after
//! every symlink is followed. One list, so that a store hidden from `cat` is not handed out
//! by `Read`, and one setting opens a store to both.

use std::path::{Path, PathBuf};

/// Why a path is hidden, which decides what (if anything) opens it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HiddenKind {
    /// One of the built-in secret stores under the home directory (`~/.ssh`, `~/.aws`…).
    SecretStore,
    /// `$LINGGEN_HOME` except its skills, agents and themes: sessions, other projects'
    /// memory, trust, settings. Nothing opens it: what the agent could read there it could
    /// also use to grant itself powers.
    LinggenHome,
    /// Listed by the person in `[sandbox] deny_read`.
    DenyRead,
}

/// One hidden path and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiddenPath {
    pub path: PathBuf,
    pub kind: HiddenKind,
}

impl HiddenPath {
    /// One line: what the path is, and the setting that opens it (or that none does).
    pub fn explain(&self) -> String {
        let shown = tilde(&self.path);
        match self.kind {
            HiddenKind::SecretStore => format!(
                "{shown} is a secret store, hidden from the agent's tools and commands; a \
                 person can open it with [sandbox] allow_read = [\"{shown}\"] in \
                 $LINGGEN_HOME/linggen-agent.toml"
            ),
            HiddenKind::LinggenHome => format!(
                "{shown} is linggen's own data ($LINGGEN_HOME: sessions, memory, trust, \
                 settings), hidden from the agent's tools and commands; no setting opens it \
                 (its skills, agents and themes stay readable)"
            ),
            HiddenKind::DenyRead => format!(
                "{shown} is hidden from the agent's tools and commands by [sandbox] deny_read; \
                 a person can remove it from that list"
            ),
        }
    }
}

/// `~/x` for a path under the home directory, as a person writes it in the settings.
fn tilde(path: &Path) -> String {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let under = |home: &Path| path.strip_prefix(home).ok().map(Path::to_path_buf);
    let rest = home
        .as_deref()
        .and_then(|home| under(home).or_else(|| home.canonicalize().ok().and_then(|h| under(&h))));
    match rest {
        Some(rest) if !rest.as_os_str().is_empty() => format!("~/{}", rest.display()),
        _ => path.display().to_string(),
    }
}

/// The hidden paths as file tools compare against them: canonical (a store reached through
/// a symlinked home is still the store), and without those that contain the root (the
/// person chose to work there; hiding them would hide the workspace itself).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    hidden: Vec<HiddenPath>,
}

impl Secrets {
    /// Nothing hidden: for reads a person asked for themselves (`@file`).
    pub fn none() -> Secrets {
        Secrets::default()
    }

    pub(super) fn new(root: &Path, hidden: Vec<HiddenPath>) -> Secrets {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let hidden = hidden
            .into_iter()
            .map(|h| HiddenPath {
                path: canonical_lenient(&h.path),
                kind: h.kind,
            })
            .filter(|h| !root.starts_with(&h.path))
            .collect();
        Secrets { hidden }
    }

    /// The hidden path that contains `abs` (canonical, every symlink followed), if any:
    /// the one question every file tool asks before it reads or writes.
    pub fn hiding(&self, abs: &Path) -> Option<&HiddenPath> {
        self.hidden.iter().find(|h| abs.starts_with(&h.path))
    }

    /// The hidden paths below `base`, which a walk from `base` must not enter.
    pub fn under(&self, base: &Path) -> Vec<PathBuf> {
        self.hidden
            .iter()
            .filter(|h| h.path.starts_with(base))
            .map(|h| h.path.clone())
            .collect()
    }
}

/// `path` with its longest existing prefix canonicalized: `~/.ssh` that does not exist yet
/// is still the `.ssh` a later write would create under the real home.
fn canonical_lenient(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut current = path;
    loop {
        if let Ok(canonical) = current.canonicalize() {
            return rest
                .iter()
                .rev()
                .fold(canonical, |acc: PathBuf, name| acc.join(name));
        }
        match (current.parent(), current.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                current = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hidden(path: &Path, kind: HiddenKind) -> HiddenPath {
        HiddenPath {
            path: path.to_path_buf(),
            kind,
        }
    }

    #[test]
    fn a_store_inside_the_root_is_hidden_one_containing_it_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        let secrets = Secrets::new(
            &home,
            vec![
                hidden(&home.join(".ssh"), HiddenKind::SecretStore),
                hidden(&home.join(".aws"), HiddenKind::SecretStore),
                hidden(&home, HiddenKind::DenyRead),
            ],
        );
        let found = secrets.hiding(&home.join(".ssh/id_rsa")).unwrap();
        assert_eq!(found.kind, HiddenKind::SecretStore);
        // Not there yet: a write would create it, so it is hidden all the same.
        assert!(secrets.hiding(&home.join(".aws/credentials")).is_some());
        assert!(secrets.hiding(&home.join(".sshx")).is_none());
        assert!(secrets.hiding(&home.join("src/main.rs")).is_none());
        assert_eq!(secrets.under(&home).len(), 2);
        assert!(secrets.under(&home.join("src")).is_empty());
    }

    #[test]
    fn a_store_reached_through_a_symlink_is_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap().join("real");
        std::fs::create_dir_all(real.join(".aws")).unwrap();
        let alias = dir.path().join("alias");
        std::os::unix::fs::symlink(&real, &alias).unwrap();
        let secrets = Secrets::new(
            &real,
            vec![hidden(&alias.join(".aws"), HiddenKind::SecretStore)],
        );
        assert!(secrets.hiding(&real.join(".aws/credentials")).is_some());
    }

    #[test]
    fn each_kind_names_what_opens_it() {
        let store = hidden(Path::new("/nowhere/.aws"), HiddenKind::SecretStore).explain();
        assert!(
            store.contains("[sandbox] allow_read = [\"/nowhere/.aws\"]"),
            "{store}"
        );
        let own = hidden(Path::new("/lh/trust.toml"), HiddenKind::LinggenHome).explain();
        assert!(own.contains("no setting opens it"), "{own}");
        let denied = hidden(Path::new("/w/clients"), HiddenKind::DenyRead).explain();
        assert!(denied.contains("[sandbox] deny_read"), "{denied}");
        for line in [store, own, denied] {
            assert_eq!(line.lines().count(), 1, "{line}");
        }
    }
}
