//! One turn: a person's message becomes a top-level run of the right agent — the session's
//! current one, the one `@agent` named, or the one a skill asks for — and ends with one
//! `Outcome` (plus a `ChangeReport` of the files written, children's included).

use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::checkpoints::TurnMark;
use super::delegate::{self, ChildTask};
use super::event::{AgentState, Event, OutcomeStatus};
use super::input::{TurnMode, UserMessage};
use super::invocation::{Invocation, InvokedBy};
use super::run::{self, RunCtx, RunEnd};
use super::{Conversation, TurnShared, ids, skill_call};
use crate::agents::AgentSpec;
use crate::llm::{ChatMessage, Usage};
use crate::shared_text::SharedText;

/// Files written in a turn are listed in one `ChangeReport`; past this many only a count.
const CHANGE_REPORT_MAX_FILES: usize = 50;

/// A turn ready to run: the agent, its first message, and the skill parts.
struct Plan {
    agent: AgentSpec,
    /// What the model is sent.
    task: Task,
    /// The model routing hint (skill first, then agent).
    model: Option<String>,
    skill_rules: Vec<super::permissions::Rule>,
    /// `context: fork`: run in a child with a fresh history.
    fork: bool,
}

/// The first message of a turn.
enum Task {
    /// The person's message, as the model sees it.
    Message(String),
    /// A skill or command, whose message is made once its run starts (`invocation`).
    Invocation(Invocation),
}

impl Task {
    /// Adds `text` at the end of the message: the prompt hooks' context.
    fn append(&mut self, text: &str) {
        match self {
            Task::Message(content) => content.push_str(text),
            Task::Invocation(invocation) => invocation.attach(text),
        }
    }
}

pub(super) async fn run_turn(
    shared: &TurnShared,
    conv: &mut Conversation,
    msg: UserMessage,
    agent_name: &str,
    mode: Option<TurnMode>,
    cancel: CancellationToken,
) {
    let turn = Turn {
        shared,
        agent_name,
        mode,
        started: Instant::now(),
        label: msg.content.clone(),
    };
    // What the person asked to remember since the last turn (here or in another shell).
    if let Some(memory) = shared.memory.clone() {
        let _ = tokio::task::spawn_blocking(move || memory.refresh()).await;
    }
    if let Some(instructions) = msg.compact.clone() {
        let end = compact_now(shared, conv, &msg, agent_name, cancel, &instructions).await;
        return turn.finish(end, Vec::new());
    }
    if let Some(command) = msg.command.clone() {
        return turn.person_command(conv, msg, cancel, &command).await;
    }
    turn.message(conv, msg, cancel).await
}

/// The turn being run: what each of its kinds (a command, a message) reads.
struct Turn<'a> {
    shared: &'a TurnShared,
    agent_name: &'a str,
    mode: Option<TurnMode>,
    started: Instant,
    /// The person's message as they wrote it, the top-level run's task.
    label: String,
}

impl Turn<'_> {
    /// Reports what the turn changed and its one `Outcome`.
    fn finish(&self, end: Ended, changed: Vec<String>) {
        finish(self.shared, end, changed, self.started);
    }

    /// A turn that fails before any run starts, for `why`.
    fn fail(&self, why: String) -> Ended {
        fail(self.shared, self.agent_name, &self.label, why)
    }

    /// `!command` (and `/check`, whose failure is then handed to the agent to summarise
    /// in a turn of its own).
    async fn person_command(
        self,
        conv: &mut Conversation,
        msg: UserMessage,
        cancel: CancellationToken,
        command: &str,
    ) {
        let (shared, agent_name) = (self.shared, self.agent_name);
        let mut changed = Vec::new();
        let agent = shared.agents.get().get(agent_name).cloned();
        let end = match agent {
            Some(agent) => {
                let cancel = cancel.clone();
                person_command(shared, conv, &msg, agent, cancel, command, &mut changed).await
            }
            None => self.fail(format!("no agent named `{agent_name}`")),
        };
        let summarise = msg.check && end.2.status == OutcomeStatus::Error;
        self.finish(end, changed);
        if !summarise || cancel.is_cancelled() {
            return;
        }
        let mut follow = UserMessage::new(
            format!(
                "The check `{command}` failed; its output is above. Summarise the failures: \
                 which tests or checks failed, where, and the likely cause of each. Do not \
                 change any files."
            ),
            msg.from.clone(),
        );
        follow.agent = msg.agent.clone();
        let mode = self.mode;
        Box::pin(run_turn(shared, conv, follow, agent_name, mode, cancel)).await
    }

    /// A message for the model: the `UserPromptSubmit` hooks and the image check may stop
    /// it; else it runs as its plan says.
    async fn message(
        self,
        conv: &mut Conversation,
        mut msg: UserMessage,
        cancel: CancellationToken,
    ) {
        let shared = self.shared;
        let mut changed = Vec::new();
        let hook_context = match prompt_hooks(shared, conv, &msg).await {
            Ok(context) => context,
            Err(why) => return self.finish(self.fail(why), changed),
        };
        if let Err(why) = images_taken(shared, &msg, self.agent_name) {
            return self.finish(self.fail(why), changed);
        }
        msg.attached = super::fit::attachments(shared, conv, &msg.attached).await;
        let end = match plan(shared, &conv.permissions, &msg, self.agent_name) {
            Err(message) => self.fail(message),
            Ok(mut plan) => {
                if let Some(context) = hook_context {
                    plan.task.append(&format!("\n\n{context}"));
                }
                self.run_plan(conv, &msg, plan, cancel, &mut changed).await
            }
        };
        self.finish(end, changed);
    }

    /// The turn's top-level run, as planned: forked, a custom command, or the message.
    async fn run_plan(
        &self,
        conv: &mut Conversation,
        msg: &UserMessage,
        plan: Plan,
        cancel: CancellationToken,
        changed: &mut Vec<String>,
    ) -> Ended {
        let shared = self.shared;
        let mut ctx = self.top_run(plan.agent, plan.model.as_deref(), cancel);
        // The agent may differ from the last turn's: its prompt leads the history.
        let system = super::compose_prompt(shared, &ctx).await;
        match conv.history.first_mut() {
            Some(first) if first.role == crate::llm::Role::System => first.content = system.into(),
            _ => conv.history.insert(0, ChatMessage::system(system)),
        }
        let label = self.label.clone();
        let end = match plan.task {
            Task::Invocation(invocation) if plan.fork => {
                let rules = plan.skill_rules;
                forked(shared, &mut ctx, conv, msg, invocation, rules, changed).await
            }
            Task::Invocation(invocation) => {
                ctx.skill_rules = plan.skill_rules;
                let from = &msg.from;
                invocation
                    .run(shared, &mut ctx, conv, label, from, changed)
                    .await
            }
            Task::Message(content) => {
                let from = msg.from.clone();
                let task = ChatMessage::user(content).with_images(msg.images.clone());
                run::run(shared, &mut ctx, conv, task, label, &from, changed).await
            }
        };
        merge(changed, super::checkpoints::close(shared, &ctx.mark).await);
        (ctx.id, ctx.agent.name, end)
    }

    /// The context of the turn's top-level run of `agent`, routed by the plan's `model`
    /// hint.
    fn top_run(&self, agent: AgentSpec, model: Option<&str>, cancel: CancellationToken) -> RunCtx {
        let shared = self.shared;
        let route = super::route_for(shared, model, &shared.choice);
        let id = ids::new_id();
        RunCtx {
            mark: TurnMark::new(&id, &self.label),
            id,
            parent_id: None,
            depth: 0,
            mode: mode_for(self.mode, Some(&agent)),
            agent: shared.run_flags.narrow(agent),
            route,
            cancel,
            skill_rules: Vec::new(),
            writes: 0,
            halt: Default::default(),
        }
    }
}

/// Whether the model the turn goes to takes the images the person attached: sending them
/// to one that does not would lose them without a word, so the turn is refused instead.
fn images_taken(shared: &TurnShared, msg: &UserMessage, agent_name: &str) -> Result<(), String> {
    if msg.images.is_empty() {
        return Ok(());
    }
    let agents = shared.agents.get();
    let hint = agents.get(agent_name).and_then(|a| a.model.as_deref());
    let route = super::route_for(shared, hint, &shared.choice);
    let model = shared.models.model(shared.models.likely(&route));
    match model.accepts_images() {
        true => Ok(()),
        false => Err(format!(
            "the message has {} image(s), and model `{}` does not take images; set \
             `images = true` on its [[models]] entry if it does, or choose one that does \
             (/model, --model)",
            msg.images.len(),
            model.id()
        )),
    }
}

/// The `UserPromptSubmit` hooks: the context they add to the prompt, or why the prompt is
/// not sent (a block, or `continue: false`; the person reads it, the model never sees the
/// prompt).
async fn prompt_hooks(
    shared: &TurnShared,
    conv: &Conversation,
    msg: &UserMessage,
) -> Result<Option<String>, String> {
    let fields = super::hooks::fields([("prompt", serde_json::json!(msg.content))]);
    let site = super::hooks::Site::session(conv);
    let event = crate::hooks::HookEvent::UserPromptSubmit;
    let outcome = super::hooks::fire(shared, site, event, &[], fields).await;
    if let Some(reason) = outcome.stop.as_ref().or(outcome.block.as_ref()) {
        return Err(format!(
            "prompt blocked by a UserPromptSubmit hook: {reason}"
        ));
    }
    Ok(outcome.context_text())
}

/// Adds `more` to the files a turn changed, each once.
pub(super) fn merge(changed: &mut Vec<String>, more: Vec<String>) {
    for file in more {
        if !changed.contains(&file) {
            changed.push(file);
        }
    }
}

/// Closes a run that changed files with a `ChangeReport` (its delegated runs' files
/// included).
pub(super) fn report_changes(
    shared: &TurnShared,
    run_id: &str,
    agent_id: &str,
    mut changed: Vec<String>,
) {
    if changed.is_empty() {
        return;
    }
    let truncated_count = changed.len().saturating_sub(CHANGE_REPORT_MAX_FILES);
    changed.truncate(CHANGE_REPORT_MAX_FILES);
    shared.bus.publish(Event::ChangeReport {
        run_id: run_id.to_string(),
        agent_id: agent_id.to_string(),
        files: changed,
        truncated_count,
    });
}

/// The mode a turn runs in: the person's choice (`--mode`, `/mode`), else the agent's
/// `mode:`, else chat.
pub(super) fn mode_for(chosen: Option<TurnMode>, agent: Option<&AgentSpec>) -> TurnMode {
    chosen
        .or_else(|| agent.and_then(|a| a.mode))
        .unwrap_or_default()
}

/// How a turn's top-level run ended: its id, its agent, and the end.
type Ended = (String, String, RunEnd);

/// Reports what the turn changed and its one `Outcome`.
fn finish(shared: &TurnShared, end: Ended, changed: Vec<String>, started: Instant) {
    let (run_id, agent_id, end) = end;
    report_changes(shared, &run_id, &agent_id, changed);
    shared.bus.publish(Event::Outcome {
        run_id,
        status: end.status,
        result: end.result,
        num_turns: end.iterations,
        usage: end.usage,
        duration_ms: started.elapsed().as_millis() as u64,
    });
}

/// `!command`: the person runs a command themselves. It is one `Bash` call in a run of its
/// own (the floor, the sandbox and the permission mode apply as to any call), and its
/// output is added to the conversation so the model sees it next turn.
async fn person_command(
    shared: &TurnShared,
    conv: &mut Conversation,
    msg: &UserMessage,
    agent: AgentSpec,
    cancel: CancellationToken,
    command: &str,
    changed: &mut Vec<String>,
) -> Ended {
    let mut ctx = own_run(shared, agent, cancel, msg);
    if msg.check {
        // An allowlisted check runs without asking (still inside the sandbox).
        ctx.skill_rules = super::auto::check_rules(&shared.auto.checks_allowed);
    }
    let output = super::tool_call::person_command(shared, &mut ctx, conv, command, changed).await;
    merge(changed, super::checkpoints::close(shared, &ctx.mark).await);
    super::lock(&shared.runs).remove(&ctx.id);
    let seen = format!(
        "I ran `{command}` myself{}:\n```\n{}\n```",
        if output.is_error { " (it failed)" } else { "" },
        output.model.trim_end()
    );
    run::push(shared, &ctx, conv, &msg.from, ChatMessage::user(seen));
    let status = if ctx.cancel.is_cancelled() {
        OutcomeStatus::Cancelled
    } else if output.is_error && msg.check {
        // A failed check is a failed turn; a `!cmd` that failed is only its output.
        OutcomeStatus::Error
    } else {
        OutcomeStatus::Completed
    };
    let end = RunEnd {
        status,
        result: SharedText::default(),
        iterations: 0,
        usage: Usage::default(),
    };
    (ctx.id, ctx.agent.name, end)
}

/// A top-level run the person started without asking the model anything (`!cmd`,
/// `/compact`), announced and cancellable like any other.
fn own_run(
    shared: &TurnShared,
    agent: AgentSpec,
    cancel: CancellationToken,
    msg: &UserMessage,
) -> RunCtx {
    let id = ids::new_id();
    let ctx = RunCtx {
        mark: TurnMark::new(&id, &msg.content),
        id,
        parent_id: None,
        depth: 0,
        agent,
        route: shared.choice.clone(),
        mode: TurnMode::Chat,
        cancel,
        skill_rules: Vec::new(),
        writes: 0,
        halt: Default::default(),
    };
    run::announce(shared, &ctx, msg.content.clone());
    super::lock(&shared.runs).insert(ctx.id.clone(), ctx.cancel.clone());
    ctx
}

/// `/compact [instructions]`: a run of its own that compacts the conversation and asks
/// the model nothing else.
async fn compact_now(
    shared: &TurnShared,
    conv: &mut Conversation,
    msg: &UserMessage,
    agent_name: &str,
    cancel: CancellationToken,
    instructions: &str,
) -> Ended {
    let Some(agent) = shared.agents.get().get(agent_name).cloned() else {
        return fail(
            shared,
            agent_name,
            &msg.content,
            format!("no agent named `{agent_name}`"),
        );
    };
    let ctx = own_run(shared, agent, cancel, msg);
    let instructions = Some(instructions.trim()).filter(|i| !i.is_empty());
    let why = super::compact::Why::Asked;
    let done = super::compact::compact(shared, &ctx, conv, instructions, why).await;
    super::lock(&shared.runs).remove(&ctx.id);
    let (status, result) = match done {
        // `Compacted` said it already.
        Ok(Some(_)) => (OutcomeStatus::Completed, String::new()),
        Ok(None) => (
            OutcomeStatus::Completed,
            "nothing to compact yet: the conversation is still short".to_string(),
        ),
        Err(why) => {
            shared.bus.publish(Event::Error {
                message: why.clone(),
            });
            (OutcomeStatus::Error, why)
        }
    };
    let end = RunEnd {
        status,
        result: result.into(),
        iterations: 0,
        usage: Usage::default(),
    };
    (ctx.id, ctx.agent.name, end)
}

/// Works out the agent and the message; `Err` is what to tell the person.
fn plan(
    shared: &TurnShared,
    permissions: &super::permissions::Permissions,
    msg: &UserMessage,
    current: &str,
) -> Result<Plan, String> {
    let agents = shared.agents.get();
    let find = |name: &str| {
        agents.get(name).cloned().ok_or_else(|| {
            format!(
                "no agent named `{name}`; agents: {} (add one as agents/{name}.md)",
                agents.names().join(", ")
            )
        })
    };
    let requested = msg.agent.as_deref().unwrap_or(current);
    let Some(invocation) = &msg.skill else {
        let agent = find(requested)?;
        return Ok(Plan {
            model: agent.model.clone(),
            agent,
            task: Task::Message(format!("{}{}", msg.content, msg.attached)),
            skill_rules: Vec::new(),
            fork: false,
        });
    };
    let skills = shared.skills.get();
    let Some(skill) = skills.get(&invocation.name).filter(|s| s.user_invocable) else {
        return Err(format!(
            "no skill named `{}`; /skills lists them",
            invocation.name
        ));
    };
    let agent = find(skill.agent.as_deref().unwrap_or(requested))?;
    let mut task = Invocation::of(
        skill,
        &invocation.args,
        InvokedBy::Person,
        &shared.session_id,
    )
    .with_images(&msg.images);
    task.attach(&msg.attached);
    Ok(Plan {
        model: skill.model.clone().or_else(|| agent.model.clone()),
        task: Task::Invocation(task),
        skill_rules: skill_call::rules(shared, permissions, skill),
        fork: skill.fork,
        agent,
    })
}

/// A skill with `context: fork`: the turn's run makes its message (its `!` lines are this
/// run's calls, under the skill's rules), hands it to a child with a fresh history, then
/// keeps only the exchange (what was asked, what came back) in the conversation.
async fn forked(
    shared: &TurnShared,
    ctx: &mut RunCtx,
    conv: &mut Conversation,
    msg: &UserMessage,
    invocation: Invocation,
    skill_rules: Vec<super::permissions::Rule>,
    changed: &mut Vec<String>,
) -> RunEnd {
    run::announce(shared, ctx, msg.content.clone());
    // Cancellable by id while its `!` lines and its child run.
    super::lock(&shared.runs).insert(ctx.id.clone(), ctx.cancel.clone());
    run::push(
        shared,
        ctx,
        conv,
        &msg.from,
        ChatMessage::user(msg.content.clone()).with_images(msg.images.clone()),
    );
    ctx.skill_rules = skill_rules.clone();
    let task = invocation.text(shared, ctx, conv, changed).await;
    let child = ChildTask {
        agent: ctx.agent.clone(),
        route: ctx.route.clone(),
        task,
        label: msg.content.clone(),
        skill_rules,
        images: msg.images.clone(),
    };
    let end = delegate::run_child(shared, ctx, conv, child, changed).await;
    super::lock(&shared.runs).remove(&ctx.id);
    let answer = match end.status {
        OutcomeStatus::Completed => end.result.clone(),
        _ => format!("[the skill's run ended: {}]", end.status.run_status()).into(),
    };
    run::push(
        shared,
        ctx,
        conv,
        "",
        ChatMessage::assistant(answer, Vec::new()),
    );
    run::status(shared, ctx, AgentState::Idle, None);
    end
}

/// A turn that cannot start (unknown agent or skill): still a run with an outcome, so every
/// frontend sees it end.
fn fail(shared: &TurnShared, agent: &str, label: &str, message: String) -> Ended {
    let run_id = ids::new_id();
    shared.bus.publish(Event::RunStarted {
        run_id: run_id.clone(),
        parent_id: None,
        agent_id: agent.to_string(),
        task: label.to_string(),
    });
    shared.bus.publish(Event::Error {
        message: message.clone(),
    });
    let end = RunEnd {
        status: OutcomeStatus::Error,
        result: message.into(),
        iterations: 0,
        usage: Usage::default(),
    };
    (run_id, agent.to_string(), end)
}
