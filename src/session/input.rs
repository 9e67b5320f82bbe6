//! What frontends send into a session.

use super::event::Decision;

#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A message for the agent. `from` names the frontend (`terminal`, `web`, `cli`).
    UserMessage { content: String, from: String },
    /// An answer to `ApprovalRequested{id}`; the first answer wins.
    Approval {
        id: String,
        decision: Decision,
        from: String,
    },
    /// Cancel the running turn (tools are killed, the partial answer is kept).
    Cancel,
    /// Finish: cancel anything running and stop the session task.
    Shutdown,
}
