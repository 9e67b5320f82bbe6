//! Checkpoints in a session: before the first call of a prompt that may change files (and
//! of each auto-mode step), the working tree is snapshotted (see [`crate::checkpoint`]);
//! when the turn ends, once more, so a rewind can tell the agent's changes from a person's
//! later hand edits. The later snapshots of a turn hold every file its first one did, even
//! when a command of the turn wrote a rule that ignores them. Each snapshot is an event
//! (`CheckpointCreated`, `CheckpointClosed`) that the store records; `/rewind` and
//! `linggen rewind` read them back.
//!
//! A snapshot that fails (no `git`, too many files) is a warning, once: the work goes on,
//! it just cannot be rewound.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use super::event::Event;
use super::run::RunCtx;
use super::{TurnShared, ids, lock};
use crate::checkpoint::Checkpoints;
use crate::tools::{Access, Prepared};

/// The session's snapshot store, opened at the first snapshot (a session that changes
/// nothing never starts `git`). Snapshots are taken one at a time: they share the store's
/// index.
pub struct Checkpointer {
    store: PathBuf,
    root: PathBuf,
    engine: Mutex<Option<Checkpoints>>,
    /// A failure was reported already: one warning a session is enough.
    warned_failure: AtomicBool,
    /// Files left out for their size were reported already.
    warned_skipped: AtomicBool,
}

impl Checkpointer {
    /// The checkpoints of `root`, kept under `$LINGGEN_HOME/projects/<root>/`.
    pub fn new(home: &Path, root: &Path) -> Checkpointer {
        Checkpointer {
            store: store_dir(home, root),
            root: root.to_path_buf(),
            engine: Mutex::new(None),
            warned_failure: AtomicBool::new(false),
            warned_skipped: AtomicBool::new(false),
        }
    }

    /// The files that differ between two snapshots (blocking: it runs `git`).
    fn changed(&self, from: &str, to: &str) -> Result<Vec<crate::checkpoint::FileChange>, String> {
        match lock(&self.engine).as_ref() {
            Some(engine) => engine.changed(from, to).map_err(|e| e.to_string()),
            None => Err("the checkpoint store is not open".into()),
        }
    }

    /// Takes a snapshot (blocking: it runs `git`), holding whatever `keep` (the turn's first
    /// snapshot) recorded even if a rule made since ignores it.
    fn snapshot(
        &self,
        name: &str,
        label: &str,
        keep: Option<&str>,
    ) -> Result<crate::checkpoint::Snapshot, String> {
        let mut engine = lock(&self.engine);
        let engine = match &mut *engine {
            Some(engine) => engine,
            empty => {
                empty.insert(Checkpoints::open(&self.store, &self.root).map_err(|e| e.to_string())?)
            }
        };
        match keep {
            Some(keep) => engine.snapshot_keeping(name, label, keep),
            None => engine.snapshot(name, label),
        }
        .map_err(|e| e.to_string())
    }
}

/// Where a project's checkpoints live: beside its memory, outside the repository.
pub fn store_dir(home: &Path, root: &Path) -> std::path::PathBuf {
    home.join("projects")
        .join(super::memory::folder_name(root))
        .join("checkpoints.git")
}

/// What one turn knows of its checkpoints: shared by its runs (a delegated run's changes
/// belong to the prompt that started it).
pub(crate) struct TurnMark {
    /// The turn's top-level run.
    pub run_id: String,
    /// The person's prompt, for the list.
    pub prompt: String,
    /// The auto-mode step (0 in chat mode).
    step: AtomicU32,
    /// The step a snapshot was taken for.
    taken: Mutex<Option<u32>>,
    /// The turn's first snapshot: what its end is compared with.
    first: Mutex<Option<String>>,
}

impl TurnMark {
    pub fn new(run_id: &str, prompt: &str) -> Arc<TurnMark> {
        Arc::new(TurnMark {
            run_id: run_id.to_string(),
            prompt: prompt.to_string(),
            step: AtomicU32::new(0),
            taken: Mutex::new(None),
            first: Mutex::new(None),
        })
    }

    /// Auto mode: a new step begins; its first change gets a checkpoint of its own.
    pub fn next_step(&self) {
        self.step.fetch_add(1, Ordering::Relaxed);
    }
}

/// Whether a call may change files: every command counts (the analysis can be wrong, and
/// a snapshot is cheap), as do writes, patches and screenshots.
pub(crate) fn may_change_files(prepared: &Prepared) -> bool {
    !matches!(prepared.access, Access::Read)
}

/// Takes the checkpoint of this prompt (or auto step) unless it was taken already.
pub(crate) async fn ensure(shared: &TurnShared, ctx: &RunCtx) {
    let Some(checkpointer) = shared.checkpoints.clone() else {
        return;
    };
    let mark = &ctx.mark;
    let step = mark.step.load(Ordering::Relaxed);
    {
        let mut taken = lock(&mark.taken);
        if *taken == Some(step) {
            return;
        }
        *taken = Some(step);
    }
    let id = ids::new_id();
    let (name, label) = (id.clone(), format!("before: {}", mark.prompt));
    // A later auto step keeps what the turn began with: a rule an earlier step wrote does
    // not hide that step's changes.
    let first = lock(&mark.first).clone();
    let store = Arc::clone(&checkpointer);
    let taken =
        tokio::task::spawn_blocking(move || store.snapshot(&name, &label, first.as_deref()))
            .await
            .unwrap_or_else(|e| Err(e.to_string()));
    match taken {
        Ok(snapshot) => {
            if !snapshot.skipped.is_empty() {
                warn_once(
                    &checkpointer.warned_skipped,
                    shared,
                    format!(
                        "checkpoint: {} left out (larger than {} MiB): a rewind will not restore them",
                        snapshot.skipped.join(", "),
                        crate::checkpoint::MAX_FILE_BYTES / (1024 * 1024)
                    ),
                );
            }
            lock(&mark.first).get_or_insert_with(|| snapshot.commit.clone());
            shared.bus.publish(Event::CheckpointCreated {
                checkpoint_id: id,
                run_id: mark.run_id.clone(),
                prompt: mark.prompt.clone(),
                step,
                commit: snapshot.commit,
            });
        }
        Err(why) => warn_once(
            &checkpointer.warned_failure,
            shared,
            format!("no checkpoint was taken ({why}); changes in this session cannot be rewound"),
        ),
    }
}

/// After the turn: the tree as the agent left it, so a rewind can tell later hand edits.
/// Returns the files the turn changed by any means, shell commands included (for its
/// `ChangeReport`).
pub(crate) async fn close(shared: &TurnShared, mark: &Arc<TurnMark>) -> Vec<String> {
    let Some(checkpointer) = shared.checkpoints.clone() else {
        return Vec::new();
    };
    let Some(first) = lock(&mark.first).clone() else {
        return Vec::new();
    };
    let name = format!("{}-end", mark.run_id);
    let label = format!("after: {}", mark.prompt);
    let store = Arc::clone(&checkpointer);
    let taken = tokio::task::spawn_blocking(move || {
        let end = store.snapshot(&name, &label, Some(&first))?.commit;
        let changed = store.changed(&first, &end)?;
        Ok::<_, String>((end, changed))
    })
    .await
    .unwrap_or_else(|e| Err(e.to_string()));
    match taken {
        Ok((commit, changed)) => {
            shared.bus.publish(Event::CheckpointClosed {
                run_id: mark.run_id.clone(),
                commit,
            });
            changed.into_iter().map(|c| c.path).collect()
        }
        Err(why) => {
            warn_once(
                &checkpointer.warned_failure,
                shared,
                format!("the turn's end state was not saved ({why})"),
            );
            Vec::new()
        }
    }
}

fn warn_once(told: &AtomicBool, shared: &TurnShared, message: String) {
    if !told.swap(true, Ordering::Relaxed) {
        shared.bus.publish(Event::Warning { message });
    }
}
