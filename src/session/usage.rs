//! Context accounting: what the next request of a conversation will cost before it is sent,
//! learned from what the server counted for the ones before, and the `ContextUsage` events
//! that show it.
//!
//! A server's count is exact but comes after the fact; an estimate from characters comes
//! before but depends on the tokenizer and on what the server's chat template adds or
//! leaves out (llama.cpp drops the tool definitions for a model whose template has no
//! tools). So the estimate is anchored: the last request's count, plus the characters added
//! since at the model's learned characters per token. The ratio itself is learned from the
//! growth between two counts, in which the fixed part (instructions, tools, template)
//! cancels out.

use serde::{Deserialize, Serialize};

use super::compact::SUMMARY_HEADER;
use super::event::{ContextStage, Event};
use super::run::RunCtx;
use super::{Conversation, TurnShared};
use crate::llm::routing::Model;
use crate::llm::{ChatMessage, Role, ToolSpec};

/// Growth smaller than this says too little about the tokenizer to learn from.
const MIN_GROWTH_CHARS: usize = 800;

/// What a conversation knows about its own size from the servers' counts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ledger {
    /// The last count; it also tells what a request costs beyond its messages' text (tool
    /// definitions as the template renders them, the template itself).
    anchor: Option<Anchor>,
    /// The history is still the one the anchor counted (not compacted since).
    anchored: bool,
    /// Compactions this conversation went through.
    pub compactions: u32,
}

/// The last request the server counted.
#[derive(Debug, Clone, Copy)]
struct Anchor {
    model: usize,
    messages: usize,
    chars: usize,
    tokens: u64,
}

impl Ledger {
    /// The ledger of a resumed history: nothing counted yet, its summaries known.
    pub fn resumed(history: &[ChatMessage]) -> Ledger {
        Ledger {
            compactions: history.iter().filter(|m| is_summary(m)).count() as u32,
            ..Ledger::default()
        }
    }

    /// Tokens a request of `history` with `tools_chars` of tool definitions will cost
    /// with the router's model `index`.
    pub fn estimate(
        &self,
        index: usize,
        model: &Model,
        history: &[ChatMessage],
        tools_chars: usize,
    ) -> u64 {
        let chars = chars(history);
        let Some(a) = self.anchor.filter(|a| a.model == index) else {
            return model.estimate(chars) + model.estimate(tools_chars);
        };
        if self.anchored && history.len() >= a.messages {
            return if chars >= a.chars {
                a.tokens + model.estimate(chars - a.chars)
            } else {
                a.tokens.saturating_sub(model.estimate(a.chars - chars))
            };
        }
        // A new history with the same fixed part, measured with what is known now of the
        // tokenizer.
        let overhead = a.tokens.saturating_sub(model.estimate(a.chars));
        model.estimate(chars) + overhead
    }

    /// The server counted `tokens` of prompt for a request of `history` to model `index`.
    pub fn counted(&mut self, index: usize, model: &Model, history: &[ChatMessage], tokens: u64) {
        let chars = chars(history);
        // No tokenizer makes 8 characters one token: a count that low is of the part the
        // server had not cached (Ollama's), not of the prompt.
        if tokens == 0 || (tokens as usize).saturating_mul(8) < chars {
            return;
        }
        if let Some(a) = self.anchor.filter(|a| {
            self.anchored
                && a.model == index
                && history.len() > a.messages
                && chars >= a.chars + MIN_GROWTH_CHARS
                && tokens > a.tokens
        }) {
            model.calibrate(chars - a.chars, tokens - a.tokens);
        }
        self.anchored = true;
        self.anchor = Some(Anchor {
            model: index,
            messages: history.len(),
            chars,
            tokens,
        });
    }

    /// The history was replaced by a compacted one: the last count no longer describes it
    /// (the overhead still does).
    pub fn compacted(&mut self) {
        self.anchored = false;
        self.compactions += 1;
    }
}

/// Runs `learn` (which may calibrate `model`'s tokenizer) and saves the ratio for later
/// processes when it moved.
pub(crate) fn learning(shared: &TurnShared, model: &Model, learn: impl FnOnce()) {
    let before = model.ratio_now();
    learn();
    let (Some(now), Some(home)) = (model.ratio_now(), shared.tools.linggen_home.clone()) else {
        return;
    };
    if Some(now) != before {
        let config = model.config.clone();
        tokio::task::spawn_blocking(move || {
            crate::llm::routing::tokenizers::save_if_moved(&home, &config, now)
        });
    }
}

/// The characters a history sends: its texts and its tool calls' names and arguments, and
/// its images at what they cost.
pub(crate) fn chars(history: &[ChatMessage]) -> usize {
    history.iter().map(message_chars).sum()
}

fn message_chars(m: &ChatMessage) -> usize {
    m.content.len()
        + m.tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.to_string().len())
            .sum::<usize>()
        + m.images.iter().map(image_chars).sum::<usize>()
}

/// An image counted as the characters its tokens would be at the default four characters
/// a token: the accounting is in characters, and an image's base64 length says nothing of
/// its cost (a 100 KB screenshot is ~1,600 tokens, not 130k characters' worth).
fn image_chars(image: &crate::llm::Image) -> usize {
    image.tokens() as usize * 4
}

pub(crate) fn is_summary(m: &ChatMessage) -> bool {
    m.role == Role::User && m.content.starts_with(SUMMARY_HEADER)
}

/// What a request is made of, in (estimated) tokens: the estimate shared out by characters.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Breakdown {
    /// The agent's instructions, workspace facts and rules.
    pub system_prompt: u64,
    /// AGENTS.md / CLAUDE.md.
    pub project_docs: u64,
    /// The project's memory.
    pub memory: u64,
    /// Tool definitions, but the skill catalog.
    pub tools: u64,
    /// The `Skill` tool's list of skills.
    pub skills_catalog: u64,
    /// The person's and the model's messages (with the model's tool calls).
    pub history: u64,
    pub tool_results: u64,
}

impl Breakdown {
    /// `history[0]` is the system prompt.
    fn of(history: &[ChatMessage], tools: &[ToolSpec], estimated: u64) -> Breakdown {
        let system = history.first().map_or("", |m| m.content.as_str());
        let memory = system
            .find(super::memory::PROMPT_HEADING)
            .map_or(0, |at| system.len() - at);
        let project_docs = system[..system.len() - memory]
            .find(super::prompt::PROJECT_DOCS_HEADING)
            .map_or(0, |at| system.len() - memory - at);
        let skill = crate::tools::ToolName::Skill.name();
        let catalog: usize = tools
            .iter()
            .filter(|t| t.name == skill)
            .map(ToolSpec::chars)
            .sum();
        let all_tools: usize = tools.iter().map(ToolSpec::chars).sum();
        let body = history.get(1..).unwrap_or_default();
        let results: usize = body
            .iter()
            .filter(|m| m.role == Role::Tool)
            .map(message_chars)
            .sum();
        let parts = [
            system.len() - memory - project_docs,
            project_docs,
            memory,
            all_tools - catalog,
            catalog,
            chars(body) - results,
            results,
        ];
        let total: usize = parts.iter().sum::<usize>().max(1);
        let share = |n: usize| (estimated as f64 * n as f64 / total as f64).round() as u64;
        Breakdown {
            system_prompt: share(parts[0]),
            project_docs: share(parts[1]),
            memory: share(parts[2]),
            tools: share(parts[3]),
            skills_catalog: share(parts[4]),
            history: share(parts[5]),
            tool_results: share(parts[6]),
        }
    }

    /// The parts with people's names for them, in the order `/context` lists them.
    pub fn parts(&self) -> [(&'static str, u64); 7] {
        [
            ("system prompt", self.system_prompt),
            ("project docs", self.project_docs),
            ("memory", self.memory),
            ("tools", self.tools),
            ("skills catalog", self.skills_catalog),
            ("history", self.history),
            ("tool results", self.tool_results),
        ]
    }
}

/// Publishes the estimate of the request about to be sent with `tools` (`tools_chars`
/// as serialized).
pub(crate) fn report_request(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &Conversation,
    tools: &[ToolSpec],
    tools_chars: usize,
    estimated: u64,
    token_limit: Option<u32>,
) {
    publish(
        shared,
        ctx,
        conv,
        Measured {
            stage: ContextStage::Request,
            char_count: chars(&conv.history) + tools_chars,
            estimated_tokens: estimated,
            token_limit,
            breakdown: Some(Breakdown::of(&conv.history, tools, estimated)),
            used_tokens: estimated,
            input_tokens: 0,
            output_tokens: 0,
        },
    );
}

/// Publishes what the server counted for the response just received (the estimate stands
/// in when it reported nothing).
pub(crate) fn report_response(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &Conversation,
    response: &super::run::Response,
) {
    let index = response.served_by.unwrap_or(0);
    let model = shared.models.model(index);
    let estimated = conv.ledger.estimate(index, model, &conv.history, 0);
    let (input, output) = (response.usage.input_tokens, response.usage.output_tokens);
    let used = match input {
        0 => estimated + model.estimate(response.text.len()),
        _ => input + output,
    };
    publish(
        shared,
        ctx,
        conv,
        Measured {
            stage: ContextStage::Response,
            char_count: chars(&conv.history),
            estimated_tokens: estimated,
            token_limit: response.context_window,
            breakdown: None,
            used_tokens: used,
            input_tokens: input,
            output_tokens: output,
        },
    );
}

struct Measured {
    stage: ContextStage,
    char_count: usize,
    estimated_tokens: u64,
    token_limit: Option<u32>,
    breakdown: Option<Breakdown>,
    used_tokens: u64,
    input_tokens: u64,
    output_tokens: u64,
}

fn publish(shared: &TurnShared, ctx: &RunCtx, conv: &Conversation, m: Measured) {
    shared.bus.publish(Event::ContextUsage {
        run_id: ctx.id.clone(),
        agent_id: ctx.agent.name.clone(),
        stage: m.stage,
        message_count: conv.history.len(),
        char_count: m.char_count,
        estimated_tokens: m.estimated_tokens,
        token_limit: m.token_limit,
        compressed: conv.history.iter().any(is_summary),
        summary_count: conv.ledger.compactions,
        breakdown: m.breakdown,
        used_tokens: m.used_tokens,
        input_tokens: m.input_tokens,
        output_tokens: m.output_tokens,
    });
}

#[cfg(test)]
mod tests;
