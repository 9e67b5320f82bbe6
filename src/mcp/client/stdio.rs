//! A stdio server: started through the launcher (scrubbed environment plus what its entry
//! names, confined unless the entry says otherwise, its process group killed with the
//! connection), one JSON-RPC message a line on its stdin and stdout.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncWrite};

use super::inbound::{Events, Inbound};
use super::{Connection, Link, McpError, Spawn, Started, keep_tail, unreachable_transport};
use crate::mcp::config::{ServerConfig, Transport};
use crate::protocol::jsonrpc::Peer;
use crate::protocol::ndjson::BoundedLines;
use crate::tools::launch::{Confinement, Env, Launch, Lifetime, Program};

pub(super) async fn open(
    server: &ServerConfig,
    spawn: &Spawn<'_>,
    events: Events,
) -> Result<Connection, McpError> {
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
    } = &server.transport
    else {
        unreachable_transport()?
    };
    let start_error = |reason: String| McpError::Start {
        server: server.name.clone(),
        reason,
    };
    // A server that needs the network, or that a package runner fetches first, gets the
    // session's walls with the network (and the runner's cache) opened.
    let runner = crate::mcp::runners::needs(command);
    let widened;
    let sandbox = if server.network || runner.is_some() {
        let writes = runner.map(|r| r.writable()).unwrap_or_default();
        widened = spawn.sandbox.widened(true, &writes);
        &widened
    } else {
        spawn.sandbox
    };
    let program = if Path::new(command).is_absolute() {
        Program::Path(Path::new(command))
    } else {
        Program::Named(std::ffi::OsStr::new(command))
    };
    let launch = Launch {
        program,
        env: Env::Scrubbed(sandbox),
        confinement: if sandbox.settings().enabled {
            Confinement::Sandbox(sandbox)
        } else {
            Confinement::Unconfined("[sandbox] enabled = false")
        },
        lifetime: Lifetime::Contained,
    };
    let mut cmd = launch
        .tokio_command()
        .map_err(|e| start_error(e.to_string()))?;
    cmd.args(args)
        .envs(env)
        .current_dir(cwd.as_deref().unwrap_or(spawn.root))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| start_error(format!("`{command}`: {e}")))?;
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err(start_error(
            "its standard streams could not be opened".into(),
        ));
    };
    let stderr = Arc::new(Mutex::new(String::new()));
    let mut started = over_lines(stdout, stdin, events);
    if let Some(err) = child.stderr.take() {
        let tail = tokio::spawn(keep_tail(err, stderr.clone()));
        started.link.tasks.push(tail.abort_handle());
    }
    started.link.child = Some(child);
    started.stderr = stderr;
    started.handshake(server).await
}

/// Messages as lines: written to `input`, read from `output` until it ends, which closes
/// the connection (the process exited).
pub(super) fn over_lines<R, W>(output: R, input: W, events: Events) -> Started
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (peer, writer) = Peer::new(input);
    let inbound = Inbound::new(peer.clone(), events);
    let reader = tokio::spawn(async move {
        // A line is bounded: a server that never ends one cannot have linggen keep it all.
        let mut lines = BoundedLines::new(output);
        loop {
            match lines.next_line().await {
                Ok(Some(line)) => inbound.take(&line),
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    return inbound.broke(e);
                }
                Ok(None) | Err(_) => break,
            }
        }
        inbound.closed();
    });
    Started {
        peer,
        link: Link::tasks(vec![writer.abort_handle(), reader.abort_handle()]),
        stderr: Arc::default(),
    }
}
