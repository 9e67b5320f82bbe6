//! The interaction modes (see DESIGN.md, "Modes"). Here, below both, because an agent's
//! file may name its default mode and the session runs turns in one.

use serde::{Deserialize, Serialize};

/// How a turn works (see DESIGN.md, "Modes"): `Chat` is the person-in-the-loop tool loop
/// (model → tool → observation → model); `Auto` is the structured loop where each model turn
/// is one JSON action (`tool`, `patch`, `finalize_task`) until the task is finalized;
/// `Talk` answers in one response without tools (cheap conversation, nothing touches the
/// workspace).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TurnMode {
    #[default]
    Chat,
    Auto,
    Talk,
}

impl TurnMode {
    /// Every mode, in the order `/mode` completes them.
    pub const ALL: [TurnMode; 3] = [TurnMode::Chat, TurnMode::Auto, TurnMode::Talk];

    pub fn parse(s: &str) -> Option<TurnMode> {
        TurnMode::ALL.into_iter().find(|m| m.as_str() == s.trim())
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TurnMode::Chat => "chat",
            TurnMode::Auto => "auto",
            TurnMode::Talk => "talk",
        }
    }

    /// One line for `/mode` and `--help`.
    pub fn summary(self) -> &'static str {
        match self {
            TurnMode::Chat => "works with tools, you in the loop",
            TurnMode::Auto => "a JSON action loop that works until the task is finalized",
            TurnMode::Talk => "one answer, no tools",
        }
    }
}
