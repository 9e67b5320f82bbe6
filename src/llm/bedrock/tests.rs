use super::eventstream::encode;
use super::*;
use crate::llm::ToolSpec;

fn event(kind: &str, payload: Value) -> Vec<u8> {
    encode(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

fn parse(stream: &[u8]) -> (Vec<StreamEvent>, Result<bool, ErrorKind>) {
    let mut wire = ConverseStream::default();
    let mut events = Vec::new();
    let mut sink = |e| events.push(e);
    // Split at awkward places: frames arrive in pieces over HTTP.
    for piece in stream.chunks(7) {
        match wire.feed(piece, &mut sink) {
            Ok(true) => return (events, Ok(true)),
            Ok(false) => {}
            Err(e) => return (events, Err(e)),
        }
    }
    let end = wire.finish(&mut sink);
    (events, end)
}

#[test]
fn text_reasoning_tool_use_and_usage() {
    let stream = [
        event("messageStart", json!({"role": "assistant"})),
        event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "hmm"}}})),
        event("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"text": "Reading."}})),
        event("contentBlockStop", json!({"contentBlockIndex": 1})),
        event("contentBlockStart", json!({"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "Read"}}})),
        event("contentBlockDelta", json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "{\"file_path\":"}}})),
        event("contentBlockDelta", json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "\"a.rs\"}"}}})),
        event("contentBlockStop", json!({"contentBlockIndex": 2})),
        event("messageStop", json!({"stopReason": "tool_use"})),
        event("metadata", json!({"usage": {"inputTokens": 30, "outputTokens": 7, "totalTokens": 37}, "metrics": {"latencyMs": 5}})),
    ]
    .concat();
    let (events, end) = parse(&stream);
    assert_eq!(end, Ok(true));
    assert_eq!(
        events,
        vec![
            StreamEvent::Thinking("hmm".into()),
            StreamEvent::Text("Reading.".into()),
            StreamEvent::ToolCall(ToolCall {
                id: "tooluse_1".into(),
                name: "Read".into(),
                arguments: json!({"file_path": "a.rs"}),
            }),
            StreamEvent::Usage(Usage {
                input_tokens: 30,
                output_tokens: 7,
                generation_ms: 0
            }),
        ]
    );
}

#[test]
fn ends_exceptions_and_cut_offs() {
    let throttled = encode(
        &[
            (":message-type", "exception"),
            (":exception-type", "throttlingException"),
        ],
        br#"{"message":"Too many requests, please wait before trying again."}"#,
    );
    let (_, end) = parse(&throttled);
    assert!(
        matches!(end, Err(ErrorKind::Http { status: 429, .. })),
        "{end:?}"
    );
    let cut = [
        event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "a"}}),
        ),
        event("messageStop", json!({"stopReason": "max_tokens"})),
    ]
    .concat();
    let (events, end) = parse(&cut);
    assert_eq!(end, Ok(true), "messageStop completes the answer");
    assert!(events.contains(&StreamEvent::CutShort));
    let broken = event(
        "contentBlockDelta",
        json!({"contentBlockIndex": 0, "delta": {"text": "a"}}),
    );
    let (_, end) = parse(&broken);
    assert!(matches!(end, Err(ErrorKind::Disconnected(_))));
}

#[test]
fn request_body_maps_history_and_tools() {
    let call = ToolCall {
        id: "tooluse_1".into(),
        name: "Read".into(),
        arguments: json!({"file_path": "a.rs"}),
    };
    let messages = vec![
        ChatMessage::system("be brief"),
        ChatMessage::user("read a.rs"),
        ChatMessage::assistant("", vec![call.clone()]),
        ChatMessage::tool_result(&call, "", false),
        ChatMessage::user("and?"),
    ];
    let tools = [ToolSpec {
        name: "Read".into(),
        description: "reads".into(),
        parameters: json!({"type": "object"}),
    }];
    let body = request_body(&ChatRequest {
        messages: &messages,
        tools: &tools,
        answer_schema: None,
        temperature: None,
    });
    assert_eq!(
        body,
        json!({
            "system": [{"text": "be brief"}],
            "messages": [
                {"role": "user", "content": [{"text": "read a.rs"}]},
                {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tooluse_1", "name": "Read", "input": {"file_path": "a.rs"}}}]},
                {"role": "user", "content": [
                    {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "(no output)"}], "status": "success"}},
                    {"text": "and?"}
                ]}
            ],
            "toolConfig": {"tools": [{"toolSpec": {"name": "Read", "description": "reads", "inputSchema": {"json": {"type": "object"}}}}]}
        })
    );
    // Without tools, earlier calls become text: Bedrock refuses tool blocks then.
    let plain = request_body(&ChatRequest {
        messages: &messages,
        tools: &[],
        answer_schema: None,
        temperature: None,
    });
    assert!(plain.get("toolConfig").is_none());
    assert!(!plain.to_string().contains("toolUse"));
}

#[test]
fn images_are_image_blocks_in_tool_results_and_user_messages() {
    let call = ToolCall {
        id: "tooluse_1".into(),
        name: "mcp__web__shot".into(),
        arguments: json!({}),
    };
    let png = crate::llm::image::test_png();
    let messages = vec![
        ChatMessage::user("look").with_images(vec![png.clone()]),
        ChatMessage::assistant("", vec![call.clone()]),
        // An image alone is a whole result: no "(no output)" text next to it.
        ChatMessage::tool_result(&call, "", false).with_images(vec![png]),
    ];
    let tools = [ToolSpec {
        name: "mcp__web__shot".into(),
        description: "shoots".into(),
        parameters: json!({"type": "object"}),
    }];
    let request = ChatRequest {
        messages: &messages,
        tools: &tools,
        answer_schema: None,
        temperature: None,
    };
    let body = request_body(&request);
    let image = json!({"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}});
    assert_eq!(
        body["messages"][0]["content"],
        json!([{"text": "look"}, image])
    );
    assert_eq!(
        body["messages"][2]["content"],
        json!([{"toolResult": {"toolUseId": "tooluse_1", "content": [image], "status": "success"}}])
    );
    let plain = request_body(&ChatRequest {
        tools: &[],
        ..request
    });
    assert_eq!(
        plain["messages"][2]["content"],
        json!([{"text": "[result]\n"}, image])
    );
}

#[test]
fn the_path_encodes_the_model_id_and_keeps_a_base_path() {
    let mut cfg = ModelConfig::new(
        "b",
        crate::config::ProviderKind::Bedrock,
        "anthropic.claude-3-haiku-20240307-v1:0",
        "https://bedrock-runtime.eu-west-1.amazonaws.com",
    );
    cfg.region = Some("eu-west-1".into());
    let p = BedrockProvider::new(&cfg, crate::llm::http::plain_client());
    assert_eq!(
        p.path(),
        "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream"
    );
    assert_eq!(p.host(), "bedrock-runtime.eu-west-1.amazonaws.com");
    cfg.url = "http://127.0.0.1:9000/proxy".into();
    let p = BedrockProvider::new(&cfg, crate::llm::http::plain_client());
    assert!(p.path().starts_with("/proxy/model/"));
    assert_eq!(p.host(), "127.0.0.1:9000");
    assert_eq!(origin(&cfg.url), "http://127.0.0.1:9000");
}
