//! What stops a run that is going nowhere before `max_iters` does: the same call failing
//! again and again, steps that change no file (auto mode), and the `[auto]` wall-clock and
//! token budgets. Checked before every model call, so a limit costs no further request; the
//! run then ends `stopped`, with a message naming the limit (in `-p`, exit code 4).

use std::time::Instant;

use serde_json::Value;

use crate::config::{AutoSettings, TurnMode};

pub(crate) struct Watch<'a> {
    settings: &'a AutoSettings,
    mode: TurnMode,
    started: Instant,
    /// The last failing call (tool and arguments) and how many times in a row it failed.
    failing: Option<(String, u32)>,
    steps_without_change: u32,
    /// Files written by the run when the last step began.
    writes_seen: u32,
}

impl<'a> Watch<'a> {
    pub fn new(settings: &'a AutoSettings, mode: TurnMode) -> Watch<'a> {
        Watch {
            settings,
            mode,
            started: Instant::now(),
            failing: None,
            steps_without_change: 0,
            writes_seen: 0,
        }
    }

    /// Records how a call ended: identical failures in a row are counted; any success or
    /// another call starts over.
    pub fn call_ended(&mut self, tool: &str, args: &Value, failed: bool) {
        if !failed {
            self.failing = None;
            return;
        }
        let key = format!("{tool} {args}");
        match &mut self.failing {
            Some((last, count)) if *last == key => *count += 1,
            _ => self.failing = Some((key, 1)),
        }
    }

    /// Records a finished step (one model answer and what it did) given how many writes the
    /// run has made so far.
    pub fn step_ended(&mut self, writes: u32) {
        if writes > self.writes_seen {
            self.steps_without_change = 0;
            self.writes_seen = writes;
        } else {
            self.steps_without_change += 1;
        }
    }

    /// Which limit, if any, stops the run before its next model call. `tokens`: what the
    /// run's calls used so far (prompt plus answer).
    pub fn exceeded(&self, tokens: u64) -> Option<String> {
        let s = self.settings;
        if let Some((call, count)) = &self.failing
            && *count >= s.max_repeated_failures
        {
            return Some(format!(
                "stopped: the same call failed {count} times in a row ({}); the model is in a \
                 loop — change the task or the model (limit: [auto] max_repeated_failures = {})",
                crate::text::prefix_bytes(call, 160),
                s.max_repeated_failures
            ));
        }
        if self.mode == TurnMode::Auto && self.steps_without_change >= s.max_steps_without_change {
            return Some(format!(
                "stopped: {} steps in a row changed no file (limit: [auto] \
                 max_steps_without_change = {})",
                self.steps_without_change, s.max_steps_without_change
            ));
        }
        if let Some(minutes) = s.max_minutes {
            let elapsed = self.started.elapsed().as_secs_f64() / 60.0;
            if elapsed >= minutes {
                return Some(format!(
                    "stopped: the run took {elapsed:.1} minutes (limit: [auto] max_minutes = {minutes})"
                ));
            }
        }
        if let Some(max) = s.max_tokens
            && tokens >= max
        {
            return Some(format!(
                "stopped: the run used {tokens} tokens (limit: [auto] max_tokens = {max})"
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn five_identical_failures_in_a_row_stop_the_run() {
        let settings = AutoSettings::default();
        let mut watch = Watch::new(&settings, TurnMode::Chat);
        let args = json!({"path": "missing.rs"});
        for _ in 0..4 {
            watch.call_ended("Read", &args, true);
            assert_eq!(watch.exceeded(0), None);
        }
        // A success or another call in between starts the count over.
        watch.call_ended("Read", &json!({"path": "other.rs"}), true);
        for _ in 0..4 {
            watch.call_ended("Read", &args, true);
        }
        assert_eq!(watch.exceeded(0), None);
        watch.call_ended("Read", &args, true);
        let why = watch.exceeded(0).unwrap();
        assert!(why.contains("failed 5 times in a row"), "{why}");
        watch.call_ended("Read", &args, false);
        assert_eq!(watch.exceeded(0), None);
    }

    #[test]
    fn steps_without_a_change_stop_only_auto_mode() {
        let settings = AutoSettings {
            max_steps_without_change: 2,
            ..AutoSettings::default()
        };
        let mut auto = Watch::new(&settings, TurnMode::Auto);
        let mut chat = Watch::new(&settings, TurnMode::Chat);
        for watch in [&mut auto, &mut chat] {
            watch.step_ended(0);
            watch.step_ended(1);
            watch.step_ended(1);
            assert_eq!(watch.exceeded(0), None);
            watch.step_ended(1);
        }
        assert!(auto.exceeded(0).unwrap().contains("2 steps in a row"));
        assert_eq!(chat.exceeded(0), None);
    }

    #[test]
    fn the_budgets_name_their_limit() {
        let settings = AutoSettings {
            max_tokens: Some(1000),
            max_minutes: Some(0.0000001),
            ..AutoSettings::default()
        };
        let watch = Watch::new(&settings, TurnMode::Chat);
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(watch.exceeded(10).unwrap().contains("max_minutes"));
        let tokens_only = AutoSettings {
            max_tokens: Some(1000),
            ..AutoSettings::default()
        };
        let watch = Watch::new(&tokens_only, TurnMode::Chat);
        assert_eq!(watch.exceeded(999), None);
        assert!(watch.exceeded(1000).unwrap().contains("max_tokens = 1000"));
    }
}
