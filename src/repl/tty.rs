//! The terminal's input mode between lines. rustyline reads each line in raw mode and puts
//! the terminal back to how it found it in between, where the line discipline turns the
//! Enter key (`\r`) into `\n`, which the editor reads as Ctrl+J (a new line in the same
//! message): a line typed while the shell was busy with the previous one then waited for a
//! second Enter. Keeping `\r` as it is between lines makes such a line arrive like any
//! other. The terminal is put back as it was when the shell ends (and on a panic).
//!
//! While a line is read, the shell also asks the terminal to report keys it would
//! otherwise send as plain ones (Shift+Enter as Enter): see [`report_modified_keys`].

use std::io::{IsTerminal, Write};
use std::sync::{Mutex, OnceLock};

/// The settings found at start, to put back.
static ORIGINAL: Mutex<Option<libc::termios>> = Mutex::new(None);

/// Keeps Enter as `\r` while the shell runs; does nothing when stdin is not a terminal.
pub fn keep_enter() {
    // SAFETY: tcgetattr/tcsetattr on fd 0 with a termios this function owns.
    unsafe {
        let mut mode: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(0, &mut mode) != 0 {
            return;
        }
        *crate::session::lock(&ORIGINAL) = Some(mode);
        mode.c_iflag &= !libc::ICRNL;
        libc::tcsetattr(0, libc::TCSADRAIN, &mode);
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}

/// Puts the terminal's input mode back as it was at start.
pub fn restore() {
    report_modified_keys(false);
    if let Some(mode) = crate::session::lock(&ORIGINAL).take() {
        // SAFETY: as above.
        unsafe { libc::tcsetattr(0, libc::TCSADRAIN, &mode) };
    }
}

/// Asks for (or gives up) xterm's modifyOtherKeys at level 1, under which the terminal
/// reports a modified key that would otherwise arrive as the plain one — Shift+Enter, which
/// every terminal sends as Enter — as `CSI 27 ; modifiers ; code ~` (read by
/// `editor::ModifiedKeys`). Level 1 leaves the keys with a meaning of their own as they are
/// (Ctrl+C, Ctrl+letters, Tab, Esc), so nothing else the editor reads changes. Asked for
/// only while a line is read: what runs between lines (the transcript viewer, a command's
/// output, the shell the person returns to) gets the terminal as it was. Terminals that do
/// not know it ignore the request; tmux passes it on with `extended-keys on`. Off is
/// `CSI > 4 m`, which puts the terminal's own setting back.
pub fn report_modified_keys(on: bool) {
    if !line_editor_on_terminal() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(if on { b"\x1b[>4;1m" } else { b"\x1b[>4m" });
    let _ = out.flush();
}

/// Whether the line editor reads in raw mode from a terminal and draws on one — not when
/// either end is redirected, nor on a terminal rustyline treats as unsupported.
fn line_editor_on_terminal() -> bool {
    static ON_TERMINAL: OnceLock<bool> = OnceLock::new();
    *ON_TERMINAL.get_or_init(|| {
        let unsupported = std::env::var("TERM").is_ok_and(|term| {
            ["dumb", "cons25", "emacs"]
                .iter()
                .any(|plain| plain.eq_ignore_ascii_case(&term))
        });
        std::io::stdin().is_terminal() && std::io::stdout().is_terminal() && !unsupported
    })
}

/// The terminal's rows; unknown, no limit.
pub(crate) fn terminal_height() -> u16 {
    crossterm::terminal::size().map_or(u16::MAX, |(_, h)| h.max(2))
}

pub(crate) fn terminal_width() -> u16 {
    if let Some(width) = super::render::RenderStyle::dumb_terminal_width() {
        return width;
    }
    crossterm::terminal::size().map_or(100, |(w, _)| w.max(20))
}

/// The terminal's columns and rows.
pub(crate) fn terminal_size() -> (u16, u16) {
    let rows = crossterm::terminal::size().map_or(24, |(_, rows)| rows);
    (terminal_width(), rows)
}
