//! The launcher: the one place where linggen starts a process — the model's commands,
//! linggen's own git (checkpoints, rewind, worktree jobs, repository facts), Chromium for
//! screenshots, the browser opener, MCP servers and hooks. A test
//! (`tests.rs`) fails when a process is started anywhere else.
//!
//! Each launch states four decisions, so a reader sees them where the process starts:
//!
//! - **the program** ([`Program`]): a bare name is looked up once on a `PATH` from which
//!   every folder a confined command can write is removed ([`program`]); an absolute path
//!   is refused when it lies in such a folder;
//! - **the environment** ([`Env`]): credentials scrubbed, or only the few variables any
//!   program needs;
//! - **confinement** ([`Confinement`]): the sandbox, or unconfined with a written reason;
//! - **lifetime** ([`Lifetime`]): what happens to it and to everything it starts when its
//!   call ends or linggen dies, by any signal ([`lifetime`]).
//!
//! Why these mechanisms: doc/security.md, "Processes linggen starts".

pub mod git;
pub(super) mod lifetime;
pub mod opener;
pub mod program;

#[cfg(test)]
mod tests;

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::Command;

use super::sandbox::Sandbox;

pub use program::{Program, ProgramError};

/// Where the environment of a launched process comes from.
#[derive(Debug, Clone, Copy)]
pub enum Env<'a> {
    /// The person's environment with every credential the sandbox knows removed (API keys,
    /// tokens, agent sockets): for the model's commands and for browsers, which need the
    /// person's locale, display and toolchain variables but never a key.
    Scrubbed(&'a Sandbox),
    /// Only what any program needs: the trusted `PATH`, `HOME`, `USER`, `LOGNAME`, `LANG`,
    /// `TZ` and a plain `C` locale for messages. For linggen's own helpers (git), which
    /// need nothing of the person's and must not be steered by their `GIT_*` variables.
    Minimal,
    /// The person's whole environment, credentials included, with the trusted `PATH`: for
    /// the person's own programs they chose to run outside the sandbox (their hooks, with
    /// `[hooks] unconfined = true`), which run as the person would run them.
    Person,
    /// [`Env::Minimal`] plus what a desktop program needs to show a window (display,
    /// session bus, XDG folders). For the browser opener.
    Desktop,
}

/// Whether the process runs in the sandbox.
#[derive(Debug, Clone, Copy)]
pub enum Confinement<'a> {
    Sandbox(&'a Sandbox),
    /// Unconfined, for the reason given (also listed in doc/security.md).
    Unconfined(&'static str),
}

/// What happens to the process, and to what it starts, when its call ends or linggen dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// A PID namespace of its own: when the process exits or is killed, the kernel kills
    /// everything it started (daemonized or not), and it is killed when linggen dies by any
    /// signal. For commands whose descendants are not linggen's to trust.
    Contained,
    /// Its own process group, killed when linggen dies by any signal (a parent-death
    /// signal). Descendants that leave the group are not followed: for programs that start
    /// no daemons of their own (git with hooks and fsmonitor off, Chromium).
    Tied,
    /// Outlives linggen on purpose, for the reason given: the person's browser.
    Detached(&'static str),
}

/// Why a process could not be prepared. It has not started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(transparent)]
    Program(#[from] ProgramError),
    #[error("the sandbox could not be set up: {0}")]
    Sandbox(String),
}

/// One process to start: the four decisions, then [`Launch::command`].
#[derive(Debug, Clone, Copy)]
pub struct Launch<'a> {
    pub program: Program<'a>,
    pub env: Env<'a>,
    pub confinement: Confinement<'a>,
    pub lifetime: Lifetime,
}

impl Launch<'_> {
    /// The command with the four decisions applied; the caller adds arguments, a working
    /// folder, stdio and further variables, then spawns it.
    pub fn command(&self) -> Result<Command, LaunchError> {
        let program = self.program.resolve()?;
        let mut cmd = Command::new(&program);
        self.apply_env(&mut cmd);
        match self.confinement {
            Confinement::Sandbox(sandbox) => {
                // The sandbox's setup makes the PID namespace itself (it already makes a
                // user namespace), so `Contained` costs no second fork there.
                let contain = self.lifetime == Lifetime::Contained;
                sandbox
                    .confine(&mut cmd, contain)
                    .map_err(LaunchError::Sandbox)?;
            }
            Confinement::Unconfined(_) => lifetime::apply(&mut cmd, self.lifetime),
        }
        if !matches!(self.lifetime, Lifetime::Detached(_)) {
            cmd.process_group(0);
        }
        Ok(cmd)
    }

    /// [`Launch::command`] for async callers; killed when the handle is dropped.
    pub fn tokio_command(&self) -> Result<tokio::process::Command, LaunchError> {
        let mut cmd = tokio::process::Command::from(self.command()?);
        cmd.kill_on_drop(true);
        Ok(cmd)
    }

    fn apply_env(&self, cmd: &mut Command) {
        match self.env {
            Env::Scrubbed(sandbox) => sandbox.scrub_env(cmd),
            Env::Minimal => minimal_env(cmd, &[]),
            Env::Desktop => minimal_env(cmd, DESKTOP_VARS),
            Env::Person => {
                cmd.env("PATH", program::trusted_path_var());
            }
        }
    }
}

/// Variables a desktop program needs to find the person's screen and session.
const DESKTOP_VARS: &[&str] = &[
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "XDG_RUNTIME_DIR",
    "XDG_SESSION_TYPE",
    "XDG_CURRENT_DESKTOP",
    "XDG_DATA_DIRS",
    "XDG_CONFIG_DIRS",
    "DBUS_SESSION_BUS_ADDRESS",
    "BROWSER",
];

fn minimal_env(cmd: &mut Command, extra: &[&str]) {
    cmd.env_clear();
    cmd.env("PATH", program::trusted_path_var());
    for name in ["HOME", "USER", "LOGNAME", "LANG", "TZ"]
        .iter()
        .chain(extra)
    {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    cmd.env("LC_ALL", "C");
}

/// Marks folders a confined command can write (the root, `[sandbox] write_paths`, the
/// sandbox's temporary folder): programs are never taken from them. Called by the sandbox
/// for every folder it opens for writing.
pub fn distrust(paths: &[&Path]) {
    program::distrust(paths);
}
