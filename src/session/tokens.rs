//! Streamed output becomes `Token` events in batches: everything that arrives within one
//! frame (16 ms) is published as one event. A fast local server sending 4-byte deltas would
//! otherwise become hundreds of thousands of events, each waking every subscriber; people
//! cannot see faster than a frame anyway. No text is lost or reordered.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::event::Event;
use super::{EventBus, lock};

pub(super) const FRAME: Duration = Duration::from_millis(16);

pub(super) struct TokenBatcher<'a> {
    bus: &'a EventBus,
    run_id: &'a str,
    agent_id: &'a str,
    pending: Mutex<Pending>,
}

struct Pending {
    text: String,
    thinking: bool,
    last_flush: Instant,
}

impl<'a> TokenBatcher<'a> {
    pub fn new(bus: &'a EventBus, run_id: &'a str, agent_id: &'a str) -> Self {
        TokenBatcher {
            bus,
            run_id,
            agent_id,
            pending: Mutex::new(Pending {
                text: String::new(),
                thinking: false,
                last_flush: Instant::now(),
            }),
        }
    }

    /// Adds a piece; publishes at once when a frame has passed since the last event.
    pub fn push(&self, piece: &str, thinking: bool) {
        let mut p = lock(&self.pending);
        // Reasoning and answer text must not merge: flush when the kind changes.
        if p.thinking != thinking && !p.text.is_empty() {
            self.publish(&mut p);
        }
        p.thinking = thinking;
        p.text.push_str(piece);
        if p.last_flush.elapsed() >= FRAME {
            self.publish(&mut p);
        }
    }

    /// Publishes whatever is pending (called every frame and at the end of a response).
    pub fn flush(&self) {
        let mut p = lock(&self.pending);
        if !p.text.is_empty() {
            self.publish(&mut p);
        }
    }

    fn publish(&self, p: &mut Pending) {
        p.last_flush = Instant::now();
        self.bus.publish(Event::Token {
            run_id: self.run_id.to_string(),
            agent_id: self.agent_id.to_string(),
            token: std::mem::take(&mut p.text),
            thinking: p.thinking,
            done: false,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(rx: &mut super::super::bus::Subscription) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        while let Some(e) = rx.try_recv() {
            if let Event::Token {
                token, thinking, ..
            } = &e.event
            {
                out.push((token.clone(), *thinking));
            }
        }
        out
    }

    #[test]
    fn pieces_within_a_frame_become_one_event_in_order() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe_lossless();
        let b = TokenBatcher::new(&bus, "r", "a");
        for piece in ["Hel", "lo", ", ", "world"] {
            b.push(piece, false);
        }
        b.flush();
        assert_eq!(tokens(&mut rx), [("Hello, world".to_string(), false)]);
    }

    #[test]
    fn thinking_and_text_stay_apart() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe_lossless();
        let b = TokenBatcher::new(&bus, "r", "a");
        b.push("hmm ", true);
        b.push("let me", true);
        b.push("Answer", false);
        b.push("!", false);
        b.flush();
        assert_eq!(
            tokens(&mut rx),
            [
                ("hmm let me".to_string(), true),
                ("Answer!".to_string(), false)
            ]
        );
    }

    #[test]
    fn a_late_piece_is_published_at_once() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe_lossless();
        let b = TokenBatcher::new(&bus, "r", "a");
        std::thread::sleep(FRAME);
        b.push("now", false);
        assert_eq!(tokens(&mut rx), [("now".to_string(), false)]);
    }
}
