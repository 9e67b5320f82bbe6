//! What the shell can offer in completion and accept as triggers: skills, custom triggers,
//! agents, models, sessions, themes, files. Built once at start and refreshed when it
//! changes (a skill file edited on disk, a new session); a keystroke only reads it.

use std::sync::{Arc, RwLock};

use rustyline::completion::Pair;

use super::commands::Command;
use super::complete::{self, Choice, CompletionContext, FileIndex};
use super::triggers::{Parsed, Registry};
use crate::agents::AgentSet;
use crate::skills::SkillSet;
use crate::sync::{read, write};
pub use crate::text::one_line;

/// The keys `/settings KEY VALUE` accepts, in completion order.
pub const SETTING_KEYS: &[&str] = &[
    "model",
    "max_iters",
    "permission_mode",
    "agent",
    "mode",
    "theme",
    "show_thinking",
];

#[derive(Default)]
pub struct Lists {
    /// Skills, their custom triggers and the agent names, as the parser needs them.
    pub registry: Registry,
    /// The agents with their descriptions, for `/agent` completion.
    pub agents: Vec<Choice>,
    pub models: Vec<Choice>,
    pub sessions: Vec<Choice>,
    pub themes: Vec<Choice>,
    pub setting_keys: Vec<Choice>,
    /// MCP servers' prompts, as `/mcp__SERVER__PROMPT` commands.
    pub prompts: Vec<Choice>,
}

/// Shared between the editor thread (completion) and the shell (updates).
#[derive(Clone)]
pub struct Catalog {
    pub lists: Arc<RwLock<Lists>>,
    pub files: FileIndex,
    pub busy: Arc<std::sync::atomic::AtomicBool>,
    /// Counts the changes of `lists`.
    changes: Arc<std::sync::atomic::AtomicU64>,
}

impl Catalog {
    pub fn new(files: FileIndex, busy: Arc<std::sync::atomic::AtomicBool>) -> Self {
        let lists = Lists {
            setting_keys: SETTING_KEYS.iter().map(|k| Choice::new(*k)).collect(),
            ..Lists::default()
        };
        Catalog {
            lists: Arc::new(RwLock::new(lists)),
            files,
            busy,
            changes: Arc::default(),
        }
    }

    /// Changes whenever what [`Catalog::candidates`] searches may have: the lists, whether
    /// a turn runs (it narrows the commands), and the file index's snapshot.
    pub fn version(&self) -> u64 {
        use std::sync::atomic::Ordering;
        let files = Arc::as_ptr(&self.files.snapshot()).cast::<u8>() as usize as u64;
        let changes = self.changes.load(Ordering::SeqCst);
        let busy = u64::from(self.busy.load(Ordering::Relaxed));
        files.rotate_left(17) ^ (changes << 1 | busy)
    }

    /// Takes the skills, custom triggers and agents from the current discovered sets.
    pub fn set_extensions(&self, skills: &SkillSet, agents: &AgentSet) {
        let registry = Registry::new(skills, agents.names());
        let choices = registry
            .agents
            .iter()
            .map(|name| match agents.get(name) {
                Some(spec) if !spec.description.is_empty() => {
                    Choice::described(name, one_line(&spec.description, 60))
                }
                _ => Choice::new(name),
            })
            .collect();
        self.update(|lists| {
            lists.registry = registry;
            lists.agents = choices;
        });
    }

    fn with_context<T>(&self, f: impl FnOnce(&CompletionContext) -> T) -> T {
        let lists = read(&self.lists);
        let ctx = CompletionContext {
            triggers: lists.registry.context(),
            busy: self.busy.load(std::sync::atomic::Ordering::Relaxed),
            agents: &lists.agents,
            models: &lists.models,
            sessions: &lists.sessions,
            themes: &lists.themes,
            setting_keys: &lists.setting_keys,
            prompts: &lists.prompts,
            files: Some(&self.files),
        };
        f(&ctx)
    }

    /// For the rustyline `Completer`.
    pub fn complete(&self, line: &str, pos: usize) -> (usize, Vec<Pair>) {
        self.with_context(|ctx| {
            let (start, candidates) = complete::complete(line, pos, ctx);
            let pairs = candidates
                .into_iter()
                .map(|c| Pair {
                    display: match (&c.hint, &c.description) {
                        (Some(h), Some(d)) => format!("{} {h}  — {d}", c.display),
                        (Some(h), None) => format!("{} {h}", c.display),
                        (None, Some(d)) => format!("{}  — {d}", c.display),
                        (None, None) => c.display,
                    },
                    replacement: c.replacement,
                })
                .collect();
            (start, pairs)
        })
    }

    /// The candidates themselves, for the popup under the line.
    pub fn candidates(&self, line: &str, pos: usize) -> (usize, Vec<complete::Candidate>) {
        self.with_context(|ctx| complete::complete(line, pos, ctx))
    }

    /// For the rustyline `Hinter`.
    pub fn hint(&self, line: &str, pos: usize) -> Option<String> {
        self.with_context(|ctx| complete::hint(line, pos, ctx))
    }

    /// Parses a submitted line.
    pub fn parse(&self, line: &str) -> Parsed {
        let lists = read(&self.lists);
        super::triggers::parse(line, &lists.registry.context())
    }

    pub fn update(&self, f: impl FnOnce(&mut Lists)) {
        let mut lists = write(&self.lists);
        f(&mut lists);
        self.changes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// `/help`: the command table, the skills and agents known now, then the triggers.
    pub fn help_lines(&self) -> Vec<String> {
        let lists = read(&self.lists);
        help_lines(&lists.registry)
    }
}

fn help_lines(registry: &Registry) -> Vec<String> {
    let mut lines = vec!["Commands:".to_string()];
    // One column for the usages; a usage longer than it puts its summary on the next line
    // at the same column, so every summary lines up.
    const COLUMN: usize = 24;
    for cmd in Command::ALL {
        let name = match cmd.argument_hint() {
            Some(hint) => format!("/{} {hint}", cmd.name()),
            None => format!("/{}", cmd.name()),
        };
        if name.chars().count() > COLUMN {
            lines.push(format!("  {name}"));
            lines.push(format!("  {:COLUMN$} {}", "", cmd.summary()));
        } else {
            lines.push(format!("  {name:<COLUMN$} {}", cmd.summary()));
        }
    }
    // A name a built-in takes is left out: typing it runs the built-in (start-up warned).
    let invocable = |command: bool| -> Vec<String> {
        registry
            .skills
            .iter()
            .filter(|s| s.user_invocable && s.command == command)
            .filter(|s| Command::from_name(&s.name).is_none())
            .map(|s| format!("/{}", s.name))
            .collect()
    };
    lines.push(String::new());
    for (label, names) in [
        ("Skills", invocable(false)),
        ("Custom commands", invocable(true)),
    ] {
        if !names.is_empty() {
            lines.push(format!(
                "{label}: {} (/skills describes them)",
                names.join(" ")
            ));
        }
    }
    if !registry.agents.is_empty() {
        let agents: Vec<String> = registry.agents.iter().map(|a| format!("@{a}")).collect();
        lines.push(format!(
            "Agents: {} (/agent describes them)",
            agents.join(" ")
        ));
    }
    lines.push(
        "Triggers: /command · /skill args · @agent message · @path/to/file attaches it · //text sends /text"
            .into(),
    );
    lines.push(
        "Keys: / or @ lists as you type (↑↓ Tab) · Tab completes · Esc interrupts · Shift+Tab permission mode · Ctrl+J or Alt+Enter newline · ↑ Ctrl+R history · Ctrl+C cancels/clears · Ctrl+D exits · !cmd runs a command"
            .into(),
    );
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repl::triggers::SkillInfo;

    /// Every command's summary starts in the same column, long usages included.
    #[test]
    fn help_summaries_line_up() {
        let lines = help_lines(&Registry::default());
        for cmd in Command::ALL {
            let line = lines
                .iter()
                .find(|l| l.ends_with(cmd.summary()))
                .unwrap_or_else(|| panic!("no line for /{}", cmd.name()));
            let column = line.chars().count() - cmd.summary().chars().count();
            assert_eq!(column, 27, "/{}: {line:?}", cmd.name());
        }
    }

    #[test]
    fn one_line_keeps_short_text_and_marks_what_was_cut() {
        assert_eq!(one_line("  fix it  ", 20), "fix it");
        assert_eq!(one_line("fix it\nand more", 20), "fix it…");
        assert_eq!(one_line("abcdefghij", 5), "abcd…");
        assert_eq!(one_line("", 5), "");
    }

    #[test]
    fn help_names_the_skills_and_agents_known_now() {
        let registry = Registry {
            skills: vec![
                SkillInfo {
                    name: "review".into(),
                    user_invocable: true,
                    ..SkillInfo::default()
                },
                SkillInfo {
                    name: "hidden".into(),
                    user_invocable: false,
                    ..SkillInfo::default()
                },
                SkillInfo {
                    name: "frontend:review".into(),
                    user_invocable: true,
                    command: true,
                    ..SkillInfo::default()
                },
                SkillInfo {
                    name: "clear".into(),
                    user_invocable: true,
                    command: true,
                    ..SkillInfo::default()
                },
            ],
            custom_triggers: Vec::new(),
            agents: vec!["ling".into(), "coder".into()],
        };
        let text = help_lines(&registry).join("\n");
        assert!(text.contains("Skills: /review (/skills"), "{text}");
        assert!(
            text.contains("Custom commands: /frontend:review (/skills"),
            "{text}"
        );
        assert!(!text.contains("hidden"), "{text}");
        assert!(text.contains("Agents: @ling @coder"), "{text}");
        assert!(text.contains("/runs"), "{text}");
    }
}
