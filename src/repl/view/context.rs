//! `/context` and the context part of the turn footer, from the session's last
//! `ContextUsage`.

use crate::session::event::ContextStage;
use crate::session::view::ContextState;
use crate::text::thousands;

/// `context 1,234/8,192 (15%) · compacted 2×`, for the line after an answer.
pub fn footer(c: &ContextState) -> String {
    let mut line = match (c.token_limit, used_percent(c)) {
        (Some(limit), Some(percent)) => format!(
            "context {}/{} ({percent}%)",
            thousands(c.used_tokens),
            thousands(u64::from(limit)),
        ),
        _ => format!("context {} tokens", thousands(c.used_tokens)),
    };
    if c.summary_count > 0 {
        line.push_str(&format!(" · compacted {}×", c.summary_count));
    }
    line
}

/// What `/context` prints: how full the window is, what the last request was made of,
/// and what is free.
pub fn lines(c: Option<&ContextState>) -> Vec<String> {
    let Some(c) = c else {
        return vec!["context: nothing sent yet".to_string()];
    };
    let counted = match c.stage {
        ContextStage::Request => "estimated before the request",
        ContextStage::Response => "after the last answer",
    };
    let mut out = vec![match c.token_limit {
        Some(limit) => format!(
            "context: {} of {} tokens ({}%), {counted}",
            thousands(c.used_tokens),
            thousands(u64::from(limit)),
            percent(c.used_tokens, limit)
        ),
        None => format!(
            "context: {} tokens, {counted} (the model's window is unknown)",
            thousands(c.used_tokens)
        ),
    }];
    if let Some(b) = &c.breakdown {
        let estimated: u64 = b.parts().iter().map(|(_, tokens)| tokens).sum();
        out.push(format!(
            "  the last request, estimated before it was sent at about {} tokens:",
            thousands(estimated)
        ));
        let width = thousands(estimated.max(1)).len();
        for (name, tokens) in b.parts() {
            let bar = match c.token_limit {
                Some(limit) => "█".repeat(bar_cells(tokens, limit)),
                None => String::new(),
            };
            out.push(format!(
                "    {name:<15}{:>width$}  {bar}",
                thousands(tokens)
            ));
        }
        if let Some(limit) = c.token_limit {
            let free = u64::from(limit).saturating_sub(c.used_tokens);
            out.push(format!("    {:<15}{:>width$}", "free", thousands(free)));
        }
    }
    let mut state = format!("  {} messages", c.message_count);
    if c.summary_count > 0 {
        state.push_str(&format!(
            " · compacted {}× (older messages are a summary)",
            c.summary_count
        ));
    }
    state.push_str(" · /compact [what to keep] summarises now");
    out.push(state);
    out
}

/// How full the window is, in percent, when its size is known: the one figure the stats
/// line, `/context`, `/status` and the footer under the prompt all show.
pub fn used_percent(c: &ContextState) -> Option<u64> {
    c.token_limit.map(|limit| percent(c.used_tokens, limit))
}

fn percent(used: u64, limit: u32) -> u64 {
    used * 100 / u64::from(limit.max(1))
}

/// One cell per 2% of the window, at least one for a part that is there at all.
fn bar_cells(tokens: u64, limit: u32) -> usize {
    if tokens == 0 {
        return 0;
    }
    ((tokens * 50 / u64::from(limit.max(1))) as usize).clamp(1, 50)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::usage::Breakdown;

    fn state() -> ContextState {
        ContextState {
            stage: ContextStage::Response,
            used_tokens: 3_000,
            estimated_tokens: 2_900,
            token_limit: Some(4_096),
            message_count: 12,
            compressed: true,
            summary_count: 2,
            breakdown: Some(Breakdown {
                system_prompt: 300,
                project_docs: 100,
                memory: 20,
                tools: 900,
                skills_catalog: 80,
                history: 1_000,
                tool_results: 500,
            }),
        }
    }

    #[test]
    fn the_footer_says_how_full_and_how_often_compacted() {
        assert_eq!(footer(&state()), "context 3,000/4,096 (73%) · compacted 2×");
        let fresh = ContextState {
            summary_count: 0,
            token_limit: None,
            ..state()
        };
        assert_eq!(footer(&fresh), "context 3,000 tokens");
    }

    #[test]
    fn context_lists_every_part_and_what_is_free() {
        let text = lines(Some(&state())).join("\n");
        for part in [
            "system prompt",
            "project docs",
            "memory",
            "tools",
            "skills catalog",
            "history",
            "tool results",
        ] {
            assert!(text.contains(part), "{part} missing:\n{text}");
        }
        assert!(text.contains("3,000 of 4,096 tokens (73%)"), "{text}");
        assert!(text.contains("free"), "{text}");
        assert!(text.contains("1,096"), "{text}");
        assert!(text.contains("compacted 2×"), "{text}");
        assert_eq!(lines(None), ["context: nothing sent yet"]);
    }
}
