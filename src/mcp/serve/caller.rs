//! The client that called `task`, as the task's run sees it: a person to put approvals to
//! (MCP elicitation, when the client declared it) and someone to tell what the run is
//! doing (progress notifications, when the call carried a progress token).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::protocol::jsonrpc::Peer;

/// How long a person has to answer an approval before it counts as a denial: a client
/// whose dialog was never shown must not hold a task forever.
const ANSWER_WAIT: Duration = Duration::from_secs(600);

/// One approval, as the session asks it.
#[derive(Debug, Clone)]
pub struct Question {
    /// One line naming the call.
    pub summary: String,
    /// Everything it will run or touch.
    pub display: String,
    /// Why it needs a person.
    pub reason: String,
    /// What "allow for this session" adds (`Bash(cargo*)`), when it can be given.
    pub always: Vec<String>,
    /// Only "allow once" or "deny" can answer it.
    pub once_only: bool,
}

/// What the person said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    AllowOnce,
    AllowSession,
    Deny,
}

/// The caller's side of a task's run.
#[async_trait]
pub trait Caller: Send + Sync {
    /// Whether approvals can be put to a person (else they are denied, as in `-p`).
    fn answers_approvals(&self) -> bool;
    /// Puts one approval to the person; a decline, a dismissal, a timeout or a failed
    /// request is a denial.
    async fn approve(&self, question: &Question) -> Answer;
    /// Tells the caller what the run is doing (nothing when it did not ask for progress).
    async fn progress(&self, message: &str);
}

/// The MCP client of one `tools/call`.
pub struct McpCaller {
    peer: Peer,
    /// The client declared `elicitation` at `initialize`.
    elicitation: bool,
    /// The call's `_meta.progressToken`, when it asked for progress.
    progress_token: Option<Value>,
    /// Progress must increase with each notification.
    sent: AtomicU32,
}

impl McpCaller {
    pub(super) fn new(peer: Peer, elicitation: bool, progress_token: Option<Value>) -> Arc<Self> {
        Arc::new(McpCaller {
            peer,
            elicitation,
            progress_token,
            sent: AtomicU32::new(0),
        })
    }
}

#[async_trait]
impl Caller for McpCaller {
    fn answers_approvals(&self) -> bool {
        self.elicitation
    }

    async fn approve(&self, question: &Question) -> Answer {
        let request = json!({
            "mode": "form",
            "message": message(question),
            "requestedSchema": answer_schema(question),
        });
        let asked = self.peer.request("elicitation/create", request);
        match tokio::time::timeout(ANSWER_WAIT, asked).await {
            Ok(Ok(Ok(result))) if result["action"] == "accept" => result["content"]["decision"]
                .as_str()
                .map_or(Answer::Deny, parse_answer),
            _ => Answer::Deny,
        }
    }

    async fn progress(&self, message: &str) {
        let Some(token) = self.progress_token.clone() else {
            return;
        };
        let n = self.sent.fetch_add(1, Ordering::Relaxed) + 1;
        self.peer.notify(
            "notifications/progress",
            json!({ "progressToken": token, "progress": n, "message": message }),
        );
    }
}

/// The question as the person reads it in their client.
fn message(question: &Question) -> String {
    let mut text = format!(
        "linggen asks to run: {}\nWhy it asks: {}\n\n{}",
        question.summary, question.reason, question.display
    );
    if !question.always.is_empty() && !question.once_only {
        text.push_str(&format!(
            "\n\n\"Allow for this task\" also allows: {}",
            question.always.join(", ")
        ));
    }
    text
}

/// One required choice: allow once, allow for this task (when it can be), deny; each
/// value with the title a client shows (the specification's titled single-select enum).
fn answer_schema(question: &Question) -> Value {
    let mut choices = vec![json!({"const": "allow_once", "title": "Allow once"})];
    if !question.once_only {
        choices.push(json!({"const": "allow_session", "title": "Allow for this task"}));
    }
    choices.push(json!({"const": "deny", "title": "Deny"}));
    json!({
        "type": "object",
        "properties": {
            "decision": { "type": "string", "title": "Decision", "oneOf": choices }
        },
        "required": ["decision"]
    })
}

fn parse_answer(decision: &str) -> Answer {
    match decision {
        "allow_once" => Answer::AllowOnce,
        "allow_session" => Answer::AllowSession,
        _ => Answer::Deny,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(once_only: bool) -> Question {
        Question {
            summary: "Bash cargo test".into(),
            display: "cargo test".into(),
            reason: "runs a command".into(),
            always: vec!["Bash(cargo test*)".into()],
            once_only,
        }
    }

    #[test]
    fn the_choices_are_what_the_call_can_be_answered_with() {
        let text = answer_schema(&question(false)).to_string();
        assert!(text.contains("allow_session"), "{text}");
        assert!(text.contains("\"decision\""), "{text}");
        let once = answer_schema(&question(true)).to_string();
        assert!(!once.contains("allow_session"), "{once}");
        assert_eq!(parse_answer("allow_once"), Answer::AllowOnce);
        assert_eq!(parse_answer("anything else"), Answer::Deny);
        assert!(message(&question(false)).contains("Bash(cargo test*)"));
    }
}
