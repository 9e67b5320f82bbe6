//! AWS Bedrock ConverseStream: `POST /model/{id}/converse-stream`, answered in AWS's binary
//! event-stream framing. Every request must carry a valid SigV4 signature for the test
//! credentials below (checked here from the raw request, independently of the client's
//! signer), or the test bearer key.

use ring::{digest, hmac};
use serde_json::{Value, json};

use super::super::http::HttpRequest;
use super::{Route, ServerOptions, Stream, Turn, argument_fragments, arguments_value, deltas};

/// The credentials a test gives linggen through the AWS variables.
pub const ACCESS_KEY_ID: &str = "AKIDSCRIPTEDTEST";
pub const SECRET_ACCESS_KEY: &str = "scripted/Secret+Key/for/tests";
pub const SESSION_TOKEN: &str = "scripted-session-token//with+odd=chars";
pub const BEARER_KEY: &str = "bedrock-api-key-scripted";
/// The region the scripted endpoint says it serves.
pub const REGION: &str = "eu-central-1";
/// The model id as configured; its `:` must arrive encoded as `%3A`.
pub const MODEL_ID: &str = "anthropic.claude-3-haiku-20240307-v1:0";

pub(super) fn route(method: &str, path: &str, _options: &ServerOptions) -> Route {
    match method {
        "POST" if path.ends_with("/converse-stream") => Route::Chat,
        _ => Route::NotFound,
    }
}

/// Rejects what Bedrock rejects before generating: a wrong path encoding, a missing or
/// wrong signature, a request without messages in Converse's shape.
pub(super) fn validate(request: &HttpRequest, body: &Value) -> Result<(), String> {
    let expected_path = format!("/model/{}/converse-stream", MODEL_ID.replace(':', "%3A"));
    if request.path != expected_path {
        return Err(format!(
            "path {}: expected {expected_path} (the model id encoded as one segment)",
            request.path
        ));
    }
    let authorization = request
        .headers
        .get("authorization")
        .ok_or("missing Authorization header")?;
    if authorization == &format!("Bearer {BEARER_KEY}") {
        return check_body(body);
    }
    verify_sigv4(request, authorization)?;
    check_body(body)
}

fn check_body(body: &Value) -> Result<(), String> {
    for message in body["messages"].as_array().into_iter().flatten() {
        if !message["content"].is_array() {
            return Err("messages[].content: expected a list of content blocks".into());
        }
    }
    super::pairing::bedrock(body)
}

/// Recomputes the signature from the request as received.
fn verify_sigv4(request: &HttpRequest, authorization: &str) -> Result<(), String> {
    let rest = authorization
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .ok_or("Authorization is neither SigV4 nor the bearer key")?;
    let field = |name: &str| {
        rest.split(", ")
            .find_map(|part| part.strip_prefix(&format!("{name}=")))
            .ok_or(format!("Authorization has no {name}"))
    };
    let credential = field("Credential")?;
    let signed_headers = field("SignedHeaders")?;
    let signature = field("Signature")?;
    let scope: Vec<&str> = credential.split('/').collect();
    let [key_id, date, region, service, "aws4_request"] = scope[..] else {
        return Err(format!("malformed credential scope {credential}"));
    };
    if key_id != ACCESS_KEY_ID {
        return Err(format!("unknown access key {key_id}"));
    }
    if region != REGION || service != "bedrock" {
        return Err(format!(
            "signed for {region}/{service}, expected {REGION}/bedrock"
        ));
    }
    let names: Vec<&str> = signed_headers.split(';').collect();
    for required in ["host", "x-amz-date", "x-amz-security-token"] {
        if !names.contains(&required) {
            return Err(format!("{required} is not signed"));
        }
    }
    let header = |name: &str| {
        request
            .headers
            .get(name)
            .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
            .ok_or(format!("signed header {name} is missing"))
    };
    if header("x-amz-security-token")? != SESSION_TOKEN {
        return Err("wrong session token".into());
    }
    let amz_date = header("x-amz-date")?;
    if !amz_date.starts_with(date) {
        return Err("x-amz-date is not the credential's date".into());
    }
    let mut canonical_headers = String::new();
    for name in &names {
        canonical_headers.push_str(&format!("{name}:{}\n", header(name)?));
    }
    let canonical_request = format!(
        "POST\n{}\n{}\n{canonical_headers}\n{signed_headers}\n{}",
        uri_encode(&request.path, false),
        request.query.as_deref().unwrap_or(""),
        hex(digest::digest(&digest::SHA256, &request.body).as_ref())
    );
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{date}/{region}/{service}/aws4_request\n{}",
        hex(digest::digest(&digest::SHA256, canonical_request.as_bytes()).as_ref())
    );
    let mut key = format!("AWS4{SECRET_ACCESS_KEY}").into_bytes();
    for part in [date, region, service, "aws4_request"] {
        key = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &key), part.as_bytes())
            .as_ref()
            .to_vec();
    }
    let expected = hex(hmac::sign(
        &hmac::Key::new(hmac::HMAC_SHA256, &key),
        string_to_sign.as_bytes(),
    )
    .as_ref());
    if expected != signature {
        return Err(format!(
            "The request signature we calculated does not match the signature you provided. \
             Canonical request:\n{canonical_request}"
        ));
    }
    Ok(())
}

/// Encodes every byte but the unreserved ones (and `/` unless `slash`).
fn uri_encode(text: &str, slash: bool) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            b'/' if !slash => "/".to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn stop_reason(turn: &Turn) -> &'static str {
    super::stop_word(turn, ["max_tokens", "end_turn", "tool_use"])
}

pub(super) fn stream(turn: &Turn) -> Stream {
    let reply = turn.reply;
    let mut events = vec![event("messageStart", json!({"role": "assistant"}))];
    let mut index = 0;
    if let Some(reasoning) = &reply.reasoning {
        for piece in deltas(reasoning, reply.delta_bytes) {
            events.push(event(
                "contentBlockDelta",
                json!({"contentBlockIndex": index, "delta": {"reasoningContent": {"text": piece}}}),
            ));
        }
        events.push(event(
            "contentBlockStop",
            json!({"contentBlockIndex": index}),
        ));
        index += 1;
    }
    if !reply.text.is_empty() || reply.tool_calls.is_empty() {
        for piece in deltas(&reply.text, reply.delta_bytes) {
            events.push(event(
                "contentBlockDelta",
                json!({"contentBlockIndex": index, "delta": {"text": piece}}),
            ));
        }
        events.push(event(
            "contentBlockStop",
            json!({"contentBlockIndex": index}),
        ));
        index += 1;
    }
    for (call, id) in reply.tool_calls.iter().zip(&turn.tool_ids) {
        events.push(event(
            "contentBlockStart",
            json!({"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": id, "name": call.name}}}),
        ));
        for fragment in argument_fragments(&call.arguments) {
            events.push(event(
                "contentBlockDelta",
                json!({"contentBlockIndex": index, "delta": {"toolUse": {"input": fragment}}}),
            ));
        }
        events.push(event(
            "contentBlockStop",
            json!({"contentBlockIndex": index}),
        ));
        index += 1;
    }
    events.push(event(
        "messageStop",
        json!({"stopReason": stop_reason(turn)}),
    ));
    events.push(event(
        "metadata",
        json!({
            "usage": {
                "inputTokens": turn.usage.input_tokens,
                "outputTokens": turn.usage.output_tokens,
                "totalTokens": turn.usage.input_tokens + turn.usage.output_tokens,
            },
            "metrics": {"latencyMs": 12},
        }),
    ));
    Stream { events, prelude: 1 }
}

/// The non-streaming Converse answer (not asked for by linggen; kept for completeness).
pub(super) fn complete(turn: &Turn) -> Value {
    let reply = turn.reply;
    let mut content = vec![json!({"text": reply.text})];
    for (call, id) in reply.tool_calls.iter().zip(&turn.tool_ids) {
        content.push(json!({"toolUse": {"toolUseId": id, "name": call.name, "input": arguments_value(&call.arguments)}}));
    }
    json!({
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason(turn),
        "usage": {"inputTokens": turn.usage.input_tokens, "outputTokens": turn.usage.output_tokens},
    })
}

pub(super) fn error_body(message: &str) -> Value {
    json!({ "message": message })
}

pub(super) fn stream_error_event(message: &str) -> Vec<u8> {
    encode(
        &[
            (":message-type", "exception"),
            (":exception-type", "modelStreamErrorException"),
            (":content-type", "application/json"),
        ],
        json!({ "message": message }).to_string().as_bytes(),
    )
}

/// A frame whose checksum does not match.
pub(super) fn malformed_event() -> Vec<u8> {
    let mut frame = event(
        "contentBlockDelta",
        json!({"contentBlockIndex": 0, "delta": {"text": "oops"}}),
    );
    let last = frame.len() - 1;
    frame[last] ^= 0xff;
    frame
}

fn event(kind: &str, payload: Value) -> Vec<u8> {
    // Real events carry a `p` field of padding so that lengths do not leak content.
    let mut payload = payload;
    payload["p"] = Value::String("abcdefghijklmnopqrstuvwxyzABCDEF".into());
    encode(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// One event-stream message: prelude (lengths and their CRC32), string headers, payload,
/// CRC32 of everything before it; all big-endian.
fn encode(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut encoded = Vec::new();
    for (name, value) in headers {
        encoded.push(name.len() as u8);
        encoded.extend_from_slice(name.as_bytes());
        encoded.push(7);
        encoded.extend_from_slice(&(value.len() as u16).to_be_bytes());
        encoded.extend_from_slice(value.as_bytes());
    }
    let total = 12 + encoded.len() + payload.len() + 4;
    let mut out = Vec::new();
    out.extend_from_slice(&(total as u32).to_be_bytes());
    out.extend_from_slice(&(encoded.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
    out.extend_from_slice(&encoded);
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
    out
}
