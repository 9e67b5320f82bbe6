//! Start-up wiring shared by the frontends: configuration, the session database, the model,
//! and a session (new or resumed) ready to spawn.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::agents::{AgentDirs, AgentSet};
use crate::cli::Cli;
use crate::config::{self, Config, ConfigError, ModelConfig};
use crate::llm::router::{self, ResolveError};
use crate::print::{Finished, OutputFormat, Printer, error_json, exit};
use crate::session::bus::Subscription;
use crate::session::permissions::project;
use crate::session::permissions::trust::FolderTrust;
use crate::session::{
    self, EventBus, Input, ModelRouting, Permissions, Route, SessionHandle, SessionSetup, TurnMode,
    UserMessage, ids, prompt,
};
use crate::skills::live::Live;
use crate::skills::{SkillDirs, SkillSet};
use crate::store::{SessionInfo, Store, StoreError, persisted, spawn_writer};
use crate::tools::ToolContext;
use crate::tools::sandbox::Sandbox;
use crate::web::Mirror;

/// A start-up failure with the exit code it maps to.
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl From<ConfigError> for Failure {
    fn from(e: ConfigError) -> Self {
        Failure {
            code: exit::USAGE,
            message: e.to_string(),
        }
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        let code = match e {
            StoreError::NoSuchSession(_) | StoreError::Ambiguous(_) => exit::USAGE,
            _ => exit::FAILURE,
        };
        Failure {
            code,
            message: e.to_string(),
        }
    }
}

impl From<ResolveError> for Failure {
    fn from(e: ResolveError) -> Self {
        match e {
            ResolveError::Config(e) => e.into(),
            ResolveError::Unavailable(e) => Failure {
                code: exit::FAILURE,
                message: e.to_string(),
            },
        }
    }
}

/// Where linggen runs: its home, the workspace root, the effective configuration, and the
/// agents and skills found for it (shared by every session of this process).
pub struct Workspace {
    pub home: PathBuf,
    pub root: PathBuf,
    pub config: Config,
    pub agents: Arc<Live<AgentSet>>,
    pub skills: Arc<Live<SkillSet>>,
    /// What the workspace's own files grant and what of it the person trusted; `config`
    /// holds only the trusted part.
    pub trust: FolderTrust,
}

impl Workspace {
    /// Follows agent and skill files as they change; returns warnings when watching fails
    /// (the sets then stay as discovered at start).
    pub fn watch_extensions(&self) -> Vec<String> {
        [self.agents.watch(), self.skills.watch()]
            .into_iter()
            .filter_map(Result::err)
            .collect()
    }

    /// Trusts every grant the folder makes now (`linggen trust`, the shell's question) and
    /// applies them to this process's configuration.
    pub fn trust_folder(&mut self) -> Result<(), String> {
        self.trust.trust_all()?;
        self.config.apply_trusted(self.trust.trust.accepted());
        Ok(())
    }

    /// Warnings about agent and skill files that were skipped.
    pub fn extension_warnings(&self) -> Vec<String> {
        let mut warnings = self.agents.get().warnings.clone();
        warnings.extend(self.skills.get().warnings.iter().cloned());
        warnings
    }
}

pub fn load_workspace(cli: &Cli) -> Result<Workspace, Failure> {
    let home = config::paths::linggen_home()?;
    let cwd = std::env::current_dir()
        .map_err(|e| ConfigError::Usage(format!("cannot read the current directory: {e}")))?;
    let root = config::paths::workspace_root(cli.root.as_deref(), &cwd)?;
    let env = |name: &str| std::env::var(name).ok();
    let mut config = Config::load(&home, &root, &env, &cli.flag_overrides())?;
    for warning in &config.warnings {
        eprintln!("linggen: warning: {warning}");
    }
    let agents = Live::new(AgentDirs {
        linggen_home: home.clone(),
        root: root.clone(),
    });
    let skills = Live::new(SkillDirs {
        linggen_home: home.clone(),
        root: root.clone(),
        user_home: std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from),
    });
    // Rules that do not parse are reported when the session starts.
    let project_rules = project::load(&root).unwrap_or_default();
    let trust = FolderTrust::load(&home, &root, &config, &project_rules, &skills.get());
    if let Some(warning) = &trust.warning {
        eprintln!("linggen: warning: {warning}");
    }
    config.apply_trusted(trust.trust.accepted());
    let ws = Workspace {
        home,
        root,
        config,
        agents,
        skills,
        trust,
    };
    // A broken agent or skill file is skipped; the person hears which and why.
    for warning in ws.extension_warnings() {
        eprintln!("linggen: warning: {warning}");
    }
    Ok(ws)
}

/// `linggen sessions`.
pub fn list_sessions(cli: &Cli) -> i32 {
    match try_list_sessions(cli) {
        Ok(()) => exit::SUCCESS,
        Err(f) => {
            eprintln!("linggen: error: {}", f.message);
            f.code
        }
    }
}

fn try_list_sessions(cli: &Cli) -> Result<(), Failure> {
    let ws = load_workspace(cli)?;
    for line in session_lines(&ws)? {
        println!("{line}");
    }
    Ok(())
}

/// This workspace's sessions as a table, newest first (`linggen sessions`, `/sessions`).
pub fn session_lines(ws: &Workspace) -> Result<Vec<String>, Failure> {
    let store = Store::open(&ws.home)?;
    let sessions = store.list_sessions(&ws.root.display().to_string())?;
    if sessions.is_empty() {
        return Ok(vec![format!(
            "No sessions in {} yet. Start one with `linggen -p \"task\"`.",
            ws.root.display()
        )]);
    }
    let now = ids::now_ms();
    let mut lines = vec![format!(
        "{:<16}  {:>10}  {:>5}  {:<20}  TITLE",
        "ID", "UPDATED", "MSGS", "MODEL"
    )];
    for s in sessions {
        lines.push(format!(
            "{:<16}  {:>10}  {:>5}  {:<20}  {}",
            s.id,
            ago(now - s.updated_at),
            s.message_count,
            truncate(&s.model, 20),
            truncate(&s.title, 60)
        ));
    }
    Ok(lines)
}

fn ago(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m ago", s / 60),
        3600..86400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86400),
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let cut: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// `linggen -p`: one task, printed, then exit.
pub async fn run_print(cli: Cli) -> i32 {
    let format = cli.output_format;
    match try_run_print(&cli).await {
        Ok(code) => code,
        Err(f) => {
            eprintln!("linggen: error: {}", f.message);
            if format != OutputFormat::Text {
                println!("{}", error_json("", &f.message));
            }
            f.code
        }
    }
}

async fn try_run_print(cli: &Cli) -> Result<i32, Failure> {
    // Reading piped stdin and the configuration files blocks: off the runtime.
    let owned = cli.clone();
    let (task, ws) = off_runtime(move || Ok((owned.task()?, load_workspace(&owned)?))).await?;
    // Nobody can be asked here, so nothing is trusted implicitly.
    if let Some(note) = ws.trust.note() {
        eprintln!("linggen: note: {note}");
    }
    let message = print_message(&ws, task).await?;
    // `-p` never waits for a person: calls that need approval are denied.
    let mut live = LiveSession::start(cli, &ws, false).await?;
    let _ = live.handle.inputs.send(Input::UserMessage(message)).await;
    let printer = Printer::new(cli.output_format, cli.quiet, &live.session_id);
    let (finished, interrupted) = drive(cli, &mut live, printer).await;
    // Everything is persisted once the writer has drained the closed bus.
    live.stop().await;
    let Some((mut printer, done)) = finished else {
        return Err(Failure {
            code: exit::FAILURE,
            message: "the session ended without an outcome".into(),
        });
    };
    let code = done.exit_code(interrupted);
    // The closing line goes to stdout, which may block too.
    let _ = tokio::task::spawn_blocking(move || printer.finish(&done)).await;
    Ok(code)
}

/// A running session with its store writer: what every frontend starts from.
pub struct LiveSession {
    pub handle: SessionHandle,
    writer: std::thread::JoinHandle<()>,
    pub session_id: String,
    /// Every event of the session, in order.
    pub events: Subscription,
    /// The session as the web mirror sees it; kept for interactive sessions only, so that
    /// `/share` can start at any time and still show everything from the start.
    pub mirror: Option<Arc<Mirror>>,
}

impl LiveSession {
    /// Opens the session (new or resumed, see [`open_session`]) and starts it.
    pub async fn start(
        cli: &Cli,
        ws: &Workspace,
        interactive: bool,
    ) -> Result<LiveSession, Failure> {
        let (setup, store) = open_session(cli, ws, interactive).await?;
        let session_id = setup.session_id.clone();
        let bus = EventBus::new();
        // Three lossless queues (the terminal or `-p` printer, the store writer, the
        // mirror's fold). Each is bounded by coalescing continuing tokens and never makes
        // the session wait; see `session::bus` and doc/events.md "Queues".
        let events = bus.subscribe_lossless();
        let stored = bus.subscribe_lossless_to(persisted);
        let mirrored = interactive.then(|| {
            (
                bus.subscribe_lossless(),
                setup.history.clone(),
                setup.agent_id.clone(),
            )
        });
        let writer = spawn_writer(store, session_id.clone(), stored, |e| {
            eprintln!("linggen: warning: {e}")
        });
        let handle = session::spawn(setup, bus);
        let mirror = mirrored.map(|(events, history, agent_id)| {
            Mirror::follow(
                session_id.clone(),
                handle.inputs.clone(),
                &history,
                &agent_id,
                events,
            )
        });
        Ok(LiveSession {
            handle,
            writer,
            session_id,
            events,
            mirror,
        })
    }

    /// Takes the event stream, for a frontend that follows it elsewhere (`linggen serve`
    /// logs it); this session's `events` is then empty.
    pub fn take_events(&mut self) -> Subscription {
        std::mem::replace(&mut self.events, Subscription::ended())
    }

    /// Shuts the session down and waits until everything is stored.
    pub async fn stop(self) {
        let _ = self.handle.inputs.send(Input::Shutdown).await;
        self.handle.join().await;
        let writer = self.writer;
        let _ = tokio::task::spawn_blocking(move || writer.join()).await;
    }
}

/// Builds a session for this workspace: new, or resumed with `--continue` / `--resume`.
/// `interactive` says whether a person can answer approvals.
pub async fn open_session(
    cli: &Cli,
    ws: &Workspace,
    interactive: bool,
) -> Result<(SessionSetup, Store), Failure> {
    let (root, trust) = (ws.root.clone(), ws.trust.trust.clone());
    let (project_rules, trust) = off_runtime(move || {
        // A broken project rules file stops start-up: silently dropping rules the person
        // approved would bring back prompts they said they never want again.
        let rules = project::load(&root).map_err(ConfigError::Usage)?;
        Ok((rules, trust.reloaded()))
    })
    .await?;
    let config = ws.config.for_session(&cli.flag_overrides());
    let permissions = Permissions::new(config.permission_mode, &config.allow, &config.deny)
        .map(|p| p.with_trust(trust))
        .and_then(|p| p.with_project_rules(&project_rules))
        .map_err(ConfigError::Usage)?;
    let root_text = ws.root.display().to_string();
    let (home, root, resume, continue_session) = (
        ws.home.clone(),
        root_text.clone(),
        cli.resume.clone(),
        cli.continue_session,
    );
    let (store, resumed) = off_runtime(move || {
        let store = Store::open(&home)?;
        let resumed = resume_target(resume.as_deref(), continue_session, &store, &root)?;
        Ok((store, resumed))
    })
    .await?;

    let http = router::http_client().map_err(ResolveError::from)?;
    let resolved = router::resolve(&config, std::env::var("OLLAMA_HOST").ok(), http).await?;
    let model_id = resolved.model.id.clone();
    let (store, session_id, history) = off_runtime(move || match resumed {
        Some(info) => {
            store.close_stale_runs(&info.id)?;
            let mut history = store.load_messages(&info.id)?;
            session::call_ids::make_unique(&mut history);
            Ok((store, info.id, history))
        }
        None => {
            let id = ids::new_id();
            store.create_session(&id, &root_text, &model_id)?;
            Ok((store, id, Vec::new()))
        }
    })
    .await?;
    let context_window = match resolved.model.context_window {
        Some(n) => Some(n),
        None => resolved.provider.context_window().await,
    };
    let root = ws.root.clone();
    let context_prompt = off_runtime(move || {
        let workspace = prompt::Workspace::detect(&root);
        Ok(prompt::context_prompt(&workspace, &root))
    })
    .await?;
    let mut tools = ToolContext::new(&ws.root);
    tools.bash_timeout_ms = config.bash_timeout_ms;
    tools.screenshot = config.screenshot.clone();
    tools.sandbox = Arc::new(session_sandbox(&config, ws));
    tools.read_only_roots = SkillSet::watch_dirs(ws.skills.dirs())
        .into_iter()
        .filter(|dir| !dir.starts_with(&ws.root))
        .collect();
    let routing = ConfiguredRouting {
        models: config.models.clone(),
        http: router::http_client().map_err(ResolveError::from)?,
    };
    let setup = SessionSetup {
        session_id,
        agent_id: start_agent(cli, ws)?,
        model_label: resolved.label(),
        provider: Arc::clone(&resolved.provider),
        context_window,
        context_prompt,
        history,
        tools,
        permissions,
        max_iters: config.max_iters,
        interactive,
        agents: Arc::clone(&ws.agents),
        skills: Arc::clone(&ws.skills),
        routing: Some(Arc::new(routing)),
        max_delegation_depth: config.max_delegation_depth,
        mode: TurnMode::Auto,
    };
    Ok((setup, store))
}

/// The sandbox for a session's commands. Where the kernel cannot confine them, says so
/// once per process, with what that means and how to opt out knowingly.
fn session_sandbox(config: &Config, ws: &Workspace) -> Sandbox {
    let secret_env = config
        .models
        .iter()
        .filter_map(|m| m.api_key_env.clone())
        .collect();
    let sandbox = Sandbox::new(&ws.root, config.sandbox.clone())
        .with_linggen_home(&ws.home)
        .with_secret_env(secret_env);
    static WARNED: std::sync::Once = std::sync::Once::new();
    if let Some(why) = sandbox.unconfined_reason() {
        WARNED.call_once(|| {
            let consequence = if sandbox.unconfined_asks() {
                "every command will ask first (and -p denies them); to let the command \
                 analysis alone decide, knowingly set [sandbox] unconfined = \"allow\" in \
                 $LINGGEN_HOME/linggen-agent.toml"
            } else {
                "commands run unconfined, decided by the command analysis alone \
                 ([sandbox] unconfined = \"allow\")"
            };
            eprintln!("linggen: warning: commands cannot be sandboxed: {why}; {consequence}");
        });
    }
    sandbox
}

/// The agent a session starts with: `--agent`, else `ling`.
fn start_agent(cli: &Cli, ws: &Workspace) -> Result<String, Failure> {
    let name = cli
        .agent
        .clone()
        .unwrap_or_else(|| DEFAULT_AGENT.to_string());
    let agents = ws.agents.get();
    if agents.get(&name).is_none() {
        return Err(ConfigError::Usage(format!(
            "no agent named `{name}`; agents: {} (add one as agents/{name}.md)",
            agents.names().join(", ")
        ))
        .into());
    }
    Ok(name)
}

/// The agent every session starts with unless `--agent` says otherwise.
pub const DEFAULT_AGENT: &str = "ling";

/// The `-p` task as a message: a skill (`/review`), a skill's custom trigger, a message for
/// another agent (`@coder …`), or plain text, with its `@file` mentions attached — the
/// core's line grammar, exactly as a line typed in the shell. Piped stdin comes first.
async fn print_message(ws: &Workspace, task: crate::cli::Task) -> Result<UserMessage, Failure> {
    let mut message = crate::session::line::into_message(
        crate::repl::triggers::parse(&task.prompt, &registry_of(ws).context()),
        &task.prompt,
        "cli",
    )
    .map_err(|message| Failure::from(ConfigError::Usage(message)))?;
    message.attached = task.attached;
    crate::session::line::attach(ws.root.clone(), &mut message).await;
    Ok(message)
}

/// The skills and agents a line is parsed against, as they are now.
fn registry_of(ws: &Workspace) -> crate::session::line::Registry {
    crate::session::line::Registry::new(&ws.skills.get(), ws.agents.get().names())
}

/// Model routing hints resolved against the configured `[[models]]`.
struct ConfiguredRouting {
    models: Vec<ModelConfig>,
    http: reqwest::Client,
}

impl ModelRouting for ConfiguredRouting {
    fn route(&self, hint: &str) -> Result<Route, String> {
        let Some(model) = router::pick(&self.models, hint) else {
            return Err(format!(
                "no configured model matches (ids: {}; `local` and `cloud` pick by URL)",
                if self.models.is_empty() {
                    "none".to_string()
                } else {
                    self.models
                        .iter()
                        .map(|m| m.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ));
        };
        let resolved = router::Resolved {
            provider: router::build(model, self.http.clone()),
            model: model.clone(),
        };
        Ok(Route {
            label: resolved.label(),
            provider: resolved.provider,
            context_window: model.context_window,
        })
    }
}

/// What the printer thread ends with: itself (for the closing line) and the outcome.
type Printed = (Printer, Option<Finished>);

/// Prints the session's events on a thread of its own until the run's outcome: writing to
/// a pipe blocks while its reader is slow, and that must never hold a runtime thread. Its
/// queue is the bus's lossless subscription (bounded by coalescing tokens, see
/// `session::bus`), so a stalled reader neither stops the session nor grows memory with
/// every token. `gone` fires once stdout's reader left (`| head`).
fn spawn_printer(
    mut printer: Printer,
    mut events: Subscription,
    gone: oneshot::Sender<()>,
) -> oneshot::Receiver<Printed> {
    let (printed, result) = oneshot::channel();
    std::thread::spawn(move || {
        let mut gone = Some(gone);
        let finished = loop {
            let Some(envelope) = events.blocking_recv() else {
                break None;
            };
            if let Some(done) = printer.on_event(&envelope.event) {
                break Some(done);
            }
            if printer.stdout_closed()
                && let Some(gone) = gone.take()
            {
                let _ = gone.send(());
            }
        };
        let _ = printed.send((printer, finished));
    });
    result
}

/// Waits for the printer's outcome; Ctrl+C and a closed stdout cancel the run.
/// Returns the printer with the outcome, and whether the person interrupted.
async fn drive(
    cli: &Cli,
    live: &mut LiveSession,
    printer: Printer,
) -> (Option<(Printer, Finished)>, bool) {
    let (gone_tx, mut gone) = oneshot::channel();
    let mut printed = spawn_printer(printer, live.take_events(), gone_tx);
    let handle = &live.handle;
    let mut interrupted = false;
    let mut reader_gone = false;
    loop {
        tokio::select! {
            result = &mut printed => {
                let finished = result.ok().and_then(|(p, done)| done.map(|d| (p, d)));
                return (finished, interrupted);
            }
            // The reader is gone: stop the model instead of generating output nobody
            // will see.
            left = &mut gone, if !reader_gone => {
                reader_gone = true;
                if left.is_ok() {
                    let _ = handle.inputs.send(Input::Cancel).await;
                }
            }
            _ = tokio::signal::ctrl_c(), if !interrupted => {
                interrupted = true;
                if !cli.quiet {
                    eprintln!("linggen: interrupted; cancelling (press Ctrl+C again to quit now)");
                }
                let _ = handle.inputs.send(Input::Cancel).await;
                // A second Ctrl+C quits at once.
                tokio::spawn(async {
                    if tokio::signal::ctrl_c().await.is_ok() {
                        std::process::exit(exit::INTERRUPTED);
                    }
                });
            }
        }
    }
}

/// Runs start-up file and SQLite work on the blocking pool: the runtime's two threads
/// never wait on the disk.
async fn off_runtime<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, Failure> + Send + 'static,
) -> Result<T, Failure> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        Err(Failure {
            code: exit::FAILURE,
            message: format!("opening the session failed: {e}"),
        })
    })
}

fn resume_target(
    resume: Option<&str>,
    continue_session: bool,
    store: &Store,
    root: &str,
) -> Result<Option<SessionInfo>, Failure> {
    if let Some(id) = resume {
        return Ok(Some(store.find_session(id)?));
    }
    if continue_session {
        return match store.latest_session(root)? {
            Some(info) => Ok(Some(info)),
            None => Err(ConfigError::Usage(format!(
                "no earlier session in {root} to continue; run without --continue to start one"
            ))
            .into()),
        };
    }
    Ok(None)
}
