//! Commands that show or change how the session works: `/settings`, `/permissions`,
//! `/model`, `/theme`, `/sessions`, and the session restarts behind `/clear`, `/resume`.
//! The session owns the model, permission mode and `max_iters`: the shell sends it an
//! input and shows its answer (`SettingsUpdated`, or an error), never its own copy.

use super::shell::Shell;
use crate::config::PermissionMode;
use crate::session::permissions::{project, trust};
use crate::session::{Input, TurnMode};

impl Shell {
    /// `/model ID`: the next turns go to that configured model; `/model auto`: the
    /// routing policy chooses per call again.
    pub(super) async fn set_model(&mut self, id: &str) {
        let model = id.to_string();
        // Remembered for restarts (`/clear`, `/resume`) only when the session accepted it;
        // its answer is what the person sees.
        if self.ask(Input::SetModel { model }).await {
            self.model_choice = Some(id.to_string());
        }
    }

    pub(super) async fn switch(&mut self, next: crate::app::Start, what: &str) {
        match self.restart(next).await {
            Ok(()) => {
                let id = self
                    .link
                    .live
                    .as_ref()
                    .map(|l| l.session_id.as_str())
                    .unwrap_or("-");
                let line = format!("{what} · session {id}");
                self.view.hint(&line);
            }
            Err(f) => self.view.error(&f.message),
        }
    }

    pub(super) async fn permissions(&mut self, args: &str) {
        if let Some(mode) = PermissionMode::parse(args) {
            self.ask(Input::SetPermissionMode { mode }).await;
            return;
        }
        if let Some(rule) = args.strip_prefix("remove ") {
            self.remove_permission(rule.trim()).await;
            return;
        }
        self.list_permissions().await;
    }

    /// `/permissions remove N|sN|RULE`: a session answer stops allowing, and a project
    /// rule leaves the project's file and the running session.
    async fn remove_permission(&mut self, wanted: &str) {
        let Some(rule) = self.revoke_session_grant(wanted).await else {
            return;
        };
        let (root, rule) = (self.ws.root.clone(), rule);
        // A file rewrite: off the runtime.
        let removed = tokio::task::spawn_blocking(move || project::remove(&root, &rule));
        match removed
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()))
        {
            Ok(removed) => {
                // The running session must stop allowing it now, not at the next start.
                let revoke = Input::RevokeRule {
                    rule: removed.clone(),
                };
                if self.ask(revoke).await {
                    self.view.hint(&format!("removed project rule {removed}"));
                } else {
                    let line = format!("removed project rule {removed} from the file");
                    self.view.hint(&line);
                }
            }
            Err(e) => self.view.error(&e),
        }
    }

    /// `/permissions`: the mode, the configured rules, the project's rules (each trusted or
    /// not), and what this session's answers allowed.
    async fn list_permissions(&mut self) {
        let mode = self.view.settings().permission_mode;
        let mut lines = vec![format!("permission mode: {}", mode.as_str())];
        for rule in &self.ws.config.allow {
            lines.push(format!("  allow {rule}"));
        }
        for rule in &self.ws.config.deny {
            lines.push(format!("  deny  {rule}"));
        }
        for rule in &self.ws.config.ask {
            lines.push(format!("  ask   {rule}"));
        }
        lines.extend(claude_rule_lines(&self.ws));
        // Read afresh (a `p` answer in this session has added to both files since start),
        // off the runtime.
        let (home, root) = (self.ws.home.clone(), self.ws.root.clone());
        let read = tokio::task::spawn_blocking(move || {
            let accepted = crate::config::trust::TrustStore::new(&home)
                .accepted(&root)
                .unwrap_or_default();
            (accepted, project::load(&root).map_err(|e| e.to_string()))
        });
        let (accepted, rules) = read
            .await
            .unwrap_or_else(|e| (Default::default(), Err(e.to_string())));
        lines.extend(project_rule_lines(&accepted, rules));
        for grant in self.ws.config.withheld.grants() {
            if !accepted.contains(&grant) {
                lines.push(format!("  not trusted, ignored: {grant}"));
            }
        }
        lines.extend(session_grant_lines(self.view.grants()));
        lines.push(format!(
            "/permissions <{}> switches mode · /permissions remove N|sN|RULE drops a project rule or a session answer",
            PermissionMode::NAMES.replace(", ", "|")
        ));
        self.view.lines(lines);
    }

    /// `/permissions remove sN` (or a rule only this session's answers allow): the session
    /// stops allowing it. Returns the rule still to remove from the project's file, if any
    /// (a project rule, or an answer that was saved for the project too).
    async fn revoke_session_grant(&mut self, wanted: &str) -> Option<String> {
        let grants = self.view.grants();
        let by_index = wanted
            .strip_prefix('s')
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| grants.get(i));
        let grant = by_index
            .or_else(|| grants.iter().find(|g| g.rule == wanted && !g.project))
            .cloned();
        let Some(grant) = grant else {
            if wanted.starts_with('s') && wanted[1..].parse::<usize>().is_ok() {
                self.view.error(&format!(
                    "no session answer {wanted}; /permissions lists them"
                ));
                return None;
            }
            return Some(wanted.to_string());
        };
        if grant.project {
            // The project path revokes it in the session too.
            return Some(grant.rule);
        }
        let rule = grant.rule.clone();
        if self.ask(Input::RevokeRule { rule: rule.clone() }).await {
            self.view.revoke_grant(&rule);
            self.view
                .hint(&format!("this session no longer allows {rule}"));
        }
        None
    }

    pub(super) async fn sessions(&mut self) {
        let (home, root) = (self.ws.home.clone(), self.ws.root.clone());
        let lines = crate::app::off_runtime(move || crate::app::session_lines(&home, &root));
        match lines.await {
            Ok(lines) => self.view.lines(lines),
            Err(f) => self.view.error(&f.message),
        }
        self.refresh_lists().await;
    }

    pub(super) fn theme(&mut self, args: &str) {
        if args.is_empty() {
            let names: Vec<String> = super::theme::available(&self.ws.home)
                .into_iter()
                .map(|name| {
                    if name == self.ws.config.theme {
                        format!("{name} (current)")
                    } else {
                        name
                    }
                })
                .collect();
            self.view.hint(&format!("themes: {}", names.join(", ")));
            return;
        }
        match super::theme::load(args, &self.ws.home) {
            Ok(theme) => {
                self.view.set_theme(theme);
                self.ws.config.theme = args.to_string();
                self.view.hint(&format!("theme {args}"));
            }
            Err(e) => self.view.error(&e.to_string()),
        }
    }

    /// `/settings key value`: changes one setting for this session.
    pub(super) async fn set(&mut self, args: &str) {
        let (key, value) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
        let value = value.trim();
        if value.is_empty() {
            self.view.error(&format!("/settings {key} needs a value"));
            return;
        }
        match key {
            "model" => self.set_model(value).await,
            "max_iters" => match crate::config::parse_max_iters(value) {
                Ok(max_iters) => {
                    self.ask(Input::SetMaxIters { max_iters }).await;
                }
                Err(e) => self.view.error(&format!("max_iters {value}: {e}")),
            },
            "permission_mode" => match PermissionMode::parse(value) {
                Some(mode) => {
                    self.ask(Input::SetPermissionMode { mode }).await;
                }
                None => self.view.error(&format!(
                    "permission_mode {value}: expected one of {}",
                    PermissionMode::NAMES
                )),
            },
            "theme" => self.theme(value),
            "agent" => self.set_agent(value).await,
            "mode" => self.set_mode(value).await,
            "show_thinking" => {
                match value {
                    "true" | "on" | "yes" => self.view.show_thinking = true,
                    "false" | "off" | "no" => self.view.show_thinking = false,
                    _ => return self.view.error("show_thinking: expected true or false"),
                }
                self.view.hint(&format!("show_thinking {value}"));
            }
            _ => self.view.error(&format!(
                "unknown setting `{key}`; settable: {}",
                super::catalog::SETTING_KEYS.join(", ")
            )),
        }
    }

    pub(super) fn settings(&mut self) {
        let c = &self.ws.config;
        // Origins: a value that differs from the configured one was chosen for this
        // session (a flag or a command); the values are the session's own.
        let origin = match (
            &self.model_choice,
            &self.start.overrides.model,
            &c.model_choice,
        ) {
            (Some(_), _, _) => "this session (/model)".to_string(),
            (None, Some(_), _) => "--model".to_string(),
            (None, None, Some(_)) => c.model_choice_origin.clone(),
            (None, None, None) => "default: the first [[models]] entry, else Ollama's first".into(),
        };
        let mode = self.view.settings().permission_mode;
        let mode_origin = if mode == c.permission_mode {
            c.origin("permission_mode")
        } else {
            "this session"
        };
        let agent = &self.view.settings().agent_id;
        let agent_origin = match &self.start.agent {
            Some(flag) if flag == agent => "--agent",
            _ if agent == crate::app::DEFAULT_AGENT => "default",
            _ => "this session (/agent)",
        };
        let turn_mode = self.view.settings().mode;
        let agent_mode = self.ws.agents.get().get(agent).and_then(|a| a.mode);
        let turn_mode_origin = match self.start.mode {
            Some(flag) if flag == turn_mode => "--mode",
            _ if agent_mode == Some(turn_mode) => "the agent's mode:",
            _ if turn_mode == TurnMode::default() => "default",
            _ => "this session (/mode)",
        };
        let row = |key: &str, value: &dyn std::fmt::Display, origin: &str| {
            format!("{key:<22}{value}  ({origin})")
        };
        let mut lines = vec![
            format!("{:<22}{}", "root", self.ws.root.display()),
            row("model", &self.view.settings().model, &origin),
            row("agent", agent, agent_origin),
            row("mode", &turn_mode.as_str(), turn_mode_origin),
            row(
                "max_iters",
                &self.view.settings().max_iters,
                if self.view.settings().max_iters == c.max_iters {
                    c.origin("max_iters")
                } else {
                    "this session"
                },
            ),
            row(
                "max_delegation_depth",
                &c.max_delegation_depth,
                c.origin("max_delegation_depth"),
            ),
            row("permission_mode", &mode.as_str(), mode_origin),
            row("skill_shell", &c.skill_shell, c.origin("skill_shell")),
            row(
                "bash_timeout_ms",
                &c.bash_timeout_ms,
                c.origin("bash_timeout_ms"),
            ),
            row("theme", &c.theme, c.origin("theme")),
            row(
                "show_thinking",
                &self.view.show_thinking,
                c.origin("show_thinking"),
            ),
        ];
        for file in &c.files {
            lines.push(format!("{:<22}{}", "config file", file.display()));
        }
        lines.push("/settings KEY VALUE changes one for this session".to_string());
        self.view.lines(lines);
    }
}

/// Claude Code's rules in force: the person's `~/.claude/settings.json` and the
/// workspace's `.claude/settings*.json` (whose `allow` rules hold only once trusted).
fn claude_rule_lines(ws: &crate::app::Workspace) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(claude) = &ws.config.claude {
        let from = claude.path.display();
        for (kind, rules) in [
            ("allow", &claude.allow),
            ("ask", &claude.ask),
            ("deny", &claude.deny),
        ] {
            lines.extend(rules.iter().map(|r| format!("  {kind:<5} {r}  ({from})")));
        }
    }
    for project in &ws.config.claude_project {
        let claude = &project.permissions;
        let held = project.accepted_allow(|g| ws.trust.trust.is_accepted(g));
        for rule in &claude.allow {
            let note = match held.contains(rule) {
                true => "",
                false => " (not trusted, ignored; see `linggen trust`)",
            };
            lines.push(format!("  allow {rule}  ({}){note}", project.file));
        }
        for (kind, rules) in [("ask", &claude.ask), ("deny", &claude.deny)] {
            lines.extend(
                rules
                    .iter()
                    .map(|r| format!("  {kind:<5} {r}  ({})", project.file)),
            );
        }
    }
    lines
}

/// The project's own rules, numbered for `/permissions remove N`; each holds only once the
/// person trusted it.
fn project_rule_lines(
    accepted: &std::collections::BTreeSet<String>,
    rules: Result<Vec<String>, String>,
) -> Vec<String> {
    let rules = match rules {
        Ok(rules) => rules,
        Err(e) => return vec![e],
    };
    let mut lines = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        let ignored = if accepted.contains(&trust::project_rule_grant(rule)) {
            ""
        } else {
            " (not trusted, ignored; see `linggen trust`)"
        };
        lines.push(format!("  [{}] project allow {rule}{ignored}", i + 1));
    }
    lines
}

/// What this session's "always" answers allowed, numbered for `/permissions remove sN`.
fn session_grant_lines(grants: &[crate::session::view::SessionGrant]) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, grant) in grants.iter().enumerate() {
        let saved = if grant.project {
            ", saved for the project too"
        } else {
            ""
        };
        lines.push(format!(
            "  [s{}] session allow {} · answered in {} for `{}`{saved}",
            i + 1,
            grant.rule,
            grant.by,
            grant.call
        ));
    }
    lines
}
