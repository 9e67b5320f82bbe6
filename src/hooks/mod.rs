//! Lifecycle hooks in Claude Code's format, read as they are: the `hooks` of
//! `~/.claude/settings.json`, `.claude/settings.json`, `.claude/settings.local.json`, and
//! linggen's own `$LINGGEN_HOME/settings.json` and `.linggen/settings.json` (same format).
//!
//! - [`settings`] reads the files into [`HookSet`] (a broken file is a warning naming its
//!   line; the others still load);
//! - [`matcher`] decides which groups an event reaches, as Claude Code does;
//! - [`input`] writes what a handler reads on stdin, with Claude Code's tool names and
//!   argument names, and the transcript file;
//! - [`runner`] starts handlers through the launcher, in parallel, each with its timeout;
//! - [`outcome`] folds their exit codes and JSON into one [`Outcome`].
//!
//! A project's hooks run programs, so each is a trust grant ([`HookSet::project_grants`]);
//! the session gets only the trusted ones ([`HookSet::trusted`]). Nothing here lifts the
//! safety floor: the session decides what an `allow` may skip (doc/hooks.md).

pub mod input;
pub mod matcher;
pub mod outcome;
pub mod runner;
pub mod settings;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use matcher::Matcher;
pub use outcome::{Outcome, PermissionDecision};
pub use runner::{Fired, HookRun, Runner, RunnerSetup};

/// When a hook runs. The names are Claude Code's, as written in settings files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    SessionStart,
    SessionEnd,
    UserPromptSubmit,
    PreToolUse,
    PermissionRequest,
    PostToolUse,
    PostToolUseFailure,
    Notification,
    Stop,
    SubagentStop,
    PreCompact,
    PostCompact,
}

impl HookEvent {
    pub const ALL: [HookEvent; 12] = [
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PermissionRequest,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::Notification,
        HookEvent::Stop,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
        HookEvent::PostCompact,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::Notification => "Notification",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::PostCompact => "PostCompact",
        }
    }

    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Whether Claude Code matches this event's groups against something (a tool name, a
    /// notification type, a source); the others run every group whatever its matcher.
    pub fn has_matcher(self) -> bool {
        !matches!(
            self,
            HookEvent::UserPromptSubmit | HookEvent::Stop | HookEvent::SubagentStop
        )
    }
}

/// Whose file a hook came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The person's own (`~/.claude/settings.json`, `$LINGGEN_HOME/settings.json`).
    User,
    /// The workspace's (`.claude/settings*.json`, `.linggen/settings.json`): a trust grant.
    Project,
}

/// Claude Code's default timeout for a command hook.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// One command to run for an event.
#[derive(Debug, Clone, PartialEq)]
pub struct Handler {
    pub command: String,
    pub timeout: Duration,
    pub file: PathBuf,
    pub scope: Scope,
}

/// A matcher and the commands it runs, as one entry of a settings file's event list.
#[derive(Debug, Clone)]
pub struct Group {
    pub event: HookEvent,
    pub matcher: Matcher,
    pub handlers: Vec<Handler>,
}

/// Every hook found, in the order the files were read.
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    pub groups: Vec<Group>,
    /// Files that could not be read or entries that were skipped, one line each.
    pub warnings: Vec<String>,
}

impl HookSet {
    /// Reads every place hooks are kept (see the module docs). `user_home` is `$HOME`.
    pub fn load(user_home: Option<&Path>, linggen_home: &Path, root: &Path) -> HookSet {
        let mut set = HookSet::default();
        for (path, scope) in settings::places(user_home, linggen_home, root) {
            settings::read_into(&path, scope, &mut set);
        }
        set
    }

    pub fn is_empty(&self) -> bool {
        self.groups.iter().all(|g| g.handlers.is_empty())
    }

    /// The trust grant line of a project handler: the event, the matcher and the command,
    /// so `linggen trust` shows exactly what would run.
    pub fn grant(group: &Group, handler: &Handler, root: &Path) -> String {
        let file = crate::config::trust::relative(root, &handler.file);
        let matcher = match group.matcher.source() {
            "" => String::new(),
            m => format!(" [{m}]"),
        };
        format!(
            "hook {}{matcher}: runs `{}` ({file})",
            group.event.name(),
            handler.command.trim()
        )
    }

    /// The grants of every project handler.
    pub fn project_grants(&self, root: &Path) -> Vec<String> {
        self.handlers()
            .filter(|(_, h)| h.scope == Scope::Project)
            .map(|(g, h)| HookSet::grant(g, h, root))
            .collect()
    }

    /// Every (group, handler) pair.
    pub fn handlers(&self) -> impl Iterator<Item = (&Group, &Handler)> {
        self.groups
            .iter()
            .flat_map(|g| g.handlers.iter().map(move |h| (g, h)))
    }

    /// The hooks that may run: the person's own, and the project's whose grant line
    /// `accepted` holds. The second value lists the grants held back.
    pub fn trusted(&self, root: &Path, accepted: impl Fn(&str) -> bool) -> (HookSet, Vec<String>) {
        let mut withheld = Vec::new();
        let groups = self
            .groups
            .iter()
            .map(|g| {
                let handlers = g
                    .handlers
                    .iter()
                    .filter(|h| {
                        if h.scope == Scope::User {
                            return true;
                        }
                        let grant = HookSet::grant(g, h, root);
                        let ok = accepted(&grant);
                        if !ok {
                            withheld.push(grant);
                        }
                        ok
                    })
                    .cloned()
                    .collect();
                Group {
                    event: g.event,
                    matcher: g.matcher.clone(),
                    handlers,
                }
            })
            .filter(|g: &Group| !g.handlers.is_empty())
            .collect();
        let set = HookSet {
            groups,
            warnings: self.warnings.clone(),
        };
        (set, withheld)
    }

    /// The handlers an event reaches: every group of the event whose matcher accepts
    /// `query` (a tool name, a notification type, a source), each command once.
    pub fn matching(&self, event: HookEvent, query: &[&str]) -> Vec<Handler> {
        let mut found: Vec<Handler> = Vec::new();
        for group in self.groups.iter().filter(|g| g.event == event) {
            if event.has_matcher() && !query.iter().any(|q| group.matcher.accepts(q)) {
                continue;
            }
            for handler in &group.handlers {
                // Claude Code runs an identical command once per event.
                if !found.iter().any(|f| f.command == handler.command) {
                    found.push(handler.clone());
                }
            }
        }
        found
    }

    /// Whether any handler listens for `event` (the session skips building inputs else).
    pub fn listens(&self, event: HookEvent) -> bool {
        self.groups.iter().any(|g| g.event == event)
    }
}

#[cfg(test)]
mod tests;
