//! The interactive loop: the `Shell` object and the loop that feeds it session events,
//! typed lines, keys and signals. Its parts live beside it: the line editor's thread in
//! `input`, the tie to the session in `link`, what is drawn in `view`, and the commands in
//! `dispatch` and the files named after them (`settings`, `share`, `rewind`, `init`, …).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::catalog::Catalog;
use super::complete::FileIndex;
use super::editor;
use super::extensions::{self, Extensions};
use super::footer::Footer;
use super::input::{EditorIo, Typed, spawn_editor};
use super::link::SessionLink;
use super::printer::{Flush, Hold, QueuedPrinter};
use super::render::RenderStyle;
use super::reprompt::Reprompt;
use super::transcript::Viewer;
use super::tty::{terminal_height, terminal_width};
use super::view::{Shared, View};
use super::{complete, theme};
use crate::app::{self, Failure, LiveSession, Start, Workspace, exit};
use crate::session::{self, TurnMode, lock};

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

/// A question the shell asked, which the next line answers with y or anything else.
pub(super) enum Question {
    /// A `/rewind` refused because of hand edits: overwrite them?
    Rewind(String, crate::app::rewind::What),
    /// `/init` found this file: write AGENTS.md over or from it?
    Init(&'static str),
}

/// Everything the loop works with.
pub(super) struct Shell {
    /// What this shell was started with; `/clear` and `/resume` start from a changed copy.
    pub start: Start,
    pub ws: Workspace,
    /// The running session, its web mirror and `/share`'s server.
    pub link: SessionLink,
    pub view: View,
    pub shared: Arc<Shared>,
    pub catalog: Catalog,
    pub prompt: Arc<std::sync::Mutex<String>>,
    /// Redraws the prompt while the editor waits, when a setting it shows changes.
    pub reprompt: Arc<Reprompt>,
    /// The dim row under the line: mode, permission mode, model, context (see `footer`).
    pub footer: Footer,
    pub extensions: Extensions,
    /// The turn ended with commands typed during it waiting to run.
    pub deferred_due: bool,
    /// The model id last chosen with `/model` (the session shows only its label): a
    /// restart (`/clear`, `/resume`) starts the new session on it.
    pub model_choice: Option<String>,
    /// A y/N question the next line answers.
    pub question: Option<Question>,
    /// When Esc last interrupted a turn: pressed again soon after, it drops the queue too.
    pub last_esc: Option<Instant>,
    /// The configuration files as last read (see `config_follow`).
    pub config_stamp: super::config_follow::ConfigStamp,
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
    let (mut shell, mut ends, greeting) = open(start).await?;
    shell.greet(greeting).await;
    let ended = shell.run_loop(&mut ends).await;
    Ok(shell.close(ended, &ends).await)
}

/// What the shell says before the first prompt, gathered while it opens.
struct Greeting {
    /// Skill and agent files that could not be watched.
    watch_problems: Vec<String>,
    /// A first run with no model: how to configure one.
    first_run: Option<String>,
    /// What the trust question at start decided.
    trust_hint: Option<String>,
}

/// The loop's ends of the editor thread, the output thread and the signals (the session's
/// are in [`SessionLink`]).
struct Ends {
    typed: mpsc::UnboundedReceiver<Typed>,
    keys: mpsc::UnboundedReceiver<editor::Key>,
    /// After each line, tells the editor whether to read another.
    again: std::sync::mpsc::Sender<bool>,
    flush: Flush,
    sigint: mpsc::UnboundedReceiver<()>,
    endings: Option<app::signals::Signals>,
}

/// How the loop ended.
#[derive(Default)]
struct Ended {
    /// The session of another process ended under the shell (its server stopped).
    server_gone: bool,
    /// The terminal closed or a signal asked linggen to stop.
    by: Option<app::signals::Ending>,
}

/// Loads the workspace, opens the session and starts the editor and output threads.
async fn open(start: Start) -> Result<(Shell, Ends, Greeting), Failure> {
    let mut ws = app::load_workspace(&start)?;
    // Before anything uses the configuration: a yes here applies to this session.
    let trust_hint = super::trust::ask_at_start(&mut ws).await;
    // Watching starts first, so that the window in which a new file goes unnoticed is short.
    let (extensions, watch_problems) = Extensions::start(&ws);
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
    let link = SessionLink::new(live, &shared);
    let (terminal, ends) = start_terminal(&start, &ws, &shared, &catalog)?;
    let config_stamp = super::config_follow::ConfigStamp::of(&ws.home, &ws.root);
    let shell = Shell {
        start,
        ws,
        link,
        view: terminal.view,
        shared,
        catalog,
        prompt: terminal.prompt,
        reprompt: terminal.reprompt,
        footer: terminal.footer,
        extensions,
        deferred_due: false,
        model_choice: None,
        question: None,
        last_esc: None,
        config_stamp,
        reports: Default::default(),
    };
    let greeting = Greeting {
        watch_problems,
        first_run,
        trust_hint,
    };
    Ok((shell, ends, greeting))
}

/// What the shell draws with, made by [`start_terminal`].
struct Terminal {
    view: View,
    prompt: Arc<std::sync::Mutex<String>>,
    reprompt: Arc<Reprompt>,
    footer: Footer,
}

/// Starts the line editor's thread and the output thread that feeds it, the view that
/// prints through them, and the signals the terminal sends.
fn start_terminal(
    start: &Start,
    ws: &Workspace,
    shared: &Arc<Shared>,
    catalog: &Catalog,
) -> Result<(Terminal, Ends), Failure> {
    let (theme, warning) = theme::load_or_default(&ws.config.theme, &ws.home);
    if let Some(w) = warning {
        eprintln!("linggen: warning: {w}");
    }
    let style = RenderStyle::detect(theme);
    // Registered before the editor first reads (see `interrupts`).
    let sigint = interrupts();
    let endings = Some(app::signals::Signals::terminal_endings());
    let (typed_tx, typed) = mpsc::unbounded_channel();
    let (printer_tx, printer_rx) = std::sync::mpsc::channel();
    let (again, again_rx) = std::sync::mpsc::channel();
    let (keys_tx, keys) = mpsc::unbounded_channel();
    let start_agent = start.agent.as_deref().unwrap_or(app::DEFAULT_AGENT);
    let prompt = Arc::new(std::sync::Mutex::new(prompt_text(
        start_agent,
        TurnMode::default(),
        start
            .overrides
            .permission_mode
            .unwrap_or(ws.config.permission_mode),
    )));
    let reprompt = Arc::new(Reprompt::new(Arc::default()));
    let hold = Hold::default();
    let footer = Footer::default();
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
    spawn_editor(ws, shared, catalog, !style.is_plain(), io);
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
    let terminal = Terminal {
        view,
        prompt,
        reprompt,
        footer,
    };
    let ends = Ends {
        typed,
        keys,
        again,
        flush,
        sigint,
        endings,
    };
    Ok((terminal, ends))
}

impl Shell {
    /// The lines before the first prompt: what the shell runs with, and what needs care.
    async fn greet(&mut self, greeting: Greeting) {
        self.refresh_lists().await;
        for problem in greeting.watch_problems {
            self.view.warning(&problem);
        }
        let model = self
            .link
            .live
            .as_ref()
            .map_or("no model yet", |live| live.model_label.as_str());
        self.view.hint(&format!(
            "linggen {} · {model} · {} · /help for commands",
            env!("CARGO_PKG_VERSION"),
            self.ws.root.display()
        ));
        if let Some(live) = self.link.live.as_ref()
            && let Some(owner) = &live.owner
        {
            self.view.own_sender = crate::app::attach::SENDER;
            let line = format!(
                "attached to {owner} · session {} · its page and this terminal share it",
                live.session_id
            );
            self.view.hint(&line);
        }
        if let Some(message) = greeting.first_run {
            self.view.warning(&message);
        }
        if let Some(hint) = greeting.trust_hint {
            self.view.hint(&hint);
        }
        if let Some(live) = self.link.live.as_mut() {
            let resumed = std::mem::take(&mut live.resumed);
            self.view.replay(&live.session_id, &resumed);
        }
    }

    /// Events, keys, lines and signals, until one of them ends the shell.
    async fn run_loop(&mut self, ends: &mut Ends) -> Ended {
        let mut last_interrupt: Option<Instant> = None;
        let mut spinner = tokio::time::interval(super::view::SPINNER_FRAME);
        spinner.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                _ = spinner.tick() => {
                    // A resize mid-answer applies from the answer's next line.
                    self.follow_terminal_size();
                    self.view.tick();
                    // A request for a new prompt lost as the read began (see `reprompt`).
                    if self.reprompt.behind() {
                        self.reprompt.ask_again();
                    }
                }
                envelope = self.link.next_event() => match envelope {
                    Some(envelope) => {
                        // The size now, not at the last tick: a print right after a resize
                        // erases the live area by the rows the terminal made of it.
                        self.follow_terminal_size();
                        self.on_event(&envelope.event)
                    }
                    // Only a session of another process ends under the shell (its server
                    // stopped); the line saying so was its last event.
                    None => {
                        let _ = ends.again.send(false);
                        return Ended { server_gone: true, by: None };
                    }
                },
                Some(key) = ends.keys.recv() => self.on_key(key).await,
                lines = self.reports.next() => self.view.lines(lines),
                // A skill or agent file changed on disk (the sets were re-read).
                Ok(()) = self.extensions.skills.changed() => self.extensions_changed(),
                Ok(()) = self.extensions.agents.changed() => self.extensions_changed(),
                // Ctrl+C while the editor is between lines (the terminal is not in raw mode
                // then) arrives as SIGINT; it must mean the same as Ctrl+C at the prompt, not
                // kill us. (Unless it was the shell's own, asking the editor for a new prompt.)
                Some(()) = ends.sigint.recv() => {
                    if !self.reprompt.take() && self.interrupt(&mut last_interrupt).await {
                        let _ = ends.again.send(false);
                        return Ended::default();
                    }
                }
                // The terminal closed, or someone asked linggen to stop: as Ctrl+C on a
                // running turn, then out through the same door as /exit (the session saved,
                // the terminal put back).
                ending = next_ending(&mut ends.endings) => {
                    self.link.cancel().await;
                    if let Some(endings) = ends.endings.take() {
                        endings.second_quits(super::tty::restore);
                    }
                    let _ = ends.again.send(false);
                    return Ended { server_gone: false, by: Some(ending) };
                }
                typed = ends.typed.recv() => {
                    if !self.on_typed(typed, ends, &mut last_interrupt).await {
                        return Ended::default();
                    }
                }
            }
            if self.deferred_due && !self.run_deferred().await {
                let _ = ends.again.send(false);
                return Ended::default();
            }
        }
    }

    fn follow_terminal_size(&mut self) {
        self.view.set_width(terminal_width());
        self.view.set_height(terminal_height());
    }

    /// What the editor read: a line to handle, Ctrl+C, or the end of input. Whether the
    /// shell goes on; the editor is told the same.
    async fn on_typed(
        &mut self,
        typed: Option<Typed>,
        ends: &Ends,
        last_interrupt: &mut Option<Instant>,
    ) -> bool {
        let go_on = match typed {
            None | Some(Typed::Eof) => return false,
            Some(Typed::Interrupted) => {
                let prompt = lock(&self.prompt).clone();
                self.view.interrupted(&prompt, terminal_width());
                !self.interrupt(last_interrupt).await
            }
            Some(Typed::Line(line)) => {
                *last_interrupt = None;
                self.echo_submitted(&line);
                self.handle_line(line).await
            }
        };
        // The line's output first, then the next prompt.
        ends.flush.wait(OUTPUT_FLUSH_LIMIT);
        // The editor waits for this before reading again, so it is never left in raw mode
        // when the shell exits.
        let _ = ends.again.send(go_on);
        go_on
    }

    /// Stops the share and the session, says where to pick up again, and returns the exit
    /// code.
    async fn close(mut self, ended: Ended, ends: &Ends) -> i32 {
        if let Some(server) = self.link.share.take() {
            server.stop().await;
        }
        let talked = self.view.has_turns();
        let id = self
            .link
            .live
            .as_ref()
            .map(|l| l.session_id.clone())
            .unwrap_or_default();
        let attached_to = self.link.attached_to();
        if let Some(live) = self.link.live.take() {
            live.stop().await;
        }
        // Where to pick up again, once there is something to pick up.
        if let Some(owner) = attached_to.as_ref().filter(|_| !ended.server_gone) {
            self.view
                .hint(&format!("detached; the session goes on in {owner}"));
        } else if talked && attached_to.is_none() {
            self.view.hint(&format!(
                "resume this session with `linggen -c` (or `linggen --resume {id}`)"
            ));
        }
        ends.flush.wait(OUTPUT_FLUSH_LIMIT);
        if ended.server_gone {
            // The editor is still reading: rustyline's printer hands the last lines (why the
            // session ended) to its thread, which writes them in its own time, with the line
            // and the footer redrawn after them. Exiting at once could cut that write.
            std::thread::sleep(EDITOR_SETTLE);
        }
        ended
            .by
            .map_or(exit::SUCCESS, app::signals::Ending::exit_code)
    }
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
        if self.link.live.is_none() {
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
                Ok(live) => {
                    self.view.hint(&format!("model {}", live.model_label));
                    self.link.replace(live, &self.shared);
                    self.refresh_lists().await;
                }
                Err(f) => {
                    self.view.warning(&f.message);
                    return None;
                }
            }
        }
        self.link.live.as_mut()
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
        self.link.cancel().await;
        self.last_esc = Some(Instant::now());
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
                self.view.error(&why.message);
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
        while let Some(envelope) = self.link.live.as_mut().and_then(|l| l.events.try_recv()) {
            self.on_event(&envelope.event);
        }
        accepted
    }

    /// Ctrl+C on an empty line: cancel a running turn; when idle, hint, and quit on the
    /// second press within two seconds. Returns `true` to quit.
    async fn interrupt(&mut self, last: &mut Option<Instant>) -> bool {
        if self.shared.is_busy() {
            self.link.cancel().await;
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
        let live = LiveSession::start(&start, &self.ws, true).await?;
        let old = self.link.replace(live, &self.shared);
        self.share_follows();
        if let Some(old) = old {
            match start.cleared {
                true => old.stop_for_clear().await,
                false => old.stop().await,
            };
        }
        let agent = start.agent.as_deref().unwrap_or(app::DEFAULT_AGENT);
        self.view.follow_new_session(agent);
        if let Some(live) = self.link.live.as_mut() {
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
                envelope = self.link.next_event() => envelope,
            };
            let Some(envelope) = envelope else { return };
            self.on_event(&envelope.event);
            if matches!(envelope.event, session::Event::SessionStarted { .. }) {
                return;
            }
        }
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
