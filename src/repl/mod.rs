//! The interactive shell: a line editor over the same session core as `-p`. Keystrokes
//! become `Input`s, `Event`s become rendered text; the REPL owns no session logic.

pub mod commands;
pub mod complete;
pub mod render;
pub mod theme;
pub mod triggers;
