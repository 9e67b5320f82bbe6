//! The parser's view of what exists: skills (with their custom triggers) and agents, built
//! from the discovered sets, and the step from a parsed line to a session message that the
//! shell and `-p` share.

use super::{CustomTrigger, Parsed, SkillInfo, TriggerContext};
use crate::session::{SkillInvocation, UserMessage};
use crate::skills::SkillSet;

/// Owned lists a [`TriggerContext`] borrows from.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    pub skills: Vec<SkillInfo>,
    pub custom_triggers: Vec<CustomTrigger>,
    pub agents: Vec<String>,
}

impl Registry {
    pub fn new(skills: &SkillSet, agents: Vec<String>) -> Registry {
        let infos = skills
            .skills
            .iter()
            .map(|s| SkillInfo {
                name: s.name.clone(),
                description: s.description.clone(),
                argument_hint: s.argument_hint.clone(),
                user_invocable: s.user_invocable,
            })
            .collect();
        let custom_triggers = skills
            .user_visible()
            .filter_map(|s| {
                let prefix = s.trigger.as_deref()?.trim();
                (!prefix.is_empty()).then(|| CustomTrigger {
                    prefix: prefix.to_string(),
                    skill: s.name.clone(),
                })
            })
            .collect();
        Registry {
            skills: infos,
            custom_triggers,
            agents,
        }
    }

    pub fn context(&self) -> TriggerContext<'_> {
        TriggerContext {
            skills: &self.skills,
            agents: &self.agents,
            custom_triggers: &self.custom_triggers,
            skill_targets: &[],
        }
    }
}

/// A line from a frontend without commands of its own (`-p`, the browser) as the message it
/// means, parsed against the current skills and agents exactly like a line typed in the shell.
pub fn message_from(
    line: &str,
    from: &str,
    skills: &SkillSet,
    agents: Vec<String>,
) -> Result<UserMessage, String> {
    let registry = Registry::new(skills, agents);
    into_message(super::parse(line, &registry.context()), line, from)
}

/// The session message a parsed line becomes, for frontends without commands of their own
/// (`-p`). Built-in commands and unknown ones are errors that say what to do instead.
pub fn into_message(parsed: Parsed, raw: &str, from: &str) -> Result<UserMessage, String> {
    let mut msg = UserMessage::new(raw.trim(), from);
    match parsed {
        Parsed::Empty => return Err("the task is empty".into()),
        Parsed::Command { command, .. } => {
            return Err(format!(
                "/{} is a command of the interactive shell; run `linggen` for it, or start the task with // to send it as text",
                command.name()
            ));
        }
        unknown @ Parsed::UnknownCommand { .. } => {
            return Err(unknown.error_message().unwrap_or_default());
        }
        Parsed::Skill { name, args } => msg.skill = Some(SkillInvocation { name, args }),
        Parsed::CustomTrigger { skill, rest, .. } => {
            msg.skill = Some(SkillInvocation {
                name: skill,
                args: rest,
            })
        }
        Parsed::AgentMessage { agent, message, .. } => {
            if message.trim().is_empty() {
                return Err(format!(
                    "@{agent} needs a message: `@{agent} fix the failing test`"
                ));
            }
            msg.agent = Some(agent);
            msg.content = message;
        }
        Parsed::Message { text, .. } => msg.content = text,
    }
    Ok(msg)
}
