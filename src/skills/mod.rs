//! Skills: `SKILL.md` files (the Agent Skills standard, Claude-Code compatible) found in the
//! person's, the project's and the compat folders plus the built-ins shipped in `skills/`.
//! Only names and descriptions reach the model up front; a skill's body is loaded when the
//! person (`/name args`) or the model (`Skill` tool) invokes it.

pub mod frontmatter;
pub mod live;

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where a skill was found, highest priority first: on a name clash the earlier wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SkillSource {
    /// `$LINGGEN_HOME/skills/<name>/`
    Personal,
    /// `<root>/.linggen/skills/<name>/` or `<root>/.agents/skills/<name>/`
    Project,
    /// `~/.claude/skills/<name>/`
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
    /// Frontmatter fields this version does not know, kept as they were.
    pub extra: BTreeMap<String, serde_yaml::Value>,
}

impl Skill {
    /// The body with the person's or model's arguments substituted: `$ARGUMENTS` is the
    /// whole string, `$1`, `$2`… the whitespace-separated words (`$ARGUMENTS[0]`… too).
    /// When the body has no placeholder and `args` is not empty, the arguments are appended
    /// as a final `ARGUMENTS: …` line so they are never lost.
    pub fn render(&self, _args: &str) -> String {
        self.body.clone()
    }
}

/// The folders skills are discovered in.
#[derive(Debug, Clone)]
pub struct SkillDirs {
    /// `$LINGGEN_HOME`
    pub linggen_home: PathBuf,
    /// The workspace root.
    pub root: PathBuf,
    /// The person's home (for `~/.claude/skills`, `~/.codex/skills`); `None` when unknown.
    pub user_home: Option<PathBuf>,
}

/// Every skill found, by name, plus the warnings about files that were skipped.
#[derive(Debug, Clone, Default)]
pub struct SkillSet {
    /// Sorted by name; one per name (the highest-priority source wins).
    pub skills: Vec<Skill>,
    /// One line per skipped file or unreadable folder, naming the file (and line).
    pub warnings: Vec<String>,
}

impl SkillSet {
    pub fn discover(_dirs: &SkillDirs) -> SkillSet {
        SkillSet::default()
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

    /// The catalog for the model: one `- name: description` line per model-visible skill,
    /// cut (with a final `… and N more`) to stay within `max_chars`. Empty when there are
    /// no model-visible skills.
    pub fn catalog(&self, _max_chars: usize) -> String {
        String::new()
    }

    /// The folders to watch for live reload (existing or not).
    pub fn watch_dirs(_dirs: &SkillDirs) -> Vec<PathBuf> {
        Vec::new()
    }
}
