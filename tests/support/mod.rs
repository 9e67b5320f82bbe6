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
    Run, TEST_KEY, TEST_KEY_ENV, Workspace, feed_endless_line, linggen_cmd, run, run_with_timeout,
    wait_until, write_config, write_config_with,
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
/// The smallest valid PNG: a 1×1 transparent pixel.
pub const PIXEL: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

/// The fixed prompt of a chat request (OpenAI's shape), in characters: its system
/// messages, and its tools' names, descriptions and compact parameter schemas (as
/// `ToolSpec::chars` counts them, without the wire format's own punctuation).
pub fn fixed_prompt_chars(body: &serde_json::Value) -> (usize, usize) {
    let system = texts(body, "system").iter().map(String::len).sum();
    let tools = body["tools"].as_array().map_or(0, |tools| {
        tools
            .iter()
            .map(|tool| {
                let f = &tool["function"];
                f["name"].as_str().map_or(0, str::len)
                    + f["description"].as_str().map_or(0, str::len)
                    + f["parameters"].to_string().len()
            })
            .sum()
    });
    (system, tools)
}

pub fn texts(body: &serde_json::Value, role: &str) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == role)
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}
