//! The model's side of background commands: starting one (`Bash` with
//! `run_in_background`), reading it (`BashOutput`) and stopping it (`KillShell`), with
//! Claude Code's argument names.

use std::sync::Arc;

use serde_json::{Value, json};

use super::super::bash::{OUTPUT_CAP_BYTES, shell_command};
use super::super::glob::plural;
use super::super::{ToolContext, ToolName, ToolOutput, args};
use super::{StopBy, TaskError, TaskInfo, TaskState, now_ms};
use crate::protocol::ToolSpec;

/// The ids a call may name a command by (Claude Code's first).
const OUTPUT_ID: &[&str] = &["bash_id", "shell_id", "id", "task_id"];
const KILL_ID: &[&str] = &["shell_id", "bash_id", "id", "task_id"];

pub fn output_spec() -> ToolSpec {
    ToolSpec {
        name: ToolName::BashOutput.name().into(),
        description: "New output of a background command (Bash run_in_background) since the \
                      last read, and whether it still runs. filter: a regex; only matching \
                      lines are returned."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {"bash_id": {"type": "string"}, "filter": {"type": "string"}},
            "required": ["bash_id"]
        }),
    }
}

pub fn kill_spec() -> ToolSpec {
    ToolSpec {
        name: ToolName::KillShell.name().into(),
        description: "Stop a background command and everything it started.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"shell_id": {"type": "string"}},
            "required": ["shell_id"]
        }),
    }
}

/// Starts `command` in the background (its approval was the command's own); the model
/// hears its id and how to read and stop it.
pub async fn start(ctx: &ToolContext, command: &str, confine: bool) -> ToolOutput {
    let sandbox = Arc::clone(&ctx.sandbox);
    // Nested repositories it plants are undone on its reads (see `OutputArgs::run`), which
    // needs the `.git` entries from before it ran.
    let _ = tokio::task::spawn_blocking(move || sandbox.watch_git_entries()).await;
    let cmd = match shell_command(ctx, command, confine) {
        Ok(cmd) => cmd,
        Err(why) => return why.into_output(confine),
    };
    let tasks = Arc::clone(&ctx.tasks);
    let command = command.to_string();
    let started = tokio::task::spawn_blocking(move || tasks.start(cmd, &command)).await;
    match started {
        Ok(Ok(info)) => ToolOutput::ok(
            format!(
                "started in the background as {id}; it keeps running after this turn and ends \
                 with the session. Read its output with BashOutput {{\"bash_id\": \"{id}\"}}; \
                 stop it with KillShell {{\"shell_id\": \"{id}\"}}.",
                id = info.id
            ),
            format!("started in the background as {}", info.id),
        ),
        Ok(Err(e)) if confine => ToolOutput::error(format!(
            "could not start /bin/sh in the sandbox: {e}; the command did not run"
        )),
        Ok(Err(e)) => ToolOutput::error(format!("could not start /bin/sh: {e}")),
        Err(e) => ToolOutput::error(format!("could not start the command: {e}")),
    }
}

/// `BashOutput`'s arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputArgs {
    pub id: String,
    /// Only lines matching it are returned (the others are read all the same).
    pub filter: Option<String>,
}

impl OutputArgs {
    pub fn parse(args: &Value) -> Result<Self, ToolOutput> {
        let tool = ToolName::BashOutput.name();
        let id = args::required_string(args, OUTPUT_ID, tool, r#"{"bash_id": "bash_1"}"#)?;
        let filter =
            args::string(args, &["filter", "regex", "pattern"])?.filter(|f| !f.trim().is_empty());
        if let Some(filter) = &filter {
            regex::Regex::new(filter).map_err(|e| {
                ToolOutput::error(format!("filter `{filter}` is not a valid regex: {e}"))
            })?;
        }
        Ok(OutputArgs { id, filter })
    }

    pub fn summary(&self) -> String {
        match &self.filter {
            Some(filter) => format!("BashOutput {} (lines matching {filter})", self.id),
            None => format!("BashOutput {}", self.id),
        }
    }

    pub async fn run(&self, ctx: &ToolContext) -> ToolOutput {
        let task = match ctx.tasks.find(&self.id) {
            Ok(task) => task,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        let sandbox = Arc::clone(&ctx.sandbox);
        let traps = tokio::task::spawn_blocking(move || sandbox.sweep_git_traps())
            .await
            .unwrap_or_default();
        let unread = super::lock(&task.output).take_unread();
        let info = task.info();
        let mut body = String::new();
        if unread.dropped > 0 {
            body.push_str(&format!(
                "[… {} bytes printed since the last read were dropped: only the last {} KiB \
                 are kept …]\n",
                unread.dropped,
                super::RING_BYTES / 1024
            ));
        }
        let (text, shown) = self.filtered(&unread.text);
        body.push_str(&capped(&text));
        if text.is_empty() && unread.dropped == 0 {
            body.push_str(match &self.filter {
                Some(_) => "(no new lines match the filter)",
                None => "(no new output)",
            });
        }
        for trap in &traps {
            body.push_str(&format!("\n{trap}"));
        }
        let head = status_line(&info);
        ToolOutput::ok(
            format!("{head}\n{}", body.trim_end()),
            format!(
                "{} · {head} · {}",
                info.id,
                plural(shown, "new line", "new lines")
            ),
        )
    }

    /// The lines to show and how many: all of them, or those matching the filter.
    fn filtered(&self, text: &str) -> (String, usize) {
        let Some(filter) = self.filter.as_ref().and_then(|f| regex::Regex::new(f).ok()) else {
            return (text.to_string(), text.lines().count());
        };
        let kept: Vec<&str> = text.lines().filter(|l| filter.is_match(l)).collect();
        let mut out = kept.join("\n");
        if !out.is_empty() {
            out.push('\n');
        }
        (out, kept.len())
    }
}

/// `KillShell`'s arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct KillArgs {
    pub id: String,
}

impl KillArgs {
    pub fn parse(args: &Value) -> Result<Self, ToolOutput> {
        let tool = ToolName::KillShell.name();
        let id = args::required_string(args, KILL_ID, tool, r#"{"shell_id": "bash_1"}"#)?;
        Ok(KillArgs { id })
    }

    pub fn summary(&self) -> String {
        format!("KillShell {}", self.id)
    }

    pub async fn run(&self, ctx: &ToolContext) -> ToolOutput {
        match ctx.tasks.stop(&self.id, StopBy::Model) {
            Ok(()) => {}
            Err(e @ TaskError::NotRunning { .. }) => {
                return ToolOutput::ok(e.to_string(), format!("{} had already ended", self.id));
            }
            Err(e) => return ToolOutput::error(e.to_string()),
        }
        match ctx.tasks.stopped(&self.id).await {
            Ok(info) => {
                let head = status_line(&info);
                ToolOutput::ok(
                    format!("{} was stopped ({head})", info.id),
                    format!("stopped {}", info.id),
                )
            }
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

/// `running for 12 s, 340 lines printed` / `exit 1 after 3 s, 12 lines printed`.
fn status_line(info: &TaskInfo) -> String {
    let end = info.ended_at_ms.unwrap_or_else(now_ms);
    let secs = end.saturating_sub(info.started_at_ms) / 1000;
    let printed = plural(info.lines as usize, "line", "lines");
    match info.state {
        TaskState::Running => format!("running for {secs} s, {printed} printed"),
        _ => format!("{} after {secs} s, {printed} printed", info.state_words()),
    }
}

/// The end of a long read (the latest output is what the model asks about), marked.
fn capped(text: &str) -> String {
    if text.len() <= OUTPUT_CAP_BYTES {
        return text.to_string();
    }
    let mut cut = text.len() - OUTPUT_CAP_BYTES;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    format!("[… {cut} bytes of this read omitted …]\n{}", &text[cut..])
}
