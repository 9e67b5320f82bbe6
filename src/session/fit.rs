//! Tool results sized to the model's window: a `Read`, `Grep` or `Bash` result (or any other)
//! never takes more than half of the context that is left, so one big file or one noisy
//! command cannot push the conversation out of a small local model's window. What is cut
//! says how to get the rest.

use super::{Conversation, TurnShared};
use crate::llm::routing::Model;
use crate::tools::ToolName;

/// A result may use this share of the tokens still free in the window.
const SHARE_OF_FREE: u64 = 2;
/// However full the window, a result may keep this many characters (less is useless, and
/// a window that full is the compaction's business, not the tool's), or an eighth of the
/// window on a smaller one.
const FLOOR_CHARS: usize = 2_000;
const FLOOR_SHARE_OF_WINDOW: f64 = 1.0 / 8.0;

/// The most characters a tool result may have now, with `used` tokens of the `window`
/// taken, in `model`'s characters per token; `None` when the window is unknown.
pub fn budget(model: &Model, window: Option<u32>, used: u64) -> Option<usize> {
    let window = window?;
    let free = u64::from(window).saturating_sub(used);
    let chars = model.chars_for((free / SHARE_OF_FREE) as f64);
    let floor = FLOOR_CHARS.min(model.chars_for(f64::from(window) * FLOOR_SHARE_OF_WINDOW));
    Some(chars.max(floor))
}

/// The files a person attached (`@path`), cut to the same budget as a tool result, so that
/// one big file cannot make the turn impossible on a small window.
pub(crate) async fn attachments(
    shared: &TurnShared,
    conv: &Conversation,
    attached: &str,
) -> String {
    if attached.is_empty() {
        return String::new();
    }
    let index = shared.models.likely(&shared.choice);
    let model = shared.models.model(index);
    let window = model.context_window().await;
    let used = conv.ledger.estimate(index, model, &conv.history, 0);
    match budget(model, window, used) {
        Some(max) if attached.len() > max => {
            let mut kept = take_lines(attached, max);
            // One very long line (minified code, a log without newlines): cut inside it.
            if kept.len() < max / 2 {
                kept = format!("{}\n", crate::text::prefix_bytes(attached, max));
            }
            format!(
                "{kept}```\n[the attached files were cut to fit the context window: {} of {} \
                 lines shown. Read them with a line_range for the rest]",
                kept.lines().count(),
                attached.lines().count()
            )
        }
        _ => attached.to_string(),
    }
}

/// `content` cut to `budget` characters at a line boundary, with how to get the rest; the
/// content itself when it fits. `args` are the call's arguments (for `Read`'s path).
pub fn fit(
    tool: Option<ToolName>,
    args: &serde_json::Value,
    content: &str,
    budget: usize,
) -> String {
    if content.len() <= budget {
        return content.to_string();
    }
    let total_lines = content.lines().count();
    match tool {
        // The end of a command's output is where errors are: keep some of both ends.
        Some(ToolName::Bash) => {
            let head = take_lines(content, budget / 3);
            let tail = take_last_lines(content, budget - head.len());
            let (h, t) = (head.lines().count(), tail.lines().count());
            format!(
                "{head}[… {} lines cut to fit the context window; {h} first and {t} last of {total_lines} shown. \
                 Rerun the command piped through head, tail or grep to see a part]\n{tail}",
                total_lines.saturating_sub(h + t)
            )
        }
        Some(ToolName::Read) => {
            let kept = take_lines(content, budget);
            let last_line = kept
                .lines()
                .last()
                .and_then(|l| l.split('\t').next())
                .and_then(|n| n.trim().parse::<usize>().ok());
            let path = args
                .get("path")
                .or_else(|| args.get("file_path"))
                .and_then(|p| p.as_str())
                .unwrap_or("…");
            let next = match last_line {
                Some(n) => format!(
                    "Continue with {{\"path\": \"{path}\", \"line_range\": [{}, {}]}}",
                    n + 1,
                    n + 200
                ),
                None => "Read a smaller line_range".to_string(),
            };
            format!("{kept}[cut to fit the context window. {next}]\n")
        }
        Some(ToolName::Grep) => {
            let kept = take_lines(content, budget);
            format!(
                "{kept}[cut to fit the context window: {} of {total_lines} lines shown. \
                 Narrow the pattern, path or glob, or set head_limit]\n",
                kept.lines().count()
            )
        }
        _ => {
            let kept = take_lines(content, budget);
            format!(
                "{kept}[cut to fit the context window: {} of {total_lines} lines shown]\n",
                kept.lines().count()
            )
        }
    }
}

/// The first whole lines of `text` within `max` bytes (at least part of the first line).
pub(crate) fn take_lines(text: &str, max: usize) -> String {
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        if out.len() + line.len() > max {
            if out.is_empty() {
                out.push_str(crate::text::prefix_bytes(line, max));
                out.push('\n');
            }
            break;
        }
        out.push_str(line);
    }
    out
}

/// The last whole lines of `text` within `max` bytes.
fn take_last_lines(text: &str, max: usize) -> String {
    let mut lines: Vec<&str> = Vec::new();
    let mut size = 0;
    for line in text.split_inclusive('\n').rev() {
        if size + line.len() > max {
            break;
        }
        size += line.len();
        lines.push(line);
    }
    lines.reverse();
    lines.concat()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_budget_is_half_the_free_window_with_a_floor() {
        let model = Model::new(
            crate::config::ModelConfig::new("m", crate::config::ProviderKind::Openai, "m", "u"),
            Vec::new(),
        );
        assert_eq!(budget(&model, None, 0), None);
        // 4096-token window, 1,000 tokens used: half of 3,096 tokens, in characters.
        assert_eq!(budget(&model, Some(4096), 1_000), Some(1548 * 4));
        assert_eq!(budget(&model, Some(4096), 25_000), Some(FLOOR_CHARS));
        // A 2k window: an eighth of it.
        assert_eq!(budget(&model, Some(2048), 25_000), Some(1024));
        // A tokenizer that makes two characters a token halves the characters.
        model.calibrate(2_000, 1_000);
        assert_eq!(budget(&model, Some(4096), 1_000), Some(1548 * 2));
    }

    #[test]
    fn a_read_is_cut_at_a_line_and_says_where_to_continue() {
        let content: String = (1..=500).map(|n| format!("{n:>3}\tline {n}\n")).collect();
        let out = fit(
            Some(ToolName::Read),
            &json!({"path": "src/big.rs"}),
            &content,
            2_000,
        );
        assert!(out.len() < 2_200, "{}", out.len());
        let last = out.lines().rev().nth(1).unwrap();
        let n: usize = last.split('\t').next().unwrap().trim().parse().unwrap();
        assert!(out.ends_with(&format!(
            "Continue with {{\"path\": \"src/big.rs\", \"line_range\": [{}, {}]}}]\n",
            n + 1,
            n + 200
        )));
    }

    #[test]
    fn a_command_keeps_both_ends_and_small_results_stay_whole() {
        let content: String = (1..=1000).map(|n| format!("output {n}\n")).collect();
        let out = fit(Some(ToolName::Bash), &json!({}), &content, 3_000);
        assert!(out.starts_with("output 1\n"));
        assert!(out.ends_with("output 1000\n"));
        assert!(out.contains("lines cut to fit the context window"));
        assert!(out.len() < 3_300);
        let grep = fit(Some(ToolName::Grep), &json!({}), &content, 3_000);
        assert!(grep.contains("Narrow the pattern"));
        assert_eq!(
            fit(Some(ToolName::Read), &json!({}), "short\n", 3_000),
            "short\n"
        );
    }
}
