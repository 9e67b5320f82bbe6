//! Picks the model a session talks to and builds its provider: the configured entry asked
//! for (flag, env, `[agent] default_model`, else the first), or, with no `[[models]]` at all,
//! the first model of a local Ollama.

use std::sync::Arc;
use std::time::Duration;

use super::error::ErrorKind;
use super::{LlmError, Provider, anthropic, ollama, openai};
use crate::config::{Config, ConfigError, ModelConfig, ProviderKind};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Timeout for the short discovery calls (`/api/tags`, `/api/show`).
const DISCOVERY_TIMEOUT_SECS: u64 = 5;

/// A ready-to-use model.
pub struct Resolved {
    pub model: ModelConfig,
    pub provider: Arc<dyn Provider>,
}

impl Resolved {
    /// `id (model @ url)`, how the model is named to people.
    pub fn label(&self) -> String {
        format!(
            "{} ({} @ {})",
            self.model.id, self.model.model, self.model.url
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Unavailable(#[from] LlmError),
}

/// One HTTP client per process: it pools connections across requests.
pub fn http_client() -> Result<reqwest::Client, LlmError> {
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("linggen/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| {
            LlmError::new(
                "-",
                "-",
                ErrorKind::NoModel(format!("cannot set up the HTTP client: {e}")),
            )
        })
}

pub async fn resolve(
    config: &Config,
    ollama_host: Option<String>,
    http: reqwest::Client,
) -> Result<Resolved, ResolveError> {
    let model = match config.selected_model()? {
        Some(model) => model.clone(),
        None => discover_ollama(ollama_host, &http).await?,
    };
    let provider = build(&model, http);
    Ok(Resolved { model, provider })
}

pub fn build(model: &ModelConfig, http: reqwest::Client) -> Arc<dyn Provider> {
    match model.provider {
        ProviderKind::Ollama => Arc::new(ollama::OllamaProvider::new(model, http)),
        ProviderKind::Openai => Arc::new(openai::OpenAiProvider::new(model, http)),
        ProviderKind::Anthropic => Arc::new(anthropic::AnthropicProvider::new(model, http)),
    }
}

/// `OLLAMA_HOST` as Ollama itself accepts it: `host`, `host:port` or a full URL.
/// The configured model a routing hint names: a model id, `local` (the first model served
/// from this machine or the local network) or `cloud` (the first one that is not).
pub fn pick<'a>(models: &'a [ModelConfig], hint: &str) -> Option<&'a ModelConfig> {
    match hint {
        "local" => models.iter().find(|m| m.is_local()),
        "cloud" => models.iter().find(|m| !m.is_local()),
        id => models.iter().find(|m| m.id == id),
    }
}

pub fn ollama_base_url(host: Option<&str>) -> String {
    let Some(host) = host.map(str::trim).filter(|h| !h.is_empty()) else {
        return ProviderKind::Ollama.default_url().to_string();
    };
    let with_scheme = if host.contains("://") {
        host.to_string()
    } else {
        format!("http://{host}")
    };
    let trimmed = with_scheme.trim_end_matches('/');
    let after_scheme = trimmed.split_once("://").map_or(trimmed, |(_, rest)| rest);
    let url = if after_scheme.contains(':') {
        trimmed.to_string()
    } else {
        format!("{trimmed}:11434")
    };
    // `0.0.0.0` is how servers are told to listen everywhere; a client must dial loopback.
    url.replace("://0.0.0.0", "://127.0.0.1")
}

async fn discover_ollama(
    host: Option<String>,
    http: &reqwest::Client,
) -> Result<ModelConfig, LlmError> {
    let url = ollama_base_url(host.as_deref());
    let not_found = |why: String| {
        LlmError::new(
            "-",
            &url,
            // What to do about it depends on where the configuration lives, which the
            // caller knows (see `app::first_run_help`).
            ErrorKind::NoModel(format!("no model configured, and {why}")),
        )
    };
    let models = ollama::list_models(http, &url, Duration::from_secs(DISCOVERY_TIMEOUT_SECS))
        .await
        .map_err(|e| {
            not_found(format!(
                "no Ollama server answered at {url} ({})",
                e.kind_summary()
            ))
        })?;
    let Some(first) = models.into_iter().next() else {
        return Err(not_found(format!(
            "the Ollama server at {url} has no models installed"
        )));
    };
    Ok(ModelConfig {
        id: "ollama".into(),
        provider: ProviderKind::Ollama,
        model: first,
        url,
        api_key_env: None,
        context_window: None,
        max_inflight: 1,
        timeout_secs: 300,
        max_tokens: None,
        local: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routing_hints_pick_local_cloud_or_id() {
        let model = |id: &str, url: &str| ModelConfig {
            id: id.into(),
            provider: ProviderKind::Openai,
            model: "m".into(),
            url: url.into(),
            api_key_env: None,
            context_window: None,
            max_inflight: 1,
            timeout_secs: 60,
            max_tokens: None,
            local: None,
        };
        let mut models = vec![
            model("claude", "https://api.anthropic.com"),
            model("lan", "http://192.168.1.20:8080/v1"),
            model("box", "http://127.0.0.1:11434"),
        ];
        assert_eq!(pick(&models, "local").map(|m| m.id.as_str()), Some("lan"));
        // `local = false` overrides the address: a rented GPU box on a VPN is "cloud".
        models[1].local = Some(false);
        assert_eq!(pick(&models, "local").map(|m| m.id.as_str()), Some("box"));
        assert_eq!(
            pick(&models, "cloud").map(|m| m.id.as_str()),
            Some("claude")
        );
        models[0].local = Some(true);
        assert_eq!(pick(&models, "cloud").map(|m| m.id.as_str()), Some("lan"));
        models[0].local = None;
        models[1].local = None;
        assert_eq!(
            pick(&models, "cloud").map(|m| m.id.as_str()),
            Some("claude")
        );
        assert_eq!(pick(&models, "box").map(|m| m.id.as_str()), Some("box"));
        assert!(pick(&models, "nope").is_none());
        assert!(crate::config::model::is_local_url("http://[::1]:8080"));
        assert!(crate::config::model::is_local_url("http://localhost"));
        assert!(!crate::config::model::is_local_url(
            "https://api.openai.com/v1"
        ));
    }

    #[test]
    fn ollama_host_forms() {
        assert_eq!(ollama_base_url(None), "http://127.0.0.1:11434");
        assert_eq!(ollama_base_url(Some("")), "http://127.0.0.1:11434");
        assert_eq!(ollama_base_url(Some("0.0.0.0")), "http://127.0.0.1:11434");
        assert_eq!(ollama_base_url(Some("myhost:1234")), "http://myhost:1234");
        assert_eq!(
            ollama_base_url(Some("https://ollama.example/")),
            "https://ollama.example:11434"
        );
        assert_eq!(
            ollama_base_url(Some("http://127.0.0.1:9999")),
            "http://127.0.0.1:9999"
        );
    }
}
