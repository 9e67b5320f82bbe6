//! What a submitted line does: an approval answer, a built-in command, or a message.

use std::path::Path;

use super::approval::{self, Answer};
use super::commands::Command;
use super::editor;
use super::shell::Shell;
use super::triggers::Parsed;
use crate::config::PermissionMode;
use crate::session::{Input, lock, permissions::project};

/// Attached files larger than this are cut, so one `@file` cannot fill the context.
const ATTACHMENT_MAX_BYTES: usize = 100_000;

impl Shell {
    /// Handles one submitted line; `false` means quit.
    pub async fn handle_line(&mut self, line: String) -> bool {
        let line = editor::join_continuations(&line);
        if self.answer_approval(&line).await {
            return true;
        }
        match self.catalog.parse(&line) {
            Parsed::Empty => true,
            Parsed::Command { command, .. } if command.quits() => false,
            Parsed::Command { command, args } => {
                if self.shared.is_busy() && !command.available_while_busy() {
                    self.view
                        .hint(&format!("/{} can run when this turn ends", command.name()));
                } else {
                    self.run_command(command, args.trim()).await;
                }
                true
            }
            Parsed::Message { text, attachments } => {
                self.send(text, &attachments).await;
                true
            }
            Parsed::AgentMessage {
                agent,
                message,
                attachments,
            } => {
                if agent != "ling" {
                    self.view.hint(&format!(
                        "agent `{agent}` is not available yet (agents arrive with skills and agents); sending to ling"
                    ));
                }
                self.send(message, &attachments).await;
                true
            }
            other => {
                match other.error_message() {
                    Some(message) => self.view.error(&message),
                    None => self
                        .view
                        .hint("skills and custom triggers arrive with skills and agents"),
                }
                true
            }
        }
    }

    /// `true` when the line was the answer to a waiting approval.
    async fn answer_approval(&mut self, line: &str) -> bool {
        let pending = lock(&self.shared.approval).clone();
        let Some(pending) = pending else {
            return false;
        };
        if pending.typeahead {
            // This is the line the person was typing when the approval appeared.
            if let Some(p) = lock(&self.shared.approval).as_mut() {
                p.typeahead = false;
            }
            return false;
        }
        match approval::parse(line) {
            Answer::Repeat => self.view.hint(approval::CHOICES),
            Answer::Decide(decision) => {
                let _ = self
                    .live
                    .handle
                    .inputs
                    .send(Input::Approval {
                        id: pending.id,
                        decision,
                        from: "terminal".into(),
                    })
                    .await;
            }
        }
        true
    }

    async fn send(&mut self, text: String, attachments: &[String]) {
        let mut content = text;
        for path in attachments {
            if let Some(block) = attachment(&self.ws.root, path) {
                content.push_str(&block);
            }
        }
        let _ = self
            .live
            .handle
            .inputs
            .send(Input::message(content, "terminal"))
            .await;
    }

    async fn run_command(&mut self, command: Command, args: &str) {
        match command {
            Command::Help => self.view.lines(super::catalog::help_lines()),
            Command::Clear => {
                let mut cli = self.cli.clone();
                (cli.continue_session, cli.resume) = (false, None);
                self.switch(cli, "new session").await;
            }
            Command::Model if args.is_empty() => {
                let ids: Vec<&str> = self
                    .ws
                    .config
                    .models
                    .iter()
                    .map(|m| m.id.as_str())
                    .collect();
                let configured = if ids.is_empty() {
                    "none".to_string()
                } else {
                    ids.join(", ")
                };
                let line = format!(
                    "model: {} · configured: {configured} · /model <id> switches",
                    self.view.model
                );
                self.view.hint(&line);
            }
            Command::Model => {
                let mut cli = self.resume_current();
                cli.model = Some(args.to_string());
                self.switch(cli, &format!("model {args}")).await;
            }
            Command::Permissions => self.permissions(args).await,
            Command::Resume => {
                let mut cli = self.cli.clone();
                if args.is_empty() {
                    (cli.continue_session, cli.resume) = (true, None);
                } else {
                    (cli.continue_session, cli.resume) = (false, Some(args.to_string()));
                }
                self.switch(cli, "resumed").await;
            }
            Command::Sessions => self.sessions(),
            Command::Context => self.view.context(),
            Command::Theme => self.theme(args),
            Command::Settings if args.is_empty() => self.settings(),
            Command::Settings => self.set(args).await,
            Command::Agent => self
                .view
                .hint("only `ling` is available until agents arrive (skills and agents work)"),
            Command::Mode => self
                .view
                .hint("`/mode auto` arrives with agents; this session runs in chat mode"),
            Command::Share => self.view.hint(
                "/share (the live web mirror) is not built yet; it comes with the web mirror work",
            ),
            Command::Quit | Command::Exit => {}
        }
    }

    /// The CLI flags that reopen the current session (for changes that keep the history).
    fn resume_current(&self) -> crate::cli::Cli {
        let mut cli = self.cli.clone();
        (cli.continue_session, cli.resume) = (false, Some(self.live.session_id.clone()));
        cli
    }

    async fn switch(&mut self, cli: crate::cli::Cli, what: &str) {
        match self.restart(cli).await {
            Ok(()) => {
                let line = format!("{what} · session {}", self.live.session_id);
                self.view.hint(&line);
            }
            Err(f) => self.view.error(&f.message),
        }
    }

    async fn permissions(&mut self, args: &str) {
        if let Some(mode) = PermissionMode::parse(args) {
            let mut cli = self.resume_current();
            cli.permission_mode = Some(mode);
            self.switch(cli, &format!("permission mode {}", mode.as_str()))
                .await;
            return;
        }
        if let Some(rule) = args.strip_prefix("remove ") {
            match project::remove(&self.ws.root, rule.trim()) {
                Ok(removed) => self.view.hint(&format!("removed project rule {removed}")),
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
        match project::load(&self.ws.root) {
            Ok(rules) => {
                for (i, rule) in rules.iter().enumerate() {
                    lines.push(format!("  [{}] project allow {rule}", i + 1));
                }
            }
            Err(e) => lines.push(e),
        }
        lines.push(format!(
            "/permissions <{}> switches mode · /permissions remove N|RULE drops a project rule",
            PermissionMode::NAMES.replace(", ", "|")
        ));
        self.view.lines(lines);
    }

    fn sessions(&mut self) {
        match crate::app::session_lines(&self.ws) {
            Ok(lines) => self.view.lines(lines),
            Err(f) => self.view.error(&f.message),
        }
        self.refresh_lists();
    }

    fn theme(&mut self, args: &str) {
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
    async fn set(&mut self, args: &str) {
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
                    "unknown setting `{key}`; settable: model, max_iters, permission_mode, theme, show_thinking"
                ));
            }
        }
        self.switch(cli, &format!("{key} = {value}")).await;
    }

    fn settings(&mut self) {
        let c = &self.ws.config;
        let origin = match (&self.cli.model, &c.model_choice) {
            (Some(_), _) => "/model or --model".to_string(),
            (None, Some(_)) => c.model_choice_origin.clone(),
            (None, None) => "default: the first [[models]] entry, else Ollama's first".into(),
        };
        let model = format!("{}  ({origin})", self.view.model);
        let mode = self.cli.permission_mode.unwrap_or(c.permission_mode);
        let mode_origin = if self.cli.permission_mode.is_some() {
            "this session"
        } else {
            c.origin("permission_mode")
        };
        let mut lines = vec![
            format!("root             {}", self.ws.root.display()),
            format!("model            {model}"),
            format!(
                "max_iters        {}  ({})",
                c.max_iters,
                c.origin("max_iters")
            ),
            format!("permission_mode  {}  ({mode_origin})", mode.as_str()),
            format!(
                "bash_timeout_ms  {}  ({})",
                c.bash_timeout_ms,
                c.origin("bash_timeout_ms")
            ),
            format!("theme            {}  ({})", c.theme, c.origin("theme")),
            format!(
                "show_thinking    {}  ({})",
                self.view.show_thinking,
                c.origin("show_thinking")
            ),
        ];
        for file in &c.files {
            lines.push(format!("config file      {}", file.display()));
        }
        lines.push("/settings KEY VALUE changes one for this session".to_string());
        self.view.lines(lines);
    }
}

/// `@path` → the file's text as a fenced block, when it is a file inside the root.
fn attachment(root: &Path, raw: &str) -> Option<String> {
    let path =
        crate::tools::guard::paths::resolve(root, raw, crate::tools::guard::paths::PathUse::Read)
            .ok()?;
    let bytes = std::fs::read(&path.abs).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let cut: String = text.chars().take(ATTACHMENT_MAX_BYTES).collect();
    Some(format!("\n\n{}:\n```\n{}\n```", path.rel, cut.trim_end()))
}
