//! What a new session takes over from the one it replaces (`/clear`, `/resume`, a rewound
//! conversation): one decision, here below the frontends, so no two of them can differ.
//!
//! The settings the old session last announced carry over: the agent (unless its file is
//! gone: then the default), the permission mode and `max_iters` (once the session has
//! announced them; before that the flags decide), the model the person chose with `/model`,
//! and the turn mode when it was a choice rather than the agent's own `mode:` (which the new
//! session applies by itself, and which a carried choice would pin).

use super::{DEFAULT_AGENT, Start};
use crate::config::PermissionMode;
use crate::session::TurnMode;
use crate::session::view::Settings;

/// The settings a new session starts with, taken from the old one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carried {
    /// `None`: the default agent (the old one is gone).
    pub agent: Option<String>,
    pub permission_mode: Option<PermissionMode>,
    pub max_iters: Option<u32>,
    pub model: Option<String>,
    /// The turn mode to set once the new session has started, when it was a choice.
    pub mode: Option<TurnMode>,
}

/// What carries over from `now`. `agent_mode(name)` is `None` for an agent that no longer
/// exists, else its own `mode:`; `model_choice` is the model the person last chose.
pub fn carry_over(
    now: &Settings,
    agent_mode: impl Fn(&str) -> Option<Option<TurnMode>>,
    model_choice: Option<&str>,
) -> Carried {
    let agent = agent_mode(&now.agent_id).map(|_| now.agent_id.clone());
    let own_mode = agent_mode(agent.as_deref().unwrap_or(DEFAULT_AGENT)).flatten();
    // Zero: the session has not announced its settings yet; the flags decide.
    let announced = now.max_iters > 0;
    Carried {
        agent,
        permission_mode: announced.then_some(now.permission_mode),
        max_iters: announced.then_some(now.max_iters),
        model: model_choice.map(str::to_string),
        mode: (now.mode != own_mode.unwrap_or_default()).then_some(now.mode),
    }
}

impl Carried {
    /// `start` with what carries over in place of what it had.
    pub fn apply(&self, start: &mut Start) {
        start.agent = self.agent.clone();
        if let Some(mode) = self.permission_mode {
            start.overrides.permission_mode = Some(mode);
        }
        if let Some(max_iters) = self.max_iters {
            start.overrides.max_iters = Some(max_iters);
        }
        if let Some(model) = &self.model {
            start.overrides.model = Some(model.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(agent: &str, mode: TurnMode) -> Settings {
        Settings {
            model: "local (qwen @ http://x)".into(),
            root: "/p".into(),
            agent_id: agent.into(),
            mode,
            permission_mode: PermissionMode::AcceptEdits,
            max_iters: 12,
        }
    }

    /// `ling` (chat), `planner` (its own mode: auto); anything else is gone.
    fn agents(name: &str) -> Option<Option<TurnMode>> {
        match name {
            "ling" => Some(None),
            "planner" => Some(Some(TurnMode::Auto)),
            _ => None,
        }
    }

    #[test]
    fn the_announced_settings_and_the_chosen_model_carry_over() {
        let carried = carry_over(&settings("ling", TurnMode::Chat), agents, Some("cloud"));
        assert_eq!(
            carried,
            Carried {
                agent: Some("ling".into()),
                permission_mode: Some(PermissionMode::AcceptEdits),
                max_iters: Some(12),
                model: Some("cloud".into()),
                mode: None,
            }
        );
    }

    #[test]
    fn a_mode_carries_only_when_it_was_a_choice() {
        // The agent's own mode is not pinned...
        let own = carry_over(&settings("planner", TurnMode::Auto), agents, None);
        assert_eq!(own.mode, None);
        // ...a mode chosen over it is.
        let chosen = carry_over(&settings("planner", TurnMode::Talk), agents, None);
        assert_eq!(chosen.mode, Some(TurnMode::Talk));
        let chat_over_auto = carry_over(&settings("planner", TurnMode::Chat), agents, None);
        assert_eq!(chat_over_auto.mode, Some(TurnMode::Chat));
    }

    #[test]
    fn a_gone_agent_falls_back_and_unannounced_settings_leave_the_flags() {
        let mut now = settings("deleted", TurnMode::Chat);
        now.max_iters = 0;
        let carried = carry_over(&now, agents, None);
        assert_eq!(carried.agent, None);
        assert_eq!(carried.permission_mode, None);
        assert_eq!(carried.max_iters, None);
        assert_eq!(carried.mode, None);
    }
}
