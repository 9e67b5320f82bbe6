//! The tool set offered to the model. A call goes through two steps so the session can put
//! the permission check in between: [`prepare`] parses and validates the arguments (aliases
//! accepted, paths confined to the root, commands analysed) and says what the call would
//! touch; [`run`] then does it. Both return a [`ToolOutput`] on failure, so a bad call is
//! just an observation for the model, never a crash.

pub mod args;
pub mod background;
pub mod bash;
pub mod compact;
pub mod diff;
pub mod edit;
pub mod editor_files;
pub mod glob;
pub mod grep;
pub mod guard;
pub mod launch;
mod name;
pub mod patch;
pub mod read;
pub mod registry;
pub mod repo_info;
pub mod sandbox;
pub mod screenshot;
pub mod session_tools;
pub mod terminal_text;
pub mod todo;
pub mod tool_search;
pub mod write;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::protocol::ToolSpec;
pub use guard::shell::{CommandAnalysis, Segment, SegmentClass};
pub use name::ToolName;
pub use registry::{AccessClass, ToolEntry, ToolHandler, ToolHints, ToolId, ToolRegistry};
pub use session_tools::SessionCall;

/// What a finished tool call reports. The model gets `model` (compact facts); a person gets
/// `summary` (one line) and, for edits, `diff` (unified diff).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub model: String,
    pub summary: String,
    pub diff: Option<String>,
    pub is_error: bool,
    /// A few lines of what happened, for the person (a failed command's first lines of
    /// output): the summary alone would leave them guessing.
    pub excerpt: Option<String>,
    /// Set when the call failed for the machine's reason, not the call's (the disk is full,
    /// read-only or failing): the model cannot fix that, and handed the failure it would
    /// retry or talk its way to a "done". The run stops instead, with an error that says
    /// the change was not made.
    pub fault: Option<crate::durable::StorageFault>,
    /// Images for the model (an MCP server's screenshot); `model` names each where it was.
    /// A boxed slice, not a `Vec`: every call's result passes through `Result<_, ToolOutput>`
    /// and one word less keeps that small.
    pub images: Box<[crate::protocol::Image]>,
}

impl ToolOutput {
    pub fn ok(model: impl Into<String>, summary: impl Into<String>) -> Self {
        ToolOutput {
            model: model.into(),
            summary: summary.into(),
            diff: None,
            is_error: false,
            excerpt: None,
            fault: None,
            images: Box::default(),
        }
    }

    /// A failure the model should read and react to; `message` says what to do instead (a
    /// typed error's message, or text).
    pub fn error(message: impl std::fmt::Display) -> Self {
        let message = message.to_string();
        ToolOutput {
            summary: first_line(&message),
            model: message,
            diff: None,
            is_error: true,
            excerpt: None,
            fault: None,
            images: Box::default(),
        }
    }

    /// A failure of the machine (see [`ToolOutput::fault`]); `message` says what failed,
    /// what the person can do, and that nothing was changed.
    pub fn storage_fault(
        message: impl std::fmt::Display,
        fault: crate::durable::StorageFault,
    ) -> Self {
        ToolOutput {
            fault: Some(fault),
            ..ToolOutput::error(message)
        }
    }

    /// The line a person reads, when the model's message is not for them.
    pub fn with_summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = summary.into();
        self
    }

    pub fn with_diff(mut self, diff: Option<String>) -> Self {
        self.diff = diff;
        self
    }

    pub fn with_images(mut self, images: Vec<crate::protocol::Image>) -> Self {
        self.images = images.into_boxed_slice();
        self
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_string()
}

/// Where tools run.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Canonical workspace root; every file tool is confined to it.
    pub root: PathBuf,
    /// Default `Bash` timeout when the call gives none.
    pub bash_timeout_ms: u64,
    /// Folders outside the root that `Read` may also read (never write): the skill folders
    /// (`~/.linggen/skills`, `~/.claude/skills`…), so a skill's supporting files can be
    /// loaded when its instructions point at them.
    pub read_only_roots: Vec<PathBuf>,
    /// `--add-dir`: folders beside the root that the file tools read and write, by
    /// absolute path, with the root's protections (canonical).
    pub extra_roots: Vec<PathBuf>,
    /// `[tools] chromium` and `screenshot_hosts`, for `capture_screenshot`.
    pub screenshot: screenshot::ScreenshotSettings,
    /// Where commands run: the kernel's confinement and the scrubbed environment.
    pub sandbox: std::sync::Arc<sandbox::Sandbox>,
    /// `$LINGGEN_HOME`, which holds the person's settings and rules: never written by a
    /// tool even when the root contains it (the root is `~`, say). Hidden from reads through
    /// the sandbox, which must be given the same folder (`Sandbox::with_linggen_home`).
    pub linggen_home: Option<PathBuf>,
    /// Every tool by name: the built-ins and what is registered while the session runs
    /// (MCP servers' tools). Shared by the session's runs, so a server's tools reach them all.
    pub registry: std::sync::Arc<ToolRegistry>,
    /// The session's background commands (`Bash` with `run_in_background`).
    pub tasks: std::sync::Arc<background::Tasks>,
    /// The editor's buffers, when linggen works for an editor that offers them (ACP):
    /// file tools read and write through it (see [`editor_files`]).
    pub editor_files: Option<std::sync::Arc<dyn editor_files::EditorFiles>>,
}

impl ToolContext {
    /// A path the model gave, resolved inside the root (see [`guard::paths::resolve`]), with
    /// `$LINGGEN_HOME` protected for writes and the sandbox's hidden paths refused.
    pub fn resolve(
        &self,
        raw: &str,
        usage: guard::paths::PathUse,
    ) -> Result<guard::paths::ResolvedPath, guard::paths::PathRefused> {
        let secrets = self.sandbox.secrets();
        let home = self.linggen_home.as_deref();
        let in_root = guard::paths::resolve(&self.root, home, &secrets, raw, usage);
        let raw_path = Path::new(raw.trim());
        if in_root.is_ok() || !raw_path.is_absolute() {
            return in_root;
        }
        // An absolute path into an `--add-dir` folder: resolved and checked against that
        // folder as against the root; named by its absolute path so it is never mistaken
        // for a file of the root.
        match self.extra_roots.iter().find(|r| raw_path.starts_with(r)) {
            Some(extra) => guard::paths::resolve(extra, home, &secrets, raw, usage).map(|p| {
                guard::paths::ResolvedPath {
                    rel: p.abs.display().to_string(),
                    abs: p.abs,
                }
            }),
            None => in_root,
        }
    }

    pub fn new(root: &Path) -> Self {
        ToolContext {
            root: root.to_path_buf(),
            bash_timeout_ms: bash::DEFAULT_TIMEOUT_MS,
            read_only_roots: Vec::new(),
            extra_roots: Vec::new(),
            screenshot: screenshot::ScreenshotSettings::default(),
            sandbox: std::sync::Arc::new(sandbox::Sandbox::new(root, Default::default())),
            linggen_home: None,
            registry: std::sync::Arc::new(ToolRegistry::new()),
            tasks: std::sync::Arc::new(background::Tasks::new()),
            editor_files: None,
        }
    }
}

/// What a prepared call would touch; the permission check decides on this.
#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    /// Reads inside the root only.
    Read,
    /// Writes one file inside the root. `rel` is its path relative to the root.
    Write {
        path: PathBuf,
        rel: String,
        preview_diff: Option<String>,
    },
    /// Writes the files of a patch (`apply_patch`), all checked to apply; relative to the
    /// root. `confirm` says why a person must confirm it whatever the mode (it is large).
    Patch {
        files: Vec<String>,
        preview_diff: Option<String>,
        confirm: Option<String>,
    },
    /// Runs a shell command (already passed the hard floor).
    Command {
        command: String,
        analysis: CommandAnalysis,
        /// Set when it would run outside the kernel sandbox in a way that needs a person:
        /// then no mode or rule runs it without asking.
        unconfined: Option<Unconfined>,
    },
    /// Opens `url` (already checked: http(s) on loopback or an allowed host) in a headless
    /// browser, which runs the page's scripts, and saves a new PNG under
    /// `.linggen/screenshots/`. Neither a read nor an edit of the project: see
    /// `Permissions::check` for how it is decided.
    Screenshot { url: String },
    /// A registered tool (an MCP server's): what its registration declares, for every call.
    Registered {
        class: AccessClass,
        hints: ToolHints,
        /// Where the tool comes from, for the question: `MCP server github`.
        origin: String,
    },
}

/// Why a command would run outside the sandbox, and how often a person must say yes.
#[derive(Debug, Clone, PartialEq)]
pub struct Unconfined {
    pub reason: String,
    /// Asked for by the model (`dangerouslyDisableSandbox`): every call asks. Otherwise
    /// (no sandbox on this machine) the person's "always, this session" answer holds.
    pub each_time: bool,
}

/// A validated call, ready to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// The tool (aliases resolved).
    pub tool: ToolId,
    /// One line for a person, e.g. `Read src/main.rs (1-120)`.
    pub summary: String,
    pub access: Access,
    call: Call,
}

impl Prepared {
    /// The call as a person approves it: every character of the command, path or address it
    /// will run or touch, with the invisible ones spelled out ([`terminal_text::visible`]).
    /// Unlike `summary` (one line for tool lines, which may abridge), never shortened.
    pub fn approval_display(&self) -> String {
        use terminal_text::visible;
        match &self.access {
            Access::Command { command, .. } => {
                let background = match &self.call {
                    Call::Bash(a) if a.background => " (in the background: it keeps running)",
                    _ => "",
                };
                format!("{}: {}{background}", self.tool, visible(command))
            }
            Access::Write { rel, .. } => format!("{} {}", self.tool, visible(rel)),
            Access::Patch { files, .. } => {
                let files: Vec<String> = files.iter().map(|f| visible(f)).collect();
                format!("{} {}", self.tool, files.join(", "))
            }
            Access::Screenshot { .. } | Access::Read => visible(&self.summary),
            Access::Registered { .. } => match &self.call {
                Call::Registered(call) => {
                    format!("{} {}", self.tool, visible(&call.args.to_string()))
                }
                _ => visible(&self.summary),
            },
        }
    }
}

/// Parsed, per-tool arguments.
#[derive(Debug, Clone, PartialEq)]
enum Call {
    RepoInfo,
    Glob(glob::GlobArgs),
    Read(read::ReadArgs),
    Grep(grep::GrepArgs),
    Write(write::WriteArgs),
    Edit(edit::EditArgs),
    Bash(bash::BashArgs),
    BashOutput(background::OutputArgs),
    KillShell(background::KillArgs),
    Screenshot(screenshot::ScreenshotArgs),
    Patch(patch::tool::PatchArgs),
    Session(SessionCall),
    Registered(RegisteredCall),
}

/// A call of a registered tool: its handler and the arguments as the model sent them.
#[derive(Debug, Clone)]
struct RegisteredCall {
    name: String,
    args: Value,
    handler: std::sync::Arc<dyn ToolHandler>,
}

impl PartialEq for RegisteredCall {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.args == other.args
    }
}

/// The canonical names of every tool this module implements, in the order offered.
pub const TOOL_NAMES: [&str; 10] = {
    let mut names = [""; 10];
    let mut i = 0;
    while i < names.len() {
        names[i] = ToolName::FILE_TOOLS[i].name();
        i += 1;
    }
    names
};

/// Every built-in tool name, file tools first.
pub fn all_tool_names() -> Vec<&'static str> {
    ToolName::all().map(ToolName::name).collect()
}

/// Schemas for the model. Descriptions are short on purpose: small local models have small
/// context windows, and the whole system prompt plus schemas must stay under ~2,500 tokens.
pub fn specs() -> Vec<ToolSpec> {
    vec![
        repo_info::spec(),
        glob::spec(),
        read::spec(),
        grep::spec(),
        write::spec(),
        edit::spec(),
        bash::spec(),
        screenshot::spec(),
        patch::tool::propose_spec(),
        patch::tool::apply_spec(),
    ]
}

/// Maps a name the model used (any case, common alternatives) to a canonical tool name.
pub fn canonical_name(name: &str) -> Option<&'static str> {
    ToolName::resolve(name).map(ToolName::name)
}

/// [`prepare`] on the blocking pool. Preparing touches the disk (paths are resolved
/// component by component, `Edit` and `Write` read the file for their preview diff), and
/// a slow disk or a huge file must not stall the runtime's two threads.
pub async fn prepare_off_runtime(
    ctx: &ToolContext,
    name: &str,
    args: &Value,
) -> Result<Prepared, ToolOutput> {
    let (ctx, name, args) = (ctx.clone(), name.to_string(), args.clone());
    tokio::task::spawn_blocking(move || prepare(&ctx, &name, &args))
        .await
        .unwrap_or_else(|e| Err(ToolOutput::error(format!("preparing the call failed: {e}"))))
}

/// Parses and validates a call. An `Err` is the observation to hand back to the model.
/// Blocking (it reads the disk): from async code use [`prepare_off_runtime`].
pub fn prepare(ctx: &ToolContext, name: &str, args: &Value) -> Result<Prepared, ToolOutput> {
    let Some(tool) = ToolName::resolve(name) else {
        return prepare_registered(ctx, name, args);
    };
    let args = args::normalize(args).map_err(ToolOutput::error)?;
    let (call, summary, access) = match tool {
        ToolName::RepoInfo => (Call::RepoInfo, tool.name().to_string(), Access::Read),
        ToolName::Glob => {
            let a = glob::GlobArgs::parse(ctx, &args)?;
            let s = a.summary();
            (Call::Glob(a), s, Access::Read)
        }
        ToolName::Read => {
            let a = read::ReadArgs::parse(ctx, &args)?;
            let s = a.summary();
            (Call::Read(a), s, Access::Read)
        }
        ToolName::Grep => {
            let a = grep::GrepArgs::parse(ctx, &args)?;
            let s = a.summary();
            (Call::Grep(a), s, Access::Read)
        }
        ToolName::Write => {
            let a = write::WriteArgs::parse(ctx, &args)?;
            let (s, access) = (a.summary(), a.access(ctx));
            (Call::Write(a), s, access)
        }
        ToolName::Edit => {
            let a = edit::EditArgs::parse(ctx, &args)?;
            let (s, access) = (a.summary(), a.access(ctx)?);
            (Call::Edit(a), s, access)
        }
        ToolName::Screenshot => {
            let a = screenshot::ScreenshotArgs::parse(ctx, &args)?;
            let (s, access) = (a.summary(), a.access());
            (Call::Screenshot(a), s, access)
        }
        ToolName::ProposePatch | ToolName::ApplyPatch => {
            let a = patch::tool::PatchArgs::parse(ctx, tool, &args)?;
            let (s, access) = (a.summary(), a.access());
            (Call::Patch(a), s, access)
        }
        ToolName::Skill
        | ToolName::Delegate
        | ToolName::LockPaths
        | ToolName::UnlockPaths
        | ToolName::TodoWrite => {
            let (call, summary) = SessionCall::parse(tool, &args)?;
            (Call::Session(call), summary, Access::Read)
        }
        ToolName::Bash => {
            let a = bash::BashArgs::parse(ctx, &args)?;
            let (s, access) = (a.summary(), a.access(ctx)?);
            (Call::Bash(a), s, access)
        }
        // Reading or stopping a command the session started touches nothing else.
        ToolName::BashOutput => {
            let a = background::OutputArgs::parse(&args)?;
            let s = a.summary();
            (Call::BashOutput(a), s, Access::Read)
        }
        ToolName::KillShell => {
            let a = background::KillArgs::parse(&args)?;
            let s = a.summary();
            (Call::KillShell(a), s, Access::Read)
        }
    };
    Ok(Prepared {
        tool: ToolId::Builtin(tool),
        summary,
        access,
        call,
    })
}

/// A call of a tool registered under exactly `name`.
fn prepare_registered(ctx: &ToolContext, name: &str, args: &Value) -> Result<Prepared, ToolOutput> {
    let Some(entry) = ctx.registry.get(name) else {
        let mut names: Vec<String> = all_tool_names().iter().map(|n| n.to_string()).collect();
        names.extend(ctx.registry.registered().into_iter().map(|e| e.spec.name));
        return Err(ToolOutput::error(format!(
            "unknown tool `{name}`; available tools: {}",
            names.join(", ")
        )));
    };
    let handler = entry.handler.clone();
    let args = args::normalize(args).map_err(ToolOutput::error)?;
    let summary = handler.summarize(name, &args)?;
    Ok(Prepared {
        tool: entry.id(),
        summary,
        access: Access::Registered {
            class: entry.class,
            hints: entry.hints.clone(),
            origin: entry.origin.clone(),
        },
        call: Call::Registered(RegisteredCall {
            name: name.to_string(),
            args,
            handler,
        }),
    })
}

/// Runs a prepared call. Dropping the future cancels it (a running command's whole process
/// group is killed).
pub async fn run(ctx: &ToolContext, prepared: &Prepared) -> ToolOutput {
    match &prepared.call {
        Call::RepoInfo => repo_info::run(ctx).await,
        Call::Glob(a) => a.run(ctx).await,
        Call::Read(a) => a.run(ctx).await,
        Call::Grep(a) => a.run(ctx).await,
        Call::Write(a) => a.run(ctx).await,
        Call::Edit(a) => a.run(ctx).await,
        Call::Bash(a) => a.run(ctx).await,
        Call::BashOutput(a) => a.run(ctx).await,
        Call::KillShell(a) => a.run(ctx).await,
        Call::Screenshot(a) => a.run(ctx).await,
        Call::Patch(a) => a.run(ctx).await,
        Call::Registered(call) => call.handler.run(&call.name, &call.args).await,
        // The session intercepts these before they get here (it owns the state they need).
        Call::Session(_) => {
            ToolOutput::error(format!("`{}` can only run inside a session", prepared.tool))
        }
    }
}

impl Prepared {
    /// The call when it is a `Read` of a whole file (no `line_range` or offset): what a
    /// curated read may shorten (`session::curate`).
    pub fn whole_read(&self) -> Option<&read::ReadArgs> {
        match &self.call {
            Call::Read(a) if a.start <= 1 && a.end.is_none() => Some(a),
            _ => None,
        }
    }

    /// The call when it is one of the session's own tools.
    pub fn session_call(&self) -> Option<&SessionCall> {
        match &self.call {
            Call::Session(c) => Some(c),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What a person approves is the whole call, with what a screen hides spelled out.
    #[test]
    fn approval_display_is_the_whole_call_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(&dir.path().canonicalize().unwrap());
        let command = format!("echo safe{}&& touch x\u{a0}y", " ".repeat(300));
        let bash = prepare(&ctx, "Bash", &json!({ "command": command })).unwrap();
        assert_eq!(
            bash.approval_display(),
            "Bash: echo safe␠×300&& touch x\\u{a0}y"
        );
        let path = "notes\u{202e}txt.sh";
        let write = prepare(&ctx, "Write", &json!({"path": path, "content": "x"})).unwrap();
        assert_eq!(write.approval_display(), "Write notes\\u{202e}txt.sh");
    }

    #[test]
    fn names_and_aliases_resolve() {
        assert_eq!(canonical_name("read_file"), Some("Read"));
        assert_eq!(canonical_name(" BASH "), Some("Bash"));
        assert_eq!(canonical_name("str_replace"), Some("Edit"));
        assert_eq!(canonical_name("launch_missiles"), None);
        let names: Vec<String> = specs().into_iter().map(|s| s.name).collect();
        assert_eq!(names, TOOL_NAMES);
    }

    /// The schemas ride along with every request; small local models cannot afford verbose
    /// ones. ~4 characters per token, and the system prompt needs most of the 2,500.
    /// (Bash's sandbox note and `dangerouslyDisableSandbox` took it from ~2,560 to ~2,660:
    /// a model that knows why a write failed does not retry it blindly. `propose_patch` and
    /// `apply_patch` took it to ~3,020.)
    #[test]
    fn schemas_stay_small() {
        let json = serde_json::to_string(&specs()).unwrap();
        assert!(
            json.len() < 3100,
            "tool schemas grew to {} chars",
            json.len()
        );
    }

    #[tokio::test]
    async fn prepare_then_run() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
        let ctx = ToolContext::new(&dir.path().canonicalize().unwrap());
        // Arguments sent as a JSON string, with an alias, under an alternative tool name.
        let prepared = prepare(&ctx, "read_file", &json!("{\"file\": \"a.txt\"}")).unwrap();
        assert_eq!(
            (prepared.tool.clone(), prepared.access.clone()),
            (ToolId::Builtin(ToolName::Read), Access::Read)
        );
        assert_eq!(prepared.summary, "Read a.txt");
        assert_eq!(run(&ctx, &prepared).await.model, "1\thello\n");

        let prepared = prepare(
            &ctx,
            "Edit",
            &json!({"path": "a.txt", "old": "hello", "new": "bye"}),
        )
        .unwrap();
        let Access::Write {
            rel, preview_diff, ..
        } = &prepared.access
        else {
            panic!("Edit should be a write");
        };
        assert_eq!(rel, "a.txt");
        assert!(preview_diff.as_deref().unwrap_or("").contains("+bye"));
        assert!(!run(&ctx, &prepared).await.is_error);

        let prepared = prepare(&ctx, "Bash", &json!({"cmd": "cat a.txt | wc -l"})).unwrap();
        let Access::Command { analysis, .. } = &prepared.access else {
            panic!("Bash should be a command");
        };
        assert!(analysis.is_read_only());
        assert_eq!(run(&ctx, &prepared).await.summary, "exit 0, 1 line");
    }

    /// Preparing an `Edit` reads the file for its preview; on a FIFO that read would wait
    /// for a writer that never comes (a `-p` run would never end). Every file tool refuses
    /// a FIFO when the call is prepared, at once. Should the refusal break, the test opens
    /// the FIFO's other end after a while, so that it fails instead of hanging.
    #[test]
    fn a_fifo_is_refused_when_a_call_is_prepared() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let fifo = root.join("pipe");
        guard::paths::mkfifo(&fifo);
        let ctx = ToolContext::new(&root);
        let (done, results) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for (tool, args) in [
                ("Edit", json!({"path": "pipe", "old": "old", "new": "new"})),
                ("Write", json!({"path": "pipe", "content": "x"})),
                ("Read", json!({"path": "pipe"})),
                ("Grep", json!({"query": "x", "path": "pipe"})),
                ("Glob", json!({"globs": ["*"], "path": "pipe"})),
            ] {
                let _ = done.send((tool, prepare(&ctx, tool, &args)));
            }
        });
        for _ in 0..5 {
            let Ok((tool, prepared)) = results.recv_timeout(std::time::Duration::from_secs(10))
            else {
                let _ = std::fs::write(&fifo, "old\n");
                panic!("preparing a call waited on the FIFO");
            };
            let err = prepared.unwrap_err();
            assert!(
                err.model.contains("a FIFO (named pipe)"),
                "{tool}: {}",
                err.model
            );
        }
    }

    #[test]
    fn bad_calls_become_observations() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let err = prepare(&ctx, "Frobnicate", &json!({})).unwrap_err();
        assert!(err.is_error && err.model.contains("available tools"));
        let err = prepare(&ctx, "Read", &json!([1])).unwrap_err();
        assert!(err.model.contains("JSON object"));
        let err = prepare(&ctx, "Bash", &json!({"cmd": "echo `id`"})).unwrap_err();
        assert!(err.model.contains("never runs"));
        let err = prepare(&ctx, "Write", &json!({"path": "../x", "content": ""})).unwrap_err();
        assert!(err.model.contains("outside"));
    }
}
