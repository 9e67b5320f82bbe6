//! Self-tests of the scripted LLM server in `tests/support`: a plain HTTP client checks
//! that each protocol, each fault and the request log behave as the integration tests
//! rely on. Independent of the linggen library on purpose.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{Value, json};
use support::{
    Fault, Protocol, Reply, ScriptedServer, ServerOptions, Step, TEST_KEY, TEST_KEY_ENV, Workspace,
    bedrock, markdown_corpus, write_config, write_config_with,
};

// ---------------------------------------------------------------------------------------
// A minimal client for each protocol.

/// The chat endpoint as each client library builds it from the base URL.
fn chat_url(server: &ScriptedServer) -> String {
    match server.protocol() {
        Protocol::OpenAi => format!("{}/chat/completions", server.url()),
        Protocol::Ollama => format!("{}/api/chat", server.url()),
        Protocol::Anthropic => format!("{}/v1/messages", server.url()),
        Protocol::Bedrock => format!(
            "{}/model/{}/converse-stream",
            server.url(),
            bedrock::MODEL_ID.replace(':', "%3A")
        ),
    }
}

fn chat_body(protocol: Protocol, stream: bool) -> Value {
    let mut body = json!({
        "model": "scripted",
        "messages": [{"role": "user", "content": "hello"}],
        "stream": stream,
    });
    if protocol == Protocol::Anthropic {
        body["max_tokens"] = json!(1024);
    }
    body
}

async fn post(server: &ScriptedServer, body: &Value) -> reqwest::Response {
    let mut request = linggen::llm::http::plain_client()
        .post(chat_url(server))
        .json(body);
    match server.protocol() {
        Protocol::OpenAi => request = request.bearer_auth(TEST_KEY),
        Protocol::Anthropic => {
            request = request
                .header("x-api-key", TEST_KEY)
                .header("anthropic-version", "2023-06-01");
        }
        Protocol::Bedrock => request = request.bearer_auth(bedrock::BEARER_KEY),
        Protocol::Ollama => {}
    }
    request.send().await.expect("send the chat request")
}

async fn chat(server: &ScriptedServer) -> reqwest::Response {
    post(server, &chat_body(server.protocol(), true)).await
}

/// The body as the client received it, piece by piece, and the error that ended it early.
async fn read_pieces(response: reqwest::Response) -> (Vec<Bytes>, Option<reqwest::Error>) {
    let mut pieces = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(item) = stream.next().await {
        match item {
            Ok(piece) => pieces.push(piece),
            Err(err) => return (pieces, Some(err)),
        }
    }
    (pieces, None)
}

async fn read_text(response: reqwest::Response) -> String {
    let (pieces, err) = read_pieces(response).await;
    assert!(err.is_none(), "body ended with an error: {err:?}");
    String::from_utf8(pieces.concat()).expect("the body is UTF-8")
}

/// `(event name, data)` for every SSE block; the name is empty when there is no `event:`.
fn sse(text: &str) -> Vec<(String, String)> {
    text.split("\n\n")
        .filter(|block| !block.is_empty())
        .map(|block| {
            let mut event = String::new();
            let mut data = String::new();
            for line in block.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    event = name.to_string();
                } else if let Some(payload) = line.strip_prefix("data: ") {
                    data = payload.to_string();
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            (event, data)
        })
        .collect()
}

/// The OpenAI chunks as JSON, asserting the stream ends with `data: [DONE]`.
fn openai_chunks(text: &str) -> Vec<Value> {
    let events = sse(text);
    assert_eq!(
        events.last().map(|(_, data)| data.as_str()),
        Some("[DONE]"),
        "{text}"
    );
    events[..events.len() - 1]
        .iter()
        .map(|(_, data)| serde_json::from_str(data).expect("every chunk is JSON"))
        .collect()
}

fn openai_content(chunks: &[Value], field: &str) -> Vec<String> {
    chunks
        .iter()
        .filter_map(|chunk| {
            chunk
                .pointer(&format!("/choices/0/delta/{field}"))?
                .as_str()
        })
        .filter(|piece| !piece.is_empty())
        .map(str::to_string)
        .collect()
}

fn ndjson(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).expect("every line is JSON"))
        .collect()
}

/// Anthropic events as `(name, data)`, checking each `event:` matches its data's `type`.
fn anthropic_events(text: &str) -> Vec<(String, Value)> {
    sse(text)
        .into_iter()
        .map(|(name, data)| {
            let data: Value = serde_json::from_str(&data).expect("every event is JSON");
            assert_eq!(data["type"], json!(name), "event name and data type agree");
            (name, data)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// OpenAI

#[tokio::test]
async fn openai_text_streams_in_several_content_deltas() {
    let server = ScriptedServer::start(
        Protocol::OpenAi,
        vec![Reply::text("Hello there, streaming world!")],
    )
    .await;
    let response = chat(&server).await;
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    assert!(response.headers().contains_key("x-request-id"));

    let chunks = openai_chunks(&read_text(response).await);
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(chunks[0]["object"], "chat.completion.chunk");
    assert!(chunks[0]["id"].as_str().unwrap().starts_with("chatcmpl-"));
    let content = openai_content(&chunks, "content");
    assert!(content.len() >= 3, "{content:?}");
    assert_eq!(content.concat(), "Hello there, streaming world!");
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "stop"
    );
    assert!(chunks.iter().all(|chunk| chunk.get("usage").is_none()));
}

#[tokio::test]
async fn openai_tool_call_arguments_stream_in_fragments() {
    let args = json!({"path": "src/lib.rs", "offset": 10});
    let server = ScriptedServer::start(
        Protocol::OpenAi,
        vec![Reply::text_then_tools(
            "Let me look.",
            [("Read", args.clone()), ("Glob", json!({"pattern": "*.rs"}))],
        )],
    )
    .await;
    let chunks = openai_chunks(&read_text(chat(&server).await).await);

    assert_eq!(openai_content(&chunks, "content").concat(), "Let me look.");
    let calls: Vec<&Value> = chunks
        .iter()
        .filter_map(|chunk| chunk.pointer("/choices/0/delta/tool_calls/0"))
        .collect();
    let mut ids = Vec::new();
    let mut names = Vec::new();
    let mut arguments = vec![String::new(); 2];
    let mut fragments = [0; 2];
    for call in calls {
        let index = call["index"].as_u64().unwrap() as usize;
        if let Some(id) = call.get("id") {
            assert_eq!(call["type"], "function");
            ids.push(id.as_str().unwrap().to_string());
            names.push(call["function"]["name"].as_str().unwrap().to_string());
        } else {
            fragments[index] += 1;
        }
        arguments[index].push_str(call["function"]["arguments"].as_str().unwrap());
    }
    assert_eq!(names, ["Read", "Glob"]);
    assert!(fragments.iter().all(|&count| count >= 2), "{fragments:?}");
    assert_eq!(serde_json::from_str::<Value>(&arguments[0]).unwrap(), args);
    assert_eq!(
        serde_json::from_str::<Value>(&arguments[1]).unwrap(),
        json!({"pattern": "*.rs"})
    );
    assert!(
        ids.iter()
            .all(|id| id.starts_with("call_") && id.len() == 29),
        "{ids:?}"
    );
    assert_ne!(ids[0], ids[1]);
    assert_eq!(server.tool_call_ids(), ids);
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
}

#[tokio::test]
async fn openai_usage_chunk_comes_last_when_requested() {
    let server = ScriptedServer::start(
        Protocol::OpenAi,
        vec![
            Reply::text("counted").usage(120, 7),
            Reply::text("not counted"),
        ],
    )
    .await;
    let mut body = chat_body(Protocol::OpenAi, true);
    body["stream_options"] = json!({"include_usage": true});
    let chunks = openai_chunks(&read_text(post(&server, &body).await).await);
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"], json!([]));
    assert_eq!(last["usage"]["prompt_tokens"], 120);
    assert_eq!(last["usage"]["completion_tokens"], 7);
    assert_eq!(last["usage"]["total_tokens"], 127);
    assert!(
        chunks[..chunks.len() - 1]
            .iter()
            .all(|chunk| chunk["usage"].is_null())
    );

    let chunks = openai_chunks(&read_text(chat(&server).await).await);
    assert!(chunks.iter().all(|chunk| chunk.get("usage").is_none()));
}

#[tokio::test]
async fn openai_reasoning_content_precedes_content() {
    let server = ScriptedServer::start(
        Protocol::OpenAi,
        vec![Reply::thinking("The user greets me.", "Hi!")],
    )
    .await;
    let chunks = openai_chunks(&read_text(chat(&server).await).await);
    assert_eq!(
        openai_content(&chunks, "reasoning_content").concat(),
        "The user greets me."
    );
    assert_eq!(openai_content(&chunks, "content").concat(), "Hi!");
    let first_content = chunks
        .iter()
        .position(|chunk| {
            chunk
                .pointer("/choices/0/delta/content")
                .is_some_and(|c| c != "")
        })
        .unwrap();
    let last_reasoning = chunks
        .iter()
        .rposition(|chunk| {
            chunk
                .pointer("/choices/0/delta/reasoning_content")
                .is_some()
        })
        .unwrap();
    assert!(last_reasoning < first_content);
}

#[tokio::test]
async fn openai_non_streaming_request_gets_one_completion() {
    let server = ScriptedServer::start(
        Protocol::OpenAi,
        vec![Reply::tool("Bash", json!({"command": "ls"}))],
    )
    .await;
    let response = post(&server, &chat_body(Protocol::OpenAi, false)).await;
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["object"], "chat.completion");
    let message = &body["choices"][0]["message"];
    assert!(message["content"].is_null());
    assert_eq!(message["tool_calls"][0]["function"]["name"], "Bash");
    assert_eq!(
        message["tool_calls"][0]["function"]["arguments"],
        r#"{"command":"ls"}"#
    );
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    assert!(body["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn openai_truncated_reply_finishes_with_length() {
    let server =
        ScriptedServer::start(Protocol::OpenAi, vec![Reply::text("cut").truncated()]).await;
    let chunks = openai_chunks(&read_text(chat(&server).await).await);
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "length"
    );
}

#[tokio::test]
async fn openai_models_endpoint_lists_the_scripted_model() {
    let server = ScriptedServer::start(Protocol::OpenAi, Vec::<Step>::new()).await;
    let body: Value = reqwest::get(format!("{}/models", server.url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["object"], "list");
    assert_eq!(body["data"][0]["id"], "scripted");
    assert!(server.chat_requests().is_empty());
}

#[tokio::test]
async fn chunked_reply_reaches_the_client_in_tiny_writes_and_reassembles() {
    let markdown = markdown_corpus(64 * 1024);
    let server = ScriptedServer::start(
        Protocol::OpenAi,
        vec![Reply::text_chunked(markdown.clone(), 4).delta_bytes(512)],
    )
    .await;
    let (pieces, err) = read_pieces(chat(&server).await).await;
    assert!(err.is_none(), "{err:?}");
    assert!(
        pieces.iter().all(|piece| piece.len() <= 4),
        "a piece was larger than one 4-byte write"
    );
    let text = String::from_utf8(pieces.concat()).unwrap();
    assert_eq!(
        openai_content(&openai_chunks(&text), "content").concat(),
        markdown
    );
}

// ---------------------------------------------------------------------------------------
// Ollama

#[tokio::test]
async fn ollama_text_streams_as_ndjson_ending_in_done() {
    let server = ScriptedServer::start(
        Protocol::Ollama,
        vec![Reply::text("Local models are fast enough.").usage(33, 6)],
    )
    .await;
    let response = chat(&server).await;
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    let lines = ndjson(&read_text(response).await);
    let (last, content) = lines.split_last().unwrap();
    assert!(content.len() >= 3);
    assert!(
        content
            .iter()
            .all(|line| line["done"] == false && line["model"] == "scripted")
    );
    let text: String = content
        .iter()
        .map(|line| line["message"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Local models are fast enough.");
    assert_eq!(last["done"], true);
    assert_eq!(last["done_reason"], "stop");
    assert_eq!(last["prompt_eval_count"], 33);
    assert_eq!(last["eval_count"], 6);
}

#[tokio::test]
async fn ollama_tool_calls_carry_object_arguments_and_no_ids() {
    let server = ScriptedServer::start(
        Protocol::Ollama,
        vec![Reply::text_then_tool(
            "Checking.",
            "Grep",
            json!({"pattern": "fn main"}),
        )],
    )
    .await;
    let lines = ndjson(&read_text(chat(&server).await).await);
    let call_line = lines
        .iter()
        .find(|line| line["message"].get("tool_calls").is_some())
        .unwrap();
    assert_eq!(
        call_line["message"]["tool_calls"],
        json!([{"function": {"name": "Grep", "arguments": {"pattern": "fn main"}}}])
    );
    assert!(server.tool_call_ids().is_empty());
    assert_eq!(lines.last().unwrap()["done_reason"], "stop");
}

#[tokio::test]
async fn ollama_thinking_arrives_in_its_own_field() {
    let server = ScriptedServer::start(Protocol::Ollama, vec![Reply::thinking("hmm", "ok")]).await;
    let lines = ndjson(&read_text(chat(&server).await).await);
    let thinking: String = lines
        .iter()
        .filter_map(|line| line["message"]["thinking"].as_str())
        .collect();
    assert_eq!(thinking, "hmm");
}

#[tokio::test]
async fn ollama_stream_false_gets_one_object() {
    let server = ScriptedServer::start(Protocol::Ollama, vec![Reply::text("whole")]).await;
    let body: Value = post(&server, &chat_body(Protocol::Ollama, false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["message"]["content"], "whole");
    assert_eq!(body["done"], true);
}

#[tokio::test]
async fn ollama_tags_and_show_describe_the_model() {
    let mut options = ServerOptions::new(Protocol::Ollama);
    options.context_length = 32768;
    options.num_ctx = Some(16384);
    let server = ScriptedServer::start_with(options, Vec::<Step>::new());
    let tags: Value = reqwest::get(format!("{}/api/tags", server.url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(tags["models"][0]["name"], "scripted");
    assert_eq!(tags["models"][0]["model"], "scripted");
    let show: Value = linggen::llm::http::plain_client()
        .post(format!("{}/api/show", server.url()))
        .json(&json!({"model": "scripted"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(show["model_info"]["llama.context_length"], 32768);
    assert_eq!(show["model_info"]["general.architecture"], "llama");
    assert!(show["parameters"].as_str().unwrap().contains("num_ctx"));
    assert!(show["parameters"].as_str().unwrap().contains("16384"));
}

// ---------------------------------------------------------------------------------------
// Anthropic

#[tokio::test]
async fn anthropic_text_stream_has_the_real_event_sequence() {
    let server = ScriptedServer::start(
        Protocol::Anthropic,
        vec![Reply::text("Hello from Claude-ish.").usage(25, 9)],
    )
    .await;
    let response = chat(&server).await;
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert!(response.headers().contains_key("request-id"));
    let events = anthropic_events(&read_text(response).await);
    let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    let deltas = names
        .iter()
        .filter(|name| **name == "content_block_delta")
        .count();
    assert!(deltas >= 3);
    let mut expected = vec!["message_start", "content_block_start", "ping"];
    expected.extend(std::iter::repeat_n("content_block_delta", deltas));
    expected.extend(["content_block_stop", "message_delta", "message_stop"]);
    assert_eq!(names, expected);

    let message = &events[0].1["message"];
    assert!(message["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(message["usage"]["input_tokens"], 25);
    assert_eq!(
        events[1].1["content_block"],
        json!({"type": "text", "text": ""})
    );
    let text: String = events
        .iter()
        .filter(|(name, _)| name == "content_block_delta")
        .map(|(_, data)| {
            assert_eq!(data["delta"]["type"], "text_delta");
            data["delta"]["text"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(text, "Hello from Claude-ish.");
    let message_delta = &events[events.len() - 2].1;
    assert_eq!(message_delta["delta"]["stop_reason"], "end_turn");
    assert_eq!(message_delta["usage"]["output_tokens"], 9);
}

#[tokio::test]
async fn anthropic_tool_input_streams_as_partial_json() {
    let args = json!({"file_path": "src/main.rs", "old_string": "a", "new_string": "b"});
    let server = ScriptedServer::start(
        Protocol::Anthropic,
        vec![Reply::text_then_tool("Editing.", "Edit", args.clone())],
    )
    .await;
    let events = anthropic_events(&read_text(chat(&server).await).await);
    let tool_start = events
        .iter()
        .find(|(name, data)| {
            name == "content_block_start" && data["content_block"]["type"] == "tool_use"
        })
        .map(|(_, data)| data)
        .unwrap();
    assert_eq!(tool_start["index"], 1);
    assert_eq!(tool_start["content_block"]["name"], "Edit");
    assert_eq!(tool_start["content_block"]["input"], json!({}));
    let id = tool_start["content_block"]["id"].as_str().unwrap();
    assert!(id.starts_with("toolu_01"), "{id}");
    assert_eq!(server.tool_call_ids(), [id]);

    let fragments: Vec<&str> = events
        .iter()
        .filter(|(_, data)| data["index"] == 1 && data["delta"]["type"] == "input_json_delta")
        .map(|(_, data)| data["delta"]["partial_json"].as_str().unwrap())
        .collect();
    assert!(fragments.len() >= 3);
    assert_eq!(
        serde_json::from_str::<Value>(&fragments.concat()).unwrap(),
        args
    );
    assert_eq!(
        events[events.len() - 2].1["delta"]["stop_reason"],
        "tool_use"
    );
}

#[tokio::test]
async fn anthropic_thinking_block_comes_first_with_a_signature() {
    let server = ScriptedServer::start(
        Protocol::Anthropic,
        vec![Reply::thinking("Consider it.", "Answer.")],
    )
    .await;
    let events = anthropic_events(&read_text(chat(&server).await).await);
    assert_eq!(events[1].1["content_block"]["type"], "thinking");
    let delta_types: Vec<&str> = events
        .iter()
        .filter(|(_, data)| data["index"] == 0 && data.get("delta").is_some())
        .map(|(_, data)| data["delta"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(delta_types.first(), Some(&"thinking_delta"));
    assert_eq!(delta_types.last(), Some(&"signature_delta"));
    let text_start = events
        .iter()
        .find(|(name, data)| name == "content_block_start" && data["index"] == 1)
        .unwrap();
    assert_eq!(text_start.1["content_block"]["type"], "text");
}

#[tokio::test]
async fn anthropic_rejects_what_the_real_api_rejects_without_using_a_step() {
    let server = ScriptedServer::start(Protocol::Anthropic, vec![Reply::text("served")]).await;
    let mut body = chat_body(Protocol::Anthropic, true);
    body.as_object_mut().unwrap().remove("max_tokens");
    let response = post(&server, &body).await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["type"], "invalid_request_error");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_tokens")
    );

    let response = linggen::llm::http::plain_client()
        .post(chat_url(&server))
        .json(&chat_body(Protocol::Anthropic, true))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400, "no anthropic-version header");

    assert_eq!(server.steps_remaining(), 1);
    assert!(read_text(chat(&server).await).await.contains("served"));
    server.assert_script_consumed();
}

// ---------------------------------------------------------------------------------------
// Faults, in every protocol

fn stream_terminator(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::OpenAi => "data: [DONE]",
        Protocol::Ollama => "\"done\":true",
        Protocol::Anthropic => "event: message_stop",
        Protocol::Bedrock => "messageStop",
    }
}

#[tokio::test]
async fn status_fault_sends_the_body_verbatim() {
    for protocol in Protocol::ALL {
        let server =
            ScriptedServer::start(protocol, vec![Fault::Status(503, "{\"oops\":1}".into())]).await;
        let response = chat(&server).await;
        assert_eq!(response.status(), 503);
        assert_eq!(response.text().await.unwrap(), "{\"oops\":1}");
    }
}

#[tokio::test]
async fn api_error_uses_each_protocols_error_shape() {
    for protocol in Protocol::ALL {
        let server =
            ScriptedServer::start(protocol, vec![Fault::api_error(500, "model crashed")]).await;
        let response = chat(&server).await;
        assert_eq!(response.status(), 500);
        let body: Value = response.json().await.unwrap();
        let message = match protocol {
            Protocol::OpenAi => &body["error"]["message"],
            Protocol::Ollama => &body["error"],
            Protocol::Anthropic => {
                assert_eq!(body["error"]["type"], "api_error");
                &body["error"]["message"]
            }
            Protocol::Bedrock => &body["message"],
        };
        assert_eq!(message, "model crashed", "{protocol:?}: {body}");
    }
}

#[tokio::test]
async fn rate_limit_sends_retry_after_then_the_next_step_is_served() {
    for protocol in Protocol::ALL {
        let server = ScriptedServer::start(
            protocol,
            vec![
                Step::from(Fault::rate_limited(2)),
                Reply::text("after the wait").into(),
            ],
        )
        .await;
        let response = chat(&server).await;
        assert_eq!(response.status(), 429);
        assert_eq!(response.headers()["retry-after"], "2");
        let body: Value = response.json().await.unwrap();
        assert!(
            body.to_string().contains("Rate limit"),
            "{protocol:?}: {body}"
        );
        let text = read_text(chat(&server).await).await;
        assert!(
            text.contains(stream_terminator(protocol)),
            "{protocol:?}: {text}"
        );
        assert_eq!(server.chat_requests().len(), 2);
        server.assert_script_consumed();
    }
}

#[tokio::test]
async fn disconnect_mid_stream_ends_the_body_with_an_error() {
    for protocol in Protocol::ALL {
        let server = ScriptedServer::start(protocol, vec![Fault::DisconnectMidStream]).await;
        let response = chat(&server).await;
        assert_eq!(response.status(), 200);
        let (pieces, err) = read_pieces(response).await;
        let text = String::from_utf8(pieces.concat()).unwrap();
        assert!(
            err.is_some(),
            "{protocol:?}: the body should end in an error"
        );
        assert!(
            text.contains("answer "),
            "{protocol:?}: some content arrives first: {text}"
        );
        assert!(
            !text.contains(stream_terminator(protocol)),
            "{protocol:?}: {text}"
        );
    }
}

#[tokio::test]
async fn malformed_chunk_is_not_json_but_the_stream_still_ends() {
    for protocol in Protocol::ALL {
        let server = ScriptedServer::start(protocol, vec![Fault::MalformedChunk]).await;
        let text = read_text(chat(&server).await).await;
        let payloads: Vec<String> = match protocol {
            Protocol::Ollama => text.lines().map(str::to_string).collect(),
            Protocol::OpenAi | Protocol::Anthropic => {
                sse(&text).into_iter().map(|(_, data)| data).collect()
            }
            Protocol::Bedrock => unreachable!("binary framing; not in Protocol::ALL"),
        };
        let broken: Vec<&String> = payloads
            .iter()
            .filter(|data| *data != "[DONE]" && serde_json::from_str::<Value>(data).is_err())
            .collect();
        assert_eq!(broken.len(), 1, "{protocol:?}: {text}");
        assert!(text.contains(stream_terminator(protocol)), "{protocol:?}");
    }
}

#[tokio::test]
async fn stream_error_event_arrives_in_band() {
    for protocol in Protocol::ALL {
        let server =
            ScriptedServer::start(protocol, vec![Fault::StreamError("Overloaded".into())]).await;
        let response = chat(&server).await;
        assert_eq!(response.status(), 200);
        let text = read_text(response).await;
        let expected = match protocol {
            Protocol::OpenAi => "data: {\"error\":{",
            Protocol::Ollama => "{\"error\":\"Overloaded\"}",
            // The key order of a JSON object means nothing; the payload is checked below.
            Protocol::Anthropic => "event: error\ndata: {",
            Protocol::Bedrock => "modelStreamErrorException",
        };
        assert!(text.contains(expected), "{protocol:?}: {text}");
        if protocol == Protocol::Anthropic {
            let data = text.split("event: error\ndata: ").nth(1).unwrap();
            let error: serde_json::Value =
                serde_json::from_str(data.lines().next().unwrap()).unwrap();
            assert_eq!(
                error["error"],
                serde_json::json!({"message": "Overloaded", "type": "overloaded_error"})
            );
        }
        assert!(
            !text.contains(stream_terminator(protocol)),
            "{protocol:?}: {text}"
        );
    }
}

#[tokio::test]
async fn stall_mid_stream_goes_silent_with_the_connection_open() {
    let server = ScriptedServer::start(Protocol::OpenAi, vec![Fault::StallMidStream]).await;
    let mut stream = chat(&server).await.bytes_stream();
    let mut received = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_millis(300), stream.next()).await {
            Ok(Some(piece)) => received.extend_from_slice(&piece.unwrap()),
            Ok(None) => panic!("the stream ended instead of stalling"),
            Err(_) => break,
        }
    }
    let text = String::from_utf8(received).unwrap();
    assert!(text.contains("\"role\":\"assistant\""), "{text}");
    assert!(!text.contains("[DONE]"));
}

#[tokio::test]
async fn hang_never_answers_but_the_request_is_recorded() {
    let server = ScriptedServer::start(Protocol::Ollama, vec![Fault::Hang]).await;
    linggen::llm::http::install_tls_provider();
    let result = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap()
        .post(chat_url(&server))
        .json(&chat_body(Protocol::Ollama, true))
        .send()
        .await;
    assert!(result.unwrap_err().is_timeout());
    assert_eq!(server.chat_requests().len(), 1);
}

#[tokio::test]
async fn running_out_of_script_is_a_loud_500() {
    for protocol in Protocol::ALL {
        let server = ScriptedServer::start(protocol, vec![Reply::text("only one")]).await;
        read_text(chat(&server).await).await;
        let response = chat(&server).await;
        assert_eq!(response.status(), 500);
        let body = response.text().await.unwrap();
        assert!(body.contains("script exhausted"), "{protocol:?}: {body}");
        assert!(body.contains("chat request #2"), "{protocol:?}: {body}");
    }
}

#[tokio::test]
async fn a_repeated_step_never_runs_out() {
    let server = ScriptedServer::start(
        Protocol::OpenAi,
        vec![
            Step::from(Reply::text("first")),
            Step::repeat(Reply::text("again")),
        ],
    )
    .await;
    for expected in ["first", "again", "again", "again"] {
        let chunks = openai_chunks(&read_text(chat(&server).await).await);
        assert_eq!(openai_content(&chunks, "content").concat(), expected);
    }
    assert_eq!(server.steps_remaining(), 0);
}

#[tokio::test]
async fn a_client_that_stops_reading_is_counted_as_a_disconnect() {
    let words = "word ".repeat(200);
    let server = ScriptedServer::start(
        Protocol::OpenAi,
        vec![Reply::text(words).chunk_delay(Duration::from_millis(5))],
    )
    .await;
    let mut stream = chat(&server).await.bytes_stream();
    stream.next().await.unwrap().unwrap();
    drop(stream);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while server.client_disconnects() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never noticed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(server.client_disconnects(), 1);
}

#[tokio::test]
#[should_panic(expected = "never served")]
async fn unserved_steps_fail_the_consumption_check() {
    let server =
        ScriptedServer::start(Protocol::OpenAi, vec![Reply::text("a"), Reply::text("b")]).await;
    read_text(chat(&server).await).await;
    server.assert_script_consumed();
}

// ---------------------------------------------------------------------------------------
// Recording and HTTP behaviour

#[tokio::test]
async fn every_request_is_recorded_before_it_is_answered() {
    let server = ScriptedServer::start(
        Protocol::OpenAi,
        vec![
            Step::from(Fault::api_error(500, "boom")),
            Reply::text("fine").into(),
        ],
    )
    .await;
    reqwest::get(format!("{}/models?limit=5", server.url()))
        .await
        .unwrap();
    let mut body = chat_body(Protocol::OpenAi, true);
    body["tools"] = json!([{"type": "function", "function": {"name": "Read"}}]);
    let response = linggen::llm::http::plain_client()
        .post(chat_url(&server))
        .bearer_auth(TEST_KEY)
        .header("X-Custom-Header", "Value")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 500);
    read_text(chat(&server).await).await;

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        (requests[0].method.as_str(), requests[0].path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(requests[0].query.as_deref(), Some("limit=5"));
    assert!(!requests[0].is_chat());
    assert_eq!(requests[1].path, "/v1/chat/completions");
    assert_eq!(requests[1].header("x-custom-header"), Some("Value"));
    assert_eq!(
        requests[1].header("Authorization"),
        Some(&*format!("Bearer {TEST_KEY}"))
    );
    assert!(
        requests[1]
            .headers
            .keys()
            .all(|name| *name == name.to_ascii_lowercase())
    );
    assert_eq!(requests[1].body, body);
    assert_eq!(
        server.chat_requests(),
        vec![body, chat_body(Protocol::OpenAi, true)]
    );
    assert_eq!(
        server.last_chat_request(),
        Some(chat_body(Protocol::OpenAi, true))
    );
}

#[tokio::test]
async fn unknown_routes_get_a_native_404() {
    let server = ScriptedServer::start(Protocol::Anthropic, Vec::<Step>::new()).await;
    let response = reqwest::get(format!("{}/v1/complete", server.url()))
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "not_found_error");
}

#[tokio::test]
async fn concurrent_requests_each_get_a_step() {
    let server = ScriptedServer::start(
        Protocol::Ollama,
        vec![Reply::text("one"), Reply::text("two")],
    )
    .await;
    let (a, b) = tokio::join!(chat(&server), chat(&server));
    let (a, b) = tokio::join!(read_text(a), read_text(b));
    let mut answers = [a, b].map(|text| {
        ndjson(&text)
            .iter()
            .map(|line| line["message"]["content"].as_str().unwrap().to_string())
            .collect::<String>()
    });
    answers.sort();
    assert_eq!(answers, ["one", "two"]);
}

/// Sends one raw request and returns the raw response, from a thread with no runtime.
fn raw_exchange(server: &ScriptedServer, request: &str) -> String {
    let mut socket = TcpStream::connect(server.addr()).unwrap();
    socket.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    socket.read_to_end(&mut response).unwrap();
    String::from_utf8(response).unwrap()
}

#[test]
fn background_server_speaks_chunked_http_to_a_plain_test() {
    let server = ScriptedServer::start_background(Protocol::Ollama, vec![Reply::text("hi there")]);
    let body = r#"{"model":"scripted","messages":[]}"#;
    let response = raw_exchange(
        &server,
        &format!(
            "POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.contains("Transfer-Encoding: chunked"));
    assert!(head.contains("Connection: close"));
    assert!(head.contains("Content-Type: application/x-ndjson"));
    assert!(
        body.ends_with("\r\n0\r\n\r\n"),
        "the body ends with the last chunk: {body:?}"
    );
    assert_eq!(
        server.requests()[0].raw_body,
        r#"{"model":"scripted","messages":[]}"#
    );
}

#[test]
fn dropping_the_server_closes_hung_connections() {
    let server = ScriptedServer::start_background(Protocol::OpenAi, vec![Fault::Hang]);
    let mut socket = TcpStream::connect(server.addr()).unwrap();
    let body = r#"{"messages":[]}"#;
    socket
        .write_all(
            format!(
                "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    while server.requests().is_empty() {
        std::thread::yield_now();
    }
    drop(server);
    let mut rest = Vec::new();
    assert_eq!(
        socket.read_to_end(&mut rest).unwrap(),
        0,
        "closed without a byte"
    );
}

// ---------------------------------------------------------------------------------------
// Helpers for driving the binary

#[test]
fn write_config_declares_one_test_model() {
    let ws = Workspace::new();
    let path = write_config(ws.home(), Protocol::Anthropic, "http://127.0.0.1:9/");
    let toml = std::fs::read_to_string(path).unwrap();
    assert_eq!(
        toml,
        "[[models]]\nid = \"test\"\nprovider = \"anthropic\"\nmodel = \"scripted\"\n\
         url = \"http://127.0.0.1:9/\"\napi_key_env = \"LINGGEN_TEST_KEY\"\ncontext_window = 8192\n"
    );
    let path = write_config_with(
        ws.root(),
        Protocol::Ollama,
        "http://127.0.0.1:9",
        "timeout_secs = 2",
    );
    let toml = std::fs::read_to_string(path).unwrap();
    assert!(!toml.contains("api_key_env"));
    assert!(toml.contains("provider = \"ollama\"\n"));
    assert!(toml.ends_with("context_window = 8192\ntimeout_secs = 2\n"));
}

#[test]
fn linggen_cmd_isolates_the_child_environment() {
    let ws = Workspace::new();
    let cmd = ws.cmd();
    assert_eq!(cmd.get_current_dir(), Some(ws.root()));
    let envs: Vec<(String, Option<String>)> = cmd
        .get_envs()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.map(|v| v.to_string_lossy().into_owned()),
            )
        })
        .collect();
    assert!(envs.contains(&(
        "LINGGEN_HOME".into(),
        Some(ws.home().to_string_lossy().into_owned())
    )));
    assert!(envs.contains(&(TEST_KEY_ENV.into(), Some(TEST_KEY.into()))));
    for (name, _) in std::env::vars() {
        if name.starts_with("LINGGEN_") && name != "LINGGEN_HOME" && name != TEST_KEY_ENV
            || name == "OLLAMA_HOST"
        {
            assert!(
                envs.contains(&(name.clone(), None)),
                "{name} is not cleared"
            );
        }
    }
}

#[test]
fn markdown_corpus_is_deterministic_with_closed_fences() {
    let text = markdown_corpus(1 << 20);
    assert!(text.len() >= 1 << 20);
    assert!(text.len() < (1 << 20) + 2048);
    assert_eq!(text.matches("```").count() % 2, 0);
    assert!(
        !text.is_ascii(),
        "multi-byte characters exercise split UTF-8"
    );
    assert_eq!(text, markdown_corpus(1 << 20));
}

// ---------------------------------------------------------------------------------------
// Pairing: the cloud APIs' rule that every tool call is answered at once

/// A history whose last call has no result, and one whose result answers no call, are
/// rejected with 400 the way OpenAI and Anthropic reject them; a paired one is served.
#[tokio::test]
async fn unpaired_tool_calls_are_rejected_like_the_cloud_apis_do() {
    let openai_call = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": "{}"}}
    ]});
    let openai_result = json!({"role": "tool", "tool_call_id": "call_1", "content": "ok"});
    let anthropic_call = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}
    ]});
    let anthropic_result = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}
    ]});
    let user = |text: &str| json!({"role": "user", "content": text});
    for (protocol, call, result, unanswered) in [
        (
            Protocol::OpenAi,
            &openai_call,
            &openai_result,
            "did not have response messages",
        ),
        (
            Protocol::Anthropic,
            &anthropic_call,
            &anthropic_result,
            "without `tool_result` blocks",
        ),
    ] {
        let server = ScriptedServer::start(protocol, vec![Reply::text("served")]).await;
        let with = |messages: Vec<Value>| {
            let mut body = chat_body(protocol, false);
            body["messages"] = json!(messages);
            body
        };
        let cases = [
            (vec![user("a"), call.clone(), user("b")], unanswered),
            (vec![user("a"), call.clone()], unanswered),
            (vec![user("a"), result.clone()], "tool"),
        ];
        for (messages, needle) in cases {
            let response = post(&server, &with(messages)).await;
            assert_eq!(response.status(), 400, "{protocol:?}");
            let text = response.text().await.unwrap();
            assert!(text.contains(needle), "{protocol:?}: {text}");
        }
        let paired = with(vec![user("a"), call.clone(), result.clone(), user("b")]);
        assert_eq!(post(&server, &paired).await.status(), 200, "{protocol:?}");
    }
}
