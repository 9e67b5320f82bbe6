//! Which configured model serves each model call. A [`Router`] holds the session's models
//! (each one server or a pool of them) and the `[routing]` policy; for every call it makes
//! a [`Plan`]: the models to try, in order, and why. The session walks the plan, moving on
//! when a model fails in a way another model can help with ([`falls_back`]).

pub mod capacity;
pub mod complexity;
pub mod tokenizers;

use std::sync::Arc;
use std::time::Duration;

pub use complexity::{Signal, assess, estimate_tokens};

use super::Provider;
use super::error::{ErrorKind, LlmError};
use crate::config::ModelConfig;
use crate::config::routing::{CLOUD_FIRST, Complexity, LOCAL_FIRST, RoutingConfig, WhenBusy};
use crate::sync::lock;
use capacity::{Server, Slot};

/// How long asking a server for its context window may take before it counts as unknown.
const WINDOW_PROBE: Duration = Duration::from_secs(3);

/// What decides a run's model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// The `[routing]` policy, per call (`/model auto`); without `[routing]`, the default
    /// model.
    Auto,
    /// One model for every call (`--model ID`, `/model ID`).
    Pinned(String),
    /// An agent's or skill's `model`: `local`, `cloud` or a model id, tried first; the
    /// policy's order after it.
    Hint(String),
}

/// One server of a model, with its process-wide capacity and health.
pub struct Member {
    pub url: String,
    pub provider: Arc<dyn Provider>,
    pub server: Arc<Server>,
}

/// A configured model: one server, or a pool of servers that share its load.
pub struct Model {
    pub config: ModelConfig,
    members: Vec<Member>,
    window: tokio::sync::OnceCell<Option<u32>>,
    /// Whether the person was told that this model's window cuts prompts (once a session).
    pub truncation_told: std::sync::atomic::AtomicBool,
    /// Characters per token of this model's tokenizer, learnt from the usage its server
    /// reports (see [`Model::calibrate`]); 4 until then.
    chars_per_token: std::sync::Mutex<Option<f64>>,
}

impl Model {
    /// `members` are (url, provider) for each server, in the configured order.
    pub fn new(config: ModelConfig, members: Vec<(String, Arc<dyn Provider>)>) -> Model {
        let members = members
            .into_iter()
            .map(|(url, provider)| Member {
                server: Server::get(&config.id, &url, config.max_inflight),
                url,
                provider,
            })
            .collect();
        Model {
            config,
            members,
            window: tokio::sync::OnceCell::new(),
            truncation_told: std::sync::atomic::AtomicBool::new(false),
            chars_per_token: std::sync::Mutex::new(None),
        }
    }

    /// Tokens that `chars` characters of prompt cost with this model, as far as known.
    pub fn estimate(&self, chars: usize) -> u64 {
        match *self.ratio() {
            Some(ratio) => (chars as f64 / ratio).ceil() as u64,
            None => estimate_tokens(chars),
        }
    }

    /// Characters that make `tokens` tokens with this model, as far as known.
    pub fn chars_for(&self, tokens: f64) -> usize {
        (tokens * self.ratio().unwrap_or(4.0)) as usize
    }

    /// Learns from a response: `chars` were sent and the server counted `tokens`. Ratios no
    /// tokenizer produces (a server that counts only the part of the prompt it had not
    /// cached, as Ollama does) are ignored; the rest move the estimate a third of the way.
    pub fn calibrate(&self, chars: usize, tokens: u64) {
        if tokens == 0 {
            return;
        }
        let ratio = chars as f64 / tokens as f64;
        if !(1.5..=8.0).contains(&ratio) {
            return;
        }
        let mut known = self.ratio();
        *known = Some(match *known {
            Some(old) => old + (ratio - old) / 3.0,
            None => ratio,
        });
    }

    /// The characters per token learned so far, if any.
    pub fn ratio_now(&self) -> Option<f64> {
        *self.ratio()
    }

    /// Starts from a ratio learned in an earlier process (see [`tokenizers`]).
    pub fn seed_ratio(&self, ratio: f64) {
        if (1.5..=8.0).contains(&ratio) {
            *self.ratio() = Some(ratio);
        }
    }

    fn ratio(&self) -> std::sync::MutexGuard<'_, Option<f64>> {
        lock(&self.chars_per_token)
    }

    pub fn id(&self) -> &str {
        &self.config.id
    }

    /// Whether requests to it may carry images (see `ModelConfig::accepts_images`).
    pub fn accepts_images(&self) -> bool {
        self.config.accepts_images()
    }

    /// `id (model @ url)`, how the model is named to people.
    pub fn label(&self) -> String {
        let c = &self.config;
        match self.members.len() {
            1 => format!("{} ({} @ {})", c.id, c.model, c.url),
            n => format!("{} ({} @ pool of {n})", c.id, c.model),
        }
    }

    /// Every server is in its cool-down.
    pub fn cooling(&self) -> bool {
        self.members.iter().all(|m| m.server.cooling())
    }

    /// The servers other than `skip`, healthy ones first, least busy first (a pool shares
    /// the load by in-flight count).
    pub fn others(&self, skip: &[String]) -> Vec<&Member> {
        let mut members: Vec<&Member> = self
            .members
            .iter()
            .filter(|m| !skip.contains(&m.url))
            .collect();
        members.sort_by_key(|m| (m.server.cooling(), m.server.in_flight()));
        members
    }

    /// A server (not in `skip`) with a free slot now, if any.
    pub fn try_slot(&self, skip: &[String]) -> Option<(&Member, Slot)> {
        self.others(skip)
            .into_iter()
            .find_map(|m| m.server.try_slot().map(|slot| (m, slot)))
    }

    /// Waits for a slot on the preferred server not in `skip` (every server, when all
    /// are skipped).
    pub async fn slot(&self, skip: &[String]) -> (&Member, Slot) {
        let member = match self.others(skip).first() {
            Some(member) => *member,
            None => &self.members[0],
        };
        (member, member.server.slot().await)
    }

    /// Whether some server has a free slot now.
    pub fn has_free_slot(&self) -> bool {
        self.members
            .iter()
            .any(|m| m.server.in_flight() < m.server.limit())
    }

    /// The context window in tokens: configured, else asked of the first server once.
    pub async fn context_window(&self) -> Option<u32> {
        if let Some(n) = self.config.context_window {
            return Some(n);
        }
        *self
            .window
            .get_or_init(|| async {
                let probe = self.members[0].provider.context_window();
                tokio::time::timeout(WINDOW_PROBE, probe)
                    .await
                    .ok()
                    .flatten()
            })
            .await
    }
}

/// The models to try for one call, best first.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// `local-first`, `cloud-first`, a configured policy, `pinned`, or `default` (no
    /// `[routing]`).
    pub policy: String,
    pub complexity: Complexity,
    /// What the complexity came from (`"1,234 tokens"`).
    pub assessed: String,
    /// Model indices with why each is there; later ones are fallbacks.
    pub order: Vec<(usize, String)>,
}

/// The session's models and how calls are spread over them.
pub struct Router {
    models: Vec<Model>,
    routing: Option<RoutingConfig>,
    /// The model that serves calls without `[routing]`.
    default: usize,
}

/// A model choice or hint that names no configured model; says which ids there are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoSuchModel {
    #[error("no configured model `{id}` (models: {ids}; `auto` lets the policy choose)")]
    Id { id: String, ids: String },
    #[error("no configured model matches (ids: {ids}; `local` and `cloud` pick by URL)")]
    Hint { ids: String },
}

impl Router {
    /// `default` indexes `models`, which must not be empty.
    pub fn new(models: Vec<Model>, routing: Option<RoutingConfig>, default: usize) -> Router {
        assert!(!models.is_empty(), "a router needs at least one model");
        let default = default.min(models.len() - 1);
        Router {
            models,
            routing,
            default,
        }
    }

    /// One model for everything (tests, and callers with a single provider).
    pub fn single(config: ModelConfig, provider: Arc<dyn Provider>) -> Router {
        let url = config.url.clone();
        Router::new(vec![Model::new(config, vec![(url, provider)])], None, 0)
    }

    pub fn models(&self) -> &[Model] {
        &self.models
    }

    pub fn model(&self, index: usize) -> &Model {
        &self.models[index]
    }

    pub fn routing(&self) -> Option<&RoutingConfig> {
        self.routing.as_ref()
    }

    fn index(&self, id: &str) -> Option<usize> {
        self.models.iter().position(|m| m.id() == id)
    }

    /// The choice `text` asks for (`/model`): `auto`, a model id, or `local` / `cloud`
    /// (those models first); or why not.
    pub fn choose(&self, text: &str) -> Result<Choice, NoSuchModel> {
        let text = text.trim();
        if text == "auto" {
            return Ok(Choice::Auto);
        }
        if matches!(text, "local" | "cloud") && self.index(text).is_none() {
            self.check_hint(text)?;
            return Ok(Choice::Hint(text.to_string()));
        }
        match self.index(text) {
            Some(_) => Ok(Choice::Pinned(text.to_string())),
            None => Err(NoSuchModel::Id {
                id: text.to_string(),
                ids: self.ids(),
            }),
        }
    }

    /// `Ok` when an agent's or skill's `model` hint names something that exists.
    pub fn check_hint(&self, hint: &str) -> Result<(), NoSuchModel> {
        let found = match hint {
            "local" => self.models.iter().any(|m| m.config.is_local()),
            "cloud" => self.models.iter().any(|m| !m.config.is_local()),
            id => self.index(id).is_some(),
        };
        if found {
            return Ok(());
        }
        Err(NoSuchModel::Hint { ids: self.ids() })
    }

    fn ids(&self) -> String {
        self.models
            .iter()
            .map(|m| m.id())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// How people read a choice: the model's label, or `auto (local-first)`.
    pub fn label(&self, choice: &Choice) -> String {
        let named = match choice {
            Choice::Pinned(id) | Choice::Hint(id) => self.index(id),
            Choice::Auto => None,
        };
        match (named, choice, &self.routing) {
            (Some(i), _, _) => self.models[i].label(),
            (None, Choice::Auto, Some(r)) => format!("auto ({})", r.default_policy),
            (None, Choice::Hint(hint), _) => {
                let plan = self.hinted_order(hint, Complexity::Low).1;
                let first = plan.first().map_or(self.default, |(i, _)| *i);
                format!("{hint} (first {})", self.models[first].label())
            }
            _ => self.models[self.default].label(),
        }
    }

    /// The model id a new session row records: the pinned model, or `auto`.
    pub fn stored_id(&self, choice: &Choice) -> String {
        match (choice, &self.routing) {
            (Choice::Pinned(id), _) => id.clone(),
            (_, Some(_)) => "auto".to_string(),
            _ => self.models[self.default].id().to_string(),
        }
    }

    pub fn cooldown(&self) -> Duration {
        Duration::from_secs(self.routing.as_ref().map_or(60, |r| r.cooldown_secs))
    }

    pub fn when_busy(&self) -> WhenBusy {
        self.routing
            .as_ref()
            .map_or(WhenBusy::Wait, |r| r.when_busy)
    }

    /// The index of the model a call under `choice` goes to first, before anything is known
    /// of the call: whose tokenizer and window size it.
    pub fn likely(&self, choice: &Choice) -> usize {
        self.plan(choice, &Signal::default()).order[0].0
    }

    /// The models to try for a call under `choice` with `signal`.
    pub fn plan(&self, choice: &Choice, signal: &Signal) -> Plan {
        let thresholds = self
            .routing
            .as_ref()
            .map(|r| r.thresholds)
            .unwrap_or_default();
        let mut signal = *signal;
        if let Choice::Hint(hint) = choice {
            signal.hint = match hint.as_str() {
                "local" => Some(Complexity::Low),
                "cloud" => Some(Complexity::High),
                _ => None,
            };
        }
        let (complexity, assessed) = assess(&signal, &thresholds);
        let (policy, mut order) = match choice {
            Choice::Pinned(id) => {
                let index = self.index(id).unwrap_or(self.default);
                (
                    "pinned".to_string(),
                    vec![(index, "pinned with /model or --model".into())],
                )
            }
            Choice::Auto => self.policy_order(complexity),
            Choice::Hint(hint) => self.hinted_order(hint, complexity),
        };
        let fallback = self.routing.as_ref().is_some_and(|r| r.auto_fallback);
        if !fallback || matches!(choice, Choice::Pinned(_)) {
            order.truncate(1);
        }
        // A model in its cool-down is tried only after the others.
        let (mut healthy, cooling): (Vec<_>, Vec<_>) = order
            .into_iter()
            .partition(|(i, _)| !self.models[*i].cooling());
        if let Some((_, why)) = healthy.first_mut()
            && !cooling.is_empty()
        {
            let ids: Vec<&str> = cooling.iter().map(|(i, _)| self.models[*i].id()).collect();
            why.push_str(&format!(" ({} cooling down after failing)", ids.join(", ")));
        }
        healthy.extend(cooling);
        if healthy.is_empty() {
            // Not expected (every policy names at least one configured model); a call is
            // never left without one.
            healthy.push((self.default, "the default model".to_string()));
        }
        Plan {
            policy,
            complexity,
            assessed,
            order: healthy,
        }
    }

    /// The default policy's order for a call of `complexity`.
    fn policy_order(&self, complexity: Complexity) -> (String, Vec<(usize, String)>) {
        let Some(routing) = &self.routing else {
            let why = "the default model ([agent] default_model, else the first)";
            return ("default".to_string(), vec![(self.default, why.to_string())]);
        };
        let name = routing.default_policy.clone();
        let order = match name.as_str() {
            LOCAL_FIRST => self.by_locality(true, &name),
            CLOUD_FIRST => self.by_locality(false, &name),
            _ => self.by_rules(routing, &name, complexity),
        };
        (name, order)
    }

    /// Local models first (configured order), then cloud ones; or the reverse.
    fn by_locality(&self, local_first: bool, why: &str) -> Vec<(usize, String)> {
        let mut order: Vec<(usize, String)> = Vec::new();
        for want_local in [local_first, !local_first] {
            for (i, m) in self.models.iter().enumerate() {
                if m.config.is_local() == want_local {
                    let kind = if want_local { "local" } else { "cloud" };
                    order.push((i, format!("{why}: a {kind} model")));
                }
            }
        }
        order
    }

    /// A configured policy: the rules that admit `complexity`, by priority; when none
    /// does, all of them by priority (a call is never left without a model).
    fn by_rules(
        &self,
        routing: &RoutingConfig,
        name: &str,
        complexity: Complexity,
    ) -> Vec<(usize, String)> {
        let Some(policy) = routing.policy(name) else {
            return self.by_locality(true, LOCAL_FIRST);
        };
        let mut rules: Vec<_> = policy.rules.iter().collect();
        rules.sort_by_key(|r| r.priority);
        let admitted: Vec<_> = rules.iter().filter(|r| r.admits(complexity)).collect();
        let c = complexity.as_str();
        let chosen: Vec<(&crate::config::routing::PolicyRule, String)> = if admitted.is_empty() {
            rules
                .iter()
                .map(|r| (*r, format!("{name}: no rule admits {c}, by priority")))
                .collect()
        } else {
            admitted
                .into_iter()
                .map(|r| (*r, format!("{name}: priority {} admits {c}", r.priority)))
                .collect()
        };
        chosen
            .into_iter()
            .filter_map(|(rule, why)| self.index(&rule.model).map(|i| (i, why)))
            .collect()
    }

    /// A hint's models first, then the policy's order for the rest.
    fn hinted_order(&self, hint: &str, complexity: Complexity) -> (String, Vec<(usize, String)>) {
        let (policy, rest) = self.policy_order(complexity);
        let matches = |m: &Model| match hint {
            "local" => m.config.is_local(),
            "cloud" => !m.config.is_local(),
            id => m.id() == id,
        };
        let mut order: Vec<(usize, String)> = self
            .models
            .iter()
            .enumerate()
            .filter(|(_, m)| matches(m))
            .map(|(i, _)| (i, format!("`{hint}` hint")))
            .collect();
        if order.is_empty() {
            return (policy, rest);
        }
        if self.routing.is_none() {
            order.truncate(1);
        }
        for (i, why) in rest {
            if !order.iter().any(|(j, _)| *j == i) {
                order.push((i, why));
            }
        }
        (policy, order)
    }
}

/// Whether the same server is asked once more before moving on: the answer had started and
/// broke off (the connection dropped, or went silent for `[llm] stall_secs`), which a
/// restarted or momentarily stuck local server usually answers the second time. The text
/// already streamed is replaced by the new answer, never joined to it.
pub fn asks_again(error: &LlmError) -> bool {
    matches!(
        error.kind,
        ErrorKind::Disconnected(_) | ErrorKind::Stalled(_)
    )
}

/// Why another model may do better than `error`'s, or `None` when the error would be the
/// same anywhere (a malformed request, a wrong key) or is not the server's fault.
pub fn falls_back(error: &LlmError) -> Option<String> {
    match &error.kind {
        ErrorKind::Connect(_) => Some("cannot be reached".into()),
        ErrorKind::Timeout(d) => Some(format!("sent nothing for {} s", d.as_secs())),
        ErrorKind::Disconnected(_) => Some("broke off the answer".into()),
        ErrorKind::Stalled(d) => Some(format!("went silent mid-answer for {} s", d.as_secs())),
        ErrorKind::Http {
            status, message, ..
        } => {
            if is_context_rejection(message) {
                Some(format!("rejected the prompt as too long (HTTP {status})"))
            } else if *status == 429 || is_quota(message) {
                Some(format!("is out of quota or rate-limited (HTTP {status})"))
            } else if *status >= 500 {
                Some(format!("failed with HTTP {status}"))
            } else {
                None
            }
        }
        ErrorKind::Server(message) if is_context_rejection(message) => {
            Some("rejected the prompt as too long".into())
        }
        ErrorKind::Server(message) if is_quota(message) => Some("is out of quota".into()),
        _ => None,
    }
}

/// A server's "the prompt does not fit" in the words llama.cpp, Ollama, OpenAI,
/// Anthropic and Bedrock use.
pub fn is_context_rejection(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "context size",
        "context length",
        "context_length",
        "context window",
        "maximum context",
        "prompt is too long",
        "input is too long",
        "too many tokens",
        "exceed_context",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// The prompt's size in tokens as a context rejection states it: llama.cpp's `request (N
/// tokens) exceeds …`, OpenAI's `your messages resulted in N tokens`, Anthropic's `prompt
/// is too long: N tokens > M maximum`. The server's own count is worth more than any
/// estimate of ours.
pub fn rejected_prompt_tokens(message: &str) -> Option<u64> {
    let m = message.to_ascii_lowercase();
    ["request (", "resulted in ", "prompt is too long: "]
        .iter()
        .find_map(|lead| {
            let rest = &m[m.find(lead)? + lead.len()..];
            let end = rest
                .find(|c: char| !c.is_ascii_digit() && c != ',')
                .unwrap_or(rest.len());
            let (number, after) = rest.split_at(end);
            if !after.trim_start().starts_with("token") {
                return None;
            }
            number.replace(',', "").parse().ok()
        })
}

/// An account that ran out (no point retrying soon): OpenAI's `insufficient_quota`,
/// Anthropic's credit balance, Bedrock's throttling of a quota.
pub fn is_quota(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    ["quota", "credit balance", "billing"]
        .iter()
        .any(|p| m.contains(p))
}

#[cfg(test)]
mod tests;
