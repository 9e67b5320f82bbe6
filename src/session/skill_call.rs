//! Skills inside a session: a skill's `allowed-tools` rules, and the `Skill` tool the model
//! calls (loading the body into the run, or running it in a forked child run when the skill
//! says `context: fork`). The message a skill becomes is `invocation`'s.

use super::delegate::{self, ChildTask};
use super::event::Event;
use super::invocation::{Invocation, InvokedBy};
use super::permissions::{Permissions, Rule};
use super::run::RunCtx;
use super::{Conversation, TurnShared};
use crate::skills::Skill;
use crate::tools::ToolOutput;

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
        // The body joins this run; its allowed tools hold until the run ends (its `!`
        // lines are the first calls they cover).
        ctx.skill_rules.extend(rules);
        let invocation = Invocation::of(skill, args, InvokedBy::Model, &shared.session_id);
        let text = invocation.text(shared, ctx, conv, changed).await;
        return ToolOutput::ok(text, format!("loaded skill {}", skill.name));
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
    // The `!` lines run here, before the child starts, under the skill's rules.
    let invocation = Invocation::of(skill, args, InvokedBy::ModelForChild, &shared.session_id);
    let held = ctx.skill_rules.len();
    ctx.skill_rules.extend(rules.iter().cloned());
    let task = invocation.text(shared, ctx, conv, changed).await;
    ctx.skill_rules.truncate(held);
    let child = ChildTask {
        route,
        task,
        label: format!("/{} {args}", skill.name).trim_end().to_string(),
        skill_rules: rules,
        images: Vec::new(),
        agent,
    };
    let agent_name = child.agent.name.clone();
    let end = delegate::run_child(shared, ctx, conv, child, changed).await;
    delegate::as_tool_output(&agent_name, &end)
}
