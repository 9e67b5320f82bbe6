//! When a schedule runs: a standard five-field cron expression (minute, hour, day of month,
//! month, day of week) read by `croner`, in the machine's local time, and the clock the
//! scheduler reads.

use chrono::{Local, TimeZone as _};

/// A cron expression that was read.
#[derive(Debug, Clone)]
pub struct When(croner::Cron);

/// Why an expression is not one linggen runs.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CronError {
    #[error(
        "`{expr}` has {fields} field(s); a schedule takes 5: minute hour day-of-month month \
         day-of-week, e.g. \"*/15 * * * *\" (every 15 minutes) or \"0 9 * * 1-5\" (9:00 on \
         weekdays)"
    )]
    Fields { expr: String, fields: usize },
    #[error("`{expr}` is not a cron expression: {why}; e.g. \"30 2 * * *\" is 2:30 every night")]
    Invalid { expr: String, why: String },
    #[error("`{expr}` never matches a real date (such as \"0 0 30 2 *\", February 30)")]
    Never { expr: String },
}

impl When {
    /// Reads `expr`: exactly five fields, and one that matches some date.
    pub fn parse(expr: &str) -> Result<When, CronError> {
        let expr = expr.trim();
        let fields = expr.split_whitespace().count();
        if fields != 5 {
            return Err(CronError::Fields {
                expr: expr.to_string(),
                fields,
            });
        }
        let cron = croner::Cron::new(expr)
            .parse()
            .map_err(|e| CronError::Invalid {
                expr: expr.to_string(),
                why: e.to_string(),
            })?;
        let when = When(cron);
        if when.next_after(now_secs()).is_none() {
            return Err(CronError::Never {
                expr: expr.to_string(),
            });
        }
        Ok(when)
    }

    /// The first time it matches strictly after `after` (unix seconds), in local time.
    pub fn next_after(&self, after: i64) -> Option<i64> {
        let start = Local.timestamp_opt(after, 0).single()?;
        self.0
            .find_next_occurrence(&start, false)
            .ok()
            .map(|t| t.timestamp())
    }
}

/// Unix seconds now, as the scheduler sees it. `LINGGEN_CLOCK_SKEW_SECS` moves it (tests
/// use it to reach a schedule's minute without waiting for it; see doc/testing.md).
pub fn now_secs() -> i64 {
    let real = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let skew = std::env::var("LINGGEN_CLOCK_SKEW_SECS")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or(0);
    real + skew
}

/// `2026-11-28 14:05` in local time, for people.
pub fn local_time(secs: i64) -> String {
    match Local.timestamp_opt(secs, 0).single() {
        Some(t) => t.format("%Y-%m-%d %H:%M").to_string(),
        None => format!("@{secs}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_fields_or_a_clear_error() {
        let every_15 = When::parse("*/15 * * * *").unwrap();
        let t = Local
            .with_ymd_and_hms(2026, 11, 28, 10, 7, 30)
            .unwrap()
            .timestamp();
        let next = every_15.next_after(t).unwrap();
        assert_eq!(local_time(next), "2026-11-28 10:15");
        // Strictly after: a time that matches gives the following one.
        assert_eq!(
            local_time(every_15.next_after(next).unwrap()),
            "2026-11-28 10:30"
        );

        let err = When::parse("* * * *").unwrap_err().to_string();
        assert!(err.contains("has 4 field(s); a schedule takes 5"), "{err}");
        let err = When::parse("0 0 * * * *").unwrap_err().to_string();
        assert!(err.contains("has 6 field(s)"), "{err}");
        let err = When::parse("61 * * * *").unwrap_err().to_string();
        assert!(
            err.starts_with("`61 * * * *` is not a cron expression"),
            "{err}"
        );
        let err = When::parse("0 0 30 2 *").unwrap_err().to_string();
        assert!(err.contains("never matches"), "{err}");
    }

    #[test]
    fn weekdays_and_names_read_as_cron_does() {
        let weekdays = When::parse("0 9 * * mon-fri").unwrap();
        // Saturday 28 November 2026: the next weekday 9:00 is Monday's.
        let t = Local
            .with_ymd_and_hms(2026, 11, 28, 12, 0, 0)
            .unwrap()
            .timestamp();
        assert_eq!(
            local_time(weekdays.next_after(t).unwrap()),
            "2026-11-30 09:00"
        );
    }
}
