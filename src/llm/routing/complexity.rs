//! How demanding a model call looks: computed for every call from the prompt's size, how
//! many tool calls the run has made, how deep in delegation it is, and a skill's hint.

use crate::config::routing::{Complexity, Thresholds};

/// What is known about a call before it is made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Signal {
    /// Estimated tokens of everything sent: system prompt, history, tool definitions.
    pub prompt_tokens: u64,
    /// Tool calls the run has made so far.
    pub tool_calls: u32,
    /// 0 for a turn, +1 per delegation.
    pub delegation_depth: u32,
    /// A skill's or agent's `local` (low) or `cloud` (high) hint.
    pub hint: Option<Complexity>,
}

/// The level and, for people, what it came from (`"1,234 tokens, 9 tool calls (+1)"`).
pub fn assess(signal: &Signal, t: &Thresholds) -> (Complexity, String) {
    if let Some(hint) = signal.hint {
        let which = if hint == Complexity::Low {
            "local"
        } else {
            "cloud"
        };
        return (hint, format!("`{which}` hint"));
    }
    let tokens = signal.prompt_tokens;
    let mut level = if tokens < t.low_below_tokens {
        Complexity::Low
    } else if tokens <= t.medium_up_to_tokens {
        Complexity::Medium
    } else {
        Complexity::High
    };
    let mut why = format!("{} tokens", crate::text::thousands(tokens));
    if signal.tool_calls > t.raise_after_tool_calls {
        level = level.raised();
        why.push_str(&format!(", {} tool calls (+1)", signal.tool_calls));
    }
    if signal.delegation_depth >= t.raise_at_delegation_depth {
        level = level.raised();
        why.push_str(&format!(
            ", delegation depth {} (+1)",
            signal.delegation_depth
        ));
    }
    (level, why)
}

/// The estimate used before a call: about four characters per token, which is close for
/// English and code with the tokenizers of the models linggen talks to.
pub fn estimate_tokens(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(prompt_tokens: u64, tool_calls: u32, depth: u32) -> Complexity {
        let signal = Signal {
            prompt_tokens,
            tool_calls,
            delegation_depth: depth,
            hint: None,
        };
        assess(&signal, &Thresholds::default()).0
    }

    #[test]
    fn prompt_size_sets_the_level_and_depth_raises_it() {
        assert_eq!(level(1_999, 0, 0), Complexity::Low);
        assert_eq!(level(2_000, 0, 0), Complexity::Medium);
        assert_eq!(level(6_000, 0, 0), Complexity::Medium);
        assert_eq!(level(6_001, 0, 0), Complexity::High);
        assert_eq!(level(100, 8, 0), Complexity::Low);
        assert_eq!(level(100, 9, 0), Complexity::Medium);
        assert_eq!(level(100, 0, 1), Complexity::Low);
        assert_eq!(level(100, 0, 2), Complexity::Medium);
        assert_eq!(level(100, 9, 2), Complexity::High);
        assert_eq!(level(7_000, 9, 2), Complexity::High);
    }

    #[test]
    fn a_hint_decides_and_the_reason_says_why() {
        let hinted = Signal {
            prompt_tokens: 50_000,
            hint: Some(Complexity::Low),
            ..Signal::default()
        };
        let (c, why) = assess(&hinted, &Thresholds::default());
        assert_eq!((c, why.as_str()), (Complexity::Low, "`local` hint"));
        let busy = Signal {
            prompt_tokens: 12_345,
            tool_calls: 9,
            ..Signal::default()
        };
        let (_, why) = assess(&busy, &Thresholds::default());
        assert_eq!(why, "12,345 tokens, 9 tool calls (+1)");
    }
}
