//! Tools whose work needs the session rather than the filesystem: `Skill` loads a skill's
//! instructions, `delegate_to_agent` starts a child run, `lock_paths`/`unlock_paths` manage
//! advisory workspace locks, `TodoWrite` publishes the agent's todo list (`todo`). Their
//! arguments are parsed here like every other tool's; the session carries them out (see
//! `session::tool_call`).

use serde_json::{Value, json};

use super::{ToolName, ToolOutput, args};
use crate::protocol::ToolSpec;

/// Default lifetime of a lock when the call gives none: long enough for an edit-and-test
/// cycle, short enough that a forgotten lock does not block the workspace for long.
pub const DEFAULT_LOCK_TTL_MS: u64 = 10 * 60 * 1000;
/// Longest lock a call may ask for.
pub const MAX_LOCK_TTL_MS: u64 = 60 * 60 * 1000;

/// A parsed call of one of the session's tools.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionCall {
    Skill {
        name: String,
        args: String,
    },
    /// `background`: the call returns at once and the child's answer arrives later as a
    /// message in the session's conversation.
    Delegate {
        target: String,
        task: String,
        background: bool,
    },
    Lock {
        globs: Vec<String>,
        ttl_ms: u64,
    },
    Unlock {
        tokens: Vec<String>,
    },
    Todos {
        todos: Vec<super::todo::Todo>,
    },
}

impl SessionCall {
    pub fn parse(tool: ToolName, a: &Value) -> Result<(SessionCall, String), ToolOutput> {
        match tool {
            ToolName::Skill => {
                let name = args::required_string(
                    a,
                    &["skill", "name", "skill_name", "command"],
                    ToolName::Skill.name(),
                    r#"{"skill": "review", "args": "HEAD~1"}"#,
                )?;
                // Models sometimes write the skill as the person would: `/review`.
                let name = name.trim().trim_start_matches('/').to_string();
                let args = args::string(a, &["args", "arguments", "input"])?.unwrap_or_default();
                let summary = if args.is_empty() {
                    format!("Skill {name}")
                } else {
                    format!("Skill {name} {args}")
                };
                Ok((SessionCall::Skill { name, args }, summary))
            }
            ToolName::Delegate => {
                let example =
                    r#"{"target_agent_id": "coder", "task": "fix the failing test in src/lib.rs"}"#;
                let target = args::required_string(
                    a,
                    args::keys::AGENT,
                    ToolName::Delegate.name(),
                    example,
                )?;
                let task =
                    args::required_string(a, args::keys::TASK, ToolName::Delegate.name(), example)?;
                let background =
                    args::boolean(a, &["background", "run_in_background"])?.unwrap_or(false);
                let how = if background { " (background)" } else { "" };
                let summary = format!("delegate to {target}{how}: {}", first_line(&task));
                let call = SessionCall::Delegate {
                    target,
                    task,
                    background,
                };
                Ok((call, summary))
            }
            ToolName::LockPaths => {
                let globs = args::string_list(a, &["globs", "paths", "patterns", "glob"])?
                    .filter(|g| !g.is_empty())
                    .ok_or_else(|| {
                        args::missing(
                            "globs",
                            ToolName::LockPaths.name(),
                            r#"{"globs": ["src/lib.rs"]}"#,
                        )
                    })?;
                let ttl_ms = args::uint(a, &["ttl_ms", "ttl"])?
                    .unwrap_or(DEFAULT_LOCK_TTL_MS)
                    .clamp(1, MAX_LOCK_TTL_MS);
                let summary = format!("lock {}", globs.join(", "));
                Ok((SessionCall::Lock { globs, ttl_ms }, summary))
            }
            ToolName::UnlockPaths => {
                let tokens = args::string_list(a, &["tokens", "token"])?
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| {
                        args::missing(
                            "tokens",
                            ToolName::UnlockPaths.name(),
                            r#"{"tokens": ["lk-…"]}"#,
                        )
                    })?;
                let summary = format!("unlock {} lock(s)", tokens.len());
                Ok((SessionCall::Unlock { tokens }, summary))
            }
            ToolName::TodoWrite => {
                let (todos, summary) = super::todo::parse(a)?;
                Ok((SessionCall::Todos { todos }, summary))
            }
            other => Err(ToolOutput::error(format!(
                "`{other}` is not a session tool"
            ))),
        }
    }
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default();
    if line.chars().count() > 80 {
        let cut: String = line.chars().take(79).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

/// The `Skill` tool, its description carrying the catalog of model-visible skills (names
/// and descriptions only: bodies load when invoked).
pub fn skill_spec(catalog: &str) -> ToolSpec {
    ToolSpec {
        name: ToolName::Skill.name().into(),
        description: format!(
            "Load a skill's instructions and follow them when a task matches one:\n{catalog}"
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "skill": {"type": "string", "description": "Exact skill name."},
                "args": {"type": "string"}
            },
            "required": ["skill"]
        }),
    }
}

/// `delegate_to_agent`, listing the agents this one may hand tasks to.
pub fn delegate_spec(targets: &[(String, String)]) -> ToolSpec {
    let list: Vec<String> = targets
        .iter()
        .map(|(name, description)| format!("- {name}: {description}"))
        .collect();
    ToolSpec {
        name: ToolName::Delegate.name().into(),
        description: format!(
            "Hand a self-contained task to an agent; it starts fresh (give every detail) and its answer comes back. Agents:\n{}",
            list.join("\n")
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "target_agent_id": {"type": "string"},
                "task": {"type": "string"},
                "background": {"type": "boolean"}
            },
            "required": ["target_agent_id", "task"]
        }),
    }
}

pub fn lock_spec() -> ToolSpec {
    ToolSpec {
        name: ToolName::LockPaths.name().into(),
        description: "Lock files (globs) so other runs cannot write them; returns tokens.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "globs": {"type": "array", "items": {"type": "string"}},
                "ttl_ms": {"type": "integer"}
            },
            "required": ["globs"]
        }),
    }
}

pub fn unlock_spec() -> ToolSpec {
    ToolSpec {
        name: ToolName::UnlockPaths.name().into(),
        description: "Release locks taken with lock_paths.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"tokens": {"type": "array", "items": {"type": "string"}}},
            "required": ["tokens"]
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_with_aliases_and_clear_errors() {
        let (call, summary) =
            SessionCall::parse(ToolName::Skill, &json!({"name": "/review", "args": "HEAD"}))
                .unwrap();
        assert_eq!(
            call,
            SessionCall::Skill {
                name: "review".into(),
                args: "HEAD".into()
            }
        );
        assert_eq!(summary, "Skill review HEAD");
        let (call, _) = SessionCall::parse(
            ToolName::Delegate,
            &json!({"agent": "coder", "task": "fix it"}),
        )
        .unwrap();
        assert_eq!(
            call,
            SessionCall::Delegate {
                target: "coder".into(),
                task: "fix it".into(),
                background: false,
            }
        );
        let (call, summary) = SessionCall::parse(
            ToolName::Delegate,
            &json!({"subagent_type": "coder", "prompt": "fix it", "run_in_background": true}),
        )
        .unwrap();
        assert!(matches!(
            call,
            SessionCall::Delegate {
                background: true,
                ..
            }
        ));
        assert_eq!(summary, "delegate to coder (background): fix it");
        let err = SessionCall::parse(ToolName::Delegate, &json!({"task": "x"})).unwrap_err();
        assert!(err.model.contains("target_agent_id"), "{}", err.model);
        let (call, _) =
            SessionCall::parse(ToolName::LockPaths, &json!({"globs": "src/*.rs"})).unwrap();
        assert_eq!(
            call,
            SessionCall::Lock {
                globs: vec!["src/*.rs".into()],
                ttl_ms: DEFAULT_LOCK_TTL_MS
            }
        );
        let err = SessionCall::parse(ToolName::UnlockPaths, &json!({})).unwrap_err();
        assert!(err.model.contains("tokens"));
    }
}
