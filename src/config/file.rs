//! One `linggen-agent.toml` layer. Type errors come from the TOML deserializer, whose
//! message already carries the line, a caret under the value and what was expected; we add
//! the file. Unknown keys only warn, so a config written for a newer linggen still loads.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::{Config, ConfigError, ModelConfig, PermissionMode, ProviderKind};

use super::model::{DEFAULT_TIMEOUT_SECS, bedrock_url};
use super::routing::RoutingSection;

#[derive(Debug, Default, Deserialize)]
struct FileConfig {
    #[serde(default)]
    agent: AgentSection,
    #[serde(default)]
    models: Vec<Spanned<ModelEntry>>,
    #[serde(default)]
    permissions: PermissionsSection,
    #[serde(default)]
    ui: UiSection,
    #[serde(default)]
    tools: ToolsSection,
    #[serde(default)]
    sandbox: SandboxSection,
    routing: Option<RoutingSection>,
    #[serde(default)]
    context: ContextSection,
    #[serde(default)]
    auto: AutoSection,
    #[serde(default)]
    checks: ChecksSection,
    #[serde(default)]
    llm: LlmSection,
    #[serde(default)]
    mcp: McpSection,
    #[serde(default)]
    hooks: HooksSection,
    #[serde(default)]
    heartbeat: super::heartbeat::HeartbeatSection,
}

/// `[hooks]`: how the hooks of the settings files run (doc/hooks.md).
#[derive(Debug, Default, Deserialize)]
struct HooksSection {
    unconfined: Option<Spanned<bool>>,
    idle_notification_secs: Option<Spanned<u64>>,
}

/// `[mcp]`: how MCP servers' tools are offered.
#[derive(Debug, Default, Deserialize)]
struct McpSection {
    eager_tools_chars: Option<Spanned<usize>>,
}

/// `[llm]`: how linggen treats every model's streams.
#[derive(Debug, Default, Deserialize)]
struct LlmSection {
    stall_secs: Option<Spanned<u64>>,
}

/// `[auto]`: the limits of a run (see `doc/auto.md`).
#[derive(Debug, Default, Deserialize)]
struct AutoSection {
    max_minutes: Option<Spanned<f64>>,
    max_tokens: Option<Spanned<u64>>,
    max_steps_without_change: Option<Spanned<u32>>,
    max_repeated_failures: Option<Spanned<u32>>,
}

/// `[checks]`: verification commands `/check` and agents' `checks` may run without asking.
#[derive(Debug, Default, Deserialize)]
struct ChecksSection {
    allow: Option<Vec<String>>,
}

/// `[context]`: when the conversation is compacted.
#[derive(Debug, Default, Deserialize)]
struct ContextSection {
    compact_at: Option<Spanned<f64>>,
    curate_reads: Option<bool>,
    curate_min_lines: Option<Spanned<usize>>,
    curator_model: Option<String>,
}

/// `[sandbox]`: how far commands are confined (see `tools::sandbox`).
#[derive(Debug, Default, Deserialize)]
struct SandboxSection {
    enabled: Option<bool>,
    network: Option<bool>,
    write_paths: Option<Vec<Spanned<String>>>,
    deny_read: Option<Vec<Spanned<String>>>,
    allow_read: Option<Vec<Spanned<String>>>,
    env_allow: Option<Vec<String>>,
    unconfined: Option<super::tools::Unconfined>,
}

#[derive(Debug, Default, Deserialize)]
struct ToolsSection {
    chromium: Option<String>,
    screenshot_hosts: Option<Vec<Spanned<String>>>,
}

#[derive(Debug, Default, Deserialize)]
struct UiSection {
    theme: Option<String>,
    show_thinking: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
struct AgentSection {
    default_model: Option<Spanned<String>>,
    max_iters: Option<Spanned<u32>>,
    bash_timeout_ms: Option<u64>,
    max_delegation_depth: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
struct PermissionsSection {
    mode: Option<PermissionMode>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    /// Restricts only (a call asks that would not), so a project's apply without trust.
    #[serde(default)]
    ask: Vec<String>,
    /// `false`: the `!` lines of skills and commands do not run. A project may only turn
    /// them off.
    skill_shell: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct ModelEntry {
    id: String,
    provider: ProviderKind,
    model: String,
    url: Option<Spanned<Urls>>,
    region: Option<String>,
    api_key_env: Option<String>,
    context_window: Option<u32>,
    max_inflight: Option<u32>,
    timeout_secs: Option<u64>,
    max_tokens: Option<u32>,
    local: Option<bool>,
    images: Option<bool>,
    price_input: Option<Spanned<f64>>,
    price_output: Option<Spanned<f64>>,
}

/// `url = "…"`, or a pool: `url = ["…", "…"]`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Urls {
    One(String),
    Pool(Vec<String>),
}

/// The keys each table knows; anything else is reported as a warning.
const KNOWN: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "agent",
            "models",
            "permissions",
            "ui",
            "tools",
            "sandbox",
            "routing",
            "context",
            "auto",
            "checks",
            "llm",
            "mcp",
            "mcp_servers",
            "hooks",
            "heartbeat",
        ],
    ),
    ("llm", &["stall_secs"]),
    ("hooks", &["unconfined", "idle_notification_secs"]),
    ("heartbeat", super::heartbeat::KEYS),
    ("mcp", &["eager_tools_chars"]),
    (
        "auto",
        &[
            "max_minutes",
            "max_tokens",
            "max_steps_without_change",
            "max_repeated_failures",
        ],
    ),
    ("checks", &["allow"]),
    ("routing", super::routing::KEYS),
    (
        "context",
        &[
            "compact_at",
            "curate_reads",
            "curate_min_lines",
            "curator_model",
        ],
    ),
    ("tools", &["chromium", "screenshot_hosts"]),
    (
        "sandbox",
        &[
            "enabled",
            "network",
            "write_paths",
            "deny_read",
            "allow_read",
            "env_allow",
            "unconfined",
        ],
    ),
    ("ui", &["theme", "show_thinking"]),
    (
        "agent",
        &[
            "default_model",
            "max_iters",
            "bash_timeout_ms",
            "max_delegation_depth",
        ],
    ),
    (
        "permissions",
        &["mode", "allow", "deny", "ask", "skill_shell"],
    ),
    (
        "models",
        &[
            "id",
            "provider",
            "model",
            "url",
            "region",
            "api_key_env",
            "context_window",
            "max_inflight",
            "timeout_secs",
            "max_tokens",
            "local",
            "images",
            "price_input",
            "price_output",
        ],
    ),
];

pub(super) struct Layer<'a> {
    path: &'a Path,
    text: &'a str,
    parsed: FileConfig,
    pub warnings: Vec<String>,
}

pub(super) fn parse<'a>(path: &'a Path, text: &'a str) -> Result<Layer<'a>, ConfigError> {
    let parsed: FileConfig = toml::from_str(text).map_err(|e| ConfigError::File {
        path: path.to_path_buf(),
        message: e.to_string().trim_end().to_string(),
    })?;
    let warnings = unknown_keys(path, text);
    Ok(Layer {
        path,
        text,
        parsed,
        warnings,
    })
}

impl Layer<'_> {
    /// `[hooks]`. Taking hooks out of the sandbox is the person's choice: a project's
    /// `unconfined` is ignored, with a warning.
    fn apply_hooks(&self, hooks: HooksSection, config: &mut Config, project: Option<&str>) {
        if let Some(unconfined) = hooks.unconfined {
            match project {
                Some(file) if *unconfined.get_ref() => config.warnings.push(format!(
                    "{file}: `[hooks] unconfined` is ignored: only your own configuration \
                     ($LINGGEN_HOME/linggen-agent.toml) can take hooks out of the sandbox"
                )),
                Some(_) => {}
                None => {
                    config.hooks_unconfined = *unconfined.get_ref();
                    config.set_origin("hooks_unconfined", self.path.display());
                }
            }
        }
        if let Some(secs) = hooks.idle_notification_secs {
            config.idle_notification_secs = *secs.get_ref();
            config.set_origin("idle_notification_secs", self.path.display());
        }
    }

    /// `[heartbeat]`, from the person's own configuration only: a project's table would
    /// make linggen call models on a timer, so it is ignored with a warning.
    fn apply_heartbeat(
        &self,
        heartbeat: super::heartbeat::HeartbeatSection,
        config: &mut Config,
        project: Option<&str>,
    ) -> Result<(), ConfigError> {
        let Some(every) = heartbeat.every else {
            return Ok(());
        };
        if let Some(file) = project {
            config.warnings.push(format!(
                "{file}: `[heartbeat]` is ignored: only your own configuration \
                 ($LINGGEN_HOME/linggen-agent.toml) can turn the heartbeat on"
            ));
            return Ok(());
        }
        let duration = super::heartbeat::parse_every(every.get_ref())
            .map_err(|why| self.error_at(every.span(), &why))?;
        config.heartbeat = Some(super::heartbeat::HeartbeatSettings {
            every: duration,
            agent: heartbeat.agent,
            model: heartbeat.model,
        });
        config.set_origin("heartbeat", self.path.display());
        Ok(())
    }

    /// `[context] curate_reads`, `curate_min_lines`, `curator_model`.
    fn apply_curate(
        &self,
        context: &ContextSection,
        config: &mut Config,
    ) -> Result<(), ConfigError> {
        if let Some(on) = context.curate_reads {
            config.curate.enabled = on;
            config.set_origin("curate_reads", self.path.display());
        }
        if let Some(lines) = &context.curate_min_lines {
            if *lines.get_ref() < 20 {
                return Err(self.error_at(
                    lines.span(),
                    &format!(
                        "curate_min_lines = {}: expected at least 20 (a shorter file is read whole)",
                        lines.get_ref()
                    ),
                ));
            }
            config.curate.min_lines = *lines.get_ref();
            config.set_origin("curate_min_lines", self.path.display());
        }
        if let Some(model) = &context.curator_model {
            config.curate.model = Some(model.trim().to_string()).filter(|m| !m.is_empty());
            config.set_origin("curator_model", self.path.display());
        }
        Ok(())
    }

    /// Applies this layer; returns its `default_model` (with `file:line`) if it sets one.
    /// `project` names the file (relative to the root) when it came with the workspace:
    /// then what it grants (a looser mode, allow rules, a browser to run, more screenshot
    /// hosts) goes to `config.withheld` until the person trusts it, while its restrictions
    /// apply at once.
    pub fn apply(
        mut self,
        config: &mut Config,
        project: Option<String>,
    ) -> Result<Option<(String, String)>, ConfigError> {
        let FileConfig {
            agent,
            models,
            permissions,
            ui,
            tools,
            sandbox,
            routing,
            context,
            auto,
            checks,
            llm,
            mcp,
            hooks,
            heartbeat,
        } = std::mem::take(&mut self.parsed);
        self.apply_hooks(hooks, config, project.as_deref());
        self.apply_heartbeat(heartbeat, config, project.as_deref())?;
        self.apply_auto(auto, &mut config.auto)?;
        self.apply_llm(llm, config)?;
        if let Some(chars) = mcp.eager_tools_chars {
            config.mcp_eager_tools_chars = Some(*chars.get_ref());
            config.set_origin("mcp_eager_tools_chars", self.path.display());
        }
        self.apply_checks(checks, config, project.as_deref());
        self.apply_compact_at(&context, config)?;
        self.apply_curate(&context, config)?;
        if let Some(routing) = routing {
            routing.apply(config.routing.get_or_insert_with(Default::default));
            config.set_origin("routing", self.path.display());
        }
        let permissions = match &project {
            Some(file) => withhold_permissions(permissions, config, file),
            None => permissions,
        };
        let tools = match &project {
            Some(file) => self.withhold_tools(tools, config, file)?,
            None => tools,
        };
        self.apply_tools(tools, config)?;
        self.apply_sandbox(sandbox, config, project.is_some())?;
        self.apply_ui(ui, config);
        self.apply_agent_limits(&agent, config)?;
        self.apply_permissions(permissions, config);
        self.apply_models(models, config, project.as_deref())?;
        Ok(agent.default_model.map(|m| {
            let line = line_of(self.text, m.span().start);
            let origin = format!("{}:{line}: [agent] default_model", self.path.display());
            (m.into_inner(), origin)
        }))
    }

    /// `[checks] allow`: checks that run without asking. From the project's own file that
    /// is a grant, withheld until the folder is trusted.
    fn apply_checks(&self, checks: ChecksSection, config: &mut Config, project: Option<&str>) {
        let allow = checks.allow.unwrap_or_default();
        for check in allow.iter().map(|c| c.trim()).filter(|c| !c.is_empty()) {
            let list = match project {
                Some(file) => {
                    config.withheld.file = file.to_string();
                    &mut config.withheld.checks
                }
                None => &mut config.auto.checks_allowed,
            };
            if !list.iter().any(|c| c == check) {
                list.push(check.to_string());
            }
        }
        if !allow.is_empty() && project.is_none() {
            config.set_origin("checks", self.path.display());
        }
    }

    /// `[context] compact_at`, a share of the window a compaction keeps the request under.
    fn apply_compact_at(
        &self,
        context: &ContextSection,
        config: &mut Config,
    ) -> Result<(), ConfigError> {
        if let Some(at) = &context.compact_at {
            let value = *at.get_ref();
            if !(0.3..=0.95).contains(&value) {
                return Err(self.error_at(
                    at.span(),
                    &format!(
                        "compact_at = {value}: expected a share of the window between 0.3 and 0.95 \
                         (0.75 compacts when three quarters are used)"
                    ),
                ));
            }
            config.compact_at = value;
            config.set_origin("compact_at", self.path.display());
        }
        Ok(())
    }

    /// `[ui]`: the theme and whether thinking is shown.
    fn apply_ui(&self, ui: UiSection, config: &mut Config) {
        if let Some(theme) = ui.theme {
            config.theme = theme;
            config.set_origin("theme", self.path.display());
        }
        if let Some(show) = ui.show_thinking {
            config.show_thinking = show;
            config.set_origin("show_thinking", self.path.display());
        }
    }

    /// `[agent]`'s limits: model calls per run, the `Bash` timeout, delegation depth.
    fn apply_agent_limits(
        &self,
        agent: &AgentSection,
        config: &mut Config,
    ) -> Result<(), ConfigError> {
        if let Some(n) = &agent.max_iters {
            if *n.get_ref() == 0 {
                return Err(self.error_at(n.span(), "max_iters must be at least 1"));
            }
            config.max_iters = *n.get_ref();
            config.set_origin("max_iters", self.path.display());
        }
        if let Some(ms) = agent.bash_timeout_ms {
            config.bash_timeout_ms = ms;
            config.set_origin("bash_timeout_ms", self.path.display());
        }
        if let Some(depth) = agent.max_delegation_depth {
            config.max_delegation_depth = depth;
            config.set_origin("max_delegation_depth", self.path.display());
        }
        Ok(())
    }

    /// `[permissions]`: the mode, and rules added to those of the files read before.
    fn apply_permissions(&self, permissions: PermissionsSection, config: &mut Config) {
        if let Some(mode) = permissions.mode {
            config.permission_mode = mode;
            config.set_origin("permission_mode", self.path.display());
        }
        config.allow.extend(permissions.allow);
        config.deny.extend(permissions.deny);
        config.ask.extend(permissions.ask);
        if let Some(on) = permissions.skill_shell {
            config.skill_shell = on;
            config.set_origin("skill_shell", self.path.display());
        }
    }

    /// `[llm]`. Not a grant: a project that sets a short `stall_secs` only makes linggen
    /// give up on a silent stream sooner.
    fn apply_llm(&self, llm: LlmSection, config: &mut Config) -> Result<(), ConfigError> {
        if let Some(secs) = llm.stall_secs {
            let value = *secs.get_ref();
            if value == 0 {
                return Err(self.error_at(
                    secs.span(),
                    "stall_secs = 0: expected seconds of silence, at least 1 (60 by default)",
                ));
            }
            config.stall_secs = value;
            config.set_origin("stall_secs", self.path.display());
        }
        Ok(())
    }

    /// Merges `[[models]]` by id. A project model that names a key variable would send that
    /// secret to a server the project chose, so its `api_key_env` is withheld as a grant.
    fn apply_models(
        &self,
        models: Vec<Spanned<ModelEntry>>,
        config: &mut Config,
        project: Option<&str>,
    ) -> Result<(), ConfigError> {
        // The project's file is the last layer: what is configured before it is the
        // person's own.
        let own = OwnModels::of(config);
        for entry in models {
            let span = entry.span();
            let at = span.start;
            let mut model = model_config(entry.into_inner())
                .map_err(|(s, m)| self.error_at(s.unwrap_or(span), &m))?;
            if let Some(file) = project {
                // A project entry with one of the person's ids would take that model's
                // place: every `--model`, `default_model` and routing rule naming it would
                // reach the project's server. Refused, trusted or not.
                if own.ids.contains(&model.id) {
                    self.refuse_own_id(config, &model.id, at);
                    continue;
                }
                if own.sends_elsewhere(&model) {
                    config.withheld.models.retain(|m| m.id != model.id);
                    config.withheld.models.push(model);
                    config.withheld.file = file.to_string();
                    continue;
                }
                if let Some(env) = model.api_key_env.take() {
                    config.withheld.model_keys.push(super::trust::ModelKey {
                        id: model.id.clone(),
                        env,
                        url: model.url.clone(),
                    });
                    config.withheld.file = file.to_string();
                }
            }
            match config.models.iter_mut().find(|m| m.id == model.id) {
                Some(existing) => *existing = model,
                None => config.models.push(model),
            }
        }
        Ok(())
    }

    /// The warning for a project model entry that reuses one of the person's ids.
    fn refuse_own_id(&self, config: &mut Config, id: &str, at: usize) {
        config.warnings.push(format!(
            "{}:{}: [[models]] id = \"{id}\" ignored: your own $LINGGEN_HOME/{} already has \
             a model with that id, and a workspace's file cannot replace it; rename the id in \
             this file to use the workspace's model",
            self.path.display(),
            line_of(self.text, at),
            super::CONFIG_FILE,
        ));
    }

    /// `chromium` replaces what an earlier layer set; `screenshot_hosts` adds to it, like
    /// permission rules do.
    fn apply_tools(&self, tools: ToolsSection, config: &mut Config) -> Result<(), ConfigError> {
        if let Some(chromium) = tools.chromium.filter(|c| !c.trim().is_empty()) {
            config.screenshot.chromium = Some(chromium.trim().to_string());
            config.set_origin("chromium", self.path.display());
        }
        for entry in tools.screenshot_hosts.unwrap_or_default() {
            let host = super::tools::normalize_host(entry.get_ref())
                .map_err(|why| self.error_at(entry.span(), &why))?;
            if !config.screenshot.hosts.contains(&host) {
                config.screenshot.hosts.push(host);
            }
            config.set_origin("screenshot_hosts", self.path.display());
        }
        Ok(())
    }

    /// Settings that tighten the sandbox apply from any file; those that loosen it only
    /// from `$LINGGEN_HOME`'s, with a warning for a `project` file that tries (trusted or
    /// not: the sandbox is the floor under trust).
    fn apply_sandbox(
        &mut self,
        section: SandboxSection,
        config: &mut Config,
        project: bool,
    ) -> Result<(), ConfigError> {
        use super::tools::Unconfined;
        let sandbox = &mut config.sandbox;
        for entry in section.deny_read.unwrap_or_default() {
            let path = self.absolute_path(&entry)?;
            if !sandbox.deny_read.contains(&path) {
                sandbox.deny_read.push(path);
            }
        }
        let mut loosens = Vec::new();
        match section.enabled {
            Some(false) if project => loosens.push("enabled = false"),
            Some(enabled) => sandbox.enabled = enabled,
            None => {}
        }
        match section.network {
            Some(true) if project => loosens.push("network = true"),
            Some(network) => sandbox.network = network,
            None => {}
        }
        match section.unconfined {
            Some(Unconfined::Allow) if project => loosens.push("unconfined = \"allow\""),
            Some(unconfined) => sandbox.unconfined = unconfined,
            None => {}
        }
        if let Some(paths) = section.write_paths.filter(|p| !p.is_empty()) {
            if project {
                loosens.push("write_paths");
            } else {
                for entry in paths {
                    let path = self.absolute_path(&entry)?;
                    if !sandbox.write_paths.contains(&path) {
                        sandbox.write_paths.push(path);
                    }
                }
            }
        }
        if let Some(paths) = section.allow_read.filter(|p| !p.is_empty()) {
            if project {
                loosens.push("allow_read");
            } else {
                for entry in paths {
                    let path = self.absolute_path(&entry)?;
                    if !sandbox.allow_read.contains(&path) {
                        sandbox.allow_read.push(path);
                    }
                }
            }
        }
        if let Some(names) = section.env_allow.filter(|n| !n.is_empty()) {
            if project {
                loosens.push("env_allow");
            } else {
                sandbox.env_allow.extend(names);
            }
        }
        if !loosens.is_empty() {
            config.warnings.push(format!(
                "{}: [sandbox] {} ignored: a workspace's own file cannot loosen the sandbox; \
                 set it in $LINGGEN_HOME/linggen-agent.toml if you want it",
                self.path.display(),
                loosens.join(", ")
            ));
        }
        Ok(())
    }

    /// A path setting: absolute, or `~/…` under the home directory.
    fn absolute_path(&self, entry: &Spanned<String>) -> Result<std::path::PathBuf, ConfigError> {
        let text = entry.get_ref().trim();
        let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
        let path = match (text.strip_prefix("~/"), home) {
            (Some(rest), Some(home)) => Path::new(&home).join(rest),
            (None, _) if text == "~" => {
                return Err(self.error_at(
                    entry.span(),
                    "`~` alone is the whole home directory; name a folder inside it",
                ));
            }
            _ => Path::new(text).to_path_buf(),
        };
        if !path.is_absolute() {
            return Err(self.error_at(
                entry.span(),
                &format!("`{text}`: expected an absolute path or one starting with ~/"),
            ));
        }
        Ok(path)
    }

    /// Moves the project's `[tools]` grants to `config.withheld`: `chromium` names a program
    /// linggen runs, and `screenshot_hosts` widens where a screenshot may send a URL.
    fn withhold_tools(
        &self,
        tools: ToolsSection,
        config: &mut Config,
        file: &str,
    ) -> Result<ToolsSection, ConfigError> {
        if let Some(chromium) = tools.chromium.filter(|c| !c.trim().is_empty()) {
            config.withheld.chromium = Some(chromium.trim().to_string());
            config.withheld.file = file.to_string();
        }
        for entry in tools.screenshot_hosts.unwrap_or_default() {
            let host = super::tools::normalize_host(entry.get_ref())
                .map_err(|why| self.error_at(entry.span(), &why))?;
            if !config.withheld.screenshot_hosts.contains(&host) {
                config.withheld.screenshot_hosts.push(host);
            }
            config.withheld.file = file.to_string();
        }
        Ok(ToolsSection::default())
    }

    /// `[auto]`: every limit must be positive; a zero would stop every run at once.
    fn apply_auto(
        &self,
        auto: AutoSection,
        settings: &mut super::AutoSettings,
    ) -> Result<(), ConfigError> {
        if let Some(m) = auto.max_minutes {
            let value = *m.get_ref();
            if value.is_nan() || value <= 0.0 {
                return Err(self.error_at(
                    m.span(),
                    &format!("max_minutes = {value}: expected a positive number of minutes"),
                ));
            }
            settings.max_minutes = Some(value);
        }
        if let Some(t) = auto.max_tokens {
            if *t.get_ref() == 0 {
                return Err(self.error_at(t.span(), "max_tokens must be at least 1"));
            }
            settings.max_tokens = Some(t.into_inner());
        }
        for (value, target, key) in [
            (
                auto.max_steps_without_change,
                &mut settings.max_steps_without_change,
                "max_steps_without_change",
            ),
            (
                auto.max_repeated_failures,
                &mut settings.max_repeated_failures,
                "max_repeated_failures",
            ),
        ] {
            if let Some(v) = value {
                if *v.get_ref() == 0 {
                    return Err(self.error_at(v.span(), &format!("{key} must be at least 1")));
                }
                *target = v.into_inner();
            }
        }
        Ok(())
    }

    fn error_at(&self, span: std::ops::Range<usize>, message: &str) -> ConfigError {
        let line = line_of(self.text, span.start);
        ConfigError::File {
            path: self.path.to_path_buf(),
            message: format!("line {line}: {message}"),
        }
    }
}

/// Keeps the project's restrictions (deny rules, a mode no looser than the one so far) and
/// moves its grants (allow rules, a looser mode) to `config.withheld`.
fn withhold_permissions(
    mut permissions: PermissionsSection,
    config: &mut Config,
    file: &str,
) -> PermissionsSection {
    if let Some(mode) = permissions.mode
        && mode.latitude() > config.permission_mode.latitude()
    {
        config.withheld.mode = Some(mode);
        config.withheld.file = file.to_string();
        permissions.mode = None;
    }
    // Turning the `!` lines back on after the person turned them off would be a grant;
    // `true` is the default anyway, so it is dropped without a word.
    if permissions.skill_shell == Some(true) {
        permissions.skill_shell = None;
    }
    if !permissions.allow.is_empty() {
        for rule in std::mem::take(&mut permissions.allow) {
            let rule = rule.trim().to_string();
            if !config.withheld.allow.contains(&rule) {
                config.withheld.allow.push(rule);
            }
        }
        config.withheld.file = file.to_string();
    }
    permissions
}

type SpanError = (Option<std::ops::Range<usize>>, String);

fn model_config(entry: ModelEntry) -> Result<ModelConfig, SpanError> {
    if entry.id.trim().is_empty() {
        return Err((None, "model `id` must not be empty".into()));
    }
    if entry.model.trim().is_empty() {
        return Err((
            None,
            format!("model `{}`: `model` must not be empty", entry.id),
        ));
    }
    let Endpoint { url, pool, region } =
        endpoint(&entry.id, entry.provider, entry.url, entry.region)?;
    // Bedrock authenticates with the standard AWS credentials; its bearer key variable is
    // named here so that a project's entry can be withheld like any other key.
    let api_key_env = match entry.provider {
        ProviderKind::Bedrock => entry
            .api_key_env
            .or_else(|| Some(super::model::BEDROCK_KEY_ENV.to_string())),
        _ => entry.api_key_env,
    };
    Ok(ModelConfig {
        id: entry.id,
        provider: entry.provider,
        model: entry.model,
        url,
        pool,
        region,
        api_key_env: api_key_env.filter(|v| !v.is_empty()),
        context_window: entry.context_window,
        max_inflight: entry.max_inflight.unwrap_or(1).max(1),
        timeout_secs: entry.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1),
        // `[llm] stall_secs` is set on every model when the session's router is built.
        stall_secs: super::model::DEFAULT_STALL_SECS,
        max_tokens: entry.max_tokens.filter(|n| *n > 0),
        local: entry.local,
        images: entry.images,
        price_input: price(entry.price_input, "price_input")?,
        price_output: price(entry.price_output, "price_output")?,
    })
}

/// Where a model is served.
struct Endpoint {
    url: String,
    /// Every server of a pool (`url = [...]` with more than one); empty for one server.
    pool: Vec<String>,
    /// The region Bedrock signs for.
    region: Option<String>,
}

/// Model `id`'s `url` (or its provider's default) and `region`, checked.
fn endpoint(
    id: &str,
    provider: ProviderKind,
    urls: Option<Spanned<Urls>>,
    region: Option<String>,
) -> Result<Endpoint, SpanError> {
    let region = region
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty());
    let (url, pool) = match urls {
        Some(urls) => server_urls(urls)?,
        None if provider == ProviderKind::Bedrock => match &region {
            Some(region) => (bedrock_url(region), Vec::new()),
            None => {
                return Err((
                    None,
                    format!(
                        "bedrock model `{}` needs `region = \"us-east-1\"` (or whichever region serves it), or a `url`",
                        id
                    ),
                ));
            }
        },
        None => (provider.default_url().to_string(), Vec::new()),
    };
    // Bedrock signs for a region; with only a URL, it is read from the endpoint's name.
    let region = match (provider, region) {
        (ProviderKind::Bedrock, None) => Some(region_of(&url).ok_or_else(|| {
            (
                None,
                format!(
                    "bedrock model `{}`: cannot tell the region from {url}; add `region = \"…\"`",
                    id
                ),
            )
        })?),
        (_, region) => region,
    };
    Ok(Endpoint { url, pool, region })
}

/// `url = "…"` or `url = [...]`: each an http(s) URL without its trailing slash; the first,
/// and the pool when there are more.
fn server_urls(urls: Spanned<Urls>) -> Result<(String, Vec<String>), SpanError> {
    let span = urls.span();
    let list = match urls.into_inner() {
        Urls::One(url) => vec![url],
        Urls::Pool(urls) => urls,
    };
    if list.is_empty() {
        return Err((
            Some(span),
            "url = []: name at least one server, or leave `url` out for the default".into(),
        ));
    }
    let mut checked = Vec::new();
    for value in list {
        if !(value.starts_with("http://") || value.starts_with("https://")) {
            return Err((
                Some(span),
                format!("url \"{value}\": expected an http:// or https:// URL"),
            ));
        }
        checked.push(value.trim_end_matches('/').to_string());
    }
    let first = checked[0].clone();
    let pool = if checked.len() > 1 {
        checked
    } else {
        Vec::new()
    };
    Ok((first, pool))
}

/// `price_input` / `price_output`: US dollars per million tokens, 0 or more. (A value that
/// is not a number at all is refused by the parser, which names the key and line.)
fn price(value: Option<Spanned<f64>>, key: &str) -> Result<Option<f64>, SpanError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let span = value.span();
    let price = value.into_inner();
    if !price.is_finite() || price < 0.0 {
        return Err((
            Some(span),
            format!(
                "`{key} = {price}`: a price is US dollars per million tokens, 0 or more \
                 (e.g. `{key} = 3.0`)"
            ),
        ));
    }
    Ok(Some(price))
}

/// The person's own models, as configured before a project's file is applied.
struct OwnModels {
    ids: Vec<String>,
    servers: Vec<String>,
}

impl OwnModels {
    fn of(config: &Config) -> OwnModels {
        OwnModels {
            ids: config.models.iter().map(|m| m.id.clone()).collect(),
            servers: config
                .models
                .iter()
                .flat_map(|m| m.servers())
                .map(str::to_string)
                .collect(),
        }
    }

    /// Whether a project's model would send the conversation to a server that is neither
    /// this machine nor one of the person's own: a grant, held back whole (its key with it)
    /// until the folder is trusted. Every server of a pool counts, each on its own. This
    /// machine means loopback by the parser that sends the request
    /// ([`super::model::is_loopback_url`]); a private network can be anyone's server. The
    /// project's `local = true` does not count: it is the project's say, not the address.
    fn sends_elsewhere(&self, model: &ModelConfig) -> bool {
        model
            .servers()
            .into_iter()
            .any(|u| !super::model::is_loopback_url(u) && !self.servers.iter().any(|s| s == u))
    }
}

/// `us-west-2` from `https://bedrock-runtime.us-west-2.amazonaws.com`.
fn region_of(url: &str) -> Option<String> {
    let host = url.split_once("://")?.1.split(['/', ':']).next()?;
    let rest = host.strip_prefix("bedrock-runtime.")?;
    let region = rest.split('.').next()?;
    (!region.is_empty() && rest.contains(".amazonaws.com")).then(|| region.to_string())
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Warnings for keys this version does not know, with the line they are on.
fn unknown_keys(path: &Path, text: &str) -> Vec<String> {
    let Ok(table) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let mut warnings = Vec::new();
    let known = |section: &str| {
        KNOWN
            .iter()
            .find(|(s, _)| *s == section)
            .map(|(_, keys)| *keys)
            .unwrap_or(&[])
    };
    let mut report = |section: &str, key: &str| {
        let line = find_key_line(text, key);
        let name = if section.is_empty() {
            key.to_string()
        } else {
            format!("{section}.{key}")
        };
        let hint = crate::text::closest(key, known(section))
            .map(|near| format!("; did you mean `{near}`?"))
            .unwrap_or_default();
        warnings.push(format!(
            "{}:{line}: unknown key `{name}` ignored{hint}",
            path.display()
        ));
    };
    for (key, value) in &table {
        if !known("").contains(&key.as_str()) {
            report("", key);
            continue;
        }
        // `[mcp_servers.NAME]`: the names are the person's, and `mcp::config` reads (and
        // checks) each server's keys.
        if key == "mcp_servers" {
            continue;
        }
        let tables: Vec<&toml::Table> = match value {
            toml::Value::Table(t) => vec![t],
            toml::Value::Array(items) => items.iter().filter_map(|v| v.as_table()).collect(),
            _ => Vec::new(),
        };
        for t in tables {
            for inner in t.keys() {
                if !known(key).contains(&inner.as_str()) {
                    report(key, inner);
                }
            }
        }
    }
    warnings
}

fn find_key_line(text: &str, key: &str) -> usize {
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            let assignment = l
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='));
            let header = l.starts_with('[')
                && l.trim_start_matches('[')
                    .strip_prefix(key)
                    .is_some_and(|rest| rest.starts_with(']') || rest.starts_with('.'));
            assignment || header
        })
        .map_or(1, |i| i + 1)
}
