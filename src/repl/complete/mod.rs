//! Tab completion, as a pure function of the line, the cursor and a snapshot of what can be
//! offered. The rustyline `Completer` calls [`complete`] and the `Hinter` calls [`hint`];
//! neither ever walks the filesystem (files come from the cached [`FileIndex`]).
//!
//! What is offered where (see `doc/triggers.md`):
//! - first word `/…`: built-in commands valid in the current state, then user-invocable
//!   skills, each with its argument hint;
//! - second word after a built-in: that command's argument (agents, models, sessions, …);
//! - first word `@…`: agents and skill targets, then workspace files;
//! - `@…` anywhere else: workspace files;
//! - first word that starts a custom trigger: the trigger.

mod files;
mod fuzzy;
#[cfg(test)]
mod tests;

pub use files::{DEFAULT_MAX_AGE, DEFAULT_MAX_FILES, FileIndex, IndexedFile};

use super::commands::{ArgumentKind, Command, SHARE_OPTIONS, TURN_MODES};
use super::triggers::{SkillInfo, TriggerContext};
use crate::config::PermissionMode;

/// How many files one Tab lists; more scroll past the prompt and nobody reads them.
pub const MAX_FILE_CANDIDATES: usize = 50;

/// One completion. `replacement` replaces the text from the returned start to the cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub replacement: String,
    /// What the menu shows (`/model`).
    pub display: String,
    /// The argument shape, to be shown dimmed after `display` (`<id>`).
    pub hint: Option<String>,
    /// One line saying what it is (a command's summary, `agent`, a session's title).
    pub description: Option<String>,
}

/// A value a built-in's argument can take, with an optional line describing it (a session's
/// title, a model's provider).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub value: String,
    pub description: Option<String>,
}

impl Choice {
    pub fn new(value: impl Into<String>) -> Self {
        Choice {
            value: value.into(),
            description: None,
        }
    }

    pub fn described(value: impl Into<String>, description: impl Into<String>) -> Self {
        Choice {
            value: value.into(),
            description: Some(description.into()),
        }
    }
}

/// Everything completion may offer, supplied by the caller for each keystroke (all
/// borrowed, so building one costs nothing).
#[derive(Debug, Clone, Copy, Default)]
pub struct CompletionContext<'a> {
    pub triggers: TriggerContext<'a>,
    /// A turn is running: only commands available while busy are offered.
    pub busy: bool,
    /// The agents with descriptions for `/agent`; when empty, the bare names in `triggers`.
    pub agents: &'a [Choice],
    pub models: &'a [Choice],
    pub sessions: &'a [Choice],
    pub themes: &'a [Choice],
    pub setting_keys: &'a [Choice],
    /// MCP servers' prompts (`mcp__SERVER__PROMPT`), offered after `/`.
    pub prompts: &'a [Choice],
    pub files: Option<&'a FileIndex>,
}

/// The candidates for the word that ends at `pos` (a byte offset into `line`), and the
/// byte offset where that word starts. Only the text before the cursor is considered, as
/// rustyline replaces `start..pos`.
pub fn complete(line: &str, pos: usize, ctx: &CompletionContext<'_>) -> (usize, Vec<Candidate>) {
    let before = &line[..floor_char_boundary(line, pos)];
    let start = word_start(before);
    let word = &before[start..];
    let leading = &before[..start];
    let candidates = if leading.trim().is_empty() {
        first_word(word, ctx)
    } else if let Some(command) = argument_of(leading) {
        arguments(command, word, ctx)
    } else if let Some(query) = word.strip_prefix('@') {
        files(query, ctx)
    } else {
        Vec::new()
    };
    (start, candidates)
}

/// The dim text to show after the cursor: the argument shape once a command or skill name
/// is complete (`/model` → ` <id>`, `/model ` → `<id>`). Only at the end of the line.
pub fn hint(line: &str, pos: usize, ctx: &CompletionContext<'_>) -> Option<String> {
    if pos != line.len() || line.contains('\n') {
        return None;
    }
    let typed = line.trim_start().strip_prefix('/')?;
    let name = typed.trim_end_matches(' ');
    // `/` alone: what can follow, Tab for the whole list with descriptions.
    if typed.is_empty() {
        let names: Vec<&str> = Command::ALL.iter().take(8).map(|c| c.name()).collect();
        return Some(format!("{} …  (Tab lists every command)", names.join(" ")));
    }
    if name.is_empty() || name.contains(char::is_whitespace) || typed.len() > name.len() + 1 {
        return None;
    }
    let shape = match Command::from_name(name) {
        Some(command) => command.argument_hint().map(str::to_string),
        None => ctx
            .triggers
            .skills
            .iter()
            .find(|s| s.user_invocable && s.name == name)
            .and_then(|s| s.argument_hint.clone()),
    }?;
    let gap = if typed.ends_with(' ') { "" } else { " " };
    Some(format!("{gap}{shape}"))
}

/// The largest char boundary at or before `pos`, so a stray offset never panics.
fn floor_char_boundary(line: &str, pos: usize) -> usize {
    let mut pos = pos.min(line.len());
    while !line.is_char_boundary(pos) {
        pos -= 1;
    }
    pos
}

/// Byte offset just after the last whitespace before the cursor.
fn word_start(before: &str) -> usize {
    before
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8())
}

/// The built-in whose first argument is being typed: `leading` is exactly `/name ` on the
/// first line.
fn argument_of(leading: &str) -> Option<Command> {
    let leading = leading.trim_start();
    if leading.contains('\n') {
        return None;
    }
    let mut words = leading.split_whitespace();
    let name = words.next()?.strip_prefix('/')?;
    if words.next().is_some() {
        return None;
    }
    Command::from_name(name)
}

fn first_word(word: &str, ctx: &CompletionContext<'_>) -> Vec<Candidate> {
    if let Some(name) = word.strip_prefix('/') {
        // `//x` is the escape for a literal slash and `/usr/…` a path: nothing to offer.
        if name.contains('/') {
            return Vec::new();
        }
        return slash(name, ctx);
    }
    if let Some(query) = word.strip_prefix('@') {
        let mut found = mentions(query, ctx);
        found.extend(files(query, ctx));
        return found;
    }
    custom_triggers(word, ctx)
}

/// A name `/` can complete.
#[derive(Clone, Copy)]
enum SlashName<'a> {
    Builtin(Command),
    Skill(&'a SkillInfo),
    Prompt(&'a Choice),
}

impl SlashName<'_> {
    fn name(&self) -> &str {
        match self {
            SlashName::Builtin(command) => command.name(),
            SlashName::Skill(skill) => &skill.name,
            SlashName::Prompt(prompt) => &prompt.value,
        }
    }
}

/// Commands valid now, then user-invocable skills a built-in does not shadow. Filtered as
/// one list, so a skill matching by prefix is not drowned by a command matching only as a
/// subsequence (`/la` is `/late`, not `/late` or `/clear`).
fn slash(name: &str, ctx: &CompletionContext<'_>) -> Vec<Candidate> {
    let commands = Command::available(ctx.busy).map(SlashName::Builtin);
    let skills = ctx
        .triggers
        .skills
        .iter()
        .filter(|s| s.user_invocable && Command::from_name(&s.name).is_none())
        .map(SlashName::Skill);
    let prompts = ctx.prompts.iter().map(SlashName::Prompt);
    fuzzy::filter_names(name, commands.chain(skills).chain(prompts), |n| n.name())
        .into_iter()
        .map(|found| match found {
            SlashName::Builtin(command) => slash_candidate(
                command.name(),
                command.argument_hint(),
                Some(command.summary()),
            ),
            SlashName::Skill(skill) => {
                let description = (!skill.description.is_empty()).then_some(&*skill.description);
                slash_candidate(&skill.name, skill.argument_hint.as_deref(), description)
            }
            SlashName::Prompt(prompt) => {
                slash_candidate(&prompt.value, Some("[args]"), prompt.description.as_deref())
            }
        })
        .collect()
}

/// A trailing space when an argument follows, so the person can type it straight away.
fn slash_candidate(name: &str, hint: Option<&str>, description: Option<&str>) -> Candidate {
    let space = if hint.is_some() { " " } else { "" };
    Candidate {
        replacement: format!("/{name}{space}"),
        display: format!("/{name}"),
        hint: hint.map(str::to_string),
        description: description.map(str::to_string),
    }
}

/// Agents, then names skills registered as `@` targets, filtered as one list.
fn mentions(query: &str, ctx: &CompletionContext<'_>) -> Vec<Candidate> {
    let agents = ctx.triggers.agents.iter().map(|a| (a.as_str(), None));
    let targets = ctx
        .triggers
        .skill_targets
        .iter()
        .map(|t| (t.target.as_str(), Some(t.skill.as_str())));
    fuzzy::filter_names(query, agents.chain(targets), |(name, _)| name)
        .into_iter()
        .map(|(name, skill)| match skill {
            None => mention_candidate(name, "agent".to_string()),
            Some(skill) => mention_candidate(name, format!("skill {skill}")),
        })
        .collect()
}

fn mention_candidate(name: &str, description: String) -> Candidate {
    Candidate {
        replacement: format!("@{name} "),
        display: format!("@{name}"),
        hint: None,
        description: Some(description),
    }
}

/// Workspace files from the cache; on the very first `@` the cache may still be filling,
/// in which case there are none yet rather than a stalled keystroke.
fn files(query: &str, ctx: &CompletionContext<'_>) -> Vec<Candidate> {
    let Some(index) = ctx.files else {
        return Vec::new();
    };
    let snapshot = index.snapshot();
    fuzzy::best_files(query, &snapshot, MAX_FILE_CANDIDATES)
        .into_iter()
        .map(|path| Candidate {
            replacement: format!("@{path} "),
            display: format!("@{path}"),
            hint: None,
            description: None,
        })
        .collect()
}

/// Custom triggers the word begins to type (`!` offers `!` and `!!`).
fn custom_triggers(word: &str, ctx: &CompletionContext<'_>) -> Vec<Candidate> {
    if word.is_empty() {
        return Vec::new();
    }
    ctx.triggers
        .custom_triggers
        .iter()
        .filter(|t| !t.prefix.is_empty() && t.prefix.starts_with(word))
        .map(|t| Candidate {
            replacement: t.prefix.clone(),
            display: t.prefix.clone(),
            hint: None,
            description: Some(format!("skill {}", t.skill)),
        })
        .collect()
}

/// The first argument of a built-in, unless the command cannot run in this state.
fn arguments(command: Command, word: &str, ctx: &CompletionContext<'_>) -> Vec<Candidate> {
    if ctx.busy && !command.available_while_busy() {
        return Vec::new();
    }
    let agent_choices: Vec<Choice>;
    let fixed: Vec<Choice>;
    let choices: &[Choice] = match command.argument_kind() {
        ArgumentKind::None => return Vec::new(),
        ArgumentKind::SettingKey => ctx.setting_keys,
        ArgumentKind::ModelId => ctx.models,
        ArgumentKind::SessionId => ctx.sessions,
        ArgumentKind::ThemeName => ctx.themes,
        ArgumentKind::AgentName if !ctx.agents.is_empty() => ctx.agents,
        ArgumentKind::AgentName => {
            agent_choices = ctx.triggers.agents.iter().map(Choice::new).collect();
            &agent_choices
        }
        ArgumentKind::TurnMode => {
            fixed = TURN_MODES.iter().copied().map(Choice::new).collect();
            &fixed
        }
        ArgumentKind::PermissionMode => {
            fixed = permission_modes().map(Choice::new).collect();
            &fixed
        }
        ArgumentKind::ShareOption => {
            fixed = SHARE_OPTIONS.iter().copied().map(Choice::new).collect();
            &fixed
        }
    };
    // A setting key is followed by its value; every other argument ends the command.
    let space = if command.argument_kind() == ArgumentKind::SettingKey {
        " "
    } else {
        ""
    };
    fuzzy::filter_names(word, choices.iter(), |c| c.value.as_str())
        .into_iter()
        .map(|choice| Candidate {
            replacement: format!("{}{space}", choice.value),
            display: choice.value.clone(),
            hint: None,
            description: choice.description.clone(),
        })
        .collect()
}

fn permission_modes() -> impl Iterator<Item = &'static str> {
    [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::Bypass,
    ]
    .into_iter()
    .map(PermissionMode::as_str)
}
