//! The public event contract. Frontends render these, the store persists them, and
//! `--output-format stream-json` / the web mirror emit them as JSON with a `type` tag.
//! Documented in `doc/events.md`; bump [`EVENT_VERSION`] on any incompatible change.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::llm::{ChatMessage, Role, ToolCall, Usage};
use crate::shared_text::SharedText;

/// Version of the event schema, announced in `SessionStarted`.
pub const EVENT_VERSION: u32 = 1;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeStatus {
    Completed,
    Error,
    Cancelled,
    MaxIters,
    /// A limit stopped the run: the same call failing again and again, no file changed
    /// for too many steps (auto mode), or the `[auto]` time or token budget.
    Stopped,
}

impl OutcomeStatus {
    /// The run status stored in the `runs` table.
    pub fn run_status(self) -> &'static str {
        super::view::RunStatus::ended(self).stored()
    }
}

/// Whether the session is working on a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Idle,
    Running,
}

/// What an agent is doing, as `AgentStatus` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    Thinking,
    RunningTool,
    WaitingApproval,
    Idle,
}

/// When a `ContextUsage` was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContextStage {
    /// Before a request is sent: linggen's estimate.
    Request,
    /// After the response: what the server counted.
    Response,
}

/// The answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Run this call.
    AllowOnce,
    /// Run this call and, for the rest of the session, calls with the same scope.
    AllowSession,
    /// Like `AllowSession`, and also saved for later sessions in the project's
    /// `.linggen/permissions.toml`.
    AllowProject,
    /// Do not run it; `reason` (if any) is passed to the model.
    Deny { reason: Option<String> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum Event {
    /// First event of a session (also after `--continue`).
    SessionStarted {
        version: u32,
        session_id: String,
        model: String,
        root: String,
        agent_id: String,
        permission_mode: crate::config::PermissionMode,
        tools: Vec<String>,
        /// The most model calls a turn may make.
        max_iters: u32,
        /// The mode the first turn runs in (`--mode`, else the agent's `mode:`, else chat).
        mode: super::input::TurnMode,
    },
    /// A setting of the session changed (`/agent`, `/mode`, `/model`, `/permissions`,
    /// `/settings max_iters`); carries all of them, as they hold for the next turn.
    SettingsUpdated {
        agent_id: String,
        mode: super::input::TurnMode,
        /// The model as people should read it, as in `SessionStarted`.
        model: String,
        permission_mode: crate::config::PermissionMode,
        max_iters: u32,
    },
    /// The session became busy (a turn started) or idle (the last queued turn ended).
    StateUpdated {
        status: SessionStatus,
        agent_id: String,
        mode: super::input::TurnMode,
    },
    /// A run (one agent working on one task) began. `parent_id` is set for delegated runs.
    RunStarted {
        run_id: String,
        parent_id: Option<String>,
        agent_id: String,
        task: String,
    },
    /// A complete message of the conversation (user, assistant or tool result).
    Message {
        run_id: String,
        from: String,
        to: String,
        role: Role,
        content: SharedText,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_call_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_name: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// The message's images, for the store (what `--continue` sends again). Published
        /// as a list of `{media_type, bytes}`, not their data: megabytes of base64 an
        /// event would hold every window back.
        ///
        /// Read back (a terminal attached to `linggen serve`), the summaries become an
        /// empty list: the data was never sent, and the terminal draws no images.
        #[serde(
            default,
            skip_serializing_if = "Vec::is_empty",
            serialize_with = "image_summaries",
            deserialize_with = "no_images"
        )]
        #[schemars(with = "Vec<ImageSummary>")]
        images: Vec<crate::llm::Image>,
    },
    /// A piece of streamed model output. `done` marks the end of one response.
    Token {
        run_id: String,
        agent_id: String,
        token: String,
        thinking: bool,
        done: bool,
    },
    ToolCallStarted {
        run_id: String,
        call_id: String,
        tool: String,
        args: serde_json::Value,
        /// One line for a person, e.g. `Read src/main.rs (1-120)`.
        summary: String,
    },
    ToolCallFinished {
        run_id: String,
        call_id: String,
        tool: String,
        ok: bool,
        /// One-line result for a person, e.g. `120 lines`.
        summary: String,
        /// Unified diff for edits.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diff: Option<String>,
        /// A few lines for a person (a failed command's first lines of output).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        excerpt: Option<String>,
    },
    ApprovalRequested {
        id: String,
        run_id: String,
        tool: String,
        /// One line naming the call, as on its tool line (a long command may be cut).
        summary: String,
        /// Everything the call will run or touch, unabridged, with invisible characters
        /// spelled out (`tools::terminal_text::visible`): what a person approves.
        display: String,
        /// Why it needs a person.
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diff: Option<String>,
        /// Only "allow once" or "deny" can answer it: a write where the workspace's grants
        /// live, or a command outside the sandbox. "Always" answers count as once.
        once_only: bool,
        /// The rules an "always" answer adds (`Bash(cargo*)`, `Write(src/main.rs)`), so a
        /// person knows what they allow beyond this one call.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        always: Vec<String>,
    },
    ApprovalResolved {
        id: String,
        #[serde(flatten)]
        decision: Decision,
        /// Who answered: `terminal`, `web`, or `policy` when nobody could be asked.
        by: String,
    },
    /// How full a run's context is: sent before each request (`stage: request`, an
    /// estimate, with what it is made of) and after each response (`stage: response`, with
    /// the server's count).
    ContextUsage {
        run_id: String,
        agent_id: String,
        stage: ContextStage,
        /// Messages in the history, the system prompt included.
        message_count: usize,
        /// Characters of the history (and, at `request`, the tool definitions).
        char_count: usize,
        /// linggen's estimate of the request's prompt tokens.
        estimated_tokens: u64,
        /// The model's context window, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token_limit: Option<u32>,
        /// The history holds a compaction summary.
        compressed: bool,
        /// Compactions this run's conversation went through.
        summary_count: u32,
        /// At `request`: the estimate by part (system prompt, tools, history, …).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        breakdown: Option<super::usage::Breakdown>,
        /// How much of the window is taken: the estimate at `request`; at `response`, the
        /// server's input + output tokens (the estimate when it reported none).
        used_tokens: u64,
        /// The server's counts (0 at `request`, or when it reported none).
        input_tokens: u64,
        output_tokens: u64,
    },
    /// Which model the next model call of a run goes to, and why: sent before every call
    /// (and again when a call falls back to another model).
    ModelRouted {
        run_id: String,
        model_id: String,
        /// `local-first`, `cloud-first`, a configured policy, `pinned` or `default`.
        policy: String,
        complexity: crate::config::routing::Complexity,
        /// For people: `local-first: a local model · 1,234 tokens`.
        reason: String,
    },
    /// The run's conversation was compacted: its older part replaced by a summary.
    /// A call to `model_id` failed in a way that may pass (429, 5xx, a refused connection)
    /// and is tried again after `delay_ms`.
    Retrying {
        run_id: String,
        model_id: String,
        /// The attempt after the wait (2 for the first retry).
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        reason: String,
    },
    Compacted {
        run_id: String,
        before_tokens: u64,
        after_tokens: u64,
        /// The new history (without the system prompt), for the store: what `--continue`
        /// resumes. Not part of the published JSON, so empty when read back.
        #[serde(skip_serializing, default)]
        #[schemars(skip)]
        history: Vec<ChatMessage>,
    },
    AgentStatus {
        run_id: String,
        agent_id: String,
        /// `thinking`, `running_tool`, `waiting_approval` or `idle`.
        status: AgentState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// The working tree was snapshotted before the first change of a prompt (`step` 0) or
    /// of an auto-mode step: `/rewind` and `linggen rewind` can go back to it.
    CheckpointCreated {
        checkpoint_id: String,
        /// The turn's top-level run.
        run_id: String,
        prompt: String,
        step: u32,
        /// The snapshot (a commit in the project's private checkpoint store).
        commit: String,
    },
    /// The turn that took checkpoints ended; `commit` is the tree as it left it.
    CheckpointClosed {
        run_id: String,
        commit: String,
    },
    /// Files written during a run (its delegated runs' included); closes each run that
    /// changed files.
    ChangeReport {
        run_id: String,
        agent_id: String,
        files: Vec<String>,
        truncated_count: usize,
    },
    /// Messages waiting while a run is busy.
    QueueUpdated {
        queued: Vec<String>,
    },
    /// The agent's todo list changed (`TodoWrite`): the whole list, which replaces the one
    /// before. Also sent after `SessionStarted` when a resumed session had one.
    TodosUpdated {
        todos: Vec<crate::tools::todo::Todo>,
    },
    /// A background command (`Bash` with `run_in_background`) started, printed (at most
    /// one event a second per command), or ended: the whole command as it stands now,
    /// which replaces the one before with its `id`.
    TaskUpdated {
        task: crate::tools::background::TaskInfo,
    },
    /// A run handed a task to another agent; `subagent_id` is the child run's id. The child
    /// then has its own `RunStarted` (with `parent_id`), tokens, tool calls and statuses.
    SubagentSpawned {
        parent_id: String,
        subagent_id: String,
        agent_id: String,
        task: String,
        /// Started with `background: true`: the parent went on, and the child's answer
        /// arrives as a message from `background` when it ends.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        background: bool,
    },
    /// A delegated run ended; `result` goes back to the parent as the tool result.
    SubagentResult {
        parent_id: String,
        subagent_id: String,
        agent_id: String,
        outcome: OutcomeStatus,
        result: SharedText,
    },
    /// How a top-level run (a turn) ended. `result` is the final answer (or the error text).
    /// Delegated runs end with `SubagentResult` instead.
    Outcome {
        run_id: String,
        status: OutcomeStatus,
        result: SharedText,
        num_turns: u32,
        usage: Usage,
        duration_ms: u64,
    },
    Error {
        message: String,
    },
    /// Something worth telling the person that did not stop the work: a skipped skill file,
    /// a routing hint that fell back to the session's model.
    Warning {
        message: String,
    },
    /// Work that ran without a person (a schedule, the heartbeat) ended: published by
    /// `linggen serve` to every open session, so the page and an attached terminal hear of
    /// it. `session_id` is the session the work ran in.
    Notification {
        /// `schedule` or `heartbeat`.
        source: String,
        message: String,
        session_id: Option<String>,
    },
    /// A hook's handler ran (see doc/hooks.md): for the audit trail. `run_id` is the run it
    /// belongs to; none for the session's own events (`SessionStart`, `SessionEnd`).
    HookRan {
        run_id: Option<String>,
        /// Claude Code's event name (`PreToolUse`).
        event: String,
        command: String,
        /// The settings file it came from.
        file: String,
        /// `exit 0`, `exit 2 (blocks)`, `timed out after 60s`, `not started: …`.
        result: String,
        ok: bool,
        duration_ms: u64,
    },
}

/// An image as events publish it: what it is, not its data.
#[derive(Serialize, JsonSchema)]
struct ImageSummary {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    media_type: &'static str,
    /// Its size, decoded.
    bytes: usize,
    /// What to ask the web mirror for to see it (`GET /api/image?id=`).
    id: String,
}

fn image_summaries<S: serde::Serializer>(
    images: &[crate::llm::Image],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(images.iter().map(|image| ImageSummary {
        media_type: image.format.media_type(),
        bytes: image.bytes(),
        id: image.id(),
    }))
}

/// Reads the summaries [`image_summaries`] wrote, and keeps none of them: they carry no
/// data, and an `Image` without its data would be a lie to whoever sends it on.
fn no_images<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<crate::llm::Image>, D::Error> {
    serde::de::IgnoredAny::deserialize(deserializer)?;
    Ok(Vec::new())
}

/// The JSON Schema of events as they are published (`doc/events.schema.json`, kept equal
/// to this by `tests/event_schema.rs`): what the page folds and other readers can rely on.
pub fn schema() -> serde_json::Value {
    schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<Event>()
        .to_value()
}

impl Event {
    /// A `Retrying` event as every frontend words it:
    /// `↻ qwen: 503 overloaded · retrying in 1.0 s (attempt 2 of 4)`.
    pub fn retry_line(&self) -> Option<String> {
        let Event::Retrying {
            model_id,
            attempt,
            max_attempts,
            delay_ms,
            reason,
            ..
        } = self
        else {
            return None;
        };
        let secs = *delay_ms as f64 / 1000.0;
        Some(format!(
            "↻ {model_id}: {reason} · retrying in {secs:.1} s (attempt {attempt} of {max_attempts})"
        ))
    }

    /// The `Message` event for one history entry. A message loaded from the store keeps the
    /// run that recorded it, whatever `run_id` says, so a replayed transcript attributes
    /// each tool result to its own run.
    pub fn message(run_id: &str, agent_id: &str, from_user: &str, msg: &ChatMessage) -> Event {
        let run_id = msg.run_id.as_deref().unwrap_or(run_id);
        let (from, to) = match msg.role {
            Role::User | Role::System => (from_user.to_string(), agent_id.to_string()),
            Role::Assistant => (agent_id.to_string(), "user".to_string()),
            Role::Tool => (
                msg.tool_name.clone().unwrap_or_else(|| "tool".into()),
                agent_id.to_string(),
            ),
        };
        Event::Message {
            run_id: run_id.to_string(),
            from,
            to,
            role: msg.role,
            content: msg.content.clone(),
            tool_calls: msg.tool_calls.clone(),
            tool_call_id: msg.tool_call_id.clone(),
            tool_name: msg.tool_name.clone(),
            is_error: msg.is_error,
            images: msg.images.clone(),
        }
    }

    /// Rebuilds the history entry carried by a `Message` event.
    pub fn as_chat_message(&self) -> Option<ChatMessage> {
        match self {
            Event::Message {
                role,
                content,
                tool_calls,
                tool_call_id,
                tool_name,
                is_error,
                images,
                ..
            } => Some(ChatMessage {
                role: *role,
                content: content.clone(),
                tool_calls: tool_calls.clone(),
                tool_call_id: tool_call_id.clone(),
                tool_name: tool_name.clone(),
                is_error: *is_error,
                images: images.clone(),
                run_id: None,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
