use serde_json::{Value, json};

use super::*;

fn read<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
}

fn written(value: impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn initialize_reads_the_file_capabilities_and_an_odd_one_as_none() {
    let request: InitializeRequest = read(json!({
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": "yes"}, "terminal": true},
        "clientInfo": {"name": "zed", "version": "1"}
    }));
    let fs = request.client_capabilities.fs;
    assert!(fs.read_text_file);
    assert!(!fs.write_text_file);
    let odd: InitializeRequest = read(json!({"protocolVersion": 1, "clientCapabilities": []}));
    assert!(!odd.client_capabilities.fs.read_text_file);
    let versionless =
        serde_json::from_value::<InitializeRequest>(json!({"clientCapabilities": {}}));
    assert!(versionless.is_err());
}

#[test]
fn mcp_servers_read_each_transport_and_keep_what_linggen_cannot_run() {
    let servers: Vec<McpServer> = read(json!([
        {"name": "files", "command": "/bin/files", "args": null, "env": [{"name": "K", "value": "v"}]},
        {"type": "http", "name": "docs", "url": "http://h/mcp", "headers": []},
        {"type": "sse", "name": "old", "url": "http://h/sse", "headers": [{"name": "A", "value": "b"}]},
        {"type": "acp", "name": "inner", "serverId": "x"},
        {"name": "no-command"}
    ]));
    assert!(matches!(&servers[0], McpServer::Stdio(s)
        if s.command == "/bin/files" && s.args.is_empty() && s.env[0].value == "v"));
    assert!(matches!(&servers[1], McpServer::Http(s) if s.url == "http://h/mcp"));
    assert!(matches!(&servers[2], McpServer::Sse(s) if s.headers[0].name == "A"));
    assert!(matches!(&servers[3], McpServer::Unknown(v) if v["type"] == "acp"));
    assert!(matches!(&servers[4], McpServer::Unknown(v) if v["name"] == "no-command"));
}

#[test]
fn a_prompt_reads_every_kind_linggen_takes_and_marks_the_rest() {
    let request: PromptRequest = read(json!({
        "sessionId": "s1",
        "prompt": [
            {"type": "text", "text": "hi", "annotations": {"priority": 1}},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "file:///a", "name": "a"},
            {"type": "resource", "resource": {"uri": "file:///b", "text": "b", "mimeType": "text/plain"}},
            {"type": "resource", "resource": {"uri": "file:///c", "blob": "Yw==", "mimeType": "image/png"}},
            {"type": "resource", "resource": {"uri": "file:///d"}},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
        ]
    }));
    let p = &request.prompt;
    assert_eq!(p[0], ContentBlock::text("hi"));
    assert!(matches!(&p[1], ContentBlock::Image(i) if i.mime_type == "image/png"));
    assert!(matches!(&p[2], ContentBlock::ResourceLink(l) if l.name == "a"));
    assert!(matches!(&p[3], ContentBlock::Resource(r)
        if matches!(&r.resource, EmbeddedResourceResource::Text(t) if t.text == "b")));
    assert!(matches!(&p[4], ContentBlock::Resource(r)
        if matches!(&r.resource, EmbeddedResourceResource::Blob(b)
            if b.mime_type.as_deref() == Some("image/png"))));
    assert!(matches!(&p[5], ContentBlock::Resource(r)
        if matches!(r.resource, EmbeddedResourceResource::Unknown(_))));
    assert_eq!(p[6], ContentBlock::Unknown);
}

#[test]
fn a_config_value_is_an_id_or_something_else() {
    let id: SetSessionConfigOptionRequest =
        read(json!({"sessionId": "s", "configId": "model", "value": "smol"}));
    assert_eq!(id.value, SessionConfigOptionValue::ValueId("smol".into()));
    let flag: SetSessionConfigOptionRequest =
        read(json!({"sessionId": "s", "configId": "x", "type": "boolean", "value": true}));
    assert_eq!(flag.value, SessionConfigOptionValue::Other(json!(true)));
}

#[test]
fn a_permission_answer_reads_each_outcome() {
    let outcome = |v: Value| read::<RequestPermissionResponse>(json!({ "outcome": v })).outcome;
    assert_eq!(
        outcome(json!({"outcome": "selected", "optionId": "allow_once"})),
        RequestPermissionOutcome::Selected {
            option_id: "allow_once".into()
        }
    );
    assert_eq!(
        outcome(json!({"outcome": "cancelled"})),
        RequestPermissionOutcome::Cancelled
    );
    assert_eq!(
        outcome(json!({"outcome": "later"})),
        RequestPermissionOutcome::Unknown
    );
}

#[test]
fn updates_are_written_as_the_protocol_names_them() {
    let chunk = SessionNotification {
        session_id: "s1".into(),
        update: SessionUpdate::AgentThoughtChunk(ContentChunk::text("hm")),
    };
    assert_eq!(
        written(chunk),
        json!({"sessionId": "s1", "update": {
            "sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}}})
    );
    let call = SessionUpdate::ToolCall(ToolCall {
        tool_call_id: "c1".into(),
        title: "Read a".into(),
        kind: ToolKind::Read,
        status: ToolCallStatus::InProgress,
        locations: vec![ToolCallLocation {
            path: "/w/a".into(),
        }],
        raw_input: Some(json!({"file_path": "a"})),
    });
    assert_eq!(
        written(call),
        json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read a",
               "kind": "read", "status": "in_progress", "locations": [{"path": "/w/a"}],
               "rawInput": {"file_path": "a"}})
    );
    let done = SessionUpdate::ToolCallUpdate(ToolCallUpdate {
        tool_call_id: "c2".into(),
        status: Some(ToolCallStatus::Completed),
        content: Some(vec![
            ToolCallContent::Diff(Diff {
                path: "/w/new".into(),
                old_text: None,
                new_text: "x\n".into(),
            }),
            ToolCallContent::text("done"),
        ]),
        ..Default::default()
    });
    assert_eq!(
        written(done),
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "c2", "status": "completed",
               "content": [
                   {"type": "diff", "path": "/w/new", "newText": "x\n"},
                   {"type": "content", "content": {"type": "text", "text": "done"}}]})
    );
}

#[test]
fn settings_are_written_as_the_protocol_names_them() {
    let option = SessionConfigOption {
        id: "model".into(),
        name: "Model".into(),
        category: Some(SessionConfigOptionCategory::Model),
        current_value: "smol".into(),
        options: vec![SessionConfigSelectOption {
            value: "smol".into(),
            name: "smol".into(),
            description: None,
        }],
        ..Default::default()
    };
    assert_eq!(
        written(option),
        json!({"id": "model", "name": "Model", "category": "model", "type": "select",
               "currentValue": "smol", "options": [{"value": "smol", "name": "smol"}]})
    );
    assert_eq!(written(SetSessionModeResponse {}), json!({}));
    let permission = PermissionOption {
        option_id: "deny".into(),
        name: "Deny".into(),
        kind: PermissionOptionKind::RejectOnce,
    };
    assert_eq!(
        written(permission),
        json!({"optionId": "deny", "name": "Deny", "kind": "reject_once"})
    );
}
