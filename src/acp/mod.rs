//! `linggen acp`: linggen as an Agent Client Protocol agent on stdin/stdout, for editors
//! (Zed and others). The messages (stable protocol v1) are linggen's own types in
//! [`model`], for exactly what linggen sends and reads; the transport is [`rpc`].
//!
//! A frontend like the terminal: the editor's requests become the session's `Input`s, and
//! the session's `Event`s become `session/update`s ([`updates`]). Each ACP session is a
//! linggen session of the editor's folder, stored, checkpointed and audited as any other,
//! and resumable with `linggen --resume ID`.
//!
//! stdout is the transport: nothing but the protocol may be written to it. Warnings and
//! errors go to stderr, which editors keep as the agent's log.

mod files;
mod mcp;
mod model;
mod options;
mod permission;
mod prompt;
mod session;
mod share;
mod updates;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use model::{
    AgentCapabilities, AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate,
    CancelNotification, ContentBlock, ContentChunk, Implementation, InitializeRequest,
    InitializeResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities,
    NewSessionRequest, NewSessionResponse, PROTOCOL_VERSION, PromptCapabilities, PromptRequest,
    PromptResponse, SessionConfigOptionValue, SessionMode, SessionModeState, SessionNotification,
    SessionUpdate, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    SetSessionModeRequest, SetSessionModeResponse, StopReason,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::app::signals::{Ending, Signals, next_ending};
use crate::app::{LiveSession, Start, Workspace, exit, load_workspace, off_runtime};
use crate::config::{PermissionMode, TurnMode};
use crate::protocol::jsonrpc::{self as rpc, Incoming, Line, Peer, RpcError, code};
use crate::session::{Input, OutcomeStatus, lock};
use session::{AcpSession, Started};

/// Serves until the editor closes stdin (exit 0), stdin cannot be read (exit 1: the editor
/// did not end the conversation, something broke it) or a signal ends it (128 + the
/// signal). Every session is stopped and stored before it returns.
pub async fn run(start: Start) -> i32 {
    let (peer, writer) = Peer::new(tokio::io::stdout());
    let agent = Arc::new(Agent {
        start,
        peer: peer.clone(),
        files: Mutex::new((false, false)),
        workspaces: Mutex::default(),
        sessions: Mutex::default(),
    });
    let mut lines = crate::protocol::ndjson::BoundedLines::new(tokio::io::stdin());
    let mut signals = Some(Signals::all());
    let mut ended_by: Option<Ending> = None;
    let mut broken = false;
    loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) => agent.take(&line),
                Ok(None) => break,
                Err(e) => {
                    eprintln!("linggen: error: reading from the editor: {e}");
                    broken = true;
                    break;
                }
            },
            signal = next_ending(&mut signals) => {
                ended_by = Some(signal);
                eprintln!("linggen: {}; stopping (send it again to quit now)", signal.describe());
                if let Some(signals) = signals.take() {
                    signals.second_quits(|| {});
                }
                break;
            }
        }
    }
    peer.close();
    agent.stop_all().await;
    drop(agent);
    drop(peer);
    // Everything said is written before exit; a task still holding the connection (one
    // waiting on the editor) does not keep the process alive.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), writer).await;
    match ended_by {
        Some(signal) => signal.exit_code(),
        None if broken => exit::FAILURE,
        None => exit::SUCCESS,
    }
}

struct Agent {
    start: Start,
    peer: Peer,
    /// What the editor said it can do at `initialize`: read and write its buffers.
    files: Mutex<(bool, bool)>,
    /// Loaded once per folder the editor opens sessions in.
    workspaces: Mutex<HashMap<PathBuf, Arc<Workspace>>>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
}

impl Agent {
    /// Acts on one line from the editor. Requests are answered on tasks of their own, so a
    /// long `session/prompt` never holds up a `session/cancel` or a permission answer.
    fn take(self: &Arc<Self>, line: &str) {
        match rpc::parse(line) {
            Line::Incoming(Incoming::Request { id, method, params }) => {
                let agent = Arc::clone(self);
                tokio::spawn(async move {
                    let (result, opened) = agent.request(&method, params).await;
                    agent.peer.respond(id, result);
                    // What a new session offers is told once the editor knows its id.
                    if let Some(session) = opened {
                        agent.announce_commands(&session);
                    }
                });
            }
            Line::Incoming(Incoming::Notification { method, params }) => {
                let agent = Arc::clone(self);
                tokio::spawn(async move { agent.notification(&method, params).await });
            }
            Line::Response { id, result } => self.peer.deliver(id, result),
            Line::Invalid { id, error } => self.peer.respond(id, Err(error)),
            Line::Ignored => {}
        }
    }

    /// Answers one request; also returns the session it opened, if it opened one.
    async fn request(
        &self,
        method: &str,
        params: Value,
    ) -> (Result<Value, RpcError>, Option<Arc<AcpSession>>) {
        let opened = match method {
            "session/new" => self.new_session(params).await,
            "session/load" => self.load_session(params).await,
            _ => return (self.answer(method, params).await, None),
        };
        match opened {
            Ok((response, session)) => (Ok(response), Some(session)),
            Err(e) => (Err(e), None),
        }
    }

    async fn answer(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        match method {
            "initialize" => {
                let request: InitializeRequest = parse(params)?;
                let fs = request.client_capabilities.fs;
                *lock(&self.files) = (fs.read_text_file, fs.write_text_file);
                to_value(initialize())
            }
            "authenticate" => Err(RpcError::invalid_params(
                "linggen has no sign-in of its own: cloud models read their keys from the \
                 environment variable their [[models]] entry names (api_key_env)",
            )),
            "session/prompt" => to_value(self.prompt(parse(params)?).await?),
            "session/set_mode" => to_value(self.set_mode(parse(params)?).await?),
            "session/set_config_option" => to_value(self.set_option(parse(params)?).await?),
            _ => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("linggen does not know the method `{method}`"),
            )),
        }
    }

    async fn notification(&self, method: &str, params: Value) {
        if method == "session/cancel"
            && let Ok(cancel) = serde_json::from_value::<CancelNotification>(params)
            && let Some(session) = self.session(&cancel.session_id)
        {
            session.cancel().await;
        }
    }

    async fn new_session(&self, params: Value) -> Result<(Value, Arc<AcpSession>), RpcError> {
        let request: NewSessionRequest = parse(params)?;
        let ws = self.workspace(&request.cwd).await?;
        let mut start = self.start.clone();
        start.root = Some(ws.root.clone());
        start.resume = None;
        start.continue_session = false;
        start.editor_mcp =
            mcp::servers(&request.mcp_servers, &ws.root).map_err(RpcError::invalid_params)?;
        let (session, started) = self.open(&start, &ws, false).await?;
        let response = NewSessionResponse {
            session_id: session.id.clone(),
            modes: modes(&started),
            config_options: session.config_options(),
        };
        Ok((to_value(response)?, session))
    }

    async fn load_session(&self, params: Value) -> Result<(Value, Arc<AcpSession>), RpcError> {
        let request: LoadSessionRequest = parse(params)?;
        let ws = self.workspace(&request.cwd).await?;
        let id = request.session_id;
        if self.session(&id).is_some() {
            return Err(RpcError::invalid_params(format!(
                "session {id} is already open on this connection"
            )));
        }
        let mut start = self.start.clone();
        start.root = Some(ws.root.clone());
        start.resume = Some(id.clone());
        start.continue_session = false;
        start.editor_mcp =
            mcp::servers(&request.mcp_servers, &ws.root).map_err(RpcError::invalid_params)?;
        let (session, started) = self.open(&start, &ws, true).await?;
        let response = LoadSessionResponse {
            modes: modes(&started),
            config_options: session.config_options(),
        };
        Ok((to_value(response)?, session))
    }

    /// Starts a session (new or resumed) whose approvals go to the editor.
    async fn open(
        &self,
        start: &Start,
        ws: &Arc<Workspace>,
        replay: bool,
    ) -> Result<(Arc<AcpSession>, Started), RpcError> {
        let (reads, writes) = *lock(&self.files);
        let buffers = files::EditorBuffers::new(self.peer.clone(), reads, writes).map(Arc::new);
        let mut start = start.clone();
        start.editor_files = buffers
            .clone()
            .map(|b| b as Arc<dyn crate::tools::editor_files::EditorFiles>);
        let live = LiveSession::start_for_editor(&start, ws)
            .await
            .map_err(|f| match f.code {
                exit::USAGE => RpcError::invalid_params(f.message),
                _ => RpcError::internal(f.message),
            })?;
        let (session, started) =
            AcpSession::follow(live, self.peer.clone(), replay, Arc::clone(ws))
                .await
                .ok_or_else(|| RpcError::internal("the session stopped as it started"))?;
        if let Some(buffers) = buffers {
            buffers.started(&session.id);
        }
        lock(&self.sessions).insert(session.id.clone(), Arc::clone(&session));
        Ok((session, started))
    }

    async fn prompt(&self, request: PromptRequest) -> Result<PromptResponse, RpcError> {
        let session = self.existing(&request.session_id)?;
        let ws = Arc::clone(&session.ws);
        if let Some(args) = share_args(&request.prompt) {
            let text = session.share.command(&ws, args).await;
            let update = SessionUpdate::AgentMessageChunk(ContentChunk::text(text));
            self.peer.notify(
                "session/update",
                SessionNotification {
                    session_id: session.id.clone(),
                    update,
                },
            );
            return Ok(PromptResponse {
                stop_reason: StopReason::EndTurn,
            });
        }
        let blocks = request.prompt;
        // Attaching linked files reads them: off the runtime.
        let message = off_runtime(move || {
            prompt::message(&ws, &blocks).map_err(|message| crate::app::Failure {
                code: exit::USAGE,
                message,
            })
        })
        .await
        .map_err(|f| RpcError::invalid_params(f.message))?;
        let ended = session
            .prompt(message)
            .await
            .ok_or_else(|| RpcError::internal("the session stopped before the turn ended"))?;
        let stop = match ended.status {
            OutcomeStatus::Completed => StopReason::EndTurn,
            OutcomeStatus::Cancelled => StopReason::Cancelled,
            OutcomeStatus::MaxIters | OutcomeStatus::Stopped => StopReason::MaxTurnRequests,
            OutcomeStatus::Error => return Err(RpcError::internal(ended.result)),
        };
        Ok(PromptResponse { stop_reason: stop })
    }

    /// `session/set_mode`: a permission mode (`default`, `accept-edits`, `plan`, `bypass`),
    /// or how turns work (`chat`, `auto`, `talk`). The session takes or refuses it as it
    /// takes `/permissions` and `/mode` from the terminal.
    async fn set_mode(
        &self,
        request: SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, RpcError> {
        let session = self.existing(&request.session_id)?;
        let mode = request.mode_id;
        let input = if let Some(mode) = PermissionMode::parse(&mode) {
            Input::SetPermissionMode { mode }
        } else if let Some(mode) = TurnMode::parse(&mode) {
            Input::SetMode { mode }
        } else {
            return Err(RpcError::invalid_params(format!(
                "no mode `{mode}`; modes: {}, chat, auto, talk",
                PermissionMode::NAMES
            )));
        };
        session.set(input).await?;
        Ok(SetSessionModeResponse {})
    }

    /// `session/set_config_option`: the model (`/model`) or the turn mode (`/mode`),
    /// taken or refused by the session as from the terminal. Answers with every option as
    /// it now stands.
    async fn set_option(
        &self,
        request: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, RpcError> {
        let session = self.existing(&request.session_id)?;
        let option = request.config_id;
        let SessionConfigOptionValue::ValueId(value) = request.value else {
            return Err(RpcError::invalid_params(format!(
                "`{option}` takes one of its listed values"
            )));
        };
        let input = options::input(&option, &value).map_err(RpcError::invalid_params)?;
        session.set(input).await?;
        session.set_current(options::after(&session.current(), &option, &value));
        Ok(SetSessionConfigOptionResponse {
            config_options: session.config_options(),
        })
    }

    /// Tells the editor the skills and commands a prompt can start with `/`.
    fn announce_commands(&self, session: &AcpSession) {
        let skills = session.ws.skills.get();
        let command = |name: &str, description: &str, hint: Option<&str>| AvailableCommand {
            name: name.to_string(),
            description: description.to_string(),
            input: hint.map(|hint| AvailableCommandInput {
                hint: hint.to_string(),
            }),
        };
        let mut commands: Vec<AvailableCommand> = skills
            .user_visible()
            .map(|s| command(&s.name, &s.description, s.argument_hint.as_deref()))
            .collect();
        commands.push(command(
            "share",
            "Share this session to a browser: watch and drive it",
            Some("[--read-only | stop]"),
        ));
        commands.sort_by(|a, b| a.name.cmp(&b.name));
        let update = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate {
            available_commands: commands,
        });
        self.peer.notify(
            "session/update",
            SessionNotification {
                session_id: session.id.clone(),
                update,
            },
        );
    }

    /// The workspace of `cwd`, loaded once: its configuration, agents, skills and trust.
    async fn workspace(&self, cwd: &Path) -> Result<Arc<Workspace>, RpcError> {
        if !cwd.is_absolute() {
            return Err(RpcError::invalid_params(format!(
                "`cwd` must be an absolute path, not `{}`",
                cwd.display()
            )));
        }
        if !cwd.is_dir() {
            return Err(RpcError::invalid_params(format!(
                "`cwd` {} is not a folder linggen can open",
                cwd.display()
            )));
        }
        if let Some(ws) = lock(&self.workspaces).get(cwd) {
            return Ok(Arc::clone(ws));
        }
        let mut start = self.start.clone();
        start.root = Some(cwd.to_path_buf());
        let ws = off_runtime(move || load_workspace(&start))
            .await
            .map_err(|f| RpcError::invalid_params(f.message))?;
        // Nobody is asked about the folder's grants here (as in `-p`): only what the person
        // trusted with `linggen trust` holds.
        if let Some(note) = ws.trust.note() {
            eprintln!("linggen: note: {note}");
        }
        let ws = Arc::new(ws);
        lock(&self.workspaces).insert(cwd.to_path_buf(), Arc::clone(&ws));
        Ok(ws)
    }

    fn session(&self, id: &str) -> Option<Arc<AcpSession>> {
        lock(&self.sessions).get(id).cloned()
    }

    fn existing(&self, id: &str) -> Result<Arc<AcpSession>, RpcError> {
        self.session(id).ok_or_else(|| {
            RpcError::new(
                code::RESOURCE_NOT_FOUND,
                format!("no session `{id}` on this connection: start one with session/new or session/load"),
            )
        })
    }

    /// Stops every session (a running turn is cancelled) and waits until each is stored.
    async fn stop_all(&self) {
        let sessions: Vec<_> = lock(&self.sessions).drain().map(|(_, s)| s).collect();
        for session in sessions {
            session.stop().await;
        }
    }
}

/// The arguments of a prompt that is `/share …` alone: the frontend's own command, as in
/// the terminal, not a message for the model.
fn share_args(prompt: &[ContentBlock]) -> Option<&str> {
    let [ContentBlock::Text(text)] = prompt else {
        return None;
    };
    let rest = text.text.trim().strip_prefix("/share")?;
    (rest.is_empty() || rest.starts_with(' ')).then_some(rest.trim())
}

/// The answer to `initialize`: protocol v1 (the only one linggen speaks; an editor asking
/// for a later one gets v1 and decides), what linggen takes in a prompt, and its version.
fn initialize() -> InitializeResponse {
    InitializeResponse {
        protocol_version: PROTOCOL_VERSION,
        agent_capabilities: AgentCapabilities {
            load_session: true,
            prompt_capabilities: PromptCapabilities {
                image: true,
                audio: false,
                embedded_context: true,
            },
            mcp_capabilities: McpCapabilities {
                http: true,
                sse: true,
            },
        },
        auth_methods: Vec::new(),
        agent_info: Implementation {
            name: "linggen".into(),
            title: Some("linggen".into()),
            version: env!("CARGO_PKG_VERSION").into(),
        },
    }
}

/// linggen's permission modes as the editor's mode selector.
fn modes(started: &Started) -> SessionModeState {
    let mode = |m: PermissionMode, description: &str| SessionMode {
        id: m.as_str().to_string(),
        name: m.as_str().to_string(),
        description: Some(description.to_string()),
    };
    SessionModeState {
        current_mode_id: started.permission_mode.as_str().to_string(),
        available_modes: vec![
            mode(
                PermissionMode::Default,
                "Reads run; edits and unlisted commands ask",
            ),
            mode(
                PermissionMode::AcceptEdits,
                "Edits inside the folder run without asking",
            ),
            mode(
                PermissionMode::Plan,
                "Read-only: nothing that writes or runs unlisted programs",
            ),
            mode(
                PermissionMode::Bypass,
                "Everything but the safety floor runs without asking",
            ),
        ],
    }
}

fn parse<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params)
        .map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))
}

fn to_value(value: impl serde::Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(|e| RpcError::internal(e.to_string()))
}
