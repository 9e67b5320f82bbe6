//! Output above the prompt, without ever blocking the shell's loop.
//!
//! rustyline's external printer hands text to the editor over a channel of one slot while a
//! line is being edited, and the editor prefers keystrokes over that channel. When two
//! prints arrive as the person presses Enter, the second one waits for a slot the editor
//! will only free at its next line — which the shell, stuck in that print, never lets it
//! start. So the shell queues text here, and one thread feeds the editor's printer: if it
//! has to wait, only it waits, and the order of output is kept.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::{Duration, Instant};

use rustyline::ExternalPrinter;

/// Where queued output goes: through the line editor, or straight to stdout when the
/// editor cannot drive the terminal.
pub enum Out {
    Editor(Box<dyn ExternalPrinter + Send>),
    Plain(Stdout),
}

impl Out {
    /// `during_turn`: the text was queued while a turn was running (see [`Stdout`]).
    fn write(&mut self, text: String, during_turn: bool) -> rustyline::Result<()> {
        match self {
            Out::Editor(editor) => editor.print(text),
            Out::Plain(stdout) => stdout.write(&text, during_turn),
        }
    }
}

/// Writes straight to stdout: for terminals the editor cannot drive (`TERM=dumb`), where
/// it reads plain lines. While it waits at the prompt, output starts on a line of its own;
/// the prompt is written again once, after the output of a turn (a terminal that cannot
/// redraw would otherwise show it after every line), or after each idle print.
pub struct Stdout {
    /// The prompt the editor shows.
    pub prompt: Arc<Mutex<String>>,
    /// Whether the editor is waiting for a line (its prompt is the last thing written).
    pub reading: Arc<std::sync::atomic::AtomicBool>,
    /// Output was written since the last prompt, so the prompt is owed, not on screen.
    pub owed: bool,
}

impl Stdout {
    /// Whether the prompt follows is decided by when the text was *queued*: the turn may
    /// have ended by the time its last line is written, and deciding then printed the prompt
    /// after that line and again after the turn's closing line.
    fn write(&mut self, text: &str, during_turn: bool) -> rustyline::Result<()> {
        use std::io::Write;
        use std::sync::atomic::Ordering;
        let mut out = std::io::stdout().lock();
        let reading = self.reading.load(Ordering::Relaxed);
        if reading && !self.owed {
            out.write_all(b"\n")?;
        }
        out.write_all(text.as_bytes())?;
        self.owed = reading && during_turn;
        if reading && !self.owed {
            out.write_all(crate::session::lock(&self.prompt).as_bytes())?;
        }
        out.flush()?;
        Ok(())
    }
}

/// An [`ExternalPrinter`] whose `print` only queues.
pub struct QueuedPrinter {
    queue: mpsc::Sender<(String, bool)>,
    progress: Arc<Progress>,
    /// Whether a turn runs, read as each text is queued: in order with the events that
    /// start and end turns, which the time of writing is not.
    busy: Arc<AtomicBool>,
}

/// How many prints were queued and how many have been written, to wait for the output of a
/// command before the next prompt is drawn.
#[derive(Default)]
struct Progress {
    counts: Mutex<(u64, u64)>,
    written: Condvar,
}

/// Stops output while something else has the screen (the transcript viewer): what is
/// printed meanwhile waits, in order, and comes out when it is released.
#[derive(Clone, Default)]
pub struct Hold(Arc<(Mutex<bool>, Condvar)>);

impl Hold {
    pub fn set(&self, held: bool) {
        *crate::session::lock(&self.0.0) = held;
        self.0.1.notify_all();
    }

    fn wait_released(&self) {
        let mut held = crate::session::lock(&self.0.0);
        while *held {
            held = match self.0.1.wait(held) {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
        }
    }
}

/// Waits for queued output; see [`Flush::wait`].
#[derive(Clone)]
pub struct Flush(Arc<Progress>);

impl QueuedPrinter {
    /// Starts the thread that writes through `out`. It ends when the printer is dropped.
    pub fn spawn(
        mut out: Out,
        hold: Hold,
        busy: Arc<AtomicBool>,
    ) -> std::io::Result<(QueuedPrinter, Flush)> {
        let (queue, queued) = mpsc::channel::<(String, bool)>();
        let progress = Arc::new(Progress::default());
        let written = progress.clone();
        std::thread::Builder::new()
            .name("linggen-printer".into())
            .spawn(move || {
                while let Ok((mut text, mut during_turn)) = queued.recv() {
                    hold.wait_released();
                    let mut count = 1;
                    // Whatever piled up while the editor was busy goes out as one print: one
                    // prompt redraw instead of one per line. The last piece says whether the
                    // turn was still running after all of it.
                    while let Ok((more, turn)) = queued.try_recv() {
                        text.push_str(&more);
                        during_turn = turn;
                        count += 1;
                    }
                    // A failed write loses that text only; later output may still get through.
                    let _ = out.write(text, during_turn);
                    crate::session::lock(&written.counts).1 += count;
                    written.written.notify_all();
                }
            })?;
        let flush = Flush(progress.clone());
        Ok((
            QueuedPrinter {
                queue,
                progress,
                busy,
            },
            flush,
        ))
    }
}

impl ExternalPrinter for QueuedPrinter {
    fn print(&mut self, msg: String) -> rustyline::Result<()> {
        crate::session::lock(&self.progress.counts).0 += 1;
        let during_turn = self.busy.load(Ordering::Relaxed);
        self.queue
            .send((msg, during_turn))
            .map_err(|_| std::io::Error::other("the printer thread has stopped").into())
    }
}

impl Flush {
    /// Waits until everything queued so far is written, at most `limit`. Called before the
    /// editor reads the next line, so a command's output stands above the next prompt
    /// rather than after it. The limit covers the one case where writing waits for the
    /// editor itself (the race described above); that output then comes through the editor,
    /// above the prompt, as soon as it reads again.
    pub fn wait(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let mut counts = crate::session::lock(&self.0.counts);
        let target = counts.0;
        while counts.1 < target {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            counts = match self.0.written.wait_timeout(counts, left) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Barrier, Mutex};
    use std::time::Duration;

    use super::*;

    /// Blocks its first print until released, like rustyline's printer with a full slot.
    struct Stuck {
        release: Arc<Barrier>,
        out: Arc<Mutex<Vec<String>>>,
        first: bool,
    }

    impl ExternalPrinter for Stuck {
        fn print(&mut self, msg: String) -> rustyline::Result<()> {
            if std::mem::take(&mut self.first) {
                self.release.wait();
            }
            crate::session::lock(&self.out).push(msg);
            Ok(())
        }
    }

    #[test]
    fn printing_never_waits_for_the_editor_and_keeps_the_order() {
        let release = Arc::new(Barrier::new(2));
        let out = Arc::new(Mutex::new(Vec::new()));
        let inner = Stuck {
            release: release.clone(),
            out: out.clone(),
            first: true,
        };
        let (mut printer, flush) = QueuedPrinter::spawn(
            Out::Editor(Box::new(inner)),
            Hold::default(),
            Arc::default(),
        )
        .unwrap();
        printer.print("a\n".into()).unwrap();
        // The editor is "stuck" on `a`: these return at once all the same, and a flush gives
        // up after its limit.
        printer.print("b\n".into()).unwrap();
        printer.print("c\n".into()).unwrap();
        flush.wait(Duration::from_millis(20));
        assert!(crate::session::lock(&out).is_empty());
        release.wait();
        flush.wait(Duration::from_secs(5));
        assert_eq!(crate::session::lock(&out).concat(), "a\nb\nc\n");
    }
}
