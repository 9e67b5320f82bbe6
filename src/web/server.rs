//! Listening, connections and shutdown. The server binds loopback unless `--lan` was given,
//! and stopping it ends every open connection at once (event streams included), so the old
//! tokens stop working the moment `/share stop` returns.
//!
//! Connections are bounded, so idle sockets opened by another local process cannot use up
//! linggen's file descriptors (which its own tools need): the descriptor limit is raised to
//! the hard limit, at most [`MAX_CONNECTIONS`] are open at once (a new one evicts the oldest
//! idle one, or is closed at once when all are busy), a connection that sends no complete
//! request within [`HEADER_TIMEOUT`] is closed, and so is a keep-alive one idle for
//! [`KEEP_ALIVE_IDLE`]. Event streams count as busy and have their own cap
//! ([`MAX_EVENT_STREAMS`]), of which read-only credentials get all but
//! [`RESERVED_FOR_FULL_ACCESS`].

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Frame, SizeHint};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::Body;
use super::auth::{Access, Credentials};
use super::hub::Hub;
use crate::session::lock;

/// Open connections at most; well under the usual descriptor limit even where it cannot be
/// raised past 1,024, so linggen's own files and commands always have descriptors left.
pub(super) const MAX_CONNECTIONS: usize = 512;

/// Event streams open at once; each holds a connection, so they can never take them all.
pub(super) const MAX_EVENT_STREAMS: usize = 128;

/// Event streams only a full-access credential can open: a read-only link passed around
/// widely must not lock the person who shares out of their own session.
pub(super) const RESERVED_FOR_FULL_ACCESS: usize = 16;

/// Event streams read-only credentials may hold at once.
pub(super) const MAX_VIEWER_STREAMS: usize = MAX_EVENT_STREAMS - RESERVED_FOR_FULL_ACCESS;

/// The places for event streams: [`MAX_EVENT_STREAMS`] in all, at most
/// [`MAX_VIEWER_STREAMS`] of them read-only.
pub(super) struct StreamSlots {
    all: Arc<Semaphore>,
    viewers: Arc<Semaphore>,
}

/// One stream's place, given back when the stream ends.
pub(super) struct StreamPermit {
    _all: OwnedSemaphorePermit,
    _viewer: Option<OwnedSemaphorePermit>,
}

impl Default for StreamSlots {
    fn default() -> StreamSlots {
        StreamSlots {
            all: Arc::new(Semaphore::new(MAX_EVENT_STREAMS)),
            viewers: Arc::new(Semaphore::new(MAX_VIEWER_STREAMS)),
        }
    }
}

impl StreamSlots {
    /// A place for one more stream with `access`; `None` when the share is full for it.
    pub fn take(&self, access: Access) -> Option<StreamPermit> {
        let viewer = match access {
            Access::Full => None,
            Access::ReadOnly => Some(self.viewers.clone().try_acquire_owned().ok()?),
        };
        let all = self.all.clone().try_acquire_owned().ok()?;
        Some(StreamPermit {
            _all: all,
            _viewer: viewer,
        })
    }

    /// Whether a stream with `access` would get a place now (asked before a stream ticket
    /// is issued, so a page can read why it cannot watch: an event stream's error answer
    /// is hidden from the page's script).
    pub fn has_room(&self, access: Access) -> bool {
        self.all.available_permits() > 0
            && (access == Access::Full || self.viewers.available_permits() > 0)
    }
}

/// A connection must send a whole request head this soon after it opened.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// A keep-alive connection with no request for this long is closed.
const KEEP_ALIVE_IDLE: Duration = Duration::from_secs(60);

/// How often idle connections are looked for.
const SWEEP: Duration = Duration::from_secs(1);

/// Where to listen.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServeOptions {
    /// 0: a random free port.
    pub port: u16,
    /// Listen on every interface, not just loopback.
    pub lan: bool,
}

/// What every request handler sees.
pub(super) struct Ctx {
    pub hub: Arc<Hub>,
    pub credentials: Credentials,
    pub bound: SocketAddr,
    pub lan: bool,
    pub shutdown: CancellationToken,
    /// Places for event streams ([`MAX_EVENT_STREAMS`]).
    pub streams: StreamSlots,
    connections: Connections,
}

/// A running server.
pub struct Server {
    ctx: Arc<Ctx>,
    task: JoinHandle<()>,
    /// How a terminal of the same workspace finds this server (`linggen --attach`, or
    /// `--continue` of the session it serves); removed when the server goes.
    _registration: Option<crate::app::attach::registry::Registration>,
}

/// Why the server did not start; nothing is listening then.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(
        "cannot listen on {ip}:{port}: {source}; pick another port (--port) or leave it out for \
         a random one"
    )]
    Listen {
        ip: IpAddr,
        port: u16,
        source: std::io::Error,
    },
    #[error("cannot read the server's address: {0}")]
    Address(std::io::Error),
    /// The operating system gave no random bytes for the tokens.
    #[error("{0}")]
    Tokens(String),
}

impl Server {
    /// Binds and starts serving `hub` with fresh tokens.
    pub async fn start(hub: Arc<Hub>, options: ServeOptions) -> Result<Server, StartError> {
        raise_descriptor_limit();
        let ip = if options.lan {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        } else {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        };
        let listener =
            listen(SocketAddr::new(ip, options.port)).map_err(|source| StartError::Listen {
                ip,
                port: options.port,
                source,
            })?;
        let bound = listener.local_addr().map_err(StartError::Address)?;
        let ctx = Arc::new(Ctx {
            hub,
            credentials: Credentials::generate().map_err(StartError::Tokens)?,
            bound,
            lan: options.lan,
            shutdown: CancellationToken::new(),
            streams: StreamSlots::default(),
            connections: Connections::default(),
        });
        tokio::spawn(sweep(ctx.clone()));
        let task = tokio::spawn(accept(listener, ctx.clone()));
        let registration = register(&ctx);
        Ok(Server {
            ctx,
            task,
            _registration: registration,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.ctx.bound
    }

    pub fn is_lan(&self) -> bool {
        self.ctx.lan
    }

    /// A fresh full-access link: its ticket works once.
    pub(in crate::web) fn link(&self) -> Result<String, String> {
        let ticket = self.ctx.credentials.issue_link(Access::Full)?;
        Ok(self.url_with(&ticket))
    }

    /// A fresh watch-only link: its ticket works once.
    pub(in crate::web) fn viewer_link(&self) -> Result<String, String> {
        let ticket = self.ctx.credentials.issue_link(Access::ReadOnly)?;
        Ok(self.url_with(&ticket))
    }

    /// The long-lived full-access token, for scripts (`Authorization: Bearer`).
    pub fn token(&self) -> &str {
        self.ctx.credentials.tokens.full()
    }

    /// The long-lived read-only token.
    pub fn viewer_token(&self) -> &str {
        self.ctx.credentials.tokens.read_only()
    }

    pub fn hub(&self) -> &Arc<Hub> {
        &self.ctx.hub
    }

    /// The server's base address as a person's browser reaches it.
    fn base_url(&self) -> String {
        let host = if self.ctx.lan {
            lan_address().map_or_else(|| "THIS-MACHINE".to_string(), |ip| ip.to_string())
        } else {
            self.ctx.bound.ip().to_string()
        };
        format!("http://{host}:{}", self.ctx.bound.port())
    }

    fn url_with(&self, ticket: &str) -> String {
        format!("{}/?ticket={ticket}", self.base_url())
    }

    /// Stops listening and closes every connection.
    pub async fn stop(self) {
        self.ctx.shutdown.cancel();
        let _ = self.task.await;
    }
}

/// Records the server for terminals of its workspace; a record that cannot be written only
/// costs attaching (one warning).
fn register(ctx: &Ctx) -> Option<crate::app::attach::registry::Registration> {
    let (hub, port, token) = (&ctx.hub, ctx.bound.port(), ctx.credentials.tokens.full());
    let what = match hub.can_open() {
        true => "linggen serve",
        false => "a terminal's /share",
    };
    crate::app::attach::registry::register(&hub.home, &hub.root, port, token, what)
        .map_err(|e| {
            eprintln!("linggen: warning: {e}; `linggen --attach` will not find this server")
        })
        .ok()
}

/// One open connection, as the limits see it.
struct Connection {
    id: u64,
    opened: Instant,
    /// Requests being answered, their response bodies included (an event stream is one).
    in_flight: AtomicUsize,
    /// Whether a whole request head ever arrived.
    served: AtomicBool,
    last_active: Mutex<Instant>,
    close: CancellationToken,
}

impl Connection {
    fn idle(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) == 0
    }
}

/// The open connections, oldest first.
#[derive(Default)]
struct Connections {
    open: Mutex<Vec<Arc<Connection>>>,
    next_id: AtomicU64,
}

impl Connections {
    /// Registers a new connection. At the cap, the oldest idle one is closed to make room
    /// (one that never sent a request first); when every one is busy, the new one is refused.
    fn admit(&self) -> Option<Arc<Connection>> {
        let mut open = lock(&self.open);
        if open.len() >= MAX_CONNECTIONS {
            let victim = open
                .iter()
                .position(|c| c.idle() && !c.served.load(Ordering::SeqCst))
                .or_else(|| open.iter().position(|c| c.idle()))?;
            open.remove(victim).close.cancel();
        }
        let now = Instant::now();
        let connection = Arc::new(Connection {
            id: self.next_id.fetch_add(1, Ordering::SeqCst),
            opened: now,
            in_flight: AtomicUsize::new(0),
            served: AtomicBool::new(false),
            last_active: Mutex::new(now),
            close: CancellationToken::new(),
        });
        open.push(connection.clone());
        Some(connection)
    }

    fn remove(&self, id: u64) {
        lock(&self.open).retain(|c| c.id != id);
    }

    /// Closes the connections that stayed silent too long.
    fn close_idle(&self, now: Instant) {
        lock(&self.open).retain(|c| {
            let stale = c.idle()
                && if c.served.load(Ordering::SeqCst) {
                    now.duration_since(*lock(&c.last_active)) >= KEEP_ALIVE_IDLE
                } else {
                    now.duration_since(c.opened) >= HEADER_TIMEOUT
                };
            if stale {
                c.close.cancel();
            }
            !stale
        });
    }
}

/// Marks a connection busy while a request and its response body are alive.
struct Busy(Arc<Connection>);

impl Busy {
    fn new(connection: Arc<Connection>) -> Busy {
        connection.served.store(true, Ordering::SeqCst);
        connection.in_flight.fetch_add(1, Ordering::SeqCst);
        Busy(connection)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        *lock(&self.0.last_active) = Instant::now();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A response body that keeps its connection marked busy until it is sent or dropped.
struct BusyBody {
    inner: Body,
    _busy: Busy,
}

impl hyper::body::Body for BusyBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

async fn sweep(ctx: Arc<Ctx>) {
    let mut tick = tokio::time::interval(SWEEP);
    loop {
        tokio::select! {
            _ = ctx.shutdown.cancelled() => return,
            _ = tick.tick() => ctx.connections.close_idle(Instant::now()),
        }
    }
}

async fn accept(listener: TcpListener, ctx: Arc<Ctx>) {
    loop {
        let stream = tokio::select! {
            _ = ctx.shutdown.cancelled() => return stop_listening(&listener),
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of file descriptors and the like: wait instead of spinning.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Every connection busy: this one is closed at once (dropped).
        let Some(connection) = ctx.connections.admit() else {
            continue;
        };
        // Small SSE frames must leave at once, not wait for Nagle.
        let _ = stream.set_nodelay(true);
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let (service_ctx, busy_on) = (ctx.clone(), connection.clone());
            let service = service_fn(move |req| {
                let ctx = service_ctx.clone();
                let busy = Busy::new(busy_on.clone());
                async move {
                    let response = super::api::handle(ctx, req).await;
                    Ok::<_, Infallible>(
                        response.map(|inner| BusyBody { inner, _busy: busy }.boxed()),
                    )
                }
            });
            let serving = http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = serving => {}
                _ = ctx.shutdown.cancelled() => {}
                _ = connection.close.cancelled() => {}
            }
            ctx.connections.remove(connection.id);
        });
    }
}

/// Stops the socket listening before it is closed. Closing only drops this process's
/// descriptor: a child forked at that moment (git for a checkpoint, between its fork and
/// its exec) still holds a copy, and the kernel would go on accepting connections for a
/// server that said it stopped. `shutdown` acts on the socket itself, every copy included.
fn stop_listening(listener: &TcpListener) {
    use std::os::fd::AsRawFd as _;
    // SAFETY: shutdown on a descriptor this listener owns, open for the whole call.
    unsafe { libc::shutdown(listener.as_raw_fd(), libc::SHUT_RDWR) };
}

/// Connections the kernel queues before the server accepts them. A burst of connections
/// (a flood, or a page reloading many times) then waits instead of having its SYNs dropped.
const BACKLOG: u32 = 1024;

fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// Raises this process's open-file limit to its hard limit, so the server's connections and
/// the agent's own files and commands do not compete for the common default of 1,024.
fn raise_descriptor_limit() {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit and setrlimit only read and write the struct passed to them.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
                return;
            }
            // An unlimited hard limit is refused by Linux above `nr_open`; 1 Mi is plenty.
            let target = limit.rlim_max.min(1 << 20);
            if limit.rlim_cur < target {
                limit.rlim_cur = target;
                let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
        }
    }
}

/// This machine's address on its network, for the `--lan` URL: the source address the
/// routing table picks for an outside destination (connecting a UDP socket sends nothing).
fn lan_address() -> Option<IpAddr> {
    let socket = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok()?;
    socket.connect((Ipv4Addr::new(192, 0, 2, 1), 9)).ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_unspecified() && !ip.is_loopback()).then_some(ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_oldest_idle_connection_makes_room_and_busy_ones_never_do() {
        let connections = Connections::default();
        let all: Vec<_> = (0..MAX_CONNECTIONS)
            .map(|_| connections.admit().unwrap())
            .collect();
        // The oldest has served a request and is busy; the second served one and is idle
        // (keep-alive); the third never sent a request.
        let busy = Busy::new(all[0].clone());
        drop(Busy::new(all[1].clone()));
        let newcomer = connections.admit().unwrap();
        assert!(!all[0].close.is_cancelled() && !all[1].close.is_cancelled());
        assert!(all[2].close.is_cancelled(), "the silent one goes first");
        assert_eq!(lock(&connections.open).len(), MAX_CONNECTIONS);

        // Every one busy: a new connection is refused instead.
        let _busy: Vec<_> = lock(&connections.open)
            .iter()
            .filter(|c| c.id != all[0].id)
            .map(|c| Busy::new(c.clone()))
            .collect();
        assert!(connections.admit().is_none());
        drop(busy);
        assert!(
            connections.admit().is_some(),
            "an idle one makes room again"
        );
        assert!(all[0].close.is_cancelled());
        assert!(!newcomer.close.is_cancelled());
    }

    #[test]
    fn read_only_streams_leave_room_for_full_access() {
        let slots = StreamSlots::default();
        let viewers: Vec<_> = (0..MAX_VIEWER_STREAMS)
            .map(|_| slots.take(Access::ReadOnly).unwrap())
            .collect();
        assert!(!slots.has_room(Access::ReadOnly));
        assert!(slots.take(Access::ReadOnly).is_none());
        assert!(slots.has_room(Access::Full));
        let owners: Vec<_> = (0..RESERVED_FOR_FULL_ACCESS)
            .map(|_| slots.take(Access::Full).unwrap())
            .collect();
        assert!(!slots.has_room(Access::Full));
        assert!(slots.take(Access::Full).is_none());
        // A viewer that leaves makes room for one viewer (or one owner) again.
        drop(viewers.into_iter().next());
        assert!(slots.take(Access::ReadOnly).is_some());
        drop(owners);
        // Full access may take every place.
        let fresh = StreamSlots::default();
        let all: Vec<_> = (0..MAX_EVENT_STREAMS)
            .map(|_| fresh.take(Access::Full).unwrap())
            .collect();
        assert!(fresh.take(Access::ReadOnly).is_none());
        assert_eq!(all.len(), MAX_EVENT_STREAMS);
    }

    #[test]
    fn silent_and_long_idle_connections_are_closed() {
        let connections = Connections::default();
        let silent = connections.admit().unwrap();
        let kept_alive = connections.admit().unwrap();
        drop(Busy::new(kept_alive.clone()));
        let streaming = connections.admit().unwrap();
        let _stream = Busy::new(streaming.clone());
        connections.close_idle(Instant::now() + HEADER_TIMEOUT);
        assert!(silent.close.is_cancelled());
        assert!(!kept_alive.close.is_cancelled());
        connections.close_idle(Instant::now() + KEEP_ALIVE_IDLE);
        assert!(kept_alive.close.is_cancelled());
        assert!(
            !streaming.close.is_cancelled(),
            "an open stream is not idle"
        );
        assert_eq!(lock(&connections.open).len(), 1);
    }
}
