//! The web frontend as the app layer's share provider (`app::share`): the feed is the
//! session's [`Mirror`], the server a [`Server`] whose hub shares that mirror. The binary
//! registers it at start, so the terminal's and the editor's `/share` start this server
//! without importing it.

use std::sync::Arc;

use super::{Hub, Mirror, ServeOptions, Server};
use crate::app::share::{Feed, Pending, Provider, ShareError};
use crate::app::{LiveSession, Workspace};

/// The web frontend's share provider.
pub struct WebShare;

/// The mirror a feed made by [`WebShare`] holds.
fn mirror_of(feed: Feed) -> Option<Arc<Mirror>> {
    feed.downcast::<Mirror>().ok()
}

impl Provider for WebShare {
    fn feed(&self, live: &mut LiveSession) -> Option<Feed> {
        Mirror::of(live).map(|mirror| mirror as Feed)
    }

    fn transcript(&self, feed: &Feed) -> Vec<Arc<crate::session::Envelope>> {
        mirror_of(feed.clone()).map_or_else(Vec::new, |mirror| mirror.transcript())
    }

    fn start<'a>(
        &'a self,
        ws: &'a Workspace,
        feed: Feed,
        lan: bool,
    ) -> Pending<'a, Result<Box<dyn crate::app::share::Server>, ShareError>> {
        Box::pin(async move {
            let mirror =
                mirror_of(feed).ok_or_else(|| ShareError("not a web mirror's feed".into()))?;
            let hub = Hub::new(ws);
            hub.share(mirror);
            let server = Server::start(Arc::new(hub), ServeOptions { port: 0, lan })
                .await
                .map_err(|e| ShareError(e.to_string()))?;
            Ok(Box::new(server) as Box<dyn crate::app::share::Server>)
        })
    }
}

impl crate::app::share::Server for Server {
    fn link(&self) -> Result<String, ShareError> {
        Server::link(self).map_err(ShareError)
    }

    fn viewer_link(&self) -> Result<String, ShareError> {
        Server::viewer_link(self).map_err(ShareError)
    }

    fn tokens(&self) -> (String, String) {
        (self.token().to_string(), self.viewer_token().to_string())
    }

    fn is_lan(&self) -> bool {
        Server::is_lan(self)
    }

    fn follow(&self, feed: Feed) {
        if let Some(mirror) = mirror_of(feed) {
            self.hub().share(mirror);
        }
    }

    fn stop(self: Box<Self>) -> Pending<'static, ()> {
        Box::pin(Server::stop(*self))
    }
}
