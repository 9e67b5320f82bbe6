//! OpenAI chat completions: `data: {chunk}` SSE ending in `data: [DONE]`.

use serde_json::{Value, json};

use super::{Route, ServerOptions, Stream, Turn, argument_fragments, deltas, sse_data};

const FINGERPRINT: &str = "fp_scripted";

pub(super) fn route(method: &str, path: &str, options: &ServerOptions) -> Route {
    match method {
        "POST" if path.ends_with("/chat/completions") => Route::Chat,
        "GET" if path.ends_with("/models") => Route::Json(json!({
            "object": "list",
            "data": [{
                "id": options.model,
                "object": "model",
                "created": 1_735_689_600,
                "owned_by": "scripted",
                // vLLM's field; OpenAI itself does not publish context sizes here.
                "max_model_len": options.context_length,
            }],
        })),
        // llama.cpp's server: its context size, next to `/v1`.
        "GET" if path == "/props" => Route::Json(json!({
            "default_generation_settings": {"n_ctx": options.context_length},
        })),
        _ => Route::NotFound,
    }
}

fn finish_reason(turn: &Turn) -> &'static str {
    super::stop_word(turn, ["length", "stop", "tool_calls"])
}

fn usage(turn: &Turn) -> Value {
    let (input, output) = (turn.usage.input_tokens, turn.usage.output_tokens);
    json!({
        "prompt_tokens": input,
        "completion_tokens": output,
        "total_tokens": input + output,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    })
}

pub(super) fn stream(turn: &Turn) -> Stream {
    let include_usage = turn
        .request
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let chunk = |delta: Value, finish_reason: Value| {
        let mut chunk = json!({
            "id": turn.response_id,
            "object": "chat.completion.chunk",
            "created": turn.created_unix,
            "model": turn.model,
            "system_fingerprint": FINGERPRINT,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        });
        if include_usage {
            // With include_usage every chunk carries `usage: null` until the last one.
            chunk["usage"] = Value::Null;
        }
        sse_data(&chunk)
    };
    let reply = turn.reply;
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        Value::Null,
    )];
    if let Some(reasoning) = &reply.reasoning {
        for piece in deltas(reasoning, reply.delta_bytes) {
            events.push(chunk(json!({"reasoning_content": piece}), Value::Null));
        }
    }
    for piece in deltas(&reply.text, reply.delta_bytes) {
        events.push(chunk(json!({"content": piece}), Value::Null));
    }
    for (index, (call, id)) in reply.tool_calls.iter().zip(&turn.tool_ids).enumerate() {
        events.push(chunk(
            json!({"tool_calls": [{
                "index": index,
                "id": id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }]}),
            Value::Null,
        ));
        for fragment in argument_fragments(&call.arguments) {
            events.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
                Value::Null,
            ));
        }
    }
    events.push(chunk(json!({}), json!(finish_reason(turn))));
    if include_usage {
        events.push(sse_data(&json!({
            "id": turn.response_id,
            "object": "chat.completion.chunk",
            "created": turn.created_unix,
            "model": turn.model,
            "system_fingerprint": FINGERPRINT,
            "choices": [],
            "usage": usage(turn),
        })));
    }
    events.push(b"data: [DONE]\n\n".to_vec());
    Stream { events, prelude: 1 }
}

pub(super) fn complete(turn: &Turn) -> Value {
    let reply = turn.reply;
    let content = if reply.text.is_empty() && !reply.tool_calls.is_empty() {
        Value::Null
    } else {
        json!(reply.text)
    };
    let mut message = json!({"role": "assistant", "content": content, "refusal": null});
    if let Some(reasoning) = &reply.reasoning {
        message["reasoning_content"] = json!(reasoning);
    }
    if !reply.tool_calls.is_empty() {
        let calls: Vec<Value> = reply
            .tool_calls
            .iter()
            .zip(&turn.tool_ids)
            .map(|(call, id)| {
                json!({"id": id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}})
            })
            .collect();
        message["tool_calls"] = json!(calls);
    }
    json!({
        "id": turn.response_id,
        "object": "chat.completion",
        "created": turn.created_unix,
        "model": turn.model,
        "system_fingerprint": FINGERPRINT,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason(turn)}],
        "usage": usage(turn),
    })
}

pub(super) fn error_body(status: u16, message: &str) -> Value {
    let (kind, code) = match status {
        401 => ("invalid_request_error", json!("invalid_api_key")),
        429 => ("requests", json!("rate_limit_exceeded")),
        400..=499 => ("invalid_request_error", Value::Null),
        _ => ("server_error", Value::Null),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

pub(super) fn stream_error_event(message: &str) -> Vec<u8> {
    sse_data(&error_body(500, message))
}
