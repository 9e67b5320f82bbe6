//! `linggen acp` driven by the protocol's own reference client: the client side of the
//! `agent-client-protocol` crate (the maintained Rust SDK), connected to the real binary's
//! stdin and stdout. The same flow as tests/acp.rs: initialize, a new session, a prompt
//! whose scripted model reads a file and edits it after asking, and the answer.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PermissionOptionKind, PromptRequest,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, SessionUpdate, StopReason, TextContent,
    ToolCallContent, ToolCallStatus,
};
use agent_client_protocol::{Agent, ByteStreams, Client};
use serde_json::json;
use support::pty::workspace;
use support::{Reply, Step};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_client_runs_a_read_ask_edit_answer_flow() {
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool("Read", json!({"file_path": "notes.txt"}))),
        Reply::tool(
            "Edit",
            json!({"file_path": "notes.txt", "old_string": "old line", "new_string": "new line"}),
        )
        .into(),
        Reply::text("Changed the line.").into(),
    ]);
    ws.write("notes.txt", "first\nold line\nlast\n");
    let mut child = tokio::process::Command::from(ws.cmd())
        .arg("acp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn linggen acp");
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let updates: Arc<Mutex<Vec<SessionUpdate>>> = Arc::default();
    let asked: Arc<Mutex<Vec<RequestPermissionRequest>>> = Arc::default();
    let (seen, questions) = (Arc::clone(&updates), Arc::clone(&asked));
    let root = ws.root().to_path_buf();
    let flow = Client
        .v1()
        .name("reference-client")
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                seen.lock().unwrap().push(notification.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                let once = request
                    .options
                    .iter()
                    .find(|o| o.kind == PermissionOptionKind::AllowOnce)
                    .map(|o| o.option_id.clone())
                    .expect("an allow-once option");
                questions.lock().unwrap().push(request);
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(once)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, |connection: ConnectionTo<Agent>| async move {
            let init = connection
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            assert_eq!(init.agent_info.unwrap().name, "linggen");
            let session = connection
                .send_request(NewSessionRequest::new(root))
                .block_task()
                .await?;
            let prompt = PromptRequest::new(
                session.session_id,
                vec![ContentBlock::Text(TextContent::new(
                    "change the old line in notes.txt",
                ))],
            );
            let answer = connection.send_request(prompt).block_task().await?;
            Ok(answer.stop_reason)
        });
    let stop = tokio::time::timeout(Duration::from_secs(60), flow)
        .await
        .expect("the flow finished within a minute")
        .expect("the reference client saw no protocol error");
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(ws.read("notes.txt"), "first\nnew line\nlast\n");

    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1, "only the edit asks");
    assert_eq!(asked[0].options.len(), 4);
    let updates = updates.lock().unwrap();
    let calls: Vec<_> = updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::ToolCall(call) => Some(call.tool_call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2, "{updates:#?}");
    assert_eq!(asked[0].tool_call.tool_call_id, calls[1]);
    let diff = updates.iter().find_map(|u| match u {
        SessionUpdate::ToolCallUpdate(update)
            if update.fields.status == Some(ToolCallStatus::Completed) =>
        {
            update
                .fields
                .content
                .as_ref()?
                .iter()
                .find_map(|c| match c {
                    ToolCallContent::Diff(diff) => Some(diff.clone()),
                    _ => None,
                })
        }
        _ => None,
    });
    let diff = diff.expect("the edit's diff");
    assert_eq!(diff.old_text.as_deref(), Some("first\nold line\nlast\n"));
    assert_eq!(diff.new_text, "first\nnew line\nlast\n");
    let answer: String = updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                ContentBlock::Text(text) => Some(text.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(answer, "Changed the line.");
    drop(child);
}
