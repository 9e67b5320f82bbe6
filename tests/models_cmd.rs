//! `linggen models`: every configured model with where it runs, its context window and
//! whether it answers now, against a scripted server and a dead port.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::{Protocol, ScriptedServer, Workspace, run};

/// A scripted server that answers, the URL of one that does not, and a workspace.
fn setup() -> (ScriptedServer, String, Workspace) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, Vec::<support::Step>::new());
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}/v1", dead.local_addr().unwrap());
    drop(dead);
    (server, dead_url, Workspace::new())
}

#[test]
fn models_lists_where_each_runs_and_whether_it_answers() {
    let (server, dead_url, ws) = setup();
    let config = format!(
        "[[models]]\nid = \"here\"\nprovider = \"openai\"\nurl = \"{}\"\nmodel = \"scripted\"\n\n\
         [[models]]\nid = \"rented\"\nprovider = \"openai\"\nurl = \"{dead_url}\"\nmodel = \"big\"\n\
         context_window = 32768\nlocal = false\n",
        server.url()
    );
    std::fs::write(ws.home().join("linggen-agent.toml"), config).unwrap();
    let r = run(&ws, &["models"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let line = |id: &str| {
        r.stdout
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("no {id} in {}", r.stdout))
            .to_string()
    };
    let here = line("here");
    assert!(here.contains("local") && here.contains("answers"), "{here}");
    // The window comes from the server's /props.
    assert!(here.contains("8192"), "{here}");
    let rented = line("rented");
    assert!(
        rented.contains("cloud"),
        "local = false wins over the address: {rented}"
    );
    assert!(
        rented.contains("32768") && rented.contains("no answer"),
        "{rented}"
    );
    assert!(
        r.stdout.contains("every call goes to `here`"),
        "{}",
        r.stdout
    );
    assert!(r.stderr.is_empty(), "{}", r.stderr);
}

/// With `[routing]`, the listing says which model a short and a long prompt go to, and
/// where they go instead when that model does not answer.
#[test]
fn models_shows_what_the_policy_picks_for_short_and_long_prompts() {
    let (server, dead_url, ws) = setup();
    let config = format!(
        "[[models]]\nid = \"here\"\nprovider = \"openai\"\nurl = \"{}\"\nmodel = \"scripted\"\n\n\
         [[models]]\nid = \"rented\"\nprovider = \"openai\"\nurl = \"{dead_url}\"\nmodel = \"big\"\n\
         local = false\n\n[routing]\ndefault_policy = \"split\"\n\n[[routing.policies]]\nname = \"split\"\n\
         rules = [{{ model = \"here\", max_complexity = \"low\" }}, {{ model = \"rented\", priority = 1 }}]\n",
        server.url()
    );
    std::fs::write(ws.home().join("linggen-agent.toml"), config).unwrap();
    let r = run(&ws, &["models"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains(
            "a short prompt (500 tokens, low) goes to `here` (split: priority 0 admits low)"
        ),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(
            "a long prompt (20000 tokens, high) goes to `rented` (split: priority 1 admits high); it does not answer now, and nothing after it does"
        ),
        "{}",
        r.stdout
    );
}

/// With nothing configured and nothing found, `linggen models` says what to do on stderr
/// and exits 1, so a script can tell "no model" from a listing.
#[test]
fn models_exits_1_when_nothing_is_found() {
    let (_server, dead_url, ws) = setup();
    let dead_host = dead_url.trim_end_matches("/v1").to_string();
    let out = support::run_with_timeout(
        ws.cmd().arg("models").env("OLLAMA_HOST", dead_host),
        std::time::Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no model found: start Ollama"), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
