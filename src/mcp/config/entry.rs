//! What the readers of each file share: where the person and the workspace are, what they
//! collect, and why an entry is skipped.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::ServerConfig;
use crate::mcp::names::NameError;

/// What the readers share: where the person and the workspace are, and the environment.
pub(super) struct Context<'a> {
    pub home_dir: &'a Path,
    pub root: &'a Path,
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

impl Context<'_> {
    /// A server's working folder: `~/…` under the home, a relative one under the root
    /// (where linggen runs), an absolute one as written.
    pub fn folder(&self, text: &str) -> PathBuf {
        match text.strip_prefix('~') {
            Some("") => self.home_dir.to_path_buf(),
            Some(rest) if rest.starts_with('/') => self.home_dir.join(&rest[1..]),
            _ => self.root.join(text),
        }
    }
}

/// What the readers collect, in any order: `load` sorts them by precedence.
#[derive(Default)]
pub(super) struct Found {
    pub servers: Vec<ServerConfig>,
    pub warnings: Vec<String>,
}

impl Found {
    /// Says in one line why the entry at `file:line` was skipped.
    pub fn skip(&mut self, file: &Path, line: Option<usize>, name: &str, why: EntryError) {
        self.warnings.push(format!(
            "{}: MCP server `{name}` skipped: {why}",
            at(file, line)
        ));
    }
}

pub(super) type EntryResult = Result<ServerConfig, EntryError>;

/// Why one server's entry was skipped. The messages never hold a value that came from
/// the environment: a URL is shown as written, before `${VAR}` expansion.
#[derive(Debug, thiserror::Error)]
pub(super) enum EntryError {
    #[error("{0}")]
    Name(#[from] NameError),
    #[error("the entry must be a table of settings ({{…}} in JSON)")]
    NotATable,
    #[error("`{key}` must be {expected}")]
    Type {
        key: &'static str,
        expected: &'static str,
    },
    #[error("{0}")]
    Shape(String),
    #[error("it needs `command` (a program to start) or `url` (a server to reach)")]
    NoTransport,
    #[error("it has both `command` and `url`; keep the one you mean")]
    BothTransports,
    #[error("`{key}` only applies to a server {applies}; remove it")]
    Misplaced {
        key: &'static str,
        applies: &'static str,
    },
    #[error("`{0}` is empty")]
    Empty(&'static str),
    #[error("url \"{0}\": expected an http:// or https:// URL")]
    Url(String),
    #[error("`{key}` = {value}: expected a positive number of {unit}")]
    Timeout {
        key: &'static str,
        value: String,
        unit: &'static str,
    },
    #[error("\"type\": \"{0}\" is not known: use \"stdio\", \"http\" or \"sse\"")]
    UnknownType(String),
    #[error(
        "it has a `url` but no \"type\": add \"type\": \"http\" (or \"sse\" for an SSE-only \
         server), as Claude Code also requires"
    )]
    UrlWithoutType,
    #[error("{}", missing_variables(.0))]
    MissingVariables(Vec<String>),
}

impl EntryError {
    /// The key the error is about, to point at its line rather than the entry's.
    pub fn key(&self) -> Option<&'static str> {
        match self {
            EntryError::Type { key, .. }
            | EntryError::Misplaced { key, .. }
            | EntryError::Timeout { key, .. }
            | EntryError::Empty(key) => Some(key),
            EntryError::Url(_) => Some("url"),
            EntryError::UnknownType(_) => Some("type"),
            _ => None,
        }
    }
}

pub(super) const STARTED: &str = "started with `command`";
pub(super) const REACHED: &str = "reached by `url`";

fn missing_variables(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    let (subject, verb) = match names.len() {
        1 => ("environment variable", "is"),
        _ => ("environment variables", "are"),
    };
    format!(
        "{subject} {} {verb} not set and the file gives no default (`${{NAME:-default}}`); \
         set {} before starting linggen",
        quoted.join(", "),
        if names.len() == 1 { "it" } else { "them" }
    )
}

/// A timeout in seconds: absent is `default`; zero, negative or not a number is refused.
pub(super) fn seconds(
    key: &'static str,
    value: Option<f64>,
    default: Duration,
) -> Result<Duration, EntryError> {
    let Some(secs) = value else {
        return Ok(default);
    };
    let refused = || EntryError::Timeout {
        key,
        value: secs.to_string(),
        unit: "seconds",
    };
    if !(secs.is_finite() && secs > 0.0) {
        return Err(refused());
    }
    Duration::try_from_secs_f64(secs).map_err(|_| refused())
}

/// The first of `keys` that is set, as an error: it belongs to the other kind of server.
pub(super) fn misplaced(
    keys: &[(&'static str, bool)],
    applies: &'static str,
) -> Result<(), EntryError> {
    match keys.iter().find(|(_, set)| *set) {
        Some((key, _)) => Err(EntryError::Misplaced { key, applies }),
        None => Ok(()),
    }
}

/// `written` is how the file spells the URL, shown in the error instead of `url`, which may
/// hold an expanded secret.
pub(super) fn check_url(url: &str, written: &str) -> Result<(), EntryError> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(EntryError::Url(written.to_string()))
    }
}

pub(super) fn at(file: &Path, line: Option<usize>) -> String {
    match line {
        Some(line) => format!("{}:{line}", file.display()),
        None => file.display().to_string(),
    }
}

pub(super) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// A file's text, `None` when it does not exist; any other failure is a warning.
pub(super) fn read_text(path: &Path, warnings: &mut Vec<String>) -> Option<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            warnings.push(format!(
                "{}: cannot read it ({e}); its MCP servers are not loaded",
                path.display()
            ));
            None
        }
    }
}

pub(super) fn same_file(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
}
