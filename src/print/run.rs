//! `linggen -p`: one task, printed, then exit. The same engine as the shell: the task is
//! read by the core's line grammar, the session runs non-interactively (calls that need
//! approval are denied), and a printer thread writes its events in the chosen format.

use tokio::sync::oneshot;

use super::{Finished, OutputFormat, Printer, error_json};
use crate::app::{Failure, LiveSession, Start, Workspace, exit, load_workspace, off_runtime};
use crate::config::ConfigError;
use crate::session::bus::Subscription;
use crate::session::{Input, UserMessage};

/// What `-p` was asked to do.
pub struct Task {
    /// The prompt argument, or stdin when there is no argument.
    pub prompt: String,
    /// Piped stdin (fenced) when a prompt argument was given too; otherwise empty.
    pub attached: String,
}

/// How `-p` runs: where and with what (`start`), how it prints.
pub struct PrintOptions {
    pub start: Start,
    pub format: OutputFormat,
    pub quiet: bool,
}

/// `linggen -p`: one task, printed, then exit.
/// `task` reads the task (stdin may block, so it runs off the runtime).
pub async fn run(
    options: PrintOptions,
    task: impl FnOnce() -> Result<Task, ConfigError> + Send + 'static,
) -> i32 {
    let format = options.format;
    match try_run(&options, task).await {
        Ok(code) => code,
        Err(f) => {
            eprintln!("linggen: error: {}", f.message);
            if format != OutputFormat::Text {
                println!("{}", error_json("", &f.message));
            }
            f.code
        }
    }
}

async fn try_run(
    options: &PrintOptions,
    task: impl FnOnce() -> Result<Task, ConfigError> + Send + 'static,
) -> Result<i32, Failure> {
    // Reading piped stdin and the configuration files blocks: off the runtime.
    let start = options.start.clone();
    let (task, ws) = off_runtime(move || Ok((task()?, load_workspace(&start)?))).await?;
    // Nobody can be asked here, so nothing is trusted implicitly.
    if let Some(note) = ws.trust.note() {
        eprintln!("linggen: note: {note}");
    }
    let (ws, message) = print_message(ws, task).await?;
    // `-p` never waits for a person: calls that need approval are denied.
    let mut live = LiveSession::start(&options.start, &ws, false).await?;
    let _ = live.handle.inputs.send(Input::UserMessage(message)).await;
    let printer = Printer::new(options.format, options.quiet, &live.session_id);
    let (finished, interrupted) = drive(options.quiet, &mut live, printer).await;
    // Everything is persisted once the writer has drained the closed bus.
    live.stop().await;
    let Some((mut printer, done)) = finished else {
        return Err(Failure {
            code: exit::FAILURE,
            message: "the session ended without an outcome".into(),
        });
    };
    let code = done.exit_code(interrupted);
    // The closing line goes to stdout, which may block too.
    let _ = tokio::task::spawn_blocking(move || printer.finish(&done)).await;
    Ok(code)
}

/// The `-p` task as a message: a skill (`/review`), a skill's custom trigger, a message for
/// another agent (`@coder …`), or plain text, with its `@file` mentions attached — the
/// core's line grammar, exactly as a line typed in the shell. Piped stdin comes first.
async fn print_message(ws: Workspace, task: Task) -> Result<(Workspace, UserMessage), Failure> {
    // Attaching `@file` mentions reads files: off the runtime.
    off_runtime(move || {
        let mut message = ws
            .read_line(&task.prompt, "cli")
            .map_err(|message| Failure::from(ConfigError::Usage(message)))?;
        // Piped stdin comes first, then the mentioned files.
        message.attached.insert_str(0, &task.attached);
        Ok((ws, message))
    })
    .await
}

/// What the printer thread ends with: itself (for the closing line) and the outcome.
type Printed = (Printer, Option<Finished>);

/// Prints the session's events on a thread of its own until the run's outcome: writing to
/// a pipe blocks while its reader is slow, and that must never hold a runtime thread. Its
/// queue is the bus's lossless subscription (bounded by coalescing tokens, see
/// `session::bus`), so a stalled reader neither stops the session nor grows memory with
/// every token. `gone` fires once stdout's reader left (`| head`).
fn spawn_printer(
    mut printer: Printer,
    mut events: Subscription,
    gone: oneshot::Sender<()>,
) -> oneshot::Receiver<Printed> {
    let (printed, result) = oneshot::channel();
    std::thread::spawn(move || {
        let mut gone = Some(gone);
        let finished = loop {
            let Some(envelope) = events.blocking_recv() else {
                break None;
            };
            if let Some(done) = printer.on_event(&envelope.event) {
                break Some(done);
            }
            if printer.stdout_closed()
                && let Some(gone) = gone.take()
            {
                let _ = gone.send(());
            }
        };
        let _ = printed.send((printer, finished));
    });
    result
}

/// Waits for the printer's outcome; Ctrl+C and a closed stdout cancel the run.
/// Returns the printer with the outcome, and whether the person interrupted.
async fn drive(
    quiet: bool,
    live: &mut LiveSession,
    printer: Printer,
) -> (Option<(Printer, Finished)>, bool) {
    let (gone_tx, mut gone) = oneshot::channel();
    let mut printed = spawn_printer(printer, live.take_events(), gone_tx);
    let handle = &live.handle;
    let mut interrupted = false;
    let mut reader_gone = false;
    loop {
        tokio::select! {
            result = &mut printed => {
                let finished = result.ok().and_then(|(p, done)| done.map(|d| (p, d)));
                return (finished, interrupted);
            }
            // The reader is gone: stop the model instead of generating output nobody
            // will see.
            left = &mut gone, if !reader_gone => {
                reader_gone = true;
                if left.is_ok() {
                    let _ = handle.inputs.send(Input::Cancel).await;
                }
            }
            _ = tokio::signal::ctrl_c(), if !interrupted => {
                interrupted = true;
                if !quiet {
                    eprintln!("linggen: interrupted; cancelling (press Ctrl+C again to quit now)");
                }
                let _ = handle.inputs.send(Input::Cancel).await;
                // A second Ctrl+C quits at once.
                tokio::spawn(async {
                    if tokio::signal::ctrl_c().await.is_ok() {
                        std::process::exit(exit::INTERRUPTED);
                    }
                });
            }
        }
    }
}
