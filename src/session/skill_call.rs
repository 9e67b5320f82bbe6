//! Skills inside a session: the instructions a skill turns into, its `allowed-tools` rules,
//! and the `Skill` tool the model calls (loading the body into the run, or running it in a
//! forked child run when the skill says `context: fork`).

use super::delegate::{self, ChildTask};
use super::event::Event;
use super::permissions::{Permissions, Rule};
use super::run::RunCtx;
use super::{Conversation, TurnShared};
use crate::skills::Skill;
use crate::tools::ToolOutput;

/// The message a skill becomes: who asked, where it came from, and its rendered body.
pub(crate) fn instructions(skill: &Skill, args: &str, by: &str) -> String {
    let mut text = format!(
        "{by} invoked the skill `{}`. Follow its instructions:\n\n{}",
        skill.name,
        skill.render(args)
    );
    if let Some(dir) = &skill.dir {
        text.push_str(&format!(
            "\n\n(The skill's files are in {}.)",
            dir.display()
        ));
    }
    text
}

/// The skill's `allowed-tools` as rules. A rule that does not parse is skipped with a
/// warning naming the skill's file, so one typo does not disable the whole skill. A project
/// skill's entries the person has not trusted are ignored with one note naming them.
pub(crate) fn rules(shared: &TurnShared, permissions: &Permissions, skill: &Skill) -> Vec<Rule> {
    let (held, ignored) = permissions.skill_rules(skill);
    if !ignored.is_empty() {
        shared.bus.publish(Event::Warning {
            message: format!(
                "not trusted, so ignored: {}; accept with `linggen trust` (the shell asks at \
                 its next start)",
                ignored.join("; ")
            ),
        });
    }
    held.into_iter()
        .filter_map(|text| match Rule::parse(text) {
            Ok(rule) => Some(rule),
            Err(e) => {
                shared.bus.publish(Event::Warning {
                    message: format!("{}: allowed-tools: {e}", skill.path),
                });
                None
            }
        })
        .collect()
}

/// The model called `Skill({skill, args})`.
pub(crate) async fn invoke(
    shared: &TurnShared,
    ctx: &mut RunCtx,
    conv: &mut Conversation,
    name: &str,
    args: &str,
    changed: &mut Vec<String>,
) -> ToolOutput {
    let skills = shared.skills.get();
    // A skill outside the agent's `skills:` is as unknown to its runs as a missing one.
    let offered = |s: &&crate::skills::Skill| ctx.agent.allows_skill(&s.name);
    let Some(skill) = skills
        .get(name)
        .filter(|s| !s.disable_model_invocation)
        .filter(offered)
    else {
        let names: Vec<&str> = skills
            .model_visible()
            .filter(offered)
            .map(|s| s.name.as_str())
            .collect();
        return ToolOutput::error(format!(
            "no skill named `{name}`; skills: {}",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        ));
    };
    let rules = rules(shared, &conv.permissions, skill);
    if !skill.fork {
        // The body joins this run; its allowed tools hold until the run ends.
        ctx.skill_rules.extend(rules);
        return ToolOutput::ok(
            instructions(skill, args, "You"),
            format!("loaded skill {}", skill.name),
        );
    }
    let agent = match &skill.agent {
        Some(agent_name) => match shared.agents.get().get(agent_name) {
            Some(spec) => spec.clone(),
            None => {
                return ToolOutput::error(format!(
                    "skill `{name}` names agent `{agent_name}`, which does not exist ({})",
                    skill.path
                ));
            }
        },
        None => ctx.agent.clone(),
    };
    if let Err(why) = delegate::check_depth(shared, ctx) {
        return ToolOutput::error(why);
    }
    let route = super::route_for(shared, skill.model.as_deref(), &ctx.route);
    let child = ChildTask {
        route,
        task: instructions(skill, args, "The user's agent"),
        label: format!("/{} {args}", skill.name).trim_end().to_string(),
        skill_rules: rules,
        images: Vec::new(),
        agent,
    };
    let agent_name = child.agent.name.clone();
    let end = delegate::run_child(shared, ctx, conv, child, changed).await;
    delegate::as_tool_output(&agent_name, &end)
}
