//! Curated reads against plain reads (method and results: doc/performance.md).
//!
//! For a fixed set of files (`benches/fixtures/curate/`, copies of linggen sources) and a
//! question about each, `linggen -p QUESTION` runs against a scripted main model that
//! reads the whole file once; the tool result it receives is measured with
//! `[context] curate_reads` off (the plain read) and on, the curator being a real model
//! at `LINGGEN_CURATOR_URL` (an OpenAI-compatible server; `../shared/tools/local-llm.sh
//! start 18080` gives one at `http://127.0.0.1:18080/v1`, the default). Prints characters
//! returned for each, the ratio, and the time the curated run took.

// A benchmark that cannot run its setup should stop with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{Protocol, Reply, ScriptedServer, Step, Workspace, run_with_timeout, texts};

/// Each file with a question a person might ask about it.
const CASES: &[(&str, &str)] = &[
    (
        "todo.rs",
        "How does TodoWrite check that only one item is in progress?",
    ),
    ("diff.rs", "Where is the unified diff's context size set?"),
    (
        "ring.rs",
        "How does the ring buffer drop old output when it is full?",
    ),
    (
        "terminal_text.rs",
        "Which control characters does strip_controls remove?",
    ),
];

/// The tool result the main model received for one run.
fn read_once(curator_url: &str, file: &str, question: &str, curate: bool) -> (String, Duration) {
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Reply::tool("Read", json!({ "path": file }))),
            Reply::text("done").into(),
        ],
    );
    let ws = Workspace::new();
    let extra = format!(
        "\n[[models]]\nid = \"curator\"\nprovider = \"openai\"\nmodel = \"curator\"\nurl = \"{curator_url}\"\nlocal = true\ncontext_window = 8192\n\
         [agent]\ndefault_model = \"test\"\n[context]\ncurate_reads = {curate}\ncurator_model = \"curator\"\n"
    );
    support::write_config_with(ws.home(), Protocol::OpenAi, &server.url(), &extra);
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/fixtures/curate")
        .join(file);
    std::fs::copy(&fixture, ws.root().join(file)).unwrap();
    let started = Instant::now();
    let out = run_with_timeout(ws.cmd().args(["-p", question]), Duration::from_secs(300));
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = texts(&server.last_chat_request().unwrap(), "tool")
        .pop()
        .unwrap_or_default();
    (result, took)
}

fn main() {
    let url = std::env::var("LINGGEN_CURATOR_URL")
        .unwrap_or_else(|_| "http://127.0.0.1:18080/v1".to_string());
    let models = url.trim_end_matches('/').to_string() + "/models";
    let up = std::process::Command::new("curl")
        .args(["-sf", "--max-time", "3", &models])
        .output()
        .is_ok_and(|o| o.status.success());
    if !up {
        println!(
            "skipping: no curator model at {url} (start one: ../shared/tools/local-llm.sh start \
             18080, or set LINGGEN_CURATOR_URL)"
        );
        return;
    }
    println!("curator: {url}");
    let (mut plain_total, mut curated_total) = (0, 0);
    for (file, question) in CASES {
        let (plain, _) = read_once(&url, file, question, false);
        let (curated, took) = read_once(&url, file, question, true);
        let how = if curated.contains("curated for this conversation") {
            curated.lines().nth(1).unwrap_or_default().to_string()
        } else {
            "fell back to the plain read".to_string()
        };
        println!(
            "{file:<18} plain {:>6} chars   curated {:>6} chars   {:>5.1}%   {:>6.1} s   {how}",
            plain.len(),
            curated.len(),
            100.0 * curated.len() as f64 / plain.len().max(1) as f64,
            took.as_secs_f64()
        );
        plain_total += plain.len();
        curated_total += curated.len();
    }
    println!(
        "{:<18} plain {plain_total:>6} chars   curated {curated_total:>6} chars   {:>5.1}%",
        "all",
        100.0 * curated_total as f64 / plain_total.max(1) as f64
    );
}
