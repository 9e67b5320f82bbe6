//! The editor's buffers for the file tools, through ACP's `fs/read_text_file` and
//! `fs/write_text_file`, when the editor offers them at `initialize`. What reaches here
//! was resolved, checked and approved by linggen first (see [`crate::tools::editor_files`]).

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::model::{ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest};
use crate::protocol::jsonrpc::Peer;
use crate::tools::editor_files::EditorFiles;

/// How long the editor may take to hand over or write a file before linggen goes on
/// without it (reads fall back to the disk; a write fails and says so).
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub struct EditorBuffers {
    peer: PeerHandle,
    runtime: tokio::runtime::Handle,
    /// The session the requests are for: known once it has started.
    session: OnceLock<String>,
    reads: bool,
    writes: bool,
}

/// The peer, which has no `Debug` of its own.
struct PeerHandle(Peer);

impl std::fmt::Debug for PeerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Peer")
    }
}

impl EditorBuffers {
    /// `None` when the editor offers neither reading nor writing.
    pub fn new(peer: Peer, reads: bool, writes: bool) -> Option<EditorBuffers> {
        (reads || writes).then(|| EditorBuffers {
            peer: PeerHandle(peer),
            runtime: tokio::runtime::Handle::current(),
            session: OnceLock::new(),
            reads,
            writes,
        })
    }

    pub fn started(&self, session_id: &str) {
        let _ = self.session.set(session_id.to_string());
    }

    /// Asks the editor and waits (on a blocking thread) for its answer.
    fn ask(&self, method: &str, params: impl Serialize) -> Result<Value, String> {
        let request = self.peer.0.request(method, params);
        let answer = self
            .runtime
            .block_on(async { tokio::time::timeout(ANSWER_WITHIN, request).await });
        match answer {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(e))) => Err(e.message),
            Ok(Err(closed)) => Err(closed.to_string()),
            Err(_) => Err(format!("no answer within {}s", ANSWER_WITHIN.as_secs())),
        }
    }
}

impl EditorFiles for EditorBuffers {
    fn read(&self, path: &Path) -> Option<String> {
        let session = self.session.get().filter(|_| self.reads)?;
        let params = ReadTextFileRequest {
            session_id: session.clone(),
            path: path.to_path_buf(),
        };
        let answer = self.ask("fs/read_text_file", params).ok()?;
        serde_json::from_value::<ReadTextFileResponse>(answer)
            .ok()
            .map(|a| a.content)
    }

    fn write(&self, path: &Path, text: &str) -> Option<Result<(), String>> {
        let session = self.session.get().filter(|_| self.writes)?;
        let params = WriteTextFileRequest {
            session_id: session.clone(),
            path: path.to_path_buf(),
            content: text.to_string(),
        };
        Some(self.ask("fs/write_text_file", params).map(|_| ()))
    }
}
