//! `/share` through the app layer: the terminal and the editor share a session without
//! importing the web frontend. The binary registers the web frontend's [`Provider`] at
//! start (`cli::main`); a frontend asks [`provider`] for a session's feed when it opens
//! the session and for a server when the person types `/share`.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use super::{LiveSession, Workspace};
use crate::session::Envelope;

/// A session's feed for web pages, taken when the session starts so that a later `/share`
/// still shows everything. Opaque here: only the provider that made it reads it.
pub type Feed = Arc<dyn Any + Send + Sync>;

/// Why a share could not start or make a link, in words for the person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ShareError(pub String);

/// A future a share server's methods return.
pub type Pending<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A running share server.
pub trait Server: Send + Sync {
    /// A one-time link to the page with full access.
    fn link(&self) -> Result<String, ShareError>;
    /// A one-time read-only link.
    fn viewer_link(&self) -> Result<String, ShareError>;
    /// The long-lived tokens for scripts: full access, read-only.
    fn tokens(&self) -> (String, String);
    /// Whether it listens on every interface.
    fn is_lan(&self) -> bool;
    /// Shows `feed`'s session from now on (the shell moved to another session).
    fn follow(&self, feed: Feed);
    /// Stops it: the links and tokens no longer work.
    fn stop(self: Box<Self>) -> Pending<'static, ()>;
}

/// What makes feeds and servers: the web frontend's, registered by the binary.
pub trait Provider: Send + Sync {
    /// Takes `live`'s feed for pages (once; `None` when it has none).
    fn feed(&self, live: &mut LiveSession) -> Option<Feed>;
    /// Every event `feed` has seen, as a page joining now would be sent them (`/export`).
    fn transcript(&self, feed: &Feed) -> Vec<Arc<Envelope>>;
    /// Starts a server showing `feed`'s session: on 127.0.0.1, or every interface (`lan`).
    fn start<'a>(
        &'a self,
        ws: &'a Workspace,
        feed: Feed,
        lan: bool,
    ) -> Pending<'a, Result<Box<dyn Server>, ShareError>>;
}

static PROVIDER: OnceLock<Box<dyn Provider>> = OnceLock::new();

/// Registers the provider (once, at start; a second registration is ignored).
pub fn provide(provider: Box<dyn Provider>) {
    let _ = PROVIDER.set(provider);
}

/// The registered provider; `None` in a build or test that registered none.
pub fn provider() -> Option<&'static dyn Provider> {
    PROVIDER.get().map(Box::as_ref)
}

/// `live`'s feed, when a provider is registered and the session has one.
pub fn feed(live: &mut LiveSession) -> Option<Feed> {
    provider().and_then(|p| p.feed(live))
}

/// Every event `feed` has seen (empty without a provider).
pub fn transcript(feed: &Feed) -> Vec<Arc<Envelope>> {
    provider().map_or_else(Vec::new, |p| p.transcript(feed))
}

/// Starts a server for `feed`, or says why it cannot.
pub async fn start(ws: &Workspace, feed: Feed, lan: bool) -> Result<Box<dyn Server>, ShareError> {
    let provider = provider().ok_or_else(|| ShareError("this build cannot share".into()))?;
    provider.start(ws, feed, lan).await
}
