//! Auto mode: the structured action loop (see `doc/auto.md`). Each model answer is one JSON
//! action — run a tool, apply a patch, or finalize the task — and what it did comes back
//! as the next message, until the agent finalizes or a limit stops the run. The run loop
//! in [`super::run`] makes the model calls (routing, compaction, budgets); this module
//! reads an answer and carries out its action through the same tool path as chat mode, so
//! the floor, the sandbox, permissions and the agent's gates apply unchanged.

pub mod action;

use serde_json::json;

use self::action::Action;
use super::event::OutcomeStatus;
use super::run::{self, RunCtx};
use super::{Conversation, TurnShared, call_ids, tool_call};
use crate::agents::Capability;
use crate::llm::{ChatMessage, ToolCall};
use crate::tools::ToolName;

/// The `from` of an observation: the message that tells the model what its action did.
/// Frontends show the tool call itself, not this message.
pub const OBSERVATION: &str = "observation";

/// What the run does after one action.
pub(crate) enum Flow {
    Continue,
    End(OutcomeStatus, String),
}

/// What one run's loop remembers between actions.
#[derive(Default)]
pub(crate) struct State {
    /// The previous answer could not be read: another such answer ends the run.
    malformed: bool,
}

/// The model's answer, and which model gave it (observations are sized to its window).
pub(crate) struct Served<'a> {
    pub text: &'a str,
    pub by: Option<usize>,
    pub window: Option<u32>,
}

/// The action protocol, appended to the system prompt in auto mode: the three shapes, the
/// tools this run may use (names and parameters), and what the agent's policy withholds.
pub(crate) fn protocol(shared: &TurnShared, ctx: &RunCtx) -> String {
    let caps = &ctx.agent.capabilities;
    let mut text = String::from(
        "# Auto mode\nWork on the task on your own until it is done. Every answer is exactly \
         one JSON object and nothing else (this replaces native tool calls and markdown \
         answers):\n\
         - {\"type\":\"tool\",\"tool\":\"Read\",\"args\":{\"path\":\"src/lib.rs\"}} runs a tool; \
         its result is the next message.\n",
    );
    let can_patch = ctx.agent.allows_tool(ToolName::ApplyPatch);
    if can_patch {
        text.push_str(
            "- {\"type\":\"patch\",\"diff\":\"--- a/src/lib.rs\\n+++ b/src/lib.rs\\n@@ -1 +1 @@\\n-old\\n+new\\n\"} \
             changes files with a unified diff (--- /dev/null for a new file); read a file \
             before you patch it.\n",
        );
    } else {
        text.push_str(
            "- You may not change files (this agent has no Patch policy or no apply_patch tool).\n",
        );
    }
    if caps.contains(&Capability::Finalize) {
        text.push_str(
            "- {\"type\":\"finalize_task\",\"summary\":\"what you did and the result\"} ends the \
             task; the summary is your answer.\n",
        );
    } else {
        text.push_str(
            "- You may not finalize the task (this agent's policy has no Finalize): keep \
             working until the run is stopped.\n",
        );
    }
    if !ctx.agent.checks.is_empty() && can_patch {
        text.push_str(&format!(
            "After each patch these checks run, and a failure is the next message: {}.\n",
            ctx.agent.checks.join("; ")
        ));
    }
    text.push_str("Tools:\n");
    for spec in action_tools(shared, ctx) {
        // Required parameters first, in their order; then the optional ones, marked `?`.
        let required: Vec<&str> = spec.parameters["required"]
            .as_array()
            .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        let optional = spec.parameters["properties"]
            .as_object()
            .into_iter()
            .flat_map(|props| props.keys())
            .filter(|k| !required.contains(&k.as_str()))
            .map(|k| format!("{k}?"));
        let params: Vec<String> = required
            .iter()
            .map(|k| k.to_string())
            .chain(optional)
            .collect();
        text.push_str(&format!(
            "- {}({}): {}\n",
            spec.name,
            params.join(", "),
            spec.description.trim()
        ));
    }
    text
}

/// The tools a `tool` action may name: the agent's, but `apply_patch`, which is the patch
/// action.
fn action_tools(shared: &TurnShared, ctx: &RunCtx) -> Vec<crate::llm::ToolSpec> {
    run::agent_tools(shared, ctx, None)
        .into_iter()
        .filter(|t| t.name != ToolName::ApplyPatch.name())
        .collect()
}

/// The JSON schema of an action, sent with each auto-mode request: servers that constrain
/// decoding to it (llama.cpp, vLLM, Ollama) make even a small model answer with an object
/// of the right shape, naming only tools it has. The lenient reading stays for the rest.
pub(crate) fn answer_schema(shared: &TurnShared, ctx: &RunCtx) -> serde_json::Value {
    let object = |properties: serde_json::Value, required: &[&str]| json!({"type": "object", "properties": properties, "required": required});
    // One shape per tool, with that tool's own parameters: a constrained model cannot
    // leave out a required argument.
    let mut shapes: Vec<serde_json::Value> = action_tools(shared, ctx)
        .into_iter()
        .map(|t| {
            let properties = json!({
                "type": {"const": "tool"},
                "tool": {"const": t.name},
                "args": t.parameters,
            });
            object(properties, &["type", "tool", "args"])
        })
        .collect();
    if ctx.agent.allows_tool(ToolName::ApplyPatch) {
        let properties = json!({"type": {"const": "patch"}, "diff": {"type": "string"}});
        shapes.push(object(properties, &["type", "diff"]));
    }
    if ctx.agent.capabilities.contains(&Capability::Finalize) {
        let properties = json!({"type": {"const": "finalize_task"}, "summary": {"type": "string"}});
        shapes.push(object(properties, &["type", "summary"]));
    }
    // `type: object` at the root too: OpenAI refuses a root schema without it.
    json!({ "type": "object", "anyOf": shapes })
}

/// Reads the model's answer (already in the history) and carries out its action.
pub(crate) async fn step(
    shared: &TurnShared,
    ctx: &mut RunCtx,
    conv: &mut Conversation,
    served: &Served<'_>,
    changed: &mut Vec<String>,
    watch: &mut super::limits::Watch<'_>,
    state: &mut State,
) -> Flow {
    let action = match action::parse(served.text) {
        Ok(action) => {
            state.malformed = false;
            action
        }
        // One retry with the reason: small local models usually fix it.
        Err(why) if !state.malformed => {
            state.malformed = true;
            let why = format!("[not an action]\nThat answer was not an action: {why}.");
            observe(shared, ctx, conv, why, Vec::new());
            return Flow::Continue;
        }
        Err(why) => {
            return Flow::End(
                OutcomeStatus::Error,
                format!(
                    "the model answered twice in a row with something that is not an action \
                     ({why}); try a model that follows instructions better, or chat mode"
                ),
            );
        }
    };
    // Each step's first change gets a checkpoint of its own.
    ctx.mark.next_step();
    let may_finalize = ctx.agent.capabilities.contains(&Capability::Finalize);
    match action {
        Action::Finalize { summary } if may_finalize => {
            Flow::End(OutcomeStatus::Completed, summary)
        }
        Action::Finalize { .. } => {
            let refusal = format!(
                "[finalize_task refused]\nrefused: agent `{}` may not finalize the task (its \
                 policy has no Finalize); keep working with tools and patches",
                ctx.agent.name
            );
            watch.call_ended("finalize_task", &json!({}), true);
            observe(shared, ctx, conv, refusal, Vec::new());
            Flow::Continue
        }
        Action::Tool { tool, args } => {
            let call = ToolCall {
                id: call_ids::fresh(),
                name: tool,
                arguments: args,
            };
            let (text, images) = run_call(shared, ctx, conv, &call, changed, served, watch).await;
            observe(shared, ctx, conv, text, images);
            Flow::Continue
        }
        Action::Patch { diff } => {
            let call = ToolCall {
                id: call_ids::fresh(),
                name: ToolName::ApplyPatch.name().to_string(),
                arguments: json!({ "diff": diff }),
            };
            let writes = ctx.writes;
            let (mut observation, images) =
                run_call(shared, ctx, conv, &call, changed, served, watch).await;
            if ctx.writes > writes
                && let Some(failed) = run_checks(shared, ctx, conv, changed, served).await
            {
                observation.push_str("\n\n");
                observation.push_str(&failed);
            }
            observe(shared, ctx, conv, observation, images);
            Flow::Continue
        }
    }
}

/// Runs one call as the model's (its gates apply) and returns the observation: its text,
/// and the images the tool returned (an MCP server's screenshot).
async fn run_call(
    shared: &TurnShared,
    ctx: &mut RunCtx,
    conv: &mut Conversation,
    call: &ToolCall,
    changed: &mut Vec<String>,
    served: &Served<'_>,
    watch: &mut super::limits::Watch<'_>,
) -> (String, Vec<crate::llm::Image>) {
    let output = run::one_call(shared, ctx, conv, call, changed).await;
    watch.call_ended(&call.name, &call.arguments, output.is_error);
    let content = run::fit_output(shared, conv, served.by, served.window, call, output.model);
    let verdict = if output.is_error { "failed" } else { "result" };
    let text = format!("[{} {verdict}]\n{content}", call.name);
    (text, output.images.into_vec())
}

/// Runs the agent's `checks:` after a patch that changed files; `Some(report)` when one
/// fails (the next observation), `None` when all pass. A check that matches `[checks]
/// allow` runs without asking (still inside the sandbox); any other is decided like any
/// command.
async fn run_checks(
    shared: &TurnShared,
    ctx: &mut RunCtx,
    conv: &mut Conversation,
    changed: &mut Vec<String>,
    served: &Served<'_>,
) -> Option<String> {
    let mut check_ctx = ctx.clone();
    check_ctx
        .skill_rules
        .extend(check_rules(&shared.auto.checks_allowed));
    for command in ctx.agent.checks.clone() {
        let call = ToolCall {
            id: call_ids::fresh(),
            name: ToolName::Bash.name().to_string(),
            arguments: json!({ "command": command }),
        };
        let output = tool_call::execute(
            shared,
            &mut check_ctx,
            conv,
            &call,
            changed,
            tool_call::Caller::Check,
        )
        .await;
        if output.is_error {
            let content =
                run::fit_output(shared, conv, served.by, served.window, &call, output.model);
            return Some(format!(
                "[check failed: {command}]\n{content}\nFix the cause, then patch again."
            ));
        }
    }
    None
}

/// `[checks] allow` as permission rules: each prefix alone and with more arguments. Rules
/// match each command of a chain on its own, so `cargo test; rm -rf x` is not let through.
pub fn check_rules(allowed: &[String]) -> Vec<super::permissions::Rule> {
    allowed
        .iter()
        .flat_map(|c| [format!("Bash({c})"), format!("Bash({c} *)")])
        .filter_map(|r| super::permissions::Rule::parse(&r).ok())
        .collect()
}

/// Whether a stored user message is an observation (a resumed conversation has no `from`):
/// each starts with a `[… result]`, `[… failed]`, `[… refused]` or `[not an action]` line.
pub fn is_observation(message: &ChatMessage) -> bool {
    if message.role != crate::llm::Role::User {
        return false;
    }
    let first = message.content.lines().next().unwrap_or_default();
    let Some(label) = first.strip_prefix('[').and_then(|l| l.strip_suffix(']')) else {
        return false;
    };
    if label == "not an action" {
        return true;
    }
    // `[Read result]`: one word (the tool as the model named it), then the verdict.
    label.split_once(' ').is_some_and(|(tool, verdict)| {
        !tool.is_empty() && matches!(verdict, "result" | "failed" | "refused")
    })
}

/// Adds what an action did to the history, for the model's next answer; its first line is
/// what [`is_observation`] knows it by.
fn observe(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &mut Conversation,
    text: String,
    images: Vec<crate::llm::Image>,
) {
    let message = ChatMessage::user(text).with_images(images);
    run::push(shared, ctx, conv, OBSERVATION, message);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_are_told_from_the_persons_lines() {
        let user = ChatMessage::user;
        for seen in [
            "[Read result]\n1\tfn main() {}",
            "[apply_patch failed]\nhunk 1 of 1 …",
            "[finalize_task refused]\nrefused: …",
            "[not an action]\nThat answer was not an action: …",
        ] {
            assert!(is_observation(&user(seen)), "{seen}");
        }
        for said in [
            "fix the [bug] please",
            "[a b result]",
            "[ result]",
            "[Read]",
        ] {
            assert!(!is_observation(&user(said)), "{said}");
        }
        let answer = ChatMessage::assistant("[Read result]", Vec::new());
        assert!(!is_observation(&answer));
    }
}
