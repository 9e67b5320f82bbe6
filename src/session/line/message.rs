//! The parser's view of what exists: skills (with their custom triggers) and agents, built
//! from the discovered sets, and the one step from a parsed line to a session message with
//! its attachments, shared by the shell, `-p` and the browser.

use std::path::{Path, PathBuf};

use super::{Builtin, CustomTrigger, Parsed, SkillInfo, TriggerContext};
use crate::session::{SkillInvocation, UserMessage};
use crate::skills::{SkillKind, SkillSet};

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
                command: s.kind == SkillKind::Command,
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

/// One warning per skill or command the person could invoke whose name is one of the
/// built-in commands `C`: the built-in always wins (the grammar reads it first), so without
/// the warning the file would be unreachable without a word.
pub fn builtin_clashes<C: Builtin>(skills: &SkillSet) -> Vec<String> {
    skills
        .user_visible()
        .filter(|s| C::ALL.iter().any(|c| c.name() == s.name))
        .map(|s| {
            let (what, rename) = match s.kind {
                SkillKind::Command => ("command", "rename this file"),
                SkillKind::Skill => ("skill", "rename this skill's folder"),
            };
            format!(
                "{}: /{} is a built-in command, which wins over this {what}; {rename} to use it",
                s.path, s.name
            )
        })
        .collect()
}

/// Why a posted line is not a message the session can take; each says what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("the task is empty")]
    Empty,
    #[error(
        "/{0} is a command of the interactive shell; run `linggen` for it, or start the task \
         with // to send it as text"
    )]
    ShellCommand(&'static str),
    /// An unknown `/name`; the message carries the suggestions.
    #[error("{0}")]
    UnknownCommand(String),
    #[error("@{0} needs a message: `@{0} fix the failing test`")]
    AgentWithoutMessage(String),
    /// An attached image that cannot be sent.
    #[error(transparent)]
    Image(#[from] crate::protocol::ImageFileError),
}

/// A line from a frontend without commands of its own (`-p`, the browser) as the message it
/// means, parsed against the current skills and agents exactly like a line typed in the
/// shell (`C`: the shell's commands, which are refused here), with its `@file` mentions
/// attached from `root`. Reads files: run it off the async runtime (`spawn_blocking`).
pub fn message<C: Builtin>(
    line: &str,
    from: &str,
    skills: &SkillSet,
    agents: Vec<String>,
    root: &Path,
) -> Result<UserMessage, LineError> {
    let registry = Registry::new(skills, agents);
    let mut msg = into_message(super::parse::<C>(line, &registry.context()), line, from)?;
    attach_blocking(root, &mut msg)?;
    Ok(msg)
}

/// The `@path` mentions of a message: in a skill's arguments for a skill (its instructions
/// are not the person's words), otherwise in the text for the model.
pub fn mentions_of(msg: &UserMessage) -> Vec<String> {
    match &msg.skill {
        Some(skill) => super::attachment_candidates(&skill.args),
        None => super::attachment_candidates(&msg.content),
    }
}

/// Appends the files the message mentions to what it already carries (piped stdin, say).
/// An `Err` names an image that cannot be sent (too large); the message is not sent then.
pub fn attach_blocking(root: &Path, msg: &mut UserMessage) -> Result<(), LineError> {
    let mentions = mentions_of(msg);
    let files = super::attached_files(root, &mentions);
    msg.attached.push_str(&files);
    msg.images.extend(super::attached_images(root, &mentions)?);
    Ok(())
}

/// [`attach_blocking`] with the files read on the blocking pool, so a large or slow file
/// never stalls the runtime. Returns a line per mention for the person (see
/// [`super::attached_and_noted`]).
pub async fn attach(root: PathBuf, msg: &mut UserMessage) -> Result<Vec<String>, LineError> {
    let mentions = mentions_of(msg);
    if mentions.is_empty() {
        return Ok(Vec::new());
    }
    let read = tokio::task::spawn_blocking(move || {
        let images = super::attached_images(&root, &mentions);
        let (files, notes) = super::attached_and_noted(&root, &mentions);
        (files, images, notes)
    })
    .await;
    // Only a panic while reading fails the task; the message then goes without files.
    let (files, images, notes) =
        read.unwrap_or_else(|_| (String::new(), Ok(Vec::new()), Vec::new()));
    msg.attached.push_str(&files);
    msg.images.extend(images?);
    Ok(notes)
}

/// The session message a parsed line becomes, without attachments (see [`attach`]). A
/// built-in command is the frontend's to run: here it is an error that says where it runs;
/// an unknown command is an error with suggestions.
pub fn into_message<C: Builtin>(
    parsed: Parsed<C>,
    raw: &str,
    from: &str,
) -> Result<UserMessage, LineError> {
    let mut msg = UserMessage::new(raw.trim(), from);
    match parsed {
        Parsed::Empty => return Err(LineError::Empty),
        Parsed::Command { command, .. } => {
            return Err(LineError::ShellCommand(command.name()));
        }
        unknown @ Parsed::UnknownCommand { .. } => {
            return Err(LineError::UnknownCommand(
                unknown.error_message().unwrap_or_default(),
            ));
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
                return Err(LineError::AgentWithoutMessage(agent));
            }
            msg.agent = Some(agent);
            msg.content = message;
        }
        Parsed::Message { text, .. } => msg.content = text,
    }
    Ok(msg)
}
