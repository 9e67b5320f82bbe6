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

    long_answer_cpu();
    mention_echo();
}

/// CPU seconds the process's threads have run so far: the sum of each thread's time on a
/// CPU from `/proc/PID/task/*/schedstat`, in nanoseconds (the clock-tick counts of `stat`
/// are 10 ms coarse, as long as the whole measurement).
fn cpu_secs(pid: i32) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0.0;
    };
    let nanos: u64 = tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    nanos as f64 / 1e9
}

/// The shell's CPU for a 5,000-line answer (paragraphs with inline markup, lists, code
/// blocks), streamed as fast as the server can: everything from Enter until the prompt is
/// back, median of 5 sessions.
fn long_answer_cpu() {
    let mut answer = String::new();
    for i in 0..833 {
        answer.push_str(&format!(
            "Paragraph {i} has **bold**, *emphasis* and `code {i}` in a sentence long enough to wrap.\n\n- item {i} with a [link](https://example.com/{i})\n```rust\nlet x{i} = {i};\n```\n"
        ));
    }
    answer.push_str("The end of the answer.\n");
    let lines = answer.lines().count();
    let reply = Reply::text(answer).delta_bytes(64);
    let server = ScriptedServer::start_background(Protocol::OpenAi, vec![Step::repeat(reply)]);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    let mut cpu = Vec::new();
    for _ in 0..5 {
        let mut session = spawn(&ws);
        session.set_expect_timeout(Some(Duration::from_secs(120)));
        session.expect("ling › ").expect("prompt");
        let pid = session.get_process().pid().as_raw();
        let before = cpu_secs(pid);
        session.send("go\r").unwrap();
        session
            .expect("The end of the answer.")
            .expect("the end of the answer");
        // The turn's context line comes when it has ended.
        session.expect("context ").expect("the turn ended");
        cpu.push(cpu_secs(pid) - before);
        session.send("\x04").unwrap();
        let _ = session
            .get_process_mut()
            .kill(expectrl::process::unix::Signal::SIGKILL);
    }
    cpu.sort_by(f64::total_cmp);
    println!(
        "{:<40} median {:>7.1} ms CPU   min {:>7.1}   max {:>7.1}   ({lines} lines, n=5)",
        "repl: a 5,000-line answer",
        cpu[2] * 1000.0,
        cpu[0] * 1000.0,
        cpu[4] * 1000.0
    );
}

/// Keystroke echo while an `@` mention is typed in a workspace of 50,000 files (the file
/// index's limit): each key redraws the line with the list of matching files under it, so
/// the time includes ranking every file. Median and max of 30 keys, idle.
fn mention_echo() {
    let server =
        ScriptedServer::start_background(Protocol::OpenAi, vec![Step::from(Reply::text("-"))]);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    for d in 0..500 {
        let dir = ws.root().join(format!("dir{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            std::fs::write(dir.join(format!("file{f:02}.rs")), "").unwrap();
        }
    }
    let mut session = spawn(&ws);
    session.expect("ling › ").expect("prompt");
    // The index fills in the background after start (about a second for 50,000 files).
    std::thread::sleep(Duration::from_secs(4));
    let mut echoes = Vec::new();
    for _ in 0..5 {
        session.send("@").unwrap();
        session.expect("› @").expect("the @");
        let mut typed = String::from("@");
        for key in "fil2.r".chars() {
            typed.push(key);
            let start = Instant::now();
            session.send(key.to_string()).unwrap();
            session.expect(typed.as_str()).expect("echo");
            echoes.push(start.elapsed());
            std::thread::sleep(Duration::from_millis(20));
        }
        session.send("\x15").unwrap(); // Ctrl+U
        std::thread::sleep(Duration::from_millis(100));
    }
    echoes.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{:<40} median {:>7.2} ms   max {:>7.2} ms   (n={})",
        "repl: keystroke echo in an @ list, 50k files",
        ms(echoes[echoes.len() / 2]),
        ms(echoes[echoes.len() - 1]),
        echoes.len()
    );
    session.send("\x04").unwrap();
    let _ = session
        .get_process_mut()
        .kill(expectrl::process::unix::Signal::SIGKILL);
}
