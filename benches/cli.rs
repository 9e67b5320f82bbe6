//! End-to-end benchmarks of the `linggen` binary (method and results: doc/performance.md).
//!
//! `cargo bench --bench cli` builds the release binary and measures:
//! - startup: `linggen --version`, wall time;
//! - `linggen acp` from spawn until its answer to `initialize` is read;
//! - time to first request byte: `linggen -p` from spawn until a listening socket receives
//!   the first byte of the chat request (config parsing, database open, model routing);
//! - streaming: `linggen -p` receiving 1 MB of markdown as 4-byte content deltas from the
//!   scripted server (≈260k SSE events), wall and CPU time;
//! - peak RSS of those `-p` runs (`ru_maxrss` of the waited children);
//! - processes: one `-p` run of 40 `Bash true` calls (each through the launcher: sandbox,
//!   PID namespace, keeper) confined and with the sandbox off, and one of 20 `Write` calls,
//!   each prompt's first change taking a checkpoint (git through the launcher); per call.
//!
//! - prompt: the fixed prompt (system prompt and tool definitions) the default agent sends,
//!   in characters and in tokens at four characters a token, on an 8k window and (compact)
//!   on a 2k one.
//!
//! Each figure is the median of N runs, with min and max. Set `LINGGEN_BENCH_RUNS` to change N.

// A benchmark that cannot run its setup should stop with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::Read;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{Protocol, Reply, ScriptedServer, Step, Workspace, markdown_corpus};

fn runs() -> usize {
    std::env::var("LINGGEN_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

struct Stats(Vec<Duration>);

impl Stats {
    fn report(mut self, name: &str) {
        self.0.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let median = self.0[self.0.len() / 2];
        println!(
            "{name:<44} median {:>9.2} ms   min {:>9.2} ms   max {:>9.2} ms   (n={})",
            ms(median),
            ms(self.0[0]),
            ms(self.0[self.0.len() - 1]),
            self.0.len()
        );
    }
}

/// User + system CPU time and peak RSS of all waited-for children so far.
fn children_usage() -> (Duration, u64) {
    // SAFETY: getrusage fills the struct we pass; RUSAGE_CHILDREN is always valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (
        tv(usage.ru_utime) + tv(usage.ru_stime),
        usage.ru_maxrss as u64,
    )
}

fn bench_version(bin: &str) {
    let mut times = Vec::new();
    for _ in 0..runs() {
        let start = Instant::now();
        let status = Command::new(bin)
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .expect("run linggen --version");
        times.push(start.elapsed());
        assert!(status.success());
    }
    Stats(times).report("startup: linggen --version");
}

fn bench_first_request_byte() {
    let mut times = Vec::new();
    for _ in 0..runs() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        let ws = Workspace::new();
        ws.configure(Protocol::OpenAi, &url);
        let start = Instant::now();
        let mut child = ws
            .cmd()
            .args(["-p", "hello"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn linggen -p");
        let (mut conn, _) = listener.accept().expect("accept");
        let mut byte = [0u8; 1];
        conn.read_exact(&mut byte).expect("first byte");
        times.push(start.elapsed());
        let _ = child.kill();
        let _ = child.wait();
    }
    Stats(times).report("startup: linggen -p until first request byte");
}

/// `linggen acp` from spawn until its answer to `initialize` is read: what an editor waits
/// for before it can open a session.
fn bench_acp_initialize() {
    use std::io::{BufRead, BufReader, Write};
    let mut times = Vec::new();
    for _ in 0..runs() {
        let ws = Workspace::new();
        ws.configure(Protocol::OpenAi, "http://127.0.0.1:9/v1");
        let start = Instant::now();
        let mut child = ws
            .cmd()
            .arg("acp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn linggen acp");
        let mut stdin = child.stdin.take().expect("stdin");
        let request =
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#;
        writeln!(stdin, "{request}").expect("write initialize");
        let mut answer = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut answer)
            .expect("read the answer");
        times.push(start.elapsed());
        assert!(answer.contains("\"protocolVersion\":1"), "{answer}");
        drop(stdin);
        let _ = child.wait();
    }
    Stats(times).report("startup: linggen acp until initialize answered");
}

/// The 1 MB streaming server runs in a child process of its own: a child spawned from a
/// process holding the server's buffers would inherit that memory into its `ru_maxrss`
/// (Linux records the pre-exec high-water mark), inflating linggen's figure.
fn serve_corpus_forever() {
    let corpus = markdown_corpus(1 << 20);
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![Step::repeat(Reply::text(corpus).delta_bytes(4))],
    );
    println!("{}", server.url());
    // Serve until the parent closes our stdin.
    let _ = std::io::stdin().read(&mut [0u8; 1]);
}

fn bench_streaming() {
    let expected_len = markdown_corpus(1 << 20).trim_end().len() + 1;
    let mut server = Command::new(std::env::current_exe().expect("own path"))
        .env("LINGGEN_BENCH_SERVE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the scripted server process");
    let mut url = String::new();
    let mut stdout = server.stdout.take().expect("piped stdout");
    let mut byte = [0u8; 1];
    while stdout.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {
        url.push(byte[0] as char);
    }
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &url);
    let n = runs().min(10);
    let mut wall = Vec::new();
    let mut cpu = Vec::new();
    for _ in 0..n {
        let (cpu_before, _) = children_usage();
        let start = Instant::now();
        let out = ws
            .cmd()
            .args(["-q", "-p", "write the document"])
            .stderr(Stdio::inherit())
            .output()
            .expect("run linggen -p");
        wall.push(start.elapsed());
        let (cpu_after, _) = children_usage();
        cpu.push(cpu_after - cpu_before);
        assert!(out.status.success());
        assert_eq!(out.stdout.len(), expected_len, "answer incomplete");
    }
    // Read the peak before waiting for the server process, whose own peak would count.
    let (_, peak_kib) = children_usage();
    drop(server.stdin.take());
    let _ = server.wait();
    Stats(wall).report("streaming 1 MB in 4-byte deltas: wall");
    Stats(cpu).report("streaming 1 MB in 4-byte deltas: CPU (user+sys)");
    println!(
        "{:<44} {:>9.1} MB (ru_maxrss)",
        "peak RSS of the 1 MB streaming runs",
        peak_kib as f64 / 1024.0
    );
}

fn bench_peak_rss() {
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![Step::repeat(Reply::text("A short answer."))],
    );
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    ws.write("src/lib.rs", "pub fn f() {}\n");
    let status = ws
        .cmd()
        .args(["-q", "-p", "hi"])
        .stdout(Stdio::null())
        .status()
        .expect("run linggen -p");
    assert!(status.success());
    let (_, peak_kib) = children_usage();
    println!(
        "{:<44} {:>9.1} MB (ru_maxrss)",
        "peak RSS of linggen -p (short answer)",
        peak_kib as f64 / 1024.0
    );
}

/// One `-p` run of `calls` tool calls in one turn, with `extra` config; wall time per call.
fn per_call(calls: Vec<(&str, serde_json::Value)>, extra: &str, args: &[&str]) -> Duration {
    let n = calls.len() as u32;
    let server = ScriptedServer::start_background(
        Protocol::Ollama,
        vec![Step::from(Reply::tools(calls)), Reply::text("done").into()],
    );
    let ws = Workspace::new();
    support::write_config_with(ws.home(), Protocol::Ollama, &server.url(), extra);
    let started = Instant::now();
    let status = ws
        .cmd()
        .args(["-q", "-p", "go"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run linggen -p");
    assert!(status.success());
    started.elapsed() / n
}

fn bench_processes() {
    let bash = || {
        (0..40)
            .map(|_| ("Bash", serde_json::json!({"command": "true"})))
            .collect()
    };
    for (name, extra) in [
        ("Bash true, confined (per call)", ""),
        (
            "Bash true, sandbox off (per call)",
            "[sandbox]\nenabled = false\nunconfined = \"allow\"\n",
        ),
    ] {
        let times = (0..runs().min(10))
            .map(|_| per_call(bash(), extra, &["--permission-mode", "bypass"]))
            .collect();
        Stats(times).report(name);
    }
    // Each prompt snapshots once before its first change: one prompt per run, so a run of
    // one Write is one checkpoint; the run without a write is subtracted.
    let write = || {
        vec![(
            "Write",
            serde_json::json!({"path": "a.txt", "content": "x"}),
        )]
    };
    let read = || vec![("Read", serde_json::json!({"path": "."}))];
    let args = ["--allowed-tools", "Write"];
    let with: Vec<Duration> = (0..runs().min(10))
        .map(|_| per_call(write(), "", &args))
        .collect();
    let without: Vec<Duration> = (0..runs().min(10))
        .map(|_| per_call(read(), "", &args))
        .collect();
    Stats(with).report("one Write with its checkpoint (whole -p run)");
    Stats(without).report("one Read, no checkpoint (whole -p run)");
}

/// The system prompt and tool definitions of the first request of `linggen -p hello`
/// with a model whose window is `window`: characters (name, description and compact
/// parameter schema of each tool, as `ToolSpec::chars`) and tokens at four a character.
fn bench_prompt() {
    for window in [8192, 2048] {
        let server =
            ScriptedServer::start_background(Protocol::OpenAi, vec![Step::from(Reply::text("hi"))]);
        let ws = Workspace::new();
        ws.configure(Protocol::OpenAi, &server.url());
        let config = ws.home().join("linggen-agent.toml");
        let toml = std::fs::read_to_string(&config).expect("config");
        let toml = toml.replace(
            "context_window = 8192",
            &format!("context_window = {window}"),
        );
        std::fs::write(&config, toml).expect("config");
        let out = ws.cmd().args(["-p", "hello"]).output().expect("linggen -p");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let body = server.last_chat_request().expect("a chat request");
        let (system, schemas) = support::fixed_prompt_chars(&body);
        let tools = body["tools"].as_array().map_or(0, Vec::len);
        let total = system + schemas;
        println!(
            "prompt: window {window}: system {system} + {tools} tools {schemas} = {total} \
             characters, ~{} tokens",
            total.div_ceil(4)
        );
    }
}

fn main() {
    if std::env::var_os("LINGGEN_BENCH_SERVE").is_some() {
        serve_corpus_forever();
        return;
    }
    // `cargo bench` passes `--bench`; a filter argument picks benchmarks by name.
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let wanted = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    // `LINGGEN_BENCH_BIN` measures another build (a profile being compared) the same way.
    let bin = std::env::var("LINGGEN_BENCH_BIN");
    let bin = bin.as_deref().unwrap_or(env!("CARGO_BIN_EXE_linggen"));
    if wanted("startup") {
        bench_version(bin);
        bench_first_request_byte();
        bench_acp_initialize();
    }
    // ru_maxrss of children is a running maximum: measure the small run first.
    if wanted("rss") {
        bench_peak_rss();
    }
    if wanted("streaming") {
        bench_streaming();
    }
    if wanted("processes") {
        bench_processes();
    }
    if wanted("prompt") {
        bench_prompt();
    }
}
