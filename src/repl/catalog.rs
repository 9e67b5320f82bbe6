//! What the shell can offer in completion and accept as triggers: agents, models, sessions,
//! themes, files. Built once at start and refreshed when it changes (a new session, say);
//! a keystroke only reads it.

use std::sync::{Arc, RwLock};

use rustyline::completion::Pair;

use super::commands::Command;
use super::complete::{self, Choice, CompletionContext, FileIndex};
use super::triggers::TriggerContext;

/// The shipped agents. Agent files and their discovery arrive with the skills-and-agents
/// work; until then these are the names `@` and `/agent` know.
pub const AGENTS: &[&str] = &["ling", "coder"];

#[derive(Default)]
pub struct Lists {
    pub agents: Vec<String>,
    pub models: Vec<Choice>,
    pub sessions: Vec<Choice>,
    pub themes: Vec<Choice>,
    pub setting_keys: Vec<Choice>,
}

/// Shared between the editor thread (completion) and the shell (updates).
#[derive(Clone)]
pub struct Catalog {
    pub lists: Arc<RwLock<Lists>>,
    pub files: FileIndex,
    pub busy: Arc<std::sync::atomic::AtomicBool>,
}

impl Catalog {
    pub fn new(files: FileIndex, busy: Arc<std::sync::atomic::AtomicBool>) -> Self {
        let lists = Lists {
            agents: AGENTS.iter().map(|s| s.to_string()).collect(),
            setting_keys: ["model", "max_iters", "permission_mode"]
                .iter()
                .map(|k| Choice::new(*k))
                .collect(),
            ..Lists::default()
        };
        Catalog {
            lists: Arc::new(RwLock::new(lists)),
            files,
            busy,
        }
    }

    fn with_context<T>(&self, f: impl FnOnce(&CompletionContext) -> T) -> T {
        let lists = self.lists.read().unwrap_or_else(|p| p.into_inner());
        let ctx = CompletionContext {
            triggers: TriggerContext {
                agents: &lists.agents,
                ..TriggerContext::default()
            },
            busy: self.busy.load(std::sync::atomic::Ordering::Relaxed),
            models: &lists.models,
            sessions: &lists.sessions,
            themes: &lists.themes,
            setting_keys: &lists.setting_keys,
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

    /// For the rustyline `Hinter`.
    pub fn hint(&self, line: &str, pos: usize) -> Option<String> {
        self.with_context(|ctx| complete::hint(line, pos, ctx))
    }

    /// Parses a submitted line.
    pub fn parse(&self, line: &str) -> super::triggers::Parsed {
        let lists = self.lists.read().unwrap_or_else(|p| p.into_inner());
        let ctx = TriggerContext {
            agents: &lists.agents,
            ..TriggerContext::default()
        };
        super::triggers::parse(line, &ctx)
    }

    pub fn update(&self, f: impl FnOnce(&mut Lists)) {
        let mut lists = self.lists.write().unwrap_or_else(|p| p.into_inner());
        f(&mut lists);
    }
}

/// `/help`: the command table, then the triggers.
pub fn help_lines() -> Vec<String> {
    let mut lines = vec!["Commands:".to_string()];
    for cmd in Command::ALL {
        let name = match cmd.argument_hint() {
            Some(hint) => format!("/{} {hint}", cmd.name()),
            None => format!("/{}", cmd.name()),
        };
        lines.push(format!("  {name:<24} {}", cmd.summary()));
    }
    lines.push(String::new());
    lines.push(
        "Triggers: /command · @agent message · @path/to/file attaches it · //text sends /text"
            .into(),
    );
    lines.push(
        "Keys: Tab completes · Ctrl+J or Alt+Enter newline · Ctrl+R history · Ctrl+C cancels/clears · Ctrl+D exits"
            .into(),
    );
    lines
}
