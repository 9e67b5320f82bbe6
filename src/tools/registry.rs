//! The tool registry: the tools registered while a session runs (an MCP server's, and
//! `tool_search`), added and removed as their servers start, change their lists or go away.
//! Built-ins are not entries here: a name is resolved to a [`ToolName`] first, and parsed
//! and run by `tools`' own typed code; only other names are looked up here.
//!
//! A registered tool brings what the rest of linggen needs to treat it like a built-in: its
//! schema (what the model is offered), its [`AccessClass`] (what the permission decision
//! starts from), hints from its author (never enough to lift a question on their own), and
//! its runner. Permission rules, agents' `tools:` lists, approvals, events and the audit
//! trail all work on the name, so `mcp__github__*` in an allow rule means what it means in
//! Claude Code.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;
use serde_json::Value;

use super::{ToolName, ToolOutput};
use crate::protocol::ToolSpec;
use crate::sync::{read, write};

/// A tool by identity: one of linggen's own, or one registered at run time.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ToolId {
    Builtin(ToolName),
    /// The registered name, e.g. `mcp__everything__echo`.
    Registered(Arc<str>),
}

impl ToolId {
    pub fn name(&self) -> &str {
        match self {
            ToolId::Builtin(tool) => tool.name(),
            ToolId::Registered(name) => name,
        }
    }

    pub fn builtin(&self) -> Option<ToolName> {
        match self {
            ToolId::Builtin(tool) => Some(*tool),
            ToolId::Registered(_) => None,
        }
    }
}

impl std::fmt::Display for ToolId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl From<ToolName> for ToolId {
    fn from(tool: ToolName) -> Self {
        ToolId::Builtin(tool)
    }
}

/// What a tool may touch, as its registration declares it: where the permission decision
/// starts. Built-ins refine it per call (the path, the command); a registered tool's class
/// holds for every call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessClass {
    /// Reads inside the root only.
    Read,
    /// Writes files it names.
    WritePaths,
    /// Runs commands.
    Command,
    /// Reaches the network.
    Network,
    /// Anything else, or unknown: an MCP server's tool may do whatever its server does.
    Other,
}

/// What a tool's author says about it (MCP's annotations). Shown to the person and used to
/// phrase the question; they never allow a call on their own, since a server can claim
/// anything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolHints {
    pub read_only: bool,
    pub destructive: bool,
    pub open_world: bool,
}

/// How a registered tool runs. Implemented by the MCP client for each server's tools.
#[async_trait]
pub trait ToolHandler: Send + Sync + std::fmt::Debug {
    /// One line for a person about this call, e.g. `mcp__github__create_issue title="x"`;
    /// an `Err` is handed back to the model (bad arguments) without running anything.
    fn summarize(&self, name: &str, args: &Value) -> Result<String, ToolOutput>;

    /// Runs the call. Dropping the future cancels it.
    async fn run(&self, name: &str, args: &Value) -> ToolOutput;
}

/// One tool the model may be offered.
#[derive(Debug, Clone)]
pub struct ToolEntry {
    pub spec: ToolSpec,
    pub class: AccessClass,
    pub hints: ToolHints,
    /// Where it comes from, for people: `built-in`, `MCP server everything`.
    pub origin: String,
    pub handler: Arc<dyn ToolHandler>,
}

impl ToolEntry {
    pub fn id(&self) -> ToolId {
        ToolId::Registered(Arc::from(self.spec.name.as_str()))
    }
}

/// Why a tool could not be registered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegisterError {
    #[error("`{0}` is the name of a built-in tool")]
    Builtin(String),
    #[error("tool name `{0}` is not allowed: use letters, digits, `_` and `-` (at most 64)")]
    BadName(String),
}

/// The tools of one session (shared by its runs and their children).
#[derive(Debug, Default)]
pub struct ToolRegistry {
    registered: RwLock<BTreeMap<String, ToolEntry>>,
    /// Sources still finding their tools (MCP servers starting): a model request waits for
    /// them, so the first request already offers their tools; start-up itself never waits.
    pending: std::sync::atomic::AtomicUsize,
    settled: tokio::sync::Notify,
    /// Tools the model found with `tool_search`: offered whole from then on.
    loaded: RwLock<std::collections::BTreeSet<String>>,
    /// `[mcp] eager_tools_chars`; `None`: decided from the model's window.
    eager_chars: RwLock<Option<usize>>,
    /// What each source says about using its tools (an MCP server's `instructions`), by
    /// the source's name.
    instructions: RwLock<BTreeMap<String, String>>,
}

/// Held while a source of tools is starting; dropping it says it is done (or failed).
#[derive(Debug)]
pub struct Starting(Arc<ToolRegistry>);

impl Drop for Starting {
    fn drop(&mut self) {
        let before = self
            .0
            .pending
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
        if before == 1 {
            self.0.settled.notify_waiters();
        }
    }
}

impl ToolRegistry {
    pub fn new() -> Self {
        ToolRegistry::default()
    }

    /// The registered (non built-in) tools, by name.
    pub fn registered(&self) -> Vec<ToolEntry> {
        self.read().values().cloned().collect()
    }

    /// Keeps what source `name` says about using its tools (nothing: forgets it).
    pub fn set_instructions(&self, name: &str, text: Option<&str>) {
        let mut map = write(&self.instructions);
        match text.map(str::trim).filter(|t| !t.is_empty()) {
            Some(text) => map.insert(name.to_string(), text.to_string()),
            None => map.remove(name),
        };
    }

    /// Every source's instructions, by name.
    pub fn instructions(&self) -> Vec<(String, String)> {
        read(&self.instructions)
            .iter()
            .map(|(name, text)| (name.clone(), text.clone()))
            .collect()
    }

    /// The registered tool with exactly this name.
    pub fn get(&self, name: &str) -> Option<ToolEntry> {
        self.read().get(name).cloned()
    }

    /// Adds or replaces a tool under `entry.spec.name`.
    pub fn register(&self, entry: ToolEntry) -> Result<(), RegisterError> {
        let name = entry.spec.name.clone();
        if ToolName::from_name(&name).is_some() || ToolName::resolve(&name).is_some() {
            return Err(RegisterError::Builtin(name));
        }
        if !valid_name(&name) {
            return Err(RegisterError::BadName(name));
        }
        self.write().insert(name, entry);
        Ok(())
    }

    /// Removes every registered tool whose name starts with `prefix` (a server's tools,
    /// `mcp__NAME__`). Returns how many went.
    pub fn unregister_prefix(&self, prefix: &str) -> usize {
        let mut map = self.write();
        let before = map.len();
        map.retain(|name, _| !name.starts_with(prefix));
        before - map.len()
    }

    /// Offers these tools whole from now on (found by `tool_search`).
    pub fn load(&self, names: impl IntoIterator<Item = String>) {
        let mut loaded = write(&self.loaded);
        loaded.extend(names);
        drop(loaded);
    }

    pub fn is_loaded(&self, name: &str) -> bool {
        let loaded = read(&self.loaded);
        loaded.contains(name)
    }

    /// Sets `[mcp] eager_tools_chars`.
    pub fn set_eager_chars(&self, chars: Option<usize>) {
        *write(&self.eager_chars) = chars;
    }

    /// Characters of registered tools' schemas that may be offered whole with a request to
    /// a model whose window is `window` tokens: the configured figure, else a tenth of the
    /// window (about four characters a token), else 20,000.
    pub fn eager_budget(&self, window: Option<u32>) -> usize {
        let configured = *read(&self.eager_chars);
        configured.unwrap_or_else(|| window.map_or(20_000, |tokens| tokens as usize * 4 / 10))
    }

    /// The registered tools to offer with a request, among `usable`: all of them when their
    /// schemas fit `budget`; otherwise the loaded ones plus `tool_search` (registered here
    /// the first time it is needed).
    pub fn offered(self: &Arc<Self>, usable: Vec<ToolEntry>, budget: usize) -> Vec<ToolSpec> {
        let usable: Vec<ToolEntry> = usable
            .into_iter()
            .filter(|e| e.spec.name != super::tool_search::NAME)
            .collect();
        let chars: usize = usable.iter().map(|e| e.spec.chars()).sum();
        if chars <= budget {
            return usable.into_iter().map(|e| e.spec).collect();
        }
        let search = match self.get(super::tool_search::NAME) {
            Some(entry) => entry,
            None => {
                let entry = super::tool_search::entry(self);
                self.write().insert(entry.spec.name.clone(), entry.clone());
                entry
            }
        };
        let mut specs = vec![search.spec];
        specs.extend(
            usable
                .into_iter()
                .filter(|e| self.is_loaded(&e.spec.name))
                .map(|e| e.spec),
        );
        specs
    }

    /// Marks a source of tools as starting until the returned guard is dropped.
    pub fn starting(self: &Arc<Self>) -> Starting {
        self.pending
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Starting(self.clone())
    }

    /// Waits until no source is starting. Each source bounds its own start-up (an MCP
    /// server's `startup_timeout_sec`), so this cannot wait forever.
    pub async fn settled(&self) {
        loop {
            let notified = self.settled.notified();
            tokio::pin!(notified);
            // Registered before the check, so a guard dropped in between still wakes us.
            notified.as_mut().enable();
            if self.pending.load(std::sync::atomic::Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }

    // A poisoned lock only means a panic elsewhere while holding it; the map is still whole.
    fn read(&self) -> RwLockReadGuard<'_, BTreeMap<String, ToolEntry>> {
        read(&self.registered)
    }

    fn write(&self) -> RwLockWriteGuard<'_, BTreeMap<String, ToolEntry>> {
        write(&self.registered)
    }
}

/// Whether a name in a rule or an agent's `tools:` list covers the registered tool `name`:
/// the exact name, a `*` pattern (`mcp__github__*`), or a server's prefix alone
/// (`mcp__github`: every tool of that server, as Claude Code reads it).
pub fn name_matches(pattern: &str, name: &str) -> bool {
    if pattern.contains('*') {
        return wildcard_match(pattern, name);
    }
    name == pattern
        || (pattern.matches("__").count() == 1
            && name
                .strip_prefix(pattern)
                .is_some_and(|rest| rest.starts_with("__")))
}

/// `*` matches any run of characters; everything else is literal.
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = match parts.split_first() {
        Some(x) => x,
        None => return text.is_empty(),
    };
    let Some(mut remaining) = text.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return remaining.is_empty();
    };
    for part in middle {
        match remaining.find(part) {
            Some(i) => remaining = &remaining[i + part.len()..],
            None => return false,
        }
    }
    remaining.ends_with(last)
}

/// What every provider accepts as a function name (OpenAI's rule is the strictest).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Echo;

    #[async_trait]
    impl ToolHandler for Echo {
        fn summarize(&self, name: &str, _args: &Value) -> Result<String, ToolOutput> {
            Ok(name.to_string())
        }
        async fn run(&self, _name: &str, args: &Value) -> ToolOutput {
            ToolOutput::ok(args.to_string(), "echoed")
        }
    }

    fn entry(name: &str) -> ToolEntry {
        ToolEntry {
            spec: ToolSpec {
                name: name.to_string(),
                description: "echo".into(),
                parameters: serde_json::json!({"type": "object"}),
            },
            class: AccessClass::Other,
            hints: ToolHints::default(),
            origin: "MCP server s".into(),
            handler: Arc::new(Echo),
        }
    }

    #[test]
    fn tools_register_by_name_and_leave_by_server() {
        let registry = ToolRegistry::new();
        registry.register(entry("mcp__s__echo")).unwrap();
        registry.register(entry("mcp__s__add")).unwrap();
        registry.register(entry("mcp__t__echo")).unwrap();
        let names: Vec<String> = registry
            .registered()
            .into_iter()
            .map(|e| e.spec.name)
            .collect();
        assert_eq!(names, ["mcp__s__add", "mcp__s__echo", "mcp__t__echo"]);
        assert_eq!(
            registry.get("mcp__s__echo").unwrap().id(),
            ToolId::Registered("mcp__s__echo".into())
        );
        assert_eq!(registry.unregister_prefix("mcp__s__"), 2);
        assert_eq!(registry.registered().len(), 1);
    }

    #[tokio::test]
    async fn a_request_waits_for_sources_still_starting() {
        let registry = Arc::new(ToolRegistry::new());
        registry.settled().await;
        let starting = registry.starting();
        let waiter = {
            let registry = registry.clone();
            tokio::spawn(async move { registry.settled().await })
        };
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        registry.register(entry("mcp__s__echo")).unwrap();
        drop(starting);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
    }

    #[test]
    fn a_built_in_name_or_a_bad_name_is_refused() {
        let registry = ToolRegistry::new();
        assert_eq!(
            registry.register(entry("Bash")),
            Err(RegisterError::Builtin("Bash".into()))
        );
        assert_eq!(
            registry.register(entry("read_file")),
            Err(RegisterError::Builtin("read_file".into()))
        );
        assert!(matches!(
            registry.register(entry("mcp__s__has space")),
            Err(RegisterError::BadName(_))
        ));
        assert!(registry.registered().is_empty());
    }
}
