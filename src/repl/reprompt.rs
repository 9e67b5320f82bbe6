//! A new prompt while the editor waits for a line.
//!
//! The prompt shows the agent, mode and permission mode, which can change while the
//! person is typing: from the web page, or with Shift+Tab. rustyline measures the prompt
//! once, when a read begins, and has no way to be handed another one, so drawing a new one
//! into the running read would put the cursor in the wrong column. Instead the shell ends
//! the read: it raises SIGINT, which rustyline takes as an interrupt while it reads (it
//! installs its own handler for each line). The editor tells that interrupt from a
//! person's Ctrl+C ([`Reprompt::take_after_read`]), erases the old prompt's rows and reads
//! again with the new prompt and the line exactly as it was, cursor included.
//!
//! The signal can miss the read it was meant for:
//! - as a read *ends* (the person pressed Enter in that instant), it reaches the shell's
//!   own SIGINT listener, which drops it ([`Reprompt::take`]), or rustyline, which drops it
//!   outright. Either way the next read shows the new prompt. A request whose signal was
//!   dropped stays open, so the Ctrl+C key says it is the person's
//!   ([`Reprompt::person_interrupts`]): an interrupt from the key never answers a request.
//! - as a read *begins* (before rustyline's handler is in place), the listener drops it,
//!   but that read started with the old prompt. So every change is counted, each read
//!   notes the count it started with, and the shell asks again while a read is
//!   [`behind`](Reprompt::behind).
//!
//! Plain reads (`TERM=dumb`) are never interrupted: no signal ends them, and the prompt is
//! written with the output there (see `printer::Stdout`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    /// The person pressed Ctrl+C: the interrupt that ends this read is theirs.
    by_person: AtomicBool,
    /// Reads are plain lines (`TERM=dumb`): no interrupt ends them, and the next prompt is
    /// written with the output anyway (see `printer::Stdout`), so nothing is raised.
    plain: AtomicBool,
    /// Changes asked for so far, and how many of them the running read was started with.
    wanted: AtomicU64,
    drawn: AtomicU64,
}

impl Reprompt {
    pub fn new(reading: Arc<AtomicBool>) -> Reprompt {
        Reprompt {
            reading,
            requested: Mutex::new(None),
            typed: Mutex::new((String::new(), 0)),
            by_person: AtomicBool::new(false),
            plain: AtomicBool::new(false),
            wanted: AtomicU64::new(0),
            drawn: AtomicU64::new(0),
        }
    }

    /// The editor's side, as a read begins: `reading` is already set, and the prompt is
    /// read after this (the shell changes the prompt before it counts the change).
    pub fn begin_read(&self) {
        let wanted = self.wanted.load(Ordering::SeqCst);
        self.drawn.store(wanted, Ordering::SeqCst);
    }

    /// The editor reads plain lines: requests are only counted from now on.
    pub fn plain_reads(&self) {
        self.plain.store(true, Ordering::SeqCst);
    }

    /// Whether the running read shows an older prompt or footer than the shell asked for
    /// (and could be interrupted to show the new one).
    pub fn behind(&self) -> bool {
        !self.plain.load(Ordering::SeqCst)
            && self.reading.load(Ordering::SeqCst)
            && self.drawn.load(Ordering::SeqCst) < self.wanted.load(Ordering::SeqCst)
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
        self.wanted.fetch_add(1, Ordering::SeqCst);
        self.ask_again();
    }

    /// Interrupts the running read for a new prompt, unless one is already on its way.
    pub fn ask_again(&self) {
        if !self.open_request() {
            return;
        }
        #[cfg(unix)]
        // SAFETY: `raise` only queues SIGINT for this thread; its handler (rustyline's while
        // it reads, else the runtime's listener) writes one byte to a pipe.
        unsafe {
            libc::raise(libc::SIGINT);
        }
    }

    /// Notes a request while the editor reads; whether the interrupt is to be raised (not
    /// when the editor is between reads, or a request is already on its way).
    fn open_request(&self) -> bool {
        if self.plain.load(Ordering::SeqCst) || !self.reading.load(Ordering::SeqCst) {
            return false;
        }
        let mut requested = lock(&self.requested);
        if requested.is_some_and(|at| at.elapsed() < REQUEST_LIFETIME) {
            return false;
        }
        *requested = Some(Instant::now());
        true
    }

    /// The editor's Ctrl+C key is about to end the read.
    pub fn person_interrupts(&self) {
        self.by_person.store(true, Ordering::SeqCst);
    }

    /// The shell's SIGINT listener: whether the signal just seen was a request for a new
    /// prompt; consumes the request.
    pub fn take(&self) -> bool {
        lock(&self.requested)
            .take()
            .is_some_and(|at| at.elapsed() < REQUEST_LIFETIME)
    }

    /// The editor, after a read ended by an interrupt: whether it was a request for a new
    /// prompt. The person's Ctrl+C consumes an open request too (the next read takes the
    /// new prompt anyway) but is never taken for it.
    pub fn take_after_read(&self) -> bool {
        let by_person = self.by_person.swap(false, Ordering::SeqCst);
        self.take() && !by_person
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_lost_with_its_signal_never_takes_the_persons_ctrl_c() {
        let reprompt = Reprompt::new(Arc::new(AtomicBool::new(true)));
        // Asked as the read ended: rustyline dropped the signal, the request stays open.
        assert!(reprompt.open_request());
        assert!(!reprompt.open_request(), "one on its way is enough");
        reprompt.person_interrupts();
        assert!(!reprompt.take_after_read(), "the person's Ctrl+C is theirs");
        // ... and it closed the request: a later interrupt is not taken for it either.
        assert!(!reprompt.take_after_read());
        // A request's own interrupt is still recognised.
        assert!(reprompt.open_request());
        assert!(reprompt.take_after_read());
    }

    #[test]
    fn a_read_begun_before_a_change_is_behind_until_read_again() {
        let reading = Arc::new(AtomicBool::new(false));
        let reprompt = Reprompt::new(reading.clone());
        // Between reads: counted, nothing raised; the next read starts with it.
        reprompt.request();
        reading.store(true, Ordering::SeqCst);
        reprompt.begin_read();
        assert!(!reprompt.behind());
        // A change the running read missed (its signal lost as the read began).
        reprompt.wanted.fetch_add(1, Ordering::SeqCst);
        assert!(reprompt.behind());
        reprompt.begin_read();
        assert!(!reprompt.behind());
        reading.store(false, Ordering::SeqCst);
        reprompt.wanted.fetch_add(1, Ordering::SeqCst);
        assert!(!reprompt.behind(), "no read to redraw");
        // Plain reads (`TERM=dumb`) are never interrupted for a prompt.
        reading.store(true, Ordering::SeqCst);
        assert!(reprompt.behind());
        reprompt.plain_reads();
        assert!(!reprompt.behind());
        assert!(!reprompt.open_request());
    }
}
