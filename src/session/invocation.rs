//! Skills and custom commands inside a session (see `doc/skills.md`, `doc/commands.md`):
//! the message an invocation becomes — the body with its arguments and variables
//! substituted, each `` !`cmd` `` and `` ```! `` block replaced by what it printed
//! (`shell_lines`), and for a command the files its `@path` mentions name attached. It is
//! made once the run it is for has started, since the `!` lines are that run's calls.

use super::run::{self, RunCtx, RunEnd};
use super::tool_call::Caller;
use super::{Conversation, TurnShared, line, lock, shell_lines};
use crate::llm::{ChatMessage, Image};
use crate::skills::{Skill, SkillKind, SkillSource};

/// Who invoked a skill or command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum InvokedBy {
    Person,
    /// The model, for its own run (the body joins it).
    Model,
    /// The model, for a child run (`context: fork`).
    ModelForChild,
}

impl InvokedBy {
    /// How the message names who invoked it.
    fn subject(self) -> &'static str {
        match self {
            InvokedBy::Person => "The user",
            InvokedBy::Model => "You",
            InvokedBy::ModelForChild => "The user's agent",
        }
    }

    /// Who makes the calls of its `!` lines.
    fn caller(self) -> Caller {
        match self {
            InvokedBy::Person => Caller::Person,
            InvokedBy::Model | InvokedBy::ModelForChild => Caller::Loaded,
        }
    }
}

/// A skill or command invoked, whose message is still to be made.
pub(super) struct Invocation {
    name: String,
    by: InvokedBy,
    /// How the message begins: who invoked what, and to follow it.
    preamble: String,
    /// The body with the arguments and variables substituted; its `!` lines not yet run.
    body: String,
    /// After the body: where a skill's own files are.
    footer: String,
    /// A command's `@path` mentions that the arguments do not already attach.
    mentions: Vec<String>,
    /// A project command's mentions are read as the model's `Read` would (secret stores
    /// refused); the person's own command reads what they could attach themselves.
    from_project: bool,
    /// What the message already carries after the body: piped stdin, the arguments'
    /// files, the prompt hooks' context.
    attached: String,
    /// Images the person attached to the invocation (`/review @shot.png`).
    images: Vec<Image>,
}

impl Invocation {
    /// `skill` invoked with `args`.
    pub(super) fn of(skill: &Skill, args: &str, by: InvokedBy, session_id: &str) -> Invocation {
        let body = skill.render_for(args, session_id);
        let subject = by.subject();
        let (preamble, footer, mentions) = match skill.kind {
            SkillKind::Command => {
                let preamble = format!(
                    "{subject} ran the command `/{}`. Follow its instructions:\n\n",
                    skill.name
                );
                (preamble, String::new(), mentions(&body, args))
            }
            SkillKind::Skill => {
                let preamble = format!(
                    "{subject} invoked the skill `{}`. Follow its instructions:\n\n",
                    skill.name
                );
                let footer = skill.dir.as_ref().map_or_else(String::new, |dir| {
                    format!("\n\n(The skill's files are in {}.)", dir.display())
                });
                (preamble, footer, Vec::new())
            }
        };
        Invocation {
            name: skill.name.clone(),
            by,
            preamble,
            body,
            footer,
            mentions,
            from_project: skill.source == SkillSource::Project,
            attached: String::new(),
            images: Vec::new(),
        }
    }

    /// What goes after the body: piped stdin, the arguments' files, hooks' context.
    pub(super) fn attach(&mut self, text: &str) {
        self.attached.push_str(text);
    }

    /// The invocation's images go with the message it becomes.
    pub(super) fn with_images(mut self, images: &[Image]) -> Invocation {
        self.images = images.to_vec();
        self
    }

    /// The message's text: the `!` lines run as calls of `ctx`'s run, the mentioned files
    /// read.
    pub(super) async fn text(
        &self,
        shared: &TurnShared,
        ctx: &mut RunCtx,
        conv: &mut Conversation,
        changed: &mut Vec<String>,
    ) -> String {
        let files = attachments(shared, conv, self).await;
        let lines = shell_lines::Lines {
            name: &self.name,
            caller: self.by.caller(),
        };
        let body = shell_lines::expand(shared, ctx, conv, lines, &self.body, changed).await;
        format!(
            "{}{body}{}{files}{}",
            self.preamble, self.footer, self.attached
        )
    }

    /// The turn's run for the invocation: announced, then its message made (the `!` lines
    /// run as its calls), then sent to the model like any other.
    pub(super) async fn run(
        self,
        shared: &TurnShared,
        ctx: &mut RunCtx,
        conv: &mut Conversation,
        label: String,
        from: &str,
        changed: &mut Vec<String>,
    ) -> RunEnd {
        run::announce(shared, ctx, label);
        // Cancellable by id while its `!` lines run, as it will be once the model works.
        lock(&shared.runs).insert(ctx.id.clone(), ctx.cancel.clone());
        let content = self.text(shared, ctx, conv, changed).await;
        let message = ChatMessage::user(content).with_images(self.images);
        run::run_announced(shared, ctx, conv, message, from, changed).await
    }
}

/// A command body's `@path` mentions, outside its `!` lines, that `args` does not already
/// name (the frontend attached those).
fn mentions(body: &str, args: &str) -> Vec<String> {
    let given = line::attachment_candidates(args);
    line::attachment_candidates(&shell_lines::prose(body))
        .into_iter()
        .filter(|m| !given.contains(m))
        .collect()
}

/// The files the body's mentions name, as fenced blocks cut to the model's window.
async fn attachments(shared: &TurnShared, conv: &Conversation, invocation: &Invocation) -> String {
    if invocation.mentions.is_empty() {
        return String::new();
    }
    let (tools, mentions) = (shared.tools.clone(), invocation.mentions.clone());
    let from_project = invocation.from_project;
    let files = tokio::task::spawn_blocking(move || match from_project {
        true => line::attached_files_as_tools(&tools, &mentions),
        false => line::attached_files(&tools.root, &mentions),
    })
    .await
    // Only a panic while reading fails the task; the message then goes without the files.
    .unwrap_or_default();
    super::fit::attachments(shared, conv, &files).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(body: &str, source: SkillSource) -> Skill {
        crate::skills::commands::parse(body, "fix".into(), "fix.md".into(), source).unwrap()
    }

    #[test]
    fn a_commands_mentions_come_from_its_body_and_a_skill_attaches_none() {
        let fix = command(
            "Fix $ARGUMENTS, see @docs/a.md and @$2\n!`git log @{u}`",
            SkillSource::Project,
        );
        let mut invocation = Invocation::of(&fix, "@src/y.rs src/x.rs", InvokedBy::Person, "s1");
        invocation.attach("\n\npiped");
        assert_eq!(
            invocation.body,
            "Fix @src/y.rs src/x.rs, see @docs/a.md and @src/x.rs\n!`git log @{u}`"
        );
        assert_eq!(
            invocation.preamble,
            "The user ran the command `/fix`. Follow its instructions:\n\n"
        );
        // `src/y.rs` is the person's own mention, which the frontend attached already.
        assert_eq!(invocation.mentions, ["docs/a.md", "src/x.rs"]);
        assert!(invocation.from_project);
        assert_eq!(invocation.attached, "\n\npiped");
        let skill = Skill {
            kind: SkillKind::Skill,
            dir: Some("/skills/fix".into()),
            ..fix
        };
        let invocation = Invocation::of(&skill, "@src/y.rs", InvokedBy::Model, "s1");
        assert!(invocation.mentions.is_empty());
        assert_eq!(
            invocation.preamble,
            "You invoked the skill `fix`. Follow its instructions:\n\n"
        );
        assert_eq!(
            invocation.footer,
            "\n\n(The skill's files are in /skills/fix.)"
        );
        let mine = command("x", SkillSource::Claude);
        assert!(!Invocation::of(&mine, "", InvokedBy::Person, "s1").from_project);
    }
}
