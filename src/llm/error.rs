//! Provider failures. Every variant renders as one line that names the model and its URL,
//! because that is what a person needs to fix it ("is the server running?", "wrong key?").

use std::fmt;
use std::time::Duration;

/// What went wrong, independent of which model it was.
#[derive(Debug, Clone, PartialEq)]
pub enum ErrorKind {
    /// TCP connect failed (server down, wrong port, DNS).
    Connect(String),
    /// No bytes arrived for this long.
    Timeout(Duration),
    /// The answer had started and then nothing arrived for this long (`[llm] stall_secs`):
    /// a dropped stream whose connection happens to be still open.
    Stalled(Duration),
    /// The server answered with an HTTP error status; `message` is the server's own text.
    Http {
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    /// The response did not parse as the protocol says it should.
    Malformed(String),
    /// The connection closed before the response was complete.
    Disconnected(String),
    /// The server reported an error inside an otherwise well-formed stream.
    Server(String),
    /// Nothing to talk to: no model configured and none discovered.
    NoModel(String),
}

impl ErrorKind {
    /// Whether trying again later can help. Only failures before any output was consumed are
    /// retried by the caller, so a retry never duplicates streamed text.
    pub fn is_retryable(&self) -> bool {
        match self {
            ErrorKind::Connect(_) => true,
            // An exhausted quota does not come back within seconds; another model may help
            // (see `routing::falls_back`), waiting does not.
            ErrorKind::Http {
                status, message, ..
            } => (*status == 429 || *status >= 500) && !super::routing::is_quota(message),
            _ => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LlmError {
    pub model: String,
    pub url: String,
    pub kind: ErrorKind,
}

impl LlmError {
    pub fn new(model: &str, url: &str, kind: ErrorKind) -> Self {
        LlmError {
            model: model.to_string(),
            url: url.to_string(),
            kind,
        }
    }
}

impl fmt::Display for LlmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (model, url) = (&self.model, &self.url);
        match &self.kind {
            ErrorKind::Connect(detail) => write!(
                f,
                "cannot reach model `{model}` at {url}: {detail} (is the server running?)"
            ),
            ErrorKind::Timeout(d) => write!(
                f,
                "model `{model}` at {url} sent nothing for {} s; giving up",
                d.as_secs()
            ),
            ErrorKind::Stalled(d) => write!(
                f,
                "model `{model}` at {url} went silent mid-response: nothing for {} s \
                 ([llm] stall_secs)",
                d.as_secs()
            ),
            ErrorKind::Http {
                status, message, ..
            } => {
                let hint = match status {
                    401 | 403 => " (check the API key named by `api_key_env`)",
                    404 => " (check the model name and the `url`)",
                    _ => "",
                };
                write!(
                    f,
                    "model `{model}` at {url} answered HTTP {status}: {message}{hint}"
                )
            }
            ErrorKind::Malformed(detail) => {
                write!(
                    f,
                    "model `{model}` at {url} sent a malformed response: {detail}"
                )
            }
            ErrorKind::Disconnected(detail) => write!(
                f,
                "model `{model}` at {url} closed the connection mid-response: {detail}"
            ),
            ErrorKind::Server(message) => {
                write!(f, "model `{model}` at {url} reported an error: {message}")
            }
            ErrorKind::NoModel(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for LlmError {}

impl LlmError {
    /// What went wrong without naming the model (for messages that name it themselves).
    pub fn kind_summary(&self) -> String {
        match &self.kind {
            ErrorKind::Connect(d) | ErrorKind::Malformed(d) | ErrorKind::Disconnected(d) => {
                d.clone()
            }
            ErrorKind::Timeout(d) => format!("no answer within {} s", d.as_secs()),
            ErrorKind::Stalled(d) => format!("nothing for {} s mid-answer", d.as_secs()),
            ErrorKind::Http {
                status, message, ..
            } => format!("HTTP {status}: {message}"),
            ErrorKind::Server(m) | ErrorKind::NoModel(m) => m.clone(),
        }
    }
}
