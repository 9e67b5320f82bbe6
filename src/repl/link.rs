//! The shell's tie to its session: the running session (this process's, or another's when
//! the terminal attached to it), the web mirror that follows it from its start, and the
//! server `/share` started. A new session (`/clear`, `/resume`, a first message after a
//! model was configured) replaces the session and its mirror together.

use std::sync::Arc;

use crate::app::LiveSession;
use crate::app::share::{self, Feed};
use crate::session::{self, lock};

#[derive(Default)]
pub(super) struct SessionLink {
    /// `None` on a first run with no model yet (the shell opens all the same, says how to
    /// configure one, and starts the session with the next message).
    pub live: Option<LiveSession>,
    /// The session as the web mirror sees it, following it from its start, so that
    /// `/share` can begin at any time and still show everything.
    pub mirror: Option<Feed>,
    /// The web server, once `/share` started it.
    pub share: Option<Box<dyn share::Server>>,
}

impl SessionLink {
    pub fn new(live: Option<LiveSession>, shared: &crate::repl::view::Shared) -> Self {
        let mut link = SessionLink::default();
        if let Some(live) = live {
            link.replace(live, shared);
        }
        link
    }

    /// Follows `live` from now on; the session it replaces, to be stopped.
    pub fn replace(
        &mut self,
        mut live: LiveSession,
        shared: &crate::repl::view::Shared,
    ) -> Option<LiveSession> {
        self.mirror = share::feed(&mut live);
        *lock(&shared.session_id) = Some(live.session_id.clone());
        self.live.replace(live)
    }

    /// The process that runs the session, when it is not this one (`--attach`).
    pub fn attached_to(&self) -> Option<String> {
        self.live.as_ref().and_then(|l| l.owner.clone())
    }

    /// Cancels the running turn, if the session runs one.
    pub async fn cancel(&self) {
        if let Some(live) = &self.live {
            let _ = live.handle.inputs.send(session::Input::Cancel).await;
        }
    }

    /// The session's next event (never, while there is no session).
    pub async fn next_event(&mut self) -> Option<Arc<session::Envelope>> {
        match &mut self.live {
            Some(live) => live.events.recv().await,
            None => std::future::pending().await,
        }
    }
}
