//! `/hooks`: every hook found, grouped by event, with where it came from, its timeout, and
//! whether it runs here (a project's waits for trust).

use super::Workspace;
use crate::hooks::{HookEvent, HookSet, Scope};

/// The lines `/hooks` prints.
pub fn hook_lines(ws: &Workspace) -> Vec<String> {
    let hooks = &ws.hooks;
    let mut lines = Vec::new();
    if hooks.is_empty() {
        lines.push(
            "No hooks. linggen reads Claude Code's `hooks` from ~/.claude/settings.json, \
             .claude/settings.json, .claude/settings.local.json, $LINGGEN_HOME/settings.json \
             and .linggen/settings.json (doc/hooks.md)."
                .into(),
        );
    }
    for event in HookEvent::ALL {
        let found: Vec<_> = hooks.handlers().filter(|(g, _)| g.event == event).collect();
        if found.is_empty() {
            continue;
        }
        lines.push(event.name().to_string());
        for (group, handler) in found {
            let matcher = match group.matcher.source() {
                "" => String::new(),
                m => format!("[{m}] "),
            };
            let state = match handler.scope {
                Scope::Project
                    if !ws
                        .trust
                        .trust
                        .is_accepted(&HookSet::grant(group, handler, &ws.root)) =>
                {
                    " — waits for trust (`linggen trust`)"
                }
                Scope::Project => " — trusted, runs in the sandbox",
                Scope::User if ws.config.hooks_unconfined => " — yours, runs unconfined",
                Scope::User => " — yours, runs in the sandbox",
            };
            lines.push(format!(
                "  {matcher}{}  ({}, {}s){state}",
                crate::text::one_line(&handler.command, 80),
                place(ws, &handler.file),
                handler.timeout.as_secs_f64()
            ));
        }
    }
    for warning in &hooks.warnings {
        lines.push(format!("warning: {warning}"));
    }
    lines
}

/// A settings file as the person knows it: `~/…` for their home, relative in the root.
fn place(ws: &Workspace, file: &std::path::Path) -> String {
    if let Ok(rel) = file.strip_prefix(&ws.root) {
        return rel.display().to_string();
    }
    match std::env::var_os("HOME").map(std::path::PathBuf::from) {
        Some(home) if file.starts_with(&home) => {
            format!("~/{}", file.strip_prefix(&home).unwrap_or(file).display())
        }
        _ => file.display().to_string(),
    }
}
