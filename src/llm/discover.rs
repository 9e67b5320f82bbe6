//! Zero configuration: with no `[[models]]`, the models this machine already has. A
//! running Ollama (its installed models), llama.cpp, LM Studio and vLLM on their default
//! local ports, and the cloud accounts the environment has keys for (`OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY`, AWS credentials). Everything is asked at once, so finding nothing
//! costs one short timeout.

use std::time::Duration;

use serde_json::Value;

use super::bedrock::credentials;
use super::router::ollama_base_url;
use super::{http::Endpoint, ollama, retry::RetryPolicy};
use crate::config::model::{BEDROCK_KEY_ENV, bedrock_url};
use crate::config::{ModelConfig, ProviderKind};

/// How long a local server gets to list its models. Loopback answers in milliseconds, and
/// a port nobody listens on refuses at once; this only bounds a wedged server.
const LOCAL_PROBE: Duration = Duration::from_millis(800);
/// A remote `OLLAMA_HOST` may be further away.
const OLLAMA_PROBE: Duration = Duration::from_secs(2);

/// OpenAI-compatible servers on their documented default ports, by the id they get.
const LOCAL_SERVERS: [(&str, u16); 3] = [("llama.cpp", 8080), ("lm-studio", 1234), ("vllm", 8000)];

/// The models every cloud entry defaults to: each vendor's current general model.
const OPENAI_MODEL: &str = "gpt-4.1-mini";
const ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
const BEDROCK_MODEL: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";

/// What the machine offers, local servers first. `env` reads the environment (passed in
/// so tests need not change the process's).
pub async fn discover(
    http: &reqwest::Client,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Vec<ModelConfig> {
    let get = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let ollama_url = ollama_base_url(get("OLLAMA_HOST").as_deref());
    let ollama = ollama_models(http, &ollama_url);
    let servers = LOCAL_SERVERS.map(|(id, port)| {
        let url = format!("http://127.0.0.1:{port}/v1");
        async move { openai_model(http, &url).await.map(|m| (id, url, m)) }
    });
    let (ollama, servers) = tokio::join!(ollama, futures_util::future::join_all(servers));
    let mut found: Vec<ModelConfig> = ollama
        .into_iter()
        .map(|name| ModelConfig::new(&name, ProviderKind::Ollama, &name, &ollama_url))
        .collect();
    for (id, url, model) in servers.into_iter().flatten() {
        found.push(ModelConfig::new(id, ProviderKind::Openai, &model, &url));
    }
    found.extend(cloud(&get));
    found
}

/// The accounts the environment has credentials for.
fn cloud(get: &dyn Fn(&str) -> Option<String>) -> Vec<ModelConfig> {
    let mut found = Vec::new();
    if get("OPENAI_API_KEY").is_some() {
        let url = get("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".into());
        found.push(ModelConfig {
            api_key_env: Some("OPENAI_API_KEY".into()),
            ..ModelConfig::new("openai", ProviderKind::Openai, OPENAI_MODEL, &url)
        });
    }
    if get("ANTHROPIC_API_KEY").is_some() {
        let url = get("ANTHROPIC_BASE_URL")
            .unwrap_or_else(|| ProviderKind::Anthropic.default_url().into());
        found.push(ModelConfig {
            api_key_env: Some("ANTHROPIC_API_KEY".into()),
            ..ModelConfig::new("anthropic", ProviderKind::Anthropic, ANTHROPIC_MODEL, &url)
        });
    }
    if credentials::find(Some(BEDROCK_KEY_ENV), get).is_ok() {
        let region = get("AWS_REGION")
            .or_else(|| get("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "us-east-1".into());
        // Current Claude models are served through a cross-region inference profile,
        // named by the region's geography.
        let geography = match region.split('-').next() {
            Some("eu") => "eu",
            Some("ap") => "apac",
            _ => "us",
        };
        let model = format!("{geography}.{BEDROCK_MODEL}");
        found.push(ModelConfig {
            region: Some(region.clone()),
            api_key_env: Some(BEDROCK_KEY_ENV.into()),
            ..ModelConfig::new(
                "bedrock",
                ProviderKind::Bedrock,
                &model,
                &bedrock_url(&region),
            )
        });
    }
    found
}

async fn ollama_models(http: &reqwest::Client, url: &str) -> Vec<String> {
    ollama::list_models(http, url, OLLAMA_PROBE)
        .await
        .unwrap_or_default()
}

/// The first model an OpenAI-compatible server lists (`GET /v1/models`).
async fn openai_model(http: &reqwest::Client, base: &str) -> Option<String> {
    let mut endpoint = Endpoint::new("discovery", http.clone(), LOCAL_PROBE);
    endpoint.set_retry_policy(RetryPolicy::none());
    let listing = tokio::time::timeout(
        LOCAL_PROBE,
        endpoint.fetch_json(&format!("{base}/models"), None),
    )
    .await
    .ok()?
    .ok()?;
    listing
        .get("data")?
        .as_array()?
        .iter()
        .find_map(|m| m.get("id").and_then(Value::as_str))
        .map(str::to_string)
}

/// One line on what to set up when nothing was found.
pub fn nothing_found(config_file: &std::path::Path) -> String {
    format!(
        "no model found: start Ollama, or llama.cpp / LM Studio / vLLM on its default port, \
         or set OPENAI_API_KEY, ANTHROPIC_API_KEY or AWS credentials, or add a [[models]] \
         entry to {} (see doc/config.md)",
        config_file.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cloud_accounts_come_from_the_environment() {
        let vars = [
            ("OPENAI_API_KEY", "sk-x"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("AWS_REGION", "eu-west-1"),
        ];
        let get = |name: &str| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        };
        let found = cloud(&get);
        let ids: Vec<&str> = found.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["openai", "anthropic", "bedrock"]);
        assert_eq!(found[0].url, "http://127.0.0.1:9/v1");
        assert!(found[0].is_local(), "a local base URL is a local model");
        assert!(!found[1].is_local());
        assert_eq!(found[2].region.as_deref(), Some("eu-west-1"));
        assert!(found[2].model.starts_with("eu.anthropic."));
        assert_eq!(
            found[2].url,
            "https://bedrock-runtime.eu-west-1.amazonaws.com"
        );
        assert!(cloud(&|_| None).is_empty());
    }
}
