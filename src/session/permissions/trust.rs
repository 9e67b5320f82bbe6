//! Folder trust inside a session: which of the workspace's own grants hold (see
//! [`crate::config::trust`]), every grant the workspace's files make, and the paths whose
//! writes would change those grants.
//!
//! Agents make no grants: an agent's `tools` and `policy` only narrow what the model is
//! offered (without `tools` an agent is offered every tool), `work_globs` only narrows where
//! it writes, and `model` only picks among the person's configured models. Every call an
//! agent makes still goes through the permission check, so a project agent needs no trust.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::project;
use crate::config::Config;
use crate::config::trust::{self, TrustStore, TrustStoreError};
use crate::skills::{Skill, SkillKind, SkillSet, SkillSource};

/// The grants of one workspace that the person accepted.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    root: PathBuf,
    /// Where an accepted grant is saved; `None` saves nothing (tests, or no home).
    store: Option<TrustStore>,
    accepted: BTreeSet<String>,
}

impl Trust {
    pub fn new(root: &Path, store: Option<TrustStore>, accepted: BTreeSet<String>) -> Trust {
        Trust {
            root: root.to_path_buf(),
            store,
            accepted,
        }
    }

    pub fn accepted(&self) -> &BTreeSet<String> {
        &self.accepted
    }

    pub fn is_accepted(&self, grant: &str) -> bool {
        self.accepted.contains(grant)
    }

    /// A skill's (or command's) `allowed-tools`, split into the entries that hold and the
    /// grant lines of those that do not (yet). Only project skills and commands need trust:
    /// personal, `~/.claude`, `~/.codex` and built-in ones are the person's own.
    pub fn skill_rules<'a>(&self, skill: &'a Skill) -> (Vec<&'a str>, Vec<String>) {
        if skill.source != SkillSource::Project {
            return (
                skill.allowed_tools.iter().map(String::as_str).collect(),
                Vec::new(),
            );
        }
        let file = trust::relative(&self.root, Path::new(&skill.path));
        let mut held = Vec::new();
        let mut ignored = Vec::new();
        for rule in &skill.allowed_tools {
            let grant = match skill.kind {
                SkillKind::Skill => trust::skill_grant(&skill.name, rule, &file),
                SkillKind::Command => trust::command_grant(&skill.name, rule, &file),
            };
            if self.accepted.contains(&grant) {
                held.push(rule.as_str());
            } else {
                ignored.push(grant);
            }
        }
        (held, ignored)
    }

    /// The same trust with the accepted grants read again from the store: a `p` answer in
    /// an earlier session of this process, or `linggen trust` elsewhere, has added to it.
    /// A store that no longer reads keeps what was accepted before.
    pub fn reloaded(&self) -> Trust {
        let mut trust = self.clone();
        if let Some(accepted) = self
            .store
            .as_ref()
            .and_then(|s| s.accepted(&self.root).ok())
        {
            trust.accepted = accepted;
        }
        trust
    }

    /// A rule the person just approved with "always in this project" is theirs: it is
    /// accepted at once and saved as accepted, so the next start does not ask about it.
    pub(in crate::session) fn accept_project_rule(
        &mut self,
        rule: &str,
    ) -> Result<(), TrustStoreError> {
        let grant = project_rule_grant(rule);
        if let Some(store) = &self.store {
            store.add(&self.root, &grant)?;
        }
        self.accepted.insert(grant);
        Ok(())
    }
}

/// The grant line of a rule in `.linggen/permissions.toml`.
pub fn project_rule_grant(rule: &str) -> String {
    trust::allow_grant(rule, project::FILE)
}

/// Every grant the workspace's own files make, sorted: the project config's (withheld by
/// [`Config::load`]), `.linggen/permissions.toml`'s, and project skills' and commands'
/// `allowed-tools`.
pub fn workspace_grants(
    config: &Config,
    root: &Path,
    project_rules: &[String],
    skills: &SkillSet,
    other: &[String],
) -> Vec<String> {
    let mut grants: BTreeSet<String> = config.withheld.grants().into_iter().collect();
    grants.extend(other.iter().cloned());
    grants.extend(project_rules.iter().map(|r| project_rule_grant(r)));
    let untrusted = Trust::new(root, None, BTreeSet::new());
    for skill in &skills.skills {
        grants.extend(untrusted.skill_rules(skill).1);
    }
    grants.into_iter().collect()
}

/// A workspace's grants and which of them the person accepted, as read at start.
#[derive(Debug, Clone)]
pub struct FolderTrust {
    /// Every grant the workspace's files make now, sorted.
    pub grants: Vec<String>,
    pub trust: Trust,
    /// The store did not parse or could not be read; nothing is trusted.
    pub warning: Option<String>,
}

impl FolderTrust {
    /// Reads the store and the workspace's grants. `project_rules` are those of
    /// `.linggen/permissions.toml` (a broken file stops start-up elsewhere); `other` are
    /// grants read elsewhere (the workspace's MCP servers).
    pub fn load(
        linggen_home: &Path,
        root: &Path,
        config: &Config,
        project_rules: &[String],
        skills: &SkillSet,
        other: &[String],
    ) -> FolderTrust {
        let store = TrustStore::new(linggen_home);
        let (accepted, warning) = match store.accepted(root) {
            Ok(accepted) => (accepted, None),
            Err(e) => (
                BTreeSet::new(),
                Some(format!("{e}; no folder is trusted until it is fixed")),
            ),
        };
        FolderTrust {
            grants: workspace_grants(config, root, project_rules, skills, other),
            trust: Trust::new(root, Some(store), accepted),
            warning,
        }
    }

    /// The grants that have no effect because the person has not accepted them.
    pub fn untrusted(&self) -> Vec<&str> {
        self.grants
            .iter()
            .filter(|g| !self.trust.is_accepted(g))
            .map(String::as_str)
            .collect()
    }

    /// One line for a frontend that cannot ask (`-p`, `linggen serve`), or `None` when
    /// every grant is accepted.
    pub fn note(&self) -> Option<String> {
        let untrusted = self.untrusted();
        (!untrusted.is_empty()).then(|| {
            format!(
                "this folder is not trusted, so these grants are ignored: {}; run `linggen \
                 trust` to review and accept them",
                untrusted.join("; ")
            )
        })
    }

    /// Accepts every current grant: saves them to the store and applies them from now on.
    pub fn trust_all(&mut self) -> Result<(), TrustStoreError> {
        if let Some(store) = &self.trust.store {
            store.trust(&self.trust.root, &self.grants)?;
        }
        self.trust.accepted = self.grants.iter().cloned().collect();
        self.warning = None;
        Ok(())
    }
}

/// Folders whose files change what the workspace grants (skills' and commands'
/// `allowed-tools`, agents' `tools`), and the files that hold permissions. A write there
/// always needs a person.
const GRANT_FOLDERS: &[&str] = &[
    ".linggen/skills/",
    ".agents/skills/",
    ".linggen/agents/",
    "agents/",
    ".linggen/commands/",
    ".claude/commands/",
];
const GRANT_FILES: &[&str] = &[
    crate::config::CONFIG_FILE,
    project::FILE,
    ".mcp.json",
    // Hooks (programs to run) and Claude Code's permission rules.
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".linggen/settings.json",
];

/// Whether writing `rel` (relative to the root, `/`-separated) could change what the
/// workspace grants. Compared without case, as macOS and Windows file systems do.
pub fn is_grant_path(rel: &str) -> bool {
    let rel = normalize(rel).to_ascii_lowercase();
    GRANT_FILES.iter().any(|f| rel == *f)
        || GRANT_FOLDERS
            .iter()
            .any(|dir| rel.starts_with(dir) || format!("{rel}/") == *dir)
}

/// `./a//b/../c` → `a/c`: the spelling a command may use for a root-relative path.
fn normalize(rel: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}

/// Whether a file a shell command writes (as written in the command, relative to a working
/// directory an earlier `cd` may have changed) could be a grant path. Without the working
/// directory the spelling alone decides, so any `skills`, `agents` or `.claude` folder on
/// the way, or a file named like a permissions file, counts: a needless question at worst.
pub fn is_grant_target(target: &str) -> bool {
    let target = normalize(target).to_ascii_lowercase();
    let mut parts: Vec<&str> = target.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    is_grant_path(&target)
        || parts
            .iter()
            .any(|p| matches!(*p, "skills" | "agents" | ".linggen" | ".agents" | ".claude"))
        || name == crate::config::CONFIG_FILE
        || name == "permissions.toml"
        || name == "skill.md"
}

/// Why a write to a grant path asks each time, for the approval and for `-p`'s denial.
pub fn grant_path_reason(rel: &str) -> String {
    format!(
        "`{rel}` can grant the agent powers (skills' and commands' allowed-tools, agents, \
         permission rules, hooks), so each write there needs the person's approval, in every mode"
    )
}

#[cfg(test)]
#[path = "trust_tests.rs"]
mod tests;
