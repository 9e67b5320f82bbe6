use super::*;
use crate::config::ProviderKind;
use crate::config::routing::{Policy, PolicyRule};

/// A provider that is never called: planning does not talk to servers.
struct Silent;

#[async_trait::async_trait]
impl Provider for Silent {
    async fn chat(
        &self,
        _: crate::llm::ChatRequest<'_>,
        _: crate::llm::EventSink<'_>,
    ) -> Result<(), LlmError> {
        unreachable!("planning never calls a model")
    }
    fn describe(&self) -> String {
        "silent".into()
    }
}

fn model(id: &str, url: &str) -> Model {
    let config = ModelConfig::new(id, ProviderKind::Openai, "m", url);
    Model::new(config, vec![(url.to_string(), Arc::new(Silent))])
}

fn router(routing: Option<RoutingConfig>) -> Router {
    Router::new(
        vec![
            model("sonnet", "https://api.example.com/plan-sonnet"),
            model("qwen", "http://127.0.0.1:1/plan-qwen"),
            model("opus", "https://api.example.com/plan-opus"),
        ],
        routing,
        0,
    )
}

fn ids(r: &Router, plan: &Plan) -> Vec<String> {
    plan.order
        .iter()
        .map(|(i, _)| r.model(*i).id().to_string())
        .collect()
}

fn tokens(n: u64) -> Signal {
    Signal {
        prompt_tokens: n,
        ..Signal::default()
    }
}

#[test]
fn without_routing_the_default_model_serves_everything() {
    let r = router(None);
    let plan = r.plan(&Choice::Auto, &tokens(50_000));
    assert_eq!(plan.policy, "default");
    assert_eq!(ids(&r, &plan), ["sonnet"]);
    assert_eq!(
        r.label(&Choice::Auto),
        "sonnet (m @ https://api.example.com/plan-sonnet)"
    );
    // A hint still routes, as before `[routing]` existed, with no fallback.
    let hinted = r.plan(&Choice::Hint("local".into()), &tokens(10));
    assert_eq!(ids(&r, &hinted), ["qwen"]);
}

#[test]
fn local_first_and_cloud_first_order_by_locality() {
    let r = router(Some(RoutingConfig::default()));
    let plan = r.plan(&Choice::Auto, &tokens(10));
    assert_eq!(plan.policy, "local-first");
    assert_eq!(ids(&r, &plan), ["qwen", "sonnet", "opus"]);
    assert_eq!(r.label(&Choice::Auto), "auto (local-first)");
    let cloud = Some(RoutingConfig {
        default_policy: "cloud-first".into(),
        ..RoutingConfig::default()
    });
    let r = router(cloud);
    assert_eq!(
        ids(&r, &r.plan(&Choice::Auto, &tokens(10))),
        ["sonnet", "opus", "qwen"]
    );
}

#[test]
fn a_policy_picks_by_complexity_and_priority() {
    let rule = |model: &str, priority, min, max| PolicyRule {
        model: model.into(),
        priority,
        min_complexity: min,
        max_complexity: max,
    };
    let routing = RoutingConfig {
        default_policy: "balanced".into(),
        policies: vec![Policy {
            name: "balanced".into(),
            rules: vec![
                rule("opus", 3, Some(Complexity::High), None),
                rule("qwen", 1, None, Some(Complexity::Medium)),
                rule("sonnet", 2, None, None),
            ],
        }],
        ..RoutingConfig::default()
    };
    let r = router(Some(routing));
    let short = r.plan(&Choice::Auto, &tokens(500));
    assert_eq!(short.complexity, Complexity::Low);
    assert_eq!(ids(&r, &short), ["qwen", "sonnet"]);
    assert_eq!(short.order[0].1, "balanced: priority 1 admits low");
    let long = r.plan(&Choice::Auto, &tokens(9_000));
    assert_eq!(long.complexity, Complexity::High);
    assert_eq!(ids(&r, &long), ["sonnet", "opus"]);
    // Pinned: that model only, whatever the policy says.
    let pinned = r.plan(&Choice::Pinned("opus".into()), &tokens(10));
    assert_eq!(
        (pinned.policy.as_str(), ids(&r, &pinned)),
        ("pinned", vec!["opus".to_string()])
    );
    // A hint goes first, the policy's order after it; `cloud` means high.
    let hinted = r.plan(&Choice::Hint("cloud".into()), &tokens(10));
    assert_eq!(hinted.complexity, Complexity::High);
    assert_eq!(ids(&r, &hinted), ["sonnet", "opus"]);
}

#[test]
fn without_auto_fallback_one_model_is_tried_and_cooling_ones_go_last() {
    let routing = RoutingConfig {
        auto_fallback: false,
        ..RoutingConfig::default()
    };
    let r = router(Some(routing));
    assert_eq!(ids(&r, &r.plan(&Choice::Auto, &tokens(10))), ["qwen"]);
    let r = router(Some(RoutingConfig::default()));
    r.model(1).members[0]
        .server
        .cool_down(Duration::from_secs(60));
    let plan = r.plan(&Choice::Auto, &tokens(10));
    assert_eq!(ids(&r, &plan), ["sonnet", "opus", "qwen"]);
    assert!(
        plan.order[0]
            .1
            .ends_with("(qwen cooling down after failing)"),
        "{plan:?}"
    );
    r.model(1).members[0].server.recovered();
}

#[test]
fn choices_and_hints_are_checked() {
    let r = router(None);
    assert_eq!(r.choose("auto"), Ok(Choice::Auto));
    assert_eq!(r.choose("qwen"), Ok(Choice::Pinned("qwen".into())));
    assert!(
        r.choose("gpt")
            .unwrap_err()
            .to_string()
            .contains("sonnet, qwen, opus")
    );
    assert_eq!(r.choose("local"), Ok(Choice::Hint("local".into())));
    assert!(
        r.label(&Choice::Hint("local".into()))
            .starts_with("local (first qwen (m @")
    );
    assert!(r.check_hint("local").is_ok());
    assert!(r.check_hint("nope").is_err());
}

#[test]
fn errors_that_another_model_can_help_with() {
    let e = |kind| LlmError::new("m", "u", kind);
    let http = |status, message: &str| ErrorKind::Http {
        status,
        message: message.into(),
        retry_after: None,
    };
    assert!(falls_back(&e(ErrorKind::Connect("refused".into()))).is_some());
    assert!(falls_back(&e(http(500, "boom"))).is_some());
    assert!(falls_back(&e(http(429, "slow down"))).is_some());
    let context = "the request exceeds the available context size, try increasing it";
    assert!(
        falls_back(&e(http(400, context)))
            .unwrap()
            .contains("too long")
    );
    assert!(
        falls_back(&e(http(
            400,
            "prompt is too long: 210000 tokens > 200000 maximum"
        )))
        .is_some()
    );
    assert!(falls_back(&e(http(400, "bad tool schema"))).is_none());
    assert!(falls_back(&e(http(401, "invalid x-api-key"))).is_none());
    assert!(falls_back(&e(ErrorKind::Malformed("x".into()))).is_none());
    // Quota is not retried on the same model: another one may help, waiting does not.
    assert!(!http(429, "You exceeded your current quota").is_retryable());
    assert!(http(429, "slow down").is_retryable());
}

#[test]
fn the_estimate_learns_each_models_tokenizer() {
    let m = model("q", "http://127.0.0.1:1/cal");
    assert_eq!(m.estimate(4_000), 1_000);
    // The server counted 1,000 tokens for 3,000 characters: 3 characters a token.
    m.calibrate(3_000, 1_000);
    assert_eq!(m.estimate(3_000), 1_000);
    // A cached prompt counted as 10 tokens says nothing about the tokenizer.
    m.calibrate(3_000, 10);
    assert_eq!(m.estimate(3_000), 1_000);
    // Later reports move it part of the way.
    m.calibrate(6_000, 1_000);
    assert_eq!(m.estimate(4_000), 1_000);
}

#[test]
fn a_rejection_says_how_long_the_prompt_was() {
    let cases = [
        (
            "request (3031 tokens) exceeds the available context size (2048 tokens), try increasing it",
            Some(3031),
        ),
        (
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9,100 tokens. Please reduce the length of the messages.",
            Some(9100),
        ),
        (
            "prompt is too long: 210345 tokens > 200000 maximum",
            Some(210_345),
        ),
        ("the request exceeds the available context size", None),
        ("request (hello) failed", None),
    ];
    for (message, tokens) in cases {
        assert_eq!(rejected_prompt_tokens(message), tokens, "{message}");
    }
}
