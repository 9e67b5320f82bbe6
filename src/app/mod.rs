//! Start-up wiring shared by the frontends: the workspace (configuration, trust, agents and
//! skills), the session database, the model, and a session (new or resumed) running with
//! its store writer. It knows no frontend: the terminal ([`crate::repl`]), `-p`
//! ([`crate::print`]) and the web server ([`crate::web`]) build on it, and [`crate::cli`]
//! picks one of them, so no two top-level modules import each other.

pub mod allocator;
pub mod attach;
pub mod carry;
pub mod hooks;
mod live;
pub mod mcp;
pub mod mcp_login;
pub mod mcp_serve;
mod models;
pub mod rewind;
mod runs;
pub mod schedule;
mod sessions;
pub mod share;
pub mod signals;
mod workspace;
pub mod worktree;

use std::path::PathBuf;

pub use live::{LiveSession, MirrorFeed, first_run_help, open_session};
pub use models::{answers as model_answers, list_models};
pub use runs::{list_runs, run_lines, show_run, tree_lines};
pub use sessions::{list_sessions, session_lines};
pub use workspace::{BuiltinClashes, LineReader, Workspace, load_workspace};

use crate::config::{ConfigError, FlagOverrides};
use crate::llm::router::ResolveError;
use crate::store::{LeaseError, StoreError};

/// Exit codes, documented in `doc/cli.md`.
pub mod exit {
    pub const SUCCESS: i32 = 0;
    /// Runtime failure: model unreachable, server error, database problem.
    pub const FAILURE: i32 = 1;
    /// Usage or configuration error.
    pub const USAGE: i32 = 2;
    /// `max_iters` reached before a final answer.
    pub const MAX_ITERS: i32 = 3;
    /// A limit stopped the run: a loop of failing calls, no progress, time or tokens.
    pub const STOPPED: i32 = 4;
    /// The task ran and its answer was printed, but the session could not be saved (a
    /// full disk, a read-only `$LINGGEN_HOME`): `--continue` will not find it.
    pub const NOT_SAVED: i32 = 5;
    /// Ended by SIGHUP (the terminal closed): 128 + 1.
    pub const HANGUP: i32 = 129;
    /// Interrupted (SIGINT).
    pub const INTERRUPTED: i32 = 130;
    /// Ended by SIGTERM: 128 + 15.
    pub const TERMINATED: i32 = 143;
}

/// The agent every session starts with unless `--agent` says otherwise.
pub const DEFAULT_AGENT: &str = "ling";

/// What a frontend starts from, as the command line gave it: where, with which settings,
/// and which session. A frontend that starts another session (`/clear`, `/resume`) changes
/// its copy.
#[derive(Debug, Clone)]
pub struct Start {
    /// `--root`; `None`: found from the current directory.
    pub root: Option<PathBuf>,
    /// Settings the flags set for this process (they win over the config files).
    pub overrides: FlagOverrides,
    /// `--agent`.
    pub agent: Option<String>,
    /// `--resume ID`.
    pub resume: Option<String>,
    /// `--continue`.
    pub continue_session: bool,
    /// `--mode`: every turn's mode (else each agent's own, else chat).
    pub mode: Option<crate::config::TurnMode>,
    /// How a line the person posts is read (`-p`'s task, a browser's message): the core's
    /// line grammar with the shell's commands, supplied by whoever wires the frontends.
    pub line: LineReader,
    /// Which skills and commands the shell's built-in commands shadow, for the warnings.
    pub builtin_clashes: BuiltinClashes,
    /// The session replaces one the person cleared (`/clear`): `SessionStart` hooks hear
    /// `clear`.
    pub cleared: bool,
    /// `--attach`: the shell attaches to the workspace's running `linggen serve` instead of
    /// running a session itself.
    pub attach: bool,
    /// MCP servers the frontend adds for this session (an editor's, from ACP's
    /// `session/new`), beside the configured ones.
    pub editor_mcp: Vec<crate::mcp::config::ServerConfig>,
    /// The editor's buffers, for the file tools of an editor's session (ACP's `fs/*`).
    pub editor_files: Option<std::sync::Arc<dyn crate::tools::editor_files::EditorFiles>>,
}

/// A start-up failure with the exit code it maps to.
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl From<ConfigError> for Failure {
    fn from(e: ConfigError) -> Self {
        Failure {
            code: exit::USAGE,
            message: e.to_string(),
        }
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        let code = match e {
            StoreError::NoSuchSession(_) | StoreError::Ambiguous(_) => exit::USAGE,
            _ => exit::FAILURE,
        };
        Failure {
            code,
            message: e.to_string(),
        }
    }
}

impl From<LeaseError> for Failure {
    fn from(e: LeaseError) -> Self {
        Failure {
            code: exit::FAILURE,
            message: e.to_string(),
        }
    }
}

impl From<ResolveError> for Failure {
    fn from(e: ResolveError) -> Self {
        match e {
            ResolveError::Config(e) => e.into(),
            ResolveError::Unavailable(e) => Failure {
                code: exit::FAILURE,
                message: e.to_string(),
            },
        }
    }
}

/// Prints the lines on stdout, or the failure on stderr; the exit code.
pub(super) fn print_lines(lines: Result<Vec<String>, Failure>) -> i32 {
    match lines {
        Ok(lines) => {
            for line in lines {
                println!("{line}");
            }
            exit::SUCCESS
        }
        Err(f) => {
            eprintln!("linggen: error: {}", f.message);
            f.code
        }
    }
}

/// Runs start-up file and SQLite work on the blocking pool: the runtime's two threads
/// never wait on the disk.
pub async fn off_runtime<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, Failure> + Send + 'static,
) -> Result<T, Failure> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        Err(Failure {
            code: exit::FAILURE,
            message: format!("opening the session failed: {e}"),
        })
    })
}
