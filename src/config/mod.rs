//! Configuration: defaults < `$LINGGEN_HOME/linggen-agent.toml` < `<root>/linggen-agent.toml`
//! < environment < flags. Each layer only overrides what it sets; `[[models]]` entries are
//! merged by `id` (a later layer's entry replaces an earlier one with the same id).

pub mod claude_settings;
mod file;
pub mod heartbeat;
mod mode;
pub mod model;
pub mod paths;
pub mod routing;
pub mod tools;
pub mod trust;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use mode::TurnMode;
pub use model::{ModelConfig, ProviderKind};

/// linggen's configuration file, in the root and in `$LINGGEN_HOME`.
pub const CONFIG_FILE: &str = "linggen-agent.toml";
pub const DEFAULT_MAX_ITERS: u32 = 100;

/// How much the agent may do without asking.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Reads run; `Write`, `Edit` and non-allowlisted `Bash` ask.
    #[default]
    Default,
    /// Writes inside the root run without asking.
    #[serde(alias = "acceptEdits")]
    AcceptEdits,
    /// Read-only: nothing that writes or runs unlisted programs.
    Plan,
    /// Everything but the safety floor runs without asking.
    #[serde(alias = "bypassPermissions")]
    Bypass,
}

impl PermissionMode {
    pub const NAMES: &'static str = "default, accept-edits, plan, bypass";

    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "default" => Some(Self::Default),
            "accept-edits" | "acceptEdits" => Some(Self::AcceptEdits),
            "plan" => Some(Self::Plan),
            "bypass" | "bypassPermissions" => Some(Self::Bypass),
            _ => None,
        }
    }

    /// How much runs without asking, for telling a loosening from a restriction: a project
    /// file may tighten the mode freely, but loosening it is a grant that needs trust.
    pub fn latitude(self) -> u8 {
        match self {
            Self::Plan => 0,
            Self::Default => 1,
            Self::AcceptEdits => 2,
            Self::Bypass => 3,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::AcceptEdits => "accept-edits",
            Self::Plan => "plan",
            Self::Bypass => "bypass",
        }
    }
}

/// A configuration problem. All of these are usage errors (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file that does not parse, or a value of the wrong kind; the message names the file,
    /// the line and what was expected.
    #[error("{path}: {message}")]
    File { path: PathBuf, message: String },
    #[error("{0}")]
    Usage(String),
}

/// Compact when three quarters of the window are used: the last quarter is room for the
/// answer and the next tool results (1,000 tokens on a 4k window, where a tool result may
/// take half of what is free).
pub const DEFAULT_COMPACT_AT: f64 = 0.75;

/// Delegation nests at most this deep by default: ling → coder → one more.
pub const DEFAULT_MAX_DELEGATION_DEPTH: u32 = 2;

/// The limits that stop a run before `max_iters` (`[auto]`), and the verification commands
/// that run without asking (`[checks] allow`, added to [`DEFAULT_CHECKS`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AutoSettings {
    /// Wall-clock budget of one run.
    pub max_minutes: Option<f64>,
    /// Tokens (prompt plus answer, every call added up) one run may use.
    pub max_tokens: Option<u64>,
    /// Auto mode: steps in a row that change no file before the run is stopped.
    pub max_steps_without_change: u32,
    /// The same call failing this many times in a row stops the run.
    pub max_repeated_failures: u32,
    /// Command prefixes (`cargo test`) a check may run without asking.
    pub checks_allowed: Vec<String>,
}

/// Verification commands that are allowlisted out of the box: a check runs one of these
/// (with any further arguments) without asking, still inside the sandbox. An interpreter
/// (`python3 -m pytest`, `sh test.sh`) can be listed but never runs unasked: the floor
/// leaves that to a person, whatever the configuration says.
pub const DEFAULT_CHECKS: &[&str] = &[
    "cargo test",
    "cargo check",
    "cargo clippy",
    "cargo build",
    "cargo fmt --check",
    "npm test",
    "npm run test",
    "npm run lint",
    "pnpm test",
    "yarn test",
    "pytest",
    "go test",
    "go vet",
    "go build",
    "make test",
    "make check",
    "ctest",
    "mvn test",
    "gradle test",
];

impl Default for AutoSettings {
    fn default() -> Self {
        AutoSettings {
            max_minutes: None,
            max_tokens: None,
            max_steps_without_change: 20,
            max_repeated_failures: 5,
            checks_allowed: DEFAULT_CHECKS.iter().map(|c| c.to_string()).collect(),
        }
    }
}

/// Overrides given on the command line.
#[derive(Debug, Clone, Default)]
pub struct FlagOverrides {
    pub model: Option<String>,
    pub max_iters: Option<u32>,
    pub permission_mode: Option<PermissionMode>,
    /// `--system-prompt`: replaces the agent's own instructions.
    pub system_prompt: Option<String>,
    /// `--append-system-prompt`: added at the end of the system prompt.
    pub append_system_prompt: Option<String>,
    /// `--tools`: the only tools the session's own runs are offered.
    pub tools: Option<Vec<String>>,
    pub allowed_tools: Vec<String>,
    pub disallowed_tools: Vec<String>,
    /// `--add-dir`: more folders the file tools and the sandbox open (canonical).
    pub add_dirs: Vec<PathBuf>,
    pub theme: Option<String>,
}

/// The effective configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub models: Vec<ModelConfig>,
    /// The model id asked for (flag, env, `[agent] default_model`), if any.
    pub model_choice: Option<String>,
    /// Where `model_choice` was set (`--model`, `LINGGEN_MODEL`, `file:line: ...`), for
    /// error messages.
    pub model_choice_origin: String,
    pub max_iters: u32,
    pub permission_mode: PermissionMode,
    /// Permission rules such as `Bash(cargo test*)`; deny beats allow.
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    /// Rules whose calls always ask (`[permissions] ask`, Claude Code's `ask`).
    pub ask: Vec<String>,
    /// `[permissions] skill_shell` (Claude Code's `disableSkillShellExecution`, inverted):
    /// whether the `` !`cmd` `` lines of skills and commands run at all.
    pub skill_shell: bool,
    /// The person's `~/.claude/settings.json` permissions (its mode already applied).
    pub claude: Option<claude_settings::ClaudePermissions>,
    /// The workspace's `.claude/settings.json` and `.claude/settings.local.json`
    /// permissions: their `ask` and `deny` apply at once, their `allow` rules and a looser
    /// `defaultMode` are trust grants (see [`claude_settings::ClaudePermissions::grants`]).
    pub claude_project: Vec<claude_settings::ProjectClaude>,
    /// `--add-dir`: folders beside the root that the file tools read and write.
    pub add_dirs: Vec<PathBuf>,
    /// Default `Bash` timeout.
    pub bash_timeout_ms: u64,
    /// `[agent] max_delegation_depth`: how deep `delegate_to_agent` may nest.
    pub max_delegation_depth: u32,
    /// `[ui] theme`: the colour theme of the interactive shell.
    pub theme: String,
    /// `[ui] show_thinking`: show reasoning tokens (dimmed) or hide them.
    pub show_thinking: bool,
    /// `[tools] chromium` and `[tools] screenshot_hosts`, for `capture_screenshot`.
    /// (`LINGGEN_CHROMIUM` is read when the tool looks for the browser.)
    pub screenshot: tools::ScreenshotSettings,
    /// `[sandbox]`: how commands are confined.
    pub sandbox: tools::SandboxSettings,
    /// `[routing]`, when a file has the table: a policy then picks the model per call.
    pub routing: Option<routing::RoutingConfig>,
    /// `[context] compact_at`: the share of the window at which the conversation is
    /// compacted before the next request.
    pub compact_at: f64,
    /// `[llm] stall_secs`: seconds a model's stream that has started may stay silent before
    /// it is treated as dropped (retried, then the next model), and after which the person
    /// is told what linggen waits for.
    pub stall_secs: u64,
    /// `[auto]` limits and `[checks] allow`.
    pub auto: AutoSettings,
    /// `[mcp] eager_tools_chars`: characters of MCP tool schemas offered whole with each
    /// request; above it the model gets a search tool instead. `None`: a tenth of the
    /// model's window (see `session::run::agent_tools`).
    pub mcp_eager_tools_chars: Option<usize>,
    /// `[hooks] unconfined`: the person's own hooks run outside the sandbox, with their
    /// whole environment (only from their own configuration).
    pub hooks_unconfined: bool,
    /// `[hooks] idle_notification_secs`: how long the session waits for input before the
    /// `Notification` hooks hear of it.
    pub idle_notification_secs: u64,
    /// `[context] curate_reads` and its keys: a long file read whole is first curated.
    pub curate: CurateSettings,
    /// `[heartbeat]`: `None` (off) unless the person's own configuration sets `every`.
    pub heartbeat: Option<heartbeat::HeartbeatSettings>,
    /// Where each non-default setting came from (a file, an environment variable, a flag),
    /// by key, for `/settings`.
    pub origins: std::collections::BTreeMap<&'static str, String>,
    /// Files that were read, lowest precedence first (for messages and `/settings`).
    pub files: Vec<PathBuf>,
    /// Non-fatal findings (unknown keys) to show the person.
    pub warnings: Vec<String>,
    /// What `<root>/linggen-agent.toml` would grant, held back until the person trusts it
    /// (see [`trust`]); restrictions from that file are applied above as usual.
    pub withheld: trust::Withheld,
}

/// `[context] curate_reads`: a `Read` of a whole file longer than `min_lines` first asks a
/// small curator which line ranges matter for the conversation (see `session::curate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurateSettings {
    pub enabled: bool,
    pub min_lines: usize,
    /// The curator's model: an id from `[[models]]`, `local` or `cloud`; `None`: `local`
    /// when there is one, else the run's own.
    pub model: Option<String>,
}

impl Default for CurateSettings {
    fn default() -> Self {
        CurateSettings {
            enabled: false,
            min_lines: 100,
            model: None,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            models: Vec::new(),
            model_choice: None,
            model_choice_origin: String::new(),
            max_iters: DEFAULT_MAX_ITERS,
            permission_mode: PermissionMode::Default,
            allow: Vec::new(),
            deny: Vec::new(),
            ask: Vec::new(),
            skill_shell: true,
            claude: None,
            claude_project: Vec::new(),
            add_dirs: Vec::new(),
            bash_timeout_ms: tools::BASH_TIMEOUT_MS,
            max_delegation_depth: DEFAULT_MAX_DELEGATION_DEPTH,
            theme: "dark".to_string(),
            show_thinking: true,
            screenshot: Default::default(),
            sandbox: Default::default(),
            routing: None,
            compact_at: DEFAULT_COMPACT_AT,
            stall_secs: model::DEFAULT_STALL_SECS,
            auto: AutoSettings::default(),
            mcp_eager_tools_chars: None,
            hooks_unconfined: false,
            idle_notification_secs: 60,
            heartbeat: None,
            curate: CurateSettings::default(),
            origins: std::collections::BTreeMap::new(),
            files: Vec::new(),
            warnings: Vec::new(),
            withheld: trust::Withheld::default(),
        }
    }
}

/// Whether two paths name one file (the same path, or the same file once resolved).
fn same_file(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
}

impl Config {
    /// Loads every layer for a workspace. `env` is passed in (not read here) so tests can
    /// exercise the layering without touching the process environment.
    pub fn load(
        home: &Path,
        root: &Path,
        env: &dyn Fn(&str) -> Option<String>,
        flags: &FlagOverrides,
    ) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        let default_model = config.read_files(home, root)?;
        config.validate_routing()?;
        // Claude Code's own settings come after linggen's files, which win where both speak.
        config.read_claude_settings(root, env);
        config.apply_env(env)?;
        config.apply_flags(flags);
        if config.model_choice.is_none()
            && let Some((model, origin)) = default_model
        {
            config.model_choice = Some(model);
            config.model_choice_origin = origin;
        }
        Ok(config)
    }

    /// Applies linggen's files, the person's (`home`) then the workspace's (`root`, a
    /// project's, so its grants are withheld until trusted); the `[agent] default_model`
    /// the last of them names, with where.
    fn read_files(
        &mut self,
        home: &Path,
        root: &Path,
    ) -> Result<Option<(String, String)>, ConfigError> {
        let mut default_model = None;
        let home_file = home.join(CONFIG_FILE);
        for path in [home_file.clone(), root.join(CONFIG_FILE)] {
            // The same file twice (root == home) must not be applied twice.
            if self.files.iter().any(|seen| same_file(seen, &path)) {
                continue;
            }
            // The root's file came with the workspace, unless it is the person's own.
            let project = !same_file(&path, &home_file);
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(ConfigError::File {
                        path,
                        message: format!("cannot read: {e}"),
                    });
                }
            };
            let layer = file::parse(&path, &text)?;
            self.warnings.extend(layer.warnings.iter().cloned());
            let withheld = project.then(|| trust::relative(root, &path));
            if let Some(choice) = layer.apply(self, withheld)? {
                default_model = Some(choice);
            }
            self.files.push(path);
        }
        Ok(default_model)
    }

    /// The `[routing]` rules name only configured models.
    fn validate_routing(&self) -> Result<(), ConfigError> {
        if let Some(routing) = &self.routing {
            // Rules may name a project's models that wait for trust; until then the
            // router skips them.
            let ids: Vec<&str> = self
                .models
                .iter()
                .chain(&self.withheld.models)
                .map(|m| m.id.as_str())
                .collect();
            routing
                .validate(&ids)
                .map_err(|why| ConfigError::Usage(format!("{}: {why}", self.origin("routing"))))?;
        }
        Ok(())
    }

    /// Applies Claude Code's settings: the person's (`~/.claude/settings.json`), then the
    /// project's files (unless one is the person's own). A file that cannot be read is a
    /// warning.
    fn read_claude_settings(&mut self, root: &Path, env: &dyn Fn(&str) -> Option<String>) {
        let user_home = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
        let user_claude = user_home.map(|h| h.join(".claude/settings.json"));
        if let Some(path) = &user_claude {
            match claude_settings::read(path) {
                Ok(Some(claude)) => self.apply_claude(claude),
                Ok(None) => {}
                Err(warning) => self.warnings.push(warning),
            }
        }
        for rel in claude_settings::PROJECT_FILES {
            let path = root.join(rel);
            if user_claude.as_ref().is_some_and(|u| same_file(u, &path)) {
                continue;
            }
            match claude_settings::read(&path) {
                Ok(Some(claude)) => self.apply_claude_project(claude, rel),
                Ok(None) => {}
                Err(warning) => self.warnings.push(warning),
            }
        }
    }

    pub fn set_origin(&mut self, key: &'static str, origin: impl std::fmt::Display) {
        self.origins.insert(key, origin.to_string());
    }

    /// Where `key` was set, or `default`.
    pub fn origin(&self, key: &str) -> &str {
        self.origins.get(key).map_or("default", String::as_str)
    }

    fn apply_env(&mut self, env: &dyn Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        let get = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if let Some(model) = get("LINGGEN_MODEL") {
            self.model_choice = Some(model.trim().to_string());
            self.model_choice_origin = "LINGGEN_MODEL".into();
        }
        if let Some(v) = get("LINGGEN_MAX_ITERS") {
            self.max_iters = parse_max_iters(&v).map_err(|m| {
                ConfigError::Usage(format!("environment variable LINGGEN_MAX_ITERS={v}: {m}"))
            })?;
            self.set_origin("max_iters", "LINGGEN_MAX_ITERS");
        }
        // Tools take their settings from their context, never from the environment.
        self.screenshot.chromium_env = get(tools::CHROMIUM_ENV);
        if let Some(v) = get("LINGGEN_PERMISSION_MODE") {
            self.permission_mode = PermissionMode::parse(&v).ok_or_else(|| {
                ConfigError::Usage(format!(
                    "environment variable LINGGEN_PERMISSION_MODE={v}: expected one of {}",
                    PermissionMode::NAMES
                ))
            })?;
            self.set_origin("permission_mode", "LINGGEN_PERMISSION_MODE");
            // The person chose the mode; the project's can no longer matter.
            self.withheld.mode = None;
        }
        Ok(())
    }

    fn apply_flags(&mut self, flags: &FlagOverrides) {
        self.apply_session_choices(flags);
        if let Some(theme) = &flags.theme {
            self.theme = theme.clone();
            self.set_origin("theme", "--theme");
        }
        self.allow.extend(flags.allowed_tools.iter().cloned());
        self.deny.extend(flags.disallowed_tools.iter().cloned());
    }

    /// This configuration with one session's choices on top: the model, `max_iters` and the
    /// permission mode. The shell changes these between sessions (`/model`, `/permissions`,
    /// `/settings`) by restarting with other flags, so a session must take them from its own
    /// flags, never from the configuration loaded when the process started (which still
    /// holds the start-up flags: `--permission-mode bypass` would outlive `/permissions
    /// default`).
    pub fn for_session(&self, flags: &FlagOverrides) -> Config {
        let mut config = self.clone();
        config.apply_session_choices(flags);
        config
    }

    fn apply_session_choices(&mut self, flags: &FlagOverrides) {
        if let Some(model) = &flags.model {
            self.model_choice = Some(self.model_named(model));
            self.model_choice_origin = "--model".into();
        }
        if let Some(n) = flags.max_iters {
            self.max_iters = n;
            self.set_origin("max_iters", "--max-iters");
        }
        if let Some(mode) = flags.permission_mode {
            self.permission_mode = mode;
            self.set_origin("permission_mode", "--permission-mode");
            self.withheld.mode = None;
        }
        for dir in &flags.add_dirs {
            if !self.add_dirs.contains(dir) {
                self.add_dirs.push(dir.clone());
            }
        }
    }

    /// The id of the model `--model NAME` means: an entry's id; else, as Claude Code takes
    /// them, the name the server knows (`claude-sonnet-4-5`) or an alias (`sonnet`,
    /// `opus`, `haiku`: the first entry whose model name has it). Anything else is kept
    /// as given (a policy, `local`, `cloud`, or a mistake reported with the list).
    fn model_named(&self, name: &str) -> String {
        const ALIASES: [&str; 3] = ["sonnet", "opus", "haiku"];
        if self.models.iter().any(|m| m.id == name) {
            return name.to_string();
        }
        let exact = self.models.iter().find(|m| m.model == name);
        let alias = || {
            let alias = name.to_ascii_lowercase();
            ALIASES.contains(&alias.as_str()).then(|| {
                self.models
                    .iter()
                    .find(|m| m.model.to_ascii_lowercase().contains(&alias))
            })?
        };
        exact
            .or_else(alias)
            .map_or_else(|| name.to_string(), |m| m.id.clone())
    }

    /// The model entry asked for, or the first one. `Ok(None)` means nothing is configured
    /// and the caller should try to discover a local Ollama.
    pub fn selected_model(&self) -> Result<Option<&ModelConfig>, ConfigError> {
        match &self.model_choice {
            Some(id) => match self.models.iter().find(|m| &m.id == id) {
                Some(m) => Ok(Some(m)),
                None if self.withheld.models.iter().any(|m| &m.id == id) => {
                    Err(ConfigError::Usage(format!(
                        "{}: model `{id}` comes from {} and would send the conversation \
                         elsewhere; trust the folder first (`linggen trust`), or choose \
                         another with --model",
                        self.model_choice_origin, self.withheld.file
                    )))
                }
                None if self.models.is_empty() => Err(ConfigError::Usage(format!(
                    "{}: model `{id}` is not configured: add a [[models]] entry with id = \"{id}\" to {} (see doc/config.md)",
                    self.model_choice_origin, CONFIG_FILE
                ))),
                None => Err(ConfigError::Usage(format!(
                    "{}: model `{id}` is not configured; configured models: {}",
                    self.model_choice_origin,
                    self.models
                        .iter()
                        .map(|m| m.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))),
            },
            None => Ok(self.models.first()),
        }
    }
}

/// `max_iters` must be at least 1: a loop that may not call the model at all is a mistake.
pub fn parse_max_iters(v: &str) -> Result<u32, BadMaxIters> {
    match v.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(BadMaxIters),
    }
}

/// A `max_iters` value that is not a whole number of at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("expected a whole number of at least 1")]
pub struct BadMaxIters;

#[cfg(test)]
mod tests;
