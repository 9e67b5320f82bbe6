//! `Grep` against ripgrep (method and results: doc/performance.md).
//!
//! Searches a large tree (default `~/.cargo/registry/src`, or `LINGGEN_BENCH_TREE`) for a
//! few patterns with linggen's `Grep` engine (in-process, as the tool runs) and with the `rg`
//! binary (`cargo install ripgrep`), and prints each median and the ratio. Both are asked
//! for every match (no result cap) with line numbers, honouring ignore files.

// A benchmark that cannot run its setup should stop with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use linggen::tools::grep::{SearchOptions, search_in};

const PATTERNS: &[&str] = &["fn main", r"impl\s+Drop\s+for", "unsafe", "TODO|FIXME"];

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let tree = std::env::var_os("LINGGEN_BENCH_TREE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo/registry/src")))
        .expect("set LINGGEN_BENCH_TREE or HOME");
    let Ok(tree) = tree.canonicalize() else {
        println!("skipping: {} does not exist", tree.display());
        return;
    };
    let rg = Command::new("rg").arg("--version").output().is_ok();
    if !rg {
        println!("note: `rg` not found (cargo install ripgrep); timing linggen only");
    }
    let runs = 5;
    let options = SearchOptions {
        max_results: usize::MAX,
        ..SearchOptions::default()
    };
    println!("tree: {}", tree.display());
    for pattern in PATTERNS {
        let mut ours = Vec::new();
        let mut count = 0;
        for _ in 0..runs {
            let start = Instant::now();
            let result = search_in(&tree, &tree, pattern, &options).expect("search");
            ours.push(start.elapsed());
            count = result.matches.len();
        }
        let ours = median(ours);
        if !rg {
            println!(
                "{pattern:<22} linggen {:>8.1} ms  ({count} matches)",
                ours.as_secs_f64() * 1e3
            );
            continue;
        }
        let mut theirs = Vec::new();
        let mut rg_count = 0;
        for _ in 0..runs {
            let start = Instant::now();
            let out = Command::new("rg")
                .args([
                    "--line-number",
                    "--no-heading",
                    "--color=never",
                    "-e",
                    pattern,
                ])
                .arg(&tree)
                .stderr(Stdio::null())
                .output()
                .expect("run rg");
            theirs.push(start.elapsed());
            rg_count = out
                .stdout
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .count();
        }
        let theirs = median(theirs);
        println!(
            "{pattern:<22} linggen {:>8.1} ms ({count} matches)   rg {:>8.1} ms ({rg_count})   speed vs rg {:.2}x",
            ours.as_secs_f64() * 1e3,
            theirs.as_secs_f64() * 1e3,
            theirs.as_secs_f64() / ours.as_secs_f64()
        );
    }
}
