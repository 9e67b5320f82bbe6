//! Running an event's handlers: each through the launcher, all at once, each with its own
//! timeout, their answers folded into one [`Outcome`].
//!
//! How a handler runs (doc/hooks.md, doc/security.md "Processes linggen starts"):
//! `/bin/sh -c COMMAND` in the workspace root, the event's JSON on stdin,
//! `CLAUDE_PROJECT_DIR` and `LINGGEN_PROJECT_DIR` set to the root, `PATH` the trusted one.
//! A project's (trusted) hooks run in the session's sandbox without the network, like the
//! model's commands. The person's own hooks run in the sandbox with the network, or
//! unconfined with the person's whole environment when they set `[hooks] unconfined =
//! true` in their own configuration. Either way a handler and everything it started is
//! gone when it ends, times out, or linggen dies.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::input::{self, Common};
use super::outcome::{Ended, Outcome};
use super::{Handler, HookEvent, HookSet, Scope};
use crate::config::PermissionMode;
use crate::protocol::ChatMessage;
use crate::tools::launch::{Confinement, Env, Launch, Lifetime, Program};
use crate::tools::sandbox::Sandbox;

/// At most this much of a handler's stdout and stderr is kept each.
const OUTPUT_LIMIT: usize = 256 * 1024;

/// What a session's runner is made from.
pub struct RunnerSetup {
    pub hooks: HookSet,
    pub root: PathBuf,
    pub session_id: String,
    pub sandbox: Arc<Sandbox>,
    /// `[hooks] unconfined`: the person's own hooks run outside the sandbox.
    pub unconfined_user_hooks: bool,
}

/// One session's hooks, ready to fire.
pub struct Runner {
    setup: RunnerSetup,
    transcript: PathBuf,
}

/// One handler's run, for the audit trail.
#[derive(Debug, Clone)]
pub struct HookRun {
    pub event: HookEvent,
    pub command: String,
    pub file: PathBuf,
    /// `exit 0`, `exit 2 (blocked)`, `timed out after 60s`, `not started: …`.
    pub result: String,
    pub ok: bool,
    pub duration_ms: u64,
}

/// What firing an event did.
#[derive(Debug, Default)]
pub struct Fired {
    pub outcome: Outcome,
    pub runs: Vec<HookRun>,
}

impl Runner {
    pub fn new(setup: RunnerSetup) -> Runner {
        let transcript = transcript_dir().join(format!("{}.jsonl", setup.session_id));
        Runner { setup, transcript }
    }

    pub fn listens(&self, event: HookEvent) -> bool {
        self.setup.hooks.listens(event)
    }

    /// Runs the handlers `event` reaches with `query` (names a matcher is tried against),
    /// each reading the common fields plus `fields`. `history` is written to the
    /// transcript file first, when any handler runs.
    pub async fn fire(
        &self,
        event: HookEvent,
        query: &[&str],
        fields: Map<String, Value>,
        history: &[ChatMessage],
        mode: PermissionMode,
    ) -> Fired {
        let handlers = self.setup.hooks.matching(event, query);
        if handlers.is_empty() {
            return Fired::default();
        }
        self.write_transcript(history);
        let common = Common {
            session_id: &self.setup.session_id,
            transcript_path: &self.transcript,
            cwd: &self.setup.root,
            permission_mode: mode,
        };
        let stdin = input::stdin_json(&common, event, &fields).to_string();
        let runs = handlers.iter().map(|h| self.run_one(h, &stdin));
        let ended = futures_util::future::join_all(runs).await;
        let mut fired = Fired::default();
        for (handler, (ended, elapsed)) in handlers.iter().zip(ended) {
            fired.outcome.add(event, &handler.command, &ended);
            fired.runs.push(HookRun {
                event,
                command: handler.command.clone(),
                file: handler.file.clone(),
                result: describe(&ended, handler.timeout),
                ok: matches!(ended, Ended::Exited { code: Some(0), .. }),
                duration_ms: elapsed.as_millis() as u64,
            });
        }
        fired
    }

    async fn run_one(&self, handler: &Handler, stdin: &str) -> (Ended, Duration) {
        let started = Instant::now();
        let ended = match tokio::time::timeout(handler.timeout, self.spawn_and_wait(handler, stdin))
            .await
        {
            Ok(ended) => ended,
            // Dropping the future kills the handler and, its lifetime being contained,
            // everything it started.
            Err(_) => Ended::TimedOut,
        };
        (ended, started.elapsed())
    }

    async fn spawn_and_wait(&self, handler: &Handler, stdin: &str) -> Ended {
        let widened;
        let (env, confinement) = match handler.scope {
            Scope::User if self.setup.unconfined_user_hooks => (
                Env::Person,
                Confinement::Unconfined("[hooks] unconfined = true: the person's own hooks"),
            ),
            Scope::User => {
                // The person's own notifier may need the network; the model cannot change
                // what the hook runs, only what it reads.
                widened = self.setup.sandbox.widened(true, &[]);
                confinement_for(&widened)
            }
            Scope::Project => confinement_for(&self.setup.sandbox),
        };
        let launch = Launch {
            program: Program::Path(Path::new("/bin/sh")),
            env,
            confinement,
            lifetime: Lifetime::Contained,
        };
        let mut cmd = match launch.tokio_command() {
            Ok(cmd) => cmd,
            Err(e) => return Ended::NotStarted(e.to_string()),
        };
        cmd.arg("-c")
            .arg(&handler.command)
            .current_dir(&self.setup.root)
            .env("CLAUDE_PROJECT_DIR", &self.setup.root)
            .env("LINGGEN_PROJECT_DIR", &self.setup.root)
            .env("PATH", crate::tools::launch::program::trusted_path_var())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => return Ended::NotStarted(e.to_string()),
        };
        let (mut out, mut err) = (child.stdout.take(), child.stderr.take());
        if let Some(mut pipe) = child.stdin.take() {
            // A handler that does not read its input closes the pipe: not an error.
            let bytes = stdin.as_bytes().to_vec();
            tokio::spawn(async move {
                let _ = pipe.write_all(&bytes).await;
            });
        }
        let (stdout, stderr, status) = tokio::join!(
            read_limited(out.as_mut()),
            read_limited(err.as_mut()),
            child.wait()
        );
        match status {
            Ok(status) => Ended::Exited {
                code: status.code(),
                stdout,
                stderr,
            },
            Err(e) => Ended::NotStarted(e.to_string()),
        }
    }

    /// The conversation so far as the transcript a handler may read. Failing to write it
    /// never stops a hook: the path then holds an older copy, or nothing.
    fn write_transcript(&self, history: &[ChatMessage]) {
        let text = input::transcript(history, &self.setup.session_id, &self.setup.root);
        if private_dir(&transcript_dir()).is_ok() {
            let _ = crate::durable::replace(
                &self.transcript,
                text.as_bytes(),
                crate::durable::Options::private(),
            );
        }
    }
}

fn confinement_for(sandbox: &Sandbox) -> (Env<'_>, Confinement<'_>) {
    let confinement = if sandbox.settings().enabled {
        Confinement::Sandbox(sandbox)
    } else {
        Confinement::Unconfined("[sandbox] enabled = false")
    };
    (Env::Scrubbed(sandbox), confinement)
}

async fn read_limited<R: tokio::io::AsyncRead + Unpin>(pipe: Option<&mut R>) -> String {
    let Some(pipe) = pipe else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            // Read on past the limit so a chatty handler never blocks on a full pipe.
            Ok(n) if kept.len() < OUTPUT_LIMIT => kept.extend_from_slice(&buf[..n]),
            Ok(_) => {}
        }
    }
    kept.truncate(OUTPUT_LIMIT);
    String::from_utf8_lossy(&kept).into_owned()
}

fn describe(ended: &Ended, timeout: Duration) -> String {
    match ended {
        Ended::Exited { code: Some(2), .. } => "exit 2 (blocks)".into(),
        Ended::Exited { code: Some(c), .. } => format!("exit {c}"),
        Ended::Exited { code: None, .. } => "killed by a signal".into(),
        Ended::TimedOut => format!("timed out after {}s", timeout.as_secs_f64()),
        Ended::NotStarted(why) => format!("not started: {why}"),
    }
}

/// Where transcripts for hooks are written: a folder of the person's own, outside
/// `$LINGGEN_HOME` (which the sandbox hides from confined hooks) and outside the root.
fn transcript_dir() -> PathBuf {
    std::env::temp_dir().join(format!("linggen-{}-transcripts", uid()))
}

fn uid() -> libc::uid_t {
    // SAFETY: getuid cannot fail and touches no memory of ours.
    unsafe { libc::getuid() }
}

/// Makes `dir` (0700) or checks that an existing one is ours, private and not a link, so
/// another user cannot read a transcript or plant a link where one is written.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    let ours = meta.is_dir() && meta.uid() == uid();
    if !ours || meta.permissions().mode() & 0o077 != 0 {
        return Err(std::io::Error::other("not a private folder of ours"));
    }
    Ok(())
}
