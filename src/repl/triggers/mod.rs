//! The shell's side of the line grammar, which lives in the core
//! ([`crate::session::line`]): the shell's built-in commands as the grammar's [`Builtin`],
//! and the shorthand the shell, completion and the browser's hub use.

#[cfg(test)]
mod tests;

use crate::session::UserMessage;
use crate::session::line::{self, Builtin};
pub use crate::session::line::{
    CustomTrigger, Registry, SkillInfo, SkillTarget, TriggerContext, attached_files,
    attachment_candidates, into_message,
};
use crate::skills::SkillSet;

use super::commands::Command;

impl Builtin for Command {
    const ALL: &'static [Command] = Command::ALL;

    fn name(self) -> &'static str {
        Command::name(self)
    }
}

/// A line parsed against the shell's commands.
pub type Parsed = line::Parsed<Command>;

/// What a line typed in the shell means (see [`line::parse`]).
pub fn parse(input: &str, ctx: &TriggerContext<'_>) -> Parsed {
    line::parse(input, ctx)
}

/// A line from a frontend without commands of its own as the message it means, without its
/// attachments; [`line::message`] is the whole step, attachments included.
pub fn message_from(
    line: &str,
    from: &str,
    skills: &SkillSet,
    agents: Vec<String>,
) -> Result<UserMessage, String> {
    let registry = Registry::new(skills, agents);
    into_message(parse(line, &registry.context()), line, from)
}
