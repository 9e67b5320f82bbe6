//! A background command's output: the last [`RING_BYTES`] bytes it printed, how much it
//! printed in all, and how far the model has read. A dev server can print for hours; only
//! the end is kept, and a read that comes after some of its part was dropped says how much.

use std::collections::VecDeque;

use super::super::bash::plain_text;

/// Bytes of output kept per background command.
pub const RING_BYTES: usize = 64 * 1024;

#[derive(Debug, Default)]
pub(super) struct Ring {
    kept: VecDeque<u8>,
    /// Bytes printed in all; the kept part is the last `kept.len()` of them.
    total: u64,
    newlines: u64,
    ends_with_newline: bool,
    /// Offset (in `total`) up to which the model has read (`BashOutput`).
    read_to: u64,
}

/// New output for the model: its text and how many bytes before it were never seen.
#[derive(Debug, PartialEq)]
pub(super) struct Unread {
    pub text: String,
    pub dropped: u64,
}

impl Ring {
    pub fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        self.newlines += bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        if let Some(&last) = bytes.last() {
            self.ends_with_newline = last == b'\n';
        }
        let bytes = &bytes[bytes.len().saturating_sub(RING_BYTES)..];
        self.kept.extend(bytes);
        let excess = self.kept.len().saturating_sub(RING_BYTES);
        self.kept.drain(..excess);
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// Lines printed in all, the last one counted even without its newline.
    pub fn lines(&self) -> u64 {
        self.newlines + u64::from(self.total > 0 && !self.ends_with_newline)
    }

    /// What was printed since the last call, as plain text, and marks it read.
    pub fn take_unread(&mut self) -> Unread {
        let first_kept = self.total - self.kept.len() as u64;
        let from = self.read_to.max(first_kept);
        let dropped = from - self.read_to;
        let skip = (from - first_kept) as usize;
        let bytes: Vec<u8> = self.kept.iter().skip(skip).copied().collect();
        self.read_to = self.total;
        Unread {
            text: plain(&bytes),
            dropped,
        }
    }

    /// The last `n` lines that hold more than blanks, as plain text: what a person sees of
    /// a command in `/tasks` and on the page.
    pub fn tail_lines(&self, n: usize) -> Vec<String> {
        // The last few KiB hold the last lines of any sensible output.
        let window = self.kept.len().min(8 * 1024);
        let bytes: Vec<u8> = self
            .kept
            .iter()
            .skip(self.kept.len() - window)
            .copied()
            .collect();
        let text = plain(&bytes);
        let mut lines: Vec<String> = text
            .lines()
            .rev()
            .filter(|l| !l.trim().is_empty())
            .take(n)
            .map(|l| l.chars().take(500).collect())
            .collect();
        lines.reverse();
        lines
    }
}

/// The bytes as text the way `Bash` shows output (escapes and control characters out).
fn plain(bytes: &[u8]) -> String {
    plain_text(&String::from_utf8_lossy(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pick_up_where_the_last_one_ended() {
        let mut ring = Ring::default();
        ring.push(b"one\ntwo\n");
        assert_eq!(
            ring.take_unread(),
            Unread {
                text: "one\ntwo\n".into(),
                dropped: 0
            }
        );
        assert_eq!(ring.take_unread().text, "");
        ring.push(b"three");
        assert_eq!(ring.take_unread().text, "three");
        assert_eq!((ring.total(), ring.lines()), (13, 3));
    }

    #[test]
    fn only_the_end_is_kept_and_a_read_says_how_much_went() {
        let mut ring = Ring::default();
        ring.push(b"start\n");
        let line = b"0123456789abcdef\n";
        for _ in 0..10_000 {
            ring.push(line);
        }
        assert_eq!(ring.total(), 6 + 170_000);
        assert_eq!(ring.lines(), 10_001);
        let unread = ring.take_unread();
        assert_eq!(unread.dropped, 6 + 170_000 - RING_BYTES as u64);
        assert_eq!(unread.text.len(), RING_BYTES);
        assert!(unread.text.ends_with("abcdef\n"));
        ring.push(b"late\n");
        assert_eq!(
            ring.take_unread(),
            Unread {
                text: "late\n".into(),
                dropped: 0
            }
        );
    }

    #[test]
    fn the_tail_is_the_last_lines_with_text_without_escapes() {
        let mut ring = Ring::default();
        ring.push(b"a\nb\n\x1b[32mready\x1b[0m on :3000\n\n  \n50%\r100%\n");
        assert_eq!(ring.tail_lines(3), ["ready on :3000", "50%", "100%"]);
        assert_eq!(Ring::default().tail_lines(3), Vec::<String>::new());
    }
}
