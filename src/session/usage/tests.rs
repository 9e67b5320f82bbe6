use super::*;
use crate::config::{ModelConfig, ProviderKind};

fn model() -> Model {
    Model::new(
        ModelConfig::new("q", ProviderKind::Openai, "m", "http://127.0.0.1:1/usage"),
        Vec::new(),
    )
}

fn history(texts: &[&str]) -> Vec<ChatMessage> {
    let mut h = vec![ChatMessage::system("s".repeat(400))];
    h.extend(texts.iter().map(|t| ChatMessage::user(t.to_string())));
    h
}

#[test]
fn without_a_count_the_estimate_is_characters_and_tools() {
    let ledger = Ledger::default();
    let h = history(&[&"x".repeat(3_600)]);
    // 4,000 characters of messages and 2,000 of tools at four a token.
    assert_eq!(ledger.estimate(0, &model(), &h, 2_000), 1_500);
}

#[test]
fn the_next_estimate_starts_from_the_servers_count() {
    let m = model();
    let mut ledger = Ledger::default();
    let mut h = history(&["hello"]);
    // The template dropped the tools: the server counted far less than 4 chars a token
    // of everything would say.
    ledger.counted(0, &m, &h, 150);
    h.push(ChatMessage::user("y".repeat(400)));
    assert_eq!(ledger.estimate(0, &m, &h, 20_000), 250);
    // Another model's tokenizer is not this one's.
    assert_eq!(ledger.estimate(1, &m, &h, 0), 202);
}

#[test]
fn growth_between_two_counts_teaches_the_tokenizer() {
    let m = model();
    let mut ledger = Ledger::default();
    let mut h = history(&["hello"]);
    ledger.counted(0, &m, &h, 1_000);
    // 2,000 characters more were counted as 1,000 tokens: two characters a token, whatever
    // the fixed part costs.
    h.push(ChatMessage::user("1 2 ".repeat(500)));
    ledger.counted(0, &m, &h, 2_000);
    assert_eq!(m.estimate(2_000), 1_000);
    h.push(ChatMessage::user("3 4 ".repeat(250)));
    assert_eq!(ledger.estimate(0, &m, &h, 0), 2_500);
}

#[test]
fn a_count_of_only_the_uncached_part_is_ignored() {
    let m = model();
    let mut ledger = Ledger::default();
    let h = history(&[&"x".repeat(20_000)]);
    ledger.counted(0, &m, &h, 12);
    assert_eq!(ledger.estimate(0, &m, &h, 0), 5_100);
}

#[test]
fn after_a_compaction_the_overhead_holds_and_the_count_does_not() {
    let m = model();
    let mut ledger = Ledger::default();
    let h = history(&[&"x".repeat(7_600)]);
    // 8,000 characters are 2,000 tokens; the server counted 2,300: 300 of overhead.
    ledger.counted(0, &m, &h, 2_300);
    ledger.compacted();
    assert_eq!(ledger.compactions, 1);
    let short = history(&["s".repeat(400).as_str()]);
    assert_eq!(ledger.estimate(0, &m, &short, 99_999), 200 + 300);
}

#[test]
fn the_breakdown_shares_the_estimate_by_part() {
    let system = format!(
        "You are ling.{}{}AGENTS.md:\nUse tabs.\n\n{}\n- be brief",
        "x".repeat(100),
        crate::session::prompt::PROJECT_DOCS_HEADING,
        crate::session::memory::PROMPT_HEADING
    );
    let call = crate::llm::ToolCall {
        id: "c1".into(),
        name: "Read".into(),
        arguments: serde_json::json!({"file_path": "a"}),
    };
    let h = vec![
        ChatMessage::system(system),
        ChatMessage::user("read a"),
        ChatMessage::assistant(String::new(), vec![call.clone()]),
        ChatMessage::tool_result(&call, "r".repeat(400), false),
    ];
    let tools = crate::tools::specs();
    let b = Breakdown::of(&h, &tools, 1_000);
    assert!(b.tool_results > b.history, "{b:?}");
    assert!(
        b.project_docs > 0 && b.memory > 0 && b.system_prompt > 0,
        "{b:?}"
    );
    assert_eq!(b.skills_catalog, 0);
    assert!(b.tools > 0);
    let sum: u64 = b.parts().iter().map(|(_, t)| t).sum();
    assert!((998..=1_002).contains(&sum), "{sum}");
    assert!(is_summary(&ChatMessage::user(format!(
        "{SUMMARY_HEADER}\n\nx"
    ))));
}

#[test]
fn the_overhead_after_a_compaction_uses_what_was_learned_since() {
    let m = model();
    let mut ledger = Ledger::default();
    // 8,000 characters counted as 4,300 tokens.
    let h = history(&[&"x".repeat(7_600)]);
    ledger.counted(0, &m, &h, 4_300);
    ledger.compacted();
    // Then the tokenizer turns out to make two characters a token: the overhead is 300.
    m.calibrate(2_000, 1_000);
    let short = history(&["s".repeat(400).as_str()]);
    assert_eq!(ledger.estimate(0, &m, &short, 0), 400 + 300);
}

#[test]
fn an_image_counts_as_its_tokens_not_its_base64() {
    // A 100 KB JPEG (its size unread: counted as the most an image costs).
    let jpeg = crate::llm::Image::from_base64("image/jpeg", "/9j/4AAQ".repeat(17_000)).unwrap();
    let mut h = history(&["look"]);
    h.push(ChatMessage::user("").with_images(vec![jpeg]));
    let text_only = history(&["look"]);
    let image_tokens = Ledger::default().estimate(0, &model(), &h, 0)
        - Ledger::default().estimate(0, &model(), &text_only, 0);
    assert_eq!(image_tokens, crate::llm::image::MAX_IMAGE_TOKENS);
}
