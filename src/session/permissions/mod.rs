//! Whether a prepared tool call may run: the mode, the allow/deny rules and what the
//! person already approved for this session. The safety floor is not here — it is enforced
//! in `tools::guard` before a call ever reaches this check — and nothing here can loosen it:
//! a `Never` command segment always goes to a person.

pub mod project;
pub mod trust;

use std::path::Path;

use globset::{Glob, GlobMatcher};

use crate::config::PermissionMode;
use crate::skills::Skill;
use crate::tools::registry::wildcard_match;
use crate::tools::{Access, AccessClass, Prepared, SegmentClass, ToolHints, ToolId, ToolName};

pub use project::ProjectRulesError;
pub use trust::Trust;

/// Command segments are decided as `Bash` calls.
const BASH: ToolId = ToolId::Builtin(ToolName::Bash);

/// The outcome of a permission check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// A person must decide; `reason` says why it is not allowed outright.
    Ask {
        reason: String,
    },
    Deny {
        reason: String,
    },
}

/// A rule like `Bash(cargo test*)`, `Write(src/**)`, a bare tool name `Read`, or a
/// registered tool's name `mcp__github__create_issue` (also `mcp__github__*` and
/// `mcp__github`, every tool of that server, as Claude Code reads them).
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool: RuleTool,
    pattern: Option<Pattern>,
}

#[derive(Debug, Clone)]
enum RuleTool {
    Builtin(ToolName),
    /// A registered tool's name, with `*` matching any run of characters.
    Registered(String),
}

impl RuleTool {
    fn matches(&self, tool: &ToolId) -> bool {
        match (self, tool) {
            (RuleTool::Builtin(rule), ToolId::Builtin(tool)) => {
                // An Edit rule covers Write and vice versa: both change files.
                rule == tool || (rule.changes_files() && tool.changes_files())
            }
            (RuleTool::Registered(rule), ToolId::Registered(name)) => {
                crate::tools::registry::name_matches(rule, name)
            }
            _ => false,
        }
    }
}

/// `mcp__SERVER`, `mcp__SERVER__TOOL` or a `*` pattern of them, or one of the MCP
/// resource tools (Claude Code's names).
fn registered_rule(name: &str) -> bool {
    if [crate::mcp::resources::LIST, crate::mcp::resources::READ].contains(&name) {
        return true;
    }
    name.starts_with("mcp__")
        && name.len() > "mcp__".len()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '*')
}

#[derive(Debug, Clone)]
enum Pattern {
    /// For `Bash`: matched against one command segment; `*` matches anything.
    Command(String),
    /// For `Write`/`Edit`: matched against the path relative to the root.
    Path(GlobMatcher),
}

/// A permission rule that does not parse; each message shows how to write it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("permission rule `{0}`: missing `)`; write rules like `Bash(cargo test*)`")]
    MissingParen(String),
    #[error("permission rule `{rule}`: bad glob: {reason}")]
    BadGlob { rule: String, reason: String },
    #[error("permission rule `{0}`: only Bash, Write and Edit rules take a pattern")]
    PatternNotTaken(String),
    #[error(
        "permission rule `{rule}`: unknown tool `{tool}`; tools are {}, and MCP tools as \
         `mcp__SERVER__TOOL` (or `mcp__SERVER__*`)",
        crate::tools::all_tool_names().join(", ")
    )]
    UnknownTool { rule: String, tool: String },
    #[error("permission rule `{rule}`: MCP tool rules take no pattern; write `{tool}`")]
    McpPattern { rule: String, tool: String },
}

impl Rule {
    pub(in crate::session) fn parse(text: &str) -> Result<Rule, RuleError> {
        let text = text.trim();
        let (tool, pattern) = match text.split_once('(') {
            Some((tool, rest)) => {
                let Some(inner) = rest.strip_suffix(')') else {
                    return Err(RuleError::MissingParen(text.to_string()));
                };
                (tool.trim(), Some(inner.trim()))
            }
            None => (text, None),
        };
        let Some(builtin) = ToolName::resolve(tool) else {
            return Self::parse_registered(text, tool, pattern);
        };
        let pattern = match (builtin, pattern) {
            (_, None) | (_, Some("*")) | (_, Some("")) => None,
            (ToolName::Bash, Some(p)) => {
                // Claude Code writes prefixes as `git diff:*`; treat it as `git diff*`.
                let p = p
                    .strip_suffix(":*")
                    .map_or(p.to_string(), |s| format!("{s}*"));
                Some(Pattern::Command(p))
            }
            (ToolName::Write | ToolName::Edit, Some(p)) => {
                let glob = Glob::new(p).map_err(|e| RuleError::BadGlob {
                    rule: text.to_string(),
                    reason: e.to_string(),
                })?;
                Some(Pattern::Path(glob.compile_matcher()))
            }
            (_, Some(_)) => {
                return Err(RuleError::PatternNotTaken(text.to_string()));
            }
        };
        Ok(Rule {
            text: text.to_string(),
            tool: RuleTool::Builtin(builtin),
            pattern,
        })
    }

    /// A rule naming a registered tool: `mcp__…`, without a pattern in parentheses.
    fn parse_registered(text: &str, tool: &str, pattern: Option<&str>) -> Result<Rule, RuleError> {
        if !registered_rule(tool) {
            return Err(RuleError::UnknownTool {
                rule: text.to_string(),
                tool: tool.to_string(),
            });
        }
        if pattern.is_some_and(|p| !p.is_empty() && p != "*") {
            return Err(RuleError::McpPattern {
                rule: text.to_string(),
                tool: tool.to_string(),
            });
        }
        Ok(Rule {
            text: text.to_string(),
            tool: RuleTool::Registered(tool.to_string()),
            pattern: None,
        })
    }

    /// Matches a call to `tool` touching `subject` (a command segment or a relative path).
    pub fn matches(&self, tool: &ToolId, subject: &str) -> bool {
        if !self.tool.matches(tool) {
            return false;
        }
        match &self.pattern {
            None => true,
            Some(Pattern::Command(p)) => wildcard_match(p, subject.trim()),
            Some(Pattern::Path(glob)) => glob.is_match(subject),
        }
    }
}

/// The rules that "always allow this" means for a call: each command segment's program
/// (`Bash(cargo*)`), the file (`Write(src/main.rs)`, which covers Edit too), or the tool.
pub fn scope_rules(prepared: &Prepared) -> Vec<String> {
    match &prepared.access {
        Access::Read | Access::Screenshot { .. } | Access::Registered { .. } => {
            vec![prepared.tool.to_string()]
        }
        Access::Write { rel, .. } => vec![format!("{}({})", ToolName::Write, escape_glob(rel))],
        Access::Patch { files, .. } => files
            .iter()
            .map(|rel| format!("{}({})", ToolName::Write, escape_glob(rel)))
            .collect(),
        Access::Command { analysis, .. } => {
            let mut rules: Vec<String> = Vec::new();
            for segment in &analysis.segments {
                let rule = format!("{}({}*)", ToolName::Bash, segment.program);
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
            rules
        }
    }
}

/// Whether the call writes where the workspace's grants live (as far as the analysis knows;
/// the sandbox keeps those folders read-only for commands regardless). No mode or rule
/// allows such a call: only a person can.
pub fn writes_grant_path(prepared: &Prepared) -> bool {
    match &prepared.access {
        Access::Write { rel, .. } => trust::is_grant_path(rel),
        Access::Patch { files, .. } => files.iter().any(|rel| trust::is_grant_path(rel)),
        Access::Command { analysis, .. } => {
            analysis
                .write_targets()
                .iter()
                .any(|t| trust::is_grant_target(t))
                || analysis.segments.iter().any(|s| {
                    matches!(s.class, SegmentClass::Never { .. }) && names_grant_path(&s.text)
                })
        }
        Access::Read | Access::Screenshot { .. } | Access::Registered { .. } => false,
    }
}

/// A `Never` segment carries no write targets (the analysis stopped at the first reason),
/// so one whose text so much as names a grant path is taken as writing it: `tee agents/x.md`
/// is `Never` because `agents/` is protected, and must still ask every time.
fn names_grant_path(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || "<>|&;=\"'`()".contains(c))
        .any(|word| !word.is_empty() && trust::is_grant_target(word))
}

/// Whether a person must approve this call each time it comes: it writes where grants
/// live, the model asked to run it outside the sandbox, or it is a patch too large to apply
/// unseen. "Always" answers do not stick.
pub fn once_only(prepared: &Prepared) -> bool {
    writes_grant_path(prepared)
        || matches!(
            &prepared.access,
            Access::Command { unconfined: Some(u), .. } if u.each_time
        )
        || matches!(
            &prepared.access,
            Access::Patch {
                confirm: Some(_),
                ..
            }
        )
}

/// A path as a glob that matches only itself: `src/[id].rs` must not become a character
/// class that also matches `src/i.rs`.
fn escape_glob(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '*' | '?' | '[' | ']' | '{' | '}' => {
                out.push('[');
                out.push(c);
                out.push(']');
            }
            _ => out.push(c),
        }
    }
    out
}

/// The permission state of one session.
#[derive(Debug, Clone, Default)]
pub struct Permissions {
    pub mode: PermissionMode,
    allow: Vec<Rule>,
    deny: Vec<Rule>,
    /// Calls that always ask, whatever allows them (Claude Code's `ask` rules): except in
    /// bypass, which asks nothing, and where a denial wins.
    ask: Vec<Rule>,
    /// Approved by the person with "always (this session)".
    session_allow: Vec<Rule>,
    /// Which of the workspace's own grants hold; with none accepted, project rules and
    /// project skills' `allowed-tools` have no effect.
    trust: Trust,
    /// Set while a custom command's or skill's `` !`cmd` `` lines run (see [`Self::set_rules_only`]).
    rules_only: bool,
    /// `[permissions] skill_shell = false` (Claude Code's `disableSkillShellExecution`): the
    /// `!` lines of skills and commands do not run at all.
    no_skill_shell: bool,
}

impl Permissions {
    pub fn new(mode: PermissionMode, allow: &[String], deny: &[String]) -> Result<Self, RuleError> {
        let parse = |rules: &[String]| -> Result<Vec<Rule>, RuleError> {
            rules.iter().map(|r| Rule::parse(r)).collect()
        };
        Ok(Permissions {
            mode,
            allow: parse(allow)?,
            deny: parse(deny)?,
            ask: Vec::new(),
            session_allow: Vec::new(),
            trust: Trust::default(),
            rules_only: false,
            no_skill_shell: false,
        })
    }

    /// Whether the `` !`cmd` `` lines of skills and commands may run (subject, each, to
    /// the check like any call); `false` turns them all off.
    pub fn with_skill_shell(mut self, on: bool) -> Self {
        self.no_skill_shell = !on;
        self
    }

    /// See [`Self::with_skill_shell`].
    pub fn skill_shell(&self) -> bool {
        !self.no_skill_shell
    }

    /// While on, a command the analysis finds read-only still asks unless a rule allows it
    /// (an allow rule, an "always" answer, the extra rules of [`Self::check_with`]) or the
    /// mode is bypass. For the `` !`cmd` `` lines of a custom command or skill, which its
    /// file's author wrote, not the person or the model: Claude Code runs them only when the
    /// file's `allowed-tools` allow them. Returns the previous setting, to restore.
    pub fn set_rules_only(&mut self, on: bool) -> bool {
        std::mem::replace(&mut self.rules_only, on)
    }

    /// Adds rules whose calls always ask (`[permissions] ask`, Claude Code's `ask`).
    pub fn with_ask(mut self, ask: &[String]) -> Result<Self, RuleError> {
        for rule in ask {
            self.ask.push(Rule::parse(rule)?);
        }
        Ok(self)
    }

    /// Adds rules written for Claude Code (`source` names the file): each one linggen can
    /// express; for each other, one warning saying it is not applied. Returns the warnings.
    pub fn with_foreign_rules(
        mut self,
        allow: &[String],
        ask: &[String],
        deny: &[String],
        source: &str,
    ) -> (Self, Vec<String>) {
        let mut warnings = Vec::new();
        for (rules, kind) in [(allow, "allow"), (ask, "ask"), (deny, "deny")] {
            for text in rules {
                match Rule::parse(text) {
                    Ok(rule) => match kind {
                        "allow" => self.allow.push(rule),
                        "ask" => self.ask.push(rule),
                        _ => self.deny.push(rule),
                    },
                    Err(why) => warnings.push(format!(
                        "{source}: `permissions.{kind}` rule `{text}` is not applied here: {why}"
                    )),
                }
            }
        }
        (self, warnings)
    }

    /// Sets which of the workspace's grants hold. Call before [`Self::with_project_rules`].
    pub fn with_trust(mut self, trust: Trust) -> Self {
        self.trust = trust;
        self
    }

    /// Adds the project's rules (from [`project::load`]) as allow rules, those the person
    /// trusted: the file comes with the workspace. Like every allow rule they cannot make a
    /// `Never` segment run without a person.
    pub fn with_project_rules(mut self, rules: &[String]) -> Result<Self, ProjectRulesError> {
        for text in rules {
            let rule = Rule::parse(text).map_err(ProjectRulesError::RuleInFile)?;
            if self.trust.is_accepted(&trust::project_rule_grant(text)) {
                self.allow.push(rule);
            }
        }
        Ok(self)
    }

    /// A skill's `allowed-tools` that hold (a project skill's only as far as trusted), and
    /// the grant lines of the entries ignored.
    pub fn skill_rules<'a>(&self, skill: &'a Skill) -> (Vec<&'a str>, Vec<String>) {
        self.trust.skill_rules(skill)
    }

    /// Stops allowing `rule`: a configured or project allow rule with that text, and the same
    /// rule approved "always" in this session.
    pub fn revoke(&mut self, rule: &str) {
        let rule = rule.trim();
        self.allow.retain(|r| r.text != rule);
        self.session_allow.retain(|r| r.text != rule);
    }

    /// Takes over what `other` (a copy that went its own way, e.g. a delegated run's) was
    /// allowed for the session since.
    pub fn absorb(&mut self, other: &Permissions) {
        for rule in &other.session_allow {
            if !self.session_allow.iter().any(|r| r.text == rule.text) {
                self.session_allow.push(rule.clone());
            }
        }
    }

    /// Remembers "always allow this, for this session": the command's program prefix or the
    /// file path.
    /// A write to a grant path is never remembered: each one asks.
    pub fn allow_for_session(&mut self, prepared: &Prepared) {
        if writes_grant_path(prepared) {
            return;
        }
        self.session_allow.extend(
            scope_rules(prepared)
                .iter()
                .filter_map(|r| Rule::parse(r).ok()),
        );
    }

    /// "Always, in this project": allows the scope for this session and saves it to
    /// [`project::FILE`] under `root` for later sessions. The session part holds even when
    /// saving fails, which is what the `Err` reports.
    pub(in crate::session) fn allow_for_project(
        &mut self,
        root: &Path,
        prepared: &Prepared,
    ) -> Result<(), String> {
        if writes_grant_path(prepared) {
            return Ok(());
        }
        self.allow_for_session(prepared);
        for rule in scope_rules(prepared) {
            project::add(root, &rule).map_err(|e| e.to_string())?;
            self.trust
                .accept_project_rule(&rule)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Like [`Permissions::check`], with `extra` rules allowed as if configured (a skill's
    /// `allowed-tools` while it runs). Like configured rules they never lift the floor: a
    /// `Never` command segment still goes to a person.
    pub fn check_with(&self, prepared: &Prepared, extra: &[Rule]) -> Verdict {
        if extra.is_empty() {
            return self.check(prepared);
        }
        let mut widened = self.clone();
        widened.allow.extend(extra.iter().cloned());
        widened.check(prepared)
    }

    pub fn check(&self, prepared: &Prepared) -> Verdict {
        match self.check_rules(prepared) {
            Verdict::Allow if self.mode != PermissionMode::Bypass => {
                match self.asked_by(prepared) {
                    Some(rule) => Verdict::Ask {
                        reason: format!("rule `{rule}` asks every time"),
                    },
                    None => Verdict::Allow,
                }
            }
            verdict => verdict,
        }
    }

    /// Whether an `ask` rule covers the call, so it asks every time (outside bypass mode):
    /// approving it "always" would change nothing.
    pub fn asks_every_time(&self, prepared: &Prepared) -> bool {
        self.mode != PermissionMode::Bypass && self.asked_by(prepared).is_some()
    }

    /// The first `ask` rule that covers the call: for a command, any of its parts; for a
    /// patch, any of its files.
    fn asked_by(&self, prepared: &Prepared) -> Option<&str> {
        let tool = &prepared.tool;
        let subjects: Vec<&str> = match &prepared.access {
            Access::Read | Access::Registered { .. } => vec![""],
            Access::Write { rel, .. } => vec![rel.as_str()],
            Access::Patch { files, .. } => files.iter().map(String::as_str).collect(),
            Access::Screenshot { url } => vec![url.as_str()],
            Access::Command {
                command, analysis, ..
            } => std::iter::once(command.as_str())
                .chain(analysis.segments.iter().map(|s| s.text.as_str()))
                .collect(),
        };
        self.ask
            .iter()
            .find(|r| subjects.iter().any(|subject| r.matches(tool, subject)))
            .map(|r| r.text.as_str())
    }

    fn check_rules(&self, prepared: &Prepared) -> Verdict {
        let tool = &prepared.tool;
        match &prepared.access {
            Access::Read => match self.denied_by(tool, "") {
                Some(rule) => Verdict::Deny {
                    reason: format!("denied by rule `{rule}`"),
                },
                None => Verdict::Allow,
            },
            Access::Write { rel, .. } => self.check_write(tool, rel),
            Access::Patch { files, confirm, .. } => self.check_patch(tool, files, confirm),
            Access::Screenshot { url } => self.check_screenshot(tool, url),
            Access::Registered {
                class,
                hints,
                origin,
            } => self.check_registered(tool, *class, hints, origin),
            Access::Command {
                command,
                analysis,
                unconfined,
            } => {
                if let Some(rule) = self.denied_by(tool, command) {
                    return Verdict::Deny {
                        reason: format!("denied by rule `{rule}`"),
                    };
                }
                let mut asks = Vec::new();
                // Outside the sandbox the analysis is the only check left, and it can be
                // wrong: a person decides (no mode or configured rule does), every time
                // when the model asked to leave the sandbox.
                if let Some(unconfined) = unconfined {
                    let approved = !unconfined.each_time
                        && analysis
                            .segments
                            .iter()
                            .all(|s| self.session_allow.iter().any(|r| r.matches(&BASH, &s.text)));
                    if !approved {
                        asks.push(unconfined.reason.clone());
                    }
                }
                for segment in &analysis.segments {
                    match self.check_segment(&segment.text, &segment.class) {
                        Verdict::Allow => {}
                        Verdict::Ask { reason } => asks.push(reason),
                        deny @ Verdict::Deny { .. } => return deny,
                    }
                }
                if asks.is_empty() {
                    Verdict::Allow
                } else {
                    Verdict::Ask {
                        reason: asks.join("; "),
                    }
                }
            }
        }
    }

    fn check_write(&self, tool: &ToolId, rel: &str) -> Verdict {
        if let Some(rule) = self.denied_by(tool, rel) {
            return Verdict::Deny {
                reason: format!("denied by rule `{rule}`"),
            };
        }
        match self.mode {
            PermissionMode::Plan => Verdict::Deny {
                reason: "plan mode is read-only".into(),
            },
            // Before every mode and rule: the agent must not widen its own powers unseen.
            _ if trust::is_grant_path(rel) => Verdict::Ask {
                reason: trust::grant_path_reason(rel),
            },
            PermissionMode::AcceptEdits | PermissionMode::Bypass => Verdict::Allow,
            PermissionMode::Default if self.allowed_by(tool, rel) => Verdict::Allow,
            PermissionMode::Default => Verdict::Ask {
                reason: format!("{tool} changes {rel}"),
            },
        }
    }

    /// A patch is decided as a write of each of its files: one file a rule denies or plan
    /// mode refuses denies it whole, one that needs a person asks for it whole. A large patch
    /// asks whatever the mode or rules (but a denial still wins).
    fn check_patch(&self, tool: &ToolId, files: &[String], confirm: &Option<String>) -> Verdict {
        let mut asks: Vec<String> = Vec::new();
        for rel in files {
            match self.check_write(tool, rel) {
                Verdict::Allow => {}
                Verdict::Ask { reason } => asks.push(reason),
                deny @ Verdict::Deny { .. } => return deny,
            }
        }
        asks.extend(confirm.iter().cloned());
        if asks.is_empty() {
            Verdict::Allow
        } else {
            Verdict::Ask {
                reason: asks.join("; "),
            }
        }
    }

    /// A screenshot makes a browser fetch a URL and run the page's scripts, then writes a
    /// PNG. That is what an unlisted command such as `curl -o shot localhost:3000` does, so
    /// it is decided the same way: it asks in `default` and in `accept-edits` (which
    /// accepts edits of files, not fetches), plan mode refuses it even with an allow rule
    /// (it writes), bypass runs it, and an allow rule (`capture_screenshot`, no pattern)
    /// lets it run in the other modes.
    fn check_screenshot(&self, tool: &ToolId, url: &str) -> Verdict {
        if let Some(rule) = self.denied_by(tool, url) {
            return Verdict::Deny {
                reason: format!("denied by rule `{rule}`"),
            };
        }
        match self.mode {
            // Before the allow rules, as for Write: no rule makes plan mode write.
            PermissionMode::Plan => Verdict::Deny {
                reason: "plan mode is read-only; capture_screenshot writes a PNG file".into(),
            },
            PermissionMode::Bypass => Verdict::Allow,
            _ if self.allowed_by(tool, url) => Verdict::Allow,
            PermissionMode::Default | PermissionMode::AcceptEdits => Verdict::Ask {
                reason: format!("capture_screenshot opens {url} in a browser and saves a PNG"),
            },
        }
    }

    fn check_segment(&self, text: &str, class: &SegmentClass) -> Verdict {
        if let Some(rule) = self.denied_by(&BASH, text) {
            return Verdict::Deny {
                reason: format!("denied by rule `{rule}`"),
            };
        }
        match class {
            SegmentClass::ReadOnly
                if self.rules_only
                    && self.mode != PermissionMode::Bypass
                    && !self.allowed_by(&BASH, text) =>
            {
                Verdict::Ask {
                    reason: format!(
                        "`{text}` comes from a command or skill file, and no allowed-tools \
                         entry or rule of yours allows it"
                    ),
                }
            }
            SegmentClass::ReadOnly => Verdict::Allow,
            // Plan mode's limit comes before every rule: a rule (configured, a session's
            // "always", a skill's allowed-tools) lifts a question, never the limit.
            SegmentClass::Never { reason } | SegmentClass::Unlisted { reason }
                if self.mode == PermissionMode::Plan =>
            {
                Verdict::Deny {
                    reason: format!("plan mode runs only read-only commands: {reason}"),
                }
            }
            // The floor: no mode and no rule auto-runs these; only a person can.
            SegmentClass::Never { reason } => {
                if !names_grant_path(text)
                    && self.session_allow.iter().any(|r| r.matches(&BASH, text))
                {
                    Verdict::Allow
                } else {
                    Verdict::Ask {
                        reason: reason.clone(),
                    }
                }
            }
            SegmentClass::Writes { targets } => match self.mode {
                PermissionMode::Plan => Verdict::Deny {
                    reason: "plan mode is read-only; this command writes files".into(),
                },
                _ if targets.iter().any(|t| trust::is_grant_target(t)) => Verdict::Ask {
                    reason: targets
                        .iter()
                        .find(|t| trust::is_grant_target(t))
                        .map_or_else(String::new, |t| trust::grant_path_reason(t)),
                },
                PermissionMode::AcceptEdits | PermissionMode::Bypass => Verdict::Allow,
                PermissionMode::Default if self.allowed_by(&BASH, text) => Verdict::Allow,
                PermissionMode::Default => Verdict::Ask {
                    reason: format!("`{text}` writes {}", targets.join(", ")),
                },
            },
            // Plan mode was refused above, before the rules.
            SegmentClass::Unlisted { reason } => {
                if self.mode == PermissionMode::Bypass || self.allowed_by(&BASH, text) {
                    Verdict::Allow
                } else {
                    Verdict::Ask {
                        reason: reason.clone(),
                    }
                }
            }
        }
    }

    /// A registered tool (an MCP server's) may do anything its server does: it asks unless a
    /// rule allows it by name, whatever its author's hints say. Plan mode refuses it unless
    /// it is declared read-only, and even then a person decides. Bypass runs it.
    fn check_registered(
        &self,
        tool: &ToolId,
        class: AccessClass,
        hints: &ToolHints,
        origin: &str,
    ) -> Verdict {
        if let Some(rule) = self.denied_by(tool, "") {
            return Verdict::Deny {
                reason: format!("denied by rule `{rule}`"),
            };
        }
        let what = match (hints.read_only, hints.destructive) {
            (true, _) => "says it only reads",
            (false, true) => "says it may delete or overwrite",
            (false, false) => "may change things",
        };
        match self.mode {
            PermissionMode::Plan if class == AccessClass::Read => Verdict::Allow,
            PermissionMode::Plan if hints.read_only => Verdict::Ask {
                reason: format!("plan mode: {tool} from {origin} {what}"),
            },
            PermissionMode::Plan => Verdict::Deny {
                reason: format!("plan mode is read-only; {tool} from {origin} {what}"),
            },
            PermissionMode::Bypass => Verdict::Allow,
            _ if self.allowed_by(tool, "") => Verdict::Allow,
            // Only linggen's own registered tools declare this class (`tool_search`); an
            // MCP server's tools never do.
            _ if class == AccessClass::Read => Verdict::Allow,
            _ => Verdict::Ask {
                reason: format!("{tool} from {origin} {what}"),
            },
        }
    }

    fn denied_by(&self, tool: &ToolId, subject: &str) -> Option<&str> {
        self.deny
            .iter()
            .find(|r| r.matches(tool, subject))
            .map(|r| r.text.as_str())
    }

    fn allowed_by(&self, tool: &ToolId, subject: &str) -> bool {
        self.allow
            .iter()
            .chain(&self.session_allow)
            .any(|r| r.matches(tool, subject))
    }
}

#[cfg(test)]
mod tests;
