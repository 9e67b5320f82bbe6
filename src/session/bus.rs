//! The event bus. Two kinds of subscribers: lossless ones (the store, the `-p` printer) get
//! every event through an unbounded queue, because losing a token or a message there loses
//! data; lossy ones (viewers such as the web mirror) use a bounded broadcast channel so a
//! slow viewer can never slow the agent down — it falls behind and resynchronises instead.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, mpsc};

use super::event::Event;

const BROADCAST_CAPACITY: usize = 4096;

/// An event with its sequence number (the SSE `id:`).
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

/// A lossless subscriber and the events it wants.
struct Lossless {
    tx: mpsc::UnboundedSender<Arc<Envelope>>,
    wants: fn(&Event) -> bool,
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

    pub fn publish(&self, event: Event) {
        let seq = self.inner.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let envelope = Arc::new(Envelope { seq, event });
        // No receivers is fine: nobody is watching.
        let _ = self.inner.broadcast.send(envelope.clone());
        // A poisoned lock only means another publisher panicked mid-push; the list is
        // still valid, so keep delivering rather than dropping events.
        let mut lossless = self
            .inner
            .lossless
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        lossless
            .retain(|sub| !(sub.wants)(&envelope.event) || sub.tx.send(envelope.clone()).is_ok());
    }

    /// A subscriber that sees every event from now on, in order.
    pub fn subscribe_lossless(&self) -> mpsc::UnboundedReceiver<Arc<Envelope>> {
        self.subscribe_lossless_to(|_| true)
    }

    /// Like [`subscribe_lossless`](Self::subscribe_lossless), for the events `wants` accepts
    /// only; the store, say, never needs to wake up for a token.
    pub fn subscribe_lossless_to(
        &self,
        wants: fn(&Event) -> bool,
    ) -> mpsc::UnboundedReceiver<Arc<Envelope>> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.inner
            .lossless
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Lossless { tx, wants });
        rx
    }

    /// A viewer that may lag (it then gets `RecvError::Lagged` and should resync).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Envelope>> {
        self.inner.broadcast.subscribe()
    }

    /// Drops every lossless subscriber's sender so their loops end once drained.
    pub fn close(&self) {
        self.inner
            .lossless
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}
