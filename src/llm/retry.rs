//! When to try a request again. Local servers drop connections while a model loads and
//! hosted APIs answer 429 under load; both usually succeed a moment later. Retries happen
//! only before any response body was consumed (the caller guarantees that), so a retry can
//! never duplicate text the person has already seen.

use std::time::Duration;

use super::error::ErrorKind;

tokio::task_local! {
    /// Set while a call has another model to fall back to: a server that refuses the
    /// connection is then given up at once instead of after the retries, which are there for
    /// a server that is starting and would only delay the fallback by seconds.
    pub static FALLBACK_READY: bool;
}

/// A retry about to wait: which attempt comes next, after how long, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrying {
    /// The attempt that follows the wait (2 for the first retry).
    pub attempt: u32,
    pub max_attempts: u32,
    pub delay: Duration,
    /// What failed, in a few words (`429 rate limited`, `cannot connect`).
    pub reason: String,
}

/// Told of each retry before its wait, so the person sees why nothing comes yet.
pub type RetryNotice = std::sync::Arc<dyn Fn(Retrying) + Send + Sync>;

tokio::task_local! {
    /// Set by the session around a model call (see [`notify`]).
    pub static ON_RETRY: RetryNotice;
}

/// Tells whoever set [`ON_RETRY`] for this task; nobody, outside a session's call.
pub fn notify(retrying: Retrying) {
    let _ = ON_RETRY.try_with(|notice| notice(retrying));
}

/// `kind` in a few words for a retry notice.
pub fn reason(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::Connect(_) => "cannot connect".into(),
        ErrorKind::Http {
            status, message, ..
        } => {
            let message: String = message
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(80)
                .collect();
            format!("{status} {message}").trim_end().to_string()
        }
        other => format!("{other:?}").chars().take(80).collect(),
    }
}

/// Whether the current call may give up a refused connection at once (see
/// [`FALLBACK_READY`]).
pub fn fallback_ready() -> bool {
    FALLBACK_READY.try_with(|ready| *ready).unwrap_or(false)
}

/// Bounded exponential backoff. The defaults make at most 4 attempts, waiting 0.5 s, 1 s
/// and 2 s between them: long enough to ride out a model load or a short overload, short
/// enough that a server that is really down is reported within a few seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts including the first one; 1 disables retries.
    pub max_attempts: u32,
    /// Wait before the second attempt; doubled for each further one.
    pub base_delay: Duration,
    /// Upper bound of the exponential wait.
    pub max_backoff: Duration,
    /// Upper bound of a server's `Retry-After`, so a hostile or confused header cannot
    /// park the session for an hour.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries (discovery requests, tests).
    pub fn none() -> Self {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }

    /// How long to wait before the next attempt, after `attempts_made` attempts failed with
    /// `kind`; `None` means give up and report `kind`.
    pub fn delay_before_retry(&self, attempts_made: u32, kind: &ErrorKind) -> Option<Duration> {
        if attempts_made >= self.max_attempts || !kind.is_retryable() {
            return None;
        }
        if matches!(kind, ErrorKind::Connect(_)) && fallback_ready() {
            return None;
        }
        if let ErrorKind::Http {
            retry_after: Some(wait),
            ..
        } = kind
        {
            return Some((*wait).min(self.max_retry_after));
        }
        Some(self.backoff(attempts_made))
    }

    /// `base_delay * 2^(attempts_made - 1)`, capped at `max_backoff`.
    fn backoff(&self, attempts_made: u32) -> Duration {
        let doublings = attempts_made.saturating_sub(1).min(16);
        self.base_delay
            .saturating_mul(1u32 << doublings)
            .min(self.max_backoff)
    }
}

/// Parses a `Retry-After` header given in seconds (`"7"`, also `"1.5"`). The HTTP-date form
/// is not supported: no LLM API we know sends it, and ignoring it falls back to backoff.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    if !secs.is_finite() || secs < 0.0 {
        return None;
    }
    // Anything beyond a day is nonsense for this purpose; clamp before converting so the
    // conversion cannot overflow.
    Some(Duration::from_secs_f64(secs.min(86_400.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, retry_after: Option<Duration>) -> ErrorKind {
        ErrorKind::Http {
            status,
            message: "busy".into(),
            retry_after,
        }
    }

    #[test]
    fn backoff_doubles_and_stops_after_the_last_attempt() {
        let policy = RetryPolicy::default();
        let kind = ErrorKind::Connect("refused".into());
        let delays: Vec<_> = (1..=5)
            .map(|n| policy.delay_before_retry(n, &kind))
            .collect();
        assert_eq!(
            delays,
            vec![
                Some(Duration::from_millis(500)),
                Some(Duration::from_secs(1)),
                Some(Duration::from_secs(2)),
                None,
                None
            ]
        );
    }

    #[test]
    fn backoff_is_bounded_even_with_many_attempts() {
        let policy = RetryPolicy {
            max_attempts: 100,
            ..RetryPolicy::default()
        };
        let kind = http(503, None);
        assert_eq!(
            policy.delay_before_retry(60, &kind),
            Some(Duration::from_secs(8))
        );
    }

    #[test]
    fn retries_429_and_5xx_but_not_other_failures() {
        let policy = RetryPolicy::default();
        assert!(policy.delay_before_retry(1, &http(429, None)).is_some());
        assert!(policy.delay_before_retry(1, &http(500, None)).is_some());
        assert!(policy.delay_before_retry(1, &http(503, None)).is_some());
        assert!(policy.delay_before_retry(1, &http(400, None)).is_none());
        assert!(policy.delay_before_retry(1, &http(401, None)).is_none());
        assert!(policy.delay_before_retry(1, &http(404, None)).is_none());
        let timeout = ErrorKind::Timeout(Duration::from_secs(1));
        assert!(policy.delay_before_retry(1, &timeout).is_none());
        let cut = ErrorKind::Disconnected("eof".into());
        assert!(policy.delay_before_retry(1, &cut).is_none());
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.delay_before_retry(1, &http(429, Some(Duration::from_secs(7)))),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            policy.delay_before_retry(1, &http(429, Some(Duration::from_secs(3600)))),
            Some(Duration::from_secs(60))
        );
    }

    #[test]
    fn retry_after_parsing() {
        assert_eq!(parse_retry_after("7"), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after(" 0 "), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_retry_after("-3"), None);
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("NaN"), None);
        assert_eq!(parse_retry_after("1e30"), Some(Duration::from_secs(86_400)));
    }

    #[tokio::test]
    async fn a_refused_connection_is_not_retried_when_another_model_waits() {
        let policy = RetryPolicy::default();
        let refused = ErrorKind::Connect("refused".into());
        let busy = ErrorKind::Http {
            status: 503,
            message: "loading".into(),
            retry_after: None,
        };
        let (refused_now, busy_now) = FALLBACK_READY
            .scope(true, async {
                (
                    policy.delay_before_retry(1, &refused),
                    policy.delay_before_retry(1, &busy),
                )
            })
            .await;
        assert_eq!(refused_now, None);
        assert!(
            busy_now.is_some(),
            "5xx is still retried before falling back"
        );
        assert!(policy.delay_before_retry(1, &refused).is_some());
    }

    #[test]
    fn none_never_retries() {
        let kind = ErrorKind::Connect("refused".into());
        assert_eq!(RetryPolicy::none().delay_before_retry(1, &kind), None);
    }
}
