//! One tool call: validate, check permissions (asking a person when needed), run, report.

use tokio::sync::oneshot;

use super::event::{AgentState, Decision, Event};
use super::input::TurnMode;
use super::permissions::Verdict;
use super::run::{self, RunCtx};
use super::{Conversation, TurnShared, delegate, hooks, ids, lock};
use crate::hooks::{HookEvent, PermissionDecision};
use crate::llm::ToolCall;
use crate::tools::{self, Access, Prepared, SessionCall, ToolName, ToolOutput};

/// Who makes a call: the model, held to its agent's gates, or the person (`!cmd`), to whom
/// the gates do not apply (they limit what a model may do). Both go through the floor, the
/// sandbox, the permission mode and approvals alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Caller {
    Model,
    Person,
    /// A verification command the agent's spec names (`checks:`), run after a patch in auto
    /// mode: not the model's choice, so its gates do not apply either.
    Check,
    /// A `!` line of a skill or command the model invoked: written by the file's author,
    /// not the model, so hooks do not hear it (as for the person's); but it runs in the
    /// model's run, so its agent's gates (tools, work globs, locks) hold.
    Loaded,
}

pub(super) async fn execute(
    shared: &TurnShared,
    ctx: &mut RunCtx,
    conv: &mut Conversation,
    call: &ToolCall,
    changed: &mut Vec<String>,
    caller: Caller,
) -> ToolOutput {
    let prepared = match unparsable_arguments(call) {
        Some(error) => Err(error),
        None => tools::prepare_off_runtime(&shared.tools, &call.name, &call.arguments).await,
    };
    let summary = match &prepared {
        Ok(p) => p.summary.clone(),
        Err(_) => call.name.clone(),
    };
    let tool = prepared
        .as_ref()
        .map_or(call.name.as_str(), |p| p.tool.name())
        .to_string();
    let tool = tool.as_str();
    shared.bus.publish(Event::ToolCallStarted {
        run_id: ctx.id.clone(),
        call_id: call.id.clone(),
        tool: tool.to_string(),
        args: call.arguments.clone(),
        summary,
    });
    let mut output = match prepared {
        Ok(prepared) => decide_and_run(shared, ctx, conv, call, prepared, changed, caller).await,
        Err(invalid) => invalid,
    };
    // The person reads what their own command printed (the model's calls stay one line).
    if caller == Caller::Person
        && let Some(shown) = tools::bash::shown_to_person(&output, &ctx.id)
    {
        output.excerpt = Some(shown);
    }
    finished(shared, ctx, &call.id, tool, &output);
    output
}

/// A prepared call: the agent's gates, the `PreToolUse` hooks (which may change its
/// arguments, or decide its question), the permission check, the run, and the
/// `PostToolUse` hooks. Hooks hear only the model's calls (as in Claude Code, a person's
/// `!cmd` is not a tool use).
async fn decide_and_run(
    shared: &TurnShared,
    ctx: &mut RunCtx,
    conv: &mut Conversation,
    call: &ToolCall,
    prepared: Prepared,
    changed: &mut Vec<String>,
    caller: Caller,
) -> ToolOutput {
    let gated = |prepared: &Prepared| match caller {
        Caller::Model | Caller::Loaded => gate(shared, ctx, prepared),
        Caller::Person | Caller::Check => Ok(()),
    };
    if let Err(refused) = gated(&prepared) {
        return refused;
    }
    let hooked = caller == Caller::Model;
    let asked_for = prepared.summary.clone();
    let (prepared, decision) = match hooked {
        true => match pre_tool_use(shared, ctx, conv, call, prepared).await {
            Ok(decided) => decided,
            Err(blocked) => return blocked,
        },
        false => (prepared, None),
    };
    // What ran is what the trail shows, when a hook's `updatedInput` changed the call.
    let changed_by_hook = (prepared.summary != asked_for).then(|| prepared.summary.clone());
    if let Err(refused) = gated(&prepared) {
        return refused;
    }
    let mut output = match prepared.session_call() {
        Some(session_call) => {
            let session_call = session_call.clone();
            session_tool(shared, ctx, conv, session_call, changed).await
        }
        None => match authorize(shared, ctx, conv, call, &prepared, decision.as_ref()).await {
            Ok(()) => {
                if super::checkpoints::may_change_files(&prepared) {
                    super::checkpoints::ensure(shared, ctx).await;
                }
                let output = run(shared, ctx, &prepared, changed).await;
                match prepared.whole_read() {
                    Some(read) => {
                        let rel = read.rel.clone();
                        super::curate::curated(shared, ctx, conv, &rel, output).await
                    }
                    None => output,
                }
            }
            Err(denied) => return denied,
        },
    };
    if let Some(ran) = changed_by_hook {
        output.summary = format!(
            "{} (a PreToolUse hook changed the call to: {ran})",
            output.summary
        );
    }
    if hooked {
        post_tool_use(shared, ctx, conv, call, &prepared, &mut output).await;
    }
    output
}

/// The `PreToolUse` hooks: `Err` when one blocks the call (the model reads why); else the
/// call to make (with the hooks' `updatedInput`, prepared again like the model's own
/// arguments) and what the hooks decided about its question.
async fn pre_tool_use(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &Conversation,
    call: &ToolCall,
    prepared: Prepared,
) -> Result<(Prepared, Option<PermissionDecision>), ToolOutput> {
    let tool = prepared.tool.name().to_string();
    let fields = hooks::tool_fields(shared, call, &tool);
    let query = hooks::tool_query(&tool);
    let site = hooks::Site::run(ctx, conv);
    let outcome = hooks::fire(shared, site, HookEvent::PreToolUse, &query, fields).await;
    if let Some(reason) = outcome.stop {
        ctx.halt
            .raise(format!("stopped by a PreToolUse hook: {reason}"));
        return Err(ToolOutput::error(format!(
            "not run: a hook stopped the turn: {reason}"
        )));
    }
    if let Some(reason) = outcome.block {
        return Err(blocked_by_hook(HookEvent::PreToolUse, &reason));
    }
    if let Some(PermissionDecision::Deny { reason }) = &outcome.permission {
        return Err(blocked_by_hook(HookEvent::PreToolUse, reason));
    }
    let prepared = match outcome.updated_input {
        Some(input) => tools::prepare_off_runtime(&shared.tools, &call.name, &input)
            .await
            .map_err(|invalid| {
                ToolOutput::error(format!(
                    "a PreToolUse hook changed the arguments and they are not valid: {}",
                    invalid.model
                ))
            })?,
        None => prepared,
    };
    Ok((prepared, outcome.permission))
}

fn blocked_by_hook(event: HookEvent, reason: &str) -> ToolOutput {
    ToolOutput::error(format!("blocked by a {} hook: {reason}", event.name()))
        .with_summary(format!("blocked by hook: {}", first_line(reason)))
}

fn first_line(text: &str) -> &str {
    text.trim().lines().next().unwrap_or_default()
}

/// The `PostToolUse` hooks after a call that ran (`PostToolUseFailure` after one that
/// failed): what they say is added to the model's view of the result.
async fn post_tool_use(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &Conversation,
    call: &ToolCall,
    prepared: &Prepared,
    output: &mut ToolOutput,
) {
    let event = match output.is_error {
        false => HookEvent::PostToolUse,
        true => HookEvent::PostToolUseFailure,
    };
    let tool = prepared.tool.name().to_string();
    let mut fields = hooks::tool_fields(shared, call, &tool);
    match event {
        HookEvent::PostToolUse => fields.insert(
            "tool_response".into(),
            serde_json::json!({"success": true, "output": output.model}),
        ),
        _ => fields.insert("error".into(), serde_json::json!(output.model)),
    };
    let query = hooks::tool_query(&tool);
    let outcome = hooks::fire(shared, hooks::Site::run(ctx, conv), event, &query, fields).await;
    if let Some(reason) = &outcome.stop {
        ctx.halt
            .raise(format!("stopped by a {} hook: {reason}", event.name()));
    }
    hooks::after_tool(output, event, &outcome);
}

/// Publishes how a call ended.
fn finished(shared: &TurnShared, ctx: &RunCtx, call_id: &str, tool: &str, output: &ToolOutput) {
    shared.bus.publish(Event::ToolCallFinished {
        run_id: ctx.id.clone(),
        call_id: call_id.to_string(),
        tool: tool.to_string(),
        ok: !output.is_error,
        summary: output.summary.clone(),
        diff: output.diff.clone(),
        excerpt: output.excerpt.clone(),
    });
}

/// The agent's hard gates, checked before any approval is asked: the tool must be one the
/// agent has, a write must be inside its `work_globs` and not locked by another run.
fn gate(shared: &TurnShared, ctx: &RunCtx, prepared: &Prepared) -> Result<(), ToolOutput> {
    let agent = &ctx.agent;
    if ctx.mode == TurnMode::Talk {
        return Err(ToolOutput::error(
            "tools are off in talk mode; answer in plain text (the user can switch with /mode chat)",
        ));
    }
    if !agent.allows(&prepared.tool) {
        let registered = shared.tools.registry.registered();
        let usable: Vec<&str> = ToolName::all()
            .filter(|t| agent.allows_tool(*t))
            .map(|t| t.name())
            .chain(
                registered
                    .iter()
                    .filter(|e| agent.allows(&e.id()))
                    .map(|e| e.spec.name.as_str()),
            )
            .collect();
        let usable = usable.join(", ");
        return Err(ToolOutput::error(format!(
            "agent `{}` may not use `{}`; use one of its tools: {usable}",
            agent.name, prepared.tool,
        )));
    }
    let targets: Vec<String> = match &prepared.access {
        Access::Write { rel, .. } => vec![rel.clone()],
        Access::Patch { files, .. } => files.clone(),
        Access::Command { analysis, .. } => analysis
            .write_targets()
            .iter()
            .map(|t| relative_to_root(&shared.tools.root, t))
            .collect(),
        // A screenshot is a new file in linggen's own `.linggen/screenshots/`, never a
        // project file, so work globs and locks (which guard project files) do not apply.
        // A registered tool names no paths linggen could check; permission decides it.
        Access::Read | Access::Screenshot { .. } | Access::Registered { .. } => Vec::new(),
    };
    for rel in targets {
        agent
            .check_write(&rel)
            .and_then(|()| lock(&shared.locks).check_write(&ctx.id, &rel))
            .map_err(|why| ToolOutput::error(format!("refused: {why}")))?;
    }
    Ok(())
}

/// A command's write target as a path relative to the root, for the work-glob and lock checks.
fn relative_to_root(root: &std::path::Path, target: &str) -> String {
    let path = std::path::Path::new(target);
    match path.strip_prefix(root) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => target.trim_start_matches("./").to_string(),
    }
}

/// Carries out `Skill`, `delegate_to_agent`, `lock_paths`, `unlock_paths` and `TodoWrite`.
async fn session_tool(
    shared: &TurnShared,
    ctx: &mut RunCtx,
    conv: &mut Conversation,
    call: SessionCall,
    changed: &mut Vec<String>,
) -> ToolOutput {
    match call {
        SessionCall::Skill { name, args } => {
            super::skill_call::invoke(shared, ctx, conv, &name, &args, changed).await
        }
        SessionCall::Delegate {
            target,
            task,
            background,
        } => {
            let child = match delegation(shared, ctx, &target, task) {
                Ok(child) => child,
                Err(why) => return ToolOutput::error(why),
            };
            if background {
                let run_id = delegate::start_background(shared, ctx, conv, child);
                return ToolOutput::ok(
                    format!(
                        "agent `{target}` is working on it in the background (run {run_id}); \
                         its answer arrives as a message when it finishes. Go on with other \
                         work, or end your turn."
                    ),
                    format!("{target} started in the background"),
                );
            }
            let files_before = changed.len();
            let end = delegate::run_child(shared, ctx, conv, child, changed).await;
            // Files the child changed are this run's progress too (auto mode's limits).
            if changed.len() > files_before {
                ctx.writes += 1;
            }
            delegate::as_tool_output(&target, &end)
        }
        SessionCall::Lock { globs, ttl_ms } => {
            let ttl = std::time::Duration::from_millis(ttl_ms);
            match lock(&shared.locks).lock(&ctx.id, &ctx.agent.name, &globs, ttl) {
                Ok(token) => ToolOutput::ok(
                    format!(
                        "locked {} for {}s; token: {token} (pass it to unlock_paths when done)",
                        globs.join(", "),
                        ttl_ms / 1000
                    ),
                    format!("locked {}", globs.join(", ")),
                ),
                Err(why) => ToolOutput::error(why),
            }
        }
        SessionCall::Unlock { tokens } => {
            let (released, unknown) = lock(&shared.locks).unlock(&ctx.id, &tokens);
            if unknown.is_empty() {
                ToolOutput::ok(
                    format!("released {released} lock(s)"),
                    format!("released {released}"),
                )
            } else {
                ToolOutput::error(format!(
                    "released {released} lock(s); not held by this run (or expired): {}",
                    unknown.join(", ")
                ))
            }
        }
        // The list is the session's (every frontend shows it), whichever run wrote it.
        SessionCall::Todos { todos } => {
            let output = tools::todo::confirmation(&todos);
            shared.bus.publish(Event::TodosUpdated { todos });
            output
        }
    }
}

/// Checks a `delegate_to_agent` call against the policy, the targets and the depth limit.
fn delegation(
    shared: &TurnShared,
    ctx: &RunCtx,
    target: &str,
    task: String,
) -> Result<delegate::ChildTask, String> {
    ctx.agent.check_delegate(target)?;
    if target == ctx.agent.name {
        return Err(format!(
            "`{target}` is this agent; do the task yourself or delegate to another agent"
        ));
    }
    let agents = shared.agents.get();
    let Some(spec) = agents.get(target) else {
        return Err(format!(
            "no agent named `{target}`; agents: {}",
            agents.names().join(", ")
        ));
    };
    delegate::check_depth(shared, ctx)?;
    let route = super::route_for(shared, spec.model.as_deref(), &shared.choice);
    Ok(delegate::ChildTask {
        agent: spec.clone(),
        route,
        label: task.clone(),
        task,
        skill_rules: Vec::new(),
        images: Vec::new(),
    })
}

/// Providers hand over arguments they could not parse as `{"_raw": "..."}`.
fn unparsable_arguments(call: &ToolCall) -> Option<ToolOutput> {
    let raw = call.arguments.as_object()?.get("_raw")?.as_str()?;
    Some(ToolOutput::error(format!(
        "the arguments for `{}` were not valid JSON: {raw}\nSend the arguments as one JSON object.",
        call.name
    )))
}

async fn run(
    shared: &TurnShared,
    ctx: &mut RunCtx,
    prepared: &Prepared,
    changed: &mut Vec<String>,
) -> ToolOutput {
    run::status(
        shared,
        ctx,
        AgentState::RunningTool,
        Some(prepared.summary.clone()),
    );
    let output = tokio::select! {
        out = tools::run(&shared.tools, prepared) => out,
        // Dropping the tool future kills a running command's whole process group.
        _ = ctx.cancel.cancelled() => ToolOutput::error("cancelled by the user"),
    };
    if output.fault.is_some() {
        ctx.halt.raise(format!("stopped: {}", output.model));
    }
    if !output.is_error {
        let written: &[String] = match &prepared.access {
            Access::Write { rel, .. } => std::slice::from_ref(rel),
            Access::Patch { files, .. } => files,
            _ => &[],
        };
        if !written.is_empty() {
            // What tells a step that changed something (auto mode's limits).
            ctx.writes += 1;
            super::turn::merge(changed, written.to_vec());
        }
    }
    output
}

/// `Ok(())` when the call may run; otherwise the observation that tells the model why not.
/// `hook` is what the `PreToolUse` hooks decided: `ask` asks even where the rules allow;
/// `allow` skips a question the hooks may answer (see [`hooks::may_skip_question`]); no
/// hook lifts a deny.
async fn authorize(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &mut Conversation,
    call: &ToolCall,
    prepared: &Prepared,
    hook: Option<&PermissionDecision>,
) -> Result<(), ToolOutput> {
    let verdict = conv.permissions.check_with(prepared, &ctx.skill_rules);
    // "Always" would change nothing where a rule or a hook asks every time: only "once".
    let once = super::permissions::once_only(prepared)
        || conv.permissions.asks_every_time(prepared)
        || matches!(hook, Some(PermissionDecision::Ask { .. }));
    let Some(reason) = why_ask(verdict, hook, prepared)? else {
        return Ok(());
    };
    if permission_request(shared, ctx, conv, call, prepared).await? {
        return Ok(());
    }
    if !shared.interactive {
        return Err(nobody_to_ask(prepared, &reason));
    }
    let site = hooks::Site::run(ctx, conv);
    let message = format!(
        "linggen needs your permission to use {}",
        prepared.tool.name()
    );
    hooks::notify(shared, site, message, "permission_prompt");
    let (decision, by) = ask_person(shared, ctx, prepared, &reason, once).await?;
    let decision = match decision {
        Decision::AllowSession | Decision::AllowProject if once => Decision::AllowOnce,
        decision => decision,
    };
    match decision {
        Decision::AllowOnce => Ok(()),
        Decision::AllowSession => {
            conv.permissions.allow_for_session(prepared);
            Ok(())
        }
        Decision::AllowProject => {
            allow_for_project(shared, conv, prepared).await;
            Ok(())
        }
        Decision::Deny { reason } => Err(denied(reason, &by)),
    }
}

/// Why the person is asked about a call, after the rules' verdict and a `PreToolUse`
/// hook's decision; `None` when the call may run, an error when it is denied.
fn why_ask(
    verdict: Verdict,
    hook: Option<&PermissionDecision>,
    prepared: &Prepared,
) -> Result<Option<String>, ToolOutput> {
    Ok(Some(match (verdict, hook) {
        (Verdict::Deny { reason }, _) => {
            return Err(ToolOutput::error(format!(
                "permission denied: {reason}. Do not retry this call; tell the user or take another way."
            )));
        }
        (Verdict::Allow, Some(PermissionDecision::Ask { reason })) => reason
            .clone()
            .unwrap_or_else(|| "a PreToolUse hook asks for your approval".into()),
        (Verdict::Allow, _) => return Ok(None),
        (Verdict::Ask { .. }, Some(PermissionDecision::Allow { .. }))
            if hooks::may_skip_question(prepared) =>
        {
            return Ok(None);
        }
        (Verdict::Ask { reason }, _) => reason,
    }))
}

/// What the model reads when a call needs approval in a run nobody can answer.
fn nobody_to_ask(prepared: &Prepared, reason: &str) -> ToolOutput {
    // No flag lifts a write to a skill or agent folder, so do not suggest one.
    let advice = if super::permissions::writes_grant_path(prepared) {
        "tell the user to make this change themselves"
    } else {
        "tell the user they can rerun with --permission-mode or --allowed-tools"
    };
    ToolOutput::error(format!(
        "not run: `{}` needs the user's approval ({reason}), and nobody can approve in this \
         non-interactive run. Do not retry; {advice}.",
        prepared.summary
    ))
}

/// "Always (this project)": the call is allowed from now on and the rule saved in the
/// project's rules file. The person said yes; failing to save that for next time must not
/// undo it, so a failed save allows it for the session and says so.
async fn allow_for_project(shared: &TurnShared, conv: &mut Conversation, prepared: &Prepared) {
    // Saving writes the project's rules file: on the blocking pool, with a copy of the
    // permissions that comes back changed.
    let (mut permissions, root, call) = (
        conv.permissions.clone(),
        shared.tools.root.clone(),
        prepared.clone(),
    );
    let saved = tokio::task::spawn_blocking(move || {
        let saved = permissions.allow_for_project(&root, &call);
        (permissions, saved)
    })
    .await;
    let saved = match saved {
        Ok((permissions, saved)) => {
            conv.permissions = permissions;
            saved
        }
        Err(e) => {
            conv.permissions.allow_for_session(prepared);
            Err(format!("saving the rule failed: {e}"))
        }
    };
    if let Err(e) = saved {
        shared.bus.publish(Event::Error {
            message: format!("approved for this session only; {e}"),
        });
    }
}

/// A denied call: the model reads why; the person reads that it was denied (they know why).
fn denied(reason: Option<String>, by: &str) -> ToolOutput {
    match reason {
        Some(r) if !r.trim().is_empty() => {
            ToolOutput::error(format!("the user ({by}) denied this call and said: {r}"))
                .with_summary(format!("not run: {}", r.trim()))
        }
        _ => ToolOutput::error(format!(
            "the user ({by}) denied this call. Do not retry it."
        ))
        .with_summary("not run"),
    }
}

/// The `PermissionRequest` hooks, where a question would be asked: `Ok(true)` when one
/// answered yes for the person (only where a hook may: [`hooks::may_skip_question`]),
/// `Ok(false)` when the question is still to be asked, `Err` when one refused the call.
async fn permission_request(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &Conversation,
    call: &ToolCall,
    prepared: &Prepared,
) -> Result<bool, ToolOutput> {
    let tool = prepared.tool.name().to_string();
    let fields = hooks::tool_fields(shared, call, &tool);
    let query = hooks::tool_query(&tool);
    let site = hooks::Site::run(ctx, conv);
    let outcome = hooks::fire(shared, site, HookEvent::PermissionRequest, &query, fields).await;
    if let Some(reason) = &outcome.block {
        return Err(blocked_by_hook(HookEvent::PermissionRequest, reason));
    }
    match &outcome.permission {
        Some(PermissionDecision::Deny { reason }) => {
            Err(blocked_by_hook(HookEvent::PermissionRequest, reason))
        }
        Some(PermissionDecision::Allow { .. }) => Ok(hooks::may_skip_question(prepared)),
        _ => Ok(false),
    }
}

async fn ask_person(
    shared: &TurnShared,
    ctx: &RunCtx,
    prepared: &Prepared,
    reason: &str,
    once_only: bool,
) -> Result<(Decision, String), ToolOutput> {
    let id = ids::new_id();
    let (tx, rx) = oneshot::channel();
    lock(&shared.pending).insert(id.clone(), tx);
    let diff = match &prepared.access {
        Access::Write { preview_diff, .. } | Access::Patch { preview_diff, .. } => {
            preview_diff.clone()
        }
        _ => None,
    };
    shared.bus.publish(Event::ApprovalRequested {
        id: id.clone(),
        run_id: ctx.id.clone(),
        tool: prepared.tool.to_string(),
        summary: prepared.summary.clone(),
        display: prepared.approval_display(),
        reason: reason.to_string(),
        diff,
        once_only,
        always: super::permissions::scope_rules(prepared),
    });
    run::status(
        shared,
        ctx,
        AgentState::WaitingApproval,
        Some(prepared.summary.clone()),
    );
    let answer = tokio::select! {
        answer = rx => answer.ok(),
        _ = ctx.cancel.cancelled() => None,
    };
    lock(&shared.pending).remove(&id);
    let Some((decision, by)) = answer else {
        return Err(ToolOutput::error("not run: the user cancelled the turn"));
    };
    shared.bus.publish(Event::ApprovalResolved {
        id,
        decision: decision.clone(),
        by: by.clone(),
    });
    Ok((decision, by))
}

/// A command the person typed (`!cmd`): a `Bash` call made by the person (see [`Caller`]),
/// shown like the model's.
pub(super) async fn person_command(
    shared: &TurnShared,
    ctx: &mut RunCtx,
    conv: &mut Conversation,
    command: &str,
    changed: &mut Vec<String>,
) -> ToolOutput {
    command_by(shared, ctx, conv, command, changed, Caller::Person).await
}

/// A `Bash` call of `command` that `caller` makes (not the model's own: those come with
/// their call ids).
pub(super) async fn command_by(
    shared: &TurnShared,
    ctx: &mut RunCtx,
    conv: &mut Conversation,
    command: &str,
    changed: &mut Vec<String>,
    caller: Caller,
) -> ToolOutput {
    let call = ToolCall {
        id: format!("cmd_{}", ids::new_id()),
        name: ToolName::Bash.name().to_string(),
        arguments: serde_json::json!({ "command": command }),
    };
    execute(shared, ctx, conv, &call, changed, caller).await
}
