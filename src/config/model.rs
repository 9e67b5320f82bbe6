//! `[[models]]` entries.

use std::net::{Ipv4Addr, Ipv6Addr};

use reqwest::Url;
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

/// `[llm] stall_secs` by default: a stream that has started and then goes silent this long
/// is treated as dropped. Far below [`DEFAULT_TIMEOUT_SECS`], which only has to allow for
/// the wait before the first token; once a model writes, it writes every second or so.
pub const DEFAULT_STALL_SECS: u64 = 60;

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
    /// `[llm] stall_secs`, the same for every model (not a `[[models]]` key): seconds a
    /// stream that has started may stay silent before it counts as dropped.
    #[serde(skip)]
    pub stall_secs: u64,
    /// Upper bound on tokens generated per response (`max_tokens`, Ollama's
    /// `num_predict`); the server's default when absent (Anthropic: 8192).
    pub max_tokens: Option<u32>,
    /// `local = true|false`: whether it counts as a local model (for the `local` and
    /// `cloud` hints, and `linggen models`); `None`: decided by its URL.
    pub local: Option<bool>,
    /// `images = true|false`: whether the model is sent the images tools return; `None`:
    /// decided by [`ModelConfig::accepts_images`].
    pub images: Option<bool>,
    /// `price_input` / `price_output`: US dollars per million input / output tokens, for
    /// `/cost`; `None`: no price configured (nothing is guessed).
    pub price_input: Option<f64>,
    pub price_output: Option<f64>,
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
            stall_secs: DEFAULT_STALL_SECS,
            max_tokens: None,
            local: None,
            images: None,
            price_input: None,
            price_output: None,
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
    /// private network ([`is_nearby_url`]). For routing and display only: trust never
    /// asks this (a project's `local = true` is the project's say, not the address).
    pub fn is_local(&self) -> bool {
        self.local.unwrap_or_else(|| is_nearby_url(&self.url))
    }

    /// Whether requests to this model carry images (see [`crate::llm::image`]); without
    /// them an image is a line of text saying it was left out. `images = …` decides; unset,
    /// only the providers' own clouds take them (api.anthropic.com, api.openai.com,
    /// Bedrock). Any other server speaking their protocols (llama.cpp, LM Studio, vLLM, a
    /// gateway, another vendor's compatible API) and Ollama may serve a model that reads
    /// text only, and a server asked to read an image its model cannot fails the request,
    /// and every request after it, since the image stays in the history; the note costs
    /// one line of config to lift.
    pub fn accepts_images(&self) -> bool {
        let served_by = |cloud: &str| {
            host_is(
                &self.url,
                |host| matches!(host, Host::Domain(d) if d == cloud),
            )
        };
        self.images.unwrap_or_else(|| match self.provider {
            ProviderKind::Ollama => false,
            ProviderKind::Openai => served_by("api.openai.com"),
            ProviderKind::Anthropic => served_by("api.anthropic.com"),
            ProviderKind::Bedrock => true,
        })
    }

    /// The API key, read from the environment variable the entry names.
    pub fn api_key(&self) -> Option<String> {
        let var = self.api_key_env.as_deref()?;
        std::env::var(var).ok().filter(|v| !v.is_empty())
    }
}

/// Whether requests to `url` stay on this machine: its host, as reqwest's own parser
/// (WHATWG `url`) reads it, is `localhost`, `127.0.0.0/8` or `::1` (IPv4-mapped too). This
/// is the test trust decisions use. Reading the URL any other way lets spellings like
/// `http://localhost:1@elsewhere/` (a user name and password before `@`) pass for local
/// while the request goes elsewhere. What does not parse is not local (nor sent anywhere).
///
/// The HTTP clients append the endpoint's path after a `/` (`llm::http::join_url`), which
/// cannot move the host: the authority ends at that `/` whatever came before it.
pub fn is_loopback_url(url: &str) -> bool {
    host_is(url, |host| match host {
        Host::Domain(name) => is_localhost_name(name),
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    })
}

/// Whether `url` is this machine or a private network (`10/8`, `172.16/12`, `192.168/16`,
/// `169.254/16`, `*.local`), by the same parser. For routing's `local`/`cloud` preference
/// and `linggen models`, where a GPU box on the LAN is "local" in the sense that matters
/// there (no per-token bill, nothing leaves the site). It grants nothing: whether a
/// project's model may receive the conversation untrusted is [`is_loopback_url`]'s call,
/// because a private address can be anyone's server on the network you happen to be on.
pub fn is_nearby_url(url: &str) -> bool {
    is_loopback_url(url)
        || host_is(url, |host| match host {
            Host::Domain(name) => name.trim_end_matches('.').ends_with(".local"),
            Host::Ipv4(ip) => ip.is_private() || ip.is_link_local(),
            Host::Ipv6(_) => false,
        })
}

/// `localhost`, in any case, with or without the trailing dot of a fully qualified name.
fn is_localhost_name(name: &str) -> bool {
    name.strip_suffix('.')
        .unwrap_or(name)
        .eq_ignore_ascii_case("localhost")
}

/// A URL's host as the parser reads it. (reqwest re-exports `Url` but not `url::Host`;
/// `host_str` is its serialization: domains lower-cased and punycoded, IPv4 in dotted form
/// (`127.1` is `127.0.0.1`), IPv6 bracketed; a domain never looks like an address.)
enum Host<'a> {
    Domain(&'a str),
    Ipv4(Ipv4Addr),
    Ipv6(Ipv6Addr),
}

fn host_is(url: &str, test: impl Fn(Host<'_>) -> bool) -> bool {
    let Ok(parsed) = Url::parse(url) else {
        return false;
    };
    let Some(text) = parsed.host_str().filter(|h| !h.is_empty()) else {
        return false;
    };
    let host = if let Some(inner) = text.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        match inner.parse() {
            Ok(ip) => Host::Ipv6(ip),
            Err(_) => return false,
        }
    } else if let Ok(ip) = text.parse() {
        Host::Ipv4(ip)
    } else {
        Host::Domain(text)
    };
    test(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where reqwest would send a request for `url`: what the test compares against.
    fn sent_to(url: &str) -> Option<String> {
        reqwest::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
    }

    #[test]
    fn this_machine_is_local() {
        for url in [
            "http://localhost:11434",
            "http://127.0.0.1:8080/v1",
            "http://[::1]:1234",
            "http://LOCALHOST:11434",
            "http://localhost.:11434",
            "http://127.1:8080",
            "http://127.0.0.2:8080",
            "http://[::ffff:127.0.0.1]:8080/v1",
            "http://127.0.0.1:1@127.0.0.1:8080/v1",
            // `\` ends the host for http(s): this request does go to localhost.
            "http://localhost\\@example.invalid/",
        ] {
            assert!(is_loopback_url(url), "{url} -> {:?}", sent_to(url));
        }
    }

    #[test]
    fn a_disguised_or_distant_host_is_not_local() {
        for url in [
            "http://localhost:1@example.invalid/v1",
            "http://127.0.0.1:1@example.invalid/v1",
            "http://[::1]@example.invalid/v1",
            "http://localhost@example.invalid",
            "http://example.invalid\\localhost",
            "http://example.invalid\\@localhost/",
            "http://localhost.example.invalid/v1",
            "http://0.0.0.0:11434",
            "http://192.168.1.5:11434",
            "http://10.0.0.2:11434",
            "http://gpu.local:11434",
            "http://[fe80::1]:11434",
            "https://api.openai.com/v1",
            "localhost:11434",
            "http://[::1",
            "",
        ] {
            assert!(!is_loopback_url(url), "{url} -> {:?}", sent_to(url));
        }
    }

    #[test]
    fn routing_counts_private_networks_as_local_by_the_real_host() {
        let local = |url: &str| ModelConfig::new("m", ProviderKind::Ollama, "q", url).is_local();
        for url in [
            "http://127.0.0.1:11434",
            "http://192.168.1.5:11434",
            "http://10.0.0.2:11434",
            "http://gpu.local:11434",
        ] {
            assert!(local(url), "{url}");
        }
        for url in [
            "http://192.168.1.5:1@example.invalid/v1",
            "http://gpu.local@example.invalid/v1",
            "http://localhost:1@example.invalid/v1",
            "https://api.openai.com/v1",
        ] {
            assert!(!local(url), "{url} -> {:?}", sent_to(url));
        }
    }
}
