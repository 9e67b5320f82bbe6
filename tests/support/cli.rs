//! Running the real `linggen` binary against a scripted server, in temp dirs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use tempfile::TempDir;

use super::script::Protocol;

/// The variable `write_config` names as `api_key_env`, and the value `linggen_cmd` sets.
pub const TEST_KEY_ENV: &str = "LINGGEN_TEST_KEY";
pub const TEST_KEY: &str = "sk-scripted-test-key";

/// Environment prefixes that would let the developer's own setup leak into a test.
const SCRUBBED_PREFIXES: &[&str] = &["LINGGEN_", "OLLAMA_", "OPENAI_", "ANTHROPIC_", "AWS_"];

/// The `linggen` binary with `LINGGEN_HOME=home`, cwd `root`, stdin from /dev/null, no
/// inherited `LINGGEN_*` / `OLLAMA_*` / `OPENAI_*` / `ANTHROPIC_*` / `AWS_*` variables, and
/// the test API key set. `LINGGEN_BENCH_BIN` names another binary to run instead (the
/// benchmarks compare builds with it: doc/performance.md).
pub fn linggen_cmd(home: &Path, root: &Path) -> Command {
    let bin = std::env::var_os("LINGGEN_BENCH_BIN");
    let mut cmd = Command::new(
        bin.as_deref()
            .unwrap_or(env!("CARGO_BIN_EXE_linggen").as_ref()),
    );
    for (name, _) in std::env::vars_os() {
        let scrub = name.to_str().is_some_and(|name| {
            SCRUBBED_PREFIXES
                .iter()
                .any(|prefix| name.starts_with(prefix))
        });
        if scrub {
            cmd.env_remove(&name);
        }
    }
    // HOME too: skills are also discovered in ~/.claude/skills and ~/.codex/skills.
    cmd.env("LINGGEN_HOME", home)
        .env("HOME", home)
        .env(TEST_KEY_ENV, TEST_KEY)
        .current_dir(root)
        .stdin(Stdio::null());
    cmd
}

/// Writes `dir/linggen-agent.toml` with one model `test` reached by `protocol` at `url`.
/// Returns the file's path.
pub fn write_config(dir: &Path, protocol: Protocol, url: &str) -> PathBuf {
    write_config_with(dir, protocol, url, "")
}

/// Like [`write_config`], with `extra` TOML appended after the `[[models]]` entry: bare
/// keys (`timeout_secs = 2`) land in that entry, `[agent]` / `[permissions]` tables start
/// their own.
pub fn write_config_with(dir: &Path, protocol: Protocol, url: &str, extra: &str) -> PathBuf {
    let mut toml = format!(
        "[[models]]\nid = \"test\"\nprovider = \"{}\"\nmodel = \"scripted\"\nurl = \"{url}\"\n",
        protocol.provider()
    );
    if protocol.uses_api_key() {
        toml.push_str(&format!("api_key_env = \"{TEST_KEY_ENV}\"\n"));
    }
    toml.push_str("context_window = 8192\n");
    if !extra.is_empty() {
        toml.push_str(extra);
        if !extra.ends_with('\n') {
            toml.push('\n');
        }
    }
    std::fs::create_dir_all(dir).expect("create the config directory");
    let path = dir.join("linggen-agent.toml");
    std::fs::write(&path, toml).expect("write linggen-agent.toml");
    path
}

/// How `linggen` ended, its output as text.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `linggen ARGS` in `ws` (see [`run_with_timeout`]; a minute at most).
pub fn run(ws: &Workspace, args: &[&str]) -> Run {
    let out = run_with_timeout(ws.cmd().args(args), Duration::from_secs(60));
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `cmd` to completion with captured output. A run longer than `timeout` is killed
/// and fails the test with whatever it printed, so a hung agent never hangs the suite.
pub fn run_with_timeout(cmd: &mut Command, timeout: Duration) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the linggen binary");
    wait_with_timeout(child, &format!("{cmd:?}"), timeout)
}

/// Runs `cmd` (a JSON-RPC server on stdio: `acp`, `mcp serve`) with 80 MiB on its stdin
/// that never end a line, the pipe then kept open: the server must give up on its own,
/// not wait for the rest. Its output, or a failed test after `timeout`.
pub fn feed_endless_line(cmd: &mut Command, timeout: Duration) -> Output {
    use std::io::Write as _;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the linggen binary");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    std::thread::spawn(move || {
        let block = vec![b'a'; 1 << 20];
        for _ in 0..80 {
            if stdin.write_all(&block).is_err() {
                return;
            }
        }
        std::thread::sleep(timeout);
    });
    wait_with_timeout(child, &format!("{cmd:?}"), timeout)
}

fn wait_with_timeout(child: std::process::Child, what: &str, timeout: Duration) -> Output {
    let pid = child.id();
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    match finished.recv_timeout(timeout) {
        Ok(output) => output.expect("wait for the linggen binary"),
        Err(_) => {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(pid.to_string())
                .status();
            let output = finished
                .recv()
                .expect("the waiter thread reports after the kill")
                .expect("collect the killed child's output");
            panic!(
                "{what} still running after {timeout:?}; killed it.\n--- stdout ---\n{}\n--- stderr ---\n{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
}

/// Polls `done` every 20 ms until it holds; fails the test, naming `what`, after `limit`.
pub fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + limit;
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A fresh `LINGGEN_HOME` and workspace root, both deleted when dropped.
pub struct Workspace {
    pub home: TempDir,
    pub root: TempDir,
}

impl Workspace {
    pub fn new() -> Workspace {
        Workspace {
            home: TempDir::new().expect("create a temp LINGGEN_HOME"),
            root: TempDir::new().expect("create a temp workspace root"),
        }
    }

    pub fn home(&self) -> &Path {
        self.home.path()
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// [`linggen_cmd`] for this workspace.
    pub fn cmd(&self) -> Command {
        linggen_cmd(self.home(), self.root())
    }

    /// Writes the config into `LINGGEN_HOME`.
    pub fn configure(&self, protocol: Protocol, url: &str) -> PathBuf {
        write_config(self.home(), protocol, url)
    }

    /// Writes a file under the root, creating parent directories.
    pub fn write(&self, relative: &str, contents: &str) -> PathBuf {
        let path = self.root().join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent directories");
        }
        std::fs::write(&path, contents).expect("write a workspace file");
        path
    }

    /// Reads a file under the root.
    pub fn read(&self, relative: &str) -> String {
        let path = self.root().join(relative);
        std::fs::read_to_string(&path)
            .unwrap_or_else(|err| panic!("read {}: {err}", path.display()))
    }
}

impl Default for Workspace {
    fn default() -> Workspace {
        Workspace::new()
    }
}
