//! What every session of the process shares about model servers: how many requests each
//! may have in flight (`max_inflight`), and which ones failed recently (cool-down). Both
//! are process-wide on purpose: parent runs, delegated children, forked skills and every
//! session of a `linggen serve` talk to the same small local server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use crate::sync::lock;

/// One server of one model, as the process knows it.
#[derive(Debug)]
pub struct Server {
    /// `id|url`: the same model entry on the same server is the same capacity.
    key: String,
    slots: Arc<Semaphore>,
    limit: u32,
}

impl Server {
    /// The process-wide record of model `id` at `url`; the first caller's `max_inflight`
    /// sets its limit.
    pub fn get(id: &str, url: &str, max_inflight: u32) -> Arc<Server> {
        static SERVERS: OnceLock<Mutex<HashMap<String, Arc<Server>>>> = OnceLock::new();
        let key = format!("{id}|{url}");
        let mut servers = lock(SERVERS.get_or_init(Default::default));
        Arc::clone(servers.entry(key.clone()).or_insert_with(|| {
            let limit = max_inflight.max(1);
            Arc::new(Server {
                key,
                slots: Arc::new(Semaphore::new(limit as usize)),
                limit,
            })
        }))
    }

    /// Its `max_inflight`.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Requests running on it now.
    pub fn in_flight(&self) -> u32 {
        self.limit
            .saturating_sub(self.slots.available_permits() as u32)
    }

    /// A slot if one is free now.
    pub fn try_slot(&self) -> Option<Slot> {
        Arc::clone(&self.slots).try_acquire_owned().ok().map(Slot)
    }

    /// Waits for a free slot.
    pub async fn slot(&self) -> Slot {
        // The semaphore is never closed.
        match Arc::clone(&self.slots).acquire_owned().await {
            Ok(permit) => Slot(permit),
            Err(_) => unreachable!("model slots are never closed"),
        }
    }

    /// Skips it for `for_` (it failed); a call after that probes it again.
    pub fn cool_down(&self, for_: Duration) {
        lock_cooling().insert(self.key.clone(), Instant::now() + for_);
    }

    /// Whether it is in its cool-down.
    pub fn cooling(&self) -> bool {
        let mut cooling = lock_cooling();
        match cooling.get(&self.key) {
            Some(until) if *until > Instant::now() => true,
            Some(_) => {
                cooling.remove(&self.key);
                false
            }
            None => false,
        }
    }

    /// It answered: no cool-down.
    pub fn recovered(&self) {
        lock_cooling().remove(&self.key);
    }
}

fn lock_cooling() -> std::sync::MutexGuard<'static, HashMap<String, Instant>> {
    static COOLING: OnceLock<Mutex<HashMap<String, Instant>>> = OnceLock::new();
    lock(COOLING.get_or_init(Default::default))
}

/// A request slot, held for the whole exchange with the server.
#[derive(Debug)]
pub struct Slot(#[allow(dead_code)] tokio::sync::OwnedSemaphorePermit);

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_limit_is_shared_by_everyone_in_the_process() {
        let a = Server::get("cap-test", "http://h:1", 1);
        let b = Server::get("cap-test", "http://h:1", 4);
        let held = a.try_slot();
        assert!(held.is_some());
        assert_eq!(b.in_flight(), 1);
        assert!(b.try_slot().is_none(), "one slot for the whole process");
        let waiting = tokio::time::timeout(Duration::from_millis(30), b.slot()).await;
        assert!(waiting.is_err());
        drop(held);
        assert!(b.try_slot().is_some());
    }

    #[test]
    fn a_cool_down_ends() {
        let s = Server::get("cool-test", "http://h:2", 1);
        assert!(!s.cooling());
        s.cool_down(Duration::from_secs(60));
        assert!(Server::get("cool-test", "http://h:2", 1).cooling());
        s.recovered();
        assert!(!s.cooling());
        s.cool_down(Duration::ZERO);
        assert!(!s.cooling());
    }
}
