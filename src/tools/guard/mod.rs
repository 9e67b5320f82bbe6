//! The hard safety floor shared by every tool: where file tools may reach ([`paths`]) and
//! what a shell command does before anyone decides whether it may run ([`shell`]).

pub mod paths;
pub mod shell;
