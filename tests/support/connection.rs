//! One connection: read the request, record it, answer it from the script.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use super::http::{self, ChunkedBody, HttpRequest};
use super::script::{Fault, Reply, Step};
use super::server::{RecordedRequest, State};
use super::wire::{self, Route, Turn};

pub(super) async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(handle_connection(stream, Arc::clone(&state)));
            }
            Err(err) => eprintln!("scripted server: accept failed: {err}"),
        }
    }
}

async fn handle_connection(mut stream: TcpStream, state: Arc<State>) {
    let _ = stream.set_nodelay(true);
    let request = match http::read_request(&mut stream).await {
        Ok(Some(request)) => request,
        Ok(None) => return,
        Err(err) => {
            let message = format!("scripted server could not read the request: {err}");
            let _ = http::write_full(
                &mut stream,
                400,
                "text/plain; charset=utf-8",
                message.as_bytes(),
                &[],
            )
            .await;
            return;
        }
    };
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    state.record(RecordedRequest {
        method: request.method.clone(),
        path: request.path.clone(),
        query: request.query.clone(),
        headers: request.headers.clone(),
        body: body.clone(),
        raw_body: String::from_utf8_lossy(&request.body).into_owned(),
    });
    if respond(&mut stream, &state, &request, &body).await.is_err() {
        state.client_disconnects.fetch_add(1, Ordering::SeqCst);
    }
    let _ = stream.shutdown().await;
}

async fn respond(
    stream: &mut TcpStream,
    state: &State,
    request: &HttpRequest,
    body: &Value,
) -> std::io::Result<()> {
    let protocol = state.protocol();
    match wire::route(
        protocol,
        &request.method,
        &request.path,
        body,
        &state.options,
    ) {
        Route::Chat => {
            let now = state.concurrent.fetch_add(1, Ordering::SeqCst) + 1;
            state.max_concurrent.fetch_max(now, Ordering::SeqCst);
            let answered = serve_chat(stream, state, request, body).await;
            state.concurrent.fetch_sub(1, Ordering::SeqCst);
            answered
        }
        Route::Json(value) => http::write_json(stream, 200, &value, &[]).await,
        Route::Text(text) => {
            http::write_full(
                stream,
                200,
                "text/plain; charset=utf-8",
                text.as_bytes(),
                &[],
            )
            .await
        }
        Route::NotFound => {
            let message = format!(
                "scripted {protocol:?} server has no route for {} {}",
                request.method, request.path
            );
            write_error(stream, state, 404, &message, &[]).await
        }
    }
}

async fn write_error(
    stream: &mut TcpStream,
    state: &State,
    status: u16,
    message: &str,
    extra_headers: &[(&str, String)],
) -> std::io::Result<()> {
    let protocol = state.protocol();
    let mut headers = wire::request_id_header(protocol, state.seed());
    headers.extend(extra_headers.iter().cloned());
    http::write_json(
        stream,
        status,
        &wire::error_body(protocol, status, message),
        &headers,
    )
    .await
}

async fn serve_chat(
    stream: &mut TcpStream,
    state: &State,
    request: &HttpRequest,
    body: &Value,
) -> std::io::Result<()> {
    if body.is_null() {
        return write_error(stream, state, 400, "the request body is not JSON", &[]).await;
    }
    if let Err(message) = wire::validate(state.protocol(), request, body) {
        return write_error(stream, state, 400, &message, &[]).await;
    }
    // The window is checked before anything is served, as llama.cpp tokenizes first.
    let mut counted = None;
    if let Some(window) = state.options.window {
        let tokens = window.count(body);
        if tokens > u64::from(window.n_ctx) {
            state.rejected_prompts.lock().unwrap().push(tokens);
            let raw = window.rejection(tokens);
            return http::write_full(stream, 400, "application/json", raw.as_bytes(), &[]).await;
        }
        state.answered_prompts.lock().unwrap().push(tokens);
        counted = Some(tokens as u32);
    }
    let step = match state.options.responder.and_then(|answer| answer(body)) {
        Some(reply) => Some(Step::Reply(reply)),
        None => state.next_step(),
    };
    let step = step.map(|step| match (step, counted) {
        // Usage reports the server's count of the prompt, as llama.cpp's does.
        (Step::Reply(mut reply) | Step::Repeat(mut reply), Some(tokens)) => {
            let output_tokens = (reply.output_bytes() / 4).max(1) as u32;
            reply.usage = Some(super::Usage {
                input_tokens: tokens,
                output_tokens,
            });
            Step::Reply(reply)
        }
        (step, _) => step,
    });
    let Some(step) = step else {
        let message = format!(
            "scripted server: script exhausted: chat request #{} ({} {}) has no scripted step; \
             the test scripted {} step(s)",
            state.chat_requests_seen(),
            request.method,
            request.path,
            state.scripted_steps,
        );
        eprintln!("{message}");
        return write_error(stream, state, 500, &message, &[]).await;
    };
    match step {
        Step::Reply(reply) | Step::Repeat(reply) => {
            send_reply(stream, state, request, body, &reply).await
        }
        Step::Fault(fault) => send_fault(stream, state, request, body, &fault).await,
    }
}

async fn send_reply(
    stream: &mut TcpStream,
    state: &State,
    request: &HttpRequest,
    body: &Value,
    reply: &Reply,
) -> std::io::Result<()> {
    let protocol = state.protocol();
    let turn = state.turn(reply, request, body);
    let headers = wire::request_id_header(protocol, state.seed());
    if !wire::wants_stream(protocol, body) {
        return http::write_json(stream, 200, &wire::complete(protocol, &turn), &headers).await;
    }
    let rendered = wire::stream(protocol, &turn);
    let mut out = ChunkedBody::start(
        stream,
        wire::stream_content_type(protocol),
        &headers,
        reply.write_bytes,
    )
    .await?;
    for (i, event) in rendered.events.iter().enumerate() {
        if let Some(delay) = reply.chunk_delay.filter(|_| i > 0) {
            tokio::time::sleep(delay).await;
        }
        out.send(event).await?;
    }
    out.finish().await
}

/// The answer every mid-stream fault starts out as.
const CUT_SHORT_TEXT: &str = "This answer is cut short by a scripted fault before it can finish.";

async fn send_fault(
    stream: &mut TcpStream,
    state: &State,
    request: &HttpRequest,
    body: &Value,
    fault: &Fault,
) -> std::io::Result<()> {
    let breakage = match fault {
        Fault::Status(status, raw) => {
            return http::write_full(stream, *status, "application/json", raw.as_bytes(), &[])
                .await;
        }
        Fault::ApiError { status, message } => {
            return write_error(stream, state, *status, message, &[]).await;
        }
        Fault::RateLimited { retry_after_secs } => {
            let retry_after = [("Retry-After", retry_after_secs.to_string())];
            let message = "Rate limit reached for requests (scripted). Please try again later.";
            return write_error(stream, state, 429, message, &retry_after).await;
        }
        Fault::Hang => return std::future::pending().await,
        Fault::DisconnectMidStream => Breakage::Disconnect,
        Fault::StallMidStream => Breakage::Stall,
        Fault::MalformedChunk => Breakage::Malformed,
        Fault::StreamError(message) => Breakage::ErrorEvent(message),
    };
    let reply = Reply::text(CUT_SHORT_TEXT);
    let turn = state.turn(&reply, request, body);
    if wire::wants_stream(state.protocol(), body) {
        break_stream(stream, state, &turn, breakage).await
    } else {
        break_body(stream, state, &turn, breakage).await
    }
}

/// How a response that started well goes wrong.
enum Breakage<'a> {
    /// Close the connection part-way.
    Disconnect,
    /// Go silent part-way, connection open.
    Stall,
    /// Send something that does not parse, then carry on.
    Malformed,
    /// Report an error in-band and end.
    ErrorEvent(&'a str),
}

/// A mid-stream fault inside an otherwise faithful stream.
async fn break_stream(
    stream: &mut TcpStream,
    state: &State,
    turn: &Turn<'_>,
    breakage: Breakage<'_>,
) -> std::io::Result<()> {
    let protocol = state.protocol();
    let rendered = wire::stream(protocol, turn);
    let first_content = rendered.prelude + 1;
    let headers = wire::request_id_header(protocol, state.seed());
    let mut out =
        ChunkedBody::start(stream, wire::stream_content_type(protocol), &headers, None).await?;
    match breakage {
        Breakage::Disconnect | Breakage::Stall => {
            for event in &rendered.events[..first_content + 1] {
                out.send(event).await?;
            }
            if matches!(breakage, Breakage::Stall) {
                std::future::pending::<()>().await;
            }
            // Return without the terminating chunk: the caller closes the socket.
            Ok(())
        }
        Breakage::Malformed => {
            let (before, after) = rendered.events.split_at(first_content);
            for event in before {
                out.send(event).await?;
            }
            out.send(&wire::malformed_event(protocol)).await?;
            for event in after {
                out.send(event).await?;
            }
            out.finish().await
        }
        Breakage::ErrorEvent(message) => {
            for event in &rendered.events[..first_content] {
                out.send(event).await?;
            }
            out.send(&wire::stream_error_event(protocol, message))
                .await?;
            out.finish().await
        }
    }
}

/// The same faults for a client that asked for a complete (non-streaming) body.
async fn break_body(
    stream: &mut TcpStream,
    state: &State,
    turn: &Turn<'_>,
    breakage: Breakage<'_>,
) -> std::io::Result<()> {
    let full = wire::complete(state.protocol(), turn)
        .to_string()
        .into_bytes();
    let half = &full[..full.len() / 2];
    match breakage {
        Breakage::Disconnect | Breakage::Stall => {
            let headers = [
                ("Content-Type", "application/json".to_string()),
                ("Content-Length", full.len().to_string()),
            ];
            http::write_head(stream, 200, &headers).await?;
            stream.write_all(half).await?;
            if matches!(breakage, Breakage::Stall) {
                std::future::pending::<()>().await;
            }
            Ok(())
        }
        Breakage::Malformed => http::write_full(stream, 200, "application/json", half, &[]).await,
        Breakage::ErrorEvent(message) => write_error(stream, state, 500, message, &[]).await,
    }
}
