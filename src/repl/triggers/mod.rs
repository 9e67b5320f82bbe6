//! The shell's side of the line grammar, which lives in the core
//! ([`crate::session::line`]): the shell's built-in commands as the grammar's [`Builtin`],
//! and the shorthand the shell, completion and the browser's hub use.

#[cfg(test)]
mod tests;

use crate::session::line::{self, Builtin};
pub use crate::session::line::{
    CustomTrigger, Registry, SkillInfo, SkillTarget, TriggerContext, attached_files,
    attachment_candidates, into_message,
};

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
