//! Which process runs the shell's session: this one, or a `linggen serve` of the same
//! workspace the shell attaches to (`--attach`; `--continue` / `--resume` of a session
//! that server has open). One session, one owner: the page and the terminal are then two
//! windows on it, and its history one turn after the other.

use crate::app::attach::{self, Want, registry};
use crate::app::{Failure, LiveSession, Start, Workspace, exit};

/// The session the shell works with, wherever it runs.
pub(super) async fn open(start: &Start, ws: &Workspace) -> Result<LiveSession, Failure> {
    let want = wanted(start);
    let server = match start.attach {
        true => None,
        false if start.continue_session || start.resume.is_some() => {
            match open_in_server(ws, &want).await {
                Some(server) => Some(server),
                None => return LiveSession::start(start, ws, true).await,
            }
        }
        false => return LiveSession::start(start, ws, true).await,
    };
    let attached = attach::attach(&ws.home, &ws.root, server, want)
        .await
        .map_err(|e| Failure {
            code: exit::FAILURE,
            message: e.to_string(),
        })?;
    let owner = attached.server.describe();
    Ok(LiveSession::remote(
        attached.handle,
        attached.events,
        attached.session_id,
        attached.model_label,
        attached.resumed,
        owner,
    ))
}

fn wanted(start: &Start) -> Want {
    match (&start.resume, start.continue_session) {
        (Some(id), _) => Want::Id(id.clone()),
        (None, true) => Want::Newest,
        (None, false) => Want::Current,
    }
}

/// The running server of this workspace that has the wanted session open, if any: a
/// second window on a live session attaches to its owner instead of opening a copy.
async fn open_in_server(ws: &Workspace, want: &Want) -> Option<registry::ServeRecord> {
    for server in registry::servers_of(&ws.home, &ws.root) {
        if attach::is_open_in(&server, want).await {
            return Some(server);
        }
    }
    None
}
