//! The routes. Every request passes the same gate first (`Host`, token, and for `POST` the
//! `Origin` and write access), so no route can forget a check. See `doc/web.md`.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::{self, Access};
use super::mirror::Mirror;
use super::server::Ctx;
use super::{Body, agents, page, runs, settings, sse};
use crate::session::input::RefusalKind;
use crate::session::{Decision, Input};
use crate::store::Store;

/// Request bodies are small JSON objects; anything bigger is a mistake or an attack.
const MAX_BODY: usize = 1 << 20;

/// A message may carry images (each at most `MAX_IMAGE_BYTES` decoded, a third more as
/// base64): room for four.
const MAX_MESSAGE_BODY: usize = 4 * (crate::llm::image::MAX_IMAGE_BYTES / 3 * 4 + 1024) + MAX_BODY;

/// The most images one message from the page may carry.
const MAX_MESSAGE_IMAGES: usize = 4;

/// A failed request: its status and a sentence saying what to do.
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    pub(super) fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }

    pub(super) fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    pub(super) fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }
}

pub(super) type Reply = Result<Response<Body>, ApiError>;

/// How a request passed the gate.
enum Admission {
    /// The page's own files: the same bytes in every copy of linggen, no session data.
    Asset,
    /// `POST /api/ticket`: the ticket in the body is the credential.
    Exchange,
    /// An API request with a valid credential.
    Api(Access),
}

/// The page's files, served without a credential: a page reload cannot send a header, and a
/// cookie would leak to every other port of this address (see `auth`).
const ASSETS: &[&str] = &["/", "/app.js", "/agents.js", "/app.css", "/favicon.ico"];

pub async fn handle(ctx: Arc<Ctx>, req: Request<Incoming>) -> Response<Body> {
    let response = match gate(&ctx, &req) {
        Ok(Admission::Asset) => asset_route(&req),
        Ok(Admission::Exchange) => exchange(&ctx, req).await.unwrap_or_else(error_response),
        Ok(Admission::Api(access)) => route(&ctx, req, access)
            .await
            .unwrap_or_else(error_response),
        Err(e) => error_response(e),
    };
    secure(response)
}

/// `Host`, then the credential, then (for `POST`) the `Origin` and write access.
fn gate(ctx: &Ctx, req: &Request<Incoming>) -> Result<Admission, ApiError> {
    let headers = req.headers();
    let host = header_str(headers, header::HOST).unwrap_or_default();
    if !auth::host_allowed(host, ctx.bound, ctx.lan) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "the Host header `{host}` is not this server's address; open the link linggen printed"
            ),
        ));
    }
    // A CORS preflight carries no credential; the answer is the same for everyone, and no
    // `Access-Control-*` header ever lets another site's script in.
    if req.method() == Method::OPTIONS {
        return Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "OPTIONS is not supported: this server answers no cross-origin requests",
        ));
    }
    let path = req.uri().path();
    if req.method() == Method::GET && ASSETS.contains(&path) {
        return Ok(Admission::Asset);
    }
    // Every method that may change something (POST, and any other a route may take one
    // day) needs the page's Origin and full access; only reads and OPTIONS (always 405)
    // are exempt.
    let changes = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if changes && !auth::origin_allowed(header_str(headers, header::ORIGIN), host) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "{} needs the header `Origin: http://{host}` (the page sends it itself)",
                req.method()
            ),
        ));
    }
    if req.method() == Method::POST && path == "/api/ticket" {
        return Ok(Admission::Exchange);
    }
    let bearer =
        header_str(headers, header::AUTHORIZATION).and_then(auth::token_from_authorization);
    let access = match bearer {
        Some(presented) => ctx.credentials.check_bearer(&presented),
        // An event stream cannot send a header: it spends a one-time stream ticket.
        None if req.method() == Method::GET && path == "/api/events" => {
            query(req, "ticket").and_then(|t| ctx.credentials.redeem_stream(&t))
        }
        None => None,
    }
    .ok_or_else(|| {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "missing or wrong token; open a fresh link (each works once: `/share` in the shell \
             prints one, so does Enter where `linggen serve` runs), or send \
             `Authorization: Bearer TOKEN` (`/share token` shows it)",
        )
    })?;
    // A viewer may ask for a stream ticket: watching is what it is for.
    if changes && access == Access::ReadOnly && path != "/api/stream-ticket" {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "this is the read-only viewer link; it can watch but not send, answer or cancel",
        ));
    }
    Ok(Admission::Api(access))
}

fn asset_route(req: &Request<Incoming>) -> Response<Body> {
    match req.uri().path() {
        "/app.js" => asset(page::APP_JS, "text/javascript; charset=utf-8"),
        "/agents.js" => asset(page::AGENTS_JS, "text/javascript; charset=utf-8"),
        "/app.css" => asset(page::APP_CSS, "text/css; charset=utf-8"),
        "/favicon.ico" => empty(StatusCode::NO_CONTENT),
        _ => asset(page::INDEX_HTML, "text/html; charset=utf-8"),
    }
}

#[derive(Deserialize)]
struct TicketExchange {
    ticket: String,
}

/// `POST /api/ticket`: a printed link's one-time ticket for this page's own credential.
async fn exchange(ctx: &Ctx, req: Request<Incoming>) -> Reply {
    let body: TicketExchange = read_json(req).await?;
    let (credential, access) = ctx
        .credentials
        .redeem_link(&body.ticket)
        .map_err(internal)?
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                "this link was already used or is wrong (each link works once); for a fresh \
                 one run /share in the shell, or press Enter where `linggen serve` runs",
            )
        })?;
    Ok(json_response(
        StatusCode::OK,
        &json!({ "credential": credential, "access": access.as_str() }),
    ))
}

/// `POST /api/stream-ticket`: a one-time credential for one `GET /api/events`; `503` when
/// the share is full for `access`, which the page can read here (not from the stream).
fn stream_ticket(ctx: &Ctx, access: Access) -> Reply {
    if !ctx.streams.has_room(access) {
        return Err(share_full(access));
    }
    let ticket = ctx.credentials.issue_stream(access).map_err(internal)?;
    Ok(json_response(StatusCode::OK, &json!({ "ticket": ticket })))
}

async fn route(ctx: &Arc<Ctx>, req: Request<Incoming>, access: Access) -> Reply {
    let path = req.uri().path().to_string();
    match (req.method().clone(), path.as_str()) {
        (Method::GET, "/api/events") => events(ctx, &req, access),
        (Method::POST, "/api/stream-ticket") => stream_ticket(ctx, access),
        (Method::GET, "/api/session") => {
            let mirror = open_mirror(ctx, query(&req, "session_id").as_deref())?;
            Ok(json_response(
                StatusCode::OK,
                &mirror.snapshot(access.as_str()),
            ))
        }
        (Method::GET, "/api/sessions") => sessions(ctx).await,
        (Method::GET, "/api/image") => image(ctx, &req),
        (Method::GET, "/api/commands") => Ok(json_response(
            StatusCode::OK,
            &json!({ "commands": ctx.hub.slash_commands() }),
        )),
        (Method::POST, "/api/sessions") => open_session(ctx, req).await,
        (Method::POST, "/api/messages") => message(ctx, req).await,
        (Method::POST, "/api/cancel") => cancel(ctx, req).await,
        (Method::POST, "/api/task-stop") => task_stop(ctx, req).await,
        (Method::GET, "/api/settings") => settings::choices(ctx),
        (Method::POST, "/api/settings") => settings::change(ctx, req).await,
        (Method::POST, p) if p.starts_with("/api/approvals/") => {
            let id = p.trim_start_matches("/api/approvals/").to_string();
            approval(ctx, req, id).await
        }
        (Method::GET, "/api/agent-runs") => runs::agent_runs(ctx, &req).await,
        (Method::GET, "/api/agent-children") => runs::agent_children(ctx, &req).await,
        (Method::GET, "/api/agent-context") => runs::agent_context(ctx, &req).await,
        (Method::GET, "/api/run-log") => runs::run_log(ctx, &req).await,
        (Method::POST, "/api/agent-cancel") => runs::agent_cancel(ctx, req).await,
        (Method::GET, "/api/agents") => agents::list(ctx, access).await,
        (Method::GET, "/api/models") => agents::models(ctx),
        (Method::POST, "/api/agents") => agents::create(ctx, req).await,
        (Method::POST, p) if p.starts_with("/api/agents/") => {
            let rest = p.trim_start_matches("/api/agents/").to_string();
            agents::post(ctx, req, &rest).await
        }
        (_, p) if p.starts_with("/api/approvals/") || p.starts_with("/api/agents/") => {
            Err(ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("{} is not supported here", req.method()),
            ))
        }
        (_, "/" | "/app.js" | "/app.css" | "/favicon.ico" | "/api/events" | "/api/session")
        | (_, "/api/sessions" | "/api/messages" | "/api/cancel" | "/api/agent-runs")
        | (_, "/api/agent-children" | "/api/agent-context" | "/api/agent-cancel")
        | (_, "/api/run-log" | "/api/commands" | "/api/agents" | "/api/models" | "/agents.js")
        | (_, "/api/settings" | "/api/image" | "/api/task-stop")
        | (_, "/api/ticket" | "/api/stream-ticket") => Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{} is not supported here", req.method()),
        )),
        _ => Err(ApiError::not_found(format!(
            "no route {path}; see doc/web.md"
        ))),
    }
}

/// Every place for an event stream with `access` is taken: the only `503` of the API.
fn share_full(access: Access) -> ApiError {
    use super::server::{MAX_EVENT_STREAMS, MAX_VIEWER_STREAMS, RESERVED_FOR_FULL_ACCESS};
    let message = match access {
        Access::Full => format!(
            "this share is full: {MAX_EVENT_STREAMS} pages or scripts are watching it already; \
             close some of them and retry"
        ),
        Access::ReadOnly => format!(
            "this share is full for read-only viewers: {MAX_VIEWER_STREAMS} are watching it \
             already (the other {RESERVED_FOR_FULL_ACCESS} places are kept for full access); \
             retry later"
        ),
    };
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message)
}

fn events(ctx: &Ctx, req: &Request<Incoming>, access: Access) -> Reply {
    let mirror = open_mirror(ctx, query(req, "session_id").as_deref())?;
    // The header is what a browser sends when it reconnects by itself: it is the newer one.
    let after = header_str(req.headers(), "last-event-id")
        .map(str::to_string)
        .or_else(|| query(req, "last_event_id"))
        .map(|v| {
            v.trim()
                .parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("last event id `{v}` is not a number")))
        })
        .transpose()?;
    let permit = ctx.streams.take(access).ok_or_else(|| share_full(access))?;
    let body = sse::event_stream(mirror, after, ctx.shutdown.clone(), permit);
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header("x-accel-buffering", "no")
        .body(body)
        .map_err(internal)
}

/// `GET /api/image?id=`: an image of a message of the session, as `{media_type, data}`
/// (base64), which the page shows as a `data:` URL.
fn image(ctx: &Ctx, req: &Request<Incoming>) -> Reply {
    let mirror = open_mirror(ctx, query(req, "session_id").as_deref())?;
    let id = required(req, "id")?;
    let image = mirror
        .image(&id)
        .ok_or_else(|| ApiError::not_found(format!("no image {id} in this session")))?;
    Ok(json_response(
        StatusCode::OK,
        &json!({ "media_type": image.format.media_type(), "data": image.data.as_str() }),
    ))
}

async fn sessions(ctx: &Ctx) -> Reply {
    let (home, root) = (ctx.hub.home.clone(), ctx.hub.root.display().to_string());
    let list = blocking(move || Store::open(&home)?.list_sessions(&root)).await?;
    // Under `/share` a viewer was invited to one session, not to the workspace's history.
    let sessions: Vec<Value> = list
        .into_iter()
        .filter(|s| ctx.hub.can_open() || ctx.hub.is_open(&s.id))
        .map(|s| {
            json!({
                "id": s.id,
                "title": s.title,
                "model": s.model,
                "updated_at": s.updated_at,
                "message_count": s.message_count,
                "live": ctx.hub.is_open(&s.id),
            })
        })
        .collect();
    Ok(json_response(
        StatusCode::OK,
        &json!({
            "sessions": sessions,
            "current": ctx.hub.current_id(),
            "can_open": ctx.hub.can_open(),
        }),
    ))
}

#[derive(Deserialize)]
struct SessionChoice {
    session_id: Option<String>,
}

async fn open_session(ctx: &Ctx, req: Request<Incoming>) -> Reply {
    let choice: SessionChoice = read_json(req).await?;
    if !ctx.hub.can_open() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "this server shares the terminal's session; use `linggen serve` to open others",
        ));
    }
    // Only this workspace's sessions: another project's conversation is not this server's
    // to resume (nor its runs to show), whatever prefix of its id is asked for.
    let wanted = match choice.session_id {
        Some(id) => Some(workspace_session(ctx, &id).await?),
        None => None,
    };
    let id = ctx
        .hub
        .open_session(wanted)
        .await
        .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e))?;
    Ok(json_response(StatusCode::OK, &json!({ "session_id": id })))
}

/// The stored session `id` (or a prefix of it), if it belongs to this server's workspace;
/// a session of another workspace is as unknown as one that does not exist.
pub(super) async fn session_in_workspace(
    ctx: &Ctx,
    id: &str,
) -> Result<Option<crate::store::SessionInfo>, ApiError> {
    let (home, wanted) = (ctx.hub.home.clone(), id.to_string());
    let root = ctx.hub.root.display().to_string();
    let found = blocking(move || match Store::open(&home)?.find_session(&wanted) {
        Ok(info) => Ok(Some(info)),
        Err(
            crate::store::StoreError::NoSuchSession(_) | crate::store::StoreError::Ambiguous(_),
        ) => Ok(None),
        Err(e) => Err(e),
    })
    .await?;
    Ok(found.filter(|info| info.root == root))
}

/// The full id of this workspace's session `id` (or a prefix of it); 404 for any other.
async fn workspace_session(ctx: &Ctx, id: &str) -> Result<String, ApiError> {
    match session_in_workspace(ctx, id).await? {
        Some(info) => Ok(info.id),
        None => Err(ApiError::not_found(format!(
            "no session {id} in this workspace"
        ))),
    }
}

#[derive(Deserialize)]
struct NewMessage {
    content: String,
    session_id: Option<String>,
    /// Pasted or dropped images: `{"media_type": "image/png", "data": BASE64}`.
    #[serde(default)]
    images: Vec<PastedImage>,
    /// Who sent it, as the transcript shows it: `web` (the default) or `attached` (a
    /// terminal attached to the session's owner).
    from: Option<String>,
    /// The person's own command (`!cargo test`): run through the same floor and approvals
    /// as the model's, its output joining the conversation. `content` is then the line.
    command: Option<String>,
    /// `/compact [instructions]`: compact the conversation now.
    compact: Option<String>,
    /// With `command`: a verification the person asked for (`/check CMD`).
    #[serde(default)]
    check: bool,
}

/// The sender names a message may carry.
const SENDERS: [&str; 2] = ["web", crate::app::attach::SENDER];

/// The sender a body names (`web` when it names none).
fn sender(from: Option<&str>) -> Result<String, ApiError> {
    match from {
        None => Ok("web".into()),
        Some(from) if SENDERS.contains(&from) => Ok(from.into()),
        Some(other) => Err(ApiError::bad_request(format!(
            "`from` is `{other}`; use web or attached"
        ))),
    }
}

/// The message `body` means: the line read with the core's grammar (skills, `@agent`,
/// triggers, `@file`), or the person's command or compaction as the terminal sends them.
fn user_message(
    hub: &super::Hub,
    body: NewMessage,
) -> Result<crate::session::UserMessage, ApiError> {
    let from = sender(body.from.as_deref())?;
    if body.command.is_none() && body.compact.is_none() {
        let mut message = hub.message(&body.content).map_err(ApiError::bad_request)?;
        message.from = from;
        return Ok(message);
    }
    let mut message = crate::session::UserMessage::new(body.content.trim(), from);
    message.command = body.command.filter(|c| !c.trim().is_empty());
    message.compact = body.compact;
    message.check = body.check && message.command.is_some();
    Ok(message)
}

#[derive(Deserialize)]
struct PastedImage {
    media_type: String,
    data: String,
}

/// The pasted images, checked as a tool's are (format, base64, size).
fn pasted(images: Vec<PastedImage>) -> Result<Vec<crate::llm::Image>, ApiError> {
    if images.len() > MAX_MESSAGE_IMAGES {
        return Err(ApiError::bad_request(format!(
            "a message takes at most {MAX_MESSAGE_IMAGES} images"
        )));
    }
    images
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            crate::llm::Image::from_base64(&p.media_type, p.data)
                .map_err(|why| ApiError::bad_request(format!("image {} is not sent: {why}", i + 1)))
        })
        .collect()
}

async fn message(ctx: &Ctx, req: Request<Incoming>) -> Reply {
    let bytes = read_body_up_to(req, MAX_MESSAGE_BODY).await?;
    let mut body: NewMessage = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_request(format!("the body is not the JSON this route takes: {e}"))
    })?;
    // The room is for images; the text keeps the limit of every other body.
    if body.content.len() > MAX_BODY {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the message text is larger than {MAX_BODY} bytes"),
        ));
    }
    let mirror = open_mirror(ctx, body.session_id.as_deref())?;
    let images = pasted(std::mem::take(&mut body.images))?;
    // Attaching `@file` mentions reads files: on the blocking pool, not the runtime.
    let hub = Arc::clone(&ctx.hub);
    let mut message = tokio::task::spawn_blocking(move || user_message(&hub, body))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    message.images.extend(images);
    send(&mirror, Input::UserMessage(message)).await?;
    Ok(json_response(
        StatusCode::ACCEPTED,
        &json!({ "queued": true }),
    ))
}

#[derive(Deserialize, Default)]
struct CancelBody {
    session_id: Option<String>,
    /// Drop the queued messages instead of cancelling the turn.
    #[serde(default)]
    queue: bool,
}

async fn cancel(ctx: &Ctx, req: Request<Incoming>) -> Reply {
    let body: CancelBody = read_json_or_default(req).await?;
    let mirror = open_mirror(ctx, body.session_id.as_deref())?;
    let input = match body.queue {
        true => Input::ClearQueue,
        false => Input::Cancel,
    };
    send(&mirror, input).await?;
    Ok(json_response(
        StatusCode::ACCEPTED,
        &json!({ "cancelled": true }),
    ))
}

#[derive(Deserialize)]
struct TaskStopBody {
    session_id: Option<String>,
    task_id: String,
}

/// `POST /api/task-stop`: stops a background command of the session, as `/tasks stop` does.
async fn task_stop(ctx: &Ctx, req: Request<Incoming>) -> Reply {
    let body: TaskStopBody = read_json(req).await?;
    let mirror = open_mirror(ctx, body.session_id.as_deref())?;
    send(
        &mirror,
        Input::StopTask {
            task_id: body.task_id,
        },
    )
    .await?;
    Ok(json_response(
        StatusCode::ACCEPTED,
        &json!({ "stopped": true }),
    ))
}

#[derive(Deserialize)]
struct ApprovalAnswer {
    decision: String,
    reason: Option<String>,
    session_id: Option<String>,
    /// Who answers, as the transcript says it: `web` (the default) or `attached`.
    from: Option<String>,
}

async fn approval(ctx: &Ctx, req: Request<Incoming>, id: String) -> Reply {
    let answer: ApprovalAnswer = read_json(req).await?;
    let decision = match answer.decision.as_str() {
        "allow_once" => Decision::AllowOnce,
        "allow_session" => Decision::AllowSession,
        "allow_project" => Decision::AllowProject,
        "deny" => Decision::Deny {
            reason: answer.reason.filter(|r| !r.trim().is_empty()),
        },
        other => {
            return Err(ApiError::bad_request(format!(
                "unknown decision `{other}`; use allow_once, allow_session, allow_project or deny"
            )));
        }
    };
    let mirror = open_mirror(ctx, answer.session_id.as_deref())?;
    // The session takes the first answer and tells this sender whether it was theirs (the
    // terminal or another browser may have answered in the same instant).
    let from = sender(answer.from.as_deref())?;
    send(&mirror, Input::Approval { id, decision, from }).await?;
    Ok(json_response(
        StatusCode::ACCEPTED,
        &json!({ "sent": true }),
    ))
}

/// The session a route works on: `id`, or the shared one.
pub(super) fn open_mirror(ctx: &Ctx, id: Option<&str>) -> Result<Arc<Mirror>, ApiError> {
    ctx.hub.mirror(id).map_err(ApiError::not_found)
}

/// Puts an input into the session's queue, the one the terminal uses. A refusal is the
/// session's sentence with the status its kind calls for: `404` (what it names is not
/// there), `409` (not now), `400` (a value the session does not know); `410` when the
/// session has ended.
pub(super) async fn send(mirror: &Mirror, input: Input) -> Result<(), ApiError> {
    match mirror.ask(input).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(refused)) => {
            let status = match refused.kind {
                RefusalKind::NotFound => StatusCode::NOT_FOUND,
                RefusalKind::Conflict => StatusCode::CONFLICT,
                RefusalKind::Invalid => StatusCode::BAD_REQUEST,
            };
            Err(ApiError::new(status, refused.message))
        }
        Err(ended) => Err(ApiError::new(StatusCode::GONE, ended)),
    }
}

/// Runs a store query off the async threads.
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, crate::store::StoreError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(internal)?
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

pub(super) async fn read_json<T: serde::de::DeserializeOwned>(
    req: Request<Incoming>,
) -> Result<T, ApiError> {
    let bytes = read_body(req).await?;
    serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_request(format!("the body is not the JSON this route takes: {e}"))
    })
}

/// Like [`read_json`], but an empty body means the defaults.
async fn read_json_or_default<T: serde::de::DeserializeOwned + Default>(
    req: Request<Incoming>,
) -> Result<T, ApiError> {
    let bytes = read_body(req).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_request(format!("the body is not the JSON this route takes: {e}"))
    })
}

async fn read_body(req: Request<Incoming>) -> Result<Bytes, ApiError> {
    read_body_up_to(req, MAX_BODY).await
}

async fn read_body_up_to(req: Request<Incoming>, limit: usize) -> Result<Bytes, ApiError> {
    Limited::new(req.into_body(), limit)
        .collect()
        .await
        .map(|c| c.to_bytes())
        .map_err(|_| {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the body is unreadable or larger than {limit} bytes"),
            )
        })
}

pub(super) fn required(req: &Request<Incoming>, name: &str) -> Result<String, ApiError> {
    query(req, name).ok_or_else(|| ApiError::bad_request(format!("give ?{name}=")))
}

/// A query parameter, percent-decoded.
pub(super) fn query(req: &Request<Incoming>, name: &str) -> Option<String> {
    let q = req.uri().query()?;
    reqwest::Url::parse(&format!("http://x/?{q}"))
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn header_str<K: header::AsHeaderName>(headers: &HeaderMap, name: K) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn asset(text: &'static str, content_type: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = status;
    response
}

pub(super) fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn error_response(e: ApiError) -> Response<Body> {
    json_response(e.status, &json!({ "error": e.message }))
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("internal error: {e}"),
    )
}

/// Headers on every response. There are deliberately no `Access-Control-*` ones: without
/// CORS no other site's script can read an answer.
fn secure(mut response: Response<Body>) -> Response<Body> {
    let headers = response.headers_mut();
    for (name, value) in [
        ("cache-control", "no-store"),
        ("referrer-policy", "no-referrer"),
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        (
            "content-security-policy",
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
        ),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}
