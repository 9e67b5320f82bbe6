//! Agents: markdown files whose frontmatter says what the agent may do and whose body is its
//! system prompt. Shipped ones (`ling`, `coder`) are embedded from the top-level `agents/`;
//! `<root>/agents`, `<root>/.linggen/agents` and `$LINGGEN_HOME/agents` add or override.
//! The gates here are hard: a tool outside `tools` is never offered and refused if called;
//! a write outside `work_globs` is refused.
//! The format, folders and gates are described in `doc/agents.md`.

mod discover;
pub mod edit;
mod parse;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::tools::{ToolId, ToolName};

pub use discover::builtin_sources;
pub use parse::{DEFAULT_CAPABILITIES, canonical_tool};

/// Where an agent file was found, highest priority first (the earlier wins on a clash).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AgentSource {
    /// `$LINGGEN_HOME/agents/*.md`
    Personal,
    /// `<root>/.linggen/agents/*.md`
    ProjectHidden,
    /// `<root>/agents/*.md`
    Project,
    /// Shipped in the binary.
    Builtin,
}

impl AgentSource {
    pub fn label(self) -> &'static str {
        match self {
            AgentSource::Personal => "personal",
            AgentSource::ProjectHidden => "project (.linggen)",
            AgentSource::Project => "project",
            AgentSource::Builtin => "built-in",
        }
    }
}

/// A capability an agent's `policy` grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Capability {
    /// May change files (`Write`, `Edit`, `apply_patch`, auto mode's `patch` action).
    Patch,
    /// May end its run with a final answer (auto mode's `finalize_task`).
    Finalize,
    /// May hand tasks to other agents (`delegate_to_agent`).
    Delegate,
}

/// Which tools an agent may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolAllow {
    All,
    /// Canonical tool names.
    Only(Vec<String>),
}

#[derive(Debug, Clone)]
pub struct AgentSpec {
    pub name: String,
    pub description: String,
    pub tools: ToolAllow,
    pub model: Option<String>,
    /// Globs (relative to the root) where `Write`/`Edit` may write; empty = anywhere.
    pub work_globs: Vec<String>,
    work_matcher: Option<globset::GlobSet>,
    pub capabilities: Vec<Capability>,
    /// `None`: any agent; `Some(list)`: only these.
    pub delegate_targets: Option<Vec<String>>,
    /// `mode:` the mode its runs use unless the person chose one (`/mode`, `--mode`).
    pub mode: Option<crate::config::TurnMode>,
    /// `checks:` commands run after each patch in auto mode (`cargo test`); a failing one is
    /// the next observation.
    pub checks: Vec<String>,
    /// `skills:` the skills the model sees and may invoke in this agent's runs; `None`: all.
    pub skills: Option<Vec<String>>,
    /// The line of `skills:` in the file, for the warning about a name no skill has.
    skills_line: usize,
    /// The system prompt (the markdown body).
    pub prompt: String,
    pub path: String,
    pub source: AgentSource,
    pub extra: BTreeMap<String, serde_yaml::Value>,
}

impl AgentSpec {
    /// Whether `tool` (canonical name) is offered to and usable by this agent, counting the
    /// policy: `Write`/`Edit`/`apply_patch` need `Patch`, `delegate_to_agent` needs `Delegate`.
    pub fn allows_tool(&self, tool: ToolName) -> bool {
        self.allows(&ToolId::Builtin(tool))
    }

    /// [`AgentSpec::allows_tool`] for any tool: a registered one (an MCP server's) must be
    /// listed by name or pattern (`mcp__github__*`, `mcp__github`) unless the agent has all.
    pub fn allows(&self, tool: &ToolId) -> bool {
        // Only finds tools (each found tool is still gated by this list when called).
        if tool.name() == crate::tools::tool_search::NAME {
            return true;
        }
        // Reading and stopping background commands comes with `Bash`, which starts them.
        let also = match tool.builtin() {
            Some(ToolName::BashOutput | ToolName::KillShell) => Some(ToolName::Bash.name()),
            _ => None,
        };
        let listed = match &self.tools {
            ToolAllow::All => true,
            ToolAllow::Only(names) => names.iter().any(|n| {
                crate::tools::registry::name_matches(n, tool.name())
                    || also.is_some_and(|bash| crate::tools::registry::name_matches(n, bash))
            }),
        };
        let Some(tool) = tool.builtin() else {
            return listed;
        };
        listed
            && match tool {
                t if t.changes_files() => self.capabilities.contains(&Capability::Patch),
                ToolName::Delegate => self.capabilities.contains(&Capability::Delegate),
                _ => true,
            }
    }

    /// Whether the model may see and invoke skill `name` in this agent's runs (`skills:`).
    pub fn allows_skill(&self, name: &str) -> bool {
        self.skills
            .as_ref()
            .is_none_or(|listed| listed.iter().any(|s| s == name))
    }

    /// Everything the file defines, as one comparable string: two readings of an agent
    /// with equal fingerprints behave alike (a file saved unchanged is no change).
    pub fn fingerprint(&self) -> String {
        format!(
            "{:?} {:?}",
            (
                &self.name,
                &self.description,
                &self.tools,
                &self.model,
                &self.work_globs,
                &self.capabilities,
                &self.delegate_targets,
            ),
            (
                &self.mode,
                &self.checks,
                &self.skills,
                &self.prompt,
                &self.path,
                &self.extra,
            )
        )
    }

    /// `Err(why)` when `rel` (relative to the root) is outside `work_globs`.
    pub fn check_write(&self, rel: &str) -> Result<(), String> {
        match &self.work_matcher {
            Some(m) if !m.is_match(rel) => Err(format!(
                "agent `{}` may only write to {}; `{rel}` is outside",
                self.name,
                self.work_globs.join(", ")
            )),
            _ => Ok(()),
        }
    }

    /// `Err(why)` when this agent may not delegate to `target`.
    pub fn check_delegate(&self, target: &str) -> Result<(), String> {
        if !self.capabilities.contains(&Capability::Delegate) {
            return Err(format!(
                "agent `{}` has no Delegate policy, so it cannot delegate",
                self.name
            ));
        }
        match &self.delegate_targets {
            Some(targets) if !targets.iter().any(|t| t == target) => Err(format!(
                "agent `{}` may only delegate to {}",
                self.name,
                targets.join(", ")
            )),
            _ => Ok(()),
        }
    }
}

/// The folders agents are discovered in.
#[derive(Debug, Clone)]
pub struct AgentDirs {
    pub linggen_home: PathBuf,
    pub root: PathBuf,
}

#[derive(Debug, Clone, Default)]
pub struct AgentSet {
    /// Sorted by name, one per name.
    pub agents: Vec<AgentSpec>,
    pub warnings: Vec<String>,
}

impl AgentSet {
    /// Reads every agent folder (see [`AgentSource`] for the order) plus the built-ins.
    /// Never fails: a broken file or unreadable folder becomes one line in `warnings`,
    /// `<path>:<line>: <what is wrong>; <what to do>`, and everything else still loads.
    pub fn discover(dirs: &AgentDirs) -> AgentSet {
        discover::discover(dirs)
    }

    pub fn get(&self, name: &str) -> Option<&AgentSpec> {
        self.agents.iter().find(|a| a.name == name)
    }

    pub fn names(&self) -> Vec<String> {
        self.agents.iter().map(|a| a.name.clone()).collect()
    }

    /// One warning per `skills:` entry that names no skill in `skills`: the agent loads
    /// and sees the others (a skill may be added later; the entry then takes effect).
    /// Agents and skills are discovered apart, so this is asked with both in hand.
    pub fn unknown_skill_warnings(&self, skills: &crate::skills::SkillSet) -> Vec<String> {
        let mut warnings = Vec::new();
        for agent in &self.agents {
            for name in agent.skills.iter().flatten() {
                if skills.get(name).is_none() {
                    warnings.push(format!(
                        "{}:{}: agent `{}` lists skill `{name}`, which does not exist, so the \
                         agent has one skill fewer; add the skill or remove it from `skills:`",
                        agent.path, agent.skills_line, agent.name
                    ));
                }
            }
        }
        warnings
    }

    /// One line per agent that `self` (a new reading) adds, changes or removes compared
    /// with `before`, by name: `agent reviewer added (/home/me/.linggen/agents/reviewer.md)`.
    pub fn changes_since(&self, before: &AgentSet) -> Vec<String> {
        let mut lines = Vec::new();
        for agent in &self.agents {
            match before.get(&agent.name) {
                None => lines.push(format!("agent {} added ({})", agent.name, agent.path)),
                Some(old) if old.fingerprint() != agent.fingerprint() => {
                    lines.push(format!("agent {} changed ({})", agent.name, agent.path));
                }
                Some(_) => {}
            }
        }
        for old in &before.agents {
            if self.get(&old.name).is_none() {
                lines.push(format!("agent {} removed ({} is gone)", old.name, old.path));
            }
        }
        lines
    }

    /// The three on-disk agent folders (existing or not), for live reload.
    pub fn watch_dirs(dirs: &AgentDirs) -> Vec<PathBuf> {
        discover::roots(dirs)
            .into_iter()
            .map(|(path, _)| path)
            .collect()
    }
}

impl crate::skills::live::Discover for AgentSet {
    type Dirs = AgentDirs;

    fn discover(dirs: &AgentDirs) -> AgentSet {
        AgentSet::discover(dirs)
    }

    fn watch_dirs(dirs: &AgentDirs) -> Vec<PathBuf> {
        AgentSet::watch_dirs(dirs)
    }

    fn warnings(&self) -> &[String] {
        &self.warnings
    }
}
