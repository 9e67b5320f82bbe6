//! `[[models]]` entries.

use serde::{Deserialize, Serialize};

/// The wire protocol a model is reached by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Ollama,
    Openai,
    Anthropic,
    Bedrock,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Ollama => "ollama",
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Bedrock => "bedrock",
        }
    }

    /// The base URL each ecosystem documents, used when an entry gives none. Bedrock's
    /// depends on the region: see [`bedrock_url`].
    pub fn default_url(self) -> &'static str {
        match self {
            ProviderKind::Ollama => "http://127.0.0.1:11434",
            ProviderKind::Openai => "http://127.0.0.1:8080/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
            ProviderKind::Bedrock => "https://bedrock-runtime.us-east-1.amazonaws.com",
        }
    }
}

/// The variable holding a Bedrock API key (the bearer alternative to SigV4 signing).
pub const BEDROCK_KEY_ENV: &str = "AWS_BEARER_TOKEN_BEDROCK";

/// The Bedrock runtime endpoint of a region.
pub fn bedrock_url(region: &str) -> String {
    format!("https://bedrock-runtime.{region}.amazonaws.com")
}

/// Seconds without a byte from a model server before giving up. Generous because a local
/// model on a laptop CPU can take minutes to process a long prompt before its first token.
pub const DEFAULT_TIMEOUT_SECS: u64 = 300;

/// One model a session can talk to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelConfig {
    /// The name used by `--model`, `LINGGEN_MODEL` and `[agent] default_model`.
    pub id: String,
    pub provider: ProviderKind,
    /// The model name the server knows (`qwen2.5-coder:7b`, `gpt-4o-mini`, ...).
    pub model: String,
    /// Base URL as the ecosystem writes it (no trailing slash); for a pool, its first
    /// server.
    pub url: String,
    /// `url = ["http://gpu1:11434", "http://gpu2:11434"]`: every server of a pool, `url`
    /// first; empty for a single server.
    pub pool: Vec<String>,
    /// The AWS region a Bedrock model is served from (what requests are signed for).
    pub region: Option<String>,
    /// Name of the environment variable holding the API key, if any.
    pub api_key_env: Option<String>,
    /// Context window in tokens, when known from config.
    pub context_window: Option<u32>,
    /// Maximum concurrent requests to this model.
    pub max_inflight: u32,
    /// Seconds without a byte from the server before a request is abandoned.
    pub timeout_secs: u64,
    /// Upper bound on tokens generated per response (`max_tokens`, Ollama's
    /// `num_predict`); the server's default when absent (Anthropic: 8192).
    pub max_tokens: Option<u32>,
    /// `local = true|false`: whether it counts as a local model (for the `local` and
    /// `cloud` hints, and `linggen models`); `None`: decided by its URL.
    pub local: Option<bool>,
}

impl ModelConfig {
    /// An entry with the defaults a `[[models]]` table gets for what it leaves out.
    pub fn new(id: &str, provider: ProviderKind, model: &str, url: &str) -> ModelConfig {
        ModelConfig {
            id: id.to_string(),
            provider,
            model: model.to_string(),
            url: url.trim_end_matches('/').to_string(),
            pool: Vec::new(),
            region: None,
            api_key_env: None,
            context_window: None,
            max_inflight: 1,
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            max_tokens: None,
            local: None,
        }
    }

    /// The servers that serve this model: the pool's, or the one `url`.
    pub fn servers(&self) -> Vec<&str> {
        if self.pool.is_empty() {
            vec![self.url.as_str()]
        } else {
            self.pool.iter().map(String::as_str).collect()
        }
    }

    /// Local when `local = true` says so, or, unset, when its URL is this machine or a
    /// private network.
    pub fn is_local(&self) -> bool {
        self.local.unwrap_or_else(|| is_local_url(&self.url))
    }

    /// The API key, read from the environment variable the entry names.
    pub fn api_key(&self) -> Option<String> {
        let var = self.api_key_env.as_deref()?;
        std::env::var(var).ok().filter(|v| !v.is_empty())
    }
}

/// Whether a server URL points at this machine or a private network.
pub fn is_local_url(url: &str) -> bool {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = after_scheme.split('/').next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    host == "localhost"
        || host.ends_with(".local")
        || match host.parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V4(ip)) => {
                ip.is_loopback() || ip.is_private() || ip.is_link_local()
            }
            Ok(std::net::IpAddr::V6(ip)) => ip.is_loopback(),
            Err(_) => false,
        }
}
