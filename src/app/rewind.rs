//! Rewinding to a checkpoint (`linggen rewind`, `/rewind`): the files back as they were
//! before a prompt (or auto-mode step) changed them, the conversation back to before that
//! prompt, or both. A file the person changed by hand since is never overwritten unless
//! they say so: the tree as each turn left it is known (its end snapshot), so whatever
//! changed between one turn's end and the next turn's start, or since the last turn, was
//! not the agent. The tree as it was just before the rewind becomes a checkpoint itself,
//! so a rewind can be undone the same way.
//!
//! Everything here blocks (SQLite, `git`): call it off the async runtime.

use std::collections::BTreeSet;
use std::path::Path;

use super::{Failure, exit};
use crate::checkpoint::{ChangeKind, Checkpoints, FileChange};
use crate::session::checkpoints::store_dir;
use crate::session::ids;
use crate::store::{CheckpointRecord, Store};

/// What a rewind restores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    Both,
    Code,
    Conversation,
}

impl What {
    pub fn parse(s: &str) -> Option<What> {
        match s.trim() {
            "both" | "" => Some(What::Both),
            "code" | "files" => Some(What::Code),
            "conversation" | "chat" => Some(What::Conversation),
            _ => None,
        }
    }

    fn code(self) -> bool {
        self != What::Conversation
    }

    fn conversation(self) -> bool {
        self != What::Code
    }
}

/// A checkpoint as listed: the record and the files its prompt (or step) changed.
pub struct Listed {
    pub record: CheckpointRecord,
    /// `None`: the turn did not end (it runs, or its process died), so it is not known.
    pub files: Option<Vec<FileChange>>,
}

impl Listed {
    /// One line: the ID first, then when, what changed and the prompt.
    pub fn line(&self, now_ms: i64) -> String {
        let files = match &self.files {
            Some(files) if files.is_empty() => "no files changed".to_string(),
            Some(files) => files.iter().map(change_label).collect::<Vec<_>>().join(" "),
            None => "turn did not finish".to_string(),
        };
        let step = match self.record.step {
            0 => String::new(),
            n => format!(" · step {n}"),
        };
        let prompt: String = self
            .record
            .prompt
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(60)
            .collect();
        format!(
            "{}  {:>8}  {prompt}{step}  [{files}]",
            self.record.id,
            super::sessions::ago(now_ms - self.record.created_at),
        )
    }
}

fn change_label(c: &FileChange) -> String {
    let sign = match c.kind {
        ChangeKind::Added => "+",
        ChangeKind::Modified => "~",
        ChangeKind::Deleted => "-",
    };
    format!("{sign}{}", c.path)
}

/// Why a rewind did not happen.
pub enum Refusal {
    /// These files were changed by hand since the checkpoint and the rewind would
    /// overwrite them.
    HandEdits(Vec<String>),
    Failed(Failure),
}

impl From<Failure> for Refusal {
    fn from(f: Failure) -> Self {
        Refusal::Failed(f)
    }
}

/// What a rewind did.
pub struct Rewound {
    pub checkpoint: CheckpointRecord,
    /// Whether the files were rewound (not `--only conversation`).
    pub code: bool,
    /// What it changed, as going from now back to the checkpoint.
    pub files: Vec<FileChange>,
    /// Files that differ from the checkpoint but were left as they are: a file the tree
    /// now holds that no snapshot can (too large), a folder or symlink in the way.
    pub left: Vec<String>,
    pub conversation: bool,
    /// The checkpoint of the tree as it was just before, to undo this rewind.
    pub undo: Option<String>,
}

fn failure(message: impl Into<String>) -> Failure {
    Failure {
        code: exit::FAILURE,
        message: message.into(),
    }
}

fn engine(home: &Path, root: &Path) -> Result<Checkpoints, Failure> {
    Checkpoints::open(&store_dir(home, root), root).map_err(|e| failure(e.to_string()))
}

/// The checkpoints of `session_id`, oldest first, with the files each one's changes touched.
pub fn list(home: &Path, root: &Path, session_id: &str) -> Result<Vec<Listed>, Failure> {
    let store = Store::open(home)?;
    let records = store.checkpoints(session_id)?;
    if records.is_empty() {
        return Ok(Vec::new());
    }
    let engine = engine(home, root)?;
    let mut listed = Vec::new();
    for (i, record) in records.iter().enumerate() {
        // A step's changes end where the next step of the same turn begins.
        let next_step = records
            .get(i + 1)
            .filter(|next| next.run_id == record.run_id)
            .map(|next| next.commit.clone());
        let after = next_step.or_else(|| record.end_commit.clone());
        let files = match after {
            Some(after) => Some(
                engine
                    .changed(&record.commit, &after)
                    .map_err(|e| failure(e.to_string()))?,
            ),
            None => None,
        };
        listed.push(Listed {
            record: record.clone(),
            files,
        });
    }
    Ok(listed)
}

/// The newest session of `root` that has checkpoints, else the newest session.
pub fn latest_session(home: &Path, root: &Path) -> Result<String, Failure> {
    let store = Store::open(home)?;
    let root_text = root.display().to_string();
    let sessions = store.list_sessions(&root_text)?;
    for session in &sessions {
        if !store.checkpoints(&session.id)?.is_empty() {
            return Ok(session.id.clone());
        }
    }
    sessions
        .first()
        .map(|s| s.id.clone())
        .ok_or_else(|| Failure {
            code: exit::USAGE,
            message: format!("no sessions in {} yet, so no checkpoints", root.display()),
        })
}

/// The checkpoint `id` (or the one its prefix names) among this folder's sessions: a
/// checkpoint of another project is not this folder's to rewind.
fn find(store: &Store, root: &Path, id: &str) -> Result<CheckpointRecord, Failure> {
    let usage = |message: String| Failure {
        code: exit::USAGE,
        message,
    };
    let mut found = Vec::new();
    for session in store.list_sessions(&root.display().to_string())? {
        for c in store.checkpoints(&session.id)? {
            if c.id == id {
                return Ok(c);
            }
            if !id.is_empty() && c.id.starts_with(id) {
                found.push(c);
            }
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(usage(format!(
            "no checkpoint `{id}` in {}; `linggen rewind --list` (or /rewind in the shell) lists them",
            root.display()
        ))),
        n => Err(usage(format!(
            "`{id}` matches {n} checkpoints; give more of the id"
        ))),
    }
}

/// Rewinds to checkpoint `id` (or a unique prefix of it). `force` overwrites hand edits.
pub fn rewind(
    home: &Path,
    root: &Path,
    id: &str,
    what: What,
    force: bool,
) -> Result<Rewound, Refusal> {
    let store = Store::open(home).map_err(Failure::from)?;
    let checkpoint = find(&store, root, id)?;
    // The conversation is the session's: not rewound under another linggen running it
    // (this process's own shell holds it already, and may).
    let _lease = match what.conversation() {
        true => Some(
            crate::store::SessionLease::try_acquire(
                home,
                &checkpoint.session_id,
                crate::store::HolderKind::OneShot,
            )
            .map_err(Failure::from)?,
        ),
        false => None,
    };
    let mut rewound = Rewound {
        checkpoint: checkpoint.clone(),
        code: what.code(),
        files: Vec::new(),
        left: Vec::new(),
        conversation: false,
        undo: None,
    };
    if what.code() {
        rewind_files(home, root, &store, force, &mut rewound)?;
    }
    if what.conversation() {
        let history = store
            .conversation_before(&checkpoint.session_id, &checkpoint.run_id)
            .map_err(Failure::from)?;
        store
            .save_compaction(&checkpoint.session_id, &history)
            .map_err(Failure::from)?;
        rewound.conversation = true;
    }
    Ok(rewound)
}

/// The files half of a rewind: snapshots the tree as it is, refuses to overwrite hand edits
/// unless `force`, restores the checkpoint's files and records the undo checkpoint.
fn rewind_files(
    home: &Path,
    root: &Path,
    store: &Store,
    force: bool,
    rewound: &mut Rewound,
) -> Result<(), Refusal> {
    let checkpoint = rewound.checkpoint.clone();
    let engine = engine(home, root)?;
    let now_name = format!("rewind-{}", ids::new_id());
    // Holding every file the checkpoint recorded, whatever the ignore rules say now: what
    // it does not hold, the restore cannot write (nor the undo give back).
    let now = engine
        .snapshot_keeping(
            &now_name,
            &format!("before rewinding to {}", checkpoint.id),
            &checkpoint.commit,
        )
        .map_err(|e| failure(e.to_string()))?
        .commit;
    let later: Vec<CheckpointRecord> = store
        .checkpoints(&checkpoint.session_id)
        .map_err(Failure::from)?
        .into_iter()
        .skip_while(|c| c.id != checkpoint.id)
        .collect();
    let hand = hand_edited(&engine, &later, &now)?;
    let restores = engine
        .changed(&checkpoint.commit, &now)
        .map_err(|e| failure(e.to_string()))?;
    let clobbered: Vec<String> = restores
        .iter()
        .filter(|c| hand.contains(&c.path))
        .map(|c| c.path.clone())
        .collect();
    if !clobbered.is_empty() && !force {
        return Err(Refusal::HandEdits(clobbered));
    }
    rewound.files = engine
        .restore(&checkpoint.commit, &now)
        .map_err(|e| failure(e.to_string()))?;
    let written: BTreeSet<&str> = rewound.files.iter().map(|c| c.path.as_str()).collect();
    rewound.left = restores
        .iter()
        .filter(|c| !written.contains(c.path.as_str()))
        .map(|c| c.path.clone())
        .collect();
    if !rewound.files.is_empty() {
        // The tree before the rewind, as a checkpoint of its own: the way back.
        let after = engine
            .snapshot_keeping(
                &format!("{now_name}-end"),
                "after a rewind",
                &checkpoint.commit,
            )
            .map_err(|e| failure(e.to_string()))?
            .commit;
        let undo = CheckpointRecord {
            id: ids::new_id(),
            session_id: checkpoint.session_id.clone(),
            run_id: now_name,
            prompt: format!("(rewind to {})", checkpoint.id),
            step: 0,
            commit: now,
            end_commit: Some(after),
            created_at: ids::now_ms(),
        };
        store.add_checkpoint(&undo).map_err(Failure::from)?;
        rewound.undo = Some(undo.id);
    }
    Ok(())
}

/// The files changed by something other than linggen's turns since the first of
/// `checkpoints`: between one turn's end and the next one's start, and since the last
/// turn's end (`now`). A turn that never ended leaves no end state: what happened after it
/// cannot be told apart, so it is not counted against the person.
fn hand_edited(
    engine: &Checkpoints,
    checkpoints: &[CheckpointRecord],
    now: &str,
) -> Result<BTreeSet<String>, Failure> {
    let mut edited = BTreeSet::new();
    let mut changed = |from: &str, to: &str| -> Result<(), Failure> {
        for c in engine
            .changed(from, to)
            .map_err(|e| failure(e.to_string()))?
        {
            edited.insert(c.path);
        }
        Ok(())
    };
    let mut last_end: Option<&str> = None;
    let mut last_run: Option<&str> = None;
    for c in checkpoints {
        if last_run == Some(c.run_id.as_str()) {
            continue; // a later step of the same turn
        }
        if let Some(end) = last_end {
            changed(end, &c.commit)?;
        }
        last_run = Some(&c.run_id);
        last_end = c.end_commit.as_deref();
    }
    if let Some(end) = last_end {
        changed(end, now)?;
    }
    Ok(edited)
}

/// `linggen rewind [--list] [ID] [--only code|conversation] [--force]`.
pub fn command(start: &super::Start, id: Option<&str>, what: What, force: bool) -> i32 {
    let ws = match super::load_workspace(start) {
        Ok(ws) => ws,
        Err(f) => return super::print_lines(Err(f)),
    };
    let Some(id) = id else {
        let listed = latest_session(&ws.home, &ws.root)
            .and_then(|session| list(&ws.home, &ws.root, &session))
            .map(|listed| {
                if listed.is_empty() {
                    return vec![
                        "No checkpoints yet: one is taken before the first change of each prompt."
                            .to_string(),
                    ];
                }
                let now = ids::now_ms();
                listed.iter().rev().map(|entry| entry.line(now)).collect()
            });
        return super::print_lines(listed);
    };
    let done = rewind(&ws.home, &ws.root, id, what, force).map_err(|refusal| match refusal {
        Refusal::HandEdits(files) => Failure {
            code: exit::FAILURE,
            message: format!(
                "not rewound: changed by hand since checkpoint {id}: {}; rewinding would \
                 overwrite them. Rerun with --force to overwrite, or --only conversation to \
                 leave the files alone",
                files.join(", ")
            ),
        },
        Refusal::Failed(f) => f,
    });
    super::print_lines(done.map(|done| report(&done)))
}

/// What a rewind did, for a person.
pub fn report(done: &Rewound) -> Vec<String> {
    let mut lines = Vec::new();
    let prompt: String = done.checkpoint.prompt.chars().take(60).collect();
    lines.push(format!(
        "rewound to {} (before \"{prompt}\")",
        done.checkpoint.id
    ));
    if done.code {
        if done.files.is_empty() {
            lines.push("files restored: none (they were as at the checkpoint)".into());
        } else {
            let files: Vec<String> = done.files.iter().map(change_label).collect();
            lines.push(format!("files restored: {}", capped(&files, " ")));
        }
    }
    if !done.left.is_empty() {
        lines.push(format!(
            "not restored (larger than {} MiB now, or a folder or symlink in the way): {}",
            crate::checkpoint::MAX_FILE_BYTES / (1024 * 1024),
            capped(&done.left, ", ")
        ));
    }
    if done.conversation {
        lines.push("conversation: back to before that prompt (--continue resumes it)".into());
    }
    if let Some(undo) = &done.undo {
        lines.push(format!("undo with: linggen rewind {undo}"));
    }
    lines
}

/// How many files a report names before it says how many more there are.
const LISTED_FILES: usize = 20;

/// `items` joined by `separator`, the first [`LISTED_FILES`] of them and a count of the rest.
fn capped(items: &[String], separator: &str) -> String {
    let mut text = items
        .iter()
        .take(LISTED_FILES)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(separator);
    if items.len() > LISTED_FILES {
        text.push_str(&format!(" … and {} more", items.len() - LISTED_FILES));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewound(files: usize, left: &[&str]) -> Rewound {
        Rewound {
            checkpoint: CheckpointRecord {
                id: "4b1e0c9a".into(),
                session_id: "s".into(),
                run_id: "r".into(),
                prompt: "edit".into(),
                step: 0,
                commit: "c".into(),
                end_commit: None,
                created_at: 0,
            },
            code: true,
            files: (0..files)
                .map(|i| FileChange {
                    path: format!("f{i:02}.txt"),
                    kind: ChangeKind::Modified,
                })
                .collect(),
            left: left.iter().map(|s| s.to_string()).collect(),
            conversation: false,
            undo: None,
        }
    }

    #[test]
    fn the_report_names_what_was_restored_and_what_was_left() {
        let lines = report(&rewound(0, &[]));
        assert_eq!(
            lines[1],
            "files restored: none (they were as at the checkpoint)"
        );

        let lines = report(&rewound(25, &["big.bin"]));
        let restored = &lines[1];
        assert!(
            restored.starts_with("files restored: ~f00.txt ~f01.txt"),
            "{restored}"
        );
        assert!(restored.contains("~f19.txt"), "{restored}");
        assert!(!restored.contains("f20.txt"), "{restored}");
        assert!(restored.ends_with(" … and 5 more"), "{restored}");
        assert!(lines[2].starts_with("not restored ("), "{}", lines[2]);
        assert!(lines[2].ends_with("): big.bin"), "{}", lines[2]);
    }
}
