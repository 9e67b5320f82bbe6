//! The interactive shell's start-up and idle footprint (method and results:
//! doc/performance.md).
//!
//! `cargo bench --bench repl` spawns `linggen` in a pseudo-terminal N times and measures the
//! time from spawn until the prompt is on screen (ready to type), then, once, the resident
//! memory (`VmRSS` from /proc) after a second of idling at the prompt.

// A benchmark that cannot run its setup should stop with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use expectrl::{Expect, Session};
use support::{Protocol, Reply, ScriptedServer, Step, Workspace};

fn spawn(ws: &Workspace) -> expectrl::session::OsSession {
    let mut cmd = ws.cmd();
    cmd.env("TERM", "xterm-256color")
        .stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit());
    let mut session = Session::spawn(cmd).expect("spawn linggen in a pty");
    session.set_expect_timeout(Some(Duration::from_secs(10)));
    session
}

fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let runs: usize = std::env::var("LINGGEN_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    // Every request gets a long answer streamed at ~4 KB/s, for the keystroke measurement.
    let stream = Reply::text("tick tock tick tock\n\n".repeat(2000))
        .delta_bytes(8)
        .chunk_delay(Duration::from_millis(2));
    let server = ScriptedServer::start_background(Protocol::OpenAi, vec![Step::repeat(stream)]);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    let mut times = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let mut session = spawn(&ws);
        session.expect("ling › ").expect("prompt");
        times.push(start.elapsed());
        session.send("\x04").unwrap(); // Ctrl+D
        let _ = session.expect(expectrl::Eof);
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{:<40} median {:>7.2} ms   min {:>7.2} ms   max {:>7.2} ms   (n={runs})",
        "repl: spawn until the prompt is shown",
        ms(times[runs / 2]),
        ms(times[0]),
        ms(times[runs - 1])
    );

    let mut session = spawn(&ws);
    session.expect("ling › ").expect("prompt");
    std::thread::sleep(Duration::from_secs(1));
    let pid = session.get_process().pid().as_raw();
    println!(
        "{:<40} {:>7.1} MB (VmRSS)",
        "repl: idle resident memory",
        rss_kib(pid) as f64 / 1024.0
    );

    // Keystroke echo while an answer streams (~4 KB/s of rendered lines): send a key the
    // answer never contains and time until the editor shows it on the input line.
    session.send("go").unwrap();
    session.send("\r").unwrap();
    if let Err(e) = session.expect("tick") {
        let mut rest = vec![0u8; 4096];
        let n = std::io::Read::read(&mut session, &mut rest).unwrap_or(0);
        panic!(
            "stream did not start: {e}; screen: {:?}",
            String::from_utf8_lossy(&rest[..n])
        );
    }
    let mut echoes = Vec::new();
    for k in 1..=20 {
        let start = Instant::now();
        session.send("Z").unwrap();
        // Each redraw of the line repeats what was typed, so wait for all k keys at once.
        session.expect("Z".repeat(k).as_str()).expect("echo");
        echoes.push(start.elapsed());
        std::thread::sleep(Duration::from_millis(20));
    }
    echoes.sort();
    println!(
        "{:<40} median {:>7.2} ms   max {:>7.2} ms   (n=20)",
        "repl: keystroke echo while streaming",
        ms(echoes[10]),
        ms(echoes[19])
    );
    session.send("\x03").unwrap(); // cancel the turn
    session.send("\x04").unwrap();
    let _ = session
        .get_process_mut()
        .kill(expectrl::process::unix::Signal::SIGKILL);
}
