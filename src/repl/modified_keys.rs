//! Shift+Enter and Ctrl+Enter, where the terminal reports them apart from Enter.
//!
//! While a line is read the shell asks for xterm's modifyOtherKeys (`tty::report_modified_keys`).
//! A terminal that honours it reports a modified key in one of two forms: xterm's
//! `CSI 27 ; modifiers ; code ~`, or the `CSI code ; modifiers u` that tmux (3.3) and the kitty
//! protocol send. rustyline 19 parses neither: it reads a prefix as an unknown sequence — all
//! of `CSI 13;2u`, but only `CSI 27;2;` or `CSI 9` of the others, whose rest it would type
//! into the line. It does say which sequence it did not know, in its debug log; [`listen`]
//! keeps that one message, so the handler for the unknown sequence knows what it was, and
//! the characters that finish a cut-short report are taken here instead of typed. Enter with
//! a modifier is a new line; any other modified key does nothing (the shell has no use for
//! Ctrl+Tab and the like, and typing its code would be worse).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustyline::Cmd;

/// rustyline's log message for a sequence it did not know, before the sequence.
const UNKNOWN_PREFIX: &str = "unsupported esc sequence: \\E[";

/// The last sequence rustyline did not know, as it logged it (after `CSI`).
static HEARD: Mutex<Option<String>> = Mutex::new(None);
/// Whether [`listen`] installed the listener (another logger may have come first).
static LISTENING: AtomicBool = AtomicBool::new(false);

/// Listens to rustyline's debug log for the sequences it does not know. Only the shell calls
/// it; the log crate's other messages (from `ignore`, rustls, …) reach the listener and are
/// dropped unformatted.
pub fn listen() {
    static LISTENER: Listener = Listener;
    if log::set_logger(&LISTENER).is_ok() {
        log::set_max_level(log::LevelFilter::Debug);
        LISTENING.store(true, Ordering::Relaxed);
    }
}

struct Listener;

impl log::Log for Listener {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.target() == "rustyline"
    }

    fn log(&self, record: &log::Record) {
        if record.target() != "rustyline" {
            return;
        }
        // rustyline logs a few lines for every key; only the one wanted is written out.
        let mut after = AfterPrefix {
            prefix: UNKNOWN_PREFIX,
            rest: String::new(),
        };
        if std::fmt::write(&mut after, *record.args()).is_ok() && after.prefix.is_empty() {
            // Some branches log a character with its quotes (`'9'`).
            *crate::sync::lock(&HEARD) = Some(after.rest.replace('\'', ""));
        }
    }

    fn flush(&self) {}
}

/// Formats a message only as far as it starts with `prefix` (it fails at the first
/// difference), keeping what follows.
struct AfterPrefix {
    prefix: &'static str,
    rest: String,
}

impl std::fmt::Write for AfterPrefix {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let n = self.prefix.len().min(s.len());
        if self.prefix.as_bytes()[..n] != s.as_bytes()[..n] {
            return Err(std::fmt::Error);
        }
        // The prefix is ASCII, so `n` is on a character boundary of `s` too.
        self.prefix = &self.prefix[n..];
        self.rest.push_str(&s[n..]);
        Ok(())
    }
}

/// A report cut short: the parameters read so far, and when the last came.
struct Pending {
    at: Instant,
    params: String,
}

/// What the editor's handlers share (see [`ModifiedKeys::unknown_sequence`] and
/// [`ModifiedKeys::feed`]).
#[derive(Clone, Default)]
pub struct ModifiedKeys(Arc<Mutex<Option<Pending>>>);

/// The rest of a sequence arrives with it, within microseconds, so only characters within
/// this long of the last one continue it: a digit typed by hand after an unknown key is
/// typed as always.
const TAIL_WINDOW: Duration = Duration::from_millis(super::editor::ESC_TIMEOUT_MS as u64);
/// The longest parameters a report carries (`27;16;1114111`, with room).
const LONGEST_PARAMS: usize = 24;

impl ModifiedKeys {
    /// rustyline read a sequence it did not know: a whole report is acted on; one cut short
    /// waits for its rest; any other is ignored, as rustyline would.
    pub fn unknown_sequence(&self) -> Cmd {
        let mut pending = crate::sync::lock(&self.0);
        *pending = None;
        let heard = crate::sync::lock(&HEARD).take();
        let params = match heard {
            Some(sequence) if ends_a_sequence(&sequence) => return command(&sequence),
            Some(sequence) => sequence,
            // Not heard (another logger, or a branch that does not log): what follows may
            // still end a report.
            None if !LISTENING.load(Ordering::Relaxed) => String::new(),
            None => return Cmd::Noop,
        };
        *pending = Some(Pending {
            at: Instant::now(),
            params,
        });
        Cmd::Noop
    }

    /// A typed character: the rest of a report cut short, when one waits (`Some`: what to
    /// do instead of typing it), else `None`.
    pub fn feed(&self, c: char) -> Option<Cmd> {
        let mut slot = crate::sync::lock(&self.0);
        let pending = slot.take()?;
        let late = pending.at.elapsed() >= TAIL_WINDOW;
        // Without the head, only a code can follow (xterm's form, cut after `27;m;`).
        let no_code = pending.params.is_empty() && !c.is_ascii_digit();
        if late || no_code || pending.params.len() >= LONGEST_PARAMS {
            return None;
        }
        let params = pending.params + c.encode_utf8(&mut [0; 4]);
        if ends_a_sequence(&params) {
            return Some(command(&params));
        }
        if !(c.is_ascii_digit() || c == ';' || c == ':') {
            return None;
        }
        *slot = Some(Pending {
            at: Instant::now(),
            params,
        });
        Some(Cmd::Noop)
    }
}

/// Whether `sequence` ends with a final byte (a letter or `~`).
fn ends_a_sequence(sequence: &str) -> bool {
    sequence
        .chars()
        .last()
        .is_some_and(|c| c == '~' || c.is_ascii_alphabetic())
}

/// What a whole sequence does: a new line for Enter with a modifier, nothing otherwise.
fn command(sequence: &str) -> Cmd {
    if Report::parse(sequence).is_some_and(|report| report.is_modified_enter()) {
        Cmd::Newline
    } else {
        Cmd::Noop
    }
}

/// A modified key's report: the key's code and the modifiers (xterm's encoding: one plus
/// the bits of Shift 1, Alt 2, Ctrl 4).
#[derive(Debug, PartialEq, Eq)]
struct Report {
    code: u32,
    modifiers: u32,
}

/// The terminal's code for Enter.
const ENTER: u32 = 13;

impl Report {
    /// `code;modifiers u`, or `27;modifiers;code ~`, after `CSI`; a report whose head was
    /// not heard reads as `code ~`.
    fn parse(sequence: &str) -> Option<Report> {
        let last = sequence.chars().last()?;
        let body = &sequence[..sequence.len() - last.len_utf8()];
        // A parameter may carry sub-parameters after `:` (the kitty protocol's alternate keys).
        let params: Vec<u32> = body
            .split(';')
            .map(|param| param.split(':').next().unwrap_or("").parse().ok())
            .collect::<Option<_>>()?;
        let (code, modifiers) = match (last, params.as_slice()) {
            ('u', [code]) => (*code, 1),
            ('u', [code, modifiers, ..]) => (*code, *modifiers),
            ('~', [27, modifiers, code]) => (*code, *modifiers),
            // The rest of xterm's form after a head that was not heard.
            ('~', [code]) => (*code, 2),
            _ => return None,
        };
        Some(Report { code, modifiers })
    }

    fn is_modified_enter(&self) -> bool {
        self.code == ENTER && self.modifiers > 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_in_both_forms_read_the_key_and_its_modifiers() {
        let shift_enter = Report {
            code: 13,
            modifiers: 2,
        };
        assert_eq!(Report::parse("13;2u"), Some(shift_enter));
        assert_eq!(
            Report::parse("27;5;13~"),
            Some(Report {
                code: 13,
                modifiers: 5
            })
        );
        assert_eq!(
            Report::parse("9;5:1u"),
            Some(Report {
                code: 9,
                modifiers: 5
            })
        );
        // Other sequences rustyline does not know are not reports.
        assert_eq!(Report::parse("15;2~"), None);
        assert_eq!(Report::parse("[A"), None);
        assert_eq!(Report::parse("200;x~"), None);
        assert!(!Report::parse("13u").is_some_and(|r| r.is_modified_enter()));
    }

    #[test]
    fn a_report_cut_short_is_finished_by_the_characters_that_follow() {
        let keys = ModifiedKeys::default();
        *crate::sync::lock(&keys.0) = Some(Pending {
            at: Instant::now(),
            params: "27;2;".into(),
        });
        assert_eq!(keys.feed('1'), Some(Cmd::Noop));
        assert_eq!(keys.feed('3'), Some(Cmd::Noop));
        assert_eq!(keys.feed('~'), Some(Cmd::Newline));
        // Nothing waits any more: the next character is typed.
        assert_eq!(keys.feed('1'), None);
        // A head not heard: a code may follow, a letter is typed.
        keys.unknown_sequence_unheard();
        assert_eq!(keys.feed('s'), None);
        keys.unknown_sequence_unheard();
        assert_eq!(keys.feed('1'), Some(Cmd::Noop));
        assert_eq!(keys.feed('3'), Some(Cmd::Noop));
        assert_eq!(keys.feed('~'), Some(Cmd::Newline));
    }

    impl ModifiedKeys {
        fn unknown_sequence_unheard(&self) {
            *crate::sync::lock(&self.0) = Some(Pending {
                at: Instant::now(),
                params: String::new(),
            });
        }
    }

    #[test]
    fn only_the_unknown_sequence_message_is_kept() {
        let keep = |args: std::fmt::Arguments| {
            let mut after = AfterPrefix {
                prefix: UNKNOWN_PREFIX,
                rest: String::new(),
            };
            (std::fmt::write(&mut after, args).is_ok() && after.prefix.is_empty())
                .then_some(after.rest)
        };
        let (seq2, seq3, seq5, seq6) = ('1', '3', '2', 'u');
        assert_eq!(
            keep(format_args!(
                "unsupported esc sequence: \\E[{seq2}{seq3};{seq5}{seq6}"
            )),
            Some("13;2u".into())
        );
        assert_eq!(keep(format_args!("c: {seq2:?} => key: {seq6:?}")), None);
        assert_eq!(keep(format_args!("unsupported")), None);
        assert_eq!(keep(format_args!("é unsupported esc sequence")), None);
    }

    #[test]
    fn a_late_character_is_typed() {
        let keys = ModifiedKeys::default();
        *crate::sync::lock(&keys.0) = Some(Pending {
            at: Instant::now() - TAIL_WINDOW,
            params: "9".into(),
        });
        assert_eq!(keys.feed(';'), None);
        assert_eq!(keys.feed('5'), None);
    }
}
