//! What a submitted line does: an approval answer, a built-in command, a skill, a message
//! for another agent, or a message for the current one.

use super::approval::{self, Answer};
use super::commands::{Command, TURN_MODES};
use super::editor;
use super::shell::{Question, Shell};
use super::triggers::Parsed;
use crate::session::memory::Memory;
use crate::session::{Input, TurnMode, UserMessage, line, lock};
use crate::store::Store;

/// Who the terminal's messages are from.
const FROM: &str = "terminal";

/// `# fact` on one line: remembered for this project at once, never sent to the model.
/// `##`, `#word` and pasted markdown over several lines are ordinary messages.
pub(super) fn memory_line(line: &str) -> Option<&str> {
    let fact = line.trim().strip_prefix("# ")?.trim();
    (!fact.is_empty() && !fact.contains('\n')).then_some(fact)
}

impl Shell {
    /// Handles one submitted line; `false` means quit.
    pub async fn handle_line(&mut self, line: String) -> bool {
        self.follow_config().await;
        let line = editor::join_continuations(&line);
        if self.answer_approval(&line).await {
            return true;
        }
        if let Some(question) = self.question.take() {
            let yes = super::trust::is_yes(&line);
            match question {
                Question::Rewind(id, what) => self.answer_rewind(id, what, yes).await,
                Question::Init(existing) => self.answer_init(existing, yes).await,
            }
            return true;
        }
        if let Some(fact) = memory_line(&line) {
            self.remember(fact).await;
            return true;
        }
        // `!cmd`: the person runs a command themselves (queued like a message while a turn
        // runs; the session runs it through the same floor and approvals as the model's).
        if let Some(command) = line.trim_start().strip_prefix('!')
            && !command.trim().is_empty()
        {
            let mut message = UserMessage::new(line.trim(), FROM);
            message.command = Some(command.trim().to_string());
            self.send(message).await;
            return true;
        }
        match self.catalog.parse(&line) {
            Parsed::Empty => {}
            Parsed::Command { command, .. } if command.quits() => return false,
            Parsed::Command { command, args } => {
                if self.shared.is_busy() && !command.available_while_busy() {
                    // It runs when the turn ends; the live area shows it waiting.
                    self.view.defer(&line);
                } else {
                    self.run_command(command, args.trim()).await;
                }
            }
            Parsed::AgentMessage { agent, message, .. } if message.trim().is_empty() => {
                self.agent_command(&agent).await;
            }
            parsed @ (Parsed::Message { .. }
            | Parsed::Skill { .. }
            | Parsed::CustomTrigger { .. }
            | Parsed::AgentMessage { .. }) => match self.link.attached_to() {
                // The session's owner reads the line with its own skills, agents and
                // triggers, as it reads the page's.
                Some(_) => {
                    let mut message = UserMessage::new(line.trim(), FROM);
                    if self.attach_pasted_images(&line, &mut message) {
                        self.send(message).await;
                    }
                }
                None => self.send_line(parsed, &line).await,
            },
            Parsed::UnknownCommand { name, .. } if self.mcp_prompt(&name, &line).await => {}
            unknown @ Parsed::UnknownCommand { .. } => {
                let message = unknown.error_message().unwrap_or_default();
                self.view.error(&message);
            }
        }
        self.refresh_prompt_commands();
        true
    }

    /// `/mcp__SERVER__PROMPT args`: the server's prompt, filled in, sent as the message.
    /// `false` when no server has that prompt.
    async fn mcp_prompt(&mut self, name: &str, line: &str) -> bool {
        let Some(live) = self.link.live.as_ref() else {
            return false;
        };
        let args = line
            .trim_start()
            .strip_prefix('/')
            .and_then(|l| l.strip_prefix(name))
            .unwrap_or_default();
        let mcp = live.mcp.clone();
        match mcp.expand(name, args).await {
            None => false,
            Some(Ok(text)) => {
                // The model reads the prompt's text; the typed line is on screen already.
                self.send(UserMessage::new(text, FROM)).await;
                true
            }
            Some(Err(e)) => {
                self.view.error(&e.to_string());
                true
            }
        }
    }

    /// The servers' prompts for completion (servers start in the background).
    pub(super) fn refresh_prompt_commands(&self) {
        let Some(live) = self.link.live.as_ref() else {
            return;
        };
        let choices = live
            .mcp
            .prompt_commands()
            .into_iter()
            .map(|p| crate::repl::complete::Choice::described(p.command, p.description))
            .collect();
        self.catalog.update(|lists| lists.prompts = choices);
    }

    /// `true` when the line was the answer to a waiting approval. The request may come from
    /// any run of the turn, a delegated one included: the answer goes by the request's id.
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
            Answer::Repeat => self.view.hint(approval::choices(pending.once_only)),
            // A browser may have answered first; the session then says so, to us alone.
            Answer::Decide(decision) => {
                let id = pending.id;
                let from = FROM.into();
                self.ask(Input::Approval { id, decision, from }).await;
            }
        }
        true
    }

    /// A message, a skill or a message for another agent: the core's one step from a parsed
    /// line to a message, `@file` attachments included, exactly as `-p` and the browser.
    async fn send_line(&mut self, parsed: Parsed, line: &str) {
        match line::into_message(parsed, line, FROM) {
            Ok(mut message) => match line::attach(self.ws.root.clone(), &mut message).await {
                Ok(notes) => {
                    // What each `@file` attached, or why not, before the answer comes.
                    for note in notes {
                        self.view.hint(&format!("⎿ {note}"));
                    }
                    if self.attach_pasted_images(line, &mut message) {
                        self.send(message).await;
                    }
                }
                Err(error) => self.view.error(&error.to_string()),
            },
            Err(error) => self.view.error(&error.to_string()),
        }
    }

    /// Adds the images whose paths were pasted into the line (a file dropped on the
    /// terminal), each confirmed in one line; `false` (and the reason shown) when one cannot
    /// be sent, so the message is not sent without it.
    fn attach_pasted_images(&mut self, line: &str, message: &mut UserMessage) -> bool {
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        for path in line::pasted_image_paths(line, home.as_deref(), &self.ws.home) {
            match crate::llm::Image::from_file(&path) {
                Ok(image) => {
                    let name = path.file_name().unwrap_or_default().to_string_lossy();
                    self.view
                        .hint(&format!("🖼 {name} attached · {}", image.describe()));
                    message.images.push(image);
                }
                Err(why) => {
                    self.view.error(&why.to_string());
                    return false;
                }
            }
        }
        true
    }

    pub(super) async fn send(&mut self, message: UserMessage) {
        if let Some(live) = self.session().await {
            let _ = live.handle.inputs.send(Input::UserMessage(message)).await;
        }
    }

    async fn run_command(&mut self, command: Command, args: &str) {
        if let Some(owner) = self.link.attached_to()
            && command.needs_own_session()
        {
            let line = format!(
                "/{} works on a session of this terminal's own; this one runs in {owner} \
                 (exit, and run linggen without --attach)",
                command.name()
            );
            self.view.error(&line);
            return;
        }
        match command {
            Command::Help => {
                let lines = self.catalog.help_lines();
                self.view.lines(lines);
            }
            Command::Clear => {
                let mut next = self.start.clone();
                (next.continue_session, next.resume) = (false, None);
                next.cleared = true;
                self.switch(next, "new session").await;
            }
            Command::Model if args.is_empty() => self.show_model(),
            Command::Model => self.set_model(args).await,
            Command::Permissions => self.permissions(args).await,
            Command::Resume => {
                let mut next = self.start.clone();
                if args.is_empty() {
                    (next.continue_session, next.resume) = (true, None);
                } else {
                    (next.continue_session, next.resume) = (false, Some(args.to_string()));
                }
                self.switch(next, "resumed").await;
            }
            Command::Sessions => self.sessions().await,
            Command::Runs => self.runs().await,
            Command::Tasks => self.tasks(args).await,
            Command::Mcp => self.mcp(),
            Command::Hooks => self.view.lines(crate::app::hooks::hook_lines(&self.ws)),
            Command::Skills => self.skills(),
            Command::Context => self.view.context(),
            Command::Memory => self.memory(args).await,
            Command::Rewind => self.rewind(args).await,
            Command::Check => self.check(args).await,
            Command::Compact => {
                let mut message = UserMessage::new(format!("/compact {args}").trim_end(), FROM);
                message.compact = Some(args.to_string());
                self.send(message).await;
            }
            Command::Theme => self.theme(args),
            Command::Settings if args.is_empty() => self.settings(),
            Command::Settings => self.set(args).await,
            Command::Agent => self.agent_command(args).await,
            Command::Mode if args.is_empty() => {
                let modes: Vec<String> = TurnMode::ALL
                    .iter()
                    .map(|m| format!("{}: {}", m.as_str(), m.summary()))
                    .collect();
                let line = format!(
                    "mode: {} · /mode {} switches ({})",
                    self.view.settings().mode.as_str(),
                    TURN_MODES.join("|"),
                    modes.join(" · ")
                );
                self.view.hint(&line);
            }
            Command::Mode => self.set_mode(args).await,
            Command::Share => self.share(args).await,
            Command::Status => self.status(),
            Command::Cost => self.cost(),
            Command::Doctor => self.doctor().await,
            Command::Export => self.export(args).await,
            Command::Init => self.init().await,
            Command::Quit | Command::Exit => {}
        }
    }

    fn show_model(&mut self) {
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
            self.view.settings().model
        );
        self.view.hint(&line);
    }

    /// `/agent`: list the agents; `/agent NAME` (and `@NAME` alone): switch to it.
    async fn agent_command(&mut self, args: &str) {
        if args.is_empty() {
            let lines = super::extensions::agent_lines(
                &self.ws.agents.get(),
                &self.view.settings().agent_id,
            );
            self.view.lines(lines);
        } else {
            self.set_agent(args).await;
        }
    }

    /// Switches the session's agent. The session confirms with `SettingsUpdated`, which the
    /// view and the prompt show.
    pub(super) async fn set_agent(&mut self, name: &str) {
        let agents = self.ws.agents.get();
        if agents.get(name).is_none() {
            self.view.error(&format!(
                "no agent named `{name}`; agents: {} (add one as agents/{name}.md)",
                agents.names().join(", ")
            ));
            return;
        }
        let agent = name.to_string();
        self.ask(Input::SetAgent { agent }).await;
    }

    /// `/mode chat|auto|talk`.
    pub(super) async fn set_mode(&mut self, value: &str) {
        let Some(mode) = TurnMode::parse(value) else {
            self.view.error(&format!(
                "unknown mode `{value}`; expected {}",
                TURN_MODES.join(" or ")
            ));
            return;
        };
        self.ask(Input::SetMode { mode }).await;
    }

    /// `/mcp`: the servers as `linggen mcp list` shows them, with this session's state of
    /// each (starting, its tools, the last error) and the tools it registered.
    fn mcp(&mut self) {
        let Some(live) = self.link.live.as_ref() else {
            return self.view.lines(crate::app::mcp::server_lines(&self.ws));
        };
        let servers = live.mcp.lines();
        if servers.is_empty() {
            return self.view.lines(crate::app::mcp::server_lines(&self.ws));
        }
        let mut lines = Vec::new();
        for server in servers {
            lines.push(format!(
                "{}  {}  ({})",
                server.name, server.status, server.source
            ));
            lines.push(format!("  {}", crate::text::one_line(&server.what, 100)));
            if !server.tools.is_empty() {
                lines.push(format!("  tools: {}", server.tools.join(", ")));
            }
        }
        lines.push(
            "allow a server's tools with a rule such as mcp__NAME__* (/permissions); `linggen mcp get NAME` shows one"
                .into(),
        );
        self.view.lines(lines);
    }

    /// `/runs`: this session's runs from the store (a fresh connection, so it works while
    /// the writer is busy with the running turn).
    async fn runs(&mut self) {
        let Some(id) = self.link.live.as_ref().map(|l| l.session_id.clone()) else {
            return self
                .view
                .hint("no session yet; send a message to start one");
        };
        let home = self.ws.home.clone();
        // SQLite: off the runtime.
        let runs = tokio::task::spawn_blocking(move || {
            Store::open(&home)
                .and_then(|s| s.runs(&id))
                .map_err(|e| e.to_string())
        });
        match runs.await.unwrap_or_else(|e| Err(e.to_string())) {
            Ok(runs) if runs.is_empty() => self
                .view
                .hint("no runs in this session yet; send a message to start one"),
            Ok(runs) => {
                let mut lines = crate::app::tree_lines(&runs);
                lines.push("linggen runs show ID prints a run's calls, results and changes".into());
                self.view.lines(lines);
            }
            Err(e) => self.view.error(&format!("cannot read the runs: {e}")),
        }
    }

    fn project_memory(&self) -> std::sync::Arc<Memory> {
        std::sync::Arc::new(Memory::for_project(&self.ws.home, &self.ws.root))
    }

    /// `# fact`: appended to the project's memory file at once; the model sees it from the
    /// next message on.
    async fn remember(&mut self, fact: &str) {
        let memory = self.project_memory();
        let fact = fact.to_string();
        let saved = {
            let memory = memory.clone();
            tokio::task::spawn_blocking(move || memory.remember(&fact))
        };
        let failed = match saved.await {
            Ok(Ok(())) => {
                return self.view.hint(&format!(
                    "remembered in {} (from your next message on; /memory lists it)",
                    memory.path().display()
                ));
            }
            Ok(Err(e)) => e.reason(),
            Err(e) => e.to_string(),
        };
        self.view.error(&format!(
            "cannot save to {}: {failed} — nothing was remembered",
            memory.path().display()
        ));
    }

    /// `/memory`: the numbered lines; `/memory forget N` removes one.
    async fn memory(&mut self, args: &str) {
        let memory = self.project_memory();
        if let Some(n) = args.strip_prefix("forget") {
            let Ok(n) = n.trim().parse::<usize>() else {
                return self
                    .view
                    .error("/memory forget takes the number /memory shows, e.g. /memory forget 2");
            };
            let forgotten = {
                let memory = memory.clone();
                tokio::task::spawn_blocking(move || memory.forget(n))
            };
            match forgotten.await {
                Ok(Ok(fact)) => self.view.hint(&format!("forgot: {fact}")),
                Ok(Err(e)) => self.view.error(&e.to_string()),
                Err(e) => self.view.error(&e.to_string()),
            }
            return;
        }
        if !args.is_empty() {
            return self.view.error(
                "/memory lists what is remembered; /memory forget N removes line N; start a line with `# ` to add one",
            );
        }
        let entries = {
            let memory = memory.clone();
            tokio::task::spawn_blocking(move || memory.entries())
        };
        let entries = entries.await.unwrap_or_default();
        let path = memory.path().display().to_string();
        if entries.is_empty() {
            return self.view.hint(&format!(
                "nothing remembered in this project yet; start a line with `# ` to add one ({path})"
            ));
        }
        let mut lines: Vec<String> = entries
            .iter()
            .enumerate()
            .map(|(i, fact)| format!("  {}. {fact}", i + 1))
            .collect();
        lines.push(format!(
            "  ({path}: edit it freely; /memory forget N removes line N)"
        ));
        self.view.lines(lines);
    }
}
