//! The interactive shell: a line editor over the same session core as `-p`. Keystrokes
//! become `Input`s, `Event`s become rendered text; the REPL owns no session logic.

mod approval;
mod attach;
mod catalog;
pub mod commands;
pub mod complete;
mod config_follow;
mod dispatch;
mod doctor;
pub mod editor;
mod export;
mod extensions;
mod footer;
mod history;
mod init;
mod input;
mod link;
mod modified_keys;
mod pager;
mod popup;
mod printer;
pub mod render;
mod reprompt;
mod rewind;
mod run_tree;
mod settings;
mod share;
mod shell;
mod status;
mod tasks;
pub mod theme;
mod transcript;
pub mod triggers;
pub mod trust;
mod tty;
mod view;

pub use shell::run;
