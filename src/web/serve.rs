//! `linggen serve`: the web UI without a terminal. It starts a session the way the shell
//! does (new, or `--continue` / `--resume`), so a dead model server is one line and exit;
//! then the page can open the workspace's other sessions or start new ones. A session no
//! page watches and that has nothing to do is closed after a while ([`IDLE_CLOSE`]); the
//! page can open it again.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::hub::{Hub, SessionOpener};
use super::mirror::Mirror;
use super::server::{ServeOptions, Server};
use crate::app::{self, Failure, LiveSession, Start, Workspace, exit};
use crate::session::{Event, lock};

/// `print_tokens` (`--print-tokens`): also print the long-lived tokens. Not by default: they
/// stay valid until the server stops, and what `serve` prints often ends up in a service
/// manager's log or a shared terminal's scrollback.
pub async fn run(start: Start, options: ServeOptions, print_tokens: bool) -> i32 {
    match try_run(start, options, print_tokens).await {
        Ok(code) => code,
        Err(f) => {
            eprintln!("linggen: error: {}", f.message);
            f.code
        }
    }
}

async fn try_run(start: Start, options: ServeOptions, print_tokens: bool) -> Result<i32, Failure> {
    let ws = Arc::new(app::load_workspace(&start)?);
    announce_workspace(&ws);
    let opener = Opener {
        start: start.clone(),
        ws: ws.clone(),
        sessions: Arc::new(Mutex::new(Vec::new())),
    };
    let sessions = opener.sessions.clone();
    let first = opener.start(&start).await?;
    start_scheduler(&ws, sessions.clone());
    let hub = Arc::new(Hub::new(&ws).with_opener(Box::new(opener)));
    hub.share(first);
    let closer = tokio::spawn(close_idle_sessions(
        hub.clone(),
        sessions.clone(),
        idle_close(),
    ));
    let server = Server::start(hub, options).await.map_err(|e| Failure {
        code: exit::FAILURE,
        message: e.to_string(),
    })?;
    print_links(&server, &ws, print_tokens)?;
    let mut asked = link_requests();
    let ended_by = serve_until_ended(&server, &mut asked).await;
    closer.abort();
    server.stop().await;
    stop_sessions(&sessions).await;
    // Ctrl+C is how a person stops the server: a success, as before.
    Ok(match ended_by {
        crate::app::signals::Ending::Interrupt => exit::SUCCESS,
        other => other.exit_code(),
    })
}

/// What the person should know of the workspace before it is served. The browser is not
/// asked about folder trust; `linggen trust` is the way.
fn announce_workspace(ws: &Workspace) {
    if let Some(note) = ws.trust.note() {
        eprintln!("linggen: note: {note}");
    }
    for problem in ws.watch_extensions() {
        eprintln!("linggen: warning: {problem}");
    }
}

/// Prints the links to the page (and with `print_tokens` the tokens), and how to use the
/// server. Each link works once (its ticket buys one browser tab its own credential); the
/// tokens are for scripts and stay valid until the server stops.
fn print_links(server: &Server, ws: &Workspace, print_tokens: bool) -> Result<(), Failure> {
    if server.is_lan() {
        eprintln!(
            "linggen: warning: listening on every interface: anyone on your network with the URL can drive the agent"
        );
    }
    let links = server
        .link()
        .and_then(|full| Ok((full, server.viewer_link()?)));
    let (link, viewer) = links.map_err(|message| Failure {
        code: exit::FAILURE,
        message,
    })?;
    println!("linggen serve: {link}");
    println!("read-only viewer: {viewer}");
    if print_tokens {
        println!("token for scripts: {}", server.token());
        println!("read-only token: {}", server.viewer_token());
    }
    eprintln!(
        "serving {} · Enter prints a new link · Ctrl+C stops{}",
        ws.root.display(),
        if print_tokens {
            ""
        } else {
            " · --print-tokens shows tokens for scripts"
        }
    );
    Ok(())
}

/// Serves, printing a fresh link for each one `asked`, until a signal ends the server; a
/// second signal then quits at once.
async fn serve_until_ended(
    server: &Server,
    asked: &mut tokio::sync::mpsc::Receiver<()>,
) -> crate::app::signals::Ending {
    let mut endings = crate::app::signals::Signals::all();
    let ended_by;
    loop {
        tokio::select! {
            // Ctrl+C, SIGTERM (a service manager) or SIGHUP: every open session is
            // cancelled and saved before the server exits.
            ending = endings.next() => {
                ended_by = ending;
                break;
            }
            Some(()) = asked.recv() => match server.link() {
                Ok(link) => println!("new link: {link}"),
                Err(e) => eprintln!("linggen: error: {e}"),
            },
        }
    }
    endings.second_quits(|| {});
    ended_by
}

/// Cancels every open session and waits for each to be saved and stopped.
async fn stop_sessions(sessions: &Mutex<Vec<LiveSession>>) {
    let open: Vec<LiveSession> = std::mem::take(&mut *lock(sessions));
    for live in open {
        let _ = live.handle.inputs.send(crate::session::Input::Cancel).await;
        live.stop().await;
    }
}

/// Runs this workspace's schedules; each run's outcome goes to the server's log and, as a
/// `Notification`, to every open session (its pages, a terminal attached to it).
fn start_scheduler(ws: &Workspace, sessions: Arc<Mutex<Vec<LiveSession>>>) {
    let root = ws.root.display().to_string();
    let told = Arc::clone(&sessions);
    crate::app::schedule::spawn_scheduler(ws.home.clone(), root, move |schedule, outcome| {
        let message = crate::app::schedule::outcome_line(schedule, outcome);
        eprintln!("linggen: {message}");
        notify(&told, "schedule", message, outcome.session_id.clone());
    });
    if let Some(settings) = ws.config.heartbeat.clone() {
        let (home, root) = (ws.home.clone(), ws.root.clone());
        crate::app::schedule::heartbeat::spawn(home, root, settings, move |outcome, line| {
            eprintln!("linggen: {line}");
            notify(&sessions, "heartbeat", line, outcome.session_id.clone());
        });
    }
}

/// Tells every open session's watchers of work that ran without them.
fn notify(
    sessions: &Mutex<Vec<LiveSession>>,
    source: &str,
    message: String,
    session_id: Option<String>,
) {
    for live in lock(sessions).iter() {
        live.handle.bus.publish(Event::Notification {
            source: source.to_string(),
            message: message.clone(),
            session_id: session_id.clone(),
        });
    }
}

/// Starts sessions for the browser and keeps them running until the server stops.
struct Opener {
    start: Start,
    ws: Arc<Workspace>,
    sessions: Arc<Mutex<Vec<LiveSession>>>,
}

impl Opener {
    async fn start(&self, start: &Start) -> Result<Arc<Mirror>, Failure> {
        let mut live = LiveSession::start(start, &self.ws, true).await?;
        let Some(mirror) = Mirror::of(&mut live) else {
            return Err(Failure {
                code: exit::FAILURE,
                message: "internal error: an interactive session without a mirror".into(),
            });
        };
        // Nobody reads the terminal's copy of the events here; the server log shows the
        // problems a person running it should see. A thread of its own: writing to stderr
        // (a pipe, say) may block, which no runtime thread may.
        let mut events = live.take_events();
        let id = live.session_id.clone();
        std::thread::spawn(move || {
            while let Some(envelope) = events.blocking_recv() {
                match &envelope.event {
                    Event::Error { message } => eprintln!("linggen: session {id}: {message}"),
                    Event::Warning { message } => {
                        eprintln!("linggen: session {id}: warning: {message}")
                    }
                    _ => {}
                }
            }
        });
        lock(&self.sessions).push(live);
        Ok(mirror)
    }
}

impl SessionOpener for Opener {
    fn open(
        &self,
        session_id: Option<String>,
    ) -> Pin<Box<dyn Future<Output = Result<Arc<Mirror>, String>> + Send + '_>> {
        Box::pin(async move {
            let mut start = self.start.clone();
            start.continue_session = false;
            start.resume = session_id;
            self.start(&start).await.map_err(|f| f.message)
        })
    }
}

/// One message per line typed on stdin: the person wants a fresh one-time link (for another
/// tab, or after closing the last one). Ends at end of input (no terminal: nothing to ask).
fn link_requests() -> tokio::sync::mpsc::Receiver<()> {
    // Bounded at one request, coalescing: stdin may be a pipe pouring lines, and one
    // pending request already means "print a fresh link"; a line that finds one waiting
    // is dropped.
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    // A dedicated thread: reading stdin blocks.
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let closed = matches!(
                tx.try_send(()),
                Err(tokio::sync::mpsc::error::TrySendError::Closed(()))
            );
            if line.is_err() || closed {
                return;
            }
        }
    });
    rx
}

/// How long a session stays open with no page watching it and nothing running or waiting.
const IDLE_CLOSE: Duration = Duration::from_secs(600);

/// [`IDLE_CLOSE`], or `$LINGGEN_SERVE_IDLE_SECS` (seconds, fractions allowed).
fn idle_close() -> Duration {
    std::env::var("LINGGEN_SERVE_IDLE_SECS")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|secs| secs.is_finite() && *secs > 0.0)
        .map_or(IDLE_CLOSE, Duration::from_secs_f64)
}

/// Closes, with their mirrors, the sessions that stayed idle and unwatched for `after`, so a
/// long-running server does not keep every session it ever opened.
async fn close_idle_sessions(
    hub: Arc<Hub>,
    sessions: Arc<Mutex<Vec<LiveSession>>>,
    after: Duration,
) {
    let every = (after / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
    let mut tick = tokio::time::interval(every);
    // Per session: the last event seen and when it last was busy, watched or changed.
    let mut active: HashMap<String, (u64, Instant)> = HashMap::new();
    loop {
        tick.tick().await;
        let now = Instant::now();
        let open = hub.open_mirrors();
        active.retain(|id, _| open.iter().any(|m| &m.session_id == id));
        for mirror in open {
            let seq = mirror.seq();
            let id = mirror.session_id.clone();
            let last = active.entry(id.clone()).or_insert((seq, now));
            if mirror.viewers() > 0 || !mirror.is_idle() || last.0 != seq {
                *last = (seq, now);
                continue;
            }
            if now.duration_since(last.1) < after {
                continue;
            }
            active.remove(&id);
            hub.close(&id);
            let live = {
                let mut running = lock(&sessions);
                let found = running.iter().position(|l| l.session_id == id);
                found.map(|i| running.remove(i))
            };
            if let Some(live) = live {
                live.stop().await;
            }
            eprintln!("linggen: closed session {id}: idle, and no page watched it");
        }
    }
}
