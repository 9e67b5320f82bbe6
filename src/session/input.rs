//! What frontends send into a session.

use tokio::sync::{mpsc, oneshot};

use super::EventBus;
use super::event::{Decision, Event};

pub use crate::config::TurnMode;

/// A skill the person invoked (`/name args`, a custom trigger, or `@target`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillInvocation {
    pub name: String,
    pub args: String,
}

/// A message for an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserMessage {
    /// What the person wrote (for a skill, the line as typed, e.g. `/review HEAD`).
    pub content: String,
    /// The frontend: `terminal`, `web`, `cli`, `mcp` (`linggen mcp serve`).
    pub from: String,
    /// The agent for this one message (`@coder …`); `None`: the session's current agent.
    pub agent: Option<String>,
    /// Set when the message invokes a skill; its body becomes the instructions.
    pub skill: Option<SkillInvocation>,
    /// Material that comes with the message (piped stdin, attached files), appended after
    /// the text or the skill's instructions.
    pub attached: String,
    /// A command the person runs themselves (`!cargo test`): it runs as a `Bash` call,
    /// through the same floor and approvals, and its output joins the conversation for the
    /// model's next turn; the model is not asked anything.
    pub command: Option<String>,
    /// `/compact [instructions]`: compact the conversation now instead of asking the model
    /// anything; the instructions (possibly empty) say what the summary must keep.
    pub compact: Option<String>,
    /// `/check CMD`: `command` is a verification the person asked for; it runs without
    /// asking when `[checks] allow` lists it, and when it fails the agent summarises why.
    pub check: bool,
    /// Images the person attached (`@shot.png`, `--image`, the page): sent with the text to
    /// models that take images.
    pub images: Vec<crate::llm::Image>,
}

impl UserMessage {
    pub fn new(content: impl Into<String>, from: impl Into<String>) -> UserMessage {
        UserMessage {
            content: content.into(),
            from: from.into(),
            agent: None,
            skill: None,
            attached: String::new(),
            command: None,
            compact: None,
            check: false,
            images: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A message for an agent; queued while a turn runs.
    UserMessage(UserMessage),
    /// An answer to `ApprovalRequested{id}`; the first answer wins.
    Approval {
        id: String,
        decision: Decision,
        from: String,
    },
    /// Switch the agent that later messages go to (`/agent coder`); refused while a turn
    /// runs.
    SetAgent { agent: String },
    /// Switch how turns work (`/mode chat|auto|talk`); from the next turn on.
    SetMode { mode: TurnMode },
    /// Send the next turns to another configured model (`/model ID`): an id, `local` or
    /// `cloud`, resolved like an agent's `model` hint. A running turn keeps its model.
    SetModel { model: String },
    /// Change how tool calls are approved (`/permissions MODE`): accepted at once, applied
    /// from the next turn (a running turn's calls follow one policy).
    SetPermissionMode { mode: crate::config::PermissionMode },
    /// Limit the model calls of the next turns (at least 1).
    SetMaxIters { max_iters: u32 },
    /// Stop allowing `rule` (a project rule the person removed with `/permissions
    /// remove`): from the configured rules and this session's "always" answers alike.
    RevokeRule { rule: String },
    /// Cancel the running turn (tools are killed, the partial answer is kept), with every
    /// run it delegated to.
    Cancel,
    /// Cancel one run and its subtree (a delegated run, say).
    CancelRun { run_id: String },
    /// Stop a background command (`/tasks stop bash_1`, the page's Stop button).
    StopTask { task_id: String },
    /// Drop the messages waiting for the running turn to end (Esc pressed again).
    ClearQueue,
    /// Finish: cancel anything running and stop the session task.
    Shutdown,
    /// Finish because the person started a new session (`/clear`): as `Shutdown`, with
    /// `SessionEnd` hooks told `clear`.
    ShutdownForClear,
}

impl Input {
    /// A plain message to the current agent.
    pub fn message(content: impl Into<String>, from: impl Into<String>) -> Input {
        Input::UserMessage(UserMessage::new(content, from))
    }
}

/// The session's answer to one input: accepted, or why not.
pub type Answer = Result<(), Refusal>;

/// Why the session did not take an input: in words for the person, and of a kind a
/// frontend can act on (the web API's status code follows it: `404`, `409`, `400`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    pub kind: RefusalKind,
    pub message: String,
}

/// What kind of refusal: what the input names is not there, the session's state does not
/// allow it now, or the input itself is not valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    /// A run, background command or approval that does not exist (or no longer does).
    NotFound,
    /// Valid, but not now: an approval already answered, a change while a turn runs.
    Conflict,
    /// A value the session does not know (a model, agent or mode that is none of its own).
    Invalid,
}

impl Refusal {
    pub fn not_found(message: impl Into<String>) -> Refusal {
        Refusal {
            kind: RefusalKind::NotFound,
            message: message.into(),
        }
    }

    pub fn conflict(message: impl Into<String>) -> Refusal {
        Refusal {
            kind: RefusalKind::Conflict,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Refusal {
        Refusal {
            kind: RefusalKind::Invalid,
            message: message.into(),
        }
    }
}

/// An input as it travels to the session, with where its answer goes when the sender waits
/// for one ([`Inputs::ask`]).
pub struct Sent {
    pub input: Input,
    pub reply: Option<oneshot::Sender<Answer>>,
}

impl Sent {
    /// Answers the sender; with nobody waiting, a refusal is published as an `Error` so that
    /// it is not lost (a fire-and-forget sender still learns it from the events).
    pub(crate) fn answer(reply: Option<oneshot::Sender<Answer>>, bus: &EventBus, answer: Answer) {
        match reply {
            Some(reply) => {
                let _ = reply.send(answer);
            }
            None => {
                if let Err(refusal) = answer {
                    bus.publish(Event::Error {
                        message: refusal.message,
                    });
                }
            }
        }
    }
}

/// The session's input queue, as every frontend holds it. `send` queues an input; `ask`
/// queues it and waits for the session's own answer, so two frontends answering the same
/// approval each learn from the session whether theirs won, with no arbitration of their own.
#[derive(Clone)]
pub struct Inputs(mpsc::Sender<Sent>);

/// The session has stopped; nothing it is sent is read any more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped;

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the session has stopped")
    }
}

impl Inputs {
    /// A queue of `capacity` inputs and its receiving end (the session's).
    pub fn channel(capacity: usize) -> (Inputs, mpsc::Receiver<Sent>) {
        let (tx, rx) = mpsc::channel(capacity);
        (Inputs(tx), rx)
    }

    /// Queues an input without waiting for its answer.
    pub async fn send(&self, input: Input) -> Result<(), Stopped> {
        let sent = Sent { input, reply: None };
        self.0.send(sent).await.map_err(|_| Stopped)
    }

    /// Queues an input unless the queue is full (for `Drop` and other non-async places).
    pub fn try_send(&self, input: Input) -> Result<(), Stopped> {
        let sent = Sent { input, reply: None };
        self.0.try_send(sent).map_err(|_| Stopped)
    }

    /// Queues an input and waits for the session's answer (`Err(Stopped)`: the session
    /// stopped before it answered).
    pub async fn ask(&self, input: Input) -> Result<Answer, Stopped> {
        let (reply, answer) = oneshot::channel();
        let sent = Sent {
            input,
            reply: Some(reply),
        };
        self.0.send(sent).await.map_err(|_| Stopped)?;
        answer.await.map_err(|_| Stopped)
    }
}
