//! Folder trust: which of a workspace's own grants the person accepted.
//!
//! Files that arrive with a workspace (a clone, a download, or the agent's own writes) can
//! grant power: `[permissions] mode = "bypass"` and `allow` rules in `<root>/linggen-agent.toml`,
//! rules in `.linggen/permissions.toml`, a project skill's or command's `allowed-tools`. Each
//! such grant
//! is one human-readable line, for example `allow Bash(cargo*) (linggen-agent.toml)`; a grant
//! has effect only when that exact line is stored here for the folder.
//!
//! The store is `$LINGGEN_HOME/trusted.toml`. It keeps the lines themselves, not a hash of
//! them, so a grant added later is visibly new (and ignored until accepted) while a grant
//! removed from the folder needs nothing. A store that does not parse trusts nothing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::PermissionMode;

/// The trust store's file name inside `$LINGGEN_HOME`.
pub const FILE: &str = "trusted.toml";

/// Written at the top of the store, for the person who opens it.
const HEADER: &str = "# Folders whose own files may grant linggen powers, and exactly which grants \
                      were accepted.\n# Managed by `linggen trust`; see doc/trust.md.\n";

/// A grant by the project's permission mode (`bypass`, `accept-edits`).
pub fn mode_grant(mode: PermissionMode, file: &str) -> String {
    format!("permission mode {} ({file})", mode.as_str())
}

/// A grant by a project allow rule.
pub fn allow_grant(rule: &str, file: &str) -> String {
    format!("allow {} ({file})", rule.trim())
}

/// A grant by a project skill's `allowed-tools` entry.
pub fn skill_grant(skill: &str, rule: &str, file: &str) -> String {
    format!("skill {skill}: allowed-tools {} ({file})", rule.trim())
}

/// A grant by a project command's `allowed-tools` entry (`.claude/commands/fix.md`). The
/// file is part of the line, so the same rule in another file is another grant.
pub fn command_grant(command: &str, rule: &str, file: &str) -> String {
    format!("command /{command}: allowed-tools {} ({file})", rule.trim())
}

/// A grant by a project `[tools]` setting that names a program or widens where a tool goes.
pub fn tools_grant(key: &str, value: &str, file: &str) -> String {
    format!("tools {key} {} ({file})", value.trim())
}

/// `path` relative to `root` for a grant line (`.linggen/skills/x/SKILL.md`), so that the
/// lines stay the same wherever the folder is checked out.
pub fn relative(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) => rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => path.display().to_string(),
    }
}

/// What the project's `linggen-agent.toml` would grant, held back by [`super::Config::load`]
/// until the person trusts it. Its restrictions are not here: they always apply.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Withheld {
    /// The file, relative to the root (for the grant lines).
    pub file: String,
    /// A mode looser than the person's own (`bypass`, `accept-edits`).
    pub mode: Option<PermissionMode>,
    pub allow: Vec<String>,
    /// `[tools] chromium`: a program linggen would run.
    pub chromium: Option<String>,
    /// `[tools] screenshot_hosts`: more hosts a screenshot may open.
    pub screenshot_hosts: Vec<String>,
    /// `[checks] allow`: commands a check would run without asking.
    pub checks: Vec<String>,
    /// `[[models]]` entries' `api_key_env`: which secret goes to which server.
    pub model_keys: Vec<ModelKey>,
    /// `[[models]]` entries on servers elsewhere that the person's own configuration does
    /// not use: the conversation would go there.
    pub models: Vec<super::ModelConfig>,
}

/// A verification command a check (`/check`, an agent's `checks:`) runs without asking.
fn check_grant(command: &str, file: &str) -> String {
    format!("[checks] allow: runs `{command}` without asking ({file})")
}

/// A grant by a project model on a server elsewhere: where the conversation would go, with
/// which secret.
pub fn model_grant(model: &super::ModelConfig, file: &str) -> String {
    let secret = match model.api_key_env.as_deref() {
        Some(super::model::BEDROCK_KEY_ENV) => " with your AWS credentials".to_string(),
        Some(env) => format!(" with ${env}"),
        None => String::new(),
    };
    format!(
        "model {}: sends the conversation to {}{secret} ({file})",
        model.id,
        model.servers().join(", ")
    )
}

/// A project model entry's key variable, withheld from the entry until trusted.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelKey {
    pub id: String,
    pub env: String,
    pub url: String,
}

impl ModelKey {
    fn grant(&self, file: &str) -> String {
        if self.env == super::model::BEDROCK_KEY_ENV {
            return format!(
                "model {}: sends requests signed with your AWS credentials to {} ({file})",
                self.id, self.url
            );
        }
        format!(
            "model {}: sends ${} to {} ({file})",
            self.id, self.env, self.url
        )
    }
}

impl Withheld {
    /// One line per grant.
    pub fn grants(&self) -> Vec<String> {
        let file = self.file.as_str();
        let mut grants: Vec<String> = self.mode.map(|m| mode_grant(m, file)).into_iter().collect();
        grants.extend(self.allow.iter().map(|r| allow_grant(r, file)));
        grants.extend(
            self.chromium
                .iter()
                .map(|c| tools_grant("chromium", c, file)),
        );
        grants.extend(
            self.screenshot_hosts
                .iter()
                .map(|h| tools_grant("screenshot_hosts", h, file)),
        );
        grants.extend(self.checks.iter().map(|c| check_grant(c, file)));
        grants.extend(self.model_keys.iter().map(|k| k.grant(file)));
        grants.extend(self.models.iter().map(|m| model_grant(m, file)));
        grants
    }
}

impl super::Config {
    /// Applies the withheld grants whose lines are in `accepted`; the rest stay withheld.
    /// Applying twice is harmless.
    pub fn apply_trusted(&mut self, accepted: &BTreeSet<String>) {
        self.apply_trusted_claude(accepted);
        let file = self.withheld.file.clone();
        let withheld = &self.withheld;
        if let Some(mode) = withheld.mode
            && accepted.contains(&mode_grant(mode, &file))
        {
            self.permission_mode = mode;
            self.origins
                .insert("permission_mode", format!("{file} (trusted)"));
        }
        for rule in &withheld.allow {
            if accepted.contains(&allow_grant(rule, &file)) && !self.allow.contains(rule) {
                self.allow.push(rule.clone());
            }
        }
        if let Some(chromium) = &withheld.chromium
            && accepted.contains(&tools_grant("chromium", chromium, &file))
        {
            self.screenshot.chromium = Some(chromium.clone());
            self.origins.insert("chromium", format!("{file} (trusted)"));
        }
        for check in &withheld.checks {
            if accepted.contains(&check_grant(check, &file))
                && !self.auto.checks_allowed.contains(check)
            {
                self.auto.checks_allowed.push(check.clone());
                self.origins.insert("checks", format!("{file} (trusted)"));
            }
        }
        for key in &withheld.model_keys {
            let entry = self
                .models
                .iter_mut()
                .find(|m| m.id == key.id && m.url == key.url);
            if let Some(model) = entry
                && accepted.contains(&key.grant(&file))
            {
                model.api_key_env = Some(key.env.clone());
            }
        }
        for model in &withheld.models {
            if accepted.contains(&model_grant(model, &file)) {
                match self.models.iter_mut().find(|m| m.id == model.id) {
                    Some(existing) => *existing = model.clone(),
                    None => self.models.push(model.clone()),
                }
            }
        }
        for host in &withheld.screenshot_hosts {
            if accepted.contains(&tools_grant("screenshot_hosts", host, &file))
                && !self.screenshot.hosts.contains(host)
            {
                self.screenshot.hosts.push(host.clone());
                self.origins
                    .insert("screenshot_hosts", format!("{file} (trusted)"));
            }
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreFile {
    #[serde(default)]
    folder: Vec<Folder>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Folder {
    path: String,
    #[serde(default)]
    grants: Vec<String>,
}

/// Why the trust store could not be read or changed. A store that cannot be read means
/// "nothing trusted" to its readers, never "trusted".
#[derive(Debug, thiserror::Error)]
pub enum TrustStoreError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file does not parse: its path, the line and what is wrong.
    #[error("{}:{line}: {message}", path.display())]
    Broken {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A change was refused because the store could not be read first: a broken store is
    /// not silently replaced (the person may have edited it).
    #[error("{0}; fix or remove the file, then try again")]
    Unchanged(Box<TrustStoreError>),
    #[error("cannot create {}: {source}", path.display())]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot save {}: {reason} — the folder trust is as it was", path.display())]
    Save { path: PathBuf, reason: String },
}

/// `$LINGGEN_HOME/trusted.toml`.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
}

impl TrustStore {
    pub fn new(linggen_home: &Path) -> TrustStore {
        TrustStore {
            path: linggen_home.join(FILE),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The grants accepted for `root` (canonical). A missing store or folder means none; a
    /// store that does not parse is an error naming the file and line, which callers treat
    /// as "nothing trusted" — never as trusted.
    pub fn accepted(&self, root: &Path) -> Result<BTreeSet<String>, TrustStoreError> {
        let key = root.display().to_string();
        Ok(self
            .read()?
            .folder
            .into_iter()
            .filter(|f| f.path == key)
            .flat_map(|f| f.grants)
            .collect())
    }

    /// Records `grants` as the folder's accepted list, replacing what was there: trusting
    /// the folder as it is now.
    pub fn trust(&self, root: &Path, grants: &[String]) -> Result<(), TrustStoreError> {
        self.update(root, |accepted| {
            accepted.clear();
            accepted.extend(grants.iter().cloned());
        })
    }

    /// Adds one grant to the folder's accepted list (a rule the person approved with "always
    /// in this project" is theirs, not the folder's).
    pub fn add(&self, root: &Path, grant: &str) -> Result<(), TrustStoreError> {
        self.update(root, |accepted| {
            accepted.insert(grant.to_string());
        })
    }

    /// Forgets the folder; returns whether it was there.
    pub fn revoke(&self, root: &Path) -> Result<bool, TrustStoreError> {
        let mut present = false;
        self.update(root, |accepted| {
            present = !accepted.is_empty();
            accepted.clear();
        })?;
        Ok(present)
    }

    fn update(
        &self,
        root: &Path,
        change: impl FnOnce(&mut BTreeSet<String>),
    ) -> Result<(), TrustStoreError> {
        let key = root.display().to_string();
        let mut file = self
            .read()
            .map_err(|e| TrustStoreError::Unchanged(Box::new(e)))?;
        let mut accepted: BTreeSet<String> = file
            .folder
            .iter()
            .filter(|f| f.path == key)
            .flat_map(|f| f.grants.iter().cloned())
            .collect();
        change(&mut accepted);
        file.folder.retain(|f| f.path != key);
        if !accepted.is_empty() {
            file.folder.push(Folder {
                path: key,
                grants: accepted.into_iter().collect(),
            });
        }
        file.folder.sort_by(|a, b| a.path.cmp(&b.path));
        self.write(&file)
    }

    fn read(&self) -> Result<StoreFile, TrustStoreError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(StoreFile::default()),
            Err(source) => {
                return Err(TrustStoreError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        toml::from_str::<Spanned<StoreFile>>(&text)
            .map(Spanned::into_inner)
            .map_err(|e| {
                let line = e.span().map_or(1, |s| {
                    text[..s.start.min(text.len())].matches('\n').count() + 1
                });
                TrustStoreError::Broken {
                    path: self.path.clone(),
                    line,
                    message: e.message().trim_end().to_string(),
                }
            })
    }

    fn write(&self, file: &StoreFile) -> Result<(), TrustStoreError> {
        use std::os::unix::fs::DirBuilderExt as _;

        let mut text = HEADER.to_string();
        for folder in &file.folder {
            text.push_str(&format!(
                "\n[[folder]]\npath = {}\ngrants = [\n",
                toml::Value::String(folder.path.clone())
            ));
            for grant in &folder.grants {
                text.push_str(&format!("    {},\n", toml::Value::String(grant.clone())));
            }
            text.push_str("]\n");
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|source| TrustStoreError::CreateDir {
                    path: dir.to_path_buf(),
                    source,
                })?;
        }
        // Durable and private: a crash or a full disk never leaves half a store, and the
        // store is never readable by other users (it decides what runs).
        crate::durable::replace(
            &self.path,
            text.as_bytes(),
            crate::durable::Options::private(),
        )
        .map_err(|e| TrustStoreError::Save {
            path: self.path.clone(),
            reason: e.reason(),
        })
    }
}

#[cfg(test)]
#[path = "trust_tests.rs"]
mod tests;
