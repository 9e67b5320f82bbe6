//! `[heartbeat]`: `linggen serve` reads `HEARTBEAT.md` at this interval and runs what it
//! asks (see doc/background.md#heartbeat). Off unless `every` is set, and only from the
//! person's own configuration: a repository cannot make linggen call models on a timer.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

/// The heartbeat as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatSettings {
    pub every: Duration,
    /// The agent that runs it (default: the usual one).
    pub agent: Option<String>,
    /// The model: an id from `[[models]]`, `local` or `cloud`.
    pub model: Option<String>,
}

/// The table as written.
#[derive(Debug, Default, Deserialize)]
pub(super) struct HeartbeatSection {
    pub every: Option<Spanned<String>>,
    pub agent: Option<String>,
    pub model: Option<String>,
}

pub(super) const KEYS: &[&str] = &["every", "agent", "model"];

/// `30m`, `1h`, `90s`, `1h30m`, `2d`: a number and a unit, one or more times. At least a
/// second.
pub(in crate::config) fn parse_every(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let bad = || {
        format!(
            "every = \"{text}\": expected a duration such as \"30m\", \"2h\", \"1h30m\" or \"90s\" \
             (units s, m, h, d)"
        )
    };
    let mut secs: u64 = 0;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            ' ' => continue,
            _ => return Err(bad()),
        };
        let n: u64 = number.parse().map_err(|_| bad())?;
        secs = secs.saturating_add(n.saturating_mul(unit));
        number.clear();
    }
    if !number.is_empty() || secs == 0 {
        return Err(bad());
    }
    Ok(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_written() {
        assert_eq!(parse_every("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_every(" 1h30m "), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_every("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_every("1d"), Ok(Duration::from_secs(86_400)));
        for bad in ["", "30", "m", "0m", "5 minutes", "-1h"] {
            let err = parse_every(bad).unwrap_err();
            assert!(err.contains("expected a duration"), "{bad}: {err}");
        }
    }
}
