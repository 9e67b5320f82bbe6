//! Picks the model a session talks to and builds its provider: the configured entry asked
//! for (flag, env, `[agent] default_model`, else the first), or, with no `[[models]]` at all,
//! the first model of a local Ollama.

use std::sync::Arc;

use super::error::ErrorKind;
use super::routing::{Choice, Model, Router};
use super::{LlmError, Provider, anthropic, bedrock, discover, image, ollama, openai};
use crate::config::{Config, ConfigError, ModelConfig, ProviderKind};

const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Unavailable(#[from] LlmError),
}

/// One HTTP client per process: it pools connections across requests.
pub fn http_client() -> Result<reqwest::Client, LlmError> {
    super::http::install_tls_provider();
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

/// The session's models and what decides between them: `--model`/`LINGGEN_MODEL` pin one
/// (`auto` hands the choice to the policy); without `[routing]`, `[agent] default_model`
/// (else the first model) serves every call; with it, the policy decides. With no
/// `[[models]]` at all, what the machine has (see [`discover`]), local first.
pub async fn resolve(
    config: &Config,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    http: reqwest::Client,
) -> Result<(Router, Choice), ResolveError> {
    let mut config = config.clone();
    if config.models.is_empty() {
        config.models = discover::discover(&http, env).await;
        if config.models.is_empty() {
            // Where the configuration lives is the caller's to say (`app::first_run_help`).
            let help = discover::nothing_found(std::path::Path::new(crate::config::CONFIG_FILE));
            return Err(LlmError::new("-", "-", ErrorKind::NoModel(help)).into());
        }
        // What was found is spread over local first, falling back to the rest.
        config.routing.get_or_insert_with(Default::default);
    }
    // `[llm] stall_secs` holds for every model's streams.
    for model in &mut config.models {
        model.stall_secs = config.stall_secs;
    }
    let config = &config;
    let asked = config.model_choice.as_deref();
    // `local` and `cloud` (unless a model has that id) ask for those models first.
    let hint = asked
        .filter(|a| matches!(*a, "local" | "cloud") && !config.models.iter().any(|m| m.id == *a));
    let selected = match asked {
        Some("auto") => None,
        _ if hint.is_some() => None,
        _ => config.selected_model()?.map(|m| m.id.clone()),
    };
    let models = config.models.clone();
    let by_flag = matches!(
        config.model_choice_origin.as_str(),
        "--model" | "LINGGEN_MODEL"
    );
    let choice = match (hint, &selected, &config.routing) {
        (Some(hint), _, _) => Choice::Hint(hint.to_string()),
        (None, Some(id), _) if by_flag => Choice::Pinned(id.clone()),
        (None, _, Some(_)) => Choice::Auto,
        (None, Some(id), None) => Choice::Pinned(id.clone()),
        (None, None, None) => Choice::Auto,
    };
    let default = selected
        .and_then(|id| models.iter().position(|m| m.id == id))
        .unwrap_or(0);
    Ok((
        router(models, config.routing.clone(), default, &http),
        choice,
    ))
}

/// A router over `models`, each server with its own provider.
pub fn router(
    models: Vec<ModelConfig>,
    routing: Option<crate::config::routing::RoutingConfig>,
    default: usize,
    http: &reqwest::Client,
) -> Router {
    let models = models
        .into_iter()
        .map(|config| {
            let members = config
                .servers()
                .into_iter()
                .map(|url| {
                    let server = ModelConfig {
                        url: url.to_string(),
                        pool: Vec::new(),
                        ..config.clone()
                    };
                    (url.to_string(), build(&server, http.clone()))
                })
                .collect();
            Model::new(config, members)
        })
        .collect();
    Router::new(models, routing, default)
}

/// The provider for one server of `model`; for a model without images, behind
/// [`image::TextOnly`], so that no request to it carries one.
pub fn build(model: &ModelConfig, http: reqwest::Client) -> Arc<dyn Provider> {
    let provider: Arc<dyn Provider> = match model.provider {
        ProviderKind::Ollama => Arc::new(ollama::OllamaProvider::new(model, http)),
        ProviderKind::Openai => Arc::new(openai::OpenAiProvider::new(model, http)),
        ProviderKind::Anthropic => Arc::new(anthropic::AnthropicProvider::new(model, http)),
        ProviderKind::Bedrock => Arc::new(bedrock::BedrockProvider::new(model, http)),
    };
    if model.accepts_images() {
        provider
    } else {
        Arc::new(image::TextOnly::new(provider, &model.id))
    }
}

/// `OLLAMA_HOST` as Ollama itself accepts it: `host`, `host:port` or a full URL.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What decides the session's model, by where the choice came from.
    #[tokio::test]
    async fn flags_pin_files_defer_to_routing_and_hints_route() {
        let mut config = Config {
            models: vec![
                ModelConfig::new("box", ProviderKind::Openai, "m", "http://127.0.0.1:1/v1"),
                ModelConfig {
                    local: Some(false),
                    ..ModelConfig::new("big", ProviderKind::Openai, "m", "http://127.0.0.1:2/v1")
                },
            ],
            ..Config::default()
        };
        let no_env = |_: &str| None;
        let choice = |config: &Config| {
            let config = config.clone();
            async move {
                resolve(&config, &no_env, crate::llm::http::plain_client())
                    .await
                    .map(|(_, c)| c)
                    .map_err(|e| e.to_string())
            }
        };
        // No [routing]: the file's default_model serves every call.
        config.model_choice = Some("big".into());
        config.model_choice_origin = "linggen-agent.toml:3: [agent] default_model".into();
        assert_eq!(choice(&config).await, Ok(Choice::Pinned("big".into())));
        // With [routing], the policy decides over the file's default...
        config.routing = Some(Default::default());
        assert_eq!(choice(&config).await, Ok(Choice::Auto));
        // ...but not over a flag.
        config.model_choice_origin = "--model".into();
        assert_eq!(choice(&config).await, Ok(Choice::Pinned("big".into())));
        config.model_choice = Some("auto".into());
        assert_eq!(choice(&config).await, Ok(Choice::Auto));
        config.model_choice = Some("cloud".into());
        assert_eq!(choice(&config).await, Ok(Choice::Hint("cloud".into())));
        config.model_choice = Some("nope".into());
        assert!(choice(&config).await.unwrap_err().contains("box, big"));
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
