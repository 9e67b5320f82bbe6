//! Commands that show or change how the session works: `/settings`, `/permissions`,
//! `/theme`, `/sessions`, and the session restarts behind `/model`, `/clear`, `/resume`.

use super::shell::Shell;
use crate::config::PermissionMode;
use crate::session::TurnMode;
use crate::session::permissions::{project, trust};

impl Shell {
    /// The CLI flags that reopen the current session (for changes that keep the history).
    pub(super) fn resume_current(&self) -> crate::cli::Cli {
        let mut cli = self.cli.clone();
        (cli.continue_session, cli.resume) = (false, Some(self.live.session_id.clone()));
        cli
    }

    pub(super) async fn switch(&mut self, cli: crate::cli::Cli, what: &str) {
        match self.restart(cli).await {
            Ok(()) => {
                let line = format!("{what} · session {}", self.live.session_id);
                self.view.hint(&line);
            }
            Err(f) => self.view.error(&f.message),
        }
    }

    pub(super) async fn permissions(&mut self, args: &str) {
        if let Some(mode) = PermissionMode::parse(args) {
            let mut cli = self.resume_current();
            cli.permission_mode = Some(mode);
            self.switch(cli, &format!("permission mode {}", mode.as_str()))
                .await;
            return;
        }
        if let Some(rule) = args.strip_prefix("remove ") {
            match project::remove(&self.ws.root, rule.trim()) {
                Ok(removed) => {
                    // The running session must stop allowing it now, not at the next start.
                    let revoke = crate::session::Input::RevokeRule {
                        rule: removed.clone(),
                    };
                    let _ = self.live.handle.inputs.send(revoke).await;
                    self.view.hint(&format!("removed project rule {removed}"));
                }
                Err(e) => self.view.error(&e),
            }
            return;
        }
        let mode = self
            .cli
            .permission_mode
            .unwrap_or(self.ws.config.permission_mode);
        let mut lines = vec![format!("permission mode: {}", mode.as_str())];
        for rule in &self.ws.config.allow {
            lines.push(format!("  allow {rule}"));
        }
        for rule in &self.ws.config.deny {
            lines.push(format!("  deny  {rule}"));
        }
        // Read afresh: a `p` answer in this session has added to both files since start.
        let accepted = crate::config::trust::TrustStore::new(&self.ws.home)
            .accepted(&self.ws.root)
            .unwrap_or_default();
        match project::load(&self.ws.root) {
            Ok(rules) => {
                for (i, rule) in rules.iter().enumerate() {
                    let ignored = if accepted.contains(&trust::project_rule_grant(rule)) {
                        ""
                    } else {
                        " (not trusted, ignored; see `linggen trust`)"
                    };
                    lines.push(format!("  [{}] project allow {rule}{ignored}", i + 1));
                }
            }
            Err(e) => lines.push(e),
        }
        for grant in self.ws.config.withheld.grants() {
            if !accepted.contains(&grant) {
                lines.push(format!("  not trusted, ignored: {grant}"));
            }
        }
        lines.push(format!(
            "/permissions <{}> switches mode · /permissions remove N|RULE drops a project rule",
            PermissionMode::NAMES.replace(", ", "|")
        ));
        self.view.lines(lines);
    }

    pub(super) fn sessions(&mut self) {
        match crate::app::session_lines(&self.ws) {
            Ok(lines) => self.view.lines(lines),
            Err(f) => self.view.error(&f.message),
        }
        self.refresh_lists();
    }

    pub(super) fn theme(&mut self, args: &str) {
        if args.is_empty() {
            let names = super::theme::available(&self.ws.home).join(", ");
            self.view.hint(&format!("themes: {names}"));
            return;
        }
        match super::theme::load(args, &self.ws.home) {
            Ok(theme) => {
                self.view.set_theme(theme);
                self.view.hint(&format!("theme {args}"));
            }
            Err(e) => self.view.error(&e),
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
        let mut cli = self.resume_current();
        match key {
            "model" => cli.model = Some(value.to_string()),
            "max_iters" => match crate::config::parse_max_iters(value) {
                Ok(n) => cli.max_iters = Some(n),
                Err(e) => return self.view.error(&format!("max_iters {value}: {e}")),
            },
            "permission_mode" => match PermissionMode::parse(value) {
                Some(mode) => cli.permission_mode = Some(mode),
                None => {
                    return self.view.error(&format!(
                        "permission_mode {value}: expected one of {}",
                        PermissionMode::NAMES
                    ));
                }
            },
            "theme" => return self.theme(value),
            "agent" => return self.set_agent(value).await,
            "mode" => return self.set_mode(value).await,
            "show_thinking" => {
                match value {
                    "true" | "on" | "yes" => self.view.show_thinking = true,
                    "false" | "off" | "no" => self.view.show_thinking = false,
                    _ => return self.view.error("show_thinking: expected true or false"),
                }
                return self.view.hint(&format!("show_thinking {value}"));
            }
            _ => {
                return self.view.error(&format!(
                    "unknown setting `{key}`; settable: {}",
                    super::catalog::SETTING_KEYS.join(", ")
                ));
            }
        }
        self.switch(cli, &format!("{key} = {value}")).await;
    }

    pub(super) fn settings(&mut self) {
        let c = &self.ws.config;
        let origin = match (&self.cli.model, &c.model_choice) {
            (Some(_), _) => "/model or --model".to_string(),
            (None, Some(_)) => c.model_choice_origin.clone(),
            (None, None) => "default: the first [[models]] entry, else Ollama's first".into(),
        };
        let mode = self.cli.permission_mode.unwrap_or(c.permission_mode);
        let mode_origin = if self.cli.permission_mode.is_some() {
            "this session"
        } else {
            c.origin("permission_mode")
        };
        let agent = &self.view.agent;
        let agent_origin = match &self.cli.agent {
            Some(flag) if flag == agent => "--agent",
            _ if agent == crate::app::DEFAULT_AGENT => "default",
            _ => "this session (/agent)",
        };
        let turn_mode = self.view.mode;
        let turn_mode_origin = if turn_mode == TurnMode::default() {
            "default"
        } else {
            "this session (/mode)"
        };
        let row = |key: &str, value: &dyn std::fmt::Display, origin: &str| {
            format!("{key:<22}{value}  ({origin})")
        };
        let mut lines = vec![
            format!("{:<22}{}", "root", self.ws.root.display()),
            row("model", &self.view.model, &origin),
            row("agent", agent, agent_origin),
            row("mode", &turn_mode.as_str(), turn_mode_origin),
            row(
                "max_iters",
                &self.cli.max_iters.unwrap_or(c.max_iters),
                if self.cli.max_iters.is_some() {
                    "this session"
                } else {
                    c.origin("max_iters")
                },
            ),
            row(
                "max_delegation_depth",
                &c.max_delegation_depth,
                c.origin("max_delegation_depth"),
            ),
            row("permission_mode", &mode.as_str(), mode_origin),
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
