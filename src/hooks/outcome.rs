//! What the handlers of one event said, folded into one answer, by Claude Code's output
//! contract:
//!
//! - exit 0: stdout that is a JSON object is read (below); plain stdout is context for
//!   `UserPromptSubmit` and `SessionStart` and otherwise only kept for the audit trail;
//! - exit 2: a block, with stderr as the reason (who reads it depends on the event: the
//!   session decides);
//! - any other exit, a timeout, or a start failure: a non-blocking error, shown once.
//!
//! JSON fields: `continue: false` (+ `stopReason`) stops the turn; `systemMessage` is shown
//! to the person; `decision: "block"` + `reason` blocks; `hookSpecificOutput` carries
//! `permissionDecision` (`allow` / `deny` / `ask`, with `permissionDecisionReason`),
//! `updatedInput`, `additionalContext`, and for `PermissionRequest` a `decision` with
//! `behavior` (`allow` / `deny`) and `message`. When handlers disagree, deny wins over ask
//! over allow.

use serde_json::Value;

use super::HookEvent;

/// A decision about a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionDecision {
    Allow { reason: Option<String> },
    Ask { reason: Option<String> },
    Deny { reason: String },
}

impl PermissionDecision {
    fn rank(&self) -> u8 {
        match self {
            PermissionDecision::Allow { .. } => 0,
            PermissionDecision::Ask { .. } => 1,
            PermissionDecision::Deny { .. } => 2,
        }
    }
}

/// Everything the handlers of one event said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// Exit 2's stderr, or `decision: "block"`'s reason.
    pub block: Option<String>,
    /// `continue: false`: stop the turn, with this reason for the person.
    pub stop: Option<String>,
    pub permission: Option<PermissionDecision>,
    /// `updatedInput`: the tool's arguments to use instead (the last handler's).
    pub updated_input: Option<Value>,
    /// `additionalContext`, and plain stdout where it counts as context.
    pub context: Vec<String>,
    /// For the person: `systemMessage`s, non-blocking errors, timeouts.
    pub notices: Vec<String>,
}

/// How one handler ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    Exited {
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
    TimedOut,
    /// It could not start (the launcher refused, or the shell was missing).
    NotStarted(String),
}

impl Outcome {
    /// Adds what one handler (`command`) said.
    pub fn add(&mut self, event: HookEvent, command: &str, ended: &Ended) {
        match ended {
            Ended::TimedOut => self.notices.push(format!(
                "{} hook `{}` timed out and was stopped",
                event.name(),
                short(command)
            )),
            Ended::NotStarted(why) => self.notices.push(format!(
                "{} hook `{}` could not start: {why}",
                event.name(),
                short(command)
            )),
            Ended::Exited {
                code: Some(0),
                stdout,
                ..
            } => self.add_stdout(event, stdout),
            Ended::Exited {
                code: Some(2),
                stderr,
                ..
            } => {
                let reason = match stderr.trim() {
                    "" => format!("blocked by a {} hook (`{}`)", event.name(), short(command)),
                    reason => reason.to_string(),
                };
                self.add_block(reason);
            }
            Ended::Exited { code, stderr, .. } => {
                let status = code.map_or("was killed by a signal".to_string(), |c| {
                    format!("exited with {c}")
                });
                let detail = stderr
                    .trim()
                    .lines()
                    .next()
                    .map(|l| format!(": {l}"))
                    .unwrap_or_default();
                self.notices.push(format!(
                    "{} hook `{}` {status}{detail}",
                    event.name(),
                    short(command)
                ));
            }
        }
    }

    fn add_block(&mut self, reason: String) {
        self.block = Some(match self.block.take() {
            Some(earlier) => format!("{earlier}\n{reason}"),
            None => reason,
        });
    }

    fn add_stdout(&mut self, event: HookEvent, stdout: &str) {
        let trimmed = stdout.trim();
        if trimmed.is_empty() {
            return;
        }
        match serde_json::from_str::<Value>(trimmed) {
            Ok(Value::Object(json)) => self.add_json(event, &Value::Object(json)),
            _ if matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart) => {
                self.context.push(trimmed.to_string())
            }
            _ => {}
        }
    }

    fn add_json(&mut self, event: HookEvent, json: &Value) {
        if json["continue"] == Value::Bool(false) {
            let reason = json["stopReason"]
                .as_str()
                .unwrap_or("a hook stopped the turn");
            self.stop = Some(reason.to_string());
        }
        if let Some(message) = json["systemMessage"].as_str() {
            self.notices.push(message.to_string());
        }
        let reason = json["reason"].as_str().map(str::to_string);
        match json["decision"].as_str() {
            Some("block") => {
                let reason = reason
                    .clone()
                    .unwrap_or_else(|| format!("blocked by a {} hook", event.name()));
                match event {
                    // Claude Code's older PreToolUse spelling.
                    HookEvent::PreToolUse => self.decide(PermissionDecision::Deny { reason }),
                    _ => self.add_block(reason),
                }
            }
            Some("approve") if event == HookEvent::PreToolUse => {
                self.decide(PermissionDecision::Allow {
                    reason: reason.clone(),
                })
            }
            _ => {}
        }
        let specific = &json["hookSpecificOutput"];
        if let Some(context) = specific["additionalContext"]
            .as_str()
            .filter(|c| !c.trim().is_empty())
        {
            self.context.push(context.trim().to_string());
        }
        if let Some(input) = specific.get("updatedInput").filter(|v| v.is_object()) {
            self.updated_input = Some(input.clone());
        }
        let reason = specific["permissionDecisionReason"]
            .as_str()
            .map(str::to_string);
        match specific["permissionDecision"].as_str() {
            Some("allow") => self.decide(PermissionDecision::Allow { reason }),
            Some("ask") => self.decide(PermissionDecision::Ask { reason }),
            Some("deny") => self.decide(PermissionDecision::Deny {
                reason: reason.unwrap_or_else(|| "denied by a PreToolUse hook".into()),
            }),
            _ => {}
        }
        let decision = &specific["decision"];
        let message = decision["message"].as_str().map(str::to_string);
        match decision["behavior"].as_str() {
            Some("allow") => {
                if let Some(input) = decision.get("updatedInput").filter(|v| v.is_object()) {
                    self.updated_input = Some(input.clone());
                }
                self.decide(PermissionDecision::Allow { reason: message })
            }
            Some("deny") => self.decide(PermissionDecision::Deny {
                reason: message.unwrap_or_else(|| "denied by a PermissionRequest hook".into()),
            }),
            _ => {}
        }
    }

    /// Keeps the strongest decision: deny over ask over allow.
    fn decide(&mut self, decision: PermissionDecision) {
        if self
            .permission
            .as_ref()
            .is_none_or(|d| decision.rank() > d.rank())
        {
            self.permission = Some(decision);
        }
    }

    /// The context as one block for the model, if any.
    pub fn context_text(&self) -> Option<String> {
        (!self.context.is_empty()).then(|| self.context.join("\n\n"))
    }
}

/// A command as a notice names it: its first line, at most 60 characters.
pub fn short(command: &str) -> String {
    let line = command.trim().lines().next().unwrap_or_default();
    match line.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(code: i32, stdout: &str, stderr: &str) -> Ended {
        Ended::Exited {
            code: Some(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn exit_codes_follow_claude_codes_contract() {
        let mut o = Outcome::default();
        o.add(
            HookEvent::PreToolUse,
            "check",
            &exited(2, "", "rm is not allowed\n"),
        );
        assert_eq!(o.block.as_deref(), Some("rm is not allowed"));
        let mut o = Outcome::default();
        o.add(HookEvent::PreToolUse, "check", &exited(1, "", "oops\nmore"));
        assert_eq!(o.block, None);
        assert_eq!(
            o.notices,
            vec!["PreToolUse hook `check` exited with 1: oops".to_string()]
        );
        let mut o = Outcome::default();
        o.add(
            HookEvent::UserPromptSubmit,
            "ctx",
            &exited(0, "the time is 5\n", ""),
        );
        assert_eq!(o.context_text().as_deref(), Some("the time is 5"));
        let mut o = Outcome::default();
        o.add(HookEvent::PostToolUse, "fmt", &exited(0, "formatted\n", ""));
        assert_eq!(o, Outcome::default(), "plain stdout is not context here");
        let mut o = Outcome::default();
        o.add(HookEvent::Stop, "slow", &Ended::TimedOut);
        assert!(o.notices[0].contains("timed out"));
    }

    #[test]
    fn json_output_is_read_and_deny_wins_over_ask_over_allow() {
        let allow = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "allow", "updatedInput": {"command": "ls -la"}}}"#;
        let ask = r#"{"hookSpecificOutput": {"permissionDecision": "ask",
            "permissionDecisionReason": "check this"}, "systemMessage": "careful"}"#;
        let deny = r#"{"hookSpecificOutput": {"permissionDecision": "deny",
            "permissionDecisionReason": "no"}}"#;
        let mut o = Outcome::default();
        o.add(HookEvent::PreToolUse, "a", &exited(0, allow, ""));
        assert!(matches!(
            o.permission,
            Some(PermissionDecision::Allow { .. })
        ));
        assert_eq!(
            o.updated_input,
            Some(serde_json::json!({"command": "ls -la"}))
        );
        o.add(HookEvent::PreToolUse, "b", &exited(0, ask, ""));
        assert_eq!(
            o.permission,
            Some(PermissionDecision::Ask {
                reason: Some("check this".into())
            })
        );
        o.add(HookEvent::PreToolUse, "c", &exited(0, deny, ""));
        o.add(HookEvent::PreToolUse, "a", &exited(0, allow, ""));
        assert_eq!(
            o.permission,
            Some(PermissionDecision::Deny {
                reason: "no".into()
            })
        );
        assert_eq!(o.notices, vec!["careful".to_string()]);

        let mut o = Outcome::default();
        let stop = r#"{"decision": "block", "reason": "run the tests first"}"#;
        o.add(HookEvent::Stop, "s", &exited(0, stop, ""));
        assert_eq!(o.block.as_deref(), Some("run the tests first"));
        let mut o = Outcome::default();
        o.add(
            HookEvent::PostToolUse,
            "s",
            &exited(0, r#"{"continue": false, "stopReason": "enough"}"#, ""),
        );
        assert_eq!(o.stop.as_deref(), Some("enough"));
        let mut o = Outcome::default();
        let request = r#"{"hookSpecificOutput": {"hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "not on main"}}}"#;
        o.add(HookEvent::PermissionRequest, "p", &exited(0, request, ""));
        assert_eq!(
            o.permission,
            Some(PermissionDecision::Deny {
                reason: "not on main".into()
            })
        );
    }
}
