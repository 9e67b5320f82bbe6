//! `linggen -p`: one task, printed, then exit. The same engine as the shell: the task is
//! read by the core's line grammar, the session runs non-interactively (calls that need
//! approval are denied), and a printer thread writes its events in the chosen format.

use tokio::sync::oneshot;

use super::{Finished, OutputFormat, Printer, error_json};
use crate::app::signals::{Ending, Signals, next_ending};
use crate::app::{Failure, LiveSession, Start, Workspace, exit, load_workspace, off_runtime};
use crate::config::ConfigError;
use crate::session::bus::Subscription;
use crate::session::{Input, UserMessage};

/// What `-p` was asked to do.
#[derive(Clone)]
pub struct Task {
    /// The prompt argument, or stdin when there is no argument.
    pub prompt: String,
    /// Piped stdin (fenced) when a prompt argument was given too; otherwise empty.
    pub attached: String,
    /// `--image FILE`s, sent with the task.
    pub images: Vec<std::path::PathBuf>,
}

/// How `-p` runs: where and with what (`start`), how it prints.
pub struct PrintOptions {
    pub start: Start,
    pub format: OutputFormat,
    /// `--stream-shape`: linggen's events or Claude Code's messages.
    pub shape: super::StreamShape,
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
    if options.shape == super::StreamShape::Claude && options.format != OutputFormat::StreamJson {
        return Err(Failure {
            code: exit::USAGE,
            message: "--stream-shape claude needs --output-format stream-json (it chooses \
                      which messages that format prints)"
                .into(),
        });
    }
    // Reading piped stdin and the configuration files blocks: off the runtime.
    let start = options.start.clone();
    let (task, ws) = off_runtime(move || Ok((task()?, load_workspace(&start)?))).await?;
    // Nobody can be asked here, so nothing is trusted implicitly.
    if let Some(note) = ws.trust.note() {
        eprintln!("linggen: note: {note}");
    }
    // A server's prompt (`/mcp__SERVER__PROMPT args`) is filled by its server, which
    // starts with the session; anything else is read by the line grammar now.
    let (ws, message) = match mcp_prompt_command(&task.prompt) {
        Some(_) => (ws, None),
        None => {
            let (ws, message) = print_message(ws, task.clone()).await?;
            (ws, Some(message))
        }
    };
    // `-p` never waits for a person: calls that need approval are denied.
    let mut live = LiveSession::start(&options.start, &ws, false).await?;
    let message = match message {
        Some(message) => message,
        None => mcp_prompt_message(&live, &task).await?,
    };
    let _ = live.handle.inputs.send(Input::UserMessage(message)).await;
    let printer =
        Printer::new(options.format, options.quiet, &live.session_id).with_shape(options.shape);
    let (finished, ended_by) = drive(options.quiet, &mut live, printer).await;
    // Everything is persisted once the writer has drained the closed bus.
    let saved = live.stop().await;
    let Some((mut printer, done)) = finished else {
        return Err(Failure {
            code: exit::FAILURE,
            message: "the session ended without an outcome".into(),
        });
    };
    let code = match done.exit_code(ended_by) {
        // The answer is printed, yet `--continue` would not find it: a script must know.
        exit::SUCCESS if !saved => exit::NOT_SAVED,
        code => code,
    };
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
            .map_err(|e| Failure::from(ConfigError::Usage(e.to_string())))?;
        // Piped stdin comes first, then the mentioned files.
        message.attached.insert_str(0, &task.attached);
        for path in &task.images {
            let image = crate::llm::Image::from_file(path)
                .map_err(|why| Failure::from(ConfigError::Usage(format!("--image: {why}"))))?;
            message.images.push(image);
        }
        Ok((ws, message))
    })
    .await
}

/// `/mcp__SERVER__PROMPT args` → the command and its arguments.
fn mcp_prompt_command(prompt: &str) -> Option<(&str, &str)> {
    let line = prompt.trim_start().strip_prefix('/')?;
    let (name, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    crate::mcp::split_tool_name(name)?;
    Some((name, args))
}

/// The server's prompt, filled with `args`, as the message; piped stdin comes after it.
async fn mcp_prompt_message(live: &LiveSession, task: &Task) -> Result<UserMessage, Failure> {
    let (name, args) = mcp_prompt_command(&task.prompt).unwrap_or(("", ""));
    let failure = |message: String| Failure {
        code: exit::USAGE,
        message,
    };
    match live.mcp.expand(name, args).await {
        Some(Ok(text)) => {
            let mut message = UserMessage::new(text, "cli");
            message.attached = task.attached.clone();
            Ok(message)
        }
        Some(Err(e)) => Err(Failure {
            code: exit::FAILURE,
            message: e.to_string(),
        }),
        None => Err(failure(format!(
            "no MCP server offers the prompt `/{name}`; `linggen mcp get SERVER` lists a \
             server's tools, and `/mcp` in the shell its prompts"
        ))),
    }
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

/// Waits for the printer's outcome; Ctrl+C, SIGTERM, SIGHUP and a closed stdout cancel the
/// run, which then ends as any cancelled run does (every call answered, all of it saved).
/// Returns the printer with the outcome, and the signal that ended the run, if one did.
async fn drive(
    quiet: bool,
    live: &mut LiveSession,
    printer: Printer,
) -> (Option<(Printer, Finished)>, Option<Ending>) {
    let (gone_tx, mut gone) = oneshot::channel();
    let mut printed = spawn_printer(printer, live.take_events(), gone_tx);
    let handle = &live.handle;
    let mut signals = Some(Signals::all());
    let mut ended_by = None;
    let mut reader_gone = false;
    loop {
        tokio::select! {
            result = &mut printed => {
                let finished = result.ok().and_then(|(p, done)| done.map(|d| (p, d)));
                return (finished, ended_by);
            }
            // The reader is gone: stop the model instead of generating output nobody
            // will see.
            left = &mut gone, if !reader_gone => {
                reader_gone = true;
                if left.is_ok() {
                    let _ = handle.inputs.send(Input::Cancel).await;
                }
            }
            signal = next_ending(&mut signals) => {
                ended_by = Some(signal);
                if !quiet {
                    let again = match signal {
                        Ending::Interrupt => "press Ctrl+C again",
                        Ending::Terminate | Ending::Hangup => "send it again",
                    };
                    eprintln!("linggen: {}; cancelling ({again} to quit now)", signal.describe());
                }
                let _ = handle.inputs.send(Input::Cancel).await;
                // A second signal quits at once, even while the session is being saved.
                if let Some(signals) = signals.take() {
                    signals.second_quits(|| {});
                }
            }
        }
    }
}
