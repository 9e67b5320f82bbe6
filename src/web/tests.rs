//! The mirror and the event stream in-process: replay, snapshots, coalescing, and what a
//! stalled browser does (and does not do) to the session.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

use super::mirror::{FANOUT_CAPACITY, Mirror};
use super::sse::{CLIENT_BUFFER, pump};
use crate::llm::Role;
use crate::session::Event;

struct Fixture {
    mirror: Arc<Mirror>,
    events: crate::session::EventBus,
    seq: u64,
    _inputs: mpsc::Receiver<crate::session::input::Sent>,
}

impl Fixture {
    fn new() -> Fixture {
        let (inputs, inputs_rx) = crate::session::Inputs::channel(8);
        let events = crate::session::EventBus::new();
        let rx = events.subscribe_lossless();
        let mirror = Mirror::follow("s1".into(), inputs, &[], "ling", rx);
        Fixture {
            mirror,
            events,
            seq: 0,
            _inputs: inputs_rx,
        }
    }

    fn publish(&mut self, event: Event) {
        self.seq += 1;
        self.events.publish(event);
    }

    async fn settled(&self) {
        for _ in 0..500 {
            if self.mirror.seq() == self.seq {
                return;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        panic!("the mirror did not fold {} events", self.seq);
    }
}

fn token(text: &str) -> Event {
    Event::Token {
        run_id: "r1".into(),
        agent_id: "ling".into(),
        token: text.into(),
        thinking: false,
        done: false,
    }
}

fn warning(i: usize) -> Event {
    Event::Warning {
        message: format!("w{i}"),
    }
}

/// The `data:` JSON of every frame in `chunks`, with its id.
fn frames(chunks: &[Bytes]) -> Vec<(Option<u64>, Value)> {
    let text: String = chunks
        .iter()
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    text.split("\n\n")
        .filter_map(|frame| {
            let mut id = None;
            let mut data = None;
            for line in frame.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = v.parse().ok();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(v).ok();
                }
            }
            data.map(|d| (id, d))
        })
        .collect()
}

async fn read_until_closed(rx: &mut mpsc::Receiver<Bytes>) -> Vec<Bytes> {
    let mut chunks = Vec::new();
    while let Ok(Some(chunk)) = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
        chunks.push(chunk);
    }
    chunks
}

#[tokio::test]
async fn the_snapshot_holds_what_a_late_joiner_needs() {
    let mut f = Fixture::new();
    f.publish(Event::Message {
        run_id: "r1".into(),
        from: "terminal".into(),
        to: "ling".into(),
        role: Role::User,
        content: "hello".into(),
        tool_calls: vec![],
        tool_call_id: None,
        tool_name: None,
        is_error: false,
        images: vec![],
    });
    f.publish(token("Hel"));
    f.publish(token("lo"));
    f.publish(Event::ApprovalRequested {
        id: "a1".into(),
        run_id: "r1".into(),
        tool: "Bash".into(),
        summary: "rm -rf x".into(),
        display: "rm -rf x".into(),
        reason: "not allowlisted".into(),
        diff: None,
        once_only: false,
        always: Vec::new(),
    });
    f.settled().await;
    let snap = f.mirror.snapshot("full");
    assert_eq!(snap["seq"], 4);
    assert_eq!(snap["transcript"].as_array().unwrap().len(), 2);
    assert_eq!(snap["streaming"][0]["text"], "Hello");
    assert_eq!(snap["pending_approvals"][0]["id"], "a1");
    assert!(f.mirror.is_pending("a1"));

    f.publish(Event::ApprovalResolved {
        id: "a1".into(),
        decision: crate::session::Decision::AllowOnce,
        by: "web".into(),
    });
    f.publish(Event::Token {
        run_id: "r1".into(),
        agent_id: "ling".into(),
        token: String::new(),
        thinking: false,
        done: true,
    });
    f.settled().await;
    let snap = f.mirror.snapshot("read_only");
    assert_eq!(snap["access"], "read_only");
    assert!(snap["pending_approvals"].as_array().unwrap().is_empty());
    assert!(snap["streaming"].as_array().unwrap().is_empty());
    assert!(!f.mirror.is_pending("a1"));
}

#[tokio::test]
async fn replay_starts_after_the_last_seen_event_and_unknown_history_resyncs() {
    let mut f = Fixture::new();
    for i in 0..10 {
        f.publish(warning(i));
    }
    f.settled().await;
    let attached = f.mirror.attach(Some(7));
    let seqs: Vec<u64> = attached.replay.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [8, 9, 10]);
    assert!(!attached.resync);
    assert!(f.mirror.attach(Some(10)).replay.is_empty());
    // Ahead of the mirror: the client followed another session.
    assert!(f.mirror.attach(Some(99)).resync);
}

/// A long answer's tokens do not stay in the replay ring (or the snapshot) a second time:
/// a client that was away for more than their budget resynchronises.
#[tokio::test]
async fn the_replay_ring_and_the_snapshot_hold_a_bounded_part_of_a_long_answer() {
    let mut f = Fixture::new();
    let piece = "x".repeat(64 * 1024);
    // 4 MB in 64 events: well under the ring's event count.
    for _ in 0..64 {
        f.publish(token(&piece));
    }
    f.settled().await;
    let kept: usize = f
        .mirror
        .attach(Some(f.seq - 1))
        .replay
        .iter()
        .map(|e| match &e.event {
            Event::Token { token, .. } => token.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(kept, piece.len());
    assert!(f.mirror.attach(Some(1)).resync);
    let snap = f.mirror.snapshot("full");
    let part = &snap["streaming"][0];
    let text = part["text"].as_str().unwrap();
    assert!(text.len() <= crate::session::view::STREAMED_TEXT_LIMIT);
    assert_eq!(
        part["skipped_bytes"].as_u64().unwrap() as usize + text.len(),
        64 * piece.len()
    );
}

#[tokio::test]
async fn tokens_are_coalesced_without_losing_or_reordering_text() {
    let mut f = Fixture::new();
    let (tx, mut rx) = mpsc::channel(CLIENT_BUFFER);
    let mirror = f.mirror.clone();
    let client = tokio::spawn(async move { pump(&mirror, Some(0), &tx).await });
    let words: Vec<String> = (0..500).map(|i| format!("w{i} ")).collect();
    for w in &words {
        f.publish(token(w));
    }
    f.publish(warning(0));
    f.settled().await;
    f.mirror.closed.cancel();
    let chunks = read_until_closed(&mut rx).await;
    client.await.unwrap();
    let frames = frames(&chunks);
    let text: String = frames
        .iter()
        .filter(|(_, d)| d["type"] == "Token")
        .map(|(_, d)| d["token"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(text, words.concat());
    let ids: Vec<u64> = frames.iter().filter_map(|(id, _)| *id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert_eq!(ids.last(), Some(&f.seq));
    // The session ending closes the stream with a resync.
    assert_eq!(frames.last().unwrap().1["type"], "Resync");
}

#[tokio::test]
async fn a_stalled_client_gets_a_resync_and_never_holds_the_session_back() {
    let mut f = Fixture::new();
    let (tx, mut rx) = mpsc::channel(CLIENT_BUFFER);
    let mirror = f.mirror.clone();
    let client = tokio::spawn(async move { pump(&mirror, None, &tx).await });
    while f.mirror.viewers() == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // Nobody reads the client's stream while far more events than it may buffer pass.
    let total = FANOUT_CAPACITY * 3;
    for i in 0..total {
        f.publish(warning(i));
    }
    // The session's side finished at once: the mirror folded every event.
    f.settled().await;
    let chunks = read_until_closed(&mut rx).await;
    client.await.unwrap();
    let frames = frames(&chunks);
    assert!(frames.len() < total, "the client got all {total} events");
    let last = &frames.last().unwrap().1;
    assert_eq!(last["type"], "Resync", "{last}");
    assert!(last["reason"].as_str().unwrap().contains("behind"));
}
