//! `capture_screenshot` with a real headless Chromium against a real local web server:
//! through the library (the tool itself) and through the binary (the permission path).
//!
//! Without Chromium these tests print why and pass, except under CI (`CI` set), where a
//! missing browser is a failure: CI installs it, so its absence means the tests would
//! silently prove nothing.

// Helpers here may unwrap: a failure is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use linggen::tools::screenshot::{self, ScreenshotSettings};
use linggen::tools::{self, ToolContext};
use serde_json::{Value, json};
use support::{Protocol, Reply, ScriptedServer, Step, Workspace, run_with_timeout, texts};

const TIMEOUT: Duration = Duration::from_secs(120);
const PAGE: &str = "<!doctype html><title>shot</title>\
    <body style=\"margin:0;background:#1e90ff\"><h1 id=\"x\">linggen</h1>\
    <script>setTimeout(() => document.body.style.background = '#ff4500', 50)</script>";

/// True when Chromium is there. Otherwise prints why the caller skips, or fails under CI.
fn have_chromium(test: &str) -> bool {
    match screenshot::locate_chromium(&ScreenshotSettings::default(), Path::new("/nonexistent")) {
        Ok(_) => true,
        Err(why) => {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
            assert!(!ci, "CI must have Chromium for {test}: {why}");
            eprintln!("skipping {test}: Chromium is not installed ({why})");
            false
        }
    }
}

/// A tiny HTTP/1.0-style server on 127.0.0.1 that answers `/page` with [`PAGE`] and
/// anything else with 404; it records the paths asked for.
struct PageServer {
    port: u16,
    paths: Arc<Mutex<Vec<String>>>,
}

impl PageServer {
    fn start() -> PageServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let paths = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&paths);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let seen = Arc::clone(&seen);
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut request_line = String::new();
                    if reader.read_line(&mut request_line).is_err() {
                        return;
                    }
                    // The rest of the head, up to the blank line.
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                        line.clear();
                    }
                    let path = request_line.split(' ').nth(1).unwrap_or("").to_string();
                    let (status, body) = if path == "/page" {
                        ("200 OK", PAGE)
                    } else {
                        ("404 Not Found", "not found")
                    };
                    seen.lock().unwrap().push(path);
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                });
            }
        });
        PageServer { port, paths }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/page", self.port)
    }

    fn saw(&self, path: &str) -> bool {
        self.paths.lock().unwrap().iter().any(|p| p == path)
    }
}

fn assert_png(path: &Path, width: u32, height: u32) {
    let bytes = std::fs::read(path).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "not a PNG: {}",
        path.display()
    );
    assert_eq!(screenshot::png_dimensions(&bytes), Some((width, height)));
}

fn screenshots(root: &Path) -> Vec<std::path::PathBuf> {
    match std::fs::read_dir(root.join(screenshot::DIR)) {
        Ok(entries) => entries
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "png"))
            .collect(),
        Err(_) => Vec::new(),
    }
}

#[tokio::test]
async fn captures_a_local_page_into_the_workspace() {
    if !have_chromium("captures_a_local_page_into_the_workspace") {
        return;
    }
    let server = PageServer::start();
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(&dir.path().canonicalize().unwrap());
    let args = json!({"url": server.url(), "width": 640, "height": 400, "delay_ms": 200});
    let prepared = tools::prepare(&ctx, "capture_screenshot", &args).unwrap();
    assert_eq!(
        prepared.summary,
        format!("Screenshot {} (640x400)", server.url())
    );
    let out = tools::run(&ctx, &prepared).await;
    assert!(!out.is_error, "{}", out.model);
    let files = screenshots(&ctx.root);
    assert_eq!(files.len(), 1, "{files:?}");
    let rel = files[0]
        .strip_prefix(&ctx.root)
        .unwrap()
        .display()
        .to_string();
    assert!(rel.starts_with(".linggen/screenshots/") && rel.ends_with(".png"));
    assert!(
        out.model.contains(&format!("to {rel} (PNG, 640x400, ")),
        "{}",
        out.model
    );
    assert!(
        out.summary.starts_with(&format!("{rel} (640x400, ")),
        "{}",
        out.summary
    );
    assert_png(&files[0], 640, 400);
    assert!(server.saw("/page"), "the browser never asked for the page");
    // Screenshots do not show up as changes in the person's repository.
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(&ctx.root)
            .output()
    };
    if git(&["init", "-q"]).is_ok_and(|o| o.status.success()) {
        let status = git(&["status", "--porcelain", "--untracked-files=all"]).unwrap();
        assert_eq!(String::from_utf8_lossy(&status.stdout), "");
    }
}

/// Runs `linggen ARGS` once with a model that calls `capture_screenshot(args)`, with
/// `TMPDIR` pointing at `tmp`; returns the tool's result.
fn screenshot_call(
    ws: &Workspace,
    args: Value,
    tmp: &Path,
    extra_env: &[(&str, &str)],
    flags: &[&str],
) -> String {
    let server = ScriptedServer::start_background(
        Protocol::Ollama,
        vec![
            Step::from(Reply::tool("capture_screenshot", args)),
            Reply::text("done").into(),
        ],
    );
    ws.configure(Protocol::Ollama, &server.url());
    let mut cmd = ws.cmd();
    cmd.env("TMPDIR", tmp)
        .args(["-p", "take a screenshot"])
        .args(flags);
    for (name, value) in extra_env {
        cmd.env(name, value);
    }
    let out = run_with_timeout(&mut cmd, TIMEOUT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = texts(&server.last_chat_request().unwrap(), "tool");
    assert_eq!(results.len(), 1, "{results:?}");
    results[0].clone()
}

#[test]
fn the_binary_asks_first_refuses_in_plan_mode_and_runs_when_allowed() {
    if !have_chromium("the_binary_asks_first_refuses_in_plan_mode_and_runs_when_allowed") {
        return;
    }
    let page = PageServer::start();
    let ws = Workspace::new();
    let tmp = tempfile::tempdir().unwrap();
    let call = json!({"url": page.url(), "delay_ms": 100});

    // Default mode, nobody to ask: not run.
    let result = screenshot_call(&ws, call.clone(), tmp.path(), &[], &[]);
    assert!(result.contains("needs the user's approval"), "{result}");
    assert!(result.contains("opens http://127.0.0.1:"), "{result}");
    // Plan mode: refused even with an allow rule, because it writes.
    let plan = [
        "--permission-mode",
        "plan",
        "--allowed-tools",
        "capture_screenshot",
    ];
    let result = screenshot_call(&ws, call.clone(), tmp.path(), &[], &plan);
    assert!(result.contains("plan mode is read-only"), "{result}");
    assert!(screenshots(ws.root()).is_empty());
    assert!(!page.saw("/page"), "a refused call fetched the page");

    // An allow rule: it runs, the PNG lands in the workspace, the temp profile is gone.
    let allowed = ["--allowed-tools", "capture_screenshot"];
    let result = screenshot_call(&ws, call, tmp.path(), &[], &allowed);
    assert!(
        result.contains("saved a screenshot of http://127.0.0.1:"),
        "{result}"
    );
    let files = screenshots(ws.root());
    assert_eq!(files.len(), 1, "{files:?}");
    assert_png(
        &files[0],
        screenshot::DEFAULT_WIDTH,
        screenshot::DEFAULT_HEIGHT,
    );
    assert!(page.saw("/page"));
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
}

#[test]
fn a_missing_browser_is_a_clear_error() {
    let ws = Workspace::new();
    let tmp = tempfile::tempdir().unwrap();
    let call = json!({"url": "http://localhost:9/"});
    let bypass = ["--permission-mode", "bypass"];
    // Configured to something that is not there.
    let env = [("LINGGEN_CHROMIUM", "/nonexistent/chromium")];
    let result = screenshot_call(&ws, call.clone(), tmp.path(), &env, &bypass);
    assert!(
        result.contains("LINGGEN_CHROMIUM = \"/nonexistent/chromium\"")
            && result.contains("apt-get install chromium"),
        "{result}"
    );
    // Nothing configured and no browser on PATH.
    let empty = tempfile::tempdir().unwrap();
    let path = empty.path().display().to_string();
    let result = screenshot_call(&ws, call, tmp.path(), &[("PATH", &path)], &bypass);
    assert!(
        result.contains("capture_screenshot needs Chromium") && result.contains("[tools] chromium"),
        "{result}"
    );
    assert!(screenshots(ws.root()).is_empty());
}

/// A vision model sees the page it took: the PNG rides with the tool result as an image.
#[test]
fn a_vision_model_receives_the_screenshot_as_an_image() {
    if !have_chromium("a_vision_model_receives_the_screenshot_as_an_image") {
        return;
    }
    let page = PageServer::start();
    let ws = Workspace::new();
    let tmp = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start_background(
        Protocol::Ollama,
        vec![
            Step::from(Reply::tool(
                "capture_screenshot",
                json!({"url": page.url(), "delay_ms": 100}),
            )),
            Reply::text("done").into(),
        ],
    );
    support::write_config_with(
        ws.home(),
        Protocol::Ollama,
        &server.url(),
        "images = true\n",
    );
    let mut cmd = ws.cmd();
    cmd.env("TMPDIR", tmp.path()).args([
        "-p",
        "take a screenshot",
        "--allowed-tools",
        "capture_screenshot",
    ]);
    let out = run_with_timeout(&mut cmd, TIMEOUT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let request = server.last_chat_request().unwrap();
    let tool = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    let images = tool["images"].as_array().cloned().unwrap_or_default();
    assert_eq!(images.len(), 1, "{tool}");
    // Base64 of a PNG starts with the signature's encoding.
    assert!(
        images[0].as_str().unwrap().starts_with("iVBORw0KGgo"),
        "{tool}"
    );
}
