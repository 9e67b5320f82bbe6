//! `/share` typed in an editor: the session's web mirror, as the terminal's `/share` gives
//! it (see doc/web.md). The page watches and drives the very session the editor drives;
//! approvals show in both, and the first answer wins.
//!
//! Like the terminal (`repl/share.rs`), it starts the server through the app layer
//! (`app::share`), which the binary fills with the web frontend's.

use tokio::sync::Mutex;

use crate::app::Workspace;
use crate::app::share::{self, Feed, Server};

/// One session's share: its mirror (following from the first event) and, once `/share`
/// was asked for, the server.
pub struct Share {
    mirror: Option<Feed>,
    server: Mutex<Option<Box<dyn Server>>>,
}

impl Share {
    pub fn new(mirror: Option<Feed>) -> Share {
        Share {
            mirror,
            server: Mutex::new(None),
        }
    }

    /// The answer to `/share ARGS`, in lines for the editor: the link (starting the server
    /// on first use), `stop`, or what was wrong.
    pub async fn command(&self, ws: &Workspace, args: &str) -> String {
        let mut server = self.server.lock().await;
        match args.trim() {
            "stop" => match server.take() {
                Some(running) => {
                    running.stop().await;
                    "Stopped sharing; the links no longer work.".into()
                }
                None => "Not sharing; `/share` starts it.".into(),
            },
            "" | "--read-only" => {
                let running = match &mut *server {
                    Some(running) => running,
                    none => match self.start(ws).await {
                        Ok(started) => none.insert(started),
                        Err(e) => return format!("Cannot share this session: {e}"),
                    },
                };
                links(running.as_ref(), args.trim() == "--read-only")
            }
            other => format!(
                "Unknown /share option `{other}`; use /share, /share --read-only or /share stop."
            ),
        }
    }

    async fn start(&self, ws: &Workspace) -> Result<Box<dyn Server>, String> {
        let mirror = self.mirror.clone().ok_or("it has no mirror")?;
        share::start(ws, mirror, false)
            .await
            .map_err(|e| e.to_string())
    }

    pub async fn stop(&self) {
        if let Some(server) = self.server.lock().await.take() {
            server.stop().await;
        }
    }
}

fn links(server: &dyn Server, read_only: bool) -> String {
    let link = match server.link() {
        Ok(link) => link,
        Err(e) => return format!("Cannot make a link: {e}"),
    };
    let mut text = format!(
        "Sharing this session: {link}\n\nThe link works once, for one browser tab; `/share` \
         prints a new one. Anyone with it can read and drive this session; `/share stop` ends it."
    );
    if read_only && let Ok(viewer) = server.viewer_link() {
        text.push_str(&format!("\n\nRead-only viewer: {viewer}"));
    }
    text
}
