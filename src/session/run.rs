//! One run: an agent working on one task with its own history — the model's response, its
//! tool calls, their observations, again — until a plain answer, an error, cancellation or
//! `max_iters`. A turn is a top-level run; `delegate_to_agent` and forked skills start child
//! runs through the same loop (see [`super::delegate`]).

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::event::{AgentState, Event, OutcomeStatus};
use super::input::TurnMode;
use super::limits::Watch;
use super::permissions::Rule;
use super::strategy::{After, Answer, Strategy};
use super::{
    Choice, Conversation, TurnShared, call_ids, compact, delegate, hooks, lock, model_call,
    tool_call,
};
use crate::agents::AgentSpec;
use crate::llm::{ChatMessage, LlmError, ToolCall, ToolSpec, Usage};
use crate::shared_text::SharedText;
use crate::tools::{ToolName, session_tools};

/// Everything one run works with.
#[derive(Clone)]
pub(crate) struct RunCtx {
    pub id: String,
    pub parent_id: Option<String>,
    /// 0 for a turn, +1 per delegation.
    pub depth: u32,
    pub agent: AgentSpec,
    /// What decides the model of each of its calls.
    pub route: Choice,
    pub mode: TurnMode,
    pub cancel: CancellationToken,
    /// Rules from skills invoked in this run (`allowed-tools`): allowed without asking
    /// until the run ends.
    pub skill_rules: Vec<Rule>,
    /// The checkpoints of the prompt this run works for.
    pub mark: std::sync::Arc<super::checkpoints::TurnMark>,
    /// Successful file writes (`Write`, `Edit`, `apply_patch`) so far: what tells a step
    /// that changed something from one that did not.
    pub writes: u32,
    /// Set when a call failed for the machine's reason (see [`Halt`]); shared by the turn's
    /// runs.
    pub halt: Halt,
}

/// Why a turn must stop: a tool failed for a reason in the machine (a full disk, see
/// `ToolOutput::fault`) that no model answer can fix, and a run that went on would only
/// retry, or end with a "done" over a change that was not made. Shared by every run of
/// the turn, so a delegated run's fault stops its parent too. The first reason wins.
#[derive(Clone, Default)]
pub(crate) struct Halt(std::sync::Arc<std::sync::Mutex<Option<String>>>);

impl Halt {
    pub fn raise(&self, why: String) {
        lock(&self.0).get_or_insert(why);
    }

    pub fn reason(&self) -> Option<String> {
        lock(&self.0).clone()
    }
}

/// How a run ended.
pub(crate) struct RunEnd {
    pub status: OutcomeStatus,
    /// The final answer (shared with the message that carried it) or why the run ended.
    pub result: SharedText,
    pub iterations: u32,
    pub usage: Usage,
}

/// What the model produced in one response.
#[derive(Default)]
pub(crate) struct Response {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    /// The provider said the output-token limit ended it.
    pub cut_short: bool,
    /// The context window of the model that answered, when known.
    pub context_window: Option<u32>,
    /// Which of the router's models answered.
    pub served_by: Option<usize>,
}

pub(crate) enum Step {
    Done(Response),
    Failed(LlmError),
    Cancelled(Response),
}

/// Runs `ctx` on `conv` (whose first message is the system prompt) starting with `task`.
/// Boxed because delegation makes it recursive.
pub(crate) fn run<'a>(
    shared: &'a TurnShared,
    ctx: &'a mut RunCtx,
    conv: &'a mut Conversation,
    task: ChatMessage,
    label: String,
    from: &'a str,
    changed: &'a mut Vec<String>,
) -> BoxFuture<'a, RunEnd> {
    Box::pin(async move {
        announce(shared, ctx, label);
        run_announced(shared, ctx, conv, task, from, changed).await
    })
}

/// [`run`] for a run whose `RunStarted` is already out: a skill's or custom command's turn,
/// whose `` !`cmd` `` lines ran as calls of this run before its message existed.
pub(crate) async fn run_announced(
    shared: &TurnShared,
    ctx: &mut RunCtx,
    conv: &mut Conversation,
    task: ChatMessage,
    from: &str,
    changed: &mut Vec<String>,
) -> RunEnd {
    lock(&shared.runs).insert(ctx.id.clone(), ctx.cancel.clone());
    push(shared, ctx, conv, from, task);
    let mut end = run_loop(shared, ctx, conv, changed).await;
    let mut continued = 0;
    while let Some(feedback) = stop_hooks(shared, ctx, conv, &end, continued).await {
        continued += 1;
        push(shared, ctx, conv, "hook", ChatMessage::user(feedback));
        let more = run_loop(shared, ctx, conv, changed).await;
        end = RunEnd {
            iterations: end.iterations + more.iterations,
            usage: {
                let mut usage = end.usage;
                usage.add(more.usage);
                usage
            },
            ..more
        };
    }
    lock(&shared.runs).remove(&ctx.id);
    lock(&shared.locks).release_run(&ctx.id);
    status(shared, ctx, AgentState::Idle, None);
    end
}

/// The `Stop` hooks (a delegated run's `SubagentStop`) when a run finished its work: the
/// message that sends it back to work when one blocks, `None` to let it end. Bounded by
/// [`hooks::MAX_STOP_CONTINUATIONS`] whatever the hooks say.
async fn stop_hooks(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &Conversation,
    end: &RunEnd,
    continued: u32,
) -> Option<String> {
    use crate::hooks::HookEvent;
    if end.status != OutcomeStatus::Completed || ctx.cancel.is_cancelled() {
        return None;
    }
    let event = match ctx.depth {
        0 => HookEvent::Stop,
        _ => HookEvent::SubagentStop,
    };
    let mut fields = hooks::fields([("stop_hook_active", serde_json::json!(continued > 0))]);
    if event == HookEvent::SubagentStop {
        fields.insert("agent_id".into(), serde_json::json!(ctx.id));
        fields.insert("agent_type".into(), serde_json::json!(ctx.agent.name));
    }
    let outcome = hooks::fire(shared, hooks::Site::run(ctx, conv), event, &[], fields).await;
    let reason = outcome.block.filter(|_| outcome.stop.is_none())?;
    if continued >= hooks::MAX_STOP_CONTINUATIONS {
        shared.bus.publish(Event::Warning {
            message: format!(
                "{} hooks asked for more work {continued} times in a row; the run ends here",
                event.name()
            ),
        });
        return None;
    }
    Some(format!("{} hook feedback:\n{reason}", event.name()))
}

/// Publishes the run's `RunStarted` (the store records the run from it).
pub(crate) fn announce(shared: &TurnShared, ctx: &RunCtx, label: String) {
    shared.bus.publish(Event::RunStarted {
        run_id: ctx.id.clone(),
        parent_id: ctx.parent_id.clone(),
        agent_id: ctx.agent.name.clone(),
        task: label,
    });
}

/// The one loop of a run, whatever its mode: ask the model, then carry out what it
/// answered, until an answer ends the run or a limit does. What the modes do differently
/// is their [`Strategy`].
async fn run_loop(
    shared: &TurnShared,
    ctx: &mut RunCtx,
    conv: &mut Conversation,
    changed: &mut Vec<String>,
) -> RunEnd {
    let mut run = Loop {
        usage: Usage::default(),
        iterations: 0,
        calls_made: 0,
        compacted_for_rejection: false,
        watch: Watch::new(&shared.auto, ctx.mode),
        strategy: Strategy::for_mode(ctx.mode),
    };
    loop {
        if let Some(end) = run.limit(shared, ctx) {
            return end;
        }
        run.iterations += 1;
        status(shared, ctx, AgentState::Thinking, None);
        if let Err(why) = compact_if_full(shared, ctx, conv).await {
            return run.failed(shared, why);
        }
        let next = match model_call::call(shared, ctx, conv, run.calls_made).await {
            Step::Failed(e) => run.on_failure(shared, ctx, conv, e).await,
            Step::Cancelled(partial) => Next::End(run.on_cancel(shared, ctx, conv, partial)),
            Step::Done(response) => run.on_answer(shared, ctx, conv, response, changed).await,
        };
        if let Next::End(end) = next {
            return end;
        }
    }
}

/// What the loop does after a step: ask the model again, or end the run.
enum Next {
    Again,
    End(RunEnd),
}

/// A run's loop as it goes: what it used, how often it asked, and its mode's strategy.
struct Loop<'a> {
    usage: Usage,
    iterations: u32,
    /// Tool calls so far: one of the signals the routing policy weighs.
    calls_made: u32,
    /// A server's context rejection gets one compaction and one retry, not a loop.
    compacted_for_rejection: bool,
    watch: Watch<'a>,
    strategy: Strategy,
}

impl Loop<'_> {
    fn end(&self, status: OutcomeStatus, result: impl Into<SharedText>) -> RunEnd {
        RunEnd {
            status,
            result: result.into(),
            iterations: self.iterations,
            usage: self.usage,
        }
    }

    fn failed(&self, shared: &TurnShared, why: String) -> RunEnd {
        failed(shared, why, self.iterations, self.usage)
    }

    /// The run's end when a limit is reached before the next model call: the turn halted,
    /// `max_iters`, or one of the auto-mode budgets.
    fn limit(&self, shared: &TurnShared, ctx: &RunCtx) -> Option<RunEnd> {
        if let Some(why) = ctx.halt.reason() {
            return Some(halted(shared, ctx, why, self.iterations, self.usage));
        }
        if self.iterations == shared.max_iters {
            let message = format!(
                "stopped after {} model calls (max_iters); raise it with --max-iters or [agent] max_iters",
                shared.max_iters
            );
            return Some(self.end(OutcomeStatus::MaxIters, message));
        }
        let used = self.usage.input_tokens + self.usage.output_tokens;
        let why = self.watch.exceeded(used)?;
        Some(self.end(OutcomeStatus::Stopped, why))
    }

    /// A failed model call: a context rejection is compacted and asked again once; any
    /// other failure ends the run.
    async fn on_failure(
        &mut self,
        shared: &TurnShared,
        ctx: &mut RunCtx,
        conv: &mut Conversation,
        e: LlmError,
    ) -> Next {
        if self.compacted_for_rejection || !compact::is_context_error(&e) {
            return Next::End(self.failed(shared, e.to_string()));
        }
        self.compacted_for_rejection = true;
        let message = match compact::compact(shared, ctx, conv, None, compact::Why::Needed).await {
            Ok(Some(_)) => return Next::Again,
            Ok(None) => format!(
                "{e}; the conversation is already as short as it gets: start a new \
                 session with /clear, or use a model with a larger window"
            ),
            Err(why) => format!("{e}; compacting did not help: {why}"),
        };
        Next::End(self.failed(shared, message))
    }

    /// A call cancelled while the model answered: what it had said is kept, marked.
    fn on_cancel(
        &mut self,
        shared: &TurnShared,
        ctx: &RunCtx,
        conv: &mut Conversation,
        partial: Response,
    ) -> RunEnd {
        self.usage.add(partial.usage);
        if !partial.text.is_empty() {
            let text = format!("{}\n\n[cancelled]", partial.text);
            push(
                shared,
                ctx,
                conv,
                "",
                ChatMessage::assistant(text, Vec::new()),
            );
        }
        self.end(OutcomeStatus::Cancelled, partial.text)
    }

    /// An answer: into the history, then its tool calls carried out, or (none) what the
    /// mode makes of its text.
    async fn on_answer(
        &mut self,
        shared: &TurnShared,
        ctx: &mut RunCtx,
        conv: &mut Conversation,
        response: Response,
        changed: &mut Vec<String>,
    ) -> Next {
        self.compacted_for_rejection = false;
        self.usage.add(response.usage);
        // The window of the model that answered: its tool results are sized to it.
        let served = Served {
            by: response.served_by,
            window: response.context_window,
        };
        super::usage::report_response(shared, ctx, conv, &response);
        notice_odd_endings(shared, &response);
        let Response {
            text,
            mut tool_calls,
            ..
        } = response;
        // Named before anyone sees them: the history, the store and the frontends pair
        // results with calls by these ids (see `call_ids`).
        call_ids::assign(&mut tool_calls);
        let calls = tool_calls.clone();
        // The history, the `Message` event and the outcome share the one copy.
        let text = SharedText::from(text);
        let message = ChatMessage::assistant(text.clone(), tool_calls);
        push(shared, ctx, conv, "", message);
        if calls.is_empty() {
            let answer = Answer {
                text: &text,
                by: served.by,
                window: served.window,
            };
            let after = self
                .strategy
                .on_text(shared, ctx, conv, &answer, changed, &mut self.watch)
                .await;
            return match after {
                After::Again if ctx.cancel.is_cancelled() => {
                    Next::End(self.end(OutcomeStatus::Cancelled, String::new()))
                }
                After::Again => Next::Again,
                After::End(OutcomeStatus::Error, why) => {
                    Next::End(self.failed(shared, why.to_string()))
                }
                After::End(status, result) => Next::End(self.end(status, result)),
            };
        }
        self.calls_made += calls.len() as u32;
        run_calls(shared, ctx, conv, &calls, served, changed, &mut self.watch).await;
        self.watch.step_ended(ctx.writes);
        if ctx.cancel.is_cancelled() {
            return Next::End(self.end(OutcomeStatus::Cancelled, String::new()));
        }
        Next::Again
    }
}

/// Which of the router's models answered, and its window: what tool results are sized to.
#[derive(Clone, Copy)]
struct Served {
    by: Option<usize>,
    window: Option<u32>,
}

/// Runs a response's tool calls and adds their results to the history: delegations side by
/// side at once, everything else in order.
async fn run_calls(
    shared: &TurnShared,
    ctx: &mut RunCtx,
    conv: &mut Conversation,
    calls: &[ToolCall],
    served: Served,
    changed: &mut Vec<String>,
    watch: &mut Watch<'_>,
) {
    let mut next = 0;
    while next < calls.len() {
        let together = calls[next..]
            .iter()
            .take_while(|c| ToolName::resolve(&c.name) == Some(ToolName::Delegate))
            .count();
        let batch = &calls[next..next + together.max(1)];
        next += batch.len();
        let outputs = if batch.len() > 1 && !ctx.cancel.is_cancelled() {
            delegate::side_by_side(shared, ctx, conv, batch, changed).await
        } else {
            vec![one_call(shared, ctx, conv, &batch[0], changed).await]
        };
        for (call, output) in batch.iter().zip(outputs) {
            watch.call_ended(&call.name, &call.arguments, output.is_error);
            let content = fit_output(shared, conv, served.by, served.window, call, output.model);
            let msg = ChatMessage::tool_result(call, content, output.is_error)
                .with_images(output.images.into_vec());
            push(shared, ctx, conv, "", msg);
        }
    }
}

/// A tool's output sized to what is left of the window of the model that answered (see
/// [`super::fit`]).
pub(crate) fn fit_output(
    shared: &TurnShared,
    conv: &Conversation,
    served_by: Option<usize>,
    window: Option<u32>,
    call: &ToolCall,
    output: String,
) -> String {
    let index = served_by.unwrap_or(0);
    let model = shared.models.model(index);
    let used = conv.ledger.estimate(index, model, &conv.history, 0);
    match super::fit::budget(model, window, used) {
        Some(budget) => super::fit::fit(
            ToolName::resolve(&call.name),
            &call.arguments,
            &output,
            budget,
        ),
        None => output,
    }
}

/// A run that ends in an error: said on the bus, and the outcome's result.
fn failed(shared: &TurnShared, message: String, iterations: u32, usage: Usage) -> RunEnd {
    shared.bus.publish(Event::Error {
        message: message.clone(),
    });
    RunEnd {
        status: OutcomeStatus::Error,
        result: message.into(),
        iterations,
        usage,
    }
}

/// A run stopped by its turn's [`Halt`]: an error, said once on the bus by the turn's
/// top-level run (a delegated run's parent stops for the same reason right after).
fn halted(shared: &TurnShared, ctx: &RunCtx, why: String, iterations: u32, usage: Usage) -> RunEnd {
    if ctx.depth == 0 {
        return failed(shared, why, iterations, usage);
    }
    RunEnd {
        status: OutcomeStatus::Error,
        result: why.into(),
        iterations,
        usage,
    }
}

/// Compacts the conversation before a request that would pass `[context] compact_at` of the
/// window; `Err` when it must be compacted and cannot be.
async fn compact_if_full(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &mut Conversation,
) -> Result<(), String> {
    let (used, window) = compact::pressure(shared, ctx, conv).await;
    let Some(window) = window else {
        return Ok(());
    };
    if (used as f64) <= f64::from(window) * shared.compact_at {
        return Ok(());
    }
    // Nothing to compact (a short conversation on a tiny window): the request goes as it
    // is, and a server that rejects it gets one more try after `compact` in the caller.
    compact::compact(shared, ctx, conv, None, compact::Why::Full)
        .await
        .map(|_| ())
}

/// Runs one of the model's calls. Every call gets a result, even after a cancel: providers
/// reject a history where a tool call has no answer, and `--continue` must be able to
/// resume it.
pub(crate) async fn one_call(
    shared: &TurnShared,
    ctx: &mut RunCtx,
    conv: &mut Conversation,
    call: &ToolCall,
    changed: &mut Vec<String>,
) -> crate::tools::ToolOutput {
    if ctx.cancel.is_cancelled() {
        return crate::tools::ToolOutput::error("not run: the user cancelled the turn");
    }
    if let Some(why) = ctx.halt.reason() {
        return crate::tools::ToolOutput::error(format!("not run: {why}"));
    }
    tool_call::execute(shared, ctx, conv, call, changed, tool_call::Caller::Model).await
}

/// The tools this run's agent may use: the file tools its spec allows, plus `Skill` when
/// there are skills the model may use, `delegate_to_agent` when it has someone to delegate
/// to, the lock tools and `TodoWrite`.
pub(crate) fn agent_tools(
    shared: &TurnShared,
    ctx: &RunCtx,
    context_window: Option<u32>,
) -> Vec<ToolSpec> {
    let agent = &ctx.agent;
    let mut tools: Vec<ToolSpec> = crate::tools::specs()
        .into_iter()
        .filter(|t| ToolName::from_name(&t.name).is_some_and(|t| agent.allows_tool(t)))
        .collect();
    if agent.allows_tool(ToolName::Skill) {
        let catalog = shared
            .skills
            .get()
            .catalog_of(catalog_budget(context_window), |s| {
                agent.allows_skill(&s.name)
            });
        if !catalog.is_empty() {
            tools.push(session_tools::skill_spec(&catalog));
        }
    }
    if agent.allows_tool(ToolName::Delegate) && ctx.depth < shared.max_delegation_depth {
        let agents = shared.agents.get();
        let targets: Vec<(String, String)> = agents
            .agents
            .iter()
            .filter(|a| a.name != agent.name && agent.check_delegate(&a.name).is_ok())
            .map(|a| (a.name.clone(), a.description.clone()))
            .collect();
        if !targets.is_empty() {
            tools.push(session_tools::delegate_spec(&targets));
        }
    }
    if agent.allows_tool(ToolName::LockPaths) {
        tools.push(session_tools::lock_spec());
    }
    if agent.allows_tool(ToolName::UnlockPaths) {
        tools.push(session_tools::unlock_spec());
    }
    if agent.allows_tool(ToolName::TodoWrite) {
        tools.push(crate::tools::todo::spec());
    }
    // Only once there is a background command to read: most sessions never start one,
    // and every request would carry their schemas.
    if shared.tools.tasks.any() && agent.allows_tool(ToolName::BashOutput) {
        tools.push(crate::tools::background::output_spec());
        tools.push(crate::tools::background::kill_spec());
    }
    // Registered tools (MCP servers') after linggen's own, in name order: the order is
    // stable from request to request, so a server's prompt cache keeps matching. Too many
    // for the window, and the model searches for them instead.
    let registry = &shared.tools.registry;
    let usable = registry
        .registered()
        .into_iter()
        .filter(|entry| agent.allows(&entry.id()))
        .collect();
    tools.extend(registry.offered(usable, registry.eager_budget(context_window)));
    tools
}

/// Characters of skill catalog the model sees: about 2% of its context window (at ~4
/// characters per token), never so little that a handful of skills cannot be listed.
fn catalog_budget(context_window: Option<u32>) -> usize {
    match context_window {
        Some(tokens) => (tokens as usize * 4 / 50).max(800),
        None => 8_000,
    }
}

/// Tells the person when an answer ended oddly: cut off by the output limit, or empty
/// (neither text nor a tool call), instead of leaving them to guess.
fn notice_odd_endings(shared: &TurnShared, response: &Response) {
    let used = response.usage.input_tokens + response.usage.output_tokens;
    let window_full = response
        .context_window
        .is_some_and(|w| used + 8 >= u64::from(w));
    let message = if response.cut_short && window_full {
        // llama.cpp stops where the window ends and says `length`, like an output limit.
        &format!(
            "the answer was cut off where the context window ran out ({used} of {} tokens); \
             /compact makes room, or give the model a larger window (context_window, and the \
             server's own setting such as llama.cpp's -c)",
            response.context_window.unwrap_or_default()
        )
    } else if response.cut_short {
        "the answer was cut off at the model's output limit (max_tokens); ask it to continue, \
         or raise max_tokens for this model in linggen-agent.toml"
    } else if response.text.trim().is_empty() && response.tool_calls.is_empty() {
        "the model returned an empty answer (no text and no tool call); try again, or another model"
    } else {
        return;
    };
    shared.bus.publish(Event::Warning {
        message: message.to_string(),
    });
}

pub(crate) fn status(
    shared: &TurnShared,
    ctx: &RunCtx,
    status: AgentState,
    detail: Option<String>,
) {
    shared.bus.publish(Event::AgentStatus {
        run_id: ctx.id.clone(),
        agent_id: ctx.agent.name.clone(),
        status,
        detail,
    });
}

/// Appends to the history and announces it (the store persists it from the event).
pub(crate) fn push(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &mut Conversation,
    from: &str,
    msg: ChatMessage,
) {
    shared
        .bus
        .publish(Event::message(&ctx.id, &ctx.agent.name, from, &msg));
    conv.history.push(msg);
}
