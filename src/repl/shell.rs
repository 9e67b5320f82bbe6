//! The interactive loop. The line editor runs on its own thread (rustyline blocks); lines
//! come to the async side over a channel, events go back out through the view.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{Config, Editor};
use tokio::sync::mpsc;

use super::catalog::Catalog;
use super::complete::FileIndex;
use super::editor::{self, LineHelper};
use super::extensions::{self, Extensions};
use super::footer::Footer;
use super::printer::{Hold, Out, QueuedPrinter};
use super::render::RenderStyle;
use super::reprompt::Reprompt;
use super::transcript::Viewer;
use super::view::{Shared, View};
use super::{complete, theme};
use crate::app::{self, Failure, LiveSession, Start, Workspace, exit};
use crate::session::{self, TurnMode, lock};
use crate::web::Mirror;

/// A second Ctrl+C on an empty line within this long exits.
const DOUBLE_CTRL_C: Duration = Duration::from_secs(2);

/// How long the shell waits for queued output to be written before the editor reads the
/// next line; normally it takes microseconds (see `printer.rs` for when it cannot).
const OUTPUT_FLUSH_LIMIT: Duration = Duration::from_millis(250);

/// How long the editor is given to write what it was handed when the shell ends under it
/// (the server an attached terminal used stopped).
const EDITOR_SETTLE: Duration = Duration::from_millis(150);

/// How long a settings change waits for the session's answer before the prompt returns.
const SETTING_ANSWER_LIMIT: Duration = Duration::from_secs(2);

/// What the editor thread reports.
pub(super) enum Typed {
    Line(String),
    Interrupted,
    Eof,
}

/// Everything the loop works with.
pub(super) struct Shell {
    /// What this shell was started with; `/clear` and `/resume` start from a changed copy.
    pub start: Start,
    pub ws: Workspace,
    /// The running session; `None` on a first run with no model yet (the shell opens all
    /// the same, says how to configure one, and starts the session with the next message).
    pub live: Option<LiveSession>,
    pub view: View,
    pub shared: Arc<Shared>,
    pub catalog: Catalog,
    pub prompt: Arc<std::sync::Mutex<String>>,
    /// Redraws the prompt while the editor waits, when a setting it shows changes.
    pub reprompt: Arc<Reprompt>,
    /// The dim row under the line: mode, permission mode, model, context (see `footer`).
    pub footer: Footer,
    pub extensions: Extensions,
    /// The session as the web mirror sees it, following it from its start, so that
    /// `/share` can begin at any time and still show everything.
    pub mirror: Option<Arc<Mirror>>,
    /// The web server, once `/share` started it.
    pub share: Option<crate::web::Server>,
    /// The turn ended with commands typed during it waiting to run.
    pub deferred_due: bool,
    /// The model id last chosen with `/model` (the session shows only its label): a
    /// restart (`/clear`, `/resume`) starts the new session on it.
    pub model_choice: Option<String>,
    /// A `/rewind` refused because of hand edits, waiting for the person's y/N.
    pub pending_rewind: Option<(String, crate::app::rewind::What)>,
    /// When Esc last interrupted a turn: pressed again soon after, it drops the queue too.
    pub last_esc: Option<Instant>,
    /// The configuration files as last read (see `config_follow`).
    pub config_stamp: super::config_follow::ConfigStamp,
    /// `/init` asked whether to replace this existing file, waiting for the person's y/N.
    pub pending_init: Option<&'static str>,
    /// Lines a command finished in the background (`/doctor`'s model servers).
    pub reports: super::doctor::Reports,
}

pub async fn run(start: Start) -> i32 {
    let result = try_run(start).await;
    super::tty::restore();
    match result {
        Ok(code) => code,
        Err(f) => {
            eprintln!("linggen: error: {}", f.message);
            f.code
        }
    }
}

async fn try_run(start: Start) -> Result<i32, Failure> {
    let mut ws = app::load_workspace(&start)?;
    // Before anything uses the configuration: a yes here applies to this session.
    let trust_hint = super::trust::ask_at_start(&mut ws).await;
    // Watching starts first, so that the window in which a new file goes unnoticed is short.
    let (extensions, watch_problems) = Extensions::start(&ws);
    let (theme, warning) = theme::load_or_default(&ws.config.theme, &ws.home);
    if let Some(w) = warning {
        eprintln!("linggen: warning: {w}");
    }
    let style = RenderStyle::detect(theme);
    let shared = Arc::new(Shared::default());
    let files = FileIndex::new(&ws.root);
    files.refresh_in_background();
    let catalog = Catalog::new(files, shared.busy.clone());
    extensions::fill(&catalog, &ws);
    // Start the session before the editor, so a dead model server is one line and exit. With
    // no model configured at all (a first run), the shell opens anyway and says how to add one.
    let (live, first_run) = match super::attach::open(&start, &ws).await {
        Ok(live) => (Some(live), None),
        Err(f) if ws.config.models.is_empty() && !start.attach => (None, Some(f.message)),
        Err(f) => return Err(f),
    };
    let mut live = live;
    let mirror = live.as_mut().and_then(Mirror::of);

    let mut sigint = interrupts();
    let mut endings = Some(app::signals::Signals::terminal_endings());
    let mut ended_by = None;
    let (typed_tx, mut typed) = mpsc::unbounded_channel();
    let (printer_tx, printer_rx) = std::sync::mpsc::channel();
    let (again_tx, again_rx) = std::sync::mpsc::channel();
    let start_agent = start.agent.as_deref().unwrap_or(app::DEFAULT_AGENT);
    let prompt = Arc::new(std::sync::Mutex::new(prompt_text(
        start_agent,
        TurnMode::default(),
        start
            .overrides
            .permission_mode
            .unwrap_or(ws.config.permission_mode),
    )));
    let (keys_tx, mut keys) = mpsc::unbounded_channel();
    let reprompt = Arc::new(Reprompt::new(Arc::default()));
    let hold = Hold::default();
    let footer = Footer::default();
    *lock(&shared.session_id) = live.as_ref().map(|l| l.session_id.clone());
    let io = EditorIo {
        footer: footer.clone(),
        viewer: Viewer {
            home: ws.home.clone(),
            root: ws.root.clone(),
            rewind: Arc::default(),
            shared: shared.clone(),
            style: style.clone(),
            hold: hold.clone(),
            request: Arc::default(),
        },
        reprompt: reprompt.clone(),
        busy: shared.busy.clone(),
        keys: keys_tx,
        typed: typed_tx,
        printer: printer_tx,
        again: again_rx,
        prompt: prompt.clone(),
    };
    spawn_editor(&ws, &shared, &catalog, !style.is_plain(), io);
    let printer = printer_rx.recv().map_err(|_| Failure {
        code: exit::FAILURE,
        message: "the line editor could not start (is this a terminal?)".into(),
    })?;
    let (printer, flush) =
        QueuedPrinter::spawn(printer, hold, shared.busy.clone()).map_err(|e| Failure {
            code: exit::FAILURE,
            message: format!("cannot start the output thread: {e}"),
        })?;
    let width = terminal_width();
    let mut view = View::new(Box::new(printer), style, width, shared.clone(), start_agent);
    view.show_thinking = ws.config.show_thinking;
    let config_stamp = super::config_follow::ConfigStamp::of(&ws.home, &ws.root);
    let mut shell = Shell {
        start,
        ws,
        live,
        view,
        shared,
        catalog,
        prompt,
        reprompt,
        footer,
        extensions,
        mirror,
        share: None,
        deferred_due: false,
        model_choice: None,
        pending_rewind: None,
        last_esc: None,
        config_stamp,
        pending_init: None,
        reports: Default::default(),
    };
    shell.refresh_lists().await;
    for problem in watch_problems {
        shell.view.warning(&problem);
    }
    let model = shell
        .live
        .as_ref()
        .map_or("no model yet", |live| live.model_label.as_str());
    shell.view.hint(&format!(
        "linggen {} · {model} · {} · /help for commands",
        env!("CARGO_PKG_VERSION"),
        shell.ws.root.display()
    ));
    if let Some(live) = shell.live.as_ref()
        && let Some(owner) = &live.owner
    {
        shell.view.own_sender = crate::web::attach::SENDER;
        let line = format!(
            "attached to {owner} · session {} · its page and this terminal share it",
            live.session_id
        );
        shell.view.hint(&line);
    }
    if let Some(message) = first_run {
        shell.view.warning(&message);
    }
    if let Some(hint) = trust_hint {
        shell.view.hint(&hint);
    }
    if let Some(live) = shell.live.as_mut() {
        let resumed = std::mem::take(&mut live.resumed);
        shell.view.replay(&live.session_id, &resumed);
    }
    let mut last_interrupt: Option<Instant> = None;
    let mut server_gone = false;
    let mut spinner = tokio::time::interval(super::view::SPINNER_FRAME);
    spinner.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = spinner.tick() => {
                // A resize mid-answer applies from the answer's next line.
                shell.view.set_width(terminal_width());
                shell.view.set_height(terminal_height());
                shell.view.tick();
            }
            envelope = next_event(&mut shell.live) => match envelope {
                Some(envelope) => {
                    // The width now, not at the last tick: a print right after a resize
                    // erases the live area by the rows the terminal made of it.
                    shell.view.set_width(terminal_width());
                    shell.view.set_height(terminal_height());
                    shell.on_event(&envelope.event)
                }
                // Only a session of another process ends under the shell (its server
                // stopped); the line saying so was its last event.
                None => {
                    server_gone = true;
                    let _ = again_tx.send(false);
                    break;
                }
            },
            Some(key) = keys.recv() => shell.on_key(key).await,
            lines = shell.reports.next() => shell.view.lines(lines),
            // A skill or agent file changed on disk (the sets were re-read).
            Ok(()) = shell.extensions.skills.changed() => shell.extensions_changed(),
            Ok(()) = shell.extensions.agents.changed() => shell.extensions_changed(),
            // Ctrl+C while the editor is between lines (the terminal is not in raw mode then)
            // arrives as SIGINT; it must mean the same as Ctrl+C at the prompt, not kill us.
            // (Unless it was the shell's own, asking the editor for a new prompt.)
            Some(()) = sigint.recv() => {
                if !shell.reprompt.take() && shell.interrupt(&mut last_interrupt).await {
                    let _ = again_tx.send(false);
                    break;
                }
            }
            // The terminal closed, or someone asked linggen to stop: as Ctrl+C on a running
            // turn, then out through the same door as /exit (the session saved, the
            // terminal put back).
            ending = next_ending(&mut endings) => {
                ended_by = Some(ending);
                shell.cancel().await;
                if let Some(endings) = endings.take() {
                    endings.second_quits(super::tty::restore);
                }
                let _ = again_tx.send(false);
                break;
            }
            typed = typed.recv() => match typed {
                None | Some(Typed::Eof) => break,
                Some(Typed::Interrupted) => {
                    let prompt = lock(&shell.prompt).clone();
                    shell.view.interrupted(&prompt, terminal_width());
                    let quit = shell.interrupt(&mut last_interrupt).await;
                    flush.wait(OUTPUT_FLUSH_LIMIT);
                    let _ = again_tx.send(!quit);
                    if quit {
                        break;
                    }
                }
                Some(Typed::Line(line)) => {
                    last_interrupt = None;
                    shell.echo_submitted(&line);
                    let go_on = shell.handle_line(line).await;
                    // The line's output first, then the next prompt.
                    flush.wait(OUTPUT_FLUSH_LIMIT);
                    // The editor waits for this before reading again, so it is never left
                    // in raw mode when the shell exits.
                    let _ = again_tx.send(go_on);
                    if !go_on {
                        break;
                    }
                }
            }
        }
        if shell.deferred_due && !shell.run_deferred().await {
            let _ = again_tx.send(false);
            break;
        }
    }
    if let Some(server) = shell.share.take() {
        server.stop().await;
    }
    let talked = shell.view.has_turns();
    let id = shell
        .live
        .as_ref()
        .map(|l| l.session_id.clone())
        .unwrap_or_default();
    let attached_to = shell.live.as_ref().and_then(|l| l.owner.clone());
    if let Some(live) = shell.live.take() {
        live.stop().await;
    }
    // Where to pick up again, once there is something to pick up.
    if let Some(owner) = attached_to.as_ref().filter(|_| !server_gone) {
        shell
            .view
            .hint(&format!("detached; the session goes on in {owner}"));
    } else if talked && attached_to.is_none() {
        shell.view.hint(&format!(
            "resume this session with `linggen -c` (or `linggen --resume {id}`)"
        ));
    }
    flush.wait(OUTPUT_FLUSH_LIMIT);
    if server_gone {
        // The editor is still reading: rustyline's printer hands the last lines (why the
        // session ended) to its thread, which writes them in its own time, with the line
        // and the footer redrawn after them. Exiting at once could cut that write.
        std::thread::sleep(EDITOR_SETTLE);
    }
    Ok(ended_by.map_or(exit::SUCCESS, app::signals::Ending::exit_code))
}

async fn next_ending(endings: &mut Option<app::signals::Signals>) -> app::signals::Ending {
    match endings {
        Some(endings) => endings.next().await,
        None => std::future::pending().await,
    }
}

impl Shell {
    fn on_event(&mut self, event: &session::Event) {
        self.view.on_event(event);
        match event {
            session::Event::SessionStarted { .. } | session::Event::SettingsUpdated { .. } => {
                self.update_prompt()
            }
            // The turn and everything queued after it ended: commands typed meanwhile are
            // due (the loop runs them).
            session::Event::StateUpdated {
                status: session::SessionStatus::Idle,
                ..
            } => {
                self.deferred_due = true;
                // The context the turn used shows in the footer.
                self.update_prompt();
            }
            _ => {}
        }
    }

    /// Esc interrupts the running turn (the line being typed stays); Shift+Tab moves to the
    /// next permission mode, which the session applies from its next turn.
    async fn on_key(&mut self, key: editor::Key) {
        match key {
            editor::Key::Esc => self.on_esc().await,
            editor::Key::Menu(key) => {
                let pending = lock(&self.shared.approval).clone();
                if let (Some(pending), Some(decision)) = (pending, self.view.menu_key(key)) {
                    let from = "terminal".to_string();
                    let id = pending.id;
                    self.ask(session::Input::Approval { id, decision, from })
                        .await;
                }
            }
            editor::Key::ShowTodos => self.view.show_todos(),
            editor::Key::CycleMode => {
                use crate::config::PermissionMode;
                let mode = match self.view.settings().permission_mode {
                    PermissionMode::Default => PermissionMode::AcceptEdits,
                    PermissionMode::AcceptEdits => PermissionMode::Plan,
                    PermissionMode::Plan | PermissionMode::Bypass => PermissionMode::Default,
                };
                self.ask(session::Input::SetPermissionMode { mode }).await;
            }
        }
    }

    /// The running session; on a first run without one, starts it now (the person may have
    /// configured a model meanwhile), or says again how to configure one.
    pub async fn session(&mut self) -> Option<&mut LiveSession> {
        if self.live.is_none() {
            let start = self.start.clone();
            // The configuration may have changed since the shell started (read off the
            // runtime: it reads files).
            let owned = start.clone();
            match app::off_runtime(move || app::load_workspace(&owned)).await {
                Ok(ws) => {
                    self.config_stamp = super::config_follow::ConfigStamp::of(&ws.home, &ws.root);
                    self.ws.config = ws.config;
                }
                Err(f) => {
                    self.view.error(&f.message);
                    return None;
                }
            }
            match LiveSession::start(&start, &self.ws, true).await {
                Ok(mut live) => {
                    self.mirror = Mirror::of(&mut live);
                    self.view.hint(&format!("model {}", live.model_label));
                    *lock(&self.shared.session_id) = Some(live.session_id.clone());
                    self.live = Some(live);
                    self.refresh_lists().await;
                }
                Err(f) => {
                    self.view.warning(&f.message);
                    return None;
                }
            }
        }
        self.live.as_mut()
    }

    /// The process that runs this shell's session, when it is not this one (`--attach`).
    pub(super) fn attached_to(&self) -> Option<String> {
        self.live.as_ref().and_then(|l| l.owner.clone())
    }

    /// Esc while a turn runs interrupts it; the messages queued behind it then run, so a
    /// second Esc soon after drops them and interrupts whatever already started.
    async fn on_esc(&mut self) {
        if !self.shared.is_busy() {
            return;
        }
        let again = self
            .last_esc
            .is_some_and(|at| at.elapsed() < editor::ESC_AGAIN);
        let queued = self.view.session().queue.len();
        if again && queued > 0 {
            self.ask(session::Input::ClearQueue).await;
            let s = if queued == 1 { "" } else { "s" };
            self.view
                .hint(&format!("dropped {queued} queued message{s}"));
        } else if queued > 0 {
            let s = if queued == 1 { "" } else { "s" };
            self.view.hint(&format!(
                "{queued} queued message{s} run next · esc again to drop them"
            ));
        }
        self.cancel().await;
        self.last_esc = Some(Instant::now());
    }

    /// Cancels the running turn, if a session runs one.
    async fn cancel(&mut self) {
        if let Some(live) = &self.live {
            let _ = live.handle.inputs.send(session::Input::Cancel).await;
        }
    }

    /// Runs the commands typed during the turn that just ended, each shown as typed.
    /// Returns `false` when one of them quits.
    async fn run_deferred(&mut self) -> bool {
        self.deferred_due = false;
        for line in self.view.take_deferred() {
            let echo = format!("› {line}");
            self.view.hint(&echo);
            if !self.handle_line(line).await {
                return false;
            }
        }
        true
    }

    /// Tells the view about a line the editor just left on screen: a message typed during a
    /// turn waits in the queue (and shows when it runs); anything else shows at once.
    fn echo_submitted(&mut self, line: &str) {
        let prompt = lock(&self.prompt).clone();
        let answering = lock(&self.shared.approval).is_some();
        use super::triggers::Parsed;
        use super::view::Echo;
        let echo = if !self.shared.is_busy() || answering {
            Echo::Now
        } else if super::dispatch::memory_line(&editor::join_continuations(line)).is_some() {
            // Saved at once, not queued.
            Echo::Now
        } else {
            match self.catalog.parse(&editor::join_continuations(line)) {
                // Runs when the turn ends, and shows itself then.
                Parsed::Command { command, .. } if !command.available_while_busy() => Echo::Never,
                Parsed::Command { .. } | Parsed::UnknownCommand { .. } | Parsed::Empty => Echo::Now,
                // A message waits in the queue and shows when its turn starts.
                _ => Echo::WhenItRuns,
            }
        };
        self.view.submitted(&prompt, line, terminal_width(), echo);
    }

    /// Sends an input and shows the session's own answer before the editor reads again: a
    /// refusal as an error; an accepted setting through its `SettingsUpdated`, which the
    /// session published before answering, so the next prompt already shows the change.
    /// Returns whether it was accepted.
    pub async fn ask(&mut self, input: session::Input) -> bool {
        // The session answers at once; the limit only keeps a wedged session from taking
        // the shell with it.
        let Some(live) = self.session().await else {
            return false;
        };
        let answer = tokio::time::timeout(SETTING_ANSWER_LIMIT, live.handle.inputs.ask(input));
        let accepted = match answer.await {
            Ok(Ok(Ok(()))) => true,
            Ok(Ok(Err(why))) => {
                self.view.error(&why);
                false
            }
            Ok(Err(stopped)) => {
                self.view.error(&format!("{stopped}; restart linggen"));
                false
            }
            Err(_) => {
                self.view
                    .error("the session did not answer; it may be stuck (Ctrl+C cancels the turn)");
                false
            }
        };
        while let Some(envelope) = self.live.as_mut().and_then(|l| l.events.try_recv()) {
            self.on_event(&envelope.event);
        }
        accepted
    }

    /// Ctrl+C on an empty line: cancel a running turn; when idle, hint, and quit on the
    /// second press within two seconds. Returns `true` to quit.
    async fn interrupt(&mut self, last: &mut Option<Instant>) -> bool {
        if self.shared.is_busy() {
            self.cancel().await;
            return false;
        }
        if last.is_some_and(|t| t.elapsed() < DOUBLE_CTRL_C) {
            return true;
        }
        *last = Some(Instant::now());
        self.view.hint("(press Ctrl+C again to exit, or Ctrl+D)");
        false
    }

    /// Model ids, sessions and themes for completion.
    pub async fn refresh_lists(&mut self) {
        let mut models: Vec<complete::Choice> = self
            .ws
            .config
            .models
            .iter()
            .map(|m| {
                complete::Choice::described(&m.id, format!("{} {}", m.provider.as_str(), m.model))
            })
            .collect();
        models.push(complete::Choice::described(
            "auto",
            "the [routing] policy chooses per call",
        ));
        // SQLite and a directory listing: off the runtime.
        let (home, root) = (self.ws.home.clone(), self.ws.root.display().to_string());
        let read = tokio::task::spawn_blocking(move || {
            // Listing must not create the database (a first run without a model has none).
            let sessions = home
                .join(crate::store::DB_FILE)
                .exists()
                .then(|| crate::store::Store::open(&home))
                .transpose()
                .and_then(|s| s.map_or(Ok(Vec::new()), |s| s.list_sessions(&root)))
                .map(|list| {
                    list.into_iter()
                        .map(|s| complete::Choice::described(s.id, s.title))
                        .collect()
                })
                .unwrap_or_default();
            let themes = theme::available(&home)
                .into_iter()
                .map(complete::Choice::new)
                .collect();
            (sessions, themes)
        });
        let (sessions, themes) = read.await.unwrap_or_default();
        self.catalog.update(|lists| {
            lists.models = models;
            lists.sessions = sessions;
            lists.themes = themes;
        });
    }

    /// Replaces the running session (new or resumed). What carries over from the old one
    /// is the core's decision (`app::carry`).
    pub async fn restart(&mut self, next: Start) -> Result<(), Failure> {
        let mut start = next.clone();
        let agents = self.ws.agents.get();
        let carried = app::carry::carry_over(
            self.view.settings(),
            |name| agents.get(name).map(|a| a.mode),
            self.model_choice.as_deref(),
        );
        carried.apply(&mut start);
        let mut live = LiveSession::start(&start, &self.ws, true).await?;
        self.mirror = Mirror::of(&mut live);
        *lock(&self.shared.session_id) = Some(live.session_id.clone());
        let old = self.live.replace(live);
        self.share_follows();
        if let Some(old) = old {
            match start.cleared {
                true => old.stop_for_clear().await,
                false => old.stop().await,
            };
        }
        let agent = start.agent.as_deref().unwrap_or(app::DEFAULT_AGENT);
        self.view.follow_new_session(agent);
        if let Some(live) = self.live.as_mut() {
            let resumed = std::mem::take(&mut live.resumed);
            self.view.replay(&live.session_id, &resumed);
        }
        self.fold_until_started().await;
        if let Some(mode) = carried.mode {
            self.ask(session::Input::SetMode { mode }).await;
        }
        self.start = next;
        self.refresh_lists().await;
        self.update_prompt();
        Ok(())
    }

    /// The prompt follows the settings; one the editor is showing is redrawn at once (a
    /// change from the web page or Shift+Tab does not wait for the next Enter).
    pub fn update_prompt(&self) {
        let now = self.view.settings();
        let text = prompt_text(&now.agent_id, now.mode, now.permission_mode);
        let changed = *lock(&self.prompt) != text;
        *lock(&self.prompt) = text;
        let footer_changed = self.footer.set(super::footer::text(
            now,
            self.view.session().context.as_ref(),
        ));
        if changed || footer_changed {
            self.reprompt.request();
        }
    }
}

/// The next event of the running session (never, while there is none).
impl Shell {
    /// Folds the new session's events up to its `SessionStarted`: until then the view holds
    /// no settings, and a `/settings` typed at the next prompt would show blanks. Bounded:
    /// a session that does not start within the limit is shown as it comes.
    async fn fold_until_started(&mut self) {
        let limit = tokio::time::sleep(std::time::Duration::from_secs(5));
        tokio::pin!(limit);
        loop {
            let envelope = tokio::select! {
                () = &mut limit => return,
                envelope = next_event(&mut self.live) => envelope,
            };
            let Some(envelope) = envelope else { return };
            self.on_event(&envelope.event);
            if matches!(envelope.event, session::Event::SessionStarted { .. }) {
                return;
            }
        }
    }
}

async fn next_event(live: &mut Option<LiveSession>) -> Option<std::sync::Arc<session::Envelope>> {
    match live {
        Some(live) => live.events.recv().await,
        None => std::future::pending().await,
    }
}

/// The current agent, then what differs from the defaults: `ling › `, `coder › `,
/// `ling [talk] › `, `ling [accept-edits] › `.
fn prompt_text(
    agent: &str,
    mode: TurnMode,
    permission_mode: crate::config::PermissionMode,
) -> String {
    let mut text = agent.to_string();
    if mode != TurnMode::default() {
        text.push_str(&format!(" [{}]", mode.as_str()));
    }
    if permission_mode != crate::config::PermissionMode::Default {
        text.push_str(&format!(" [{}]", permission_mode.as_str()));
    }
    text.push_str(" › ");
    text
}

/// SIGINT as a queue, registered at once. It must be in place before the line editor first
/// reads: rustyline installs its own SIGINT handler for each line and puts back the one it
/// found, so a handler registered during a line would be replaced by the default one when
/// the line ends — and the next Ctrl+C between lines would kill the shell. The listener
/// also stays registered, so a Ctrl+C that arrives while the loop is busy (rendering a burst
/// of tokens, say) waits for it instead of being lost.
fn interrupts() -> mpsc::UnboundedReceiver<()> {
    let (tx, rx) = mpsc::unbounded_channel();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        // Without a handler Ctrl+C still works at the prompt, through the editor.
        if let Ok(mut sigint) = signal(SignalKind::interrupt()) {
            tokio::spawn(async move {
                while sigint.recv().await.is_some() {
                    if tx.send(()).is_err() {
                        break;
                    }
                }
            });
        }
    }
    #[cfg(not(unix))]
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            if tx.send(()).is_err() {
                break;
            }
        }
    });
    rx
}

/// The terminal's rows; unknown, no limit.
fn terminal_height() -> u16 {
    termimad::crossterm::terminal::size().map_or(u16::MAX, |(_, h)| h.max(2))
}

pub(crate) fn terminal_width() -> u16 {
    if let Some(width) = RenderStyle::dumb_terminal_width() {
        return width;
    }
    termimad::crossterm::terminal::size().map_or(100, |(w, _)| w.max(20))
}

/// The terminal's columns and rows.
fn terminal_size() -> (u16, u16) {
    let rows = termimad::crossterm::terminal::size().map_or(24, |(_, rows)| rows);
    (terminal_width(), rows)
}

/// The editor thread's channels.
struct EditorIo {
    typed: mpsc::UnboundedSender<Typed>,
    printer: std::sync::mpsc::Sender<Out>,
    /// After each line: read another (`true`) or stop (`false`).
    again: std::sync::mpsc::Receiver<bool>,
    prompt: Arc<std::sync::Mutex<String>>,
    /// Whether a turn runs (Esc interrupts only then).
    busy: Arc<std::sync::atomic::AtomicBool>,
    /// Esc and Shift+Tab, for the shell.
    keys: mpsc::UnboundedSender<editor::Key>,
    /// Asks for the prompt to be drawn again while a line is read.
    reprompt: Arc<Reprompt>,
    /// Ctrl+O's full-screen transcript.
    viewer: Viewer,
    footer: Footer,
}

/// Runs rustyline on its own thread; hands back its external printer first.
fn spawn_editor(
    ws: &Workspace,
    shared: &Arc<Shared>,
    catalog: &Catalog,
    color: bool,
    io: EditorIo,
) {
    let history = super::history::History::new(&ws.home, &ws.root);
    let shared = shared.clone();
    let line_empty = shared.line_empty.clone();
    let submitted_empty = shared.line_empty.clone();
    let (for_complete, for_hint) = (catalog.clone(), catalog.clone());
    let footer = io.footer.clone();
    let popup = super::popup::Popup::default();
    let (popup_rows, popup_take, popup_keys) = (popup.clone(), popup.clone(), popup);
    std::thread::spawn(move || {
        // Lines are added to the history here, not by the editor: approval answers are not
        // history.
        let builder = Config::builder()
            .auto_add_history(false)
            .keyseq_timeout(Some(editor::ESC_TIMEOUT_MS))
            .completion_type(rustyline::CompletionType::List);
        // History is de-duplicated; the builder only fails for a zero history size.
        let config = match builder
            .clone()
            .max_history_size(super::history::KEPT)
            .and_then(|b| b.history_ignore_dups(true))
        {
            Ok(b) => b.build(),
            Err(_) => builder.build(),
        };
        let Ok(mut editor) = Editor::<LineHelper, FileHistory>::with_config(config) else {
            return;
        };
        let helper = LineHelper::new(
            Box::new(move |line, pos| match popup_take.take(line, pos) {
                Some((start, replacement)) => {
                    let display = replacement.clone();
                    (
                        start,
                        vec![rustyline::completion::Pair {
                            display,
                            replacement,
                        }],
                    )
                }
                None => for_complete.complete(line, pos),
            }),
            Box::new(move |line, pos| {
                let candidates = || for_hint.candidates(line, pos);
                let rows = popup_rows.rows(line, pos, candidates, terminal_size());
                // The list says more than the argument hint (`/` alone lists commands).
                let hint = if rows.is_empty() {
                    for_hint.hint(line, pos)
                } else {
                    None
                };
                footer.under(hint, rows)
            }),
            line_empty,
            io.reprompt.clone(),
            color,
        );
        editor.set_helper(Some(helper));
        let waiting = shared.clone();
        let menu: editor::MenuActive = Arc::new(move || {
            lock(&waiting.approval)
                .as_ref()
                .filter(|p| !p.typeahead)
                .map(|p| p.once_only)
        });
        editor::bind_keys(
            &mut editor,
            io.busy.clone(),
            io.keys.clone(),
            menu,
            io.viewer.request.clone(),
            io.viewer.rewind.clone(),
            popup_keys,
        );
        for line in history.load() {
            let _ = editor.add_history_entry(line);
        }
        // A terminal the editor cannot drive (`TERM=dumb`: Emacs' shell, some IDE consoles)
        // gets plain lines: the editor reads without editing, and output goes straight out.
        let printer = match editor.create_external_printer() {
            Ok(p) => {
                // Only an editor that reads in raw mode wants Enter kept as `\r`; a
                // plain line reader (`TERM=dumb`) needs the usual translation.
                super::tty::keep_enter();
                Out::Editor(Box::new(p))
            }
            Err(_) => Out::Plain(super::printer::Stdout {
                prompt: io.prompt.clone(),
                reading: io.reprompt.reading.clone(),
                owed: false,
            }),
        };
        let _ = io.printer.send(printer);
        loop {
            let read = read_line(&mut editor, &io);
            // The line left the editor: until the next keystroke, nothing is being typed
            // (an approval arriving now must not take the next line for type-ahead).
            submitted_empty.store(true, std::sync::atomic::Ordering::Relaxed);
            let event = match read {
                Ok(line) => {
                    let answering = lock(&shared.approval)
                        .as_ref()
                        .is_some_and(|p| !p.typeahead);
                    if !answering && !line.trim().is_empty() {
                        let _ = editor.add_history_entry(line.as_str());
                        // A lost history line is not worth interrupting the person for.
                        let _ = history.append(&line);
                    }
                    Typed::Line(line)
                }
                Err(ReadlineError::Interrupted) => Typed::Interrupted,
                Err(_) => Typed::Eof,
            };
            let eof = matches!(event, Typed::Eof);
            if io.typed.send(event).is_err() || eof {
                break;
            }
            if !io.again.recv().unwrap_or(false) {
                break;
            }
        }
    });
}

/// One line, read again under the new prompt each time the shell asks for one (see
/// `reprompt`), with the text and cursor as the person left them.
fn read_line(
    editor: &mut Editor<LineHelper, FileHistory>,
    io: &EditorIo,
) -> rustyline::Result<String> {
    use std::sync::atomic::Ordering;
    let mut initial: Option<(String, usize)> = None;
    loop {
        let prompt = lock(&io.prompt).clone();
        io.reprompt.reading.store(true, Ordering::SeqCst);
        let read = match &initial {
            Some((line, pos)) => editor.readline_with_initial(&prompt, line.split_at(*pos)),
            None => editor.readline(&prompt),
        };
        io.reprompt.reading.store(false, Ordering::SeqCst);
        let interrupted = matches!(read, Err(ReadlineError::Interrupted));
        let footer_rows = io.footer.rows();
        if interrupted && let Some(typed) = io.viewer.take_request() {
            // Erased first, at the width it was drawn at: the terminal may be resized while
            // the viewer is open, and rows reflowed then could no longer be counted.
            super::reprompt::erase(&prompt, &typed.0, footer_rows, terminal_width());
            io.viewer.show();
            initial = Some(typed);
            continue;
        }
        if interrupted && io.viewer.take_rewind() {
            super::reprompt::erase(&prompt, "", footer_rows, terminal_width());
            match io.viewer.pick_rewind() {
                // Shown as if typed, and run like it.
                Some(line) => {
                    use std::io::Write;
                    let mut out = std::io::stdout().lock();
                    let _ = write!(out, "{prompt}{line}\r\n");
                    let _ = out.flush();
                    return Ok(line);
                }
                None => continue,
            }
        }
        if interrupted && io.reprompt.take() {
            io.reprompt.erase(&prompt, footer_rows, terminal_width());
            initial = Some(io.reprompt.typed());
            continue;
        }
        if interrupted && footer_rows > 0 {
            // Ctrl+C left the footer on screen under the line: it goes, and what the shell
            // prints next takes its row.
            super::footer::erase_below();
        }
        return read;
    }
}
