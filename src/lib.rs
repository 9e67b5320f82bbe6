//! linggen: a terminal-first coding agent. See `DESIGN.md` for the picture: a [`session`]
//! fed by an input queue publishes events that frontends ([`print`], later the REPL and the
//! web mirror) and the [`store`] subscribe to.

pub mod acp;
pub mod agents;
pub mod app;
pub mod checkpoint;
pub mod cli;
pub mod clock;
pub mod config;
pub mod durable;
pub mod hooks;
pub mod llm;
pub mod mcp;
pub mod print;
pub mod protocol;
pub mod repl;
pub mod session;
pub mod shared_text;
pub mod skills;
pub mod store;
pub mod sync;
pub mod text;
pub mod tools;
pub mod web;
