//! A session owns one conversation. Frontends send [`Input`]s into its queue and watch the
//! [`Event`]s it publishes on its [`EventBus`]; nothing else touches its state. While a turn
//! runs (as its own task) the session keeps reading the queue, so approvals, cancellation
//! and queued messages are handled without waiting for the model.

mod ask;
mod auto;
pub mod bus;
pub mod call_ids;
pub mod checkpoints;
mod compact;
mod curate;
mod delegate;
pub mod event;
mod fit;
mod hooks;
pub mod ids;
pub mod input;
mod invocation;
mod limits;
pub mod line;
mod locks;
pub mod memory;
mod model_call;
pub mod permissions;
pub mod persist;
pub mod prompt;
pub mod resume;
mod run;
pub mod run_flags;
mod shell_lines;
mod skill_call;
mod strategy;
mod tokens;
mod tool_call;
mod turn;
pub mod usage;
pub mod view;

use std::collections::{HashMap, VecDeque};
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use auto::{OBSERVATION, check_rules, is_observation};
pub use bus::{Envelope, EventBus};
pub use delegate::BACKGROUND_SENDER;
pub use event::{AgentState, Decision, Event, OutcomeStatus, SessionStatus};
pub use input::{
    Answer, Input, Inputs, Refusal, RefusalKind, SkillInvocation, TurnMode, UserMessage,
};
pub use permissions::Permissions;

use crate::agents::AgentSet;
use crate::config::PermissionMode;
use crate::llm::ChatMessage;
pub use crate::llm::routing::{Choice, Router};
use crate::skills::SkillSet;
use crate::skills::live::Live;
pub(crate) use crate::sync::lock;
use crate::tools::ToolContext;
use crate::tools::background::{StopBy, TaskError};

/// Everything a session starts from.
pub struct SessionSetup {
    pub session_id: String,
    pub agent_id: String,
    /// The models, and the policy that spreads calls over them.
    pub models: Arc<Router>,
    /// What decides the model of the session's turns (`--model`, else the policy).
    pub model: Choice,
    /// The workspace part of every agent's system prompt (see [`prompt::context_prompt`]).
    pub context_prompt: String,
    /// `--system-prompt`, `--append-system-prompt` and `--tools`.
    pub run_flags: run_flags::RunFlags,
    /// The project's memory, read into every agent's prompt at the start of each turn.
    pub memory: Option<Arc<memory::Memory>>,
    /// Earlier messages when resuming (`--continue`), without the system prompt.
    pub history: Vec<ChatMessage>,
    pub tools: ToolContext,
    pub permissions: Permissions,
    pub max_iters: u32,
    /// Whether any frontend can answer approval requests. Without one, calls that need
    /// approval are denied at once instead of waiting for an answer that cannot come.
    pub interactive: bool,
    pub agents: Arc<Live<AgentSet>>,
    pub skills: Arc<Live<SkillSet>>,
    /// How deep delegation may nest (`[agent] max_delegation_depth`).
    pub max_delegation_depth: u32,
    /// `[context] compact_at`.
    pub compact_at: f64,
    /// `[context] curate_reads` and its keys.
    pub curate: crate::config::CurateSettings,
    /// `--mode`: every turn's mode; `None`: the agent's `mode:`, else chat.
    pub mode: Option<TurnMode>,
    /// `[auto]` limits and the checks that run without asking.
    pub auto: crate::config::AutoSettings,
    /// Where checkpoints go; `None`: none are taken (no `git`).
    pub checkpoints: Option<Arc<checkpoints::Checkpointer>>,
    /// The hooks that may run (the person's own and the trusted project ones); `None`
    /// when there are none.
    pub hooks: Option<Arc<crate::hooks::Runner>>,
    /// How long the session waits idle before `Notification` hooks hear it waits for input.
    pub idle_notification: std::time::Duration,
    /// It replaces a session the person cleared: `SessionStart` hooks hear `clear`.
    pub cleared: bool,
}

/// The frontends' side of a running session.
pub struct SessionHandle {
    pub inputs: Inputs,
    pub bus: EventBus,
    task: JoinHandle<()>,
}

impl SessionHandle {
    /// A handle on a session that runs elsewhere (a terminal attached to `linggen serve`):
    /// `task` carries the inputs there and ends when they stop; `bus` gets its events.
    pub fn from_parts(inputs: Inputs, bus: EventBus, task: JoinHandle<()>) -> SessionHandle {
        SessionHandle { inputs, bus, task }
    }

    /// Waits for the session task to finish (after `Input::Shutdown`).
    pub async fn join(self) {
        drop(self.inputs);
        // A panic inside the session task has already been reported by the runtime; the
        // frontends still shut down cleanly.
        let _ = self.task.await;
    }
}

/// Who waits for the answer to each approval request, by request id.
pub(crate) type PendingApprovals = HashMap<String, oneshot::Sender<(Decision, String)>>;

/// State the turn task borrows from the session. The model and `max_iters` are a snapshot:
/// changing them replaces the session's `TurnShared` (see [`TurnShared::with_settings`]),
/// so a running turn finishes with the ones it started with and the next turn gets the new
/// ones. The maps are shared by every snapshot, so approvals and cancellation reach the
/// running turn whichever snapshot it holds.
pub(crate) struct TurnShared {
    /// For `${CLAUDE_SESSION_ID}` in skills and commands.
    pub session_id: String,
    pub models: Arc<Router>,
    /// What decides the model of the session's runs, unless a hint routes elsewhere.
    pub choice: Choice,
    pub context_prompt: String,
    pub run_flags: Arc<run_flags::RunFlags>,
    pub memory: Option<Arc<memory::Memory>>,
    pub bus: EventBus,
    pub tools: ToolContext,
    pub max_iters: u32,
    pub max_delegation_depth: u32,
    /// `[context] compact_at`.
    pub compact_at: f64,
    /// `[context] curate_reads` and its keys.
    pub curate: crate::config::CurateSettings,
    /// `[auto]` limits and the checks that run without asking.
    pub auto: crate::config::AutoSettings,
    pub checkpoints: Option<Arc<checkpoints::Checkpointer>>,
    pub hooks: Option<Arc<crate::hooks::Runner>>,
    pub interactive: bool,
    pub agents: Arc<Live<AgentSet>>,
    pub skills: Arc<Live<SkillSet>>,
    /// Approval requests waiting for an answer, by id.
    pub pending: Arc<Mutex<PendingApprovals>>,
    /// Cancellation of every live run, by id (`Input::CancelRun`); a child's token is a
    /// child of its parent's, so cancelling one cancels its subtree.
    pub runs: Arc<Mutex<HashMap<String, CancellationToken>>>,
    pub locks: Arc<Mutex<locks::Locks>>,
    /// Children started with `background: true`: where their answers go.
    pub background: Arc<delegate::Background>,
}

impl TurnShared {
    /// The turns' shared state from the session's setup (whose history, permissions and
    /// agent the session keeps itself); what the `SessionStart` hooks added joins the
    /// workspace prompt.
    fn from_setup(
        setup: SessionSetup,
        start_context: Option<String>,
        bus: &EventBus,
        background: Arc<delegate::Background>,
    ) -> TurnShared {
        TurnShared {
            session_id: setup.session_id,
            models: setup.models,
            choice: setup.model,
            context_prompt: match start_context {
                Some(extra) => format!("{}\n\n{extra}", setup.context_prompt),
                None => setup.context_prompt,
            },
            run_flags: Arc::new(setup.run_flags),
            memory: setup.memory,
            bus: bus.clone(),
            tools: setup.tools,
            max_iters: setup.max_iters,
            max_delegation_depth: setup.max_delegation_depth,
            compact_at: setup.compact_at,
            curate: setup.curate,
            auto: setup.auto,
            checkpoints: setup.checkpoints,
            hooks: setup.hooks,
            interactive: setup.interactive,
            agents: setup.agents,
            skills: setup.skills,
            pending: Arc::default(),
            runs: Arc::default(),
            locks: Arc::default(),
            background,
        }
    }

    /// The same session with another model and turn limit, for turns started from now on.
    fn with_settings(&self, choice: Choice, max_iters: u32) -> TurnShared {
        TurnShared {
            session_id: self.session_id.clone(),
            models: Arc::clone(&self.models),
            choice,
            context_prompt: self.context_prompt.clone(),
            run_flags: Arc::clone(&self.run_flags),
            memory: self.memory.clone(),
            bus: self.bus.clone(),
            tools: self.tools.clone(),
            max_iters,
            max_delegation_depth: self.max_delegation_depth,
            compact_at: self.compact_at,
            curate: self.curate.clone(),
            auto: self.auto.clone(),
            checkpoints: self.checkpoints.clone(),
            hooks: self.hooks.clone(),
            interactive: self.interactive,
            agents: Arc::clone(&self.agents),
            skills: Arc::clone(&self.skills),
            pending: Arc::clone(&self.pending),
            runs: Arc::clone(&self.runs),
            locks: Arc::clone(&self.locks),
            background: Arc::clone(&self.background),
        }
    }
}

/// What a person chooses for the next turns besides the model and `max_iters` (which live
/// in [`TurnShared`]). The idle conversation holds the permission mode a turn runs with;
/// this is the one the next turn gets.
struct Settings {
    agent_id: String,
    /// Chosen with `--mode` or `/mode`; `None`: the agent's own, else chat.
    mode: Option<TurnMode>,
    /// The mode the next turn uses (the running one keeps its own).
    permission_mode: PermissionMode,
    /// Rules revoked while a turn ran, revoked when it ends.
    revoked: Vec<String>,
}

/// A run's full system prompt: its agent's own body, then the workspace facts and rules,
/// then the project's memory, in auto mode the action protocol, and last what
/// `--append-system-prompt` adds. `--system-prompt` takes the body's place. The flags are
/// for the session's own runs (depth 0), not the agents they delegate to. A model with a
/// small window (the one the run's route would try first) gets the compact rules.
pub(crate) async fn compose_prompt(shared: &TurnShared, ctx: &run::RunCtx) -> String {
    let flags = (ctx.depth == 0).then_some(shared.run_flags.as_ref());
    let body = flags
        .and_then(|f| f.system_prompt.as_deref())
        .unwrap_or(&ctx.agent.prompt);
    let likely = shared.models.likely(&ctx.route);
    let window = shared.models.model(likely).context_window().await;
    let context = prompt::for_window(&shared.context_prompt, window);
    let mut prompt = format!("{}\n\n{context}", body.trim());
    if let Some(section) = mcp_instructions(shared, ctx, window).await {
        prompt.push_str("\n\n");
        prompt.push_str(&section);
    }
    if let Some(memory) = shared.memory.as_ref().and_then(|m| m.section()) {
        prompt.push_str("\n\n");
        prompt.push_str(&memory);
    }
    if ctx.mode == TurnMode::Auto {
        prompt.push_str("\n\n");
        prompt.push_str(&auto::protocol(shared, ctx));
    }
    if let Some(extra) = flags.and_then(|f| f.append_system_prompt.as_deref()) {
        prompt.push_str("\n\n");
        prompt.push_str(extra.trim());
    }
    prompt
}

/// Characters of one MCP server's instructions the system prompt carries; the rest is cut
/// with a note.
const MCP_INSTRUCTIONS_CHARS: usize = 2_000;

/// What the MCP servers whose tools the run may use say about using them (their
/// `instructions`, as Claude Code passes them on). Waits for servers still starting (as
/// the first model request would). Left out on a small window, where every token counts.
async fn mcp_instructions(
    shared: &TurnShared,
    ctx: &run::RunCtx,
    window: Option<u32>,
) -> Option<String> {
    if crate::tools::compact::is_small(window) {
        return None;
    }
    let registry = &shared.tools.registry;
    registry.settled().await;
    let tools = registry.registered();
    let sections: Vec<String> = registry
        .instructions()
        .into_iter()
        .filter(|(server, _)| {
            let prefix = crate::mcp::tool_name(server, "");
            tools
                .iter()
                .any(|t| t.spec.name.starts_with(&prefix) && ctx.agent.allows(&t.id()))
        })
        .map(|(server, text)| {
            let text = crate::text::cut_chars(&text, MCP_INSTRUCTIONS_CHARS);
            format!("## {server}\n{text}")
        })
        .collect();
    (!sections.is_empty()).then(|| {
        format!(
            "# MCP server instructions\n\nThe connected MCP servers say how to use their \
             tools:\n\n{}",
            sections.join("\n\n")
        )
    })
}

/// What decides the model for an agent's or skill's `model` hint; without a hint, or when
/// it names nothing configured (with a warning), `fallback`.
pub(crate) fn route_for(shared: &TurnShared, hint: Option<&str>, fallback: &Choice) -> Choice {
    let Some(hint) = hint.map(str::trim).filter(|h| !h.is_empty()) else {
        return fallback.clone();
    };
    match shared.models.check_hint(hint) {
        Ok(()) => Choice::Hint(hint.to_string()),
        Err(why) => {
            shared.bus.publish(Event::Warning {
                message: format!(
                    "model hint `{hint}`: {why}; using {}",
                    shared.models.label(fallback)
                ),
            });
            fallback.clone()
        }
    }
}

/// What a turn may change: the history and the session's approvals.
#[derive(Clone)]
pub(crate) struct Conversation {
    pub history: Vec<ChatMessage>,
    pub permissions: Permissions,
    /// What the servers counted of it: the anchor of the next request's estimate.
    pub ledger: usage::Ledger,
}

/// Starts the session task. Subscribe to `bus` before calling this to see every event.
pub fn spawn(setup: SessionSetup, bus: EventBus) -> SessionHandle {
    let (tx, rx) = Inputs::channel(64);
    let task = tokio::spawn(run(setup, rx, bus.clone()));
    SessionHandle {
        inputs: tx,
        bus,
        task,
    }
}

struct Running {
    task: JoinHandle<Conversation>,
    cancel: CancellationToken,
    /// The conversation as it was when the turn started, in case the turn task dies.
    backup: Conversation,
}

/// The session task: it reads the inputs, runs one turn at a time (queueing the messages
/// that come meanwhile), and ends when the inputs stop or a shutdown comes.
async fn run(setup: SessionSetup, mut inputs: mpsc::Receiver<input::Sent>, bus: EventBus) {
    publish_started(&setup, &bus);
    let (mut session, mut background_answers) = Session::start(setup, bus).await;
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(session.idle_deadline.unwrap_or_else(tokio::time::Instant::now)),
                if session.idle_deadline.is_some() => session.notify_waiting(),
            sent = inputs.recv() => {
                let Some(sent) = sent else { break };
                if session.take(sent).await.is_break() {
                    break;
                }
            }
            // A background child ended: its answer joins the conversation like a message.
            Some(answer) = background_answers.recv() => session.enqueue(answer),
            finished = turn_finished(&mut session.running), if session.running.is_some() => {
                session.turn_ended(finished);
            }
        }
        session.next_turn();
    }
    session.end().await;
}

/// Tells the frontends what the session starts with.
fn publish_started(setup: &SessionSetup, bus: &EventBus) {
    bus.publish(Event::SessionStarted {
        version: event::EVENT_VERSION,
        session_id: setup.session_id.clone(),
        model: setup.models.label(&setup.model),
        root: setup.tools.root.display().to_string(),
        agent_id: setup.agent_id.clone(),
        permission_mode: setup.permissions.mode,
        tools: setup
            .run_flags
            .offered(crate::tools::all_tool_names())
            .iter()
            .map(|s| s.to_string())
            .collect(),
        max_iters: setup.max_iters,
        mode: turn::mode_for(setup.mode, setup.agents.get().get(&setup.agent_id)),
    });
}

/// The history a session starts from: an empty system prompt (set per turn, for the agent
/// that runs it), then what is resumed. A resumed session's todo list is what its last
/// `TodoWrite` left, and the frontends hear it.
fn opening_history(resumed: Vec<ChatMessage>, bus: &EventBus) -> Vec<ChatMessage> {
    let mut history = vec![ChatMessage::system(String::new())];
    history.extend(resumed);
    if let Some(todos) = crate::tools::todo::last_in(&history) {
        bus.publish(Event::TodosUpdated { todos });
    }
    history
}

/// What the session task keeps between inputs. It is the one owner of the conversation:
/// `idle` holds it while no turn runs, the running turn's task holds it otherwise.
struct Session {
    shared: Arc<TurnShared>,
    bus: EventBus,
    settings: Settings,
    idle: Option<Conversation>,
    queue: VecDeque<UserMessage>,
    /// Whether frontends were shown a queue, so they also learn when it shrinks.
    queue_shown: bool,
    running: Option<Running>,
    answered: Answered,
    /// Whether frontends were told the session is running (queued turns keep it running).
    busy: bool,
    /// When the `Notification` hooks hear that the session waits for input (once per wait).
    idle_deadline: Option<tokio::time::Instant>,
    /// How long the session waits idle before that.
    idle_after: std::time::Duration,
    /// Why the session ended, for the `SessionEnd` hooks.
    end_reason: &'static str,
}

impl Session {
    /// Runs the `SessionStart` hooks and builds the state of an idle session; the receiver
    /// gets the answers of background children.
    async fn start(
        mut setup: SessionSetup,
        bus: EventBus,
    ) -> (Session, mpsc::UnboundedReceiver<UserMessage>) {
        let history = opening_history(std::mem::take(&mut setup.history), &bus);
        let source = match (setup.cleared, history.len() > 1) {
            (true, _) => "clear",
            (false, true) => "resume",
            (false, false) => "startup",
        };
        let mode = setup.permissions.mode;
        let start_context = session_start(&setup.hooks, &bus, &history, mode, source).await;
        let (background, background_answers) = delegate::Background::new();
        let settings = Settings {
            agent_id: std::mem::take(&mut setup.agent_id),
            mode: setup.mode,
            permission_mode: setup.permissions.mode,
            revoked: Vec::new(),
        };
        let conv = Conversation {
            ledger: usage::Ledger::resumed(&history),
            history,
            permissions: std::mem::take(&mut setup.permissions),
        };
        let idle_after = setup.idle_notification;
        let shared = TurnShared::from_setup(setup, start_context, &bus, background);
        let task_bus = bus.clone();
        shared
            .tools
            .tasks
            .listen(move |task| task_bus.publish(Event::TaskUpdated { task }));
        let session = Session {
            shared: Arc::new(shared),
            bus,
            settings,
            idle: Some(conv),
            queue: VecDeque::new(),
            queue_shown: false,
            running: None,
            answered: Answered::default(),
            busy: false,
            idle_deadline: None,
            idle_after,
            end_reason: "other",
        };
        (session, background_answers)
    }

    /// The idle wait is over: the `Notification` hooks hear the session waits for input.
    fn notify_waiting(&mut self) {
        self.idle_deadline = None;
        if let Some(conv) = &self.idle {
            let message = "linggen is waiting for your input".into();
            hooks::notify(
                &self.shared,
                hooks::Site::session(conv),
                message,
                "idle_prompt",
            );
        }
    }

    /// Handles one input and answers it; `Break` when it ends the session.
    async fn take(&mut self, sent: input::Sent) -> ControlFlow<()> {
        let input::Sent { input, reply } = sent;
        let answer = match input {
            Input::Shutdown | Input::ShutdownForClear => {
                self.shut_down(&input).await;
                input::Sent::answer(reply, &self.bus, Ok(()));
                return ControlFlow::Break(());
            }
            Input::UserMessage(msg) => {
                self.enqueue(msg);
                Ok(())
            }
            Input::Approval { id, decision, from } => self.approve(id, decision, from),
            Input::Cancel => {
                if let Some(r) = &self.running {
                    r.cancel.cancel();
                }
                Ok(())
            }
            Input::ClearQueue => {
                self.clear_queue();
                Ok(())
            }
            Input::CancelRun { run_id } => self.cancel_run(&run_id),
            // Answered once the task is seen stopped.
            Input::StopTask { task_id } => {
                stop_task(&self.shared, &self.bus, task_id, reply);
                return ControlFlow::Continue(());
            }
            // Like the mode: now when idle, else from the next turn on.
            Input::RevokeRule { rule } => {
                match self.idle.as_mut() {
                    Some(conv) => conv.permissions.revoke(&rule),
                    None => self.settings.revoked.push(rule),
                }
                Ok(())
            }
            setting => change_setting(
                setting,
                &mut self.shared,
                &mut self.settings,
                self.idle.as_mut(),
            ),
        };
        input::Sent::answer(reply, &self.bus, answer);
        ControlFlow::Continue(())
    }

    /// Notes why the session ends and cancels the running turn, waiting for its
    /// conversation (kept for the `SessionEnd` hooks' transcript).
    async fn shut_down(&mut self, input: &Input) {
        self.end_reason = match input {
            Input::ShutdownForClear => "clear",
            _ => "prompt_input_exit",
        };
        if let Some(r) = self.running.take() {
            r.cancel.cancel();
            self.idle = Some(r.task.await.unwrap_or(r.backup));
        }
    }

    /// Queues a message for a later turn; while a turn runs, the frontends see the queue.
    fn enqueue(&mut self, msg: UserMessage) {
        self.queue.push_back(msg);
        if self.running.is_some() {
            publish_queue(&self.bus, &self.queue);
            self.queue_shown = true;
        }
    }

    /// Hands an approval answer to the call waiting for it. The first answer wins; the
    /// sender hears whether it was theirs.
    fn approve(&mut self, id: String, decision: Decision, from: String) -> Answer {
        let waiter = lock(&self.shared.pending).remove(&id);
        let taken = waiter.is_some_and(|w| w.send((decision, from.clone())).is_ok());
        if taken {
            self.answered.remember(id, from);
            Ok(())
        } else {
            Err(self.answered.refusal(&id))
        }
    }

    /// Drops the queued messages, telling the frontends if there were any.
    fn clear_queue(&mut self) {
        if !self.queue.is_empty() {
            self.queue.clear();
            publish_queue(&self.bus, &self.queue);
            self.queue_shown = false;
        }
    }

    /// Cancels one live run (and so its subtree).
    fn cancel_run(&self, run_id: &str) -> Answer {
        let token = lock(&self.shared.runs).get(run_id).cloned();
        match token {
            Some(token) => {
                token.cancel();
                Ok(())
            }
            None => Err(Refusal::not_found(format!("run {run_id} is not running"))),
        }
    }

    /// The running turn ended: its conversation (or, if its task died, the one it started
    /// from) becomes idle, with the permission changes asked meanwhile.
    fn turn_ended(&mut self, finished: Result<Conversation, tokio::task::JoinError>) {
        if let Some(r) = self.running.take() {
            let mut conv = finished.unwrap_or_else(|e| {
                self.bus.publish(Event::Error {
                    message: format!("internal error in the turn: {e}"),
                });
                r.backup
            });
            settle_permissions(&mut conv, &mut self.settings);
            self.idle = Some(conv);
        }
    }

    /// With no turn running, starts the next queued message's turn, or (the queue empty)
    /// tells the frontends the session is idle.
    fn next_turn(&mut self) {
        // `idle` holds the conversation exactly when no turn runs.
        let Some(conv) = self.idle.take() else {
            return;
        };
        match self.queue.pop_front() {
            Some(msg) => {
                if self.queue_shown {
                    publish_queue(&self.bus, &self.queue);
                    self.queue_shown = !self.queue.is_empty();
                }
                if !self.busy {
                    self.busy = true;
                    publish_state(&self.shared, SessionStatus::Running, &self.settings);
                }
                self.idle_deadline = None;
                let (agent_id, mode) = (&self.settings.agent_id, self.settings.mode);
                self.running = Some(start_turn(&self.shared, conv, msg, agent_id, mode));
            }
            None => {
                if self.busy {
                    self.busy = false;
                    publish_state(&self.shared, SessionStatus::Idle, &self.settings);
                    self.idle_deadline = idle_notice_at(&self.shared, self.idle_after);
                }
                self.idle = Some(conv);
            }
        }
    }

    /// Stops what the session started (nothing outlives it), runs the `SessionEnd` hooks
    /// and closes the bus.
    async fn end(self) {
        self.shared.tools.tasks.stop_all(StopBy::SessionEnd);
        self.shared.background.stop_all();
        if let Some(conv) = &self.idle {
            session_end(&self.shared, conv, self.end_reason).await;
        }
        self.bus.close();
    }
}

/// Stops a background command for a person, answered once it is seen stopped (a moment:
/// the kill is SIGKILL), so the one who asked sees it stopped in the view; the session
/// goes on meanwhile.
fn stop_task(
    shared: &TurnShared,
    bus: &EventBus,
    task_id: String,
    reply: Option<oneshot::Sender<input::Answer>>,
) {
    let tasks = Arc::clone(&shared.tools.tasks);
    let bus = bus.clone();
    tokio::spawn(async move {
        let answer = match tasks.stop(&task_id, StopBy::Person) {
            Ok(()) => tasks.stopped(&task_id).await.map(|_| ()),
            Err(e) => Err(e),
        };
        let answer = answer.map_err(|e| match e {
            TaskError::NotFound { .. } => Refusal::not_found(e.to_string()),
            TaskError::NotRunning { .. } => Refusal::conflict(e.to_string()),
        });
        input::Sent::answer(reply, &bus, answer);
    });
}

/// When the `Notification` hooks should hear that the session waits for input: only where
/// a person can answer and a hook listens.
fn idle_notice_at(shared: &TurnShared, after: std::time::Duration) -> Option<tokio::time::Instant> {
    let listens = shared
        .hooks
        .as_ref()
        .is_some_and(|h| h.listens(crate::hooks::HookEvent::Notification));
    (shared.interactive && listens).then(|| tokio::time::Instant::now() + after)
}

/// Runs the `SessionEnd` hooks, and waits for them.
async fn session_end(shared: &TurnShared, conv: &Conversation, reason: &'static str) {
    let fields = hooks::fields([("reason", serde_json::json!(reason))]);
    let event = crate::hooks::HookEvent::SessionEnd;
    hooks::fire(shared, hooks::Site::session(conv), event, &[reason], fields).await;
}

/// Runs the `SessionStart` hooks (`startup`, `resume` or `clear`); what
/// they add as context joins the session's system prompt.
async fn session_start(
    runner: &Option<Arc<crate::hooks::Runner>>,
    bus: &EventBus,
    history: &[ChatMessage],
    mode: PermissionMode,
    source: &'static str,
) -> Option<String> {
    let runner = runner.as_ref()?;
    let site = hooks::Site {
        run_id: None,
        history,
        mode,
    };
    let fields = hooks::fields([("source", serde_json::json!(source))]);
    let event = crate::hooks::HookEvent::SessionStart;
    let outcome = hooks::fire_with(runner, bus, site, event, &[source], fields).await;
    outcome.context_text()
}

/// The most recent approval answers and who gave them, so that a late answer is told
/// where the winning one came from.
#[derive(Default)]
struct Answered(VecDeque<(String, String)>);

impl Answered {
    const KEPT: usize = 64;

    fn remember(&mut self, id: String, from: String) {
        if self.0.len() == Self::KEPT {
            self.0.pop_front();
        }
        self.0.push_back((id, from));
    }

    fn refusal(&self, id: &str) -> Refusal {
        match self.0.iter().find(|(answered, _)| answered == id) {
            Some((_, from)) => Refusal::conflict(format!(
                "approval {id} is not waiting: it was answered first in the {from}"
            )),
            None => Refusal::not_found(format!(
                "approval {id} is not waiting (already answered, or no such request)"
            )),
        }
    }
}

/// Resolves when the running turn ends (never, when none runs).
async fn turn_finished(
    running: &mut Option<Running>,
) -> Result<Conversation, tokio::task::JoinError> {
    match running {
        Some(r) => (&mut r.task).await,
        None => std::future::pending().await,
    }
}

fn start_turn(
    shared: &Arc<TurnShared>,
    conv: Conversation,
    msg: UserMessage,
    agent_id: &str,
    mode: Option<TurnMode>,
) -> Running {
    let cancel = CancellationToken::new();
    let backup = conv.clone();
    let (shared, token, agent_id) = (shared.clone(), cancel.clone(), agent_id.to_string());
    let task = tokio::spawn(async move {
        let mut conv = conv;
        turn::run_turn(&shared, &mut conv, msg, &agent_id, mode, token).await;
        conv
    });
    Running {
        task,
        cancel,
        backup,
    }
}

fn publish_queue(bus: &EventBus, queue: &VecDeque<UserMessage>) {
    bus.publish(Event::QueueUpdated {
        queued: queue.iter().map(|m| m.content.clone()).collect(),
    });
}

fn publish_state(shared: &TurnShared, status: SessionStatus, settings: &Settings) {
    shared.bus.publish(Event::StateUpdated {
        status,
        agent_id: settings.agent_id.clone(),
        mode: effective_mode(shared, settings),
    });
}

/// The mode the next turn runs in: the person's choice, else the agent's `mode:`, else chat.
fn effective_mode(shared: &TurnShared, settings: &Settings) -> TurnMode {
    let agents = shared.agents.get();
    let agent = agents.get(&settings.agent_id);
    turn::mode_for(settings.mode, agent)
}

/// What was asked of the permissions while the turn ran applies now, before the next turn.
fn settle_permissions(conv: &mut Conversation, settings: &mut Settings) {
    conv.permissions.mode = settings.permission_mode;
    for rule in settings.revoked.drain(..) {
        conv.permissions.revoke(&rule);
    }
}

/// Applies one of the settings inputs. An accepted change is broadcast as `SettingsUpdated`
/// (all settings, as the next turn will use them); a refusal changes nothing and says why.
fn change_setting(
    input: Input,
    shared: &mut Arc<TurnShared>,
    settings: &mut Settings,
    idle: Option<&mut Conversation>,
) -> Answer {
    let refused = match input {
        // A turn runs as one agent from its start to its end; every frontend hears the
        // same refusal (the terminal used to keep this check to itself).
        Input::SetAgent { .. } if idle.is_none() => Some(Refusal::conflict(
            "the agent can change when this turn ends",
        )),
        Input::SetAgent { agent } => {
            let agents = shared.agents.get();
            if agents.get(&agent).is_some() {
                settings.agent_id = agent;
                None
            } else {
                Some(Refusal::invalid(format!(
                    "no agent named `{agent}`; agents: {}",
                    agents.names().join(", ")
                )))
            }
        }
        Input::SetMode { mode } => {
            settings.mode = Some(mode);
            None
        }
        Input::SetModel { model } => match shared.models.choose(&model) {
            Ok(choice) => {
                *shared = Arc::new(shared.with_settings(choice, shared.max_iters));
                None
            }
            Err(why) => Some(Refusal::invalid(format!(
                "cannot switch to model `{model}`: {why}"
            ))),
        },
        Input::SetMaxIters { max_iters: 0 } => {
            Some(Refusal::invalid("max_iters must be at least 1"))
        }
        Input::SetMaxIters { max_iters } => {
            *shared = Arc::new(shared.with_settings(shared.choice.clone(), max_iters));
            None
        }
        // The running turn holds the permissions; changing them under it would make one
        // turn's calls follow two policies.
        // The running turn keeps the mode it started with (one turn's calls follow one
        // policy); the next turn takes the new one (see `settle_permissions`).
        Input::SetPermissionMode { mode } => {
            settings.permission_mode = mode;
            if let Some(conv) = idle {
                conv.permissions.mode = mode;
            }
            None
        }
        other => Some(Refusal::invalid(format!("{other:?} is not a setting"))),
    };
    if let Some(why) = refused {
        return Err(why);
    }
    shared.bus.publish(Event::SettingsUpdated {
        agent_id: settings.agent_id.clone(),
        mode: effective_mode(shared, settings),
        model: shared.models.label(&shared.choice),
        permission_mode: settings.permission_mode,
        max_iters: shared.max_iters,
    });
    Ok(())
}

#[cfg(test)]
mod tests;
