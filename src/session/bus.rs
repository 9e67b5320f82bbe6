//! The event bus. Two kinds of subscribers: lossless ones (the store, the `-p` printer, the
//! terminal, the mirror's fold) get every event, in order, because losing a message there
//! loses data; lossy ones (the mirror's viewers) use a bounded broadcast channel so a slow
//! viewer can never slow the agent down — it falls behind and resynchronises instead.
//!
//! A lossless subscriber's queue is bounded by coalescing, never by waiting: `publish` runs
//! inside the session task, so making it wait for a slow reader (a `-p` pipe nobody drains)
//! would stall the agent and a runtime thread. Once [`COALESCE_AFTER`] events wait, a
//! `Token` that continues the waiting tail (same run, agent and kind, neither `done`) is
//! appended to it instead of queued: no text is lost or reordered, the reader just gets
//! fewer, larger pieces. Every other event is queued; those come at the pace of the
//! session's work (a message, a tool call, a status change), not of the model's stream, so
//! a stalled reader holds at most `COALESCE_AFTER` events plus, after each later event, one
//! growing token piece — no more text than the conversation itself holds.
//!
//! One reader may instead set the pace: the terminal ([`EventBus::subscribe_pacing`]). Its
//! renderer can be slower than a fast local server streams, and the text it has not drawn
//! yet would otherwise wait in its queue, a second copy of the answer in memory. While more
//! than [`PACE_BYTES`] of streamed text wait for it, [`EventBus::is_behind`] says so and the
//! model call stops reading the response (see `ask::follow`) until the reader is back
//! under the bound: the server's stream waits in the socket instead. `publish` itself still
//! never waits, and readers that are not ours to pace (a `-p` pipe, the mirror) never slow
//! the session down.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use tokio::sync::{Notify, broadcast};

use super::event::Event;

use crate::sync::lock;

const BROADCAST_CAPACITY: usize = 4096;

/// Waiting events in a lossless queue past which continuing tokens are coalesced. Far above
/// what a reader that keeps up ever holds (the batcher publishes at most a token a frame).
pub const COALESCE_AFTER: usize = 256;

/// Bytes of streamed text a pacing reader may have waiting before the model's stream pauses
/// for it: many frames of text, so the pause only happens when the reader truly cannot keep
/// up, never because of one slow redraw.
pub const PACE_BYTES: usize = 256 * 1024;

/// An event with its sequence number (the SSE `id:`). A coalesced `Token` carries the
/// number of the last piece in it, so numbers rise but may skip.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    pub seq: u64,
    pub event: Event,
}

#[derive(Clone)]
pub struct EventBus {
    inner: Arc<Inner>,
}

struct Inner {
    seq: AtomicU64,
    broadcast: broadcast::Sender<Arc<Envelope>>,
    lossless: Mutex<Vec<Lossless>>,
}

/// A lossless subscriber and the events it wants. Dropping it (on [`EventBus::close`], or
/// with the bus) ends the subscription once its reader has drained what waits.
struct Lossless {
    queue: Arc<Queue>,
    wants: fn(&Event) -> bool,
    /// The model's stream waits for this reader (see the module doc).
    paces: bool,
}

impl Drop for Lossless {
    fn drop(&mut self) {
        self.queue.lock().closed = true;
        self.queue.wake();
    }
}

/// One lossless subscriber's waiting events, read by a task (`recv`) or a thread
/// (`blocking_recv`, the store writer).
#[derive(Default)]
struct Queue {
    waiting: Mutex<Waiting>,
    task: Notify,
    thread: Condvar,
    /// Told when the reader takes an event and is back under [`PACE_BYTES`].
    drained: Notify,
}

#[derive(Default)]
struct Waiting {
    events: VecDeque<Arc<Envelope>>,
    /// No more events will come.
    closed: bool,
    /// The reader is gone; the bus forgets this queue.
    abandoned: bool,
    /// Bytes of token text in `events`.
    token_bytes: usize,
}

impl Waiting {
    fn pop(&mut self) -> Option<Arc<Envelope>> {
        let envelope = self.events.pop_front()?;
        self.token_bytes = self.token_bytes.saturating_sub(token_len(&envelope.event));
        Some(envelope)
    }
}

fn token_len(event: &Event) -> usize {
    match event {
        Event::Token { token, .. } => token.len(),
        _ => 0,
    }
}

impl Queue {
    /// A poisoned lock only means a thread panicked mid-push or mid-pop; the queue is
    /// still valid, so keep going rather than dropping events.
    fn lock(&self) -> MutexGuard<'_, Waiting> {
        lock(&self.waiting)
    }

    fn wake(&self) {
        self.task.notify_one();
        self.thread.notify_one();
    }

    /// Takes the next event, telling a paused stream when the reader has caught up.
    fn take(&self, waiting: &mut Waiting) -> Option<Arc<Envelope>> {
        let envelope = waiting.pop()?;
        if waiting.token_bytes <= PACE_BYTES && token_len(&envelope.event) > 0 {
            self.drained.notify_waiters();
        }
        Some(envelope)
    }

    fn is_behind(&self) -> bool {
        let waiting = self.lock();
        !waiting.abandoned && waiting.token_bytes > PACE_BYTES
    }

    /// Queues (or coalesces) `envelope`; false once the reader is gone.
    fn push(&self, envelope: &Arc<Envelope>) -> bool {
        let mut waiting = self.lock();
        if waiting.abandoned {
            return false;
        }
        let coalesced = waiting.events.len() >= COALESCE_AFTER
            && waiting
                .events
                .back_mut()
                .is_some_and(|tail| coalesce(tail, envelope));
        if !coalesced {
            waiting.events.push_back(envelope.clone());
        }
        waiting.token_bytes += token_len(&envelope.event);
        drop(waiting);
        self.wake();
        true
    }
}

/// Appends `next` to `tail` when it continues the same piece of streamed text. A `done`
/// token is never merged: it stays the empty marker that ends a response. The tail is
/// copied once if another queue shares it, then grows in place.
fn coalesce(tail: &mut Arc<Envelope>, next: &Envelope) -> bool {
    let Event::Token {
        run_id,
        agent_id,
        token: more,
        thinking,
        done: false,
    } = &next.event
    else {
        return false;
    };
    let continues = matches!(
        &tail.event,
        Event::Token { run_id: r, agent_id: a, thinking: t, done: false, .. }
            if r == run_id && a == agent_id && t == thinking
    );
    if !continues {
        return false;
    }
    let tail = Arc::make_mut(tail);
    tail.seq = next.seq;
    if let Event::Token { token, .. } = &mut tail.event {
        token.push_str(more);
    }
    true
}

/// The reading end of a lossless subscription: every event from subscription on, in order
/// (continuing tokens possibly coalesced, see the module doc). `None` once the bus closed
/// and everything was read.
pub struct Subscription {
    queue: Arc<Queue>,
}

impl Subscription {
    /// A subscription that has already ended.
    pub fn ended() -> Subscription {
        let queue = Queue::default();
        queue.lock().closed = true;
        Subscription {
            queue: Arc::new(queue),
        }
    }

    /// The next event, waiting for it. Cancel-safe: an event is only taken when returned.
    pub async fn recv(&mut self) -> Option<Arc<Envelope>> {
        loop {
            {
                let mut waiting = self.queue.lock();
                if let Some(envelope) = self.queue.take(&mut waiting) {
                    return Some(envelope);
                }
                if waiting.closed {
                    return None;
                }
            }
            // A push between the check and here leaves a permit, so this cannot miss it.
            self.queue.task.notified().await;
        }
    }

    /// The next event, blocking this thread: for readers on their own thread.
    pub fn blocking_recv(&mut self) -> Option<Arc<Envelope>> {
        let mut waiting = self.queue.lock();
        loop {
            if let Some(envelope) = self.queue.take(&mut waiting) {
                return Some(envelope);
            }
            if waiting.closed {
                return None;
            }
            waiting = self
                .queue
                .thread
                .wait(waiting)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    /// The next event if one waits.
    pub fn try_recv(&mut self) -> Option<Arc<Envelope>> {
        let mut waiting = self.queue.lock();
        self.queue.take(&mut waiting)
    }

    /// How many events wait to be read.
    pub fn waiting(&self) -> usize {
        self.queue.lock().events.len()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut waiting = self.queue.lock();
        waiting.abandoned = true;
        waiting.events.clear();
        waiting.token_bytes = 0;
        drop(waiting);
        // A stream paused for this reader must not wait for it any longer.
        self.queue.drained.notify_waiters();
    }
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new()
    }
}

impl EventBus {
    pub fn new() -> Self {
        let (broadcast, _) = broadcast::channel(BROADCAST_CAPACITY);
        EventBus {
            inner: Arc::new(Inner {
                seq: AtomicU64::new(0),
                broadcast,
                lossless: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Never waits: viewers lag and resync, lossless queues coalesce (see the module doc).
    pub fn publish(&self, event: Event) {
        let seq = self.inner.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let envelope = Arc::new(Envelope { seq, event });
        // No receivers is fine: nobody is watching.
        let _ = self.inner.broadcast.send(envelope.clone());
        self.lossless()
            .retain(|sub| !(sub.wants)(&envelope.event) || sub.queue.push(&envelope));
    }

    /// A subscriber that sees every event from now on, in order.
    pub fn subscribe_lossless(&self) -> Subscription {
        self.subscribe_lossless_to(|_| true)
    }

    /// Like [`subscribe_lossless`](Self::subscribe_lossless), for the events `wants` accepts
    /// only; the store, say, never needs to wake up for a token.
    pub fn subscribe_lossless_to(&self, wants: fn(&Event) -> bool) -> Subscription {
        self.add_lossless(wants, false)
    }

    /// A lossless subscriber that sets the pace of the model's stream: the terminal, whose
    /// rendering is ours to wait for (see the module doc).
    pub fn subscribe_pacing(&self) -> Subscription {
        self.add_lossless(|_| true, true)
    }

    fn add_lossless(&self, wants: fn(&Event) -> bool, paces: bool) -> Subscription {
        let queue = Arc::new(Queue::default());
        self.lossless().push(Lossless {
            queue: queue.clone(),
            wants,
            paces,
        });
        Subscription { queue }
    }

    /// Whether a pacing reader has more than [`PACE_BYTES`] of streamed text waiting.
    pub fn is_behind(&self) -> bool {
        self.behind().is_some()
    }

    fn behind(&self) -> Option<Arc<Queue>> {
        self.lossless()
            .iter()
            .find(|sub| sub.paces && sub.queue.is_behind())
            .map(|sub| sub.queue.clone())
    }

    /// Waits until no pacing reader is behind (at once if none is).
    pub async fn caught_up(&self) {
        while let Some(queue) = self.behind() {
            let drained = queue.drained.notified();
            tokio::pin!(drained);
            // Registered before looking again, so a take in between is not missed.
            drained.as_mut().enable();
            if queue.is_behind() {
                drained.await;
            }
        }
    }

    /// A viewer that may lag (it then gets `RecvError::Lagged` and should resync).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Envelope>> {
        self.inner.broadcast.subscribe()
    }

    /// Ends every lossless subscription; their readers get `None` once drained.
    pub fn close(&self) {
        self.lossless().clear();
    }

    /// See [`Queue::lock`] on poisoning.
    fn lossless(&self) -> MutexGuard<'_, Vec<Lossless>> {
        lock(&self.inner.lossless)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(run: &str, text: &str, done: bool) -> Event {
        Event::Token {
            run_id: run.into(),
            agent_id: "ling".into(),
            token: text.into(),
            thinking: false,
            done,
        }
    }

    fn drain(sub: &mut Subscription) -> Vec<Arc<Envelope>> {
        std::iter::from_fn(|| sub.try_recv()).collect()
    }

    /// A reader that keeps up gets every event as published.
    #[test]
    fn a_reader_that_keeps_up_sees_every_event() {
        let bus = EventBus::new();
        let mut sub = bus.subscribe_lossless();
        for i in 0..(COALESCE_AFTER as u64) {
            bus.publish(token("r1", &i.to_string(), false));
        }
        let seqs: Vec<u64> = drain(&mut sub).iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=COALESCE_AFTER as u64).collect::<Vec<_>>());
    }

    /// A reader that never reads (a `-p` pipe nobody drains) holds a bounded number of
    /// events, and still gets all the text, in order, with everything else in between.
    #[test]
    fn a_stalled_reader_holds_a_bounded_queue_and_loses_nothing() {
        let bus = EventBus::new();
        let mut stalled = bus.subscribe_lossless();
        let mut text = String::new();
        for i in 0..100_000u64 {
            let piece = format!("{i} ");
            text.push_str(&piece);
            bus.publish(token("r1", &piece, false));
            if i == 50_000 {
                bus.publish(Event::Warning {
                    message: "half way".into(),
                });
            }
            assert!(
                stalled.waiting() <= COALESCE_AFTER + 2,
                "{}",
                stalled.waiting()
            );
        }
        bus.publish(token("r1", "", true));
        bus.publish(token("r2", "next", false));
        let events = drain(&mut stalled);
        assert_eq!(
            events.len(),
            COALESCE_AFTER + 4,
            "warning, a piece, done, r2"
        );
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order");
        assert_eq!(seqs.last(), Some(&100_003));
        let mut received = String::new();
        let mut warned_after = None;
        for envelope in &events {
            match &envelope.event {
                Event::Token { run_id, token, .. } if run_id == "r1" => received.push_str(token),
                Event::Warning { .. } => warned_after = Some(received.len()),
                _ => {}
            }
        }
        assert_eq!(received, text);
        let half = text.find("50001 ").unwrap();
        assert_eq!(
            warned_after,
            Some(half),
            "the warning stays between its tokens"
        );
        let Event::Token { done, .. } = &events[events.len() - 2].event else {
            panic!("the end of r1 is a token");
        };
        assert!(done, "the empty end marker stays its own event");
        assert!(
            matches!(&events[events.len() - 1].event, Event::Token { run_id, .. } if run_id == "r2")
        );
    }

    /// Another subscriber sharing the same events is not changed by the coalescing.
    #[test]
    fn coalescing_one_queue_leaves_the_others_alone() {
        let bus = EventBus::new();
        let mut stalled = bus.subscribe_lossless();
        let mut reader = bus.subscribe_lossless();
        for i in 0..(COALESCE_AFTER + 10) {
            bus.publish(token("r1", &i.to_string(), false));
            assert!(reader.try_recv().is_some());
        }
        assert_eq!(stalled.waiting(), COALESCE_AFTER);
        let last = drain(&mut stalled).pop().unwrap();
        assert_eq!(last.seq, COALESCE_AFTER as u64 + 10);
    }

    /// A pacing reader that falls behind by more than `PACE_BYTES` of text holds the
    /// stream until it has read back under the bound; other readers never do.
    #[tokio::test]
    async fn a_pacing_reader_behind_holds_the_stream_until_it_catches_up() {
        let bus = EventBus::new();
        let mut terminal = bus.subscribe_pacing();
        let _stalled_pipe = bus.subscribe_lossless();
        let piece = "x".repeat(64 * 1024);
        while !bus.is_behind() {
            bus.publish(token("r1", &piece, false));
        }
        let waiter = {
            let bus = bus.clone();
            tokio::spawn(async move { bus.caught_up().await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        assert!(terminal.recv().await.is_some());
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("caught up once the reader read")
            .unwrap();
        assert!(!bus.is_behind());
        // A reader that leaves releases the stream too.
        while !bus.is_behind() {
            bus.publish(token("r1", &piece, false));
        }
        drop(terminal);
        bus.caught_up().await;
    }

    #[tokio::test]
    async fn readers_end_after_close_and_drain() {
        let bus = EventBus::new();
        let mut task = bus.subscribe_lossless();
        let mut thread = bus.subscribe_lossless();
        let reader =
            std::thread::spawn(move || std::iter::from_fn(|| thread.blocking_recv()).count());
        bus.publish(token("r1", "a", false));
        bus.publish(token("r1", "b", true));
        let waiting = tokio::spawn(async move {
            let mut n = 0;
            while task.recv().await.is_some() {
                n += 1;
            }
            n
        });
        tokio::task::yield_now().await;
        bus.publish(token("r1", "c", true));
        bus.close();
        assert_eq!(waiting.await.unwrap(), 3);
        assert_eq!(reader.join().unwrap(), 3);
        // A dropped reader is forgotten, not filled.
        let gone = bus.subscribe_lossless();
        drop(gone);
        bus.publish(token("r1", "d", true));
        assert!(bus.lossless().is_empty());
    }
}
