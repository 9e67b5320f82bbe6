//! Where linggen runs: its home, the workspace root, the effective configuration (only what
//! the person trusted of the folder's own files), and the agents and skills found there.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Failure, Start};
use crate::agents::{AgentDirs, AgentSet};
use crate::config::{self, Config, ConfigError};
use crate::session::UserMessage;
use crate::session::permissions::project;
use crate::session::permissions::trust::FolderTrust;
use crate::skills::live::Live;
use crate::skills::{SkillDirs, SkillSet};

/// Reads a line a person posted (`line`, from `from`) as the message it means, against the
/// current skills and agents, with its `@file` mentions attached from the root: the core's
/// line grammar ([`crate::session::line::message`]) with the shell's commands. Reads files.
pub type LineReader = fn(
    line: &str,
    from: &str,
    skills: &SkillSet,
    agents: Vec<String>,
    root: &Path,
) -> Result<UserMessage, crate::session::line::LineError>;

/// The warnings for skills and commands whose names the shell's built-in commands take
/// ([`crate::session::line::builtin_clashes`] with the shell's commands), supplied with
/// [`LineReader`] by whoever wires the frontends.
pub type BuiltinClashes = fn(skills: &SkillSet) -> Vec<String>;

/// Where linggen runs: its home, the workspace root, the effective configuration, and the
/// agents and skills found for it (shared by every session of this process).
pub struct Workspace {
    pub home: PathBuf,
    pub root: PathBuf,
    pub config: Config,
    pub agents: Arc<Live<AgentSet>>,
    pub skills: Arc<Live<SkillSet>>,
    /// What the workspace's own files grant and what of it the person trusted; `config`
    /// holds only the trusted part.
    pub trust: FolderTrust,
    /// How posted lines are read (see [`Start::line`]).
    pub line: LineReader,
    /// See [`Start::builtin_clashes`].
    pub builtin_clashes: BuiltinClashes,
    /// The MCP servers configured anywhere the person keeps them (and the workspace's own,
    /// which start only once trusted).
    pub mcp: Arc<crate::mcp::config::McpConfig>,
    /// Every hook found (the workspace's own run only once trusted).
    pub hooks: crate::hooks::HookSet,
}

impl Workspace {
    /// Follows agent and skill files as they change; returns warnings when watching fails
    /// (the sets then stay as discovered at start).
    pub fn watch_extensions(&self) -> Vec<String> {
        [self.agents.watch(), self.skills.watch()]
            .into_iter()
            .filter_map(Result::err)
            .map(|e| e.to_string())
            .collect()
    }

    /// Trusts every grant the folder makes now (`linggen trust`, the shell's question) and
    /// applies them to this process's configuration.
    pub fn trust_folder(&mut self) -> Result<(), crate::config::trust::TrustStoreError> {
        self.trust.trust_all()?;
        self.config.apply_trusted(self.trust.trust.accepted());
        Ok(())
    }

    /// A line a person posted as the message it means (see [`LineReader`]). Reads files:
    /// call it off the async runtime.
    pub fn read_line(
        &self,
        line: &str,
        from: &str,
    ) -> Result<UserMessage, crate::session::line::LineError> {
        let agents = self.agents.get().names();
        (self.line)(line, from, &self.skills.get(), agents, &self.root)
    }

    /// Warnings about agent, skill and command files that were skipped, and names that
    /// clash (with each other or with a built-in command).
    pub fn extension_warnings(&self) -> Vec<String> {
        let skills = self.skills.get();
        let agents = self.agents.get();
        let mut warnings = agents.warnings.clone();
        warnings.extend(agents.unknown_skill_warnings(&skills));
        warnings.extend(skills.warnings.iter().cloned());
        warnings.extend((self.builtin_clashes)(&skills));
        warnings
    }
}

pub fn load_workspace(start: &Start) -> Result<Workspace, Failure> {
    let home = config::paths::linggen_home()?;
    let cwd = std::env::current_dir()
        .map_err(|e| ConfigError::Usage(format!("cannot read the current directory: {e}")))?;
    let root = config::paths::workspace_root(start.root.as_deref(), &cwd)?;
    let user_home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    if let Some(warning) = config::paths::broad_root_warning(&root, user_home.as_deref()) {
        static WARNED: std::sync::Once = std::sync::Once::new();
        WARNED.call_once(|| eprintln!("linggen: warning: {warning}"));
    }
    let env = |name: &str| std::env::var(name).ok();
    let mut config = Config::load(&home, &root, &env, &start.overrides)?;
    for warning in &config.warnings {
        eprintln!("linggen: warning: {warning}");
    }
    let agents = Live::new(AgentDirs {
        linggen_home: home.clone(),
        root: root.clone(),
    });
    let mcp = crate::mcp::config::load(user_home.as_deref().unwrap_or(&home), &home, &root, &env);
    let hooks = crate::hooks::HookSet::load(user_home.as_deref(), &home, &root);
    for warning in &hooks.warnings {
        eprintln!("linggen: warning: {warning}");
    }
    for warning in &mcp.warnings {
        eprintln!("linggen: warning: {warning}");
    }
    let skills = Live::new(SkillDirs {
        linggen_home: home.clone(),
        root: root.clone(),
        user_home,
    });
    // Rules that do not parse are reported when the session starts.
    let project_rules = project::load(&root).unwrap_or_default();
    let mut other_grants = crate::mcp::servers::project_grants(&mcp, &root);
    other_grants.extend(hooks.project_grants(&root));
    other_grants.extend(config.claude_project.iter().flat_map(|c| c.grants()));
    let trust = FolderTrust::load(
        &home,
        &root,
        &config,
        &project_rules,
        &skills.get(),
        &other_grants,
    );
    if let Some(warning) = &trust.warning {
        eprintln!("linggen: warning: {warning}");
    }
    config.apply_trusted(trust.trust.accepted());
    let ws = Workspace {
        home,
        root,
        config,
        agents,
        skills,
        trust,
        line: start.line,
        builtin_clashes: start.builtin_clashes,
        mcp: Arc::new(mcp),
        hooks,
    };
    // A broken agent, skill or command file is skipped, and of two with one name one is
    // unreachable; the person hears which and why.
    for warning in ws.extension_warnings() {
        eprintln!("linggen: warning: {warning}");
    }
    Ok(ws)
}
