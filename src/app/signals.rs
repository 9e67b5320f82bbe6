//! The signals that end linggen. SIGTERM (a `kill`, a service manager, a CI runner's
//! timeout) and SIGHUP (the terminal was closed) end a turn the way Ctrl+C does: the running
//! call is cancelled (its processes with it), every call gets its result, the session is
//! saved and the terminal put back. Their default action would kill linggen mid-write and
//! leave a session only a local server would take back. Exit codes follow the shell's
//! `128 + signal` convention (doc/cli.md).

use tokio::signal::unix::{Signal, SignalKind, signal};

use super::exit;

/// A signal that asked linggen to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// SIGINT: Ctrl+C.
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// SIGHUP: the terminal went away.
    Hangup,
}

impl Ending {
    pub fn exit_code(self) -> i32 {
        match self {
            Ending::Interrupt => exit::INTERRUPTED,
            Ending::Terminate => exit::TERMINATED,
            Ending::Hangup => exit::HANGUP,
        }
    }

    /// What happened, for the line that says linggen is stopping.
    pub fn describe(self) -> &'static str {
        match self {
            Ending::Interrupt => "interrupted",
            Ending::Terminate => "terminated (SIGTERM)",
            Ending::Hangup => "the terminal closed (SIGHUP)",
        }
    }
}

/// The ending signals as one stream. Registered once and kept: a signal that arrives while
/// nobody awaits the stream waits in it instead of killing linggen.
pub struct Signals {
    interrupt: Option<Signal>,
    terminate: Option<Signal>,
    hangup: Option<Signal>,
}

impl Signals {
    /// SIGTERM and SIGHUP (the shell reads Ctrl+C through its own handler).
    pub fn terminal_endings() -> Signals {
        Signals {
            interrupt: None,
            terminate: signal(SignalKind::terminate()).ok(),
            hangup: signal(SignalKind::hangup()).ok(),
        }
    }

    /// SIGINT, SIGTERM and SIGHUP.
    pub fn all() -> Signals {
        Signals {
            interrupt: signal(SignalKind::interrupt()).ok(),
            ..Signals::terminal_endings()
        }
    }

    /// The next ending signal. Cancel-safe: usable in `select!`.
    pub async fn next(&mut self) -> Ending {
        tokio::select! {
            Some(()) = recv(&mut self.interrupt) => Ending::Interrupt,
            Some(()) = recv(&mut self.terminate) => Ending::Terminate,
            Some(()) = recv(&mut self.hangup) => Ending::Hangup,
            // Only if every stream ended, which signal streams never do.
            else => std::future::pending().await,
        }
    }

    /// From now on, the next ending signal quits at once (after `before_exit`): for when
    /// stopping cleanly takes too long for whoever sends a second one.
    pub fn second_quits(mut self, before_exit: fn()) {
        tokio::spawn(async move {
            let ending = self.next().await;
            before_exit();
            std::process::exit(ending.exit_code());
        });
    }
}

/// The next ending signal while `signals` is there; never, once it was taken (its
/// [`Signals::second_quits`] handles the next one). For `select!` loops.
pub async fn next_ending(signals: &mut Option<Signals>) -> Ending {
    match signals {
        Some(signals) => signals.next().await,
        None => std::future::pending().await,
    }
}

async fn recv(signal: &mut Option<Signal>) -> Option<()> {
    match signal {
        Some(signal) => signal.recv().await,
        None => std::future::pending().await,
    }
}
