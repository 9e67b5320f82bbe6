//! One browser's event stream. Each client has its own small buffer and its own task, so a
//! slow or stalled browser only ever delays itself: when it falls too far behind, it is told
//! to resynchronise (`Resync`) instead of holding events back for everyone else.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use super::Body;
use super::mirror::Mirror;
use crate::session::{Envelope, Event};

/// Frames written but not yet taken by the connection. Small on purpose: the mirror's
/// fan-out channel is the real buffer, and lagging behind it triggers a resync.
pub(super) const CLIENT_BUFFER: usize = 16;

/// Proxies and browsers drop a silent connection; a comment line keeps it open.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Tokens merged into one frame at most, so one frame stays small.
const COALESCE_MAX: usize = 256;

/// The response body of `GET /api/events`: replay after `after`, then live events.
/// `permit` is this stream's place among the server's event streams, given back when the
/// client goes away.
pub fn event_stream(
    mirror: Arc<Mirror>,
    after: Option<u64>,
    shutdown: CancellationToken,
    permit: super::server::StreamPermit,
) -> Body {
    let (tx, rx) = mpsc::channel::<Bytes>(CLIENT_BUFFER);
    tokio::spawn(async move {
        tokio::select! {
            _ = pump(&mirror, after, &tx) => {}
            _ = shutdown.cancelled() => {}
            // The client went away: stop watching at once, not at the next keep-alive.
            _ = tx.closed() => {}
        }
    });
    let frames = futures_util::stream::unfold((rx, permit), |(mut rx, permit)| async move {
        let chunk = rx.recv().await?;
        Some((Ok(Frame::data(chunk)), (rx, permit)))
    });
    StreamBody::new(frames).boxed()
}

/// Why the client must fetch the state again.
enum Resync {
    Behind,
    Unavailable,
    Ended,
}

impl Resync {
    fn reason(&self) -> &'static str {
        match self {
            Resync::Behind => "this page fell behind the live stream",
            Resync::Unavailable => "the events after your last one are no longer kept",
            Resync::Ended => "the shared session ended or was replaced",
        }
    }
}

/// Writes the stream until the client goes away or must resynchronise.
pub(super) async fn pump(mirror: &Mirror, after: Option<u64>, tx: &mpsc::Sender<Bytes>) {
    let attached = mirror.attach(after);
    if attached.resync {
        let _ = tx.send(resync_frame(Resync::Unavailable)).await;
        return;
    }
    // Opens the stream at once, so the browser shows "connected" before the first event.
    if tx
        .send(Bytes::from_static(b": connected\n\n"))
        .await
        .is_err()
    {
        return;
    }
    for envelope in &attached.replay {
        if tx.send(frame(envelope.seq, &envelope.event)).await.is_err() {
            return;
        }
    }
    let mut live = attached.live;
    let mut keep_alive =
        tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
    // Set when coalescing pulled an event that belongs in the next frame.
    let mut held: Option<Arc<Envelope>> = None;
    loop {
        let next = match held.take() {
            Some(envelope) => Ok(envelope),
            None => tokio::select! {
                biased;
                received = live.recv() => received.map_err(Resync::from),
                _ = mirror.closed.cancelled() => drained(&mut live),
                _ = keep_alive.tick() => {
                    if tx.send(Bytes::from_static(b": keep-alive\n\n")).await.is_err() {
                        return;
                    }
                    continue;
                }
            },
        };
        let chunk = match next {
            Ok(envelope) => match coalesce(&envelope, &mut live, &mut held) {
                Ok(chunk) => chunk,
                Err(resync) => resync_frame(resync),
            },
            Err(resync) => resync_frame(resync),
        };
        let is_resync = chunk.starts_with(b"data: {\"type\":\"Resync\"");
        if tx.send(chunk).await.is_err() || is_resync {
            return;
        }
    }
}

/// After the session ended: the events still queued for this client, then the end.
fn drained(live: &mut broadcast::Receiver<Arc<Envelope>>) -> Result<Arc<Envelope>, Resync> {
    match live.try_recv() {
        Ok(envelope) => Ok(envelope),
        Err(broadcast::error::TryRecvError::Lagged(_)) => Err(Resync::Behind),
        Err(_) => Err(Resync::Ended),
    }
}

impl From<broadcast::error::RecvError> for Resync {
    fn from(e: broadcast::error::RecvError) -> Self {
        match e {
            broadcast::error::RecvError::Lagged(_) => Resync::Behind,
            broadcast::error::RecvError::Closed => Resync::Ended,
        }
    }
}

/// One frame for `envelope`; a token also takes the tokens of the same response that are
/// already waiting, so a fast stream costs one frame per burst rather than per token.
fn coalesce(
    first: &Arc<Envelope>,
    live: &mut broadcast::Receiver<Arc<Envelope>>,
    held: &mut Option<Arc<Envelope>>,
) -> Result<Bytes, Resync> {
    let Event::Token {
        run_id,
        agent_id,
        token,
        thinking,
        done: false,
    } = &first.event
    else {
        return Ok(frame(first.seq, &first.event));
    };
    let mut text = token.clone();
    let mut last = first.seq;
    for _ in 0..COALESCE_MAX {
        match live.try_recv() {
            Ok(next) => match &next.event {
                Event::Token {
                    run_id: r,
                    token: t,
                    thinking: th,
                    done: false,
                    ..
                } if r == run_id && th == thinking => {
                    text.push_str(t);
                    last = next.seq;
                }
                _ => {
                    *held = Some(next);
                    break;
                }
            },
            Err(broadcast::error::TryRecvError::Lagged(_)) => return Err(Resync::Behind),
            Err(_) => break,
        }
    }
    let merged = Event::Token {
        run_id: run_id.clone(),
        agent_id: agent_id.clone(),
        token: text,
        thinking: *thinking,
        done: false,
    };
    Ok(frame(last, &merged))
}

/// `id: N` and the event as one `data:` line (JSON never contains a raw newline).
pub fn frame(seq: u64, event: &Event) -> Bytes {
    let json = serde_json::to_string(event).unwrap_or_else(|e| {
        format!(r#"{{"type":"Error","message":"cannot encode an event: {e}"}}"#)
    });
    Bytes::from(format!("id: {seq}\ndata: {json}\n\n"))
}

fn resync_frame(why: Resync) -> Bytes {
    Bytes::from(format!(
        "data: {{\"type\":\"Resync\",\"reason\":\"{}\"}}\n\n",
        why.reason()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A terminal attached to `linggen serve` reads these frames back: the `id:` line is
    /// the sequence number, the `data:` line the event exactly as the session published it.
    #[test]
    fn a_frame_reads_back_as_the_event_and_its_seq() {
        let event = Event::ApprovalResolved {
            id: "a1".into(),
            decision: crate::session::Decision::Deny {
                reason: Some("not now".into()),
            },
            by: "web".into(),
        };
        let bytes = frame(42, &event);
        let text = std::str::from_utf8(&bytes).unwrap();
        let (id, data) = text
            .strip_suffix("\n\n")
            .and_then(|t| t.split_once('\n'))
            .unwrap();
        assert_eq!(id, "id: 42");
        let back: Event = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(back, event);
    }
}
