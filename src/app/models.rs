//! `linggen models`: the configured models, where each runs (local or cloud), its context
//! window, whether it answers right now, and which one serves this workspace's calls.

use std::time::Duration;

use super::{Failure, Start, exit, load_workspace, off_runtime};
use crate::config::model::{ModelConfig, ProviderKind};
use crate::llm::router;

/// How long each model server gets to answer the check.
const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);

/// `linggen models`.
pub async fn list_models(start: &Start) -> i32 {
    match try_list_models(start).await {
        Ok(()) => exit::SUCCESS,
        Err(f) => {
            eprintln!("linggen: error: {}", f.message);
            f.code
        }
    }
}

async fn try_list_models(start: &Start) -> Result<(), Failure> {
    let owned = start.clone();
    let ws = off_runtime(move || load_workspace(&owned)).await?;
    let config = ws.config.for_session(&start.overrides);
    let http = router::http_client().map_err(|e| Failure {
        code: exit::FAILURE,
        message: e.to_string(),
    })?;
    if config.models.is_empty() {
        println!("No [[models]] configured; calls go to a local Ollama if one answers.");
        println!("{}", super::first_run_help(&ws.home));
        return Ok(());
    }
    // Every server is asked at once, so the listing takes one timeout at most.
    let checks = config.models.iter().map(|m| check(m, http.clone()));
    let rows = futures_util::future::join_all(checks).await;
    println!(
        "{:<12}  {:<9}  {:<5}  {:>7}  {:<22}  MODEL",
        "ID", "PROVIDER", "WHERE", "CONTEXT", "NOW"
    );
    for (model, (context, now)) in config.models.iter().zip(rows) {
        println!(
            "{:<12}  {:<9}  {:<5}  {:>7}  {:<22}  {} @ {}",
            model.id,
            model.provider.as_str(),
            if model.is_local() { "local" } else { "cloud" },
            context.map_or("?".to_string(), |n| n.to_string()),
            now,
            model.model,
            model.url
        );
    }
    // Which model serves calls: the one a session starts on (routing policies that pick
    // per call are not there yet, so short and long prompts go to the same one).
    let chosen = config.selected_model().map_err(Failure::from)?;
    let why = match &config.model_choice {
        Some(_) => config.model_choice_origin.clone(),
        None => "the first [[models]] entry".to_string(),
    };
    if let Some(model) = chosen {
        println!(
            "every call goes to `{}` (chosen by {why}); agents' and skills' `model` hints pick others",
            model.id
        );
    }
    Ok(())
}

/// The model's context window (configured, or asked of its server) and whether its server
/// answers now.
async fn check(model: &ModelConfig, http: reqwest::Client) -> (Option<u32>, String) {
    let provider = router::build(model, http.clone());
    let context = match model.context_window {
        Some(n) => Some(n),
        None => tokio::time::timeout(PROBE_TIMEOUT, provider.context_window())
            .await
            .ok()
            .flatten(),
    };
    (context, answers(model, &http).await)
}

/// Asks the server's model list (the cheapest request every API has): any HTTP answer
/// means it is up; a refused key says so.
async fn answers(model: &ModelConfig, http: &reqwest::Client) -> String {
    let base = model.url.trim_end_matches('/');
    let mut request = match model.provider {
        ProviderKind::Ollama => http.get(format!("{base}/api/tags")),
        ProviderKind::Openai => http.get(format!("{base}/models")),
        ProviderKind::Anthropic => http
            .get(format!("{base}/v1/models"))
            .header("anthropic-version", "2023-06-01"),
    };
    if let Some(key) = model.api_key() {
        request = match model.provider {
            ProviderKind::Anthropic => request.header("x-api-key", key),
            _ => request.bearer_auth(key),
        };
    }
    match request.timeout(PROBE_TIMEOUT).send().await {
        Ok(response) if response.status().is_success() => "answers".to_string(),
        Ok(response) if matches!(response.status().as_u16(), 401 | 403) => {
            "answers; key refused".to_string()
        }
        Ok(response) => format!("answers HTTP {}", response.status().as_u16()),
        Err(e) if e.is_timeout() => "no answer (timeout)".to_string(),
        Err(_) => "no answer (down?)".to_string(),
    }
}
