//! One ACP session: a linggen session (the same core, store, checkpoints and audit trail
//! as a terminal's) whose events are followed and sent to the editor as `session/update`s,
//! whose approvals are put to the editor (`session/request_permission`), and whose turns
//! answer the editor's `session/prompt`s.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::model::{
    ConfigOptionUpdate, RequestPermissionRequest, SessionConfigOption, SessionNotification,
    SessionUpdate, ToolCallStatus, ToolCallUpdate,
};
use super::updates::{Translator, fenced_diff};
use super::{options, permission, prompt};
use crate::app::{LiveSession, Workspace};
use crate::config::{PermissionMode, TurnMode};
use crate::llm::Role;
use crate::protocol::jsonrpc::{Peer, RpcError};
use crate::session::bus::Subscription;
use crate::session::{Event, Input, Inputs, OutcomeStatus, lock};

/// How a prompt's turn ended.
#[derive(Debug, Clone)]
pub struct Ended {
    pub status: OutcomeStatus,
    pub result: String,
}

/// The settings the session started with, for the editor's mode selector.
#[derive(Debug, Clone, Copy)]
pub struct Started {
    pub permission_mode: PermissionMode,
}

impl Started {
    fn of(event: &Event) -> Option<(Started, options::Current)> {
        let Event::SessionStarted {
            permission_mode,
            model,
            mode,
            ..
        } = event
        else {
            return None;
        };
        let started = Started {
            permission_mode: *permission_mode,
        };
        Some((started, options::Current::new(model, *mode)))
    }
}

/// Prompts waiting for their turn's end: first those whose turn has not begun (in the order
/// sent), then by the run that answers them.
#[derive(Default)]
struct Prompts {
    queued: VecDeque<oneshot::Sender<Ended>>,
    by_run: HashMap<String, oneshot::Sender<Ended>>,
    /// Runs of messages from elsewhere (a shared page, a background agent's answer): their
    /// ends answer no prompt of the editor's.
    foreign: HashSet<String>,
}

pub struct AcpSession {
    pub id: String,
    /// The folder it works in, with its agents and skills.
    pub ws: Arc<Workspace>,
    pub inputs: Inputs,
    prompts: Arc<Mutex<Prompts>>,
    /// The model and turn mode as last reported, for the editor's config options.
    current: Mutex<options::Current>,
    /// `/share`: the session's web mirror.
    pub share: super::share::Share,
    /// Taken when the session is stopped.
    live: tokio::sync::Mutex<Option<LiveSession>>,
}

impl AcpSession {
    /// Starts following `live`: the history it resumed with is replayed first (for
    /// `session/load`), then every event goes to the editor. Returns once the session has
    /// started, with its settings.
    pub async fn follow(
        mut live: LiveSession,
        peer: Peer,
        replay: bool,
        ws: Arc<Workspace>,
    ) -> Option<(Arc<AcpSession>, Started)> {
        let id = live.session_id.clone();
        if replay {
            for update in super::updates::replay(&live.resumed) {
                peer.notify(
                    "session/update",
                    SessionNotification {
                        session_id: id.clone(),
                        update,
                    },
                );
            }
        }
        let mirror = crate::app::share::feed(&mut live);
        let events = live.take_events();
        let session = Arc::new(AcpSession {
            share: super::share::Share::new(mirror),
            id: id.clone(),
            ws: Arc::clone(&ws),
            inputs: live.handle.inputs.clone(),
            prompts: Arc::default(),
            current: Mutex::new(options::Current::new("", TurnMode::Chat)),
            live: tokio::sync::Mutex::new(Some(live)),
        });
        let (started_tx, started) = oneshot::channel();
        let follower = Follower {
            session: Arc::clone(&session),
            peer,
            translator: Translator::new(&ws.root),
            started: Some(started_tx),
        };
        tokio::spawn(follower.run(events));
        let started = started.await.ok()?;
        Some((session, started))
    }

    /// Sends the prompt's message and waits for its turn to end.
    pub async fn prompt(&self, message: crate::session::UserMessage) -> Option<Ended> {
        let (tx, rx) = oneshot::channel();
        lock(&self.prompts).queued.push_back(tx);
        if self.inputs.send(Input::UserMessage(message)).await.is_err() {
            return None;
        }
        rx.await.ok()
    }

    /// Changes a setting as the terminal would; a refusal is the session's own reason.
    pub async fn set(&self, input: Input) -> Result<(), RpcError> {
        match self.inputs.ask(input).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(refused)) => Err(RpcError::invalid_params(refused.message)),
            Err(stopped) => Err(RpcError::internal(stopped.to_string())),
        }
    }

    /// A person's message began a run. The editor's is answered to the prompt waiting
    /// longest; another's (the shared page's) is remembered as not the editor's.
    fn prompt_began(&self, run_id: &str, from_editor: bool) {
        let mut prompts = lock(&self.prompts);
        if prompts.by_run.contains_key(run_id) {
            return;
        }
        if !from_editor {
            prompts.foreign.insert(run_id.to_string());
        } else if let Some(waiting) = prompts.queued.pop_front() {
            prompts.by_run.insert(run_id.to_string(), waiting);
        }
    }

    /// A run ended: the prompt it answers (or, for a turn that never showed its message,
    /// the one waiting longest) hears how.
    fn prompt_ended(&self, run_id: &str, status: OutcomeStatus, result: String) {
        let mut prompts = lock(&self.prompts);
        if prompts.foreign.remove(run_id) {
            return;
        }
        let waiting = prompts
            .by_run
            .remove(run_id)
            .or_else(|| prompts.queued.pop_front());
        if let Some(waiting) = waiting {
            let _ = waiting.send(Ended { status, result });
        }
    }

    /// The editor's `session/cancel`: the running turn stops, and the prompts queued behind
    /// it are dropped.
    pub async fn cancel(&self) {
        let _ = self.inputs.send(Input::ClearQueue).await;
        let _ = self.inputs.send(Input::Cancel).await;
    }

    pub fn current(&self) -> options::Current {
        lock(&self.current).clone()
    }

    pub fn set_current(&self, current: options::Current) {
        *lock(&self.current) = current;
    }

    /// The model and turn mode as the editor's config options.
    pub fn config_options(&self) -> Vec<SessionConfigOption> {
        options::options(&self.ws.config, &self.current())
    }

    /// Shuts the session down and waits until it is stored.
    pub async fn stop(&self) {
        self.share.stop().await;
        if let Some(live) = self.live.lock().await.take() {
            live.stop().await;
        }
    }
}

struct Follower {
    session: Arc<AcpSession>,
    peer: Peer,
    translator: Translator,
    started: Option<oneshot::Sender<Started>>,
}

impl Follower {
    async fn run(mut self, mut events: Subscription) {
        while let Some(envelope) = events.recv().await {
            let event = &envelope.event;
            self.bookkeep(event);
            for update in self.translator.translate(event).await {
                self.send(update);
            }
        }
        // The session stopped: a prompt still waiting ends with it.
        let mut prompts = lock(&self.session.prompts);
        prompts.queued.clear();
        prompts.by_run.clear();
    }

    fn bookkeep(&mut self, event: &Event) {
        match event {
            Event::SessionStarted { .. } => {
                if let (Some(tx), Some((started, current))) =
                    (self.started.take(), Started::of(event))
                {
                    self.session.set_current(current);
                    let _ = tx.send(started);
                }
            }
            Event::SettingsUpdated { model, mode, .. } => {
                self.session
                    .set_current(options::Current::new(model, *mode));
                let update = ConfigOptionUpdate {
                    config_options: self.session.config_options(),
                };
                self.send(SessionUpdate::ConfigOptionUpdate(update));
            }
            Event::Message {
                run_id,
                role: Role::User,
                from,
                ..
            } => self.session.prompt_began(run_id, from == prompt::FROM),
            Event::Outcome {
                run_id,
                status,
                result,
                ..
            } => self
                .session
                .prompt_ended(run_id, *status, result.to_string()),
            Event::ApprovalRequested { .. } => self.question(event),
            Event::Warning { message } => note("warning", message),
            Event::Error { message } => note("error", message),
            _ => {}
        }
    }

    /// Puts an approval to the editor, about the tool call it is for.
    fn question(&self, event: &Event) {
        let Event::ApprovalRequested {
            id,
            run_id,
            summary,
            diff,
            once_only,
            always,
            ..
        } = event
        else {
            return;
        };
        let call_id = self
            .translator
            .call_of(run_id, Some(summary))
            .unwrap_or_else(|| id.clone());
        let question = RequestPermissionRequest {
            session_id: self.session.id.clone(),
            tool_call: ToolCallUpdate {
                tool_call_id: call_id,
                title: Some(summary.clone()),
                status: Some(ToolCallStatus::Pending),
                content: diff.as_deref().map(|diff| vec![fenced_diff(diff)]),
            },
            options: permission::options(*once_only, always),
        };
        self.ask(id.clone(), question);
    }

    /// Puts one approval to the editor without holding up the events; the answer goes
    /// back to the session (the first answer wins; a cancelled turn answers itself).
    fn ask(&self, approval_id: String, question: RequestPermissionRequest) {
        let (peer, inputs) = (self.peer.clone(), self.session.inputs.clone());
        tokio::spawn(async move {
            let answer = peer.request("session/request_permission", question).await;
            let answer = match &answer {
                Ok(Ok(value)) => Some(value),
                _ => None,
            };
            let decision = permission::decision(answer);
            let input = Input::Approval {
                id: approval_id,
                decision,
                from: prompt::FROM.to_string(),
            };
            // Asked, not sent: an answer that comes after the turn was cancelled (which
            // answers its questions itself) is refused quietly, not reported as an error.
            let _ = inputs.ask(input).await;
        });
    }

    fn send(&self, update: SessionUpdate) {
        self.peer.notify(
            "session/update",
            SessionNotification {
                session_id: self.session.id.clone(),
                update,
            },
        );
    }
}

/// Words for the person that are not part of the answer go to stderr, which editors keep
/// as the agent's log.
fn note(kind: &str, message: &str) {
    eprintln!(
        "linggen: {kind}: {}",
        crate::tools::terminal_text::strip_controls(message)
    );
}
