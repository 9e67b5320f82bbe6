//! The terminal's input mode between lines. rustyline reads each line in raw mode and puts
//! the terminal back to how it found it in between, where the line discipline turns the
//! Enter key (`\r`) into `\n`, which the editor reads as Ctrl+J (a new line in the same
//! message): a line typed while the shell was busy with the previous one then waited for a
//! second Enter. Keeping `\r` as it is between lines makes such a line arrive like any
//! other. The terminal is put back as it was when the shell ends (and on a panic).

use std::sync::Mutex;

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
    if let Some(mode) = crate::session::lock(&ORIGINAL).take() {
        // SAFETY: as above.
        unsafe { libc::tcsetattr(0, libc::TCSADRAIN, &mode) };
    }
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
