//! Setting up: `initialize`, `session/new` and `session/load` (with the editor's MCP
//! servers), and the session's settings: its modes and config options.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{null_as_default, or_default};

/// `initialize` from the editor: what it can do with its files is read.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequest {
    /// Required, so that a request without a version (or with `"1.0"`) is refused; its
    /// value changes nothing, as linggen answers v1 whatever is asked.
    #[serde(rename = "protocolVersion")]
    pub _protocol_version: u16,
    #[serde(default, deserialize_with = "or_default")]
    pub client_capabilities: ClientCapabilities,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ClientCapabilities {
    #[serde(default, deserialize_with = "or_default")]
    pub fs: FileSystemCapabilities,
}

/// Whether the editor reads and writes its buffers for linggen (`fs/read_text_file`,
/// `fs/write_text_file`).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileSystemCapabilities {
    #[serde(default, deserialize_with = "or_default")]
    pub read_text_file: bool,
    #[serde(default, deserialize_with = "or_default")]
    pub write_text_file: bool,
}

/// linggen's answer to `initialize`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    pub protocol_version: u16,
    pub agent_capabilities: AgentCapabilities,
    /// Always empty: cloud models read their keys from the environment. Sent anyway, as
    /// the protocol's first clients expected the list.
    pub auth_methods: Vec<Value>,
    pub agent_info: Implementation,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    pub load_session: bool,
    pub prompt_capabilities: PromptCapabilities,
    pub mcp_capabilities: McpCapabilities,
}

/// What a prompt may hold besides text and resource links.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptCapabilities {
    pub image: bool,
    pub audio: bool,
    pub embedded_context: bool,
}

/// The MCP transports an editor may hand over besides stdio.
#[derive(Debug, Clone, Default, Serialize)]
pub struct McpCapabilities {
    pub http: bool,
    pub sse: bool,
}

/// A program's name, shown name and version.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Implementation {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub version: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionRequest {
    pub cwd: PathBuf,
    #[serde(default, deserialize_with = "null_as_default")]
    pub mcp_servers: Vec<McpServer>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResponse {
    pub session_id: String,
    pub modes: SessionModeState,
    pub config_options: Vec<SessionConfigOption>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadSessionRequest {
    pub session_id: String,
    pub cwd: PathBuf,
    #[serde(default, deserialize_with = "null_as_default")]
    pub mcp_servers: Vec<McpServer>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadSessionResponse {
    pub modes: SessionModeState,
    pub config_options: Vec<SessionConfigOption>,
}

/// An MCP server the editor hands over. Stdio servers carry no `type`; a transport linggen
/// does not speak (or a server it cannot read) is [`McpServer::Unknown`], as sent.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpServer {
    Http(McpServerHttp),
    Sse(McpServerHttp),
    #[serde(untagged)]
    Stdio(McpServerStdio),
    #[serde(untagged)]
    Unknown(Value),
}

/// An MCP server over HTTP (streamable, or the older SSE transport).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct McpServerHttp {
    pub name: String,
    pub url: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub headers: Vec<HttpHeader>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct McpServerStdio {
    pub name: String,
    pub command: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub args: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub env: Vec<EnvVariable>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct HttpHeader {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct EnvVariable {
    pub name: String,
    pub value: String,
}

/// The editor's mode selector: the modes and the one in force.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionModeState {
    pub current_mode_id: String,
    pub available_modes: Vec<SessionMode>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SessionMode {
    pub id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetSessionModeRequest {
    pub session_id: String,
    pub mode_id: String,
}

/// An empty object on the wire.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SetSessionModeResponse {}

/// A setting the editor shows as a list to pick from (the protocol's `select` option, the
/// only kind linggen offers).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionConfigOption {
    pub id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<SessionConfigOptionCategory>,
    #[serde(rename = "type")]
    pub kind: SessionConfigKind,
    pub current_value: String,
    pub options: Vec<SessionConfigSelectOption>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionConfigKind {
    #[default]
    Select,
}

/// What an option is about, for the editor to place it (the model picker).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionConfigOptionCategory {
    Model,
}

#[derive(Debug, Clone, Serialize)]
pub struct SessionConfigSelectOption {
    pub value: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetSessionConfigOptionRequest {
    pub session_id: String,
    pub config_id: String,
    pub value: SessionConfigOptionValue,
}

/// The value chosen: one of a select's value ids, or something else (a boolean option's
/// `true`), which no option of linggen's takes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum SessionConfigOptionValue {
    ValueId(String),
    Other(Value),
}

/// Every option as it now stands.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetSessionConfigOptionResponse {
    pub config_options: Vec<SessionConfigOption>,
}

/// `session/cancel`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelNotification {
    pub session_id: String,
}
