//! Run inspection: the runs of a session, a run's children and its messages, and cancelling
//! one run's subtree (`/api/agent-*`). What a server may show is confined: see
//! [`may_inspect`].

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::api::{
    ApiError, Reply, blocking, json_response, open_mirror, query, read_json, required, send,
    session_in_workspace,
};
use super::server::Ctx;
use crate::llm::ChatMessage;
use crate::session::Input;
use crate::session::view::RunStatus;
use crate::store::{RunDetail, Store};

/// Characters of each message in `agent-context?view=summary`.
const SUMMARY_CHARS: usize = 200;

pub(super) async fn agent_runs(ctx: &Ctx, req: &Request<Incoming>) -> Reply {
    let session_id = match query(req, "session_id") {
        Some(id) => id,
        None => ctx
            .hub
            .current_id()
            .ok_or_else(|| ApiError::bad_request("give ?session_id="))?,
    };
    may_inspect(ctx, &session_id).await?;
    let home = ctx.hub.home.clone();
    let runs = blocking(move || Store::open(&home)?.run_details(&session_id)).await?;
    Ok(json_response(StatusCode::OK, &json!({ "runs": runs })))
}

pub(super) async fn agent_children(ctx: &Ctx, req: &Request<Incoming>) -> Reply {
    let run = inspectable_run(ctx, required(req, "run_id")?).await?;
    let home = ctx.hub.home.clone();
    let runs = blocking(move || Store::open(&home)?.run_children(&run.id)).await?;
    Ok(json_response(StatusCode::OK, &json!({ "runs": runs })))
}

/// A run's audit trail as `linggen runs show` prints it, one line each.
pub(super) async fn run_log(ctx: &Ctx, req: &Request<Incoming>) -> Reply {
    let run = inspectable_run(ctx, required(req, "run_id")?).await?;
    let home = ctx.hub.home.clone();
    let run_id = run.id.clone();
    let lines =
        tokio::task::spawn_blocking(move || crate::app::run_lines(&home, &run_id, None, false))
            .await
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
            .map_err(|f| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, f.message))?;
    Ok(json_response(
        StatusCode::OK,
        &json!({ "run_id": run.id, "lines": lines }),
    ))
}

pub(super) async fn agent_context(ctx: &Ctx, req: &Request<Incoming>) -> Reply {
    let view = query(req, "view").unwrap_or_else(|| "summary".into());
    if view != "summary" && view != "raw" {
        return Err(ApiError::bad_request(format!(
            "unknown view `{view}`; use summary or raw"
        )));
    }
    let run = inspectable_run(ctx, required(req, "run_id")?).await?;
    let home = ctx.hub.home.clone();
    let run_id = run.id.clone();
    let messages = blocking(move || Store::open(&home)?.run_messages(&run_id)).await?;
    let messages: Vec<Value> = if view == "raw" {
        messages.iter().map(|m| json!(m)).collect()
    } else {
        messages.iter().map(summary).collect()
    };
    Ok(json_response(
        StatusCode::OK,
        &json!({ "run": run, "view": view, "messages": messages }),
    ))
}

/// A stored run this server may show (see [`may_inspect`]); 404 otherwise.
async fn inspectable_run(ctx: &Ctx, run_id: String) -> Result<RunDetail, ApiError> {
    let home = ctx.hub.home.clone();
    let id = run_id.clone();
    let run = blocking(move || Store::open(&home)?.run(&id))
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no such run {run_id}")))?;
    may_inspect(ctx, &run.session_id).await?;
    Ok(run)
}

/// What a server may show of the shared store: under `/share` only the shared session (a
/// viewer was invited to that one), under `serve` the sessions of its workspace (the page can
/// open any of them). Everything else answers 404, as if it did not exist.
async fn may_inspect(ctx: &Ctx, session_id: &str) -> Result<(), ApiError> {
    let hidden = || ApiError::not_found(format!("no session {session_id} here"));
    if ctx.hub.is_open(session_id) {
        return Ok(());
    }
    if !ctx.hub.can_open() {
        return Err(hidden());
    }
    match session_in_workspace(ctx, session_id).await? {
        // A full id, not a prefix: runs name their session exactly.
        Some(info) if info.id == session_id => Ok(()),
        _ => Err(hidden()),
    }
}

fn summary(m: &ChatMessage) -> Value {
    let preview: String = m.content.chars().take(SUMMARY_CHARS).collect();
    json!({
        "role": m.role,
        "tool_name": m.tool_name,
        "tool_calls": m.tool_calls.iter().map(|c| &c.name).collect::<Vec<_>>(),
        "chars": m.content.chars().count(),
        "preview": preview,
        "is_error": m.is_error,
    })
}

#[derive(Deserialize)]
struct RunRef {
    run_id: String,
}

pub(super) async fn agent_cancel(ctx: &Ctx, req: Request<Incoming>) -> Reply {
    let body: RunRef = read_json(req).await?;
    let run = inspectable_run(ctx, body.run_id).await?;
    if run.status != RunStatus::Running.stored() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("run {} is not running (it is {})", run.id, run.status),
        ));
    }
    let mirror = open_mirror(ctx, Some(&run.session_id))?;
    send(&mirror, Input::CancelRun { run_id: run.id }).await?;
    Ok(json_response(
        StatusCode::ACCEPTED,
        &json!({ "cancelled": true }),
    ))
}
