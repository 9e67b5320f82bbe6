//! Session events rendered for the terminal. Output goes through rustyline's external
//! printer, so it appears above the prompt while the person keeps typing (type-ahead).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rustyline::ExternalPrinter;

use super::approval::choices;
use super::catalog::one_line;
use super::render::{self, MarkdownStream, RenderStyle};
use super::run_tree::indent;
use super::theme::Theme;
use crate::session::view::{SessionView, Settings};
use crate::session::{AgentState, Decision, Event, OutcomeStatus};
use crate::tools::background::TaskState;
use crate::tools::terminal_text::strip_controls;

/// Longest diff shown inline; the rest is counted.
const DIFF_LINES: usize = 40;

/// Bytes of one token rendered at once (see `on_token`).
const RENDER_SLICE: usize = 64 * 1024;

/// An approval waiting for the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingApproval {
    pub id: String,
    /// The person was mid-typing when it arrived: their next submitted line is that text,
    /// sent as a message, not the answer.
    pub typeahead: bool,
    /// Only "once" can answer it; the choices repeated on Enter say so.
    pub once_only: bool,
}

/// What a finished call shows (from `Event::ToolCallFinished`).
struct ToolResult<'a> {
    summary: &'a str,
    ok: bool,
    diff: Option<&'a str>,
    excerpt: Option<&'a str>,
}

/// What an approval card shows (from `Event::ApprovalRequested`).
struct ApprovalCard<'a> {
    display: &'a str,
    reason: &'a str,
    diff: Option<&'a str>,
    once_only: bool,
    always: &'a [String],
}

/// State shared by the view (which writes it) and the input loop (which reads it).
#[derive(Default)]
pub struct Shared {
    /// A turn is running (completion offers only what is valid while busy).
    pub busy: Arc<AtomicBool>,
    pub approval: Mutex<Option<PendingApproval>>,
    pub line_empty: Arc<AtomicBool>,
    /// The running session's id, for the transcript viewer (Ctrl+O).
    pub session_id: Mutex<Option<String>>,
}

impl Shared {
    pub fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Relaxed)
    }
}

pub struct View {
    printer: Box<dyn ExternalPrinter + Send>,
    style: RenderStyle,
    width: u16,
    /// The terminal's rows: the live area never takes more than fit above the prompt.
    height: u16,
    markdown: Option<MarkdownStream>,
    thinking: String,
    /// When the model was last asked and has not answered yet (spinner time).
    waiting_since: Option<std::time::Instant>,
    /// The delegated agent being waited for; `None` for the turn's own agent.
    waiting_for: Option<String>,
    /// What the wait is for when it is not the model's answer (`waiting for qwen`: no
    /// free slot on that model's server).
    waiting_detail: Option<String>,
    /// The model the last call went to: a line shows when it changes.
    last_model: Option<String>,
    /// The rows redrawn in place above the prompt (see `live.rs`).
    live: live::Live,
    /// The session was resumed with earlier messages.
    resumed: bool,
    /// The choices of the approval waiting for the person (styled output only).
    menu: Option<menu::Menu>,
    /// The diff of the last approval card, so the result of that write does not show it
    /// a second time.
    diff_shown: Option<String>,
    /// A `delegate_to_agent` call per parent run: its summary, and whether the child run
    /// started. A started child is shown by its own lines; a refused call as a tool line.
    delegations: std::collections::HashMap<String, (String, bool)>,
    /// The turn's own agent streamed answer text (else the outcome's result is shown: a
    /// forked skill answers through its child run).
    answered: bool,
    /// `[ui] show_thinking`: reasoning shown dimmed, or hidden.
    pub show_thinking: bool,
    /// The sender name this terminal's own messages and answers come back under:
    /// `terminal`, or `attached` when the session runs in another process (whose own
    /// terminal, if any, is `terminal`). Others' are labelled.
    pub own_sender: &'static str,
    /// The session's one projection (its settings, runs and how deep each is, context
    /// usage, open approvals), folded here from the same events the rest of the view
    /// renders. The shell reads the settings from it; it keeps no copy of its own.
    session: SessionView,
    shared: Arc<Shared>,
}

impl View {
    pub fn new(
        printer: Box<dyn ExternalPrinter + Send>,
        style: RenderStyle,
        width: u16,
        shared: Arc<Shared>,
        agent: &str,
    ) -> Self {
        View {
            printer,
            style,
            width,
            height: u16::MAX,
            markdown: None,
            waiting_since: None,
            waiting_for: None,
            waiting_detail: None,
            last_model: None,
            live: live::Live::new(RenderStyle::terminal_reflows()),
            resumed: false,
            menu: None,
            diff_shown: None,
            delegations: std::collections::HashMap::new(),
            answered: false,
            thinking: String::new(),
            show_thinking: true,
            own_sender: "terminal",
            session: SessionView::new(agent),
            shared,
        }
    }

    fn say(&mut self, line: String) {
        self.print(vec![line]);
    }

    /// A dim one-line hint from the shell itself.
    /// Wrapped at word boundaries (the banner's path and model name, a long footer), not
    /// left to the terminal, which breaks wherever the row ends.
    pub fn hint(&mut self, text: &str) {
        let lines = text
            .split('\n')
            .flat_map(|line| render::wrap_words(line, usize::from(self.width)))
            .map(|row| self.style.dim(&row))
            .collect();
        self.print(lines);
    }

    pub fn error(&mut self, text: &str) {
        let line = self.style.error(&format!("✗ {text}"));
        self.say(line);
    }

    /// Plain lines from the shell's commands (`/runs`, `/sessions`, `/permissions`, …). They
    /// quote what the model or workspace files wrote (tasks, agent names, saved commands),
    /// and carry no styling of ours, so control sequences are stripped here, for all of them.
    pub fn lines(&mut self, lines: Vec<String>) {
        let lines = lines
            .into_iter()
            .map(|line| match strip_controls(&line) {
                std::borrow::Cow::Borrowed(_) => line,
                std::borrow::Cow::Owned(clean) => clean,
            })
            .collect();
        self.print(lines);
    }

    /// `/context`: how full the window is and what the last request was made of.
    pub fn context(&mut self) {
        for line in context::lines(self.session.context.as_ref()) {
            self.hint(&line);
        }
    }

    pub fn set_theme(&mut self, theme: Theme) {
        if !self.style.is_plain() {
            self.style = RenderStyle::styled(theme);
        }
    }

    /// The session's settings as it last announced them (the agent until then is the one
    /// it was started with).
    pub fn settings(&self) -> &Settings {
        &self.session.settings
    }

    /// The session's projection as folded so far (`/status`, `/cost`).
    pub fn session(&self) -> &SessionView {
        &self.session
    }

    /// What "always" answers allowed in this session, oldest first.
    pub fn grants(&self) -> &[crate::session::view::SessionGrant] {
        &self.session.grants
    }

    /// Forgets a session grant the session has stopped allowing.
    pub fn revoke_grant(&mut self, rule: &str) {
        self.session.revoke(rule);
    }

    /// Follows another session (`/clear`, `/resume`) from its start.
    pub fn follow_new_session(&mut self, agent: &str) {
        self.session = SessionView::new(agent);
        self.delegations.clear();
        self.resumed = false;
    }

    pub fn on_event(&mut self, event: &Event) {
        let before =
            matches!(event, Event::SettingsUpdated { .. }).then(|| self.settings().clone());
        self.session.apply(event);
        if let Some(before) = before {
            let line = settings_line::changes(&before, self.settings());
            self.hint(&line);
        }
        self.shared
            .busy
            .store(self.session.turn_running(), Ordering::Relaxed);
        self.render(event);
    }

    fn render(&mut self, event: &Event) {
        self.track_wait(event);
        match event {
            Event::RunStarted { parent_id, .. } => self.on_run_started(parent_id.as_deref()),
            Event::Token {
                run_id,
                token,
                thinking,
                done,
                ..
            } if self.session.depth(run_id) == 0 => {
                self.answered |= !*thinking && !token.trim().is_empty();
                self.on_token(token, *thinking, *done);
            }
            Event::ToolCallStarted {
                run_id,
                tool,
                summary,
                ..
            } => self.on_tool_started(run_id, tool, summary),
            Event::ToolCallFinished {
                run_id,
                tool,
                summary,
                ok,
                diff,
                excerpt,
                ..
            } => {
                let result = ToolResult {
                    summary,
                    ok: *ok,
                    diff: diff.as_deref(),
                    excerpt: excerpt.as_deref(),
                };
                self.on_tool_finished(run_id, tool, &result)
            }
            Event::SubagentSpawned {
                parent_id,
                agent_id,
                task,
                background,
                ..
            } => self.on_subagent_spawned(parent_id, agent_id, task, *background),
            Event::SubagentResult {
                parent_id,
                agent_id,
                outcome,
                result,
                ..
            } => self.on_subagent_result(parent_id, agent_id, *outcome, result),
            // One question at a time: a request that arrives while another is open (two
            // delegated runs working at once) waits in the session's view until that one
            // is answered.
            Event::ApprovalRequested { .. }
                if crate::session::lock(&self.shared.approval).is_some() => {}
            Event::ApprovalRequested { .. } => self.ask(event),
            Event::ApprovalResolved { id, decision, by } => self.on_resolved(id, decision, by),
            Event::Outcome {
                status,
                result,
                usage,
                ..
            } => self.on_turn_over(*status, result, usage),
            _ => self.show_notice(event),
        }
    }

    /// The turn is over: its busy line goes with the outcome's lines, and a request still
    /// open (a cancelled turn's) with it.
    fn on_turn_over(&mut self, status: OutcomeStatus, result: &str, usage: &crate::llm::Usage) {
        self.live.turn_started = None;
        self.menu = None;
        // tok/s over the time the model was producing output, not the whole
        // turn (approvals, tools and the wait for the first token excluded).
        self.on_outcome(status, result, usage.output_tokens, usage.generation_ms);
        self.delegations.clear();
    }

    /// Starts the spinner's wait when the model is asked, and ends it when it answers or
    /// something else happens.
    fn track_wait(&mut self, event: &Event) {
        match event {
            Event::AgentStatus {
                status,
                run_id,
                agent_id,
                detail,
            } if *status == AgentState::Thinking => {
                self.waiting_since = Some(std::time::Instant::now());
                self.waiting_for = (self.session.depth(run_id) > 0).then(|| agent_id.clone());
                self.waiting_detail = detail.clone();
            }
            Event::ModelRouted { .. } => self.waiting_detail = None,
            // A delegated run's tokens are not shown, so they do not end the wait either.
            Event::Token { run_id, .. } if self.session.depth(run_id) > 0 => {}
            // The model answers (or something else happens): no longer waiting for it, nor
            // for what a waiting notice named.
            Event::Token { .. } => {
                self.waiting_since = None;
                self.waiting_for = None;
                self.waiting_detail = None;
            }
            Event::ToolCallStarted { .. }
            | Event::ApprovalRequested { .. }
            | Event::SubagentSpawned { .. }
            | Event::SubagentResult { .. }
            | Event::Outcome { .. }
            | Event::Error { .. }
            | Event::Warning { .. } => {
                self.waiting_since = None;
                self.waiting_for = None;
            }
            _ => {}
        }
    }

    /// The events told in a line of their own, outside the turn's run of calls: messages
    /// from elsewhere, errors, warnings, notices and the model's changes.
    fn show_notice(&mut self, event: &Event) {
        match event {
            Event::Message {
                run_id,
                role: crate::llm::Role::User,
                from,
                content,
                ..
            } if self.session.depth(run_id) == 0 && from != crate::session::OBSERVATION => {
                self.on_user_message(from, content)
            }
            // The queue shows in the live area; without one (plain output), as a line.
            Event::QueueUpdated { queued } if !queued.is_empty() && self.style.is_plain() => {
                let line = format!("⏳ queued: {}", queued.join(" · "));
                self.say(self.style.dim(&line));
            }
            Event::Error { message } => {
                let line = self.style.error(&format!("✗ {message}"));
                self.say(line);
            }
            Event::Warning { message } => self.warning(message),
            // Work that ran without anyone (a schedule, the heartbeat), told by `serve`.
            Event::Notification { message, .. } => {
                let line = format!("⏰ {message}");
                self.say(self.style.dim(&strip_controls(&line)));
            }
            // A background command that ended by itself is news; one that was stopped, not.
            Event::TaskUpdated { task } if task.state == TaskState::Exited => {
                let line = format!(
                    "⎿ background {} ended: {} · {} (/tasks)",
                    task.id,
                    task.state_words(),
                    one_line(&task.command, 80)
                );
                self.say(self.style.dim(&strip_controls(&line)));
            }
            Event::Retrying { .. } => self.hint(&event.retry_line().unwrap_or_default()),
            Event::Compacted {
                run_id,
                before_tokens,
                after_tokens,
                ..
            } => {
                let line = format!(
                    "{}⎿ compacted: {before_tokens} → {after_tokens} tokens (older messages summarised; /context shows the rest)",
                    indent(self.session.depth(run_id))
                );
                self.say(self.style.dim(&line));
            }
            Event::ModelRouted {
                run_id,
                model_id,
                policy,
                reason,
                ..
            } => self.on_model_routed(run_id, model_id, policy, reason),
            _ => {}
        }
    }

    fn on_tool_started(&mut self, run_id: &str, tool: &str, summary: &str) {
        if tool == DELEGATE_TOOL {
            // Shown as the child run's own line once it starts.
            self.delegations
                .insert(run_id.to_string(), (summary.to_string(), false));
            return;
        }
        let line = indent(self.session.depth(run_id)) + &render::tool_line(summary, &self.style);
        self.say(line);
    }

    /// A delegated run started: a tool line under its parent, in place of the delegating
    /// call's own.
    fn on_subagent_spawned(
        &mut self,
        parent_id: &str,
        agent_id: &str,
        task: &str,
        background: bool,
    ) {
        let depth = self.session.depth(parent_id);
        if let Some((_, spawned)) = self.delegations.get_mut(parent_id) {
            *spawned = true;
        }
        let how = if background { " (background)" } else { "" };
        let summary = format!("{agent_id}{how} ← {}", one_line(task, 100));
        let line = indent(depth) + &render::tool_line(&summary, &self.style);
        self.say(line);
    }

    /// A delegated run ended: its status and the first line of its answer.
    fn on_subagent_result(
        &mut self,
        parent_id: &str,
        agent_id: &str,
        outcome: OutcomeStatus,
        result: &str,
    ) {
        let status = outcome.run_status();
        let summary = match one_line(result, 100) {
            first if first.is_empty() => format!("{agent_id} {status}"),
            first => format!("{agent_id} {status}: {first}"),
        };
        let ok = outcome == OutcomeStatus::Completed;
        let line = indent(self.session.depth(parent_id))
            + &render::tool_result_line(&summary, ok, &self.style);
        self.say(line);
    }

    /// A person's message to the turn's own agent. A line typed in the terminal shows as
    /// typed, or (typed during the last turn, its echo erased) where it runs; other
    /// frontends' are labelled.
    fn on_user_message(&mut self, from: &str, content: &str) {
        let line = if from == self.own_sender {
            self.echo_if_owed(content)
        } else if from == crate::session::BACKGROUND_SENDER {
            // The whole answer is the agent's to read (Ctrl+O shows it); the line
            // says it arrived.
            Some(strip_controls(&format!("[{from}] {}", one_line(content, 160))).into_owned())
        } else {
            Some(strip_controls(&format!("[{from}] {content}")).into_owned())
        };
        if let Some(line) = line {
            self.say(line);
        }
    }

    fn on_run_started(&mut self, parent_id: Option<&str>) {
        if parent_id.is_none() {
            self.answered = false;
            self.live.turn_started = Some(std::time::Instant::now());
            self.set_width(super::tty::terminal_width());
        }
    }

    /// The terminal's width now (the shell checks it while it works): lines already shown
    /// stay as they are; the answer streaming goes on at the new width from its next line.
    pub fn set_width(&mut self, width: u16) {
        if width == self.width {
            return;
        }
        self.width = width;
        if let Some(stream) = &mut self.markdown {
            stream.set_width(width);
        }
    }

    /// The terminal's height now (the shell checks it with the width).
    pub fn set_height(&mut self, rows: u16) {
        self.height = rows;
    }

    /// A dim line when calls start going to another model (and for the first call when a
    /// policy chooses: which one it took and why). One model throughout shows nothing.
    fn on_model_routed(&mut self, run_id: &str, model_id: &str, policy: &str, reason: &str) {
        let changed = match &self.last_model {
            Some(last) => last != model_id,
            None => !matches!(policy, "pinned" | "default"),
        };
        self.last_model = Some(model_id.to_string());
        if changed {
            let line = format!(
                "{}↳ model {model_id} · {}",
                indent(self.session.depth(run_id)),
                strip_controls(reason)
            );
            self.say(self.style.dim(&line));
        }
    }

    /// A warn-styled line: something worth knowing that did not stop the work.
    pub fn warning(&mut self, text: &str) {
        let line = self.style.warn(&format!("⚠ {text}"));
        self.say(line);
    }

    fn on_tool_finished(&mut self, run_id: &str, tool: &str, result: &ToolResult<'_>) {
        let pad = indent(self.session.depth(run_id));
        let mut lines = Vec::new();
        if tool == DELEGATE_TOOL {
            match self.delegations.remove(run_id) {
                // The child's own lines (spawned, result) already told the story.
                Some((_, true)) => return,
                Some((call, false)) => lines.push(render::tool_line(&call, &self.style)),
                None => {}
            }
        }
        // A changed todo list shows itself where the result line would.
        if result.ok && tool == crate::tools::ToolName::TodoWrite.name() {
            lines.extend(self.todo_result_rows());
        } else {
            lines.push(render::tool_result_line(
                result.summary,
                result.ok,
                &self.style,
            ));
        }
        if let Some(excerpt) = result.excerpt {
            for line in excerpt.lines() {
                let line = strip_controls(&format!("    {line}")).into_owned();
                lines.push(self.style.dim(&line));
            }
        }
        // The diff the person just approved is on screen already, right above.
        let approved = self.diff_shown.take();
        if let Some(diff) = result.diff.filter(|d| approved.as_deref() != Some(*d)) {
            lines.extend(render::render_diff(diff, &self.style, DIFF_LINES));
        }
        self.print(lines.into_iter().map(|l| format!("{pad}{l}")).collect());
    }

    fn on_token(&mut self, token: &str, thinking: bool, done: bool) {
        if thinking {
            self.thinking.push_str(token);
            let complete = self.thinking.rfind('\n').map(|i| i + 1).unwrap_or(0);
            let lines: Vec<String> = self
                .thinking
                .drain(..complete)
                .collect::<String>()
                .lines()
                .map(|l| render::render_thinking(l, &self.style))
                .collect();
            if self.show_thinking {
                self.print(lines);
            }
            return;
        }
        let (style, width) = (self.style.clone(), self.width);
        self.markdown
            .get_or_insert_with(|| MarkdownStream::new(style, width));
        // A slice at a time, each printed before the next is rendered: one token can be a
        // whole long answer, and its styled lines take several times its size.
        let mut rest = token;
        while rest.len() > RENDER_SLICE {
            let mut cut = RENDER_SLICE;
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            let (slice, after) = rest.split_at(cut);
            let lines = self.markdown.as_mut().map(|s| s.push(slice));
            self.print(lines.unwrap_or_default());
            rest = after;
        }
        let Some(stream) = self.markdown.as_mut() else {
            return;
        };
        let mut lines = stream.push(rest);
        if done {
            lines.extend(stream.finish());
            self.markdown = None;
            if !self.thinking.is_empty() && self.show_thinking {
                let rest = std::mem::take(&mut self.thinking);
                lines.insert(0, render::render_thinking(&rest, &self.style));
            }
        }
        self.print(lines);
    }

    /// `display` is the whole call, escaped: it is wrapped, never cut, so everything that
    /// will run is on screen when the person answers.
    fn on_approval(&mut self, id: &str, depth: usize, card: &ApprovalCard<'_>) {
        let typeahead = !self.shared.line_empty.load(Ordering::Relaxed);
        let pad = indent(depth);
        let width = usize::from(self.width).saturating_sub(pad.chars().count());
        let mut lines = render::approval_head(card.display, width, &self.style);
        lines.push(self.style.dim(&format!("  ({})", card.reason)));
        if let Some(diff) = card.diff {
            lines.extend(render::render_diff(diff, &self.style, DIFF_LINES));
            self.diff_shown = Some(diff.to_string());
        }
        // Styled, the choices are a menu in the live area; plain, a line to answer on.
        if self.style.is_plain() {
            lines.push(choices(card.once_only).to_string());
        } else {
            self.menu = Some(menu::Menu::new(card.once_only, card.always));
        }
        if typeahead {
            lines.push(self.style.dim("  (the line you are typing will be sent as your next message; answer on the line after it)",
            ));
        }
        // Registered before it shows: an answer typed the moment the question appears must
        // find it waiting, not go to the model as a message.
        *crate::session::lock(&self.shared.approval) = Some(PendingApproval {
            id: id.to_string(),
            typeahead,
            once_only: card.once_only,
        });
        // A delegated run's request stands under that run's lines; it is answered the same way.
        self.print(lines.into_iter().map(|l| format!("{pad}{l}")).collect());
    }

    /// Shows an `ApprovalRequested` and waits for the answer.
    fn ask(&mut self, request: &Event) {
        let Event::ApprovalRequested {
            id,
            run_id,
            display,
            reason,
            diff,
            once_only,
            always,
            ..
        } = request
        else {
            return;
        };
        let depth = self.session.depth(run_id);
        let card = ApprovalCard {
            display,
            reason,
            diff: diff.as_deref(),
            once_only: *once_only,
            always,
        };
        self.on_approval(id, depth, &card);
    }

    fn on_resolved(&mut self, id: &str, decision: &Decision, by: &str) {
        let mut pending = crate::session::lock(&self.shared.approval);
        let was_shown = pending.as_ref().is_some_and(|p| p.id == id);
        if was_shown {
            *pending = None;
            self.menu = None;
        }
        drop(pending);
        let verdict = match decision {
            Decision::AllowOnce => "allowed once",
            Decision::AllowSession => "allowed for this session",
            Decision::AllowProject => "allowed for this project",
            Decision::Deny { .. } => "denied",
        };
        let line = if by == self.own_sender {
            format!("  ⎿ {verdict}")
        } else {
            format!("  ⎿ {verdict} in {by}")
        };
        // A question that waited its turn here and was answered elsewhere was never shown.
        if was_shown || by == self.own_sender {
            self.say(self.style.dim(&line));
        }
        // The next question that waited, if any (the view no longer lists this one).
        if was_shown && let Some(next) = self.session.pending.first().cloned() {
            self.ask(&next);
        }
    }

    fn on_outcome(&mut self, status: OutcomeStatus, result: &str, output_tokens: u64, ms: u64) {
        *crate::session::lock(&self.shared.approval) = None;
        // A forked skill answers through its child run, whose tokens were not shown.
        if status == OutcomeStatus::Completed && !self.answered && !result.trim().is_empty() {
            let mut stream = MarkdownStream::new(self.style.clone(), self.width);
            let mut lines = stream.push(result);
            lines.extend(stream.finish());
            self.print(lines);
        }
        match status {
            OutcomeStatus::Cancelled => self.hint("  ⎿ cancelled"),
            OutcomeStatus::MaxIters | OutcomeStatus::Stopped => {
                let line = self.style.warn(result);
                self.say(line);
            }
            OutcomeStatus::Completed | OutcomeStatus::Error => {}
        }
        let mut stats = Vec::new();
        if ms > 0 && output_tokens > 0 {
            stats.push(format!(
                "{:.1} tok/s",
                output_tokens as f64 * 1000.0 / ms as f64
            ));
        }
        if let Some(c) = &self.session.context {
            stats.push(context::footer(c));
        }
        if !stats.is_empty() {
            self.hint(&stats.join(" · "));
        }
    }
}

/// The tool whose calls start child runs; shown through the child's own lines.
const DELEGATE_TOOL: &str = crate::tools::ToolName::Delegate.name();

pub(super) mod context;
mod live;
mod menu;
mod replay;

pub use menu::MenuKey;
mod settings_line;
mod todos;

pub use live::{Echo, SPINNER_FRAME};

#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;
