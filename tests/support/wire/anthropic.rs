//! Anthropic Messages: named SSE events from `message_start` to `message_stop`, one
//! content block per thinking / text / tool use.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{
    Route, ServerOptions, Stream, Turn, argument_fragments, arguments_value, deltas, sse_event,
};

/// Real signatures are opaque base64; clients must pass them back untouched.
const SIGNATURE: &str = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds";

pub(super) fn route(method: &str, path: &str, options: &ServerOptions) -> Route {
    match method {
        "POST" if path.ends_with("/v1/messages") => Route::Chat,
        "GET" if path.ends_with("/v1/models") => Route::Json(json!({
            "data": [{
                "type": "model",
                "id": options.model,
                "display_name": "Scripted",
                "created_at": "2025-01-01T00:00:00Z",
            }],
            "has_more": false,
            "first_id": options.model,
            "last_id": options.model,
        })),
        _ => Route::NotFound,
    }
}

/// The two checks the real API makes that a client is most likely to get wrong.
pub(super) fn validate(headers: &BTreeMap<String, String>, body: &Value) -> Result<(), String> {
    if !headers.contains_key("anthropic-version") {
        return Err("anthropic-version: header is required".to_string());
    }
    if !body.get("max_tokens").is_some_and(Value::is_u64) {
        return Err("max_tokens: Field required".to_string());
    }
    Ok(())
}

fn stop_reason(turn: &Turn) -> &'static str {
    super::stop_word(turn, ["max_tokens", "end_turn", "tool_use"])
}

fn shows_text_block(turn: &Turn) -> bool {
    let reply = turn.reply;
    !reply.text.is_empty() || (reply.reasoning.is_none() && reply.tool_calls.is_empty())
}

pub(super) fn stream(turn: &Turn) -> Stream {
    let reply = turn.reply;
    let mut events = vec![sse_event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": turn.response_id,
            "type": "message",
            "role": "assistant",
            "model": turn.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": {
                "input_tokens": turn.usage.input_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 1,
            },
        }}),
    )];
    let mut blocks = Blocks {
        events: &mut events,
        next_index: 0,
    };
    if let Some(reasoning) = &reply.reasoning {
        let index = blocks.start(json!({"type": "thinking", "thinking": "", "signature": ""}));
        for piece in deltas(reasoning, reply.delta_bytes) {
            blocks.delta(index, json!({"type": "thinking_delta", "thinking": piece}));
        }
        blocks.delta(
            index,
            json!({"type": "signature_delta", "signature": SIGNATURE}),
        );
        blocks.stop(index);
    }
    if shows_text_block(turn) {
        let index = blocks.start(json!({"type": "text", "text": ""}));
        for piece in deltas(&reply.text, reply.delta_bytes) {
            blocks.delta(index, json!({"type": "text_delta", "text": piece}));
        }
        blocks.stop(index);
    }
    for (call, id) in reply.tool_calls.iter().zip(&turn.tool_ids) {
        let index =
            blocks.start(json!({"type": "tool_use", "id": id, "name": call.name, "input": {}}));
        // The real API opens every tool input with an empty fragment.
        blocks.delta(
            index,
            json!({"type": "input_json_delta", "partial_json": ""}),
        );
        for fragment in argument_fragments(&call.arguments) {
            blocks.delta(
                index,
                json!({"type": "input_json_delta", "partial_json": fragment}),
            );
        }
        blocks.stop(index);
    }
    events.push(sse_event(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(turn), "stop_sequence": null},
            "usage": {"output_tokens": turn.usage.output_tokens},
        }),
    ));
    events.push(sse_event("message_stop", &json!({"type": "message_stop"})));
    // message_start, the first content_block_start and the ping.
    Stream { events, prelude: 3 }
}

/// Numbers content blocks and puts the single `ping` right after the first block opens,
/// where the real API sends it.
struct Blocks<'a> {
    events: &'a mut Vec<Vec<u8>>,
    next_index: usize,
}

impl Blocks<'_> {
    fn start(&mut self, content_block: Value) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        self.events.push(sse_event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": content_block}),
        ));
        if index == 0 {
            self.events
                .push(sse_event("ping", &json!({"type": "ping"})));
        }
        index
    }

    fn delta(&mut self, index: usize, delta: Value) {
        self.events.push(sse_event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        ));
    }

    fn stop(&mut self, index: usize) {
        self.events.push(sse_event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
}

pub(super) fn complete(turn: &Turn) -> Value {
    let reply = turn.reply;
    let mut content = Vec::new();
    if let Some(reasoning) = &reply.reasoning {
        content.push(json!({"type": "thinking", "thinking": reasoning, "signature": SIGNATURE}));
    }
    if shows_text_block(turn) {
        content.push(json!({"type": "text", "text": reply.text}));
    }
    for (call, id) in reply.tool_calls.iter().zip(&turn.tool_ids) {
        content.push(json!({"type": "tool_use", "id": id, "name": call.name, "input": arguments_value(&call.arguments)}));
    }
    json!({
        "id": turn.response_id,
        "type": "message",
        "role": "assistant",
        "model": turn.model,
        "content": content,
        "stop_reason": stop_reason(turn),
        "stop_sequence": null,
        "usage": {
            "input_tokens": turn.usage.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": turn.usage.output_tokens,
        },
    })
}

pub(super) fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

pub(super) fn stream_error_event(message: &str) -> Vec<u8> {
    sse_event("error", &error_body(529, message))
}
