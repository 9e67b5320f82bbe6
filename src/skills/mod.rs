//! Skills: `SKILL.md` files (the Agent Skills standard, Claude-Code compatible) found in the
//! person's, the project's and the compat folders plus the built-ins shipped in `skills/`.
//! Only names and descriptions reach the model up front; a skill's body is loaded when the
//! person (`/name args`) or the model (`Skill` tool) invokes it.
//! Custom commands in Claude Code's format (`.claude/commands/**/*.md` and the like) load
//! as skills of the kind [`SkillKind::Command`], so invocation, arguments, completion and
//! live reload are the same code. The format, folders and rules are described in
//! `doc/skills.md` and `doc/commands.md`.

pub(crate) mod commands;
pub(crate) mod discover;
pub mod frontmatter;
pub mod live;
mod parse;
mod render;

pub use discover::builtin_sources;
pub use frontmatter::validate_name;
pub use parse::{MAX_DESCRIPTION_CHARS, SkillOrigin, split_rules};
pub use render::split_words;

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where a skill was found, highest priority first: on a name clash between skills the
/// earlier wins. Commands use the same sources in their own order (see
/// [`commands::roots`]); which wins between a skill and a command is [`discover`]'s rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SkillSource {
    /// `$LINGGEN_HOME/skills/<name>/`, or a command in `$LINGGEN_HOME/commands/`.
    Personal,
    /// `<root>/.linggen/skills/<name>/` or `<root>/.agents/skills/<name>/`, or a command
    /// in `<root>/.linggen/commands/` or `<root>/.claude/commands/`: these came with the
    /// workspace, so what they grant needs the person's trust.
    Project,
    /// `~/.claude/skills/<name>/`, or a command in `~/.claude/commands/`.
    Claude,
    /// `~/.codex/skills/<name>/`
    Codex,
    /// Shipped in the binary (top-level `skills/`).
    Builtin,
}

impl SkillSource {
    pub fn label(self) -> &'static str {
        match self {
            SkillSource::Personal => "personal",
            SkillSource::Project => "project",
            SkillSource::Claude => "claude",
            SkillSource::Codex => "codex",
            SkillSource::Builtin => "built-in",
        }
    }
}

/// What a [`Skill`] was read from: a `SKILL.md` folder, or a custom command file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillKind {
    Skill,
    /// A command file (`fix-issue.md` → `/fix-issue`): only the person invokes it, and its
    /// `` !`cmd` `` lines run before the prompt is sent (see `doc/commands.md`).
    Command,
}

/// One parsed, validated skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub argument_hint: Option<String>,
    /// `disable-model-invocation: true` hides it from the model's catalog and `Skill` tool.
    pub disable_model_invocation: bool,
    /// `user-invocable: false` hides it from `/` and completion.
    pub user_invocable: bool,
    /// Permission rules (`Read`, `Bash(git diff:*)`) allowed without asking while the
    /// skill's turn runs.
    pub allowed_tools: Vec<String>,
    /// Routing hint: `local`, `cloud` or a model id.
    pub model: Option<String>,
    /// `context: fork`: run in an isolated sub-run whose result comes back.
    pub fork: bool,
    /// The agent that runs the skill.
    pub agent: Option<String>,
    /// A custom input prefix (`trigger: "!!"`) that routes to this skill.
    pub trigger: Option<String>,
    /// The markdown instructions after the frontmatter.
    pub body: String,
    /// The skill's directory on disk (supporting files live there); `None` for built-ins.
    pub dir: Option<PathBuf>,
    /// `SKILL.md`'s path for messages, e.g. `/home/me/.linggen/skills/x/SKILL.md` or
    /// `built-in skills/x/SKILL.md`.
    pub path: String,
    pub source: SkillSource,
    pub kind: SkillKind,
    /// Frontmatter fields this version does not know, kept as they were.
    pub extra: BTreeMap<String, serde_yaml::Value>,
}

/// The folders skills are discovered in.
#[derive(Debug, Clone)]
pub struct SkillDirs {
    /// `$LINGGEN_HOME`
    pub linggen_home: PathBuf,
    /// The workspace root.
    pub root: PathBuf,
    /// The person's home (for `~/.claude/skills`, `~/.codex/skills`, `~/.claude/commands`);
    /// `None` when unknown.
    pub user_home: Option<PathBuf>,
}

/// Every skill and command found, by name, plus the warnings about files that were skipped
/// and names that clash.
#[derive(Debug, Clone, Default)]
pub struct SkillSet {
    /// Sorted by name; one per name (the highest-priority source wins). Commands are here
    /// too, as [`SkillKind::Command`].
    pub skills: Vec<Skill>,
    /// One line per skipped file, unreadable folder or clash, naming the file (and line).
    pub warnings: Vec<String>,
}

impl SkillSet {
    /// Reads every skill folder (see [`SkillSource`] for the order) plus the built-ins.
    /// Never fails: a broken file or unreadable folder becomes one line in `warnings`,
    /// `<path>:<line>: <what is wrong>; <what to do>`, and everything else still loads.
    pub fn discover(dirs: &SkillDirs) -> SkillSet {
        discover::discover(dirs)
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// Skills the model may invoke.
    pub fn model_visible(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter().filter(|s| !s.disable_model_invocation)
    }

    /// Skills the person may invoke with `/name`.
    pub fn user_visible(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter().filter(|s| s.user_invocable)
    }

    /// The folders to watch for live reload (existing or not): the skill folders, then the
    /// command folders.
    pub fn watch_dirs(dirs: &SkillDirs) -> Vec<PathBuf> {
        let mut roots = discover::roots(dirs);
        roots.extend(commands::roots(dirs));
        discover::dedup_roots(&mut roots);
        roots.into_iter().map(|(path, _)| path).collect()
    }
}

impl live::Discover for SkillSet {
    type Dirs = SkillDirs;

    fn discover(dirs: &SkillDirs) -> SkillSet {
        SkillSet::discover(dirs)
    }

    fn watch_dirs(dirs: &SkillDirs) -> Vec<PathBuf> {
        SkillSet::watch_dirs(dirs)
    }

    fn warnings(&self) -> &[String] {
        &self.warnings
    }
}
