//! MCP (Model Context Protocol): the servers people already configured, their tools
//! registered as `mcp__SERVER__TOOL`, and `linggen mcp serve`. [`config`] finds the servers
//! a person already has configured; [`names`] is how their tools are named; [`client`]
//! talks to one server; [`server`] keeps one running for a session and registers its
//! tools ([`tools`]) and, when it offers resources, the two resource tools
//! ([`resources`]); [`servers`] is a session's set, with what waits for trust. [`serve`]
//! is the other direction: linggen as an MCP server (`linggen mcp serve`).

pub mod client;
pub mod config;
pub mod legacy_sse;
pub mod model;
pub mod names;
pub mod oauth;
pub mod resources;
pub mod runners;
pub mod serve;
pub mod server;
pub mod servers;
pub mod tools;

pub use names::{NameError, check_server_name, split_tool_name, tool_name};
