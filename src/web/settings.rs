//! `POST /api/settings`: the page's (and an attached terminal's) `/agent`, `/mode`,
//! `/model`, `/permissions` and `/settings max_iters`. Each field becomes the input the
//! terminal sends, so the session applies the same rules and refusals to both; the route
//! only checks that a value is one the input can carry. `GET /api/settings` lists the
//! values the page's menus offer.

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::api::{self, ApiError, Reply};
use super::server::Ctx;
use crate::config::{PermissionMode, TurnMode};
use crate::session::Input;

/// The model names every session understands besides the configured ids (see
/// `llm::routing::Models::choose`).
const MODEL_KEYWORDS: [&str; 3] = ["auto", "local", "cloud"];

/// The body of `POST /api/settings`: one or more settings to change.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsChange {
    session_id: Option<String>,
    agent: Option<String>,
    mode: Option<String>,
    model: Option<String>,
    permission_mode: Option<String>,
    /// A JSON number; kept raw so that a wrong one gets the terminal's sentence.
    max_iters: Option<Value>,
}

/// `POST /api/settings`: each field is sent to the session as its own input, in an order
/// that puts the inputs the session may refuse (the agent while a turn runs, a model it
/// cannot reach) before those it always takes. A refusal stops there with `409` and the
/// session's sentence; the fields before it stay changed, as if typed one by one.
pub(super) async fn change(ctx: &Ctx, req: Request<Incoming>) -> Reply {
    let body: SettingsChange = api::read_json(req).await?;
    let mirror = api::open_mirror(ctx, body.session_id.as_deref())?;
    let inputs = inputs(ctx, &body)?;
    if inputs.is_empty() {
        return Err(ApiError::bad_request(
            "give one or more of: agent, mode, model, permission_mode, max_iters",
        ));
    }
    let mut updated = Vec::new();
    for (field, input) in inputs {
        api::send(&mirror, input).await?;
        updated.push(field);
    }
    Ok(api::json_response(
        StatusCode::ACCEPTED,
        &json!({ "updated": updated }),
    ))
}

/// The inputs the body asks for, each checked first: nothing is sent when one is wrong.
fn inputs(ctx: &Ctx, body: &SettingsChange) -> Result<Vec<(&'static str, Input)>, ApiError> {
    let mut inputs = Vec::new();
    if let Some(agent) = &body.agent {
        let names: Vec<String> = ctx
            .hub
            .agent_choices()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        if !names.contains(agent) {
            return Err(ApiError::bad_request(format!(
                "no agent named `{agent}`; agents: {}",
                names.join(", ")
            )));
        }
        let agent = agent.clone();
        inputs.push(("agent", Input::SetAgent { agent }));
    }
    if let Some(model) = &body.model {
        let ids = model_names(ctx);
        if !ids.iter().any(|id| id == model) {
            return Err(ApiError::bad_request(format!(
                "no model `{model}`; models: {}",
                ids.join(", ")
            )));
        }
        let model = model.clone();
        inputs.push(("model", Input::SetModel { model }));
    }
    if let Some(value) = &body.max_iters {
        let max_iters = crate::config::parse_max_iters(&value.to_string())
            .map_err(|why| ApiError::bad_request(format!("max_iters {value}: {why}")))?;
        inputs.push(("max_iters", Input::SetMaxIters { max_iters }));
    }
    if let Some(mode) = &body.mode {
        let mode = TurnMode::parse(mode).ok_or_else(|| {
            ApiError::bad_request(format!("unknown mode `{mode}`; modes: {}", mode_names()))
        })?;
        inputs.push(("mode", Input::SetMode { mode }));
    }
    if let Some(mode) = &body.permission_mode {
        let mode = PermissionMode::parse(mode).ok_or_else(|| {
            ApiError::bad_request(format!(
                "unknown permission mode `{mode}`; permission modes: {}",
                PermissionMode::NAMES
            ))
        })?;
        inputs.push(("permission_mode", Input::SetPermissionMode { mode }));
    }
    Ok(inputs)
}

fn mode_names() -> String {
    let names: Vec<&str> = TurnMode::ALL.iter().map(|m| m.as_str()).collect();
    names.join(", ")
}

/// The configured ids, then the keywords.
fn model_names(ctx: &Ctx) -> Vec<String> {
    let ids = ctx.hub.model_list().iter().map(|(id, _)| id.clone());
    ids.chain(MODEL_KEYWORDS.iter().map(|k| k.to_string()))
        .collect()
}

/// `GET /api/settings`: what each setting may be set to, for the page's menus. The
/// current values are the session's (`state` of `GET /api/session`, then
/// `SettingsUpdated`); this lists only the choices.
pub(super) fn choices(ctx: &Ctx) -> Reply {
    let agents: Vec<Value> = ctx
        .hub
        .agent_choices()
        .into_iter()
        .map(|(name, description)| json!({ "name": name, "description": description }))
        .collect();
    let mut models: Vec<Value> = ctx
        .hub
        .model_list()
        .iter()
        .map(|(id, what)| json!({ "name": id, "description": what }))
        .collect();
    models.push(json!({ "name": "auto", "description": "the [routing] policy chooses per call" }));
    let modes: Vec<Value> = TurnMode::ALL
        .iter()
        .map(|m| json!({ "name": m.as_str(), "description": m.summary() }))
        .collect();
    let permission_modes: Vec<&str> = PermissionMode::NAMES.split(", ").collect();
    Ok(api::json_response(
        StatusCode::OK,
        &json!({
            "agents": agents,
            "modes": modes,
            "models": models,
            "permission_modes": permission_modes,
        }),
    ))
}
