//! What a run did, kept for later: its checkpoints (for `/rewind` and `linggen rewind`) and
//! its audit trail (calls with their arguments, results with exit codes and diffs,
//! checkpoints, the files changed, the outcome) for `linggen runs show`.

use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;

use super::{Store, StoreError};
use crate::clock::now_ms;

/// A snapshot taken before the first change of a prompt or auto-mode step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckpointRecord {
    pub id: String,
    pub session_id: String,
    /// The turn's top-level run.
    pub run_id: String,
    pub prompt: String,
    pub step: u32,
    /// The tree before the change.
    pub commit: String,
    /// The tree when the turn ended (`None` while it runs, or when it never ended).
    pub end_commit: Option<String>,
    pub created_at: i64,
}

/// One line of a run's audit trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogEntry {
    /// `call`, `result`, `checkpoint`, `changes` or `outcome`.
    pub kind: String,
    pub text: String,
    /// Arguments (JSON) of a call; the diff or output excerpt of a result.
    pub detail: Option<String>,
    /// Whether a result succeeded.
    pub ok: Option<bool>,
    pub created_at: i64,
}

const CHECKPOINT_COLUMNS: &str =
    "id, session_id, run_id, prompt, step, commit_id, end_commit, created_at FROM checkpoints";

fn checkpoint(r: &Row<'_>) -> rusqlite::Result<CheckpointRecord> {
    Ok(CheckpointRecord {
        id: r.get(0)?,
        session_id: r.get(1)?,
        run_id: r.get(2)?,
        prompt: r.get(3)?,
        step: r.get(4)?,
        commit: r.get(5)?,
        end_commit: r.get(6)?,
        created_at: r.get(7)?,
    })
}

impl Store {
    pub fn add_checkpoint(&self, c: &CheckpointRecord) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO checkpoints (id, session_id, run_id, prompt, step, commit_id, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    c.id,
                    c.session_id,
                    c.run_id,
                    c.prompt,
                    c.step,
                    c.commit,
                    c.created_at
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The tree as the turn `run_id` left it, for each of its checkpoints.
    pub fn close_checkpoints(&self, run_id: &str, commit: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE checkpoints SET end_commit = ?2 WHERE run_id = ?1",
                params![run_id, commit],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// A session's checkpoints, oldest first.
    pub fn checkpoints(&self, session_id: &str) -> Result<Vec<CheckpointRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {CHECKPOINT_COLUMNS} WHERE session_id = ?1 ORDER BY created_at, rowid"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([session_id], checkpoint)
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// The conversation as it was before the turn `run_id` began (its first message).
    pub fn conversation_before(
        &self,
        session_id: &str,
        run_id: &str,
    ) -> Result<Vec<crate::protocol::ChatMessage>, StoreError> {
        let first: Option<i64> = self
            .conn
            .query_row(
                "SELECT MIN(id) FROM messages WHERE run_id = ?1",
                [run_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?
            .flatten();
        self.messages_before(session_id, first.unwrap_or(i64::MAX))
    }

    pub fn log(
        &self,
        run_id: &str,
        kind: &str,
        text: &str,
        detail: Option<&str>,
        ok: Option<bool>,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO run_log (run_id, kind, text, detail, ok, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![run_id, kind, text, detail, ok, now_ms()],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The outcome of a run whose result is the text of message `message_id` (its final
    /// answer): the entry names the message instead of holding a second copy of it.
    pub fn log_outcome_answer(
        &self,
        run_id: &str,
        text: &str,
        message_id: i64,
        ok: bool,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO run_log (run_id, kind, text, message_id, ok, created_at)
                 VALUES (?1, 'outcome', ?2, ?3, ?4, ?5)",
                params![run_id, text, message_id, ok, now_ms()],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// A run's audit trail, oldest first. An outcome that names its answer's message reads
    /// the answer from it, so the entry looks as if it held the text.
    pub fn run_log(&self, run_id: &str) -> Result<Vec<LogEntry>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT kind, text,
                    COALESCE(detail, (SELECT {} FROM messages m WHERE m.id = run_log.message_id)),
                    ok, created_at
                 FROM run_log WHERE run_id = ?1 ORDER BY id",
                super::long_text::CONTENT
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([run_id], |r| {
                Ok(LogEntry {
                    kind: r.get(0)?,
                    text: r.get(1)?,
                    detail: r.get(2)?,
                    ok: r.get(3)?,
                    created_at: r.get(4)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }
}
