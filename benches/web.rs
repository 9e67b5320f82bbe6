//! The web mirror's fan-out (method and results: doc/performance.md).
//!
//! `cargo bench --bench web` runs the real server in-process on 127.0.0.1 and connects real
//! TCP clients to `GET /api/events`, then measures:
//! - latency from publishing a `Token` event on the session's bus side (the mirror's input)
//!   to the moment each viewer's socket has read its SSE frame, with 1 and with 100 viewers;
//! - memory per viewer: the process's RSS growth from 0 to 100 open event streams, divided
//!   by 100 (the client sockets live in this process too, but a socket's buffers are kernel
//!   memory, not RSS).
//!
//! Tokens are published 2 ms apart, so each one is its own frame (no coalescing).
//! `LINGGEN_BENCH_TOKENS` sets how many (default 500).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use linggen::session::Event;
use linggen::web::{Hub, Mirror, ServeOptions, Server};

fn tokens() -> usize {
    std::env::var("LINGGEN_BENCH_TOKENS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Opens an event stream and returns the reader once the stream has started.
fn connect(addr: std::net::SocketAddr, token: &str) -> BufReader<TcpStream> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_nodelay(true).unwrap();
    write!(
        stream,
        "GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    // Headers, then the stream's opening comment.
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line.starts_with(": connected") {
            return reader;
        }
    }
}

/// Reads token frames until `count` tokens arrived; returns when each was read.
fn receive(mut reader: BufReader<TcpStream>, count: usize) -> Vec<Instant> {
    let mut seen = vec![Instant::now(); count];
    let mut got = 0;
    let mut line = String::new();
    while got < count {
        line.clear();
        if reader.read_line(&mut line).unwrap() == 0 {
            panic!("the stream ended after {got} tokens");
        }
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let now = Instant::now();
        let event: serde_json::Value = serde_json::from_str(data).unwrap();
        if event["type"] != "Token" {
            continue;
        }
        for piece in event["token"].as_str().unwrap().split(';') {
            if let Ok(i) = piece.parse::<usize>() {
                seen[i] = now;
                got += 1;
            }
        }
    }
    seen
}

struct Bench {
    server: Server,
    events: linggen::session::EventBus,
    seq: u64,
    token: String,
}

impl Bench {
    async fn start() -> Bench {
        let dir = tempfile::tempdir().unwrap().keep();
        // SAFETY: set before any other thread of this benchmark reads the environment.
        unsafe { std::env::set_var("LINGGEN_HOME", dir.join("home")) };
        let cli = linggen::cli::Cli::parse_from(["linggen", "--root", dir.to_str().unwrap()]);
        let ws =
            linggen::app::load_workspace(&cli.start()).unwrap_or_else(|f| panic!("{}", f.message));
        let (inputs, inputs_rx) = linggen::session::Inputs::channel(8);
        std::mem::forget(inputs_rx);
        let events = linggen::session::EventBus::new();
        let rx = events.subscribe_lossless();
        let mirror = Mirror::follow("bench".into(), inputs, &[], "ling", rx);
        let hub = Hub::new(&ws);
        hub.share(mirror);
        let server = Server::start(Arc::new(hub), ServeOptions::default())
            .await
            .unwrap();
        let token = server.token().to_string();
        Bench {
            server,
            events,
            seq: 0,
            token,
        }
    }

    fn publish(&mut self, event: Event) {
        self.seq += 1;
        self.events.publish(event);
    }

    /// Per-token latencies over every viewer.
    async fn latency(&mut self, viewers: usize) -> Vec<Duration> {
        let count = tokens();
        let addr = self.server.local_addr();
        let readers: Vec<_> = (0..viewers).map(|_| connect(addr, &self.token)).collect();
        let handles: Vec<_> = readers
            .into_iter()
            .map(|r| std::thread::spawn(move || receive(r, count)))
            .collect();
        let mut sent = Vec::with_capacity(count);
        for i in 0..count {
            sent.push(Instant::now());
            self.publish(Event::Token {
                run_id: "r".into(),
                agent_id: "ling".into(),
                token: format!("{i};"),
                thinking: false,
                done: false,
            });
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let mut latencies = Vec::with_capacity(count * viewers);
        for handle in handles {
            let seen = tokio::task::spawn_blocking(move || handle.join().unwrap())
                .await
                .unwrap();
            latencies.extend(seen.iter().zip(&sent).map(|(r, s)| r.duration_since(*s)));
        }
        latencies
    }
}

fn report(name: &str, mut latencies: Vec<Duration>) {
    latencies.sort();
    let at = |p: f64| latencies[((latencies.len() - 1) as f64 * p) as usize];
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{name:<34} p50 {:>8.0} µs   p99 {:>8.0} µs   max {:>8.0} µs   (n={})",
        us(at(0.5)),
        us(at(0.99)),
        us(at(1.0)),
        latencies.len()
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` would too, and then only
    // compiling matters.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut bench = Bench::start().await;
        report("Token → SSE frame, 1 viewer", bench.latency(1).await);
        report("Token → SSE frame, 100 viewers", bench.latency(100).await);

        let before = rss_kb();
        let addr = bench.server.local_addr();
        let streams: Vec<_> = (0..100).map(|_| connect(addr, &bench.token)).collect();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let after = rss_kb();
        println!(
            "memory per viewer                  {:.1} KB (RSS {} KB → {} KB with 100 open streams)",
            (after.saturating_sub(before)) as f64 / 100.0,
            before,
            after
        );
        drop(streams);
        bench.server.stop().await;
    });
}
