//! The Agents panel's routes: list the workspace's agents with their files, offer the model
//! picker's choices, and create, edit, duplicate and delete agent files (see `doc/web.md`).
//!
//! Writes go to the files the terminal reads, atomically, after the loader's own parser has
//! read the exact text (so a file the loader would skip is never written, and the message
//! is the loader's). Only full-access credentials get here for a `POST` (the gate refuses
//! the rest). An agent grants nothing (its fields only narrow what the model is offered;
//! see `session::permissions::trust`), so a project agent written here needs no trust, and
//! none is given: the answer says so.

use std::path::{Path, PathBuf};

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::api::{ApiError, Reply, json_response, read_json};
use super::auth::Access;
use super::hub::Hub;
use super::server::Ctx;
use crate::agents::edit::{self, AgentFields, EditError, Scope};
use crate::agents::{AgentSet, AgentSource, AgentSpec, Capability, ToolAllow};
use crate::config::Config;

/// What the answer about a project agent says about trust.
const PROJECT_TRUST: &str = "a project agent grants nothing: its tools, policy and skills only \
     narrow what the model is offered, every call it makes still goes through your permission \
     checks, and its `checks:` run without asking only where your trusted `[checks] allow` \
     says so; it needs no trust and none was given (doc/trust.md)";

/// `POST /api/agents` and `POST /api/agents/{name}[/duplicate]`. Without `text` the file is
/// made from the form's fields.
#[derive(Deserialize, Default)]
struct AgentWrite {
    #[serde(default)]
    dry_run: bool,
    /// `personal` or `project`: where a new or duplicated agent goes.
    scope: Option<String>,
    /// The whole file, instead of the fields.
    text: Option<String>,
    #[serde(flatten)]
    fields: AgentFields,
}

/// A request that was refused: its status and JSON answer.
struct Refusal {
    status: StatusCode,
    body: Value,
}

impl Refusal {
    fn new(status: StatusCode, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            body: json!({ "error": message.into() }),
        }
    }
}

impl From<EditError> for Refusal {
    fn from(e: EditError) -> Refusal {
        let status = match &e {
            EditError::BadName { .. } | EditError::Invalid(_) | EditError::Refused(_) => {
                StatusCode::BAD_REQUEST
            }
            EditError::Exists(_) => StatusCode::CONFLICT,
            EditError::Write { .. } | EditError::Io { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Refusal::new(status, e.to_string())
    }
}

/// A file about to be written.
struct Planned {
    path: PathBuf,
    text: String,
    spec: AgentSpec,
    warnings: Vec<String>,
    /// A new file: refused if one is there.
    new: bool,
}

/// `GET /api/agents`.
pub(super) async fn list(ctx: &Ctx, access: Access) -> Reply {
    let hub = hub(ctx);
    let answer = off_runtime(move || Ok(listing(&hub, access))).await?;
    Ok(json_response(StatusCode::OK, &answer))
}

fn listing(hub: &Hub, access: Access) -> Value {
    let set = hub.agents().get();
    let skills = hub.skills().get();
    let dirs = hub.agents().dirs();
    let agents: Vec<Value> = set.agents.iter().map(|a| agent_json(a, None)).collect();
    let mut warnings = set.warnings.clone();
    warnings.extend(set.unknown_skill_warnings(&skills));
    let skill_names: Vec<Value> = skills
        .model_visible()
        .map(|s| json!({ "name": s.name, "description": s.description }))
        .collect();
    let capabilities = [
        Capability::Patch,
        Capability::Finalize,
        Capability::Delegate,
    ]
    .map(Capability::name);
    json!({
        "agents": agents,
        "warnings": warnings,
        "can_edit": access == Access::Full,
        "folders": {
            "personal": Scope::Personal.folder(dirs),
            "project": Scope::Project.folder(dirs),
        },
        "tools": crate::tools::all_tool_names(),
        "capabilities": capabilities,
        "modes": ["chat", "auto", "talk"],
        "skills": skill_names,
    })
}

/// One agent as the panel shows and edits it. `text` is the file as it will be (a preview);
/// without it the file is read.
fn agent_json(agent: &AgentSpec, text: Option<&str>) -> Value {
    let text = text.map(str::to_string).or_else(|| source_text(agent));
    let (frontmatter, prompt) = text.as_deref().map(edit::split).unwrap_or_default();
    let tools = match &agent.tools {
        ToolAllow::All => json!("*"),
        ToolAllow::Only(names) => json!(names),
    };
    let allow: Vec<&str> = agent.capabilities.iter().map(|c| c.name()).collect();
    json!({
        "name": agent.name,
        "description": agent.description,
        "model": agent.model,
        "mode": agent.mode.map(|m| m.as_str()),
        "tools": tools,
        "skills": agent.skills,
        "policy": { "allow": allow, "delegate_targets": agent.delegate_targets },
        "work_globs": agent.work_globs,
        "checks": agent.checks,
        "source": source_name(agent.source),
        "folder": agent.source.label(),
        "path": agent.path,
        "editable": agent.source != AgentSource::Builtin,
        "text": text,
        "frontmatter": frontmatter,
        "prompt": prompt,
    })
}

fn source_name(source: AgentSource) -> &'static str {
    match source {
        AgentSource::Personal => "personal",
        AgentSource::ProjectHidden | AgentSource::Project => "project",
        AgentSource::Builtin => "builtin",
    }
}

/// The text of the file `agent` was read from (a built-in's from the binary).
fn source_text(agent: &AgentSpec) -> Option<String> {
    if agent.source == AgentSource::Builtin {
        let file = agent.path.strip_prefix("built-in agents/")?;
        return crate::agents::builtin_sources()
            .iter()
            .find(|(name, _)| *name == file)
            .map(|(_, text)| (*text).to_string());
    }
    std::fs::read_to_string(&agent.path).ok()
}

/// `GET /api/models`.
pub(super) fn models(ctx: &Ctx) -> Reply {
    Ok(json_response(StatusCode::OK, ctx.hub.models()))
}

/// What an agent's `model:` may say: a configured model's id, or `local` / `cloud` (when a
/// model of that kind is configured). Routing policies are listed for information: they
/// choose among these for the session, an agent's hint cannot name one.
pub fn model_choices(config: &Config) -> Value {
    let models: Vec<Value> = config
        .models
        .iter()
        .map(|m| {
            let kind = if m.is_local() { "local" } else { "cloud" };
            json!({
                "id": m.id,
                "label": format!("{} — {} ({kind})", m.id, m.model),
                "provider": m.provider.as_str(),
                "model": m.model,
                "local": m.is_local(),
            })
        })
        .collect();
    let has = |local: bool| config.models.iter().any(|m| m.is_local() == local);
    let routing = config.routing.clone().unwrap_or_default();
    let mut policies = vec![
        crate::config::routing::LOCAL_FIRST.to_string(),
        crate::config::routing::CLOUD_FIRST.to_string(),
    ];
    policies.extend(routing.policies.iter().map(|p| p.name.clone()));
    json!({
        "models": models,
        "hints": [
            { "value": "local", "label": "local — any local model", "available": has(true) },
            { "value": "cloud", "label": "cloud — any cloud model", "available": has(false) },
        ],
        "routing": { "default_policy": routing.default_policy, "policies": policies },
        "current": config.model_choice,
    })
}

/// `POST /api/agents/…`: `{name}` edits, `{name}/delete`, `{name}/duplicate`.
pub(super) async fn post(ctx: &Ctx, req: Request<Incoming>, rest: &str) -> Reply {
    let (name, action) = match rest.split_once('/') {
        Some((name, action)) => (name.to_string(), action),
        None => (rest.to_string(), ""),
    };
    if let Err(e) = edit::check_name(&name) {
        return Err(ApiError::bad_request(e.to_string()));
    }
    match action {
        "" => {
            let body: AgentWrite = read_json(req).await?;
            answer(ctx, body.dry_run, move |hub| plan_update(hub, &name, body)).await
        }
        "duplicate" => {
            let body: AgentWrite = read_json(req).await?;
            answer(ctx, body.dry_run, move |hub| {
                plan_duplicate(hub, &name, body)
            })
            .await
        }
        "delete" => delete(ctx, name).await,
        other => Err(ApiError::not_found(format!(
            "no route /api/agents/{name}/{other}; use /api/agents/NAME, …/delete or …/duplicate"
        ))),
    }
}

/// `POST /api/agents`: a new agent.
pub(super) async fn create(ctx: &Ctx, req: Request<Incoming>) -> Reply {
    let body: AgentWrite = read_json(req).await?;
    answer(ctx, body.dry_run, move |hub| plan_create(hub, body)).await
}

/// Plans off the runtime (it reads files), writes unless `dry_run`, and answers.
async fn answer(
    ctx: &Ctx,
    dry_run: bool,
    plan: impl FnOnce(&Hub) -> Result<Planned, Refusal> + Send + 'static,
) -> Reply {
    let hub = hub(ctx);
    let outcome = off_runtime(move || {
        let planned = match plan(&hub) {
            Ok(planned) => planned,
            Err(refusal) => return Ok(Err(refusal)),
        };
        if !dry_run {
            if let Err(e) = edit::write(&planned.path, &planned.text, planned.new) {
                return Ok(Err(Refusal::from(e)));
            }
            // Now, not a second later: the next listing and the terminal see it at once.
            hub.agents().reload();
        }
        Ok(Ok(written_json(&planned, dry_run)))
    })
    .await?;
    Ok(match outcome {
        Ok(body) => json_response(StatusCode::OK, &body),
        Err(refusal) => json_response(refusal.status, &refusal.body),
    })
}

fn written_json(planned: &Planned, dry_run: bool) -> Value {
    let project = planned.spec.source != AgentSource::Personal;
    json!({
        "dry_run": dry_run,
        "written": !dry_run,
        "name": planned.spec.name,
        "path": planned.path,
        "source": source_name(planned.spec.source),
        "text": planned.text,
        "warnings": planned.warnings,
        "grants": [],
        "trust": project.then_some(PROJECT_TRUST),
        "agent": agent_json(&planned.spec, Some(&planned.text)),
    })
}

fn plan_create(hub: &Hub, body: AgentWrite) -> Result<Planned, Refusal> {
    let scope = scope(&body)?;
    let Some(name) = body.fields.name.clone().filter(|n| !n.trim().is_empty()) else {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "give the new agent a \"name\" (1-64 characters of a-z, 0-9 and -)",
        ));
    };
    let path = edit::new_file(hub.agents().dirs(), scope, name.trim())?;
    let text = body
        .text
        .clone()
        .unwrap_or_else(|| edit::compose(&body.fields, &Default::default()));
    if path.exists() {
        return Err(EditError::Exists(path).into());
    }
    checked(hub, path, text, scope.source(), name.trim(), true)
}

fn plan_update(hub: &Hub, name: &str, body: AgentWrite) -> Result<Planned, Refusal> {
    let set = hub.agents().get();
    let agent = existing(&set, name)?;
    let path = PathBuf::from(&agent.path);
    edit::check_existing(hub.agents().dirs(), agent.source, &path)?;
    let text = match body.text {
        Some(text) => text,
        None => {
            let old = std::fs::read_to_string(&path).unwrap_or_default();
            let mut fields = body.fields;
            fields.name.get_or_insert_with(|| name.to_string());
            edit::compose(&fields, &edit::unedited_fields(&old))
        }
    };
    checked(hub, path, text, agent.source, name, false)
}

fn plan_duplicate(hub: &Hub, name: &str, body: AgentWrite) -> Result<Planned, Refusal> {
    let scope = scope(&body)?;
    let set = hub.agents().get();
    let Some(agent) = set.get(name) else {
        return Err(unknown(name));
    };
    let new_name = body
        .fields
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .unwrap_or(name);
    let path = edit::new_file(hub.agents().dirs(), scope, new_name)?;
    let original = source_text(agent).ok_or_else(|| {
        Refusal::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot read {}", agent.path),
        )
    })?;
    let text = edit::renamed(&original, new_name);
    if path.exists() {
        return Err(EditError::Exists(path).into());
    }
    checked(hub, path, text, scope.source(), new_name, true)
}

/// Parses `text` as the loader will read it at `path`, and adds what the panel should know.
fn checked(
    hub: &Hub,
    path: PathBuf,
    text: String,
    source: AgentSource,
    name: &str,
    new: bool,
) -> Result<Planned, Refusal> {
    let (spec, mut warnings) = edit::check(&path, &text, source)?;
    if spec.name != name {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            format!(
                "{}: the file says `name: {}` but is written for `{name}`; make them the same \
                 (to rename an agent, duplicate it under the new name and delete the old one)",
                path.display(),
                spec.name
            ),
        ));
    }
    let probe = AgentSet {
        agents: vec![spec.clone()],
        warnings: Vec::new(),
    };
    warnings.extend(probe.unknown_skill_warnings(&hub.skills().get()));
    warnings.extend(shadowing(&hub.agents().get(), &spec, &path));
    Ok(Planned {
        path,
        text,
        spec,
        warnings,
        new,
    })
}

/// When another file of the same name comes first, this one is not used: say so.
fn shadowing(set: &AgentSet, spec: &AgentSpec, path: &Path) -> Option<String> {
    let winner = set.get(&spec.name)?;
    (winner.source < spec.source && Path::new(&winner.path) != path).then(|| {
        format!(
            "the {} agent `{}` ({}) comes first, so this one is used only once that file is \
             removed",
            winner.source.label(),
            spec.name,
            winner.path
        )
    })
}

fn scope(body: &AgentWrite) -> Result<Scope, Refusal> {
    body.scope.as_deref().and_then(Scope::parse).ok_or_else(|| {
        Refusal::new(
            StatusCode::BAD_REQUEST,
            "give \"scope\": \"personal\" ($LINGGEN_HOME/agents, yours in every workspace) or \
             \"project\" (<root>/.linggen/agents, this workspace's)",
        )
    })
}

/// The agent `name`, if its file may be changed here.
fn existing<'a>(set: &'a AgentSet, name: &str) -> Result<&'a AgentSpec, Refusal> {
    let agent = set.get(name).ok_or_else(|| unknown(name))?;
    if agent.source == AgentSource::Builtin {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            format!(
                "`{name}` is built in and cannot be changed; duplicate it into your personal \
                 or the project's agents (POST /api/agents/{name}/duplicate) and edit the copy"
            ),
        ));
    }
    Ok(agent)
}

fn unknown(name: &str) -> Refusal {
    Refusal::new(
        StatusCode::NOT_FOUND,
        format!("no agent `{name}`; GET /api/agents lists them"),
    )
}

/// `POST /api/agents/{name}/delete`: removes the file the agent was read from. What the
/// name means afterwards (a built-in it had replaced, say) is in `now`.
async fn delete(ctx: &Ctx, name: String) -> Reply {
    let hub = hub(ctx);
    let outcome = off_runtime(move || {
        let set = hub.agents().get();
        let agent = match existing(&set, &name) {
            Ok(agent) => agent,
            Err(refusal) => return Ok(Err(refusal)),
        };
        let path = PathBuf::from(&agent.path);
        let removed = edit::check_existing(hub.agents().dirs(), agent.source, &path)
            .and_then(|()| edit::remove(&path));
        if let Err(e) = removed {
            return Ok(Err(Refusal::from(e)));
        }
        hub.agents().reload();
        let now = hub.agents().get().get(&name).map(|a| agent_json(a, None));
        Ok(Ok(json!({ "deleted": name, "path": path, "now": now })))
    })
    .await?;
    Ok(match outcome {
        Ok(body) => json_response(StatusCode::OK, &body),
        Err(refusal) => json_response(refusal.status, &refusal.body),
    })
}

fn hub(ctx: &Ctx) -> std::sync::Arc<Hub> {
    std::sync::Arc::clone(&ctx.hub)
}

/// Runs file work on the blocking pool, not the runtime's two threads.
async fn off_runtime<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal error: {e}"),
        )
    })?
}
