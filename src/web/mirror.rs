//! A session as the web sees it. A mirror follows one session's events from its start (a
//! lossless subscriber, so it misses nothing), folds them into the state a late joiner needs
//! (`GET /api/session`), keeps the recent events for `Last-Event-ID` replay, and fans them
//! out to the browsers. Folding, the replay ring and the fan-out happen under one lock, so a
//! snapshot's `seq` and a stream's first event always line up: nothing lost, nothing twice.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::app::LiveSession;
use crate::llm::{ChatMessage, Role};
use crate::session::bus::Subscription;
use crate::session::view::SessionView;
use crate::session::{Answer, Envelope, Event, Input, Inputs, SessionStatus, lock};

/// Events kept for replay after a reconnect. A client that was away longer resynchronises.
const REPLAY_EVENTS: usize = 4096;

/// Streamed text the replay ring holds at most, whatever the number of events: 4,096
/// batches of a fast server's tokens would otherwise be a whole long answer a second time.
/// A client that was away longer resynchronises, as for the event count.
const REPLAY_TOKEN_BYTES: usize = 256 * 1024;

/// Events a browser may fall behind the live stream before it must resynchronise. Per
/// client, a lagging receiver costs nothing: the channel overwrites the oldest events and
/// tells the receiver it lagged.
pub(super) const FANOUT_CAPACITY: usize = 1024;

/// One session, mirrored.
pub struct Mirror {
    pub session_id: String,
    inputs: Inputs,
    state: Mutex<State>,
    fanout: broadcast::Sender<Arc<Envelope>>,
    /// Cancelled when the mirror stops following its session (the session ended, or the
    /// shell replaced it); open streams then tell their clients to resynchronise.
    pub closed: CancellationToken,
}

/// What a new event stream starts from.
pub struct Attached {
    /// The events after the client's last one, in order.
    pub replay: Vec<Arc<Envelope>>,
    /// The client asked for events the mirror no longer has (or never had).
    pub resync: bool,
    pub live: broadcast::Receiver<Arc<Envelope>>,
}

#[derive(Default)]
struct State {
    seq: u64,
    /// Settings, status, queue, context, runs, partial answers and open approvals: the
    /// session's one projection, which the snapshot shows as it is.
    view: SessionView,
    /// Every display event of the session so far except tokens (they are folded into the
    /// view's streaming text and then superseded by the finished `Message`).
    transcript: Vec<Arc<Envelope>>,
    recent: VecDeque<Arc<Envelope>>,
    /// The bytes of token text in `recent`.
    recent_token_bytes: usize,
}

/// A run as the snapshot shows it (its status spelled as the `runs` table does).
#[derive(Serialize)]
struct RunView<'a> {
    run_id: &'a str,
    parent_id: &'a Option<String>,
    agent_id: &'a str,
    task: &'a str,
    status: &'static str,
}

impl Mirror {
    /// Follows a session's events. `history` is what the session resumed with (shown to
    /// late joiners before the events of this process).
    pub fn follow(
        session_id: String,
        inputs: Inputs,
        history: &[ChatMessage],
        agent_id: &str,
        mut events: Subscription,
    ) -> Arc<Mirror> {
        let (fanout, _) = broadcast::channel(FANOUT_CAPACITY);
        let mut state = State {
            view: SessionView::new(agent_id).keeping_streamed_text(),
            ..State::default()
        };
        // Resumed messages have no event of their own; they come first, with seq 0.
        state.transcript = history
            .iter()
            .filter(|m| m.role != Role::System)
            .map(|m| {
                Arc::new(Envelope {
                    seq: 0,
                    event: Event::message("", agent_id, from_of(m), m),
                })
            })
            .collect();
        let mirror = Arc::new(Mirror {
            session_id,
            inputs,
            state: Mutex::new(state),
            fanout,
            closed: CancellationToken::new(),
        });
        let follower = mirror.clone();
        tokio::spawn(async move {
            while let Some(envelope) = events.recv().await {
                follower.apply(envelope);
            }
            follower.closed.cancel();
        });
        mirror
    }

    /// Follows a session just started: takes its mirror feed (interactive sessions have
    /// one; `None` otherwise, or when it was taken already).
    pub fn of(live: &mut LiveSession) -> Option<Arc<Mirror>> {
        let feed = live.mirror_feed.take()?;
        Some(Mirror::follow(
            live.session_id.clone(),
            live.handle.inputs.clone(),
            &feed.history,
            &feed.agent_id,
            feed.events,
        ))
    }

    /// Sends an input into the session's queue (the same one the terminal uses) and
    /// returns the session's answer; the outer `Err` says the session has ended.
    pub(in crate::web) async fn ask(&self, input: Input) -> Result<Answer, String> {
        self.inputs
            .ask(input)
            .await
            .map_err(|_| "this session has ended; reload the page".to_string())
    }

    /// Event streams open on this session right now.
    pub fn viewers(&self) -> usize {
        self.fanout.receiver_count()
    }

    /// Whether the session waits for nothing: no turn running, no approval open.
    pub fn is_idle(&self) -> bool {
        lock(&self.state).view.is_idle()
    }

    /// The sequence number of the last event folded in.
    pub fn seq(&self) -> u64 {
        lock(&self.state).seq
    }

    /// Whether an approval request is still waiting for an answer.
    pub fn is_pending(&self, approval_id: &str) -> bool {
        lock(&self.state).view.is_pending(approval_id)
    }

    /// Starts an event stream after event `after` (`None`: from now).
    pub fn attach(&self, after: Option<u64>) -> Attached {
        let state = lock(&self.state);
        let live = self.fanout.subscribe();
        let Some(after) = after.filter(|&a| a < state.seq) else {
            // A client ahead of the mirror was following another session (its numbers).
            let resync = after.is_some_and(|a| a > state.seq);
            return Attached {
                replay: Vec::new(),
                resync,
                live,
            };
        };
        let oldest = state.recent.front().map_or(u64::MAX, |e| e.seq);
        if after + 1 < oldest {
            return Attached {
                replay: Vec::new(),
                resync: true,
                live,
            };
        }
        let replay = state
            .recent
            .iter()
            .filter(|e| e.seq > after)
            .cloned()
            .collect();
        Attached {
            replay,
            resync: false,
            live,
        }
    }

    /// What a person reads of the session so far, resumed messages first (`/export`).
    pub fn transcript(&self) -> Vec<Arc<Envelope>> {
        lock(&self.state).transcript.clone()
    }

    /// An image of a message in the transcript, by its id (see [`crate::llm::Image::id`]):
    /// events name images without their data, and the page asks for each one it shows.
    pub fn image(&self, id: &str) -> Option<crate::llm::Image> {
        let state = lock(&self.state);
        state
            .transcript
            .iter()
            .find_map(|envelope| match &envelope.event {
                Event::Message { images, .. } => images.iter().find(|i| i.id() == id).cloned(),
                _ => None,
            })
    }

    /// The late joiner's view: state, transcript, partial answers, open approvals, runs.
    pub fn snapshot(&self, access: &str) -> Value {
        let state = lock(&self.state);
        let view = &state.view;
        let settings = &view.settings;
        let runs: Vec<RunView> = view
            .runs
            .iter()
            .map(|r| RunView {
                run_id: &r.run_id,
                parent_id: &r.parent_id,
                agent_id: &r.agent_id,
                task: &r.task,
                status: r.status.stored(),
            })
            .collect();
        json!({
            "session_id": self.session_id,
            "seq": state.seq,
            "access": access,
            "state": {
                "model": settings.model,
                "root": settings.root,
                "agent_id": settings.agent_id,
                "mode": settings.mode,
                "permission_mode": settings.permission_mode,
                "status": view.status.unwrap_or(SessionStatus::Idle),
                "queue": view.queue,
                "todos": view.todos,
                "tasks": view.tasks,
                "context": view.context,
                "max_iters": settings.max_iters,
            },
            "transcript": state.transcript.iter().map(|e| &e.event).collect::<Vec<_>>(),
            "streaming": view.streaming,
            "pending_approvals": view.pending,
            "runs": runs,
        })
    }

    fn apply(&self, envelope: Arc<Envelope>) {
        let mut state = lock(&self.state);
        state.seq = envelope.seq;
        state.fold(&envelope);
        state.remember(envelope.clone());
        // Sent under the lock: `attach` subscribes under it too, so a stream sees every
        // event after its replay exactly once. No viewers is fine.
        let _ = self.fanout.send(envelope);
    }
}

impl State {
    /// Adds an event to the replay ring, dropping the oldest past either bound.
    fn remember(&mut self, envelope: Arc<Envelope>) {
        self.recent_token_bytes += token_bytes(&envelope);
        self.recent.push_back(envelope);
        while self.recent.len() > REPLAY_EVENTS
            || (self.recent_token_bytes > REPLAY_TOKEN_BYTES && self.recent.len() > 1)
        {
            if let Some(old) = self.recent.pop_front() {
                self.recent_token_bytes -= token_bytes(&old);
            }
        }
    }

    fn fold(&mut self, envelope: &Arc<Envelope>) {
        let event = &envelope.event;
        self.view.apply(event);
        // The transcript is what a person reads: everything but settings, status, queue,
        // todo list, context and tokens, which live in the view.
        let keep = !matches!(
            event,
            Event::SessionStarted { .. }
                | Event::SettingsUpdated { .. }
                | Event::StateUpdated { .. }
                | Event::QueueUpdated { .. }
                | Event::TodosUpdated { .. }
                | Event::TaskUpdated { .. }
                | Event::ContextUsage { .. }
                | Event::Token { .. }
                | Event::AgentStatus { .. }
        );
        if keep {
            self.transcript.push(envelope.clone());
        }
    }
}

fn token_bytes(envelope: &Envelope) -> usize {
    match &envelope.event {
        Event::Token { token, .. } => token.len(),
        _ => 0,
    }
}

/// Who a resumed user message is from: the person, or (auto mode) an observation, which
/// the page does not show as a message.
fn from_of(message: &crate::llm::ChatMessage) -> &'static str {
    if crate::session::is_observation(message) {
        crate::session::OBSERVATION
    } else {
        "user"
    }
}
