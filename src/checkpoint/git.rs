//! Running the `git` program against the private checkpoint store, with none of the
//! person's environment or configuration: no inherited `GIT_*` variable, no system or global
//! config (so their filters, hooks, fsmonitor and commit signing never run), plain C locale.

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use super::CheckpointError;
use crate::tools::launch;

/// Given with `-c` on every call into the store. No line-ending conversion (restore must give
/// back the exact bytes), no fsmonitor or hook program, no automatic gc (it would pack and
/// prune on its own schedule, in the middle of a turn), raw paths in output. `core.bare` is
/// overridden because the store is created bare but always used with a work tree.
const CONFIG: &[&str] = &[
    "core.bare=false",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.quotePath=false",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.hooksPath=/dev/null",
    "core.attributesFile=/dev/null",
    "gc.auto=0",
    "maintenance.auto=false",
];

/// The identity written into snapshot commits; nobody pushes these anywhere.
const IDENTITY: (&str, &str) = ("linggen", "linggen@localhost");

/// One way of calling git on the store: its directory and the work tree.
#[derive(Debug, Clone)]
pub(super) struct Git {
    program: OsString,
    git_dir: PathBuf,
    root: PathBuf,
}

impl Git {
    pub(super) fn new(program: &OsStr, git_dir: &Path, root: &Path) -> Self {
        Self {
            program: program.to_owned(),
            git_dir: git_dir.to_owned(),
            root: root.to_owned(),
        }
    }

    fn command<I, S>(&self, args: I) -> Result<Command, CheckpointError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = neutral(&self.program)?;
        cmd.env("GIT_DIR", &self.git_dir)
            .env("GIT_WORK_TREE", &self.root)
            // Paths given and printed are then relative to the root, whatever our own cwd.
            .current_dir(&self.root);
        for setting in CONFIG {
            cmd.arg("-c").arg(setting);
        }
        cmd.args(args);
        Ok(cmd)
    }

    /// Runs git with `input` on its stdin (or none); its stdout, or an error naming `what`.
    pub(super) fn run<I, S>(
        &self,
        what: &str,
        args: I,
        input: Option<&[u8]>,
    ) -> Result<Vec<u8>, CheckpointError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let (code, stdout, stderr) = execute(self.command(args)?, &self.program, input)?;
        if code != Some(0) {
            return Err(git_error(&self.git_dir, what, &stderr));
        }
        Ok(stdout)
    }

    /// The full commit id `rev` names, `None` when it names nothing (`rev-parse --verify
    /// --quiet` then exits 1 without a word).
    pub(super) fn commit_of(&self, rev: &str) -> Result<Option<String>, CheckpointError> {
        let what = format!("look up {rev}");
        let args = [
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ];
        let (code, stdout, stderr) = execute(self.command(args)?, &self.program, None)?;
        match code {
            Some(0) => Ok(Some(String::from_utf8_lossy(&stdout).trim().to_owned())),
            Some(1) if stderr.trim_ascii().is_empty() => Ok(None),
            _ => Err(git_error(&self.git_dir, &what, &stderr)),
        }
    }

    /// The NUL-separated paths git prints for `args`, keeping those `keep` accepts, and
    /// stopping git as soon as more than `limit` are kept: listing a home folder by mistake
    /// must fail in a moment, not after a walk of the whole disk.
    pub(super) fn list_paths<I, S>(
        &self,
        what: &str,
        args: I,
        limit: usize,
        keep: impl Fn(&[u8]) -> bool,
    ) -> Result<Vec<Vec<u8>>, CheckpointError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = self.command(args)?;
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| spawn_error(e, &self.program))?;
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(piped_missing(&self.program));
        };
        std::thread::scope(|scope| {
            // Drained on the side: a walk that meets many unreadable folders warns about each,
            // and a full stderr pipe would stall git forever.
            let errors = scope.spawn(move || read_all(stderr));
            let mut paths = Vec::new();
            let mut kept = 0usize;
            for item in BufReader::new(stdout).split(0) {
                let path = match item {
                    Ok(path) => path,
                    Err(e) => {
                        stop(&mut child);
                        return Err(CheckpointError::Io {
                            what: format!("read the output of git to {what} in"),
                            path: self.root.clone(),
                            source: e,
                        });
                    }
                };
                if path.is_empty() || !keep(&path) {
                    continue;
                }
                kept += 1;
                if kept > limit {
                    stop(&mut child);
                    return Err(CheckpointError::TooMany { files: kept, limit });
                }
                paths.push(path);
            }
            let status = child.wait().map_err(|e| spawn_error(e, &self.program))?;
            let stderr = errors.join().unwrap_or_default();
            if !status.success() {
                return Err(git_error(&self.git_dir, what, &stderr));
            }
            Ok(paths)
        })
    }
}

impl Git {
    /// Streams the content of each blob of `oids`, in order, to `each` (with its index),
    /// from one `cat-file --batch`: a restore holds one file in memory at a time, not all.
    pub(super) fn each_blob(
        &self,
        oids: &[String],
        mut each: impl FnMut(usize, Vec<u8>) -> Result<(), CheckpointError>,
    ) -> Result<(), CheckpointError> {
        if oids.is_empty() {
            return Ok(());
        }
        let mut cmd = self.command(["cat-file", "--batch"])?;
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| spawn_error(e, &self.program))?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            stop(&mut child);
            return Err(piped_missing(&self.program));
        };
        let mut input = Vec::new();
        for oid in oids {
            input.extend_from_slice(oid.as_bytes());
            input.push(b'\n');
        }
        std::thread::scope(|scope| {
            // Written on the side, as in `execute`; dropping stdin at the end tells git
            // that was all. A failed write shows in what git prints, or does not.
            scope.spawn(move || {
                let _ = stdin.write_all(&input);
            });
            let errors = scope.spawn(move || read_all(stderr));
            let mut objects = BufReader::new(stdout);
            let read = (0..oids.len()).try_for_each(|i| {
                let bytes = self.read_object(&mut objects)?;
                each(i, bytes)
            });
            if let Err(e) = read {
                // Git may be blocked writing what we no longer read: end it, so the
                // writer thread ends too.
                stop(&mut child);
                return Err(e);
            }
            let status = child.wait().map_err(|e| spawn_error(e, &self.program))?;
            let stderr = errors.join().unwrap_or_default();
            if !status.success() {
                return Err(git_error(
                    &self.git_dir,
                    "read the snapshot's files",
                    &stderr,
                ));
            }
            Ok(())
        })
    }

    /// One object of `cat-file --batch` output: `<oid> <type> <size>\n<content>\n`.
    fn read_object(&self, objects: &mut impl BufRead) -> Result<Vec<u8>, CheckpointError> {
        let io_error = |source| CheckpointError::Io {
            what: "read the snapshot's files from".to_owned(),
            path: self.git_dir.clone(),
            source,
        };
        let mut header = Vec::new();
        objects.read_until(b'\n', &mut header).map_err(io_error)?;
        let header = String::from_utf8_lossy(&header);
        let size = header
            .split_whitespace()
            .nth(2)
            .and_then(|size| size.parse::<usize>().ok());
        let Some(size) = size else {
            return Err(git_error(
                &self.git_dir,
                "read the snapshot's files",
                &format!("unexpected object header `{}`", header.trim()),
            ));
        };
        let mut content = vec![0; size + 1];
        objects.read_exact(&mut content).map_err(io_error)?;
        content.truncate(size);
        Ok(content)
    }
}

/// A git command with the person's environment and configuration left out; the caller adds
/// where the repository is. It starts through the launcher: the trusted `git`, a minimal
/// environment, the hardening settings of `launch::git`, and a PID namespace of its own.
pub(super) fn neutral(program: &OsStr) -> Result<Command, CheckpointError> {
    let program = if Path::new(program).is_absolute() {
        launch::Program::Path(Path::new(program))
    } else {
        launch::Program::Named(program)
    };
    let launch = launch::Launch {
        program,
        env: launch::Env::Minimal,
        // The store lives under $LINGGEN_HOME, which the sandbox hides, and a restore writes
        // the work tree's protected paths back too. No repository code runs: the store's
        // configuration is linggen's, the person's is not read, and the hardening is on.
        confinement: launch::Confinement::Unconfined(
            "writes the private checkpoint store, which the sandbox hides from commands",
        ),
        lifetime: launch::Lifetime::Contained,
    };
    let mut cmd = launch.command().map_err(launch_error)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let date = format!("{now} +0000");
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_AUTHOR_NAME", IDENTITY.0)
        .env("GIT_AUTHOR_EMAIL", IDENTITY.1)
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_NAME", IDENTITY.0)
        .env("GIT_COMMITTER_EMAIL", IDENTITY.1)
        .env("GIT_COMMITTER_DATE", &date)
        .stdin(Stdio::null());
    for setting in launch::git::HARDENING {
        cmd.arg("-c").arg(setting);
    }
    Ok(cmd)
}

fn launch_error(error: launch::LaunchError) -> CheckpointError {
    match error {
        launch::LaunchError::Program(launch::ProgramError::NotFound { .. }) => {
            CheckpointError::NoGit
        }
        other => CheckpointError::Launch(other),
    }
}

/// Runs `cmd` to the end: (exit code, stdout, stderr as text).
pub(super) fn execute(
    mut cmd: Command,
    program: &OsStr,
    input: Option<&[u8]>,
) -> Result<(Option<i32>, Vec<u8>, String), CheckpointError> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    if input.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = cmd.spawn().map_err(|e| spawn_error(e, program))?;
    let stdin = child.stdin.take();
    let output = std::thread::scope(|scope| {
        if let (Some(bytes), Some(mut stdin)) = (input, stdin) {
            // Written on the side: git may fill its stdout pipe before it has read all of
            // stdin. A failed write (git exited early) shows in git's own status and stderr.
            scope.spawn(move || {
                let _ = stdin.write_all(bytes);
            });
        }
        child.wait_with_output()
    })
    .map_err(|e| spawn_error(e, program))?;
    Ok((
        output.status.code(),
        output.stdout,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

fn read_all(mut stream: impl Read) -> String {
    let mut bytes = Vec::new();
    // A read error only loses the diagnostic text, never the result.
    let _ = stream.read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Ends a git we no longer need; killing is safe because listing writes nothing.
fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// A failed git call on the store at `store`, with the first line git said (its `fatal:`
/// taken off): the rest is hints for people at a git prompt, not for ours.
pub(super) fn git_error(store: &Path, what: &str, stderr: &str) -> CheckpointError {
    let first = stderr
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("it exited with an error and said nothing");
    let first = ["fatal: ", "error: "]
        .iter()
        .find_map(|prefix| first.strip_prefix(prefix))
        .unwrap_or(first);
    CheckpointError::Git {
        store: store.to_owned(),
        what: what.to_owned(),
        stderr: first.to_owned(),
    }
}

fn spawn_error(error: std::io::Error, program: &OsStr) -> CheckpointError {
    if error.kind() == std::io::ErrorKind::NotFound {
        CheckpointError::NoGit
    } else {
        CheckpointError::Io {
            what: "run".to_owned(),
            path: PathBuf::from(program),
            source: error,
        }
    }
}

fn piped_missing(program: &OsStr) -> CheckpointError {
    CheckpointError::Io {
        what: "read the output of".to_owned(),
        path: PathBuf::from(program),
        source: std::io::Error::other("no pipe to the child process"),
    }
}
