//! A new prompt while the editor waits for a line.
//!
//! The prompt shows the agent, mode and permission mode, which can change while the
//! person is typing: from the web page, or with Shift+Tab. rustyline measures the prompt
//! once, when a read begins, and has no way to be handed another one, so drawing a new one
//! into the running read would put the cursor in the wrong column. Instead the shell ends
//! the read: it raises SIGINT, which rustyline takes as an interrupt while it reads (it
//! installs its own handler for each line). The editor tells that interrupt from a
//! person's Ctrl+C by [`Reprompt::take`], erases the old prompt's rows and reads again
//! with the new prompt and the line exactly as it was, cursor included.
//!
//! When the signal comes just as a read ends (the person pressed Enter in that instant),
//! it reaches the shell's own SIGINT listener instead, which drops it the same way; the
//! next read shows the new prompt anyway.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::session::lock;

/// How long a request counts: the signal arrives within microseconds, so an older one was
/// lost with a read that ended for another reason, and must not swallow a later Ctrl+C.
const REQUEST_LIFETIME: Duration = Duration::from_secs(1);

pub struct Reprompt {
    /// Whether the editor is waiting for a line (rustyline's handler is in place).
    pub reading: Arc<AtomicBool>,
    /// When the shell last asked for a new prompt, until the interrupt is seen.
    requested: Mutex<Option<Instant>>,
    /// The line being edited and the cursor's byte offset, as last drawn.
    typed: Mutex<(String, usize)>,
}

impl Reprompt {
    pub fn new(reading: Arc<AtomicBool>) -> Reprompt {
        Reprompt {
            reading,
            requested: Mutex::new(None),
            typed: Mutex::new((String::new(), 0)),
        }
    }

    /// Remembers the line as the editor draws it (the helper sees every refresh).
    pub fn record(&self, line: &str, pos: usize) {
        let mut typed = lock(&self.typed);
        if typed.0 != line || typed.1 != pos {
            *typed = (line.to_string(), pos);
        }
    }

    /// The shell's side: the prompt text changed; redraw it now if the editor is reading
    /// (otherwise its next read takes the new text by itself).
    pub fn request(&self) {
        if !self.reading.load(Ordering::SeqCst) {
            return;
        }
        let mut requested = lock(&self.requested);
        if requested.is_some_and(|at| at.elapsed() < REQUEST_LIFETIME) {
            return;
        }
        *requested = Some(Instant::now());
        drop(requested);
        #[cfg(unix)]
        // SAFETY: `raise` only queues SIGINT for this thread; its handler (rustyline's while
        // it reads, else the runtime's listener) writes one byte to a pipe.
        unsafe {
            libc::raise(libc::SIGINT);
        }
    }

    /// Whether the interrupt just seen (by the editor or the shell's listener) was a
    /// request for a new prompt; consumes the request.
    pub fn take(&self) -> bool {
        lock(&self.requested)
            .take()
            .is_some_and(|at| at.elapsed() < REQUEST_LIFETIME)
    }

    /// The line to read again: `(line, cursor byte offset)`.
    pub fn typed(&self) -> (String, usize) {
        let (line, pos) = lock(&self.typed).clone();
        let pos = if line.is_char_boundary(pos) {
            pos
        } else {
            line.len()
        };
        (line, pos)
    }

    /// For the editor, after the interrupted read: erase what the read left on screen (the
    /// old prompt and the line, then the newline rustyline writes when a read ends), so the
    /// new prompt takes their place.
    pub fn erase(&self, old_prompt: &str, footer_rows: usize, columns: u16) {
        erase(old_prompt, &self.typed().0, footer_rows, columns);
    }
}

/// Erases what an interrupted read left on screen: `old_prompt` and `line` as the editor
/// drew them at `columns` with `footer_rows` under them, and the newline it wrote when the
/// read ended.
pub fn erase(old_prompt: &str, line: &str, footer_rows: usize, columns: u16) {
    use std::io::Write;
    let width = usize::from(columns.max(1));
    let rows: usize = format!("{old_prompt}{line}")
        .split('\n')
        .map(|row| {
            crate::repl::render::paint::str_width(row)
                .div_ceil(width)
                .max(1)
        })
        .sum::<usize>()
        + footer_rows;
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "\x1b[{rows}A\r\x1b[J");
    let _ = out.flush();
}
