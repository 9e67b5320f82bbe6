//! Background commands: `Bash` with `run_in_background` starts one and returns at once;
//! `BashOutput` reads what it printed since the last read, `KillShell` stops it. The
//! session lists them (`/tasks`, the page) from the `TaskUpdated` events [`Tasks`] sends.
//!
//! A background command is launched exactly like a foreground one (the same sandbox,
//! environment and PID namespace, see `bash::shell_command`); only its end differs:
//!
//! - each command gets a thread of its own that **spawns** it and waits for it. The
//!   parent-death signal that kills a command when linggen dies follows the thread that
//!   forked it, so that thread must live exactly as long as the command;
//! - it ends when the model or a person stops it, when its session ends ([`Tasks::stop_all`],
//!   and [`Drop`] as a backstop), and when linggen dies by any signal (the parent-death
//!   signal, then its PID namespace): nothing outlives linggen;
//! - its output is a ring of the last [`ring::RING_BYTES`] bytes, with the total counted.

mod calls;
mod ring;
#[cfg(test)]
mod tests;

use std::io::Read as _;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::sync::{lock, read, write};

pub use calls::{KillArgs, OutputArgs, kill_spec, output_spec, start};
pub use ring::RING_BYTES;

/// Lines of a command's latest output a person sees in `/tasks` and on the page.
pub const TAIL_LINES: usize = 5;
/// How often a running command's new output is announced, at most (a chatty server
/// would otherwise send an event per line).
const ANNOUNCE_EVERY: Duration = Duration::from_secs(1);
/// How often a command's thread looks at it: whether it ended, whether there is output to
/// announce. A wait on the child alone could not announce output while it runs.
const POLL: Duration = Duration::from_millis(100);
/// After the command ends, how long its output may still arrive (only a process that left
/// the PID namespace's reach could hold the pipe longer; none can).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Where a background command stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Running,
    /// It ended by itself (`exit_code`, or `signal` when something else killed it).
    Exited,
    /// The model (`KillShell`), a person (`/tasks stop`, the page) or the session's end
    /// stopped it (`stopped_by`).
    Stopped,
}

/// Who stopped a background command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopBy {
    /// The model, with `KillShell`.
    Model,
    /// A person: `/tasks stop` in the terminal, the page's Stop button.
    Person,
    /// Its session ended (the person quit, `/clear`, `-p` finished).
    SessionEnd,
}

/// A background command as events carry it (`TaskUpdated`) and frontends show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskInfo {
    /// `bash_1`, `bash_2`…: what `BashOutput` and `KillShell` name.
    pub id: String,
    pub command: String,
    pub state: TaskState,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub stopped_by: Option<StopBy>,
    /// Milliseconds since the Unix epoch.
    pub started_at_ms: u64,
    pub ended_at_ms: Option<u64>,
    /// Bytes and lines printed in all (only the last `RING_BYTES` are kept).
    pub total_bytes: u64,
    pub lines: u64,
    /// Its last lines with text, escapes removed.
    pub tail: Vec<String>,
}

impl TaskInfo {
    /// `running`, `exit 0`, `killed by signal 9`, `stopped by the model`: for people.
    pub fn state_words(&self) -> String {
        match (self.state, self.exit_code, self.signal, self.stopped_by) {
            (TaskState::Running, ..) => "running".into(),
            (TaskState::Stopped, _, _, Some(StopBy::Model)) => "stopped by the model".into(),
            (TaskState::Stopped, _, _, Some(StopBy::Person)) => "stopped".into(),
            (TaskState::Stopped, ..) => "stopped with the session".into(),
            (TaskState::Exited, Some(code), ..) => format!("exit {code}"),
            (TaskState::Exited, None, Some(signal), _) => format!("killed by signal {signal}"),
            (TaskState::Exited, ..) => "ended".into(),
        }
    }
}

/// Why a background command could not be stopped or read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TaskError {
    #[error("no background command `{id}`; {known}")]
    NotFound { id: String, known: String },
    #[error("background command {id} is not running ({state})")]
    NotRunning { id: String, state: String },
}

type Listener = Arc<dyn Fn(TaskInfo) + Send + Sync>;

/// The background commands of one session.
#[derive(Default)]
pub struct Tasks {
    tasks: Mutex<Vec<Arc<Task>>>,
    next: AtomicU32,
    listener: RwLock<Option<Listener>>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("count", &lock(&self.tasks).len())
            .finish()
    }
}

struct Task {
    id: String,
    command: String,
    started_at_ms: u64,
    output: Mutex<ring::Ring>,
    /// Output arrived since the last announcement.
    fresh: AtomicBool,
    life: Mutex<Life>,
    /// The thread that keeps it: woken by a stop, so the end is seen at once.
    keeper: std::sync::OnceLock<std::thread::Thread>,
    /// Its end was announced (the last `TaskUpdated` is out).
    ended: AtomicBool,
}

/// A command's process and how it ended. The process is reaped and signalled under this
/// one lock, so a stop never signals a group id the kernel has already handed on.
struct Life {
    /// The process group (the launched process's pid); `None` once it was reaped.
    pgid: Option<libc::pid_t>,
    state: TaskState,
    exit_code: Option<i32>,
    signal: Option<i32>,
    stopped_by: Option<StopBy>,
    ended_at_ms: Option<u64>,
}

impl Tasks {
    pub fn new() -> Tasks {
        Tasks::default()
    }

    /// Where every change of a command goes (the session publishes it as an event).
    pub fn listen(&self, listener: impl Fn(TaskInfo) + Send + Sync + 'static) {
        let mut slot = write(&self.listener);
        *slot = Some(Arc::new(listener));
    }

    /// Whether this session ever started one (the tools that read and stop them are offered
    /// from then on).
    pub fn any(&self) -> bool {
        !lock(&self.tasks).is_empty()
    }

    pub fn list(&self) -> Vec<TaskInfo> {
        lock(&self.tasks).iter().map(|t| t.info()).collect()
    }

    /// Starts `cmd` (stdio not yet set) as background command `command`; returns its info
    /// once it runs.
    pub(super) fn start(
        self: &Arc<Self>,
        mut cmd: std::process::Command,
        command: &str,
    ) -> std::io::Result<TaskInfo> {
        let (reader, writer) = std::io::pipe()?;
        cmd.stdout(writer.try_clone()?).stderr(writer);
        let id = format!("bash_{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let task = Arc::new(Task {
            id: id.clone(),
            command: command.to_string(),
            started_at_ms: now_ms(),
            output: Mutex::default(),
            fresh: AtomicBool::new(false),
            life: Mutex::new(Life {
                pgid: None,
                state: TaskState::Running,
                exit_code: None,
                signal: None,
                stopped_by: None,
                ended_at_ms: None,
            }),
            keeper: std::sync::OnceLock::new(),
            ended: AtomicBool::new(false),
        });
        let (started, spawned) = std::sync::mpsc::channel();
        let tasks = Arc::downgrade(self);
        let keeper = Arc::clone(&task);
        std::thread::Builder::new()
            .name(format!("linggen-{id}"))
            .spawn(move || keeper.keep(cmd, reader, &started, &tasks))?;
        // The thread answers once the process started or could not start.
        spawned
            .recv()
            .map_err(|_| std::io::Error::other("the command's thread ended before it started"))??;
        lock(&self.tasks).push(Arc::clone(&task));
        let info = task.info();
        self.announce(info.clone());
        Ok(info)
    }

    /// The command with this id, or an error listing the ones there are.
    fn find(&self, id: &str) -> Result<Arc<Task>, TaskError> {
        let tasks = lock(&self.tasks);
        let wanted = id.trim();
        if let Some(task) = tasks.iter().find(|t| t.id == wanted) {
            return Ok(Arc::clone(task));
        }
        let known = match tasks.is_empty() {
            true => "none was started in this session".to_string(),
            false => {
                let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
                format!("there are: {}", ids.join(", "))
            }
        };
        Err(TaskError::NotFound {
            id: wanted.to_string(),
            known,
        })
    }

    /// Kills the command's whole process group. It is seen as stopped once its thread
    /// reaps it (at once: see [`Tasks::stopped`]).
    pub fn stop(&self, id: &str, by: StopBy) -> Result<(), TaskError> {
        let task = self.find(id)?;
        if !task.kill(by) {
            let info = task.info();
            return Err(TaskError::NotRunning {
                id: info.id.clone(),
                state: info.state_words(),
            });
        }
        Ok(())
    }

    /// Waits (up to a few seconds) until a stopped command's end was announced, so that
    /// whoever asked sees it stopped in the session's view too; returns how it stands.
    pub async fn stopped(&self, id: &str) -> Result<TaskInfo, TaskError> {
        let task = self.find(id)?;
        let deadline = Instant::now() + DRAIN_GRACE + Duration::from_secs(1);
        while !task.ended.load(Ordering::Acquire) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(task.info())
    }

    /// Stops every command still running: the session ends.
    pub fn stop_all(&self, by: StopBy) {
        for task in lock(&self.tasks).iter() {
            task.kill(by);
        }
    }

    fn announce(&self, info: TaskInfo) {
        let listener = read(&self.listener).clone();
        if let Some(listener) = listener {
            listener(info);
        }
    }
}

impl Drop for Tasks {
    /// Whatever drops the session's tools without ending it first, nothing is left running.
    fn drop(&mut self) {
        self.stop_all(StopBy::SessionEnd);
    }
}

impl Task {
    fn info(&self) -> TaskInfo {
        let (total_bytes, lines, tail) = {
            let output = lock(&self.output);
            (
                output.total(),
                output.lines(),
                output.tail_lines(TAIL_LINES),
            )
        };
        let life = lock(&self.life);
        TaskInfo {
            id: self.id.clone(),
            command: self.command.clone(),
            state: life.state,
            exit_code: life.exit_code,
            signal: life.signal,
            stopped_by: life.stopped_by,
            started_at_ms: self.started_at_ms,
            ended_at_ms: life.ended_at_ms,
            total_bytes,
            lines,
            tail,
        }
    }

    /// Sends SIGKILL to the group while it is still ours; false when it already ended.
    /// (The PID namespace's first process ignores a gentler signal it has no handler for,
    /// and the keeper outside it would take SIGTERM as SIGKILL for all of them anyway.)
    fn kill(&self, by: StopBy) -> bool {
        let mut life = lock(&self.life);
        let Some(pgid) = life.pgid.filter(|_| life.state == TaskState::Running) else {
            return false;
        };
        life.stopped_by.get_or_insert(by);
        // SAFETY: killpg only sends a signal; the group is not reaped (checked under the
        // lock its reaper holds), so its id is still this command's.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
        if let Some(keeper) = self.keeper.get() {
            keeper.unpark();
        }
        true
    }

    /// The command's thread: spawns it (so that the parent-death signal follows this
    /// thread, which lives as long as the command), reads its output on a second thread,
    /// announces new output now and then, and records how it ended.
    fn keep(
        self: Arc<Self>,
        mut cmd: std::process::Command,
        reader: std::io::PipeReader,
        started: &std::sync::mpsc::Sender<std::io::Result<()>>,
        tasks: &std::sync::Weak<Tasks>,
    ) {
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => {
                let _ = started.send(Err(e));
                return;
            }
        };
        // Our copies of the pipe's write end go with the command, so the reader sees its end.
        drop(cmd);
        let _ = self.keeper.set(std::thread::current());
        lock(&self.life).pgid = Some(child.id() as libc::pid_t);
        let drained = self.read_output(reader);
        let _ = started.send(Ok(()));
        let mut announced = Instant::now();
        loop {
            if self.reap(&mut child) {
                break;
            }
            if announced.elapsed() >= ANNOUNCE_EVERY && self.fresh.swap(false, Ordering::AcqRel) {
                announced = Instant::now();
                if let Some(tasks) = tasks.upgrade() {
                    tasks.announce(self.info());
                }
            }
            std::thread::park_timeout(POLL);
        }
        let _ = drained.recv_timeout(DRAIN_GRACE);
        if let Some(tasks) = tasks.upgrade() {
            tasks.announce(self.info());
        }
        self.ended.store(true, Ordering::Release);
    }

    /// Whether the command ended; records how, under the lock a stop takes.
    fn reap(&self, child: &mut std::process::Child) -> bool {
        use std::os::unix::process::ExitStatusExt as _;
        let mut life = lock(&self.life);
        let status = match child.try_wait() {
            Ok(None) => return false,
            Ok(Some(status)) => Some(status),
            Err(_) => None,
        };
        life.pgid = None;
        life.ended_at_ms = Some(now_ms());
        life.exit_code = status.and_then(|s| s.code());
        life.signal = status.and_then(|s| s.signal());
        life.state = match life.stopped_by {
            Some(_) => TaskState::Stopped,
            None => TaskState::Exited,
        };
        true
    }

    /// Reads the pipe into the ring on a plain thread; the receiver hears when it ends.
    fn read_output(
        self: &Arc<Self>,
        mut reader: std::io::PipeReader,
    ) -> std::sync::mpsc::Receiver<()> {
        let (done, drained) = std::sync::mpsc::channel();
        let task = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name(format!("linggen-{}-out", self.id))
            .spawn(move || {
                let mut buf = [0u8; 16 * 1024];
                loop {
                    match reader.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            lock(&task.output).push(&buf[..n]);
                            task.fresh.store(true, Ordering::Release);
                        }
                    }
                }
                let _ = done.send(());
            });
        if let Err(e) = spawned {
            // Nobody reads: the command would block on a full pipe. Say so in its output.
            lock(&self.output)
                .push(format!("[linggen could not read this output: {e}]\n").as_bytes());
        }
        drained
    }
}

/// The wall clock in ms (the job list shows when each started and ended).
fn now_ms() -> u64 {
    u64::try_from(crate::clock::now_ms()).unwrap_or(0)
}
