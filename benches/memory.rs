//! Peak resident memory against the size of a streamed answer (method and results:
//! doc/performance.md, "Memory against answer size").
//!
//! `cargo bench --bench memory` builds the release binary and, for each answer shape, runs
//! `linggen -q -p` (text), `linggen -q -p --output-format stream-json` and the interactive
//! shell in a pseudo-terminal against the scripted OpenAI-compatible server, and reports:
//! - the peak RSS of linggen (`ru_maxrss` from `wait4` for `-p`; `VmHWM` from /proc for the
//!   shell, read once the answer is on screen and the turn has ended);
//! - the size of the SQLite database the run left behind (with its WAL).
//!
//! Answer shapes: 4 KB (the baseline), 1 MB and 10 MB of markdown in 16-byte content
//! deltas (many small SSE events), and 50 MB as one single SSE event. A filter argument picks shapes or frontends
//! by name (`cargo bench --bench memory -- 10mb`, `-- shell`).

// A benchmark that cannot run its setup should stop with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::Read;
use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::{Protocol, Reply, ScriptedServer, Step, Workspace, markdown_corpus};

/// The last line of every answer: the shell run waits for it on screen.
const END_MARK: &str = "END-OF-THE-LONG-ANSWER";

struct Shape {
    name: &'static str,
    bytes: usize,
    /// Bytes per content delta; `None`: the whole answer in one event.
    delta: Option<usize>,
}

const SHAPES: [Shape; 4] = [
    // What the rest is measured against: the same markdown (a code block included, so the
    // shell loads its highlighter), 4 KB of it.
    Shape {
        name: "short",
        bytes: 4 << 10,
        delta: Some(16),
    },
    Shape {
        name: "1mb",
        bytes: 1 << 20,
        delta: Some(16),
    },
    Shape {
        name: "10mb",
        bytes: 10 << 20,
        delta: Some(16),
    },
    Shape {
        name: "50mb-single-event",
        bytes: 50 << 20,
        delta: None,
    },
];

fn answer(bytes: usize) -> String {
    let mut text = markdown_corpus(bytes);
    text.push_str(END_MARK);
    text.push('\n');
    text
}

/// Serves `shape`'s answer to every request until stdin closes. A process of its own: a
/// child spawned by a process holding the server's buffers would count them in its
/// `ru_maxrss` (Linux keeps the pre-exec high-water mark).
fn serve(shape_name: &str) {
    let shape = SHAPES.iter().find(|s| s.name == shape_name).unwrap();
    let text = answer(shape.bytes);
    let reply = Reply::text(text).delta_bytes(shape.delta.unwrap_or(usize::MAX / 2));
    let server = ScriptedServer::start_background(Protocol::OpenAi, vec![Step::repeat(reply)]);
    println!("{}", server.url());
    let _ = std::io::stdin().read(&mut [0u8; 1]);
}

struct ServerProcess(Child, String);

impl ServerProcess {
    fn start(shape: &Shape) -> ServerProcess {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env("LINGGEN_BENCH_SERVE", shape.name)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the scripted server process");
        let mut stdout = child.stdout.take().unwrap();
        let mut url = String::new();
        let mut byte = [0u8; 1];
        while stdout.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {
            url.push(byte[0] as char);
        }
        ServerProcess(child, url)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

/// Waits for `child` and returns its own peak RSS in KiB (not the running maximum of all
/// children that `RUSAGE_CHILDREN` gives).
fn wait_peak_kib(child: Child) -> (i32, u64) {
    let mut status = 0;
    // SAFETY: wait4 fills `status` and `usage` for the pid we own and have not waited for.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert!(pid > 0, "wait4 failed");
    (libc::WEXITSTATUS(status), usage.ru_maxrss as u64)
}

fn database_bytes(home: &Path) -> u64 {
    ["linggen.db", "linggen.db-wal"]
        .iter()
        .filter_map(|name| std::fs::metadata(home.join(name)).ok())
        .map(|m| m.len())
        .sum()
}

fn report(frontend: &str, shape: &Shape, peak_kib: u64, seconds: f64, db: u64) {
    println!(
        "{:<12} {:<18} peak RSS {:>7.1} MB   wall {:>6.2} s   database {:>6.1} MB",
        frontend,
        shape.name,
        peak_kib as f64 / 1024.0,
        seconds,
        db as f64 / 1_048_576.0
    );
}

fn run_print(url: &str, shape: &Shape, stream_json: bool) {
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, url);
    let mut cmd = ws.cmd();
    cmd.args(["-q", "-p", "write the document"]);
    if stream_json {
        cmd.args(["--output-format", "stream-json"]);
    }
    let start = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn linggen -p");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let (code, peak) = wait_peak_kib(child);
    let printed = reader.join().unwrap().unwrap_or(0);
    assert_eq!(code, 0, "linggen -p failed");
    assert!(printed as usize >= shape.bytes, "answer incomplete");
    let name = if stream_json { "-p json" } else { "-p text" };
    report(
        name,
        shape,
        peak,
        start.elapsed().as_secs_f64(),
        database_bytes(ws.home()),
    );
}

/// A pseudo-terminal pair; the child gets the follower end as its controlling terminal.
fn open_pty() -> (OwnedFd, OwnedFd) {
    let (mut leader, mut follower) = (0, 0);
    let size = libc::winsize {
        ws_row: 40,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two fds we then own; null name and termios are allowed.
    let rc = unsafe {
        libc::openpty(
            &mut leader,
            &mut follower,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty failed");
    unsafe { (OwnedFd::from_raw_fd(leader), OwnedFd::from_raw_fd(follower)) }
}

fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The leader side of the shell's terminal, and what was read past the last wait.
struct Terminal {
    file: std::fs::File,
    unread: Vec<u8>,
}

impl Terminal {
    /// Reads until `needle` has been printed; what follows it stays for the next wait.
    fn read_until(&mut self, needle: &[u8], timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            if let Some(at) = self.unread.windows(needle.len()).position(|w| w == needle) {
                self.unread.drain(..at + needle.len());
                return;
            }
            // Only a possible start of the needle needs keeping: the output is megabytes.
            let keep = self.unread.len().saturating_sub(needle.len());
            self.unread.drain(..keep);
            assert!(
                Instant::now() < deadline,
                "the shell did not print {needle:?}"
            );
            let n = self.file.read(&mut buf).expect("read the terminal");
            assert!(n > 0, "the shell closed the terminal");
            self.unread.extend_from_slice(&buf[..n]);
        }
    }
}

fn run_shell(url: &str, shape: &Shape) {
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, url);
    let (leader, follower) = open_pty();
    let mut cmd = ws.cmd();
    cmd.env("TERM", "xterm-256color")
        .stdin(Stdio::from(follower.try_clone().unwrap()))
        .stdout(Stdio::from(follower.try_clone().unwrap()))
        .stderr(Stdio::from(follower));
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            libc::ioctl(0, libc::TIOCSCTTY, 0);
            Ok(())
        });
    }
    let mut terminal = Terminal {
        file: std::fs::File::from(leader),
        unread: Vec::new(),
    };
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn the shell");
    // The command holds the follower's fds; the terminal reports EOF only once they close.
    drop(cmd);
    let prompt = "ling › ".as_bytes();
    terminal.read_until(prompt, Duration::from_secs(20));
    terminal.file.write_all(b"write the document\r").unwrap();
    terminal.read_until(END_MARK.as_bytes(), Duration::from_secs(600));
    // The turn ends after the last line is on screen: wait for the next prompt.
    terminal.read_until(prompt, Duration::from_secs(60));
    let elapsed = start.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_millis(500));
    let peak = vm_hwm_kib(child.id());
    let _ = terminal.file.write_all(b"\x04");
    // Whatever the shell prints on its way out must be read, or it could block on a full
    // terminal; the read fails once the shell has closed its side.
    let mut file = terminal.file;
    let drain = std::thread::spawn(move || {
        let _ = std::io::copy(&mut file, &mut std::io::sink());
    });
    let _ = child.wait();
    let _ = drain.join();
    report(
        "shell (pty)",
        shape,
        peak,
        elapsed,
        database_bytes(ws.home()),
    );
}

fn main() {
    if let Ok(shape) = std::env::var("LINGGEN_BENCH_SERVE") {
        serve(&shape);
        return;
    }
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let wanted = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    let frontends = ["print-text", "print-stream-json", "shell"];
    for shape in &SHAPES {
        let chosen: Vec<&str> = frontends
            .into_iter()
            .filter(|f| wanted(shape.name) || wanted(f))
            .collect();
        if chosen.is_empty() {
            continue;
        }
        let server = ServerProcess::start(shape);
        for frontend in chosen {
            match frontend {
                "print-text" => run_print(&server.1, shape, false),
                "print-stream-json" => run_print(&server.1, shape, true),
                _ => run_shell(&server.1, shape),
            }
        }
    }
}
