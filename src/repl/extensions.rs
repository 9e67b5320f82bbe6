//! Skills and agents as the shell shows them: followed live (a `SKILL.md` or agent file
//! added, edited or removed while the shell runs changes completion and parsing within about
//! a second), listed by `/skills` and `/agent`, with the files that were skipped.

use std::collections::HashSet;

use tokio::sync::watch;

use super::catalog::{Catalog, one_line};
use super::shell::Shell;
use crate::agents::AgentSet;
use crate::app::Workspace;
use crate::skills::{Skill, SkillKind, SkillSet};

/// Descriptions in `/skills` and `/agent` are cut to this many characters.
const DESCRIPTION_CHARS: usize = 70;

/// The reload signals of the workspace's skill and agent sets, and the warnings shown so far
/// (each skipped file is reported once, not on every reload).
pub(super) struct Extensions {
    pub skills: watch::Receiver<u64>,
    pub agents: watch::Receiver<u64>,
    shown: HashSet<String>,
    /// The agents as last seen, to name each one a reload added, changed or removed.
    seen_agents: std::sync::Arc<AgentSet>,
}

impl Extensions {
    /// The warnings present now were printed at start-up and count as shown.
    fn new(ws: &Workspace) -> Extensions {
        Extensions {
            skills: ws.skills.subscribe(),
            agents: ws.agents.subscribe(),
            shown: ws.extension_warnings().into_iter().collect(),
            seen_agents: ws.agents.get(),
        }
    }

    /// Subscribes, then starts following the skill and agent files. Returns the problems
    /// with watching (shown by the caller; the sets then stay as discovered).
    pub fn start(ws: &Workspace) -> (Extensions, Vec<String>) {
        let extensions = Extensions::new(ws);
        // Watching re-reads the sets once the watches hold (off this path), so a file
        // written during start-up arrives like any other reload.
        let problems = ws.watch_extensions();
        (extensions, problems)
    }

    /// The warnings not shown before; they are shown from now on.
    fn fresh(&mut self, warnings: Vec<String>) -> Vec<String> {
        warnings
            .into_iter()
            .filter(|w| self.shown.insert(w.clone()))
            .collect()
    }
}

/// Fills the catalog from the workspace's current sets.
pub(super) fn fill(catalog: &Catalog, ws: &Workspace) {
    catalog.set_extensions(&ws.skills.get(), &ws.agents.get());
}

impl Shell {
    /// A set was re-read from disk: refresh completion and parsing, show new warnings.
    pub fn extensions_changed(&mut self) {
        fill(&self.catalog, &self.ws);
        // One line per agent the disk changed (an editor, the web page's Agents panel).
        let agents = self.ws.agents.get();
        let changes = agents.changes_since(&self.extensions.seen_agents);
        self.extensions.seen_agents = agents;
        if !changes.is_empty() {
            self.view.lines(changes);
        }
        for warning in self.extensions.fresh(self.ws.extension_warnings()) {
            self.view.warning(&warning);
        }
    }

    /// `/skills`.
    pub fn skills(&mut self) {
        let lines = skill_lines(&self.ws.skills.get());
        self.view.lines(lines);
    }
}

/// `/skills`: every skill with its argument shape, description, where it comes from and who
/// may invoke it, then the files that were skipped.
pub fn skill_lines(set: &SkillSet) -> Vec<String> {
    if set.skills.is_empty() && set.warnings.is_empty() {
        return vec![
            "No skills. Add one as .linggen/skills/NAME/SKILL.md in the project, or in \
             $LINGGEN_HOME/skills/NAME/; or a command as .claude/commands/NAME.md."
                .into(),
        ];
    }
    let heads: Vec<String> = set.skills.iter().map(skill_head).collect();
    let width = heads.iter().map(|h| h.chars().count()).max().unwrap_or(0);
    let mut lines = vec![format!("Skills ({}):", set.skills.len())];
    for (skill, head) in set.skills.iter().zip(heads) {
        let pad = width.saturating_sub(head.chars().count());
        let mut tags = vec![skill.source.label()];
        if skill.kind == SkillKind::Command {
            // Only the person runs a command; "user-only" would say it twice.
            tags.push("command");
        } else {
            if !skill.user_invocable {
                tags.push("model-only");
            }
            if skill.disable_model_invocation {
                tags.push("user-only");
            }
        }
        lines.push(format!(
            "  {head}{}  {} ({})",
            " ".repeat(pad),
            one_line(&skill.description, DESCRIPTION_CHARS),
            tags.join(", ")
        ));
    }
    if !set.warnings.is_empty() {
        lines.push("Skipped:".into());
        lines.extend(set.warnings.iter().map(|w| format!("  ⚠ {w}")));
    }
    lines.push(
        "/NAME ARGS runs a skill or command · model-only: only the model invokes it · user-only: \
         only you do · command: a command file (doc/commands.md)"
            .into(),
    );
    lines
}

/// `/name <hint>` for skills the person may invoke, the bare name for model-only ones.
fn skill_head(skill: &Skill) -> String {
    let slash = if skill.user_invocable { "/" } else { "" };
    match &skill.argument_hint {
        Some(hint) => format!("{slash}{} {hint}", skill.name),
        None => format!("{slash}{}", skill.name),
    }
}

/// `/agent`: the current agent and every agent with its description.
pub fn agent_lines(set: &AgentSet, current: &str) -> Vec<String> {
    let width = set
        .agents
        .iter()
        .map(|a| a.name.chars().count())
        .max()
        .unwrap_or(0);
    let mut lines = vec![format!("agent: {current}")];
    for agent in &set.agents {
        let mark = if agent.name == current { "*" } else { " " };
        let pad = width.saturating_sub(agent.name.chars().count());
        lines.push(format!(
            "{mark} {}{}  — {} ({})",
            agent.name,
            " ".repeat(pad),
            one_line(&agent.description, DESCRIPTION_CHARS),
            agent.source.label()
        ));
    }
    lines.extend(set.warnings.iter().map(|w| format!("  ⚠ {w}")));
    lines.push("/agent NAME switches · @NAME message sends one message to it".into());
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::SkillSource;

    fn skill(name: &str, hint: Option<&str>, user: bool, model: bool) -> Skill {
        Skill {
            name: name.into(),
            description: format!("the {name} skill\nsecond line"),
            argument_hint: hint.map(str::to_string),
            disable_model_invocation: !model,
            user_invocable: user,
            allowed_tools: Vec::new(),
            model: None,
            fork: false,
            agent: None,
            trigger: None,
            body: String::new(),
            dir: None,
            path: format!("built-in skills/{name}/SKILL.md"),
            source: SkillSource::Project,
            kind: crate::skills::SkillKind::Skill,
            extra: Default::default(),
        }
    }

    #[test]
    fn skills_are_listed_with_hints_sources_and_who_may_invoke_them() {
        let set = SkillSet {
            skills: vec![
                skill("deploy", Some("<env>"), true, true),
                skill("internal", None, false, true),
                skill("mine", None, true, false),
                Skill {
                    kind: SkillKind::Command,
                    ..skill("fe:review", None, true, false)
                },
            ],
            warnings: vec!["x/SKILL.md:2: bad".into()],
        };
        let lines = skill_lines(&set);
        assert_eq!(lines[0], "Skills (4):");
        assert_eq!(lines[1], "  /deploy <env>  the deploy skill… (project)");
        assert_eq!(
            lines[2],
            "  internal       the internal skill… (project, model-only)"
        );
        assert_eq!(
            lines[3],
            "  /mine          the mine skill… (project, user-only)"
        );
        assert_eq!(
            lines[4],
            "  /fe:review     the fe:review skill… (project, command)"
        );
        assert_eq!(lines[5], "Skipped:");
        assert_eq!(lines[6], "  ⚠ x/SKILL.md:2: bad");
    }

    #[test]
    fn no_skills_says_where_to_add_one() {
        let lines = skill_lines(&SkillSet::default());
        assert!(lines[0].contains("SKILL.md"), "{lines:?}");
    }

    #[test]
    fn each_warning_is_fresh_once() {
        let mut ext = Extensions {
            skills: watch::channel(0).1,
            agents: watch::channel(0).1,
            shown: ["old".to_string()].into_iter().collect(),
            seen_agents: Default::default(),
        };
        assert_eq!(ext.fresh(vec!["old".into(), "new".into()]), ["new"]);
        assert!(ext.fresh(vec!["old".into(), "new".into()]).is_empty());
    }
}
