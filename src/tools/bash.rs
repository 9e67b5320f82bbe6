//! `Bash`: one shell command in the workspace root, with a timeout and an output cap.
//!
//! The command runs under `/bin/sh -c` in its own process group, so a timeout or a
//! cancellation (dropping the future) kills everything it started, not just the shell.
//! stdout and stderr share one pipe so the model sees them interleaved as a terminal
//! would; stdin is closed so nothing waits for input.

use std::io::Read as _;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::Command;
use tokio::sync::oneshot;

use super::ToolName;
use super::glob::plural;
use super::guard::{paths, shell};
use super::launch::{Confinement, Env, Launch, LaunchError, Lifetime, Program};
use super::terminal_text::strip_controls;
use super::{Access, ToolContext, ToolOutput, Unconfined, args, sandbox};
use crate::protocol::ToolSpec;

pub const DEFAULT_TIMEOUT_MS: u64 = crate::config::tools::BASH_TIMEOUT_MS;
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Output kept for the model: the first and last half of this many bytes.
pub const OUTPUT_CAP_BYTES: usize = 30_000;
/// After the shell exits and its group is killed, how long to wait for the pipe to drain.
/// Only a process that left the group (`setsid`) can hold it open longer.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: ToolName::Bash.name().into(),
        description:
            "Run a command line in the workspace root, sandboxed (writes only there and in \
             $TMPDIR; no network). Output capped; timeout 30 s."
                .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "cmd": {"type": "string"},
                "timeout_ms": {"type": "integer"},
                "run_in_background": {"type": "boolean"},
                "dangerouslyDisableSandbox": {"type": "boolean"}
            },
            "required": ["cmd"]
        }),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct BashArgs {
    pub command: String,
    pub timeout_ms: u64,
    /// `dangerouslyDisableSandbox`: run unconfined (always asks a person).
    pub unsandboxed: bool,
    /// `run_in_background`: start it, return its id at once (no timeout).
    pub background: bool,
}

impl BashArgs {
    pub fn parse(ctx: &ToolContext, args: &Value) -> Result<Self, ToolOutput> {
        let command = args::required_string(
            args,
            args::keys::COMMAND,
            ToolName::Bash.name(),
            r#"{"cmd": "git status"}"#,
        )?;
        let timeout_ms = args::uint(args, args::keys::TIMEOUT)?
            .filter(|t| *t > 0)
            .unwrap_or(ctx.bash_timeout_ms)
            .min(MAX_TIMEOUT_MS);
        let unsandboxed = args::boolean(
            args,
            &["dangerouslyDisableSandbox", "dangerously_disable_sandbox"],
        )?
        .unwrap_or(false);
        let background =
            args::boolean(args, &["run_in_background", "background"])?.unwrap_or(false);
        Ok(BashArgs {
            command,
            timeout_ms,
            unsandboxed,
            background,
        })
    }

    /// One line for tool lines. A long command is cut, saying how much is not shown; the
    /// approval prompt shows all of it (`Prepared::approval_display`).
    pub fn summary(&self) -> String {
        const MAX: usize = 120;
        let tool = match self.background {
            true => "Bash (background)",
            false => "Bash",
        };
        match self.command.char_indices().nth(MAX) {
            None => format!("{tool}: {}", self.command),
            Some((cut, _)) => format!(
                "{tool}: {}… [+{} chars]",
                &self.command[..cut],
                self.command[cut..].chars().count()
            ),
        }
    }

    /// Runs the shell analysis; a floor refusal becomes the error observation.
    pub fn access(&self, ctx: &ToolContext) -> Result<Access, ToolOutput> {
        match shell::analyze_in(
            &self.command,
            &ctx.root,
            &ctx.extra_roots,
            ctx.linggen_home.as_deref(),
        ) {
            Ok(analysis) => Ok(Access::Command {
                command: self.command.clone(),
                analysis,
                unconfined: self.unconfined(ctx),
            }),
            Err(reason) => Err(ToolOutput::error(format!(
                "command refused (never runs): {reason}"
            ))),
        }
    }

    /// Why this command would run outside the sandbox in a way that needs a person, if it
    /// would: asked for by the model, or no sandbox here while `[sandbox] unconfined` is
    /// `ask` (fail closed).
    fn unconfined(&self, ctx: &ToolContext) -> Option<Unconfined> {
        if self.unsandboxed {
            return Some(Unconfined {
                reason: "runs outside the sandbox (dangerouslyDisableSandbox)".into(),
                each_time: true,
            });
        }
        let why = ctx.sandbox.unconfined_reason()?;
        ctx.sandbox.unconfined_asks().then(|| Unconfined {
            reason: format!("commands run unconfined here: {why}"),
            each_time: false,
        })
    }

    pub async fn run(&self, ctx: &ToolContext) -> ToolOutput {
        let confine = !self.unsandboxed && ctx.sandbox.unconfined_reason().is_none();
        if self.background {
            return super::background::start(ctx, &self.command, confine).await;
        }
        let timeout = Duration::from_millis(self.timeout_ms);
        let sandbox = Arc::clone(&ctx.sandbox);
        let _ = tokio::task::spawn_blocking(move || sandbox.watch_git_entries()).await;
        let mut output = self.run_command(ctx, timeout, confine).await;
        let sandbox = Arc::clone(&ctx.sandbox);
        let traps = tokio::task::spawn_blocking(move || sandbox.sweep_git_traps())
            .await
            .unwrap_or_default();
        if !traps.is_empty() {
            output.model.push_str(&format!("\n{}", traps.join("\n")));
            output.summary.push_str(" · a git trap was undone");
            let excerpt = output.excerpt.get_or_insert_with(String::new);
            if !excerpt.is_empty() {
                excerpt.push('\n');
            }
            excerpt.push_str(&traps.join("\n"));
        }
        output
    }

    async fn run_command(&self, ctx: &ToolContext, timeout: Duration, confine: bool) -> ToolOutput {
        match execute(ctx, &self.command, timeout, confine).await {
            Ok(result) => {
                let wall = match &result.status {
                    Some(status) if confine && !status.success() => {
                        sandbox::walls::explain(&ctx.sandbox, &result.output)
                    }
                    _ => None,
                };
                let mut output = result.into_output(self.timeout_ms);
                if let Some(wall) = wall {
                    output.model.push_str(&format!("\n{wall}"));
                    output.summary.push_str(" · blocked by the sandbox");
                }
                output
            }
            Err(why) => why.into_output(confine),
        }
    }
}

/// Why a command did not start.
pub(super) enum Start {
    Sandbox(String),
    Io(std::io::Error),
}

impl Start {
    /// What the model reads: the command did not run, and why.
    pub(super) fn into_output(self, confine: bool) -> ToolOutput {
        match self {
            Start::Sandbox(why) => ToolOutput::error(format!(
                "the sandbox could not be set up, so the command did not run: {why}. Where \
                 the kernel cannot confine commands, a person can set [sandbox] unconfined = \
                 \"allow\" in ~/.linggen/linggen-agent.toml (see doc/security.md)"
            )),
            Start::Io(e) if confine => ToolOutput::error(format!(
                "could not start /bin/sh in the sandbox: {e}; the command did not run (see \
                 doc/security.md for what the sandbox needs: Landlock and user namespaces)"
            )),
            Start::Io(e) => ToolOutput::error(format!("could not start /bin/sh: {e}")),
        }
    }
}

impl From<std::io::Error> for Start {
    fn from(e: std::io::Error) -> Self {
        Start::Io(e)
    }
}

/// What a finished command left behind.
#[derive(Debug)]
struct Finished {
    /// `None` when it timed out.
    status: Option<std::process::ExitStatus>,
    output: String,
    /// Lines the command printed in all (the output kept may be cut in the middle).
    lines: usize,
}

/// Lines of a failed command's output shown to the person.
const EXCERPT_LINES: usize = 5;

impl Finished {
    fn into_output(self, timeout_ms: u64) -> ToolOutput {
        use std::os::unix::process::ExitStatusExt as _;
        let lines = self.lines;
        let excerpt = excerpt(&self.output, lines);
        let body = if self.output.is_empty() {
            "(no output)".to_string()
        } else {
            self.output
        };
        let (head, summary, is_error) = match self.status {
            None => {
                let secs = timeout_ms as f64 / 1000.0;
                (
                    format!(
                        "timed out after {secs} s and was killed; pass a larger timeout_ms (max \
                         600000) or run something quicker"
                    ),
                    format!("timed out after {secs} s"),
                    true,
                )
            }
            Some(status) => match (status.code(), status.signal()) {
                (Some(code), _) => (
                    format!("exit {code}"),
                    format!("exit {code}, {}", plural(lines, "line", "lines")),
                    code != 0,
                ),
                (None, Some(signal)) => (
                    format!("killed by signal {signal}"),
                    format!("killed by signal {signal}"),
                    true,
                ),
                (None, None) => ("ended".into(), "ended".into(), true),
            },
        };
        ToolOutput {
            model: format!("{head}\n{body}"),
            summary,
            diff: None,
            // A success says enough in its summary; a failure shows how it failed.
            excerpt: excerpt.filter(|_| is_error),
            is_error,
            fault: None,
            images: Box::default(),
        }
    }
}

/// The first lines of a command's output and how many more there were, for a person.
fn excerpt(output: &str, lines: usize) -> Option<String> {
    let shown: Vec<&str> = output.lines().take(EXCERPT_LINES).collect();
    if shown.iter().all(|l| l.trim().is_empty()) {
        return None;
    }
    let mut text = shown.join("\n");
    let more = lines.saturating_sub(shown.len());
    if more > 0 {
        text.push_str(&format!("\n… {}", plural(more, "more line", "more lines")));
    }
    Some(text)
}

/// Lines of the person's own command (`!cmd`) shown from the head and from the tail of its
/// output; the lines between are counted.
const SHOWN_HEAD: usize = 10;
const SHOWN_TAIL: usize = 5;

/// What the person sees under their own command's result line: its whole output, or for a
/// long one the first and last lines with the exact count of those between and where to
/// read them (`linggen runs show RUN --full`). `None` for a command that printed nothing or
/// did not run (a denial, a timeout: the summary says so and the excerpt, if any, stays).
/// The count is of the lines kept; a huge output was already cut in its middle, and the
/// marker saying how many bytes went is one of the lines.
pub fn shown_to_person(output: &ToolOutput, run_id: &str) -> Option<String> {
    if !output.summary.starts_with("exit ") {
        return None;
    }
    let (_, body) = output.model.split_once('\n')?;
    if body == "(no output)" {
        return None;
    }
    let lines: Vec<&str> = body.lines().collect();
    if lines.len() <= SHOWN_HEAD + SHOWN_TAIL + 1 {
        return Some(lines.join("\n"));
    }
    let hidden = lines.len() - SHOWN_HEAD - SHOWN_TAIL;
    let mut shown = lines[..SHOWN_HEAD].to_vec();
    let fold = format!(
        "… {} (all of it: linggen runs show {run_id} --full)",
        plural(hidden, "more line", "more lines")
    );
    shown.push(&fold);
    shown.extend_from_slice(&lines[lines.len() - SHOWN_TAIL..]);
    Some(shown.join("\n"))
}

/// Kills the command's whole process group when dropped: on timeout, on cancellation, and
/// after a normal exit (to reap anything it left running in the background).
pub(super) struct ProcessGroup {
    pub(super) pgid: libc::pid_t,
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        // SAFETY: killpg only sends a signal. The group id is our child's pid, which the
        // kernel does not hand to another process while the group still has members, so
        // this cannot hit an unrelated group; if the group is gone it fails with ESRCH.
        unsafe {
            libc::killpg(self.pgid, libc::SIGKILL);
        }
    }
}

/// `/bin/sh -c command` in the root with the launcher's four decisions made (confined
/// unless `confine` is false, contained, scrubbed) and the variables a command needs; the
/// caller adds stdio and spawns it. Also the start of a background command.
pub(super) fn shell_command(
    ctx: &ToolContext,
    command: &str,
    confine: bool,
) -> Result<std::process::Command, Start> {
    let launch = Launch {
        program: Program::Path(Path::new("/bin/sh")),
        env: Env::Scrubbed(&ctx.sandbox),
        confinement: if confine {
            Confinement::Sandbox(&ctx.sandbox)
        } else {
            Confinement::Unconfined(
                "a person approved it outside the sandbox, or the sandbox is off",
            )
        },
        lifetime: Lifetime::Contained,
    };
    let mut cmd = launch.command().map_err(|e| match e {
        LaunchError::Sandbox(why) => Start::Sandbox(why),
        other => Start::Io(std::io::Error::other(other.to_string())),
    })?;
    cmd.arg("-c")
        .arg(command)
        .current_dir(paths::canonical_root(&ctx.root))
        .stdin(Stdio::null())
        // The analysis resolves `cd dir` inside the root; CDPATH would send it elsewhere.
        // BASH_ENV/ENV would run a script before the analysed command.
        .env_remove("CDPATH")
        .env_remove("BASH_ENV")
        .env_remove("ENV")
        // With `.` or an empty entry in PATH, an allowlisted name like `ls` would run a
        // file from the workspace; only absolute entries are kept.
        .env("PATH", absolute_path_entries())
        // Nothing can answer a prompt or scroll a pager.
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0");
    refuse_embedded_bare_repositories(&mut cmd);
    Ok(cmd)
}

async fn execute(
    ctx: &ToolContext,
    command: &str,
    timeout: Duration,
    confine: bool,
) -> Result<Finished, Start> {
    let (reader, writer) = std::io::pipe()?;
    let mut child = {
        let mut cmd = shell_command(ctx, command, confine)?;
        cmd.stdout(writer.try_clone()?).stderr(writer);
        let mut cmd = Command::from(cmd);
        cmd.kill_on_drop(true);
        // The command (and with it our copies of the pipe's write end) is dropped at the end
        // of this block, so the reader sees end-of-file once the children are gone.
        cmd.spawn()?
    };
    let group = child.id().map(|pid| ProcessGroup {
        pgid: pid as libc::pid_t,
    });
    let capture = Arc::new(Mutex::new(Capture::default()));
    let drained = spawn_reader(reader, Arc::clone(&capture));

    let status = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => Some(status.map_err(Start::Io)?),
        Err(_) => None,
    };
    drop(group);
    let _ = tokio::time::timeout(DRAIN_GRACE, drained).await;
    let (output, lines) = match capture.lock() {
        Ok(capture) => (capture.render(), capture.lines()),
        Err(poisoned) => {
            let capture = poisoned.into_inner();
            (capture.render(), capture.lines())
        }
    };
    Ok(Finished {
        status,
        output,
        lines,
    })
}

/// A bare repository committed inside the workspace (a test fixture, or one the model
/// wrote file by file with Write: no path component is `.git`) carries its own config,
/// and `cd fixture.git && git status` would obey it; `core.fsmonitor` alone runs a
/// program. `safe.bareRepository=explicit` makes git refuse to discover such repositories.
/// It is only honoured from protected config, which includes `GIT_CONFIG_*` from the
/// environment, so it is appended there after any entries the user already has.
pub(super) fn refuse_embedded_bare_repositories(cmd: &mut std::process::Command) {
    let existing = std::env::var("GIT_CONFIG_COUNT")
        .ok()
        .and_then(|n| n.trim().parse::<usize>().ok())
        .unwrap_or(0);
    cmd.env(format!("GIT_CONFIG_KEY_{existing}"), "safe.bareRepository")
        .env(format!("GIT_CONFIG_VALUE_{existing}"), "explicit")
        .env("GIT_CONFIG_COUNT", (existing + 1).to_string());
}

fn absolute_path_entries() -> std::ffi::OsString {
    only_absolute(&std::env::var_os("PATH").unwrap_or_default())
}

fn only_absolute(path: &std::ffi::OsStr) -> std::ffi::OsString {
    let kept: Vec<std::path::PathBuf> = std::env::split_paths(path)
        .filter(|p| p.is_absolute())
        .collect();
    std::env::join_paths(kept).unwrap_or_default()
}

/// Reads the pipe on a plain thread (a blocking read of a pipe is simplest there) and
/// signals when it reaches end-of-file.
fn spawn_reader(
    mut reader: std::io::PipeReader,
    capture: Arc<Mutex<Capture>>,
) -> oneshot::Receiver<()> {
    let (done, drained) = oneshot::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => match capture.lock() {
                    Ok(mut c) => c.push(&buf[..n]),
                    Err(_) => break,
                },
            }
        }
        let _ = done.send(());
    });
    drained
}

/// Keeps the first and the last `OUTPUT_CAP_BYTES / 2` bytes: the head usually says what
/// ran, the tail how it ended (the error, the test summary).
#[derive(Debug, Default)]
struct Capture {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: usize,
    newlines: usize,
    ends_with_newline: bool,
}

impl Capture {
    /// Lines in everything the command printed, also the part not kept.
    fn lines(&self) -> usize {
        self.newlines + usize::from(self.total > 0 && !self.ends_with_newline)
    }

    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len();
        self.newlines += bytes.iter().filter(|&&b| b == b'\n').count();
        if let Some(&last) = bytes.last() {
            self.ends_with_newline = last == b'\n';
        }
        let half = OUTPUT_CAP_BYTES / 2;
        let room = half.saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        if bytes.len() >= half {
            self.tail.clear();
            bytes = &bytes[bytes.len() - half..];
        }
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(half);
        self.tail.drain(..excess);
    }

    fn render(&self) -> String {
        let omitted = self.total - self.head.len() - self.tail.len();
        let mut out = plain_text(&String::from_utf8_lossy(&self.head));
        if omitted > 0 {
            out.push_str(&format!("\n[… {omitted} bytes omitted …]\n"));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        out.push_str(&plain_text(&String::from_utf8_lossy(&tail)));
        out
    }
}

/// Strips terminal escape sequences and control characters: colours waste the model's
/// tokens, and escapes could rewrite the screen of whoever displays the output. A lone
/// `\r` (progress bars) becomes a line break first, since the shared sanitizer drops it.
pub(super) fn plain_text(text: &str) -> String {
    let lines = text.replace("\r\n", "\n").replace('\r', "\n");
    strip_controls(&lines).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn ctx() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(&dir.path().canonicalize().unwrap());
        (dir, ctx)
    }

    async fn bash(ctx: &ToolContext, args: Value) -> ToolOutput {
        BashArgs::parse(ctx, &args).unwrap().run(ctx).await
    }

    #[tokio::test]
    async fn captures_stdout_stderr_and_exit_code() {
        let (_d, ctx) = ctx();
        let out = bash(&ctx, json!({"cmd": "echo out; echo err >&2; exit 3"})).await;
        assert_eq!(out.model, "exit 3\nout\nerr\n");
        assert_eq!(out.summary, "exit 3, 2 lines");
        assert!(out.is_error);
        let out = bash(&ctx, json!({"command": "pwd"})).await;
        assert!(!out.is_error);
        assert_eq!(
            out.model.trim_end(),
            format!("exit 0\n{}", ctx.root.display())
        );
        let out = bash(&ctx, json!({"cmd": "true"})).await;
        assert_eq!(out.model, "exit 0\n(no output)");
    }

    #[tokio::test]
    async fn stdin_is_closed() {
        let (_d, ctx) = ctx();
        let out = bash(&ctx, json!({"cmd": "cat; echo done", "timeout_ms": 5000})).await;
        assert_eq!(out.model, "exit 0\ndone\n");
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let (dir, ctx) = ctx();
        let marker = dir.path().join("survived");
        let command = format!("(sleep 1; touch {}) & sleep 30", marker.display());
        let started = Instant::now();
        let out = bash(&ctx, json!({"cmd": command, "timeout_ms": 300})).await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            out.is_error && out.summary.starts_with("timed out"),
            "{}",
            out.model
        );
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!marker.exists(), "a background child outlived the timeout");
    }

    #[tokio::test]
    async fn background_leftovers_do_not_hold_the_call() {
        let (_d, ctx) = ctx();
        let started = Instant::now();
        let out = bash(&ctx, json!({"cmd": "sleep 30 & echo started"})).await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(out.model, "exit 0\nstarted\n");
    }

    #[tokio::test]
    async fn cancellation_kills_the_group() {
        let (dir, ctx) = ctx();
        let marker = dir.path().join("survived");
        let args = BashArgs {
            command: format!("sleep 1; touch {}", marker.display()),
            timeout_ms: 10_000,
            unsandboxed: false,
            background: false,
        };
        let run = args.run(&ctx);
        assert!(
            tokio::time::timeout(Duration::from_millis(200), run)
                .await
                .is_err()
        );
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(
            !marker.exists(),
            "the command outlived its cancelled future"
        );
    }

    #[tokio::test]
    async fn output_is_capped_head_and_tail() {
        let (_d, ctx) = ctx();
        let out = bash(&ctx, json!({"cmd": "seq 1 20000"})).await;
        assert!(out.model.starts_with("exit 0\n1\n2\n3\n"));
        assert!(out.model.ends_with("19999\n20000\n"));
        assert!(out.model.contains("bytes omitted …]"), "no marker");
        assert!(out.model.len() < OUTPUT_CAP_BYTES + 200);
    }

    /// A failure shows the person its first lines, and the count is of every line the
    /// command printed, not of the part kept under the cap.
    #[tokio::test]
    async fn a_failed_command_shows_its_first_lines_and_the_real_count() {
        let (_d, ctx) = ctx();
        let out = bash(&ctx, json!({"cmd": "seq 1 20000; echo boom >&2; exit 2"})).await;
        assert!(out.is_error);
        assert_eq!(out.summary, "exit 2, 20001 lines");
        let excerpt = out.excerpt.unwrap_or_default();
        assert!(excerpt.starts_with("1\n2\n3\n4\n5\n"), "{excerpt}");
        assert!(excerpt.ends_with("… 19996 more lines"), "{excerpt}");
        let ok = bash(&ctx, json!({"cmd": "echo fine"})).await;
        assert_eq!((ok.summary.as_str(), ok.excerpt), ("exit 0, 1 line", None));
    }

    /// The person's own command shows all of a short output; a long one its head and tail
    /// with exactly the lines between counted; one that printed nothing or did not run,
    /// nothing more than its summary.
    #[tokio::test]
    async fn a_persons_command_shows_its_output_folded_with_an_exact_count() {
        let (_d, ctx) = ctx();
        let short = bash(&ctx, json!({"cmd": "printf 'a\\nb\\nc\\n'"})).await;
        assert_eq!(shown_to_person(&short, "r1").as_deref(), Some("a\nb\nc"));
        let long = bash(&ctx, json!({"cmd": "seq 1 100"})).await;
        let shown = shown_to_person(&long, "r1").unwrap_or_default();
        let rows: Vec<&str> = shown.lines().collect();
        assert_eq!(rows.len(), 16, "{shown}");
        assert_eq!(
            rows[..10],
            ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]
        );
        assert_eq!(
            rows[10],
            "… 85 more lines (all of it: linggen runs show r1 --full)"
        );
        assert_eq!(rows[11..], ["96", "97", "98", "99", "100"]);
        let quiet = bash(&ctx, json!({"cmd": "true"})).await;
        assert_eq!(shown_to_person(&quiet, "r1"), None);
        assert_eq!(
            shown_to_person(&ToolOutput::error("not run: denied"), "r1"),
            None
        );
    }

    #[test]
    fn capture_keeps_exact_head_and_tail() {
        let mut c = Capture::default();
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        for chunk in data.chunks(777) {
            c.push(chunk);
        }
        let half = OUTPUT_CAP_BYTES / 2;
        assert_eq!(c.head, data[..half]);
        assert_eq!(
            c.tail.iter().copied().collect::<Vec<_>>(),
            data[data.len() - half..]
        );
        assert_eq!(c.total, data.len());
    }

    #[test]
    fn terminal_escapes_are_stripped() {
        let raw = "\x1b[1;31merror\x1b[0m: x\r\n\x1b]0;title\x07ok\r50%\r100%\x07\n";
        assert_eq!(plain_text(raw), "error: x\nok\n50%\n100%\n");
    }

    #[tokio::test]
    async fn embedded_bare_repositories_are_not_used() {
        let (dir, ctx) = ctx();
        let init = std::process::Command::new("git")
            .args(["init", "-q", "--bare", "fixture.git"])
            .current_dir(dir.path())
            .status();
        if !init.is_ok_and(|s| s.success()) {
            return; // no git here
        }
        let out = bash(
            &ctx,
            json!({"cmd": "cd fixture.git && git rev-parse --git-dir"}),
        )
        .await;
        assert!(
            out.is_error && out.model.contains("safe.bareRepository"),
            "{}",
            out.model
        );
    }

    #[test]
    fn relative_path_entries_are_dropped() {
        let path = std::ffi::OsStr::new(".:/usr/bin::bin:/bin");
        assert_eq!(only_absolute(path), "/usr/bin:/bin");
    }

    #[test]
    fn access_applies_the_floor_and_analysis() {
        let (_d, ctx) = ctx();
        let args = BashArgs::parse(&ctx, &json!({"cmd": "echo $(id)"})).unwrap();
        let err = args.access(&ctx).unwrap_err();
        assert!(
            err.is_error && err.model.contains("never runs"),
            "{}",
            err.model
        );
        let args =
            BashArgs::parse(&ctx, &json!({"cmd": "ls -la", "timeout": "999999999"})).unwrap();
        assert_eq!(args.timeout_ms, MAX_TIMEOUT_MS);
        let Ok(Access::Command { analysis, .. }) = args.access(&ctx) else {
            panic!("expected a command");
        };
        assert!(analysis.is_read_only());
        assert_eq!(
            BashArgs::parse(&ctx, &json!({"cmd": "x"}))
                .unwrap()
                .timeout_ms,
            30_000
        );
    }

    #[test]
    fn a_long_command_summary_says_how_much_is_cut() {
        let (_d, ctx) = ctx();
        let command = format!("echo safe{}&& touch x", " ".repeat(300));
        let args = BashArgs::parse(&ctx, &json!({ "command": command })).unwrap();
        let summary = args.summary();
        assert!(summary.ends_with("… [+199 chars]"), "{summary:?}");
        assert!(!summary.contains("touch"));
        let short = BashArgs::parse(&ctx, &json!({"command": "ls -la"})).unwrap();
        assert_eq!(short.summary(), "Bash: ls -la");
    }
}
