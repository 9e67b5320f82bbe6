//! Listening, connections and shutdown. The server binds loopback unless `--lan` was given,
//! and stopping it ends every open connection at once (event streams included), so the old
//! tokens stop working the moment `/share stop` returns.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::auth::Tokens;
use super::hub::Hub;

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
    pub tokens: Tokens,
    pub bound: SocketAddr,
    pub lan: bool,
    pub shutdown: CancellationToken,
}

/// A running server.
pub struct Server {
    ctx: Arc<Ctx>,
    task: JoinHandle<()>,
}

impl Server {
    /// Binds and starts serving `hub` with fresh tokens.
    pub async fn start(hub: Arc<Hub>, options: ServeOptions) -> Result<Server, String> {
        let ip = if options.lan {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        } else {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        };
        let listener = TcpListener::bind((ip, options.port)).await.map_err(|e| {
            format!(
                "cannot listen on {ip}:{}: {e}; pick another port (--port) or leave it out for a random one",
                options.port
            )
        })?;
        let bound = listener
            .local_addr()
            .map_err(|e| format!("cannot read the server's address: {e}"))?;
        let ctx = Arc::new(Ctx {
            hub,
            tokens: Tokens::generate()?,
            bound,
            lan: options.lan,
            shutdown: CancellationToken::new(),
        });
        let task = tokio::spawn(accept(listener, ctx.clone()));
        Ok(Server { ctx, task })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.ctx.bound
    }

    pub fn is_lan(&self) -> bool {
        self.ctx.lan
    }

    /// The full-access URL, token included.
    pub fn url(&self) -> String {
        self.url_with(self.ctx.tokens.full())
    }

    /// The watch-only URL.
    pub fn viewer_url(&self) -> String {
        self.url_with(self.ctx.tokens.read_only())
    }

    pub fn hub(&self) -> &Arc<Hub> {
        &self.ctx.hub
    }

    fn url_with(&self, token: &str) -> String {
        let host = if self.ctx.lan {
            lan_address().map_or_else(|| "THIS-MACHINE".to_string(), |ip| ip.to_string())
        } else {
            self.ctx.bound.ip().to_string()
        };
        format!("http://{host}:{}/?token={token}", self.ctx.bound.port())
    }

    /// Stops listening and closes every connection.
    pub async fn stop(self) {
        self.ctx.shutdown.cancel();
        let _ = self.task.await;
    }
}

async fn accept(listener: TcpListener, ctx: Arc<Ctx>) {
    loop {
        let stream = tokio::select! {
            _ = ctx.shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of file descriptors and the like: wait instead of spinning.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Small SSE frames must leave at once, not wait for Nagle.
        let _ = stream.set_nodelay(true);
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let service_ctx = ctx.clone();
            let service = service_fn(move |req| {
                let ctx = service_ctx.clone();
                async move { Ok::<_, Infallible>(super::api::handle(ctx, req).await) }
            });
            let connection = http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(Duration::from_secs(30))
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = connection => {}
                _ = ctx.shutdown.cancelled() => {}
            }
        });
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
