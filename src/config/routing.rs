//! `[routing]`: which configured model serves each model call. Without the table, one
//! model (`[agent] default_model`, else the first) serves every call; with it, a policy
//! decides per call from how complex the call looks (see `llm::routing`).

use serde::{Deserialize, Serialize};

/// How demanding a model call looks, from its prompt size, how deep into tool use and
/// delegation it is, and the skill's hint.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Complexity {
    Low,
    Medium,
    High,
}

impl Complexity {
    pub fn as_str(self) -> &'static str {
        match self {
            Complexity::Low => "low",
            Complexity::Medium => "medium",
            Complexity::High => "high",
        }
    }

    /// One level up (`high` stays `high`).
    pub fn raised(self) -> Complexity {
        match self {
            Complexity::Low => Complexity::Medium,
            _ => Complexity::High,
        }
    }
}

/// The two policies every configuration has.
pub const LOCAL_FIRST: &str = "local-first";
pub const CLOUD_FIRST: &str = "cloud-first";

/// When the chosen model has no free request slot (`max_inflight`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WhenBusy {
    /// Wait for a slot of the chosen model (the status line says so).
    #[default]
    Wait,
    /// Take the next eligible model that has a free slot; wait only when none has.
    Next,
}

/// The `[routing]` table, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutingConfig {
    /// `local-first`, `cloud-first`, or the name of one of `policies`.
    pub default_policy: String,
    /// Whether a failed call moves on to the next eligible model.
    pub auto_fallback: bool,
    pub policies: Vec<Policy>,
    pub thresholds: Thresholds,
    /// How long a model that failed is skipped before it is tried again.
    pub cooldown_secs: u64,
    pub when_busy: WhenBusy,
}

impl Default for RoutingConfig {
    fn default() -> Self {
        RoutingConfig {
            default_policy: LOCAL_FIRST.to_string(),
            auto_fallback: true,
            policies: Vec::new(),
            thresholds: Thresholds::default(),
            cooldown_secs: 60,
            when_busy: WhenBusy::Wait,
        }
    }
}

/// A named list of rules (`[[routing.policies]]`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    pub name: String,
    pub rules: Vec<PolicyRule>,
}

/// One model of a policy: eligible for calls whose complexity is within its bounds; lower
/// `priority` is tried first.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyRule {
    pub model: String,
    #[serde(default)]
    pub priority: i64,
    pub min_complexity: Option<Complexity>,
    pub max_complexity: Option<Complexity>,
}

impl PolicyRule {
    pub fn admits(&self, c: Complexity) -> bool {
        self.min_complexity.is_none_or(|min| c >= min)
            && self.max_complexity.is_none_or(|max| c <= max)
    }
}

/// Where the complexity levels start (`[routing]` keys of the same names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// A prompt under this many tokens is `low`.
    pub low_below_tokens: u64,
    /// A prompt up to this many tokens is `medium`; above, `high`.
    pub medium_up_to_tokens: u64,
    /// More tool calls than this in the turn raise the level by one.
    pub raise_after_tool_calls: u32,
    /// A delegation depth of at least this raises the level by one.
    pub raise_at_delegation_depth: u32,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            low_below_tokens: 2_000,
            medium_up_to_tokens: 6_000,
            raise_after_tool_calls: 8,
            raise_at_delegation_depth: 2,
        }
    }
}

/// `[routing]` as written; every key optional, so a layer sets only what it names.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RoutingSection {
    default_policy: Option<String>,
    auto_fallback: Option<bool>,
    #[serde(default)]
    policies: Vec<Policy>,
    low_below_tokens: Option<u64>,
    medium_up_to_tokens: Option<u64>,
    raise_after_tool_calls: Option<u32>,
    raise_at_delegation_depth: Option<u32>,
    cooldown_secs: Option<u64>,
    when_busy: Option<WhenBusy>,
}

pub(super) const KEYS: &[&str] = &[
    "default_policy",
    "auto_fallback",
    "policies",
    "low_below_tokens",
    "medium_up_to_tokens",
    "raise_after_tool_calls",
    "raise_at_delegation_depth",
    "cooldown_secs",
    "when_busy",
];

impl RoutingSection {
    /// Applies this layer on top of `into` (a policy of the same name is replaced).
    pub(super) fn apply(self, into: &mut RoutingConfig) {
        if let Some(p) = self.default_policy {
            into.default_policy = p.trim().to_string();
        }
        if let Some(b) = self.auto_fallback {
            into.auto_fallback = b;
        }
        for policy in self.policies {
            match into.policies.iter_mut().find(|p| p.name == policy.name) {
                Some(existing) => *existing = policy,
                None => into.policies.push(policy),
            }
        }
        let t = &mut into.thresholds;
        t.low_below_tokens = self.low_below_tokens.unwrap_or(t.low_below_tokens);
        t.medium_up_to_tokens = self.medium_up_to_tokens.unwrap_or(t.medium_up_to_tokens);
        t.raise_after_tool_calls = self
            .raise_after_tool_calls
            .unwrap_or(t.raise_after_tool_calls);
        t.raise_at_delegation_depth = self
            .raise_at_delegation_depth
            .unwrap_or(t.raise_at_delegation_depth);
        into.cooldown_secs = self.cooldown_secs.unwrap_or(into.cooldown_secs);
        into.when_busy = self.when_busy.unwrap_or(into.when_busy);
    }
}

impl RoutingConfig {
    /// The policy named `name`, when it is one of `policies`.
    pub fn policy(&self, name: &str) -> Option<&Policy> {
        self.policies.iter().find(|p| p.name == name)
    }

    /// Checks what only the whole configuration can tell: the default policy exists, and
    /// every rule names a configured model. `Err` says what to change.
    pub(in crate::config) fn validate(&self, model_ids: &[&str]) -> Result<(), String> {
        let builtin = [LOCAL_FIRST, CLOUD_FIRST];
        if !builtin.contains(&self.default_policy.as_str())
            && self.policy(&self.default_policy).is_none()
        {
            let mut names: Vec<&str> = builtin.to_vec();
            names.extend(self.policies.iter().map(|p| p.name.as_str()));
            return Err(format!(
                "[routing] default_policy = \"{}\" is not a policy; policies: {}",
                self.default_policy,
                names.join(", ")
            ));
        }
        for policy in &self.policies {
            if builtin.contains(&policy.name.as_str()) {
                return Err(format!(
                    "[[routing.policies]] `{}` is a built-in policy's name; choose another",
                    policy.name
                ));
            }
            if policy.rules.is_empty() {
                return Err(format!(
                    "[[routing.policies]] `{}` has no rules; add at least one {{ model = \"…\" }}",
                    policy.name
                ));
            }
            for rule in &policy.rules {
                if !model_ids.contains(&rule.model.as_str()) {
                    return Err(format!(
                        "[[routing.policies]] `{}` names model `{}`, which is not configured; models: {}",
                        policy.name,
                        rule.model,
                        if model_ids.is_empty() {
                            "none".to_string()
                        } else {
                            model_ids.join(", ")
                        }
                    ));
                }
                if let (Some(min), Some(max)) = (rule.min_complexity, rule.max_complexity)
                    && min > max
                {
                    return Err(format!(
                        "[[routing.policies]] `{}`: model `{}` has min_complexity {} above max_complexity {}",
                        policy.name,
                        rule.model,
                        min.as_str(),
                        max.as_str()
                    ));
                }
            }
        }
        if self.thresholds.low_below_tokens > self.thresholds.medium_up_to_tokens {
            return Err(
                "[routing] low_below_tokens must not be above medium_up_to_tokens".to_string(),
            );
        }
        Ok(())
    }
}
