//! The turn modes as strategies of the one run loop (`run::run_loop`), which asks the
//! model, carries out its tool calls and watches the limits the same way for all three.
//! What differs is what a mode offers the model with each request and what an answer
//! without tool calls means:
//!
//! - **chat**: the agent's tools, natively (compact on a small window); a text answer is
//!   the run's answer;
//! - **talk**: no tools; the text is the answer;
//! - **auto**: no native tools (the action protocol in the system prompt lists them); a text
//!   answer is one JSON action, which `auto::step` checks and carries out.

use super::auto;
use super::event::OutcomeStatus;
use super::input::TurnMode;
use super::limits::Watch;
use super::run::{RunCtx, agent_tools};
use super::{Conversation, TurnShared};
use crate::protocol::ToolSpec;
use crate::shared_text::SharedText;
use crate::tools::compact;

/// One run's mode, with what the mode remembers between answers.
pub(crate) enum Strategy {
    Chat,
    Talk,
    Auto(auto::State),
}

/// An answer without tool calls, and which model gave it (its window sizes what follows).
pub(crate) struct Answer<'a> {
    pub text: &'a SharedText,
    pub by: Option<usize>,
    pub window: Option<u32>,
}

/// What an answer without tool calls leads to.
pub(crate) enum After {
    /// Ask the model again (an auto action was carried out).
    Again,
    /// The run ends so, with this result (`Error`: the result says why).
    End(OutcomeStatus, SharedText),
}

impl Strategy {
    pub fn for_mode(mode: TurnMode) -> Strategy {
        match mode {
            TurnMode::Chat => Strategy::Chat,
            TurnMode::Talk => Strategy::Talk,
            TurnMode::Auto => Strategy::Auto(auto::State::default()),
        }
    }

    /// The tools offered natively with each request of `ctx`'s run (its mode decides), to
    /// a model whose window is `window`.
    pub fn tools(shared: &TurnShared, ctx: &RunCtx, window: Option<u32>) -> Vec<ToolSpec> {
        match ctx.mode {
            TurnMode::Chat if compact::is_small(window) => {
                compact::for_small_window(agent_tools(shared, ctx, window))
            }
            TurnMode::Chat => agent_tools(shared, ctx, window),
            TurnMode::Talk | TurnMode::Auto => Vec::new(),
        }
    }

    /// What `answer` (already in the history) means, as this mode reads it.
    pub async fn on_text(
        &mut self,
        shared: &TurnShared,
        ctx: &mut RunCtx,
        conv: &mut Conversation,
        answer: &Answer<'_>,
        changed: &mut Vec<String>,
        watch: &mut Watch<'_>,
    ) -> After {
        let Strategy::Auto(state) = self else {
            return After::End(OutcomeStatus::Completed, answer.text.clone());
        };
        let served = auto::Served {
            text: answer.text,
            by: answer.by,
            window: answer.window,
        };
        let flow = auto::step(shared, ctx, conv, &served, changed, watch, state).await;
        watch.step_ended(ctx.writes);
        match flow {
            auto::Flow::Continue => After::Again,
            auto::Flow::End(status, result) => After::End(status, result.into()),
        }
    }
}
