//! Opt-in end-to-end test against a real model: llama.cpp's server with a tiny GGUF model,
//! as installed by `../shared/tools/local-llm.sh install` (`.ci/run` tries to). It proves
//! the OpenAI and Anthropic wire protocols and streaming against a real server; the model is
//! too small to call tools, so agent quality is not what this checks.
//!
//! Skips with a message when the server or the model is not installed.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn installed() -> Option<(PathBuf, PathBuf)> {
    let cache = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/linggen-llm"));
    let from_env = |var: &str, default: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .or_else(|| cache.as_ref().map(|c| c.join(default)))
    };
    let bin = from_env("LINGGEN_E2E_LLAMA_SERVER", "bin/llama-server")?;
    let model = from_env("LINGGEN_E2E_GGUF", "models/SmolLM2-135M-Instruct.Q4_1.gguf")?;
    (bin.is_file() && model.is_file()).then_some((bin, model))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start(bin: &Path, model: &Path, port: u16) -> Server {
    let child = Command::new(bin)
        .args(["-m"])
        .arg(model)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--jinja", "-c", "8192", "-t", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start llama-server");
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        // The port opens before the model is loaded; /health answers 200 when it is ready.
        if health_ok(port) {
            return server;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("llama-server did not become ready on port {port}");
}

fn health_ok(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut conn) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    let request =
        format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if conn.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    conn.read_exact(&mut head).is_ok() && head.ends_with(b"200")
}

fn run_linggen(provider: &str, url: &str) -> (String, String) {
    run_linggen_with(provider, url, &["-p", "Say hello"], |_| {})
}

fn run_linggen_with(
    provider: &str,
    url: &str,
    args: &[&str],
    prepare: impl FnOnce(&Path),
) -> (String, String) {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    prepare(root.path());
    std::fs::write(
        home.path().join("linggen-agent.toml"),
        format!(
            "[[models]]\nid = \"smol\"\nprovider = \"{provider}\"\nmodel = \"smollm2\"\nurl = \"{url}\"\ncontext_window = 8192\nmax_tokens = 64\n"
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_linggen"))
        .args(args)
        .args(["--output-format", "stream-json", "--max-iters", "1"])
        .env("LINGGEN_HOME", home.path())
        .current_dir(root.path())
        .stdin(Stdio::null())
        .output()
        .expect("run linggen");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (stdout, stderr)
}

fn assert_streamed_answer(protocol: &str, stdout: &str, stderr: &str) {
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("{protocol}: bad line {l}: {e}"))
        })
        .collect();
    let tokens: String = lines
        .iter()
        .filter(|e| e["type"] == "Token" && e["thinking"] == false)
        .filter_map(|e| e["token"].as_str())
        .collect();
    let token_events = lines.iter().filter(|e| e["type"] == "Token").count();
    let result = lines.last().expect("a result line");
    assert_eq!(result["type"], "result", "{protocol}: {stdout}\n{stderr}");
    assert!(
        !tokens.trim().is_empty() && token_events > 2,
        "{protocol}: expected a streamed answer, got {token_events} token events: {stdout}\n{stderr}"
    );
    eprintln!(
        "{protocol}: streamed {token_events} token events: {:?}",
        tokens.trim()
    );
}

#[test]
fn real_model_streams_an_answer_over_openai_and_anthropic() {
    let Some((bin, model)) = installed() else {
        eprintln!(
            "skipping: llama.cpp server not installed (run ../shared/tools/local-llm.sh install)"
        );
        return;
    };
    let port = free_port();
    let _server = start(&bin, &model, port);
    let base = format!("http://127.0.0.1:{port}");
    let (out, err) = run_linggen("openai", &format!("{base}/v1"));
    assert_streamed_answer("openai", &out, &err);
    let (out, err) = run_linggen("anthropic", &base);
    assert_streamed_answer("anthropic", &out, &err);

    // Auto mode: the answer is constrained to an action's schema (`response_format`), so
    // even this tiny model, which otherwise answers in prose, starts a JSON action.
    let agent = "---\nname: closer\nmode: auto\ntools: []\npolicy: [Finalize]\n---\nFinalize the task with a one-line summary.\n";
    let (out, err) = run_linggen_with(
        "openai",
        &format!("{base}/v1"),
        &["-p", "Say hello", "--agent", "closer"],
        |root| {
            std::fs::create_dir_all(root.join("agents")).unwrap();
            std::fs::write(root.join("agents/closer.md"), agent).unwrap();
        },
    );
    let answer = out
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["type"] == "Message" && e["role"] == "assistant")
        .and_then(|e| e["content"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no answer: {out}\n{err}"));
    // The answer may be cut off at max_tokens, but it starts as an action: `{` and one of
    // the finalize shape's keys (in whichever order the model picks them).
    let start = answer.trim_start();
    assert!(
        start.starts_with('{') && (start.contains("\"type\"") || start.contains("\"summary\"")),
        "auto mode's answer is not a JSON action: {answer:?}\n{err}"
    );
    eprintln!("auto: {answer:?}");
}
