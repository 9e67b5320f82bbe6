//! A session owns one conversation. Frontends send [`Input`]s into its queue and watch the
//! [`Event`]s it publishes on its [`EventBus`]; nothing else touches its state. While a turn
//! runs (as its own task) the session keeps reading the queue, so approvals, cancellation
//! and queued messages are handled without waiting for the model.

pub mod bus;
pub mod event;
pub mod ids;
pub mod input;
pub mod permissions;
pub mod prompt;
mod tokens;
mod tool_call;
mod turn;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use bus::{Envelope, EventBus};
pub use event::{Decision, Event, OutcomeStatus};
pub use input::Input;
pub use permissions::Permissions;

use crate::llm::{ChatMessage, Provider};
use crate::tools::ToolContext;

/// Everything a session starts from.
pub struct SessionSetup {
    pub session_id: String,
    pub agent_id: String,
    /// The model as people should read it, e.g. `local (qwen2.5 @ http://127.0.0.1:11434)`.
    pub model_label: String,
    pub provider: Arc<dyn Provider>,
    /// Context window in tokens, when known (configured, or asked of the server).
    pub context_window: Option<u32>,
    pub system_prompt: String,
    /// Earlier messages when resuming (`--continue`), without the system prompt.
    pub history: Vec<ChatMessage>,
    pub tools: ToolContext,
    pub permissions: Permissions,
    pub max_iters: u32,
    /// Whether any frontend can answer approval requests. Without one, calls that need
    /// approval are denied at once instead of waiting for an answer that cannot come.
    pub interactive: bool,
}

/// The frontends' side of a running session.
pub struct SessionHandle {
    pub inputs: mpsc::Sender<Input>,
    pub bus: EventBus,
    task: JoinHandle<()>,
}

impl SessionHandle {
    /// Waits for the session task to finish (after `Input::Shutdown`).
    pub async fn join(self) {
        drop(self.inputs);
        // A panic inside the session task has already been reported by the runtime; the
        // frontends still shut down cleanly.
        let _ = self.task.await;
    }
}

/// State the turn task borrows from the session.
pub(crate) struct TurnShared {
    pub agent_id: String,
    pub provider: Arc<dyn Provider>,
    pub context_window: Option<u32>,
    pub bus: EventBus,
    pub tools: ToolContext,
    pub max_iters: u32,
    pub interactive: bool,
    /// Approval requests waiting for an answer, by id.
    pub pending: Mutex<HashMap<String, oneshot::Sender<(Decision, String)>>>,
}

/// What a turn may change: the history and the session's approvals.
#[derive(Clone)]
pub(crate) struct Conversation {
    pub history: Vec<ChatMessage>,
    pub permissions: Permissions,
}

/// Starts the session task. Subscribe to `bus` before calling this to see every event.
pub fn spawn(setup: SessionSetup, bus: EventBus) -> SessionHandle {
    let (tx, rx) = mpsc::channel(64);
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

async fn run(setup: SessionSetup, mut inputs: mpsc::Receiver<Input>, bus: EventBus) {
    bus.publish(Event::SessionStarted {
        version: event::EVENT_VERSION,
        session_id: setup.session_id.clone(),
        model: setup.model_label.clone(),
        root: setup.tools.root.display().to_string(),
        agent_id: setup.agent_id.clone(),
        permission_mode: setup.permissions.mode.as_str().to_string(),
        tools: crate::tools::TOOL_NAMES
            .iter()
            .map(|s| s.to_string())
            .collect(),
    });
    let shared = Arc::new(TurnShared {
        agent_id: setup.agent_id,
        provider: setup.provider,
        context_window: setup.context_window,
        bus: bus.clone(),
        tools: setup.tools,
        max_iters: setup.max_iters,
        interactive: setup.interactive,
        pending: Mutex::new(HashMap::new()),
    });
    let mut history = vec![ChatMessage::system(setup.system_prompt)];
    history.extend(setup.history);
    let mut idle = Some(Conversation {
        history,
        permissions: setup.permissions,
    });
    let mut queue: VecDeque<(String, String)> = VecDeque::new();
    // Whether frontends were shown a queue, so they also learn when it shrinks.
    let mut queue_shown = false;
    let mut running: Option<Running> = None;

    loop {
        tokio::select! {
            input = inputs.recv() => match input {
                None | Some(Input::Shutdown) => {
                    if let Some(r) = running.take() {
                        r.cancel.cancel();
                        let _ = r.task.await;
                    }
                    break;
                }
                Some(Input::UserMessage { content, from }) => {
                    queue.push_back((content, from));
                    if running.is_some() {
                        publish_queue(&bus, &queue);
                        queue_shown = true;
                    }
                }
                Some(Input::Approval { id, decision, from }) => {
                    let waiter = lock(&shared.pending).remove(&id);
                    // Unknown ids were already answered (first answer wins) or never existed.
                    if let Some(waiter) = waiter {
                        let _ = waiter.send((decision, from));
                    }
                }
                Some(Input::Cancel) => {
                    if let Some(r) = &running {
                        r.cancel.cancel();
                    }
                }
            },
            finished = turn_finished(&mut running), if running.is_some() => {
                if let Some(r) = running.take() {
                    idle = Some(finished.unwrap_or_else(|e| {
                        bus.publish(Event::Error { message: format!("internal error in the turn: {e}") });
                        r.backup
                    }));
                }
            }
        }
        // `idle` holds the conversation exactly when no turn runs.
        if let Some(conv) = idle.take() {
            match queue.pop_front() {
                Some((content, from)) => {
                    if queue_shown {
                        publish_queue(&bus, &queue);
                        queue_shown = !queue.is_empty();
                    }
                    running = Some(start_turn(&shared, conv, content, from));
                }
                None => idle = Some(conv),
            }
        }
    }
    bus.close();
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
    content: String,
    from: String,
) -> Running {
    let cancel = CancellationToken::new();
    let backup = conv.clone();
    let (shared, token) = (shared.clone(), cancel.clone());
    let task = tokio::spawn(async move {
        let mut conv = conv;
        turn::run_turn(&shared, &mut conv, content, from, token).await;
        conv
    });
    Running {
        task,
        cancel,
        backup,
    }
}

fn publish_queue(bus: &EventBus, queue: &VecDeque<(String, String)>) {
    bus.publish(Event::QueueUpdated {
        queued: queue.iter().map(|(c, _)| c.clone()).collect(),
    });
}

/// Locks a mutex, recovering from poisoning: the maps guarded here stay consistent even if
/// a holder panicked, so refusing to continue would only lose the session.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests;
