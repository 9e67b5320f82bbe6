//! MCP (Model Context Protocol): servers' tools registered as `mcp__SERVER__TOOL`, and
//! `linggen mcp serve`. [`config`] finds the servers a person already has configured;
//! [`names`] is how their tools are named.

pub mod config;
pub mod names;

pub use names::{NameError, check_server_name, split_tool_name, tool_name};
