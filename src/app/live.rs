//! A session opened for this workspace (new, or resumed with `--continue` / `--resume`)
//! and running with its store writer: what every frontend starts from.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{DEFAULT_AGENT, Failure, Start, Workspace, off_runtime};
use crate::config::{Config, ConfigError};
use crate::llm::ChatMessage;
use crate::llm::router::{self, ResolveError};
use crate::session::bus::Subscription;
use crate::session::permissions::project;
use crate::session::permissions::trust::Trust;
use crate::session::persist::{persisted, spawn_writer};
use crate::session::{
    self, Choice, EventBus, Input, Permissions, Router, SessionHandle, SessionSetup, ids, prompt,
};
use crate::skills::SkillSet;
use crate::store::{HolderKind, SessionInfo, SessionLease, Store};
use crate::tools::ToolContext;
use crate::tools::sandbox::Sandbox;

/// What a mirror of the session (the web page) follows it from: every event from the
/// start, and the history it resumed with.
pub struct MirrorFeed {
    pub events: Subscription,
    pub history: Vec<ChatMessage>,
    pub agent_id: String,
}

/// Who follows a session, which decides how it is opened.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Frontend {
    /// The shell: a person at a terminal.
    Terminal,
    /// `-p`, a schedule: nobody to ask.
    Unattended,
    /// `linggen mcp serve`: the calling client's person is asked.
    AnsweredElsewhere,
    /// `linggen acp`: an editor's person.
    Editor,
}

impl Frontend {
    /// The frontend sets the pace of a fast stream (a terminal draws what it gets).
    fn paced(self) -> bool {
        self == Frontend::Terminal
    }

    /// Approvals wait for an answer instead of being denied.
    fn asks(self) -> bool {
        self != Frontend::Unattended
    }

    /// A person keeps it open: the history it resumed with is shown, a web mirror can
    /// follow it (`/share`), and another process is refused rather than made to wait.
    fn kept_by_a_person(self) -> bool {
        matches!(self, Frontend::Terminal | Frontend::Editor)
    }
}

/// A running session with its store writer: what every frontend starts from.
pub struct LiveSession {
    pub handle: SessionHandle,
    /// `None` when the session runs elsewhere ([`LiveSession::remote`]): its owner stores it.
    writer: Option<std::thread::JoinHandle<()>>,
    /// This process's hold on the session: no other linggen writes it meanwhile.
    lease: Option<SessionLease>,
    /// Set when the session runs in another process this one is attached to: which one,
    /// for people (`linggen serve (pid 123) at http://127.0.0.1:4000`).
    pub owner: Option<String>,
    /// Set once the store could not write an event: the session on disk is incomplete.
    save_failed: Arc<AtomicBool>,
    pub session_id: String,
    /// The model it started on, as people read it (`local (qwen2.5 @ http://…)`).
    pub model_label: String,
    /// The messages it resumed with (sessions a person keeps: the shell and an editor show
    /// them).
    pub resumed: Vec<ChatMessage>,
    /// Every event of the session, in order.
    pub events: Subscription,
    /// For sessions a person keeps (the shell's, an editor's), what a web mirror follows
    /// (taken by the frontend, which starts the mirror at once), so that `/share` can start
    /// at any time and still show everything from the start.
    pub mirror_feed: Option<MirrorFeed>,
    /// The session's MCP servers (started in the background; their tools arrive in the
    /// session's tool registry as each comes up).
    pub mcp: Arc<crate::mcp::servers::McpServers>,
}

/// Starts the workspace's MCP servers in the background; what goes wrong with one is a
/// warning on the session's bus, one line each.
fn start_mcp(
    ws: &Workspace,
    editor: &[crate::mcp::config::ServerConfig],
    tools: &crate::tools::ToolContext,
    bus: &EventBus,
) -> crate::mcp::servers::McpServers {
    let warnings = bus.clone();
    let notify: Arc<dyn Fn(String) + Send + Sync> =
        Arc::new(move |message| warnings.publish(crate::session::Event::Warning { message }));
    let trust = ws.trust.trust.clone();
    let accepted = move |grant: &str| trust.is_accepted(grant);
    let merged;
    let config = if editor.is_empty() {
        ws.mcp.as_ref()
    } else {
        merged = ws.mcp.with_editor_servers(editor);
        &merged
    };
    crate::mcp::servers::McpServers::start(config, &ws.root, &accepted, tools, notify)
}

impl LiveSession {
    /// Opens the session (new or resumed, see [`open_session`]) and starts it.
    pub async fn start(
        start: &Start,
        ws: &Workspace,
        interactive: bool,
    ) -> Result<LiveSession, Failure> {
        let frontend = match interactive {
            true => Frontend::Terminal,
            false => Frontend::Unattended,
        };
        Self::open(start, ws, frontend).await
    }

    /// A session that runs unattended as `-p` does, except that its approvals wait for an
    /// answer from elsewhere (`Input::Approval`): `linggen mcp serve` puts them to the
    /// calling client's person.
    pub async fn start_answered_elsewhere(
        start: &Start,
        ws: &Workspace,
    ) -> Result<LiveSession, Failure> {
        Self::open(start, ws, Frontend::AnsweredElsewhere).await
    }

    /// A session an editor drives (`linggen acp`): as [`Self::start_answered_elsewhere`],
    /// and it keeps the history it resumed with, which the editor is shown, and a mirror
    /// feed, for `/share`.
    pub async fn start_for_editor(start: &Start, ws: &Workspace) -> Result<LiveSession, Failure> {
        Self::open(start, ws, Frontend::Editor).await
    }

    async fn open(
        start: &Start,
        ws: &Workspace,
        frontend: Frontend,
    ) -> Result<LiveSession, Failure> {
        let kept = frontend.kept_by_a_person();
        let (mut setup, store, lease) = open_session(start, ws, kept).await?;
        setup.interactive = frontend.asks();
        setup.tools.editor_files = start.editor_files.clone();
        let session_id = setup.session_id.clone();
        let model_label = setup.models.label(&setup.model);
        let resumed = if kept {
            setup.history.clone()
        } else {
            Vec::new()
        };
        let bus = EventBus::new();
        // Three lossless queues (the terminal or `-p` printer, the store writer, the
        // mirror's fold). Each is bounded by coalescing continuing tokens and never makes
        // the session wait; see `session::bus` and doc/events.md "Queues".
        // The terminal sets the pace of a fast stream; `-p` never waits for its reader.
        let events = if frontend.paced() {
            bus.subscribe_pacing()
        } else {
            bus.subscribe_lossless()
        };
        let stored = bus.subscribe_lossless_to(persisted);
        let mirror_feed = kept.then(|| MirrorFeed {
            events: bus.subscribe_lossless(),
            history: setup.history.clone(),
            agent_id: setup.agent_id.clone(),
        });
        let save_failed = Arc::new(AtomicBool::new(false));
        let failed = Arc::clone(&save_failed);
        let writer = spawn_writer(store, session_id.clone(), stored, move |e| {
            failed.store(true, Ordering::SeqCst);
            eprintln!("linggen: error: {e}")
        });
        let mcp = Arc::new(start_mcp(ws, &start.editor_mcp, &setup.tools, &bus));
        let handle = session::spawn(setup, bus);
        Ok(LiveSession {
            mcp,
            handle,
            writer: Some(writer),
            lease: Some(lease),
            owner: None,
            save_failed,
            session_id,
            model_label,
            resumed,
            events,
            mirror_feed,
        })
    }

    /// A session another process runs and stores (`linggen serve`), as the frontend attached
    /// to it holds it: `handle` carries inputs there and its events here.
    pub fn remote(
        handle: SessionHandle,
        events: Subscription,
        session_id: String,
        model_label: String,
        resumed: Vec<ChatMessage>,
        owner: String,
    ) -> LiveSession {
        LiveSession {
            handle,
            writer: None,
            lease: None,
            owner: Some(owner),
            save_failed: Arc::new(AtomicBool::new(false)),
            session_id,
            model_label,
            resumed,
            events,
            mirror_feed: None,
            mcp: Arc::new(crate::mcp::servers::McpServers::default()),
        }
    }

    /// Takes the event stream, for a frontend that follows it elsewhere (`linggen serve`
    /// logs it); this session's `events` is then empty.
    pub fn take_events(&mut self) -> Subscription {
        std::mem::replace(&mut self.events, Subscription::ended())
    }

    /// Whether something of the session could not be saved (told once on stderr).
    pub fn save_failed(&self) -> bool {
        self.save_failed.load(Ordering::SeqCst)
    }

    /// Shuts the session down and waits until everything is stored. Returns whether all of
    /// it was (a failure was told on stderr when it happened).
    pub async fn stop(self) -> bool {
        self.stop_with(Input::Shutdown).await
    }

    /// [`Self::stop`] because the person cleared the session (`/clear`).
    pub async fn stop_for_clear(self) -> bool {
        self.stop_with(Input::ShutdownForClear).await
    }

    async fn stop_with(self, shutdown: Input) -> bool {
        let _ = self.handle.inputs.send(shutdown).await;
        self.handle.join().await;
        if let Some(writer) = self.writer {
            let _ = tokio::task::spawn_blocking(move || writer.join()).await;
        }
        // Released only once everything is stored: a waiting run must read all of it.
        drop(self.lease);
        !self.save_failed.load(Ordering::SeqCst)
    }
}

/// Builds a session for this workspace: new, or resumed with `--continue` / `--resume`.
/// `interactive` says whether a person keeps it (and can answer approvals): another
/// process that wants it is then refused, where a one-shot run's is made to wait.
pub async fn open_session(
    start: &Start,
    ws: &Workspace,
    interactive: bool,
) -> Result<(SessionSetup, Store, SessionLease), Failure> {
    let (project_rules, trust) = project_rules(ws).await?;
    let config = ws.config.for_session(&start.overrides);
    let permissions = session_permissions(&config, ws, &project_rules, trust)?;
    // The model first: with none to talk to, nothing is written (no database on a first
    // run that cannot go anywhere yet).
    let (models, choice) = resolve_models(&config, ws).await?;
    let (store, session_id, history, lease) =
        store_session(start, ws, &models, &choice, interactive).await?;
    let context_prompt = context_prompt(&config, ws).await?;
    let tools = workspace_tools(&config, ws);
    let hooks = hook_runner(&config, ws, &session_id, &tools);
    let setup = SessionSetup {
        session_id,
        agent_id: start_agent(start, ws)?,
        models,
        model: choice,
        context_prompt,
        run_flags: crate::session::run_flags::RunFlags {
            system_prompt: start.overrides.system_prompt.clone(),
            append_system_prompt: start.overrides.append_system_prompt.clone(),
            tools: start.overrides.tools.clone(),
        },
        memory: Some(Arc::new(crate::session::memory::Memory::for_project(
            &ws.home, &ws.root,
        ))),
        history,
        permissions,
        max_iters: config.max_iters,
        interactive,
        agents: Arc::clone(&ws.agents),
        skills: Arc::clone(&ws.skills),
        max_delegation_depth: config.max_delegation_depth,
        compact_at: config.compact_at,
        curate: config.curate.clone(),
        mode: start.mode,
        auto: config.auto.clone(),
        checkpoints: Some(Arc::new(session::checkpoints::Checkpointer::new(
            &ws.home, &ws.root,
        ))),
        hooks,
        cleared: start.cleared,
        idle_notification: std::time::Duration::from_secs(config.idle_notification_secs),
        tools,
    };
    Ok((setup, store, lease))
}

/// The project's own permission rules and the trust given to the workspace's grants, as
/// they are now. A broken project rules file stops start-up: silently dropping rules the
/// person approved would bring back prompts they said they never want again.
async fn project_rules(ws: &Workspace) -> Result<(Vec<String>, Trust), Failure> {
    let (root, trust) = (ws.root.clone(), ws.trust.trust.clone());
    off_runtime(move || {
        let rules = project::load(&root).map_err(|e| ConfigError::Usage(e.to_string()))?;
        Ok((rules, trust.reloaded()))
    })
    .await
}

/// The session's permissions: the configured rules, the trusted project rules, then the
/// rules read from Claude Code's settings (each unusable one a warning).
fn session_permissions(
    config: &Config,
    ws: &Workspace,
    project_rules: &[String],
    trust: Trust,
) -> Result<Permissions, Failure> {
    let usage = |e: &dyn std::fmt::Display| ConfigError::Usage(e.to_string());
    let permissions = Permissions::new(config.permission_mode, &config.allow, &config.deny)
        .and_then(|p| p.with_ask(&config.ask))
        .map_err(|e| usage(&e))?
        .with_trust(trust)
        .with_skill_shell(config.skill_shell)
        .with_project_rules(project_rules)
        .map_err(|e| usage(&e))?;
    let permissions = match &config.claude {
        Some(claude) => {
            let source = claude.path.display().to_string();
            let (permissions, warnings) =
                permissions.with_foreign_rules(&claude.allow, &claude.ask, &claude.deny, &source);
            for warning in warnings {
                eprintln!("linggen: warning: {warning}");
            }
            permissions
        }
        None => permissions,
    };
    let mut permissions = permissions;
    for project in &config.claude_project {
        let claude = &project.permissions;
        let allow = project.accepted_allow(|grant| ws.trust.trust.is_accepted(grant));
        let (with, warnings) =
            permissions.with_foreign_rules(&allow, &claude.ask, &claude.deny, &project.file);
        for warning in warnings {
            eprintln!("linggen: warning: {warning}");
        }
        permissions = with;
    }
    Ok(permissions)
}

/// The configured models and the session's choice among them; with none configured, the
/// failure says how to add one.
async fn resolve_models(config: &Config, ws: &Workspace) -> Result<(Arc<Router>, Choice), Failure> {
    let http = router::http_client().map_err(ResolveError::from)?;
    let env = |name: &str| std::env::var(name).ok();
    let (models, choice) = router::resolve(config, &env, http).await.map_err(|e| {
        let mut failure = Failure::from(e);
        if config.models.is_empty() {
            failure.message = first_run_help(&ws.home);
        }
        failure
    })?;
    Ok((Arc::new(models), choice))
}

/// Opens the store (loading what the models' tokenizers learned on the way) and takes this
/// process's session in it: the one to resume, else a new one.
async fn store_session(
    start: &Start,
    ws: &Workspace,
    models: &Arc<Router>,
    choice: &Choice,
    interactive: bool,
) -> Result<(Store, String, Vec<ChatMessage>, SessionLease), Failure> {
    let root_text = ws.root.display().to_string();
    let (home, root, resume, continue_session) = (
        ws.home.clone(),
        root_text.clone(),
        start.resume.clone(),
        start.continue_session,
    );
    let learned = Arc::clone(models);
    let (store, resumed) = off_runtime(move || {
        crate::llm::routing::tokenizers::load(&home, &learned);
        let store = Store::open(&home)?;
        let resumed = resume_target(resume.as_deref(), continue_session, &store, &root)?;
        Ok((store, resumed))
    })
    .await?;
    let model_id = models.stored_id(choice);
    let kind = match interactive {
        true => HolderKind::Interactive,
        false => HolderKind::OneShot,
    };
    let home = ws.home.clone();
    off_runtime(move || take_session(store, resumed, &home, kind, &root_text, &model_id)).await
}

/// The workspace part of the system prompt, with the additional working folders.
async fn context_prompt(config: &Config, ws: &Workspace) -> Result<String, Failure> {
    let root = ws.root.clone();
    let context_prompt = off_runtime(move || {
        let workspace = prompt::Workspace::detect(&root);
        Ok(prompt::context_prompt(&workspace, &root))
    })
    .await?;
    Ok(match config.add_dirs.as_slice() {
        [] => context_prompt,
        dirs => {
            let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            format!(
                "{context_prompt}\n\nAdditional working folders (read and write them by \
                 absolute path): {}",
                dirs.join(", ")
            )
        }
    })
}

/// The session's hooks: the person's own and the workspace's trusted ones, in the session's
/// sandbox; `None` when there are none.
fn hook_runner(
    config: &Config,
    ws: &Workspace,
    session_id: &str,
    tools: &ToolContext,
) -> Option<Arc<crate::hooks::Runner>> {
    let (hooks, _withheld) = ws
        .hooks
        .trusted(&ws.root, |grant| ws.trust.trust.is_accepted(grant));
    if hooks.is_empty() {
        return None;
    }
    Some(Arc::new(crate::hooks::Runner::new(
        crate::hooks::RunnerSetup {
            hooks,
            root: ws.root.clone(),
            session_id: session_id.to_string(),
            sandbox: Arc::clone(&tools.sandbox),
            unconfined_user_hooks: config.hooks_unconfined,
        },
    )))
}

/// Where a session's tools run in this workspace: confined to the root by the session's
/// sandbox, `$LINGGEN_HOME` and the secret stores refused, the skill folders readable.
/// `linggen mcp serve` runs its read-only tools in the very same context, so what they may
/// read is exactly what a session's may.
pub fn workspace_tools(config: &Config, ws: &Workspace) -> ToolContext {
    let mut tools = ToolContext::new(&ws.root);
    tools.bash_timeout_ms = config.bash_timeout_ms;
    tools.screenshot = config.screenshot.clone();
    tools.sandbox = Arc::new(session_sandbox(config, ws));
    tools.extra_roots = config.add_dirs.clone();
    tools.linggen_home = Some(ws.home.clone());
    tools.registry.set_eager_chars(config.mcp_eager_tools_chars);
    tools.read_only_roots = SkillSet::watch_dirs(ws.skills.dirs())
        .into_iter()
        .filter(|dir| !dir.starts_with(&ws.root))
        .collect();
    tools
}

/// This process's session: the resumed one once no other linggen runs it (its history made
/// sendable), or a new one. Blocks while another one-shot run holds it.
fn take_session(
    store: Store,
    resumed: Option<SessionInfo>,
    home: &std::path::Path,
    kind: HolderKind,
    root: &str,
    model_id: &str,
) -> Result<(Store, String, Vec<ChatMessage>, SessionLease), Failure> {
    let Some(info) = resumed else {
        let id = ids::new_id();
        let lease = SessionLease::try_acquire(home, &id, kind)?;
        store.create_session(&id, root, model_id)?;
        return Ok((store, id, Vec::new(), lease));
    };
    let lease = SessionLease::acquire_waiting(home, &info.id, kind, |holder| {
        eprintln!(
            "linggen: session {} is in use by {holder}; waiting for it to finish",
            info.id
        )
    })?;
    // Read after the lease: a run that held the session has stored all of it, and its runs
    // still marked running are really dead.
    store.close_stale_runs(&info.id)?;
    let mut history = store.load_messages(&info.id)?;
    session::call_ids::make_unique(&mut history);
    // Whatever ended the last process (a kill mid-call, a closed terminal), the history
    // sent from now on pairs every call with a result.
    session::resume::pair_tool_results(&mut history);
    Ok((store, info.id, history, lease))
}

/// How to give linggen a model, for a first run with nothing configured or found: one
/// line, naming the configuration file where it really is (`$LINGGEN_HOME`).
pub fn first_run_help(home: &std::path::Path) -> String {
    crate::llm::discover::nothing_found(&home.join(crate::config::CONFIG_FILE))
}

/// The sandbox for a session's commands. Where the kernel cannot confine them, says so
/// once per process, with what that means and how to opt out knowingly.
pub(super) fn session_sandbox(config: &Config, ws: &Workspace) -> Sandbox {
    let secret_env = config
        .models
        .iter()
        .filter_map(|m| m.api_key_env.clone())
        .collect();
    let sandbox = Sandbox::new(&ws.root, config.sandbox.clone())
        .with_linggen_home(&ws.home)
        .with_secret_env(secret_env)
        .with_added_roots(&config.add_dirs);
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
fn start_agent(start: &Start, ws: &Workspace) -> Result<String, Failure> {
    let name = start
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
