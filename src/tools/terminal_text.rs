//! Text bound for a person's screen, made safe in the two ways the safety model needs.
//!
//! - [`strip_controls`]: what the model wrote (answers, thinking, tool arguments, agent
//!   names, errors quoting it) loses every terminal control sequence, so it cannot set the
//!   window title, write the clipboard (OSC 52), clear the screen or move the cursor over
//!   earlier lines. Frontends call it where text enters their renderer.
//! - [`visible`]: what a person approves (a command, a path) keeps every character, with
//!   the ones a screen would hide spelled out, so nothing runs that was not shown.
//!
//! Both live here, below every frontend, so the terminal, the `-p` printer and the web
//! page's data all apply the same rules.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::iter::Peekable;
use std::str::Chars;

/// `text` without terminal control sequences: ESC sequences (CSI, OSC, DCS, SOS, PM, APC and
/// the two- and three-character ones), their 8-bit C1 forms, and every other C0/C1 control
/// and DEL. Tab and newline stay; `\r` goes, so `\r\n` is a line break and a lone `\r` can
/// no longer overwrite what came before it on the line.
///
/// One pass; borrowed (no allocation) when the text is clean, which is the common case on
/// the rendering hot path. A sequence cut off at the end of `text` (a streamed token ending
/// mid-sequence) is dropped up to the end; the rest of it, arriving later, is plain text.
pub fn strip_controls(text: &str) -> Cow<'_, str> {
    let Some(first) = first_control(text.as_bytes()) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..first]);
    let mut chars = text[first..].chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\t' | '\n' => out.push(c),
            '\x1b' => skip_escape(&mut chars),
            '\u{9b}' => skip_csi(&mut chars),
            // OSC, DCS, SOS, PM, APC: a string up to a terminator.
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if is_control(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Byte offset of the first character [`strip_controls`] must act on.
fn first_control(bytes: &[u8]) -> Option<usize> {
    bytes.iter().enumerate().position(|(i, &b)| match b {
        b'\t' | b'\n' => false,
        0..=0x1f | 0x7f => true,
        // C1 controls U+0080..U+009F are encoded as C2 80..C2 9F.
        0xc2 => bytes
            .get(i + 1)
            .is_some_and(|next| (0x80..=0x9f).contains(next)),
        _ => false,
    })
}

fn is_control(c: char) -> bool {
    matches!(c, '\0'..='\x1f' | '\x7f'..='\u{9f}')
}

/// After an ESC: the rest of its sequence.
fn skip_escape(chars: &mut Peekable<Chars<'_>>) {
    match chars.peek() {
        Some('[') => {
            chars.next();
            skip_csi(chars);
        }
        Some(']' | 'P' | 'X' | '^' | '_') => {
            chars.next();
            skip_string(chars);
        }
        _ => {
            // nF / Fp / Fe / Fs: intermediates (space to `/`), then one final character.
            while chars.next_if(|c| (' '..='/').contains(c)).is_some() {}
            chars.next_if(|c| ('0'..='~').contains(c));
        }
    }
}

/// After a CSI introducer: parameters and intermediates, then one final byte in `@`..`~`.
/// Anything else ends the sequence unconsumed (a terminal would abort it there too).
fn skip_csi(chars: &mut Peekable<Chars<'_>>) {
    while chars.next_if(|c| (' '..='?').contains(c)).is_some() {}
    chars.next_if(|c| ('@'..='~').contains(c));
}

/// A control string (OSC, DCS, …) up to BEL, ST (`ESC \` or U+009C), or a newline, which
/// is kept: a stray introducer must not swallow the rest of an answer.
fn skip_string(chars: &mut Peekable<Chars<'_>>) {
    while let Some(&c) = chars.peek() {
        match c {
            '\n' => return,
            '\x07' | '\u{9c}' => {
                chars.next();
                return;
            }
            '\x1b' => {
                chars.next();
                chars.next_if_eq(&'\\');
                return;
            }
            _ => {
                chars.next();
            }
        }
    }
}

/// Runs of more spaces than this are shown as a count: a screen of blanks can push the rest
/// of a command out of sight.
const MAX_PLAIN_SPACES: usize = 3;

/// `text` with every character a person could not see spelled out, for approval prompts:
/// C0/C1 controls and DEL as `\t`, `\n`, `\r` or `\xNN`; invisible or direction-changing
/// Unicode (zero-width characters, bidi overrides, non-ASCII spaces) as `\u{202e}`; and a
/// run of more than [`MAX_PLAIN_SPACES`] spaces as `␠×N`. Nothing is left out or cut: the
/// caller wraps the result, it never truncates it.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' => {
                let mut run = 1;
                while chars.next_if_eq(&' ').is_some() {
                    run += 1;
                }
                if run > MAX_PLAIN_SPACES {
                    let _ = write!(out, "␠×{run}");
                } else {
                    out.extend(std::iter::repeat_n(' ', run));
                }
            }
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\0'..='\x1f' | '\x7f' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_control(c) || is_invisible(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Characters that draw nothing, look like a plain space, or reorder what follows them.
fn is_invisible(c: char) -> bool {
    (c.is_whitespace() && c != ' ')
        || matches!(
            c,
            '\u{ad}'
                | '\u{34f}'
                | '\u{61c}'
                | '\u{115f}'..='\u{1160}'
                | '\u{17b4}'..='\u{17b5}'
                | '\u{180b}'..='\u{180f}'
                | '\u{200b}'..='\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{3164}'
                | '\u{fe00}'..='\u{fe0f}'
                | '\u{feff}'
                | '\u{ffa0}'
                | '\u{fff0}'..='\u{fffb}'
                | '\u{e0000}'..='\u{e0fff}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_is_borrowed() {
        let text = "# Title\n\tcode — ünïcödé ✓ `x`";
        assert!(matches!(strip_controls(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn escape_sequences_and_controls_are_removed() {
        let cases = [
            ("a\x1b]52;c;aGVsbG8=\x07b", "ab"),
            ("a\x1b]0;title\x1b\\b", "ab"),
            ("\x1b[2J\x1b[Hclear", "clear"),
            ("up\x1b[1;31mred\x1b[0m", "upred"),
            ("a\u{9b}2Jb", "ab"),
            ("a\u{9d}8;;http://x\u{9c}b", "ab"),
            ("a\x1bP+q544e\x1b\\b", "ab"),
            ("a\x1b_apc\x07b\x1b^pm\x1b\\c", "abc"),
            ("a\x1bcb\x1b7c\x1b(Bd", "abcd"),
            ("safe\rEVIL", "safeEVIL"),
            ("line\r\nnext", "line\nnext"),
            ("bell\x07 nul\0 del\x7f c1\u{85}", "bell nul del c1"),
            ("tab\tnew\nline", "tab\tnew\nline"),
            // Cut off at the end (a token ending mid-sequence): nothing of it leaks.
            ("ok\x1b]52;c;AAAA", "ok"),
            ("ok\x1b[", "ok"),
            ("ok\x1b", "ok"),
            // A stray introducer stops at the line's end instead of eating the answer.
            ("a\x1b]oops\nrest", "a\nrest"),
        ];
        for (input, expected) in cases {
            assert_eq!(strip_controls(input), expected, "{input:?}");
        }
    }

    #[test]
    fn stripped_text_has_no_control_left() {
        let hostile = "\x1b]52;c;ZWNobyBoaQ==\x07\x1b[2J\u{9b}31m\rX\x1b\x1b[\u{90}q\u{9c}\u{9f}";
        let out = strip_controls(hostile);
        assert!(!out.chars().any(is_control), "{out:?}");
        assert_eq!(out, "X");
    }

    #[test]
    fn visible_spells_out_what_a_screen_hides() {
        let padding = " ".repeat(300);
        let command = format!("echo safe{padding}&& touch x");
        assert_eq!(visible(&command), "echo safe␠×300&& touch x");
        assert_eq!(visible("a  b   c"), "a  b   c");
        assert_eq!(visible("a    b"), "a␠×4b");
        assert_eq!(
            visible("a\tb\rc\nd\x1b[2J\x07\x7f"),
            "a\\tb\\rc\\nd\\x1b[2J\\x07\\x7f"
        );
        assert_eq!(
            visible("ls \u{202e}txt.exe\u{200b}\u{a0}\u{9b}\u{feff}"),
            "ls \\u{202e}txt.exe\\u{200b}\\u{a0}\\u{9b}\\u{feff}"
        );
        assert_eq!(
            visible("cargo test -- --nocapture 'ünï'"),
            "cargo test -- --nocapture 'ünï'"
        );
    }
}
