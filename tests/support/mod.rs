//! Shared by the integration tests: a scripted LLM server speaking the real OpenAI,
//! Ollama and Anthropic wire protocols, and helpers to run the `linggen` binary against it.
//!
//! ```ignore
//! mod support;
//! use support::{Fault, Protocol, Reply, ScriptedServer, Step};
//!
//! let server = ScriptedServer::start_background(Protocol::OpenAi, vec![
//!     Step::from(Reply::tool("Read", json!({"path": "src/lib.rs"}))),
//!     Fault::rate_limited(1).into(),
//!     Reply::text("Done.").into(),
//! ]);
//! let ws = Workspace::new();
//! ws.configure(Protocol::OpenAi, &server.url());
//! let out = run_with_timeout(ws.cmd().args(["-p", "read it"]), Duration::from_secs(30));
//! assert_eq!(server.chat_requests().len(), 3);
//! ```
// Each test binary uses a different subset of this module.
#![allow(dead_code, unused_imports)]
// Test helpers may unwrap: a failure there is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli;
mod connection;
mod corpus;
mod full_disk;
pub mod hook_log;
mod host;
mod http;
pub mod oauth;
pub mod pty;
mod script;
mod server;
pub mod web_client;
mod window;
mod wire;

pub use cli::{
    Run, TEST_KEY, TEST_KEY_ENV, Workspace, linggen_cmd, run, run_with_timeout, wait_until,
    write_config, write_config_with,
};
pub use corpus::markdown_corpus;
pub use full_disk::{namespace_prefix, run_on_small_disk};
pub use host::{
    KillOnDrop, git, git_available, mcp_everything, mcp_http_server, sandbox_available,
};
pub use script::{Fault, Protocol, Reply, Step, ToolCall, Usage};
pub use server::{RecordedRequest, Responder, ScriptedServer, ServerOptions};
pub use window::Window;
pub use wire::bedrock;

/// The text of every `role` message in one OpenAI-style request body, in order.
pub fn texts(body: &serde_json::Value, role: &str) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == role)
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}
