//! The web mirror in a real browser: the shell runs in a pty against the scripted model
//! server, `/share` prints the link, and headless Chromium (driven through ChromeDriver's
//! W3C WebDriver HTTP API) opens it, shows the answer the terminal already got, sends a
//! message that reaches the model, and answers an approval the terminal sees resolved.
//! Other tests: a new session's hint, a dead model's error shown once, a lost token, the
//! share stopped under the page, a read-only viewer during an approval, a 390 px phone, the
//! settings chips (the terminal's prompt following them), a tab per agent (a delegated
//! run's calls, cancelling it), the message box while disconnected, a resumed session's
//! tool calls, and a background command stopped from the page.
//! Screenshots are saved in `target/web-screenshots/` for a person to look at.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them). Without them
//! the test says so and passes, except under `CI`, where their absence is a failure.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::pty::{Repl, last_message, workspace};
use support::{Reply, Step};
use tempfile::TempDir;

/// How long one expected terminal output or page state may take; generous for a loaded
/// 2-core machine, and the bound that keeps a broken page from hanging the test.
const TIMEOUT: Duration = Duration::from_secs(20);
/// Between two looks at the page.
const POLL: Duration = Duration::from_millis(50);

const FIRST_QUESTION: &str = "explain the entry point";
const FIRST_ANSWER: &str = "The entry point is **main**:\n\n```rust\nfn main() {\n    println!(\"hello from main\");\n}\n```\n\nIt prints one line.\n";
const WEB_QUESTION: &str = "hello from the browser";
/// Streamed slowly enough that the page is seen mid-answer.
const WEB_ANSWER: &str = "Hello, browser! This answer arrives a few bytes at a time, so the page shows it while it streams, and then it is complete.";
const WRITE_REQUEST: &str = "write the notes file";
const WRITTEN_FILE: &str = "notes-from-web.txt";
const WRITTEN_TEXT: &str = "approved in the browser\n";
const FINAL_ANSWER: &str = "The notes file is written.";

#[test]
fn a_shared_session_is_watched_and_driven_from_chromium() {
    let _one_browser_at_a_time = serial();
    let Some(tools) = BrowserTools::find() else {
        return;
    };
    let (ws, server) = workspace(vec![
        Step::from(Reply::text(FIRST_ANSWER)),
        Reply::text(WEB_ANSWER)
            .delta_bytes(4)
            .chunk_delay(Duration::from_millis(40))
            .into(),
        Reply::tool(
            "Write",
            json!({"path": WRITTEN_FILE, "content": WRITTEN_TEXT}),
        )
        .into(),
        Reply::text(FINAL_ANSWER).into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);

    // 1. The terminal asks first; the browser joins later.
    repl.line(FIRST_QUESTION);
    repl.expect("It prints one line.");
    repl.line("/share");
    repl.expect("sharing this session: ");
    let link = repl.expect_share_link();
    assert!(link.addr.ip().is_loopback(), "{}", link.url);
    repl.expect("/share stop ends it");
    let url = link.url;

    let driver = ChromeDriver::start(&tools);
    let browser = Browser::open(&driver, &tools);
    browser.goto(&url);

    // 2. The late joiner sees the answer, rendered, from the session snapshot.
    browser.wait_for("#status[data-state=\"connected\"]");
    let answer = browser.wait_for_text(".msg.assistant", "It prints one line.");
    assert!(
        !answer.contains("**") && !answer.contains("```"),
        "raw markdown on the page: {answer:?}"
    );
    let code = browser.wait_for_text(".msg.assistant pre", "println!(\"hello from main\");");
    assert!(code.contains("fn main()"), "code block: {code:?}");
    browser.wait_for_text(".msg.user", FIRST_QUESTION);
    // Each answer names the model that served its run.
    browser.wait_for_text(".msg.assistant .from", "ling · test");
    // The context meter says how full the window is; its tooltip, what the last request
    // was made of (as /context does in the shell).
    let meter = browser.script(
        "const c = document.querySelector('#context');
         return { hidden: c.hidden, text: c.textContent, title: c.title };",
        json!([]),
    );
    assert_eq!(meter["hidden"], false, "{meter}");
    assert!(meter["text"].as_str().unwrap().contains("%)"), "{meter}");
    let title = meter["title"].as_str().unwrap();
    for part in [
        "of 8192 tokens",
        "system prompt:",
        "tools:",
        "history:",
        "tool results:",
    ] {
        assert!(title.contains(part), "{part} missing: {title}");
    }
    let address = browser.current_url();
    assert!(
        !address.contains("token=") && !address.contains("ticket="),
        "the ticket stays in the address bar: {address}"
    );
    markdown_renders_links_and_escapes(&browser);

    // 3. A message typed on the page reaches the model and the terminal, and the answer
    //    streams into the page.
    let input = browser.wait_for("#input");
    browser.send_keys(&input, WEB_QUESTION);
    browser.click(&browser.wait_for("#send"));
    wait_until("the web message reaches the model", || {
        (server.chat_requests().len() >= 2).then_some(())
    });
    assert!(
        last_message(&server, "user").contains(WEB_QUESTION),
        "the model got {:?}",
        server.last_chat_request()
    );
    repl.expect(&format!("[web] {WEB_QUESTION}"));
    // What the page says and where the text stands while the answer streams.
    let streaming = wait_until("a streaming answer on the page", || {
        let seen = browser.script(
            "const b = [...document.querySelectorAll('.msg.assistant.streaming')]
               .find((e) => e.innerText.includes('Hello'));
             return b ? { text: b.innerText, left: b.querySelector('.md').getBoundingClientRect().left,
               activity: document.querySelector('#activity-text').textContent } : null;",
            json!([]),
        );
        (!seen.is_null()).then_some(seen)
    });
    browser.save_screenshot("streaming.png");
    let partial = streaming["text"].as_str().unwrap();
    assert!(
        !partial.contains("then it is complete."),
        "the answer was complete before it was seen streaming: {partial:?}"
    );
    let activity = streaming["activity"].as_str().unwrap();
    assert!(
        !activity.contains("thinking"),
        "the page says {activity:?} while the answer streams"
    );
    assert!(activity.contains("answering"), "activity: {activity:?}");
    browser.wait_for_text(".msg.assistant", "then it is complete.");
    // One word: the terminal wraps the answer at its width.
    repl.expect("complete.");
    wait_until("the answer stops streaming", || {
        browser
            .texts(".msg.assistant.streaming")
            .is_empty()
            .then_some(())
    });
    // The text does not move when the answer ends.
    let left = browser.script(
        "const b = [...document.querySelectorAll('.msg.assistant')]
           .find((e) => e.innerText.includes('then it is complete.'));
         return b.querySelector('.md').getBoundingClientRect().left;",
        json!([]),
    );
    assert_eq!(
        streaming["left"].as_f64(),
        left.as_f64(),
        "the answer's text moved when it stopped streaming"
    );

    browser.save_screenshot("streamed.png");

    // 4. The terminal asks for a write; the page answers the approval, and the terminal
    //    sees who did.
    repl.line(WRITE_REQUEST);
    repl.expect("Allow Write");
    let allow = browser.wait_for(".approval[data-id] button[data-decision=\"allow_once\"]");
    browser.click(&allow);
    repl.expect("allowed once in web");
    browser.wait_for_text(".approval.resolved", "allowed once in web");
    repl.expect(FINAL_ANSWER);
    assert_eq!(ws.read(WRITTEN_FILE), WRITTEN_TEXT);
    let tool_result = last_message(&server, "tool");
    assert!(
        tool_result.contains(&format!("created {WRITTEN_FILE}")),
        "the model got {tool_result:?} for the write"
    );
    browser.wait_for_text(".msg.assistant", FINAL_ANSWER);
    browser.wait_for_text(".msg.user", WRITE_REQUEST);
    // The change report links to the run's audit trail, as `linggen runs show` prints it.
    browser.click(&browser.wait_for(".line.changes a.audit"));
    let trail = browser.wait_for_text("pre.audit-log", &format!("→ Write {WRITTEN_FILE}"));
    assert!(trail.starts_with("run "), "{trail}");

    // 5. What the page looks like now, for a person to check; then on a phone.
    browser.save_screenshot("share.png");
    browser.set_viewport(390, 844);
    fits_a_phone(&browser);
    browser.save_screenshot("share-390.png");

    drop(browser);
    repl.line("/quit");
    server.assert_script_consumed();
}

/// Polls `probe` until it yields a value; fails after [`TIMEOUT`] saying what was awaited.
/// The shell's session shared, and Chromium on its link, connected. Keep the driver
/// until the browser is dropped.
fn shared_page(repl: &mut Repl, tools: &BrowserTools) -> (ChromeDriver, Browser) {
    repl.line("/share");
    let link = repl.expect_share_link();
    let driver = ChromeDriver::start(tools);
    let browser = Browser::open(&driver, tools);
    browser.goto(&link.url);
    browser.wait_for("#status[data-state=\"connected\"]");
    (driver, browser)
}

/// The browser tests take turns: each drives a Chromium, a chromedriver, a shell and a
/// scripted model, and side by side on two cores their streams stall long enough for the
/// model client's stall detection to ask again (consuming the script's steps).
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn wait_until<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(POLL);
    }
}

fn screenshot_path(name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("web-screenshots").join(name)
}

/// The page's own markdown renderer on strings a model writes: what a reader sees, and
/// where the links go.
fn markdown_renders_links_and_escapes(browser: &Browser) {
    let render = |source: &str| {
        browser.script(
            "const d = document.createElement('div');
             d.innerHTML = renderMarkdown(arguments[0]);
             return { text: d.textContent,
               links: [...d.querySelectorAll('a')].map((a) => [a.getAttribute('href'), a.textContent]) };",
            json!([source]),
        )
    };
    let cases = [
        (
            "see https://example.com/a's and \"https://example.com/q\" or https://example.com/x<id>",
            "see https://example.com/a's and \"https://example.com/q\" or https://example.com/x<id>",
            json!([
                ["https://example.com/a", "https://example.com/a"],
                ["https://example.com/q", "https://example.com/q"],
                ["https://example.com/x", "https://example.com/x"]
            ]),
        ),
        (
            "docs at <https://example.com/p?a=1&b=2>.",
            "docs at https://example.com/p?a=1&b=2.",
            json!([[
                "https://example.com/p?a=1&b=2",
                "https://example.com/p?a=1&b=2"
            ]]),
        ),
        (
            "\\*not emphasis\\* and \\`not code\\` but `a\\*b`",
            "*not emphasis* and `not code` but a\\*b",
            json!([]),
        ),
    ];
    for (source, text, links) in cases {
        let shown = render(source);
        assert_eq!(shown["text"], text, "{source:?} rendered as {shown}");
        assert_eq!(shown["links"], links, "{source:?} rendered as {shown}");
    }
}

/// At a phone's width nothing sticks out sideways, the header is one row, and the
/// composer's field and button are both on screen.
fn fits_a_phone(browser: &Browser) {
    let layout = browser.script(
        "const r = (s) => document.querySelector(s).getBoundingClientRect();
         return { width: innerWidth, scroll: document.documentElement.scrollWidth,
           header: r('#top').height, input: r('#input').right, send: r('#send').right,
           sendLeft: r('#send').left, inputWidth: r('#input').width };",
        json!([]),
    );
    assert_eq!(layout["width"], 390, "{layout}");
    assert!(
        layout["scroll"].as_f64() <= Some(390.0),
        "wider than the screen: {layout}"
    );
    assert!(
        layout["header"].as_f64() < Some(52.0),
        "the header wrapped: {layout}"
    );
    assert!(
        layout["send"].as_f64() <= Some(390.0),
        "Send is off screen: {layout}"
    );
    assert!(
        layout["inputWidth"].as_f64() > Some(200.0),
        "the field is squeezed: {layout}"
    );
    assert!(
        layout["input"].as_f64() <= layout["sendLeft"].as_f64(),
        "the field runs under Send: {layout}"
    );
}

/// A port nothing listens on: a model server that is down.
fn dead_url() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}/v1")
}

#[test]
fn a_new_session_then_a_dead_model_a_lost_token_and_a_stopped_share() {
    let _one_browser_at_a_time = serial();
    let Some(tools) = BrowserTools::find() else {
        return;
    };
    let ws = support::Workspace::new();
    ws.configure(support::Protocol::OpenAi, &dead_url());
    let mut repl = Repl::start(&ws, &[]);
    repl.line("/share");
    let link = repl.expect_share_link();
    repl.expect("/share stop ends it");
    let driver = ChromeDriver::start(&tools);
    let browser = Browser::open(&driver, &tools);
    browser.goto(&link.url);

    // A new session says what to do, where and with which model.
    browser.wait_for("#status[data-state=\"connected\"]");
    let hint = browser.wait_for_text("#empty", "Type a message below to start");
    let root = ws.root().display().to_string();
    assert!(
        hint.contains(&root),
        "the hint does not name the workspace: {hint:?}"
    );
    assert!(
        hint.contains("scripted"),
        "the hint does not name the model: {hint:?}"
    );
    browser.save_screenshot("empty.png");
    browser.set_viewport(390, 844);
    fits_a_phone(&browser);
    browser.save_screenshot("empty-390.png");

    // The model server is down: its error is shown once.
    let input = browser.wait_for("#input");
    browser.send_keys(&input, "hello?");
    browser.click(&browser.wait_for("#send"));
    browser.wait_for_text(".line.error", "cannot reach model");
    browser.wait_for(".outcome.error");
    let shown = browser
        .texts("#transcript > *")
        .into_iter()
        .filter(|text| text.contains("cannot reach model"))
        .count();
    assert_eq!(
        shown,
        1,
        "the page has {:?}",
        browser.texts("#transcript > *")
    );
    let hint_shown = browser.script(
        "return getComputedStyle(document.querySelector('#empty')).display !== 'none';",
        json!([]),
    );
    assert_eq!(
        hint_shown, false,
        "the empty-session hint stays over a conversation"
    );

    // Without its credential the page says so in words, and can retry once it is back.
    let saved = browser.script(
        "const c = sessionStorage.getItem('linggen-credential'); \
         sessionStorage.removeItem('linggen-credential'); return c;",
        json!([]),
    );
    browser.script("reload();", json!([]));
    let banner = browser.wait_for_text("#banner", "needs its token");
    assert!(!banner.contains('{'), "raw JSON on the page: {banner:?}");
    browser.wait_for("#status[data-state=\"offline\"]");
    browser.script(
        "sessionStorage.setItem('linggen-credential', arguments[0]);",
        json!([saved]),
    );
    browser.click(&browser.wait_for("#banner .banner-action"));
    browser.wait_for("#status[data-state=\"connected\"]");
    browser.wait_for_text(".line.error", "cannot reach model");

    // The share stops under the page: after a few tries it says so and stops trying.
    repl.line("/share stop");
    repl.expect("stopped sharing");
    let deadline = Instant::now() + Duration::from_secs(60);
    let banner = loop {
        let banner = browser.texts("#banner").pop().unwrap_or_default();
        if banner.contains("unreachable") {
            break banner;
        }
        assert!(
            Instant::now() < deadline,
            "still no final state; the banner says {banner:?}"
        );
        std::thread::sleep(POLL);
    };
    assert!(banner.contains("/share"), "{banner:?}");
    let status = browser.texts("#status").pop().unwrap_or_default();
    assert!(!status.contains("reconnecting"), "status: {status:?}");
    browser.wait_for("#banner .banner-action");
    browser.save_screenshot("share-ended.png");
    std::thread::sleep(Duration::from_secs(3));
    let idle = browser.script(
        "return { es: S.es === null, state: document.querySelector('#status').dataset.state };",
        json!([]),
    );
    assert_eq!(
        idle,
        json!({"es": true, "state": "offline"}),
        "the page kept trying"
    );

    drop(browser);
    repl.line("/quit");
}

#[test]
fn a_read_only_viewer_waits_for_the_persons_approval() {
    let _one_browser_at_a_time = serial();
    let Some(tools) = BrowserTools::find() else {
        return;
    };
    let (ws, server) = workspace(vec![
        Step::from(Reply::tool(
            "Write",
            json!({"path": WRITTEN_FILE, "content": WRITTEN_TEXT}),
        )),
        Reply::text(FINAL_ANSWER).into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("/share --read-only");
    repl.expect("read-only viewer: ");
    let viewer = repl.expect_share_link();
    let driver = ChromeDriver::start(&tools);
    let browser = Browser::open(&driver, &tools);
    browser.goto(&viewer.url);
    browser.wait_for("#status[data-state=\"connected\"]");
    browser.wait_for_text("#empty", "Nothing here yet");

    repl.line(WRITE_REQUEST);
    repl.expect("Allow Write");
    browser.wait_for(".approval[data-id]");
    let activity = browser.wait_for_text("#activity-text", "approval");
    assert!(
        activity.contains("the person's approval") && !activity.contains("your"),
        "a viewer is told {activity:?}"
    );
    browser.wait_for_text(
        ".approval .approval-note",
        "waiting for the person's approval",
    );
    let buttons = browser.script(
        "return [...document.querySelectorAll('button')]
           .filter((b) => b.offsetParent !== null && b.closest('#transcript, #activity, #composer'))
           .map((b) => b.textContent);",
        json!([]),
    );
    assert_eq!(
        buttons,
        json!([]),
        "a viewer sees buttons to answer or cancel"
    );
    browser.save_screenshot("viewer-approval.png");
    // Nor menus to change the settings.
    browser.click(&browser.wait_for("#mode"));
    let menu = browser.script(
        "return document.querySelector('#chip-menu').hidden;",
        json!([]),
    );
    assert_eq!(menu, json!(true), "a viewer got a settings menu");

    repl.expect("type a reason");
    repl.line("y");
    repl.expect(FINAL_ANSWER);
    browser.wait_for_text(".approval.resolved", "allowed once");
    drop(browser);
    repl.line("/quit");
    server.assert_script_consumed();
}

/// An MCP server's tool shows on the page like any other call: its approval is answered
/// from the browser, and its line and result appear in the transcript.
#[test]
fn an_mcp_tool_call_is_approved_and_shown_on_the_page() {
    let _one_browser_at_a_time = serial();
    let Some(tools) = BrowserTools::find() else {
        return;
    };
    let Some(entry) = support::mcp_everything() else {
        return;
    };
    let server = support::ScriptedServer::start_background(
        support::Protocol::OpenAi,
        vec![
            Step::from(Reply::tool(
                "mcp__everything__echo",
                json!({"message": "from the page"}),
            )),
            Reply::text("The server echoed it.").into(),
        ],
    );
    let ws = support::Workspace::new();
    let config = format!(
        "[mcp]\neager_tools_chars = 100000\n[mcp_servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
        entry.display().to_string()
    );
    support::write_config_with(ws.home(), support::Protocol::OpenAi, &server.url(), &config);
    let mut repl = Repl::start(&ws, &[]);
    let (_driver, browser) = shared_page(&mut repl, &tools);

    repl.line("echo it through the server");
    repl.expect("mcp__everything__echo {\"message\":\"from the page\"}");
    let allow = browser.wait_for(".approval[data-id] button[data-decision=\"allow_once\"]");
    let question = browser.wait_for_text(".approval[data-id]", "mcp__everything__echo");
    assert!(question.contains("from the page"), "{question}");
    browser.click(&allow);
    repl.expect("allowed once in web");
    repl.expect("The server echoed it.");
    let call = browser.wait_for_text(
        ".tool[data-tool=\"mcp__everything__echo\"] .tool-line",
        "mcp__everything__echo",
    );
    assert!(call.contains("from the page"), "{call}");
    browser.wait_for(".tool[data-tool=\"mcp__everything__echo\"] .result-line");
    browser.wait_for_text(".msg.assistant", "The server echoed it.");
    browser.save_screenshot("mcp-call.png");
    assert!(
        last_message(&server, "tool").contains("Echo: from the page"),
        "{}",
        last_message(&server, "tool")
    );
    drop(browser);
    repl.line("/quit");
    server.assert_script_consumed();
}

/// Opening the link without its ticket (or with a spent one) must show a page a person can
/// read, not the API's JSON: the page loads without a credential and says what to do.
#[test]
fn a_link_without_its_token_shows_words_not_json() {
    let _one_browser_at_a_time = serial();
    let Some(tools) = BrowserTools::find() else {
        return;
    };
    let (ws, _server) = workspace(vec![]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("/share");
    let link = repl.expect_share_link();
    let driver = ChromeDriver::start(&tools);
    let browser = Browser::open(&driver, &tools);
    // A spent or wrong ticket, and no ticket at all: words, never the server's JSON.
    for query in ["?ticket=wrong", ""] {
        browser.goto(&format!("http://{}/{query}", link.addr));
        browser.wait_for_text("#banner", "needs its token");
        let text = browser.texts("body").pop().unwrap_or_default();
        assert!(
            !text.trim_start().starts_with('{'),
            "the page shows {text:?}"
        );
    }
    drop(browser);
    repl.line("/quit");
}

/* ---------- the browser side ---------- */

/// Where Chromium and ChromeDriver are installed.
struct BrowserTools {
    chromium: PathBuf,
    chromedriver: PathBuf,
}

impl BrowserTools {
    /// Both programs, or `None` after saying why the test skips (outside CI only).
    fn find() -> Option<BrowserTools> {
        let chromium = installed("/usr/bin/chromium", "chromium");
        let chromedriver = installed("/usr/bin/chromedriver", "chromedriver");
        match (chromium, chromedriver) {
            (Some(chromium), Some(chromedriver)) => Some(BrowserTools {
                chromium,
                chromedriver,
            }),
            (chromium, chromedriver) => {
                let missing: Vec<&str> = [
                    chromium.is_none().then_some("chromium"),
                    chromedriver.is_none().then_some("chromedriver"),
                ]
                .into_iter()
                .flatten()
                .collect();
                let missing = missing.join(" and ");
                assert!(
                    std::env::var_os("CI").is_none(),
                    "{missing} not found; CI must install Debian's chromium and chromium-driver"
                );
                eprintln!(
                    "skipping the browser test: {missing} not found \
                     (install Debian's chromium and chromium-driver to run it)"
                );
                None
            }
        }
    }
}

/// `usual` if it exists, else `name` found on `PATH`.
fn installed(usual: &str, name: &str) -> Option<PathBuf> {
    let usual = PathBuf::from(usual);
    if usual.is_file() {
        return Some(usual);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// A `chromedriver` child on a free loopback port, killed when dropped.
struct ChromeDriver {
    child: Child,
    url: String,
    /// The browser profile, fresh for every run.
    profile: TempDir,
}

impl ChromeDriver {
    fn start(tools: &BrowserTools) -> ChromeDriver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(&tools.chromedriver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", tools.chromedriver.display()));
        let driver = ChromeDriver {
            child,
            url: format!("http://127.0.0.1:{port}"),
            profile: TempDir::new().unwrap(),
        };
        let client = WebDriverClient::new();
        wait_until("chromedriver to be ready", || {
            let status = client
                .request("GET", &format!("{}/status", driver.url), None)
                .ok()?;
            (status["value"]["ready"] == true).then_some(())
        });
        driver
    }
}

impl Drop for ChromeDriver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Plain HTTP+JSON to ChromeDriver, on a small runtime of its own (the test is synchronous).
struct WebDriverClient {
    runtime: tokio::runtime::Runtime,
    http: reqwest::Client,
}

impl WebDriverClient {
    fn new() -> WebDriverClient {
        linggen::llm::http::install_tls_provider();
        WebDriverClient {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            http: reqwest::Client::builder()
                .timeout(TIMEOUT)
                .no_proxy()
                .build()
                .unwrap(),
        }
    }

    /// The JSON answer, whatever its status (WebDriver errors are JSON too).
    fn request(&self, method: &str, url: &str, body: Option<Value>) -> Result<Value, String> {
        self.runtime.block_on(async {
            let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
            let mut request = self.http.request(method, url);
            if let Some(body) = body {
                request = request.json(&body);
            }
            let response = request.send().await.map_err(|e| e.to_string())?;
            response.json::<Value>().await.map_err(|e| e.to_string())
        })
    }
}

/// One WebDriver session in headless Chromium, deleted (the browser closed) when dropped.
struct Browser {
    client: WebDriverClient,
    session: String,
}

/// The key under which WebDriver names an element.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Browser {
    fn open(driver: &ChromeDriver, tools: &BrowserTools) -> Browser {
        let profile = format!("--user-data-dir={}", driver.profile.path().display());
        // Root, no network: without these Chromium stalls or refuses to start here.
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,900",
            profile.as_str(),
        ];
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": tools.chromium, "args": args},
        }}});
        let client = WebDriverClient::new();
        let answer = client
            .request(
                "POST",
                &format!("{}/session", driver.url),
                Some(capabilities),
            )
            .unwrap_or_else(|e| panic!("create a WebDriver session: {e}"));
        let session = answer["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("chromium did not start: {answer}"))
            .to_string();
        Browser {
            client,
            session: format!("{}/session/{session}", driver.url),
        }
    }

    /// The command's `value`; fails on a WebDriver error.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.session);
        let answer = self
            .client
            .request(method, &url, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let value = answer["value"].clone();
        if let Some(error) = value["error"].as_str() {
            panic!("{method} {path}: {error}: {}", value["message"]);
        }
        value
    }

    fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(json!({"url": url})));
    }

    fn current_url(&self) -> String {
        self.call("GET", "/url", None)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The first element matching `css`, waiting for it to appear.
    fn wait_for(&self, css: &str) -> String {
        wait_until(&format!("{css} on the page"), || {
            let found = self.call(
                "POST",
                "/elements",
                Some(json!({"using": "css selector", "value": css})),
            );
            found.as_array()?.first()?[ELEMENT]
                .as_str()
                .map(str::to_string)
        })
    }

    /// The visible text of every element matching `css`.
    fn texts(&self, css: &str) -> Vec<String> {
        let script = "return [...document.querySelectorAll(arguments[0])].map((e) => e.innerText);";
        let value = self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": [css]})),
        );
        value
            .as_array()
            .map(|all| {
                all.iter()
                    .map(|text| text.as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The text of the first element matching `css` that contains `needle`, waiting for it.
    fn wait_for_text(&self, css: &str, needle: &str) -> String {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let texts = self.texts(css);
            if let Some(text) = texts.iter().find(|text| text.contains(needle)) {
                return text.clone();
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {css} containing {needle:?}; the page has {texts:?}"
            );
            std::thread::sleep(POLL);
        }
    }

    fn click(&self, element: &str) {
        self.call(
            "POST",
            &format!("/element/{element}/click"),
            Some(json!({})),
        );
    }

    fn send_keys(&self, element: &str, text: &str) {
        self.call(
            "POST",
            &format!("/element/{element}/value"),
            Some(json!({"text": text})),
        );
    }

    /// The viewport as PNG bytes.
    fn screenshot(&self) -> Vec<u8> {
        let encoded = self.call("GET", "/screenshot", None);
        base64_decode(encoded.as_str().expect("a base64 screenshot"))
    }

    /// Saves the viewport as `target/web-screenshots/NAME` for a person to look at.
    fn save_screenshot(&self, name: &str) {
        let png = self.screenshot();
        assert!(
            png.starts_with(b"\x89PNG\r\n\x1a\n"),
            "the screenshot is not a PNG"
        );
        let path = screenshot_path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &png).unwrap();
        eprintln!("screenshot: {}", path.display());
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page; its result.
    fn script(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
    }

    /// A phone-sized viewport (Chromium's device emulation, through ChromeDriver).
    fn set_viewport(&self, width: u32, height: u32) {
        let params =
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": true});
        self.call(
            "POST",
            "/goog/cdp/execute",
            Some(json!({"cmd": "Emulation.setDeviceMetricsOverride", "params": params})),
        );
        wait_until("the narrow viewport", || {
            (self.script("return innerWidth;", json!([])) == json!(width)).then_some(())
        });
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Closes Chromium; the driver's own drop kills whatever is left.
        let _ = self.client.request("DELETE", &self.session, None);
    }
}

/// Standard base64 (WebDriver screenshots); no crate for one test.
fn base64_decode(text: &str) -> Vec<u8> {
    fn sextet(c: u8) -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            other => panic!("not base64: {:?}", char::from(other)),
        }
    }
    let digits: Vec<u8> = text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for group in digits.chunks(4) {
        let bits = group
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &c)| acc | sextet(c) << (18 - 6 * i));
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..group.len()]);
    }
    out
}

/// Typing `/` on the page lists the skills and custom commands, as completion does in the
/// shell; a choice fills the line, and the command runs as it does in the terminal.
#[test]
fn slash_on_the_page_lists_custom_commands_and_runs_one() {
    let _one_browser_at_a_time = serial();
    let Some(tools) = BrowserTools::find() else {
        return;
    };
    if !support::git_available() {
        return;
    }
    let (ws, server) = workspace(vec![Step::from(Reply::text(FINAL_ANSWER))]);
    ws.write("src/lib.rs", "pub fn parse() {}\n");
    support::git(ws.root(), &["init", "-q"]);
    support::git(ws.root(), &["add", "src"]);
    support::git(
        ws.root(),
        &["commit", "-q", "-m", "parser: handle empty input"],
    );
    // The person's own command (no trust needed), its `!` line allowed by its tools.
    let commands = ws.home().join(".claude/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("fix-issue.md"),
        "---\ndescription: Fix a GitHub issue\nargument-hint: <number>\n\
         allowed-tools: Bash(git log:*)\n---\nFix issue #$ARGUMENTS and add a test.\n\
         The last commit:\n!`git log -1 --format=%s`\n",
    )
    .unwrap();
    let mut repl = Repl::start(&ws, &[]);
    let (_driver, browser) = shared_page(&mut repl, &tools);
    let input = browser.wait_for("#input");
    browser.send_keys(&input, "/fix");
    let item = browser.wait_for_text("#slash-menu", "/fix-issue <number>");
    assert!(item.contains("command · Fix a GitHub issue"), "{item}");
    browser.click(&browser.wait_for("#slash-menu button[data-name=\"fix-issue\"]"));
    let line = browser.script("return document.querySelector('#input').value;", json!([]));
    assert_eq!(line, json!("/fix-issue "));
    browser.send_keys(&input, "42");
    browser.click(&browser.wait_for("#send"));
    browser.wait_for_text(".msg.assistant", FINAL_ANSWER);
    let users = support::texts(&server.last_chat_request().unwrap(), "user").join("\n");
    assert!(users.contains("Fix issue #42 and add a test."), "{users}");
    assert!(
        users.contains("The last commit:\nparser: handle empty input"),
        "{users}"
    );
    drop(browser);
    repl.line("/quit");
}

/// An image pasted into the message box goes with the message to a vision model, and the
/// transcript says the message carried it.
#[test]
fn an_image_pasted_in_the_page_reaches_the_model() {
    let _one_browser_at_a_time = serial();
    let Some(tools) = BrowserTools::find() else {
        return;
    };
    let server = support::ScriptedServer::start_background(
        support::Protocol::OpenAi,
        vec![Step::from(Reply::text(FINAL_ANSWER))],
    );
    let ws = support::Workspace::new();
    support::write_config_with(
        ws.home(),
        support::Protocol::OpenAi,
        &server.url(),
        "images = true\n",
    );
    let mut repl = Repl::start(&ws, &[]);
    let (_driver, browser) = shared_page(&mut repl, &tools);
    // A 1×1 PNG pasted as the clipboard would carry it.
    browser.script(
        "const bytes = Uint8Array.from(atob(arguments[0]), (c) => c.charCodeAt(0));
         const file = new File([bytes], 'pixel.png', { type: 'image/png' });
         const data = new DataTransfer();
         data.items.add(file);
         const input = document.querySelector('#input');
         input.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));",
        json!(["iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg=="]),
    );
    browser.wait_for_text("#pending-images", "pixel.png");
    let input = browser.wait_for("#input");
    browser.send_keys(&input, "what is this?");
    browser.click(&browser.wait_for("#send"));
    browser.wait_for_text(".msg.assistant", FINAL_ANSWER);
    browser.wait_for_text(".msg.user .image-chip", "image/png");
    // The pixels themselves show: fetched by the id the event names.
    browser.wait_for(".msg.user .image-chip img.image-thumb:not([hidden])");
    let decoded = || {
        browser.script(
            "const img = document.querySelector('.msg.user img.image-thumb');
             return img.complete ? img.naturalWidth : -1;",
            json!([]),
        )
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while decoded() == json!(-1) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(decoded(), json!(1), "the 1×1 pixel is shown");
    let request = server.last_chat_request().unwrap();
    let parts = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter_map(|p| p["image_url"]["url"].as_str())
        .count();
    assert_eq!(parts, 1, "{request}");
    let pending = browser.script(
        "return document.querySelector('#pending-images').hidden;",
        json!([]),
    );
    assert_eq!(pending, json!(true), "the sent image stays pending");
    drop(browser);
    repl.line("/quit");
}

/// The page's mode chip changes the session's mode, and the terminal's prompt follows at
/// once, with the line being typed there kept; a change the session refuses shows its own
/// sentence on the page.
#[test]
fn the_mode_chip_changes_the_mode_and_the_terminal_prompt_follows() {
    let _one_browser_at_a_time = serial();
    let Some(tools) = BrowserTools::find() else {
        return;
    };
    // A long path, to see the approval card wrap on a phone.
    let path =
        "notes/written-from-the-web-page/after-a-settings-change/on-a-phone-sized-screen.txt";
    let (ws, server) = workspace(vec![
        Step::from(Reply::tool(
            "Write",
            json!({"path": path, "content": WRITTEN_TEXT}),
        )),
        Reply::text(FINAL_ANSWER).into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    let (_driver, browser) = shared_page(&mut repl, &tools);
    repl.send("half typed");
    repl.expect("half typed");

    browser.set_viewport(390, 844);
    browser.click(&browser.wait_for("#mode"));
    let menu = browser.wait_for_text("#chip-menu", "one answer, no tools");
    assert!(menu.contains("chat") && menu.contains("auto"), "{menu}");
    fits_a_phone(&browser);
    browser.save_screenshot("chip-menu-390.png");
    browser.click(&browser.wait_for("#chip-menu button[data-value=\"talk\"]"));
    browser.wait_for_text("#mode", "talk");
    repl.expect("ling [talk] › half typed");
    browser.set_viewport(1280, 800);
    browser.click(&browser.wait_for("#mode"));
    browser.click(&browser.wait_for("#chip-menu button[data-value=\"chat\"]"));
    browser.wait_for_text("#mode", "chat");
    repl.expect("ling › half typed");
    browser.click(&browser.wait_for("#permission-mode"));
    browser.wait_for_text("#chip-menu", "accept-edits");
    browser.save_screenshot("chip-menu.png");
    browser.click(&browser.wait_for("#chip-menu button[data-value=\"plan\"]"));
    browser.wait_for_text("#permission-mode", "plan");
    repl.expect("ling [plan] › half typed");
    browser.click(&browser.wait_for("#permission-mode"));
    browser.click(&browser.wait_for("#chip-menu button[data-value=\"default\"]"));
    repl.expect("ling › half typed");

    // While a turn waits for an approval the agent cannot change: the page says why.
    repl.send(" and a write\r");
    repl.expect("Allow Write");
    browser.click(&browser.wait_for("#agent"));
    browser.click(&browser.wait_for("#chip-menu button[data-value=\"coder\"]"));
    browser.wait_for_text(
        "#composer-error",
        "the agent can change when this turn ends",
    );
    browser.set_viewport(390, 844);
    fits_a_phone(&browser);
    browser.save_screenshot("approval-390.png");
    browser.set_viewport(1280, 800);
    // The terminal answers first; an answer the page sends a moment later is told why it
    // was not taken, in the session's words.
    repl.expect("type a reason");
    repl.line("y");
    browser.wait_for_text(".approval.resolved", "allowed once in terminal");
    browser.script(
        "answerApproval(document.querySelector('.approval'), 'deny');",
        json!([]),
    );
    let lost = browser.wait_for_text(".approval-lost", "Your answer was not taken");
    assert!(lost.contains("answered first in the terminal"), "{lost}");
    repl.expect(FINAL_ANSWER);
    assert_eq!(ws.read(path), WRITTEN_TEXT);
    let users = support::texts(&server.last_chat_request().unwrap(), "user");
    assert_eq!(users, ["half typed and a write"]);
    browser.wait_for_text("#agent", "ling");
    drop(browser);
    repl.line("/quit");
}

/// A delegated run gets a tab of its own: the agent, its status, its task, its tool calls
/// and its answer; the conversation links to it, and a reload builds it again.
#[test]
fn a_delegated_run_gets_its_own_tab_with_its_tool_calls() {
    let _one_browser_at_a_time = serial();
    let Some(tools) = BrowserTools::find() else {
        return;
    };
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool(
            "delegate_to_agent",
            json!({"target_agent_id": "coder", "task": "List the files here."}),
        )),
        Reply::tool("Glob", json!({"globs": ["*.md"]})).into(),
        Reply::text("One file: **README.md**.").into(),
        Reply::text("coder found README.md.").into(),
    ]);
    ws.write("README.md", "# hello\n");
    let mut repl = Repl::start(&ws, &[]);
    let (_driver, browser) = shared_page(&mut repl, &tools);
    let input = browser.wait_for("#input");
    browser.send_keys(&input, "ask coder for the files");
    browser.click(&browser.wait_for("#send"));
    browser.wait_for_text(".msg.assistant", "coder found README.md.");
    repl.expect("coder found README.md.");

    let check_tab = |browser: &Browser| {
        browser.wait_for_text("#tabs", "coder");
        browser.click(&browser.wait_for("#tabs button[data-tab=\"coder\"]"));
        let card = browser.wait_for_text(
            ".agent-panel[data-agent=\"coder\"] .run-card",
            "List the files here.",
        );
        assert!(card.contains("Glob *.md"), "{card}");
        assert!(card.contains("1 file"), "{card}");
        assert!(card.contains("One file: README.md."), "{card}");
        assert!(card.contains("completed"), "{card}");
        let hidden = browser.script(
            "return getComputedStyle(document.querySelector('#transcript')).display;",
            json!([]),
        );
        assert_eq!(
            hidden,
            json!("none"),
            "the conversation shows under the tab"
        );
    };
    check_tab(&browser);
    browser.save_screenshot("agent-tab.png");
    browser.set_viewport(390, 844);
    browser.save_screenshot("agent-tab-390.png");
    let scrolls = browser.script(
        "const t = document.querySelector('#tabs'); return getComputedStyle(t).overflowX;",
        json!([]),
    );
    assert_eq!(scrolls, json!("auto"));
    browser.set_viewport(1280, 800);

    // The conversation keeps its line for the delegation, with a link to the tab.
    browser.click(&browser.wait_for("#tabs button[data-tab=\"main\"]"));
    browser.wait_for_text(".tool.subagent", "coder ← List the files here.");
    browser.click(&browser.wait_for(".tool.subagent a.tab-link"));
    browser.wait_for_text(
        ".agent-panel[data-agent=\"coder\"]:not([hidden])",
        "Glob *.md",
    );

    // A reload builds the tabs again from the snapshot.
    browser.script("location.reload();", json!([]));
    browser.wait_for("#status[data-state=\"connected\"]");
    check_tab(&browser);
    drop(browser);
    repl.line("/quit");
}

/// While the page is disconnected its message box takes nothing and says why; it opens
/// again when the page reconnects.
#[test]
fn the_message_box_is_disabled_while_disconnected() {
    let _one_browser_at_a_time = serial();
    let Some(tools) = BrowserTools::find() else {
        return;
    };
    let (ws, _server) = workspace(vec![]);
    let mut repl = Repl::start(&ws, &[]);
    let (_driver, browser) = shared_page(&mut repl, &tools);
    let state = || {
        browser.script(
            "const i = document.querySelector('#input');
             return { disabled: i.disabled, hint: i.placeholder };",
            json!([]),
        )
    };
    assert_eq!(state()["disabled"], json!(false));
    repl.line("/share stop");
    repl.expect("stopped sharing");
    let shown = wait_until("the message box to close", || {
        let s = state();
        (s["disabled"] == json!(true)).then_some(s)
    });
    assert!(
        shown["hint"].as_str().unwrap().contains("Disconnected"),
        "{shown}"
    );
    browser.save_screenshot("disconnected.png");
    drop(browser);
    repl.line("/quit");
}

/// A reopened session shows its old tool calls as live ones: the call, its result line,
/// and a `✎ changed:` line for the files it wrote (the history has no events for them).
#[test]
fn a_resumed_session_shows_its_tool_calls_like_live_ones() {
    let _one_browser_at_a_time = serial();
    let Some(tools) = BrowserTools::find() else {
        return;
    };
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool(
            "Write",
            json!({"path": WRITTEN_FILE, "content": WRITTEN_TEXT}),
        )),
        Reply::text(FINAL_ANSWER).into(),
    ]);
    let out = support::run_with_timeout(
        ws.cmd()
            .args(["-p", WRITE_REQUEST, "--permission-mode", "accept-edits"]),
        TIMEOUT * 3,
    );
    assert!(out.status.success(), "{out:?}");
    let mut repl = Repl::start(&ws, &["-c"]);
    let (_driver, browser) = shared_page(&mut repl, &tools);
    let block = browser.wait_for_text(".tool.ok", &format!("Write {WRITTEN_FILE}"));
    let result = browser.wait_for_text(".tool.ok .result-line", "created");
    assert!(result.contains(WRITTEN_FILE), "{block}");
    browser.wait_for_text(".line.changes", &format!("changed: {WRITTEN_FILE}"));
    browser.wait_for_text(".msg.assistant", FINAL_ANSWER);
    browser.save_screenshot("resumed.png");
    drop(browser);
    repl.line("/quit");
}

/// A running delegated run can be cancelled from its agent's tab; the parent goes on.
#[test]
fn a_delegated_run_is_cancelled_from_its_tab() {
    let _one_browser_at_a_time = serial();
    let Some(tools) = BrowserTools::find() else {
        return;
    };
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool(
            "delegate_to_agent",
            json!({"target_agent_id": "coder", "task": "Write a very long essay."}),
        )),
        Reply::text("word ".repeat(400))
            .delta_bytes(5)
            .chunk_delay(Duration::from_millis(100))
            .into(),
        Reply::text("coder was stopped.").into(),
    ]);
    let mut repl = Repl::start(&ws, &[]);
    let (_driver, browser) = shared_page(&mut repl, &tools);
    let input = browser.wait_for("#input");
    browser.send_keys(&input, "ask coder for an essay");
    browser.click(&browser.wait_for("#send"));
    browser.click(&browser.wait_for("#tabs button[data-tab=\"coder\"]"));
    let cancel =
        browser.wait_for(".agent-panel[data-agent=\"coder\"] .run-card.running button.cancel-run");
    // What it is doing, and its answer as it streams.
    let card = browser.wait_for_text(".run-card.running .run-stream", "word word");
    assert!(!card.contains("word ".repeat(400).trim()), "{card}");
    browser.wait_for_text(".run-card.running .run-status", "coder is answering");
    browser.save_screenshot("agent-tab-running.png");
    browser.click(&cancel);
    browser.wait_for_text(
        ".agent-panel[data-agent=\"coder\"] .run-card.cancelled",
        "cancelled",
    );
    repl.expect("coder was stopped.");
    browser.click(&browser.wait_for("#tabs button[data-tab=\"main\"]"));
    browser.wait_for_text(".msg.assistant", "coder was stopped.");
    drop(browser);
    repl.line("/quit");
}

/// A background command the model started shows in the page's panel with its last lines,
/// and the page's Stop button stops it: the terminal's `/tasks` says so.
#[test]
fn a_background_command_shows_on_the_page_and_is_stopped_there() {
    let _one_browser_at_a_time = serial();
    let Some(tools) = BrowserTools::find() else {
        return;
    };
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool(
            "Bash",
            json!({"command": "echo ready; sleep 60", "run_in_background": true}),
        )),
        Reply::text("The sleeper runs.").into(),
    ]);
    let mut repl = Repl::start_with_prompt(
        &ws,
        &["--permission-mode", "bypass"],
        &[],
        "ling [bypass] › ",
    );
    repl.line("start a sleeper");
    repl.expect("The sleeper runs.");
    let (_driver, browser) = shared_page(&mut repl, &tools);
    browser.wait_for_text("#tasks-summary", "1 running of 1");
    browser.wait_for_text("#tasks .task.running", "echo ready; sleep 60");
    browser.wait_for_text("#tasks .task.running .task-tail", "ready");
    browser.save_screenshot("background-running.png");
    browser.click(&browser.wait_for("#tasks .task.running button.task-stop"));
    browser.wait_for_text("#tasks .task.stopped .task-state", "stopped");
    browser.wait_for_text("#tasks-summary", "0 running of 1");
    repl.line("/tasks");
    repl.expect("bash_1  stopped after");
    drop(browser);
    repl.line("/quit");
}

/// The Agents panel writes the files the terminal reads: an agent created on the page is
/// announced in the shell and listed by `/agent`, an edit changes what its next run sends
/// the model, the server's validation shows in the form, and a delete removes it.
#[test]
fn agents_are_created_edited_and_deleted_from_the_page() {
    let _one_browser_at_a_time = serial();
    let Some(tools) = BrowserTools::find() else {
        return;
    };
    let (ws, server) = workspace(vec![Step::from(Reply::text(FINAL_ANSWER))]);
    let mut repl = Repl::start(&ws, &[]);
    let (_driver, browser) = shared_page(&mut repl, &tools);
    browser.click(&browser.wait_for("#agents-toggle"));
    browser.wait_for(".agent-card[data-name=\"ling\"]");
    browser.click(&browser.wait_for("#agents-new"));

    // A bad name: the server's sentence, in the form; nothing written.
    let name = browser.wait_for("#agent-name");
    browser.send_keys(&name, "Bad Name");
    browser.click(&browser.wait_for("#agent-preview-button"));
    browser.wait_for_text("#agent-error", "cannot name an agent");
    browser.script(
        "document.querySelector('#agent-name').value = '';",
        json!([]),
    );
    browser.send_keys(&name, "reviewer");
    browser.send_keys(&browser.wait_for("#agent-description"), "Reviews diffs");
    browser.send_keys(
        &browser.wait_for("#agent-prompt"),
        "You review diffs, version one.",
    );
    browser.click(&browser.wait_for("#agent-preview-button"));
    let preview = browser.wait_for_text("#agent-preview", "name: reviewer");
    assert!(
        preview.contains("You review diffs, version one."),
        "{preview}"
    );
    browser.save_screenshot("agents-form.png");
    let file = ws.home().join("agents/reviewer.md");
    assert!(!file.exists(), "a preview writes nothing");
    browser.click(&browser.wait_for("#agent-save"));
    browser.wait_for(".agent-card[data-name=\"reviewer\"]");
    repl.expect("agent reviewer added");
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("version one")
    );
    repl.line("/agent");
    repl.expect("reviewer  — Reviews diffs (personal)");
    browser.save_screenshot("agents-panel.png");

    // Edit the prompt; the next run of the agent sends the new one.
    browser.click(&browser.wait_for(".agent-card[data-name=\"reviewer\"] .agent-edit"));
    browser.script(
        "document.querySelector('#agent-prompt').value = 'You review diffs, version two.';",
        json!([]),
    );
    browser.click(&browser.wait_for("#agent-save"));
    browser.wait_for("#agent-saved");
    repl.expect("agent reviewer changed");
    repl.line("@reviewer look at the diff");
    repl.expect(FINAL_ANSWER);
    let system = last_message(&server, "system");
    assert!(
        system.contains("You review diffs, version two."),
        "{system}"
    );
    assert!(!system.contains("version one"), "{system}");

    // Delete, confirmed on the card.
    browser.click(&browser.wait_for(".agent-card[data-name=\"reviewer\"] .agent-delete"));
    browser.click(&browser.wait_for(".agent-card[data-name=\"reviewer\"] .agent-delete-confirm"));
    wait_until("the card to go", || {
        let cards = browser.script(
            "return document.querySelectorAll('.agent-card[data-name=\"reviewer\"]').length;",
            json!([]),
        );
        (cards == json!(0)).then_some(())
    });
    repl.expect("agent reviewer removed");
    assert!(!file.exists());
    drop(browser);
    repl.line("/quit");
}

/* ---------- the page's fold on recorded streams ---------- */

/// The recorded streams of `tests/fixtures/events/` (kept fresh by `tests/event_schema.rs`),
/// with what a person must then read in the transcript.
const RECORDED_STREAMS: &[(&str, &[&str])] = &[
    (
        "tools",
        &[
            "Read a.txt",
            "Edit a.txt",
            "+new",
            "Bash: touch made-by-bash.txt",
            "nobody can approve",
            "cut off at the model's output limit",
            "Edited a.txt; the command was not allowed.",
            "changed: a.txt",
            "✓ completed",
        ],
    ),
    (
        "approvals",
        &[
            "Allow Write notes.txt?",
            "+approved on the page",
            "allowed once in web",
            "denied in web: not on this page",
            "Wrote notes.txt; the command was denied.",
            "changed: notes.txt",
        ],
    ),
    (
        "delegation",
        &[
            "scenario delegation",
            "coder ← Say what a.txt holds.",
            "It holds one line.",
            "coder completed",
            "coder says: it holds one line.",
        ],
    ),
    (
        "image",
        &["scenario image", "image/png", "A transparent pixel."],
    ),
    (
        "error",
        &["✗ model `scripted`", "this model does not exist", "✗ error"],
    ),
    // The list itself is a panel beside the transcript; the fold must take the event.
    ("todos", &["scenario todos", "Planned three steps."]),
    (
        "retry",
        &[
            "retrying in 1.0 s (attempt 2 of 4)",
            "Answered on the second try.",
        ],
    ),
];

fn recorded_stream(name: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/events")
        .join(format!("{name}.jsonl"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The page's own fold (`apply`, the handler the live stream calls) on real recorded
/// streams: no exception, and the transcript says what happened. And every event type the
/// schema names is either handled or deliberately not shown, so a new event fails here
/// rather than silently in a browser.
#[test]
fn the_page_folds_recorded_streams_and_knows_every_event_type() {
    let _one_browser_at_a_time = serial();
    let Some(tools) = BrowserTools::find() else {
        return;
    };
    let (ws, _server) = workspace(vec![]);
    let mut repl = Repl::start(&ws, &[]);
    let (_driver, browser) = shared_page(&mut repl, &tools);

    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("doc/events.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let types: Vec<String> = schema["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|branch| {
            branch["properties"]["type"]["const"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(types.len() > 20, "{types:?}");
    let known = browser.script(
        "return {handled: Object.keys(HANDLERS), unshown: UNSHOWN_EVENTS};",
        json!([]),
    );
    let listed = |key: &str| -> Vec<String> {
        known[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect()
    };
    let (handled, unshown) = (listed("handled"), listed("unshown"));
    let unknown: Vec<&String> = types
        .iter()
        .filter(|t| !handled.contains(t) && !unshown.contains(t))
        .collect();
    assert!(
        unknown.is_empty(),
        "app.js neither handles nor lists in UNSHOWN_EVENTS: {unknown:?}"
    );
    let stale: Vec<&String> = handled
        .iter()
        .chain(&unshown)
        .filter(|t| !types.contains(t))
        .collect();
    assert!(
        stale.is_empty(),
        "app.js names events that do not exist: {stale:?}"
    );

    // Each stream on a cleared transcript; an exception fails the WebDriver call.
    let fold = "resetView(); for (const ev of arguments[0]) apply(ev); flushStreams(); \
                return $('#transcript').innerText;";
    for (name, expected) in RECORDED_STREAMS {
        let text = browser.script(fold, json!([recorded_stream(name)]));
        let text = text.as_str().unwrap_or_default();
        for needle in *expected {
            assert!(
                text.contains(needle),
                "{name}: the transcript lacks {needle:?}:\n{text}"
            );
        }
        browser.save_screenshot(&format!("recorded-{name}.png"));
    }
    drop(browser);
    repl.line("/quit");
}

/// When every place for an event stream is taken, the page says the share is full (the
/// server's sentence), not that it ended.
#[test]
fn a_full_share_says_so_on_the_page() {
    /// The server's cap on event streams (`src/web/server.rs`).
    const ALL: usize = 128;
    let _one_browser_at_a_time = serial();
    let Some(tools) = BrowserTools::find() else {
        return;
    };
    let (ws, _server) = workspace(vec![]);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("/share");
    let link = repl.expect_share_link();
    let driver = ChromeDriver::start(&tools);
    let browser = Browser::open(&driver, &tools);
    browser.goto(&link.url);
    browser.wait_for("#status[data-state=\"connected\"]");
    // The page's own credential takes every other place.
    let credential = browser.script(
        "return sessionStorage.getItem('linggen-credential');",
        json!([]),
    );
    let bearer = format!("Bearer {}", credential.as_str().unwrap());
    let _streams: Vec<support::web_client::EventStream> = (1..ALL)
        .map(|n| {
            let stream = support::web_client::EventStream::connect(
                link.addr,
                "/api/events",
                &[("Authorization", &bearer)],
            );
            assert_eq!(stream.status, 200, "stream {n}");
            stream
        })
        .collect();
    // The page's stream drops and it connects again, as after a network blip.
    browser.script("connect(S.gen);", json!([]));
    let banner = browser.wait_for_text("#banner", "this share is full");
    assert!(!banner.contains("ended"), "{banner}");
    browser.wait_for("#status[data-state=\"offline\"]");
    assert_eq!(browser.texts("#status"), ["full"]);
    browser.save_screenshot("share-full.png");
    drop(browser);
    repl.line("/quit");
}
