//! What frontends send into a session.

use serde::Serialize;

use super::event::Decision;

/// How a turn works: `Auto` runs the tool loop; `Chat` answers in one response without
/// tools (cheap conversation, nothing touches the workspace).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnMode {
    Chat,
    #[default]
    Auto,
}

impl TurnMode {
    pub fn parse(s: &str) -> Option<TurnMode> {
        match s.trim() {
            "chat" => Some(TurnMode::Chat),
            "auto" => Some(TurnMode::Auto),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TurnMode::Chat => "chat",
            TurnMode::Auto => "auto",
        }
    }
}

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
    /// The frontend: `terminal`, `web`, `cli`.
    pub from: String,
    /// The agent for this one message (`@coder …`); `None`: the session's current agent.
    pub agent: Option<String>,
    /// Set when the message invokes a skill; its body becomes the instructions.
    pub skill: Option<SkillInvocation>,
    /// Material that comes with the message (piped stdin, attached files), appended after
    /// the text or the skill's instructions.
    pub attached: String,
}

impl UserMessage {
    pub fn new(content: impl Into<String>, from: impl Into<String>) -> UserMessage {
        UserMessage {
            content: content.into(),
            from: from.into(),
            agent: None,
            skill: None,
            attached: String::new(),
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
    /// Switch the agent that later messages go to (`/agent coder`).
    SetAgent { agent: String },
    /// Switch between the tool loop and plain chat (`/mode chat|auto`).
    SetMode { mode: TurnMode },
    /// Send the next turns to another configured model (`/model ID`): an id, `local` or
    /// `cloud`, resolved like an agent's `model` hint. A running turn keeps its model.
    SetModel { model: String },
    /// Change how tool calls are approved (`/permissions MODE`); between turns only.
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
    /// Finish: cancel anything running and stop the session task.
    Shutdown,
}

impl Input {
    /// A plain message to the current agent.
    pub fn message(content: impl Into<String>, from: impl Into<String>) -> Input {
        Input::UserMessage(UserMessage::new(content, from))
    }
}
