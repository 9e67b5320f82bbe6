//! Advisory workspace locks (`lock_paths` / `unlock_paths`): a run can claim files so that
//! other runs of the session (a delegated agent, say) do not edit them at the same time. A
//! write to a path locked by another run is refused; locks end at their TTL, when
//! unlocked, or when the run that took them ends.

use std::time::{Duration, Instant};

use globset::{Glob, GlobSet, GlobSetBuilder};

use super::ids;

struct Lock {
    token: String,
    run_id: String,
    agent_id: String,
    globs: Vec<String>,
    matcher: GlobSet,
    expires: Instant,
}

#[derive(Default)]
pub(crate) struct Locks {
    held: Vec<Lock>,
}

impl Locks {
    /// Takes a lock for `run_id` on `globs`, or says which run already holds an overlapping
    /// one. Overlap is judged by matching each side's globs against the other's patterns,
    /// which catches the common cases (`src/**` vs `src/a.rs`) without solving glob algebra.
    pub(in crate::session) fn lock(
        &mut self,
        run_id: &str,
        agent_id: &str,
        globs: &[String],
        ttl: Duration,
    ) -> Result<String, String> {
        self.expire();
        let matcher = compile(globs)?;
        for other in self.held.iter().filter(|l| l.run_id != run_id) {
            let overlap = globs.iter().any(|g| other.matcher.is_match(g))
                || other.globs.iter().any(|g| matcher.is_match(g))
                || other.globs.iter().any(|g| globs.contains(g));
            if overlap {
                return Err(format!(
                    "{} is already locked by run {} (agent {}) for {}s more; wait for it, or work on other files",
                    other.globs.join(", "),
                    other.run_id,
                    other.agent_id,
                    other
                        .expires
                        .saturating_duration_since(Instant::now())
                        .as_secs()
                ));
            }
        }
        let token = format!("lk-{}", ids::new_id());
        self.held.push(Lock {
            token: token.clone(),
            run_id: run_id.to_string(),
            agent_id: agent_id.to_string(),
            globs: globs.to_vec(),
            matcher,
            expires: Instant::now() + ttl,
        });
        Ok(token)
    }

    /// Releases the given tokens held by `run_id`; returns how many were released and the
    /// tokens that were not this run's (or did not exist).
    pub fn unlock(&mut self, run_id: &str, tokens: &[String]) -> (usize, Vec<String>) {
        self.expire();
        let mine = |t: &String| {
            self.held
                .iter()
                .any(|l| l.run_id == run_id && &l.token == t)
        };
        let unknown: Vec<String> = tokens.iter().filter(|t| !mine(t)).cloned().collect();
        let before = self.held.len();
        self.held
            .retain(|l| !(l.run_id == run_id && tokens.contains(&l.token)));
        (before - self.held.len(), unknown)
    }

    /// `Err(why)` when `rel` is locked by a run other than `run_id`.
    pub(in crate::session) fn check_write(
        &mut self,
        run_id: &str,
        rel: &str,
    ) -> Result<(), String> {
        self.expire();
        match self
            .held
            .iter()
            .find(|l| l.run_id != run_id && l.matcher.is_match(rel))
        {
            Some(l) => Err(format!(
                "{rel} is locked by run {} (agent {}) until it finishes or unlocks it (at most {}s more); do not edit it now — work on other files or report back",
                l.run_id,
                l.agent_id,
                l.expires
                    .saturating_duration_since(Instant::now())
                    .as_secs()
            )),
            None => Ok(()),
        }
    }

    /// Drops every lock `run_id` holds (its run ended).
    pub fn release_run(&mut self, run_id: &str) {
        self.held.retain(|l| l.run_id != run_id);
    }

    fn expire(&mut self) {
        let now = Instant::now();
        self.held.retain(|l| l.expires > now);
    }
}

fn compile(globs: &[String]) -> Result<GlobSet, String> {
    let mut builder = GlobSetBuilder::new();
    for g in globs {
        let glob = Glob::new(g.trim_start_matches("./")).map_err(|e| {
            format!("`{g}` is not a valid glob ({e}); use patterns like src/**/*.rs")
        })?;
        builder.add(glob);
    }
    builder
        .build()
        .map_err(|e| format!("cannot use these globs: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Duration = Duration::from_secs(60);

    #[test]
    fn other_runs_cannot_write_or_lock_overlapping_paths() {
        let mut locks = Locks::default();
        let token = locks.lock("r1", "ling", &["src/**".into()], TTL).unwrap();
        assert!(locks.check_write("r1", "src/a.rs").is_ok());
        let err = locks.check_write("r2", "src/a.rs").unwrap_err();
        assert!(err.contains("locked by run r1 (agent ling)"), "{err}");
        assert!(locks.check_write("r2", "README.md").is_ok());
        let err = locks
            .lock("r2", "coder", &["src/a.rs".into()], TTL)
            .unwrap_err();
        assert!(err.contains("already locked"), "{err}");
        assert!(locks.lock("r2", "coder", &["doc/*.md".into()], TTL).is_ok());

        // Only the holder can unlock its token.
        assert_eq!(locks.unlock("r2", std::slice::from_ref(&token)).0, 0);
        assert_eq!(locks.unlock("r1", &[token]).0, 1);
        assert!(locks.check_write("r2", "src/a.rs").is_ok());
    }

    #[test]
    fn locks_expire_and_end_with_their_run() {
        let mut locks = Locks::default();
        locks
            .lock("r1", "a", &["x.txt".into()], Duration::from_millis(1))
            .unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert!(locks.check_write("r2", "x.txt").is_ok());
        locks.lock("r1", "a", &["y.txt".into()], TTL).unwrap();
        locks.release_run("r1");
        assert!(locks.check_write("r2", "y.txt").is_ok());
        assert!(locks.lock("r1", "a", &["[".into()], TTL).is_err());
    }
}
