//! `linggen models`: the configured models, where each runs (local or cloud), its context
//! window, whether it answers right now, and which one serves this workspace's calls.

use std::time::Duration;

use super::{Failure, Start, exit, load_workspace, off_runtime};
use crate::config::model::{ModelConfig, ProviderKind};
use crate::llm::bedrock;
use crate::llm::router;
use crate::llm::routing::{Choice, Model, Router, Signal};

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
    let env = |name: &str| std::env::var(name).ok();
    let (models, choice) = match router::resolve(&config, &env, http.clone()).await {
        Ok(found) => found,
        // Nothing to list is a failure a script can test for: exit 1, the way out on stderr.
        Err(_) if config.models.is_empty() => {
            return Err(Failure {
                code: exit::FAILURE,
                message: super::first_run_help(&ws.home),
            });
        }
        Err(e) => return Err(Failure::from(e)),
    };
    if config.models.is_empty() {
        println!("No [[models]] configured; found on this machine and in the environment:\n");
    }
    // Every server is asked at once, so the listing takes one timeout at most.
    let checks = models.models().iter().map(|m| check(m, &http));
    let rows = futures_util::future::join_all(checks).await;
    println!(
        "{:<12}  {:<9}  {:<5}  {:>7}  {:<22}  MODEL",
        "ID", "PROVIDER", "WHERE", "CONTEXT", "NOW"
    );
    for (model, (context, now)) in models.models().iter().zip(&rows) {
        let c = &model.config;
        println!(
            "{:<12}  {:<9}  {:<5}  {:>7}  {:<22}  {} @ {}",
            c.id,
            c.provider.as_str(),
            if c.is_local() { "local" } else { "cloud" },
            context.map_or("?".to_string(), |n| n.to_string()),
            now.join(", "),
            c.model,
            c.servers().join(", ")
        );
    }
    let up = |i: usize| rows[i].1.iter().any(|n| n.starts_with("answers"));
    println!();
    for line in picks(&models, &choice, &config, up) {
        println!("{line}");
    }
    Ok(())
}

/// Which model serves a short and a long prompt, and what happens when it is down.
fn picks(
    models: &Router,
    choice: &Choice,
    config: &crate::config::Config,
    up: impl Fn(usize) -> bool,
) -> Vec<String> {
    if let Choice::Pinned(id) = choice {
        let why = match config.model_choice_origin.as_str() {
            "" => "the first [[models]] entry".to_string(),
            origin => origin.to_string(),
        };
        let mut lines = vec![format!("every call goes to `{id}` (chosen by {why})")];
        if config.routing.is_none() {
            lines.push(
                "add a [routing] table to choose per call (see doc/config.md); agents' and \
                 skills' `model` hints pick others"
                    .to_string(),
            );
        }
        return lines;
    }
    let mut lines = Vec::new();
    for (what, tokens) in [("a short prompt", 500), ("a long prompt", 20_000)] {
        let signal = Signal {
            prompt_tokens: tokens,
            ..Signal::default()
        };
        let plan = models.plan(choice, &signal);
        let (first, _) = plan.order[0];
        let id = |i: usize| models.model(i).id().to_string();
        let mut line = format!(
            "{what} ({tokens} tokens, {}) goes to `{}` ({})",
            plan.complexity.as_str(),
            id(first),
            plan.order[0].1
        );
        if !up(first) {
            match plan.order.iter().skip(1).find(|(i, _)| up(*i)) {
                Some((i, _)) => {
                    line.push_str(&format!("; it does not answer now, so `{}`", id(*i)))
                }
                None => line.push_str("; it does not answer now, and nothing after it does"),
            }
        }
        lines.push(line);
    }
    lines
}

/// The model's context window (configured, or asked of its server) and whether each of
/// its servers answers now.
async fn check(model: &Model, http: &reqwest::Client) -> (Option<u32>, Vec<String>) {
    let context = tokio::time::timeout(PROBE_TIMEOUT, model.context_window())
        .await
        .ok()
        .flatten();
    let servers = model.config.servers();
    let answers = servers.iter().map(|url| answers(&model.config, url, http));
    let now = futures_util::future::join_all(answers).await;
    (context, now)
}

/// Asks the server's model list (the cheapest request every API has; the shell's
/// `/doctor` asks it too): any HTTP answer means it is up; a refused key says so.
pub async fn answers(model: &ModelConfig, url: &str, http: &reqwest::Client) -> String {
    let base = url.trim_end_matches('/');
    let mut request = match model.provider {
        ProviderKind::Ollama => http.get(format!("{base}/api/tags")),
        ProviderKind::Openai => http.get(format!("{base}/models")),
        ProviderKind::Anthropic => http
            .get(format!("{base}/v1/models"))
            .header("anthropic-version", "2023-06-01"),
        // The runtime endpoint has no unsigned listing; any HTTP answer means it is up,
        // and the credentials are checked without sending them.
        ProviderKind::Bedrock => {
            let env = |name: &str| std::env::var(name).ok();
            let creds = bedrock::credentials::find(model.api_key_env.as_deref(), &env);
            let up = match http.get(base).timeout(PROBE_TIMEOUT).send().await {
                Ok(_) => "answers",
                Err(e) if e.is_timeout() => "no answer (timeout)",
                Err(_) => "no answer (down?)",
            };
            let creds = if creds.is_ok() {
                ""
            } else {
                "; no credentials"
            };
            return format!("{up}{creds}");
        }
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
