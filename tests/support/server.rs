//! The scripted LLM server: a real HTTP server on 127.0.0.1 that answers chat requests
//! from a script and records everything it was sent.
//!
//! It always runs on its own thread with its own tokio runtime. That keeps it answering
//! while the test thread blocks (a plain `#[test]` waiting on a child process, or a
//! current-thread `#[tokio::test]` doing blocking I/O), and dropping the server shuts every
//! connection, including hung ones.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::connection::accept_loop;
use super::http::HttpRequest;
use super::script::{Protocol, Reply, Step, Usage};
use super::wire::{self, Turn};

/// What a scripted server says about itself beyond the script.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub protocol: Protocol,
    /// Listed by `/v1/models` and `/api/tags`, and echoed when a request names no model.
    pub model: String,
    /// `max_model_len` in OpenAI's `/v1/models` (vLLM's field) and
    /// `model_info["llama.context_length"]` in Ollama's `/api/show`.
    pub context_length: u32,
    /// A `num_ctx` line in Ollama's `/api/show` parameters, if set.
    pub num_ctx: Option<u32>,
    /// A window the server enforces as llama.cpp does (and reports as `n_ctx`).
    pub window: Option<super::Window>,
    /// Answers the chat requests it recognises without taking a step of the script: the
    /// requests a client makes at moments a test cannot script (compaction's summaries).
    pub responder: Option<Responder>,
}

/// See [`ServerOptions::responder`].
pub type Responder = fn(&Value) -> Option<super::Reply>;

impl ServerOptions {
    pub fn new(protocol: Protocol) -> ServerOptions {
        ServerOptions {
            protocol,
            model: "scripted".to_string(),
            context_length: 8192,
            num_ctx: None,
            window: None,
            responder: None,
        }
    }
}

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    /// The path without the query string.
    pub path: String,
    pub query: Option<String>,
    /// Header names lowercased; repeated headers joined with `, `.
    pub headers: BTreeMap<String, String>,
    /// The body parsed as JSON; `Value::Null` when empty or not JSON.
    pub body: Value,
    /// The body as text (lossy), for bodies that are not JSON.
    pub raw_body: String,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// A chat POST of any of the three protocols.
    pub fn is_chat(&self) -> bool {
        self.method == "POST" && wire::is_chat_path(&self.path)
    }
}

pub struct ScriptedServer {
    state: Arc<State>,
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl ScriptedServer {
    /// Starts a server for `protocol` serving `script`, one step per chat request.
    /// `script` may be `vec![Reply::text("a"), Reply::text("b")]`; mixing replies and
    /// faults takes `.into()` on each (or `Step::from`).
    pub async fn start<S: Into<Step>>(
        protocol: Protocol,
        script: impl IntoIterator<Item = S>,
    ) -> ScriptedServer {
        ScriptedServer::start_with(ServerOptions::new(protocol), script)
    }

    /// The same as [`ScriptedServer::start`], callable from a plain `#[test]` without a
    /// runtime (the server always owns its runtime on a background thread).
    pub fn start_background<S: Into<Step>>(
        protocol: Protocol,
        script: impl IntoIterator<Item = S>,
    ) -> ScriptedServer {
        ScriptedServer::start_with(ServerOptions::new(protocol), script)
    }

    /// Starts a server with non-default options; callable with or without a runtime.
    pub fn start_with<S: Into<Step>>(
        options: ServerOptions,
        script: impl IntoIterator<Item = S>,
    ) -> ScriptedServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("bind 127.0.0.1:0 for the scripted server");
        listener
            .set_nonblocking(true)
            .expect("make the scripted server's listener non-blocking");
        let addr = listener
            .local_addr()
            .expect("read the scripted server's address");
        let state = Arc::new(State::new(
            options,
            script.into_iter().map(Into::into).collect(),
        ));
        let (shutdown, shutdown_rx) = oneshot::channel::<()>();
        let thread_state = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name(format!("scripted-llm-{}", addr.port()))
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("build the scripted server's runtime");
                runtime.block_on(async move {
                    let listener = TcpListener::from_std(listener)
                        .expect("register the scripted server's listener");
                    tokio::select! {
                        _ = shutdown_rx => {}
                        () = accept_loop(listener, thread_state) => {}
                    }
                });
                // Dropping the runtime drops every connection task, closing hung sockets.
            })
            .expect("spawn the scripted server thread");
        ScriptedServer {
            state,
            addr,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// The base URL as each ecosystem writes it: `http://127.0.0.1:PORT/v1` for OpenAI,
    /// `http://127.0.0.1:PORT` for Ollama and Anthropic.
    pub fn url(&self) -> String {
        match self.state.options.protocol {
            Protocol::OpenAi => format!("{}/v1", self.origin()),
            Protocol::Ollama | Protocol::Anthropic | Protocol::Bedrock => self.origin(),
        }
    }

    /// `http://127.0.0.1:PORT`, without any API prefix.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn protocol(&self) -> Protocol {
        self.state.options.protocol
    }

    /// Every request received so far, in arrival order, including ones answered with a
    /// fault, rejected, or never answered.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state.requests).clone()
    }

    /// The JSON bodies of the chat POSTs only.
    pub fn chat_requests(&self) -> Vec<Value> {
        lock(&self.state.requests)
            .iter()
            .filter(|request| request.is_chat())
            .map(|request| request.body.clone())
            .collect()
    }

    pub fn last_chat_request(&self) -> Option<Value> {
        self.chat_requests().pop()
    }

    /// Ids of every tool call served so far, in order (`call_…` / `toolu_…`; none for Ollama).
    pub fn tool_call_ids(&self) -> Vec<String> {
        lock(&self.state.tool_call_ids).clone()
    }

    /// One-shot steps not served yet (a `Step::Repeat` is not counted).
    pub fn steps_remaining(&self) -> usize {
        lock(&self.state.script)
            .iter()
            .filter(|step| !matches!(step, Step::Repeat(_)))
            .count()
    }

    /// Panics, listing them, if scripted steps were never requested.
    pub fn assert_script_consumed(&self) {
        let script = lock(&self.state.script);
        let unserved: Vec<&Step> = script
            .iter()
            .filter(|step| !matches!(step, Step::Repeat(_)))
            .collect();
        assert!(
            unserved.is_empty(),
            "the client made fewer chat requests than scripted; {} step(s) never served: {unserved:#?}",
            unserved.len()
        );
    }

    /// The prompt sizes (in the window's tokens) of the chat requests answered, and of those
    /// rejected as over the window, in order.
    pub fn prompt_tokens(&self) -> (Vec<u64>, Vec<u64>) {
        (
            lock(&self.state.answered_prompts).clone(),
            lock(&self.state.rejected_prompts).clone(),
        )
    }

    /// The most chat requests that were being answered at the same moment.
    pub fn max_concurrent_chats(&self) -> usize {
        self.state.max_concurrent.load(Ordering::SeqCst)
    }

    /// Responses the client stopped reading before they were complete (a write failed).
    pub fn client_disconnects(&self) -> usize {
        self.state.client_disconnects.load(Ordering::SeqCst)
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Shared by the handle and every connection task.
pub(super) struct State {
    pub options: ServerOptions,
    script: Mutex<VecDeque<Step>>,
    pub scripted_steps: usize,
    requests: Mutex<Vec<RecordedRequest>>,
    tool_call_ids: Mutex<Vec<String>>,
    next_seed: AtomicU64,
    pub client_disconnects: AtomicUsize,
    /// Chat requests being answered now, and the most there ever were.
    pub concurrent: AtomicUsize,
    pub max_concurrent: AtomicUsize,
    pub answered_prompts: Mutex<Vec<u64>>,
    pub rejected_prompts: Mutex<Vec<u64>>,
}

impl State {
    fn new(options: ServerOptions, script: VecDeque<Step>) -> State {
        State {
            options,
            scripted_steps: script.len(),
            script: Mutex::new(script),
            requests: Mutex::new(Vec::new()),
            tool_call_ids: Mutex::new(Vec::new()),
            next_seed: AtomicU64::new(1),
            client_disconnects: AtomicUsize::new(0),
            concurrent: AtomicUsize::new(0),
            max_concurrent: AtomicUsize::new(0),
            answered_prompts: Mutex::new(Vec::new()),
            rejected_prompts: Mutex::new(Vec::new()),
        }
    }

    pub(super) fn protocol(&self) -> Protocol {
        self.options.protocol
    }

    pub(super) fn record(&self, request: RecordedRequest) {
        lock(&self.requests).push(request);
    }

    pub(super) fn seed(&self) -> u64 {
        self.next_seed.fetch_add(1, Ordering::SeqCst)
    }

    /// The next step; a `Repeat` stays at the front forever.
    pub(super) fn next_step(&self) -> Option<Step> {
        let mut script = lock(&self.script);
        match script.front() {
            Some(Step::Repeat(reply)) => Some(Step::Reply(reply.clone())),
            _ => script.pop_front(),
        }
    }

    pub(super) fn chat_requests_seen(&self) -> usize {
        lock(&self.requests)
            .iter()
            .filter(|request| request.is_chat())
            .count()
    }

    /// Fixes ids and token counts for one response and logs the tool call ids it hands out.
    pub(super) fn turn<'a>(
        &self,
        reply: &'a Reply,
        request: &'a HttpRequest,
        body: &'a Value,
    ) -> Turn<'a> {
        let protocol = self.protocol();
        let tool_ids: Vec<String> = reply
            .tool_calls
            .iter()
            .filter_map(|call| {
                let fresh = wire::tool_call_id(protocol, self.seed())?;
                Some(call.id.clone().unwrap_or(fresh))
            })
            .collect();
        lock(&self.tool_call_ids).extend(tool_ids.iter().cloned());
        let usage = reply.usage.unwrap_or(Usage {
            // About four bytes per token, like the usual rule of thumb.
            input_tokens: (request.body.len() / 4).max(1) as u32,
            output_tokens: (reply.output_bytes() / 4).max(1) as u32,
        });
        Turn {
            reply,
            request: body,
            model: body
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or(&self.options.model)
                .to_string(),
            response_id: wire::response_id(protocol, self.seed()),
            tool_ids,
            usage,
            created_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_secs()),
        }
    }
}

/// Test threads that panic while holding a lock must not hide the original failure
/// behind a poisoned-lock panic.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
