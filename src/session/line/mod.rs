//! The line grammar: what a line a person typed or posted means — a frontend's built-in
//! command, a skill, a message for another agent, a custom trigger, or plain text for the
//! model — and the one step from that meaning to a [`UserMessage`](super::UserMessage) with
//! its `@file` attachments ([`message`]). The terminal, `-p` and the browser all go through
//! it, so a line means the same wherever it is typed. Only the person's raw input is parsed
//! here, never the model's output, so a model cannot trigger anything by echoing `/clear`.
//! The grammar, order and escapes are documented in `doc/triggers.md`.
//!
//! The parser is pure: the registries (skills, agents, triggers) come in as a snapshot
//! ([`TriggerContext`]), the built-in commands as a type ([`Builtin`]), and file existence
//! is checked only when a message is built, which keeps every rule testable without a
//! filesystem.

mod mentions;
mod message;
mod pasted;
pub(crate) mod suggest;
#[cfg(test)]
mod tests;

pub use mentions::{
    ATTACHMENT_MAX_BYTES, attached_and_noted, attached_files, attached_files_as_tools,
    attached_images, attachment_candidates,
};
pub use message::{
    LineError, Registry, attach, attach_blocking, builtin_clashes, into_message, mentions_of,
    message,
};
pub use pasted::pasted_image_paths;

/// A frontend's built-in commands (the shell's `/help`, `/clear`, ...). The grammar only
/// needs to recognise their names; what they do is the frontend's business. Frontends
/// without commands of their own (`-p`, the browser) use the shell's, so that `/clear`
/// there is refused with a hint instead of reaching the model as text.
pub trait Builtin: Copy + std::fmt::Debug + PartialEq + 'static {
    /// Every command, in display order (suggestions prefer earlier ones); the first is the
    /// help that `/` alone runs.
    const ALL: &'static [Self];
    /// The name typed after the slash.
    fn name(self) -> &'static str;
}

/// A skill as the trigger parser and completion need to know it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SkillInfo {
    pub name: String,
    /// One line for completion and `/help`.
    pub description: String,
    /// Shape of the arguments, shown as a dim hint (`<environment>`).
    pub argument_hint: Option<String>,
    /// Whether the person may call it as `/name`; model-only skills are not.
    pub user_invocable: bool,
    /// A custom command (`.claude/commands/x.md`) rather than a `SKILL.md` skill: listed
    /// apart in `/help`.
    pub command: bool,
}

/// A prefix a skill declared (`trigger: "!!"`): input starting with it goes to the skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomTrigger {
    pub prefix: String,
    pub skill: String,
}

/// A name a skill registered for `@name` mentions, as if it were an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillTarget {
    pub target: String,
    pub skill: String,
}

/// A snapshot of the registries the parser consults. Borrowed so that parsing a line
/// allocates nothing up front; the registry fills it.
#[derive(Debug, Clone, Copy, Default)]
pub struct TriggerContext<'a> {
    pub skills: &'a [SkillInfo],
    pub agents: &'a [String],
    pub custom_triggers: &'a [CustomTrigger],
    pub skill_targets: &'a [SkillTarget],
}

/// The meaning of one input line (which may span several lines; the first decides).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed<C> {
    /// Nothing but whitespace: do nothing.
    Empty,
    /// A built-in command; `args` is the trimmed rest of the input.
    Command { command: C, args: String },
    /// `/name args`, or `@target args` for a skill registered for that target.
    Skill { name: String, args: String },
    /// `/name` that is neither a command nor a user-invocable skill. Never sent to the
    /// model; `suggestions` holds the closest names, slash included, best first.
    UnknownCommand {
        name: String,
        suggestions: Vec<String>,
    },
    /// `@agent message`: the message goes to that agent. An empty message is allowed (the
    /// caller may treat it as switching to the agent).
    AgentMessage {
        agent: String,
        message: String,
        attachments: Vec<String>,
    },
    /// Input starting with a skill's custom trigger; `rest` is what follows the prefix.
    CustomTrigger {
        skill: String,
        trigger: String,
        rest: String,
    },
    /// Plain text for the model. `attachments` are the `@path` candidates, in order of
    /// appearance; the caller keeps those naming an existing file in the workspace.
    Message {
        text: String,
        attachments: Vec<String>,
    },
}

impl<C> Parsed<C> {
    /// The line to show the person when the input cannot be carried out, with what to do.
    pub fn error_message(&self) -> Option<String> {
        let Parsed::UnknownCommand { name, suggestions } = self else {
            return None;
        };
        let hint = match suggestions.as_slice() {
            [] => String::new(),
            [one] => format!(" Did you mean {one}?"),
            many => format!(" Did you mean one of {}?", many.join(", ")),
        };
        Some(format!(
            "Unknown command /{name}.{hint} Type /help for the list, or start with // to send a message that begins with /."
        ))
    }
}

/// Decide what the input means. Order: slash (built-ins, then skills), `@agent` and skill
/// targets, custom triggers (longest prefix wins), then plain text. Leading whitespace and
/// blank lines are ignored for the decision.
pub fn parse<C: Builtin>(input: &str, ctx: &TriggerContext<'_>) -> Parsed<C> {
    let text = input.trim();
    if text.is_empty() {
        return Parsed::Empty;
    }
    if let Some(after_slash) = text.strip_prefix('/') {
        return parse_slash(text, after_slash, ctx);
    }
    if let Some(parsed) = mentions::parse_agent_mention(text, ctx) {
        return parsed;
    }
    if let Some(parsed) = parse_custom_trigger(text, ctx) {
        return parsed;
    }
    plain(text)
}

/// `/…`: a built-in, a skill, an escape, a path, or an unknown command.
fn parse_slash<C: Builtin>(text: &str, after_slash: &str, ctx: &TriggerContext<'_>) -> Parsed<C> {
    // `//x` is the escape for a message that must start with a slash.
    if after_slash.starts_with('/') {
        return plain(after_slash);
    }
    let name_end = after_slash
        .find(char::is_whitespace)
        .unwrap_or(after_slash.len());
    let (name, rest) = after_slash.split_at(name_end);
    let args = rest.trim().to_string();
    // `/` alone asks what is available: the first command is the frontend's help.
    if name.is_empty()
        && let Some(&command) = C::ALL.first()
    {
        return Parsed::Command { command, args };
    }
    // A first word with a second slash is a path (`/usr/bin/ls is broken`), not a command.
    if name.contains('/') {
        return plain(text);
    }
    if let Some(&command) = C::ALL.iter().find(|c| c.name() == name) {
        return Parsed::Command { command, args };
    }
    if ctx
        .skills
        .iter()
        .any(|skill| skill.user_invocable && skill.name == name)
    {
        return Parsed::Skill {
            name: name.to_string(),
            args,
        };
    }
    Parsed::UnknownCommand {
        name: name.to_string(),
        suggestions: suggest::closest_names::<C>(name, ctx),
    }
}

/// The custom trigger with the longest prefix that starts the input, if any. Longest wins so
/// that `!!` still works when another skill claims `!`; between equal prefixes the one
/// registered first wins (reversed because `max_by_key` keeps the last maximum).
fn parse_custom_trigger<C>(text: &str, ctx: &TriggerContext<'_>) -> Option<Parsed<C>> {
    let trigger = ctx
        .custom_triggers
        .iter()
        .rev()
        .filter(|t| !t.prefix.is_empty() && text.starts_with(&t.prefix))
        .max_by_key(|t| t.prefix.len())?;
    Some(Parsed::CustomTrigger {
        skill: trigger.skill.clone(),
        trigger: trigger.prefix.clone(),
        rest: text[trigger.prefix.len()..].trim().to_string(),
    })
}

fn plain<C>(text: &str) -> Parsed<C> {
    Parsed::Message {
        text: text.to_string(),
        attachments: attachment_candidates(text),
    }
}
