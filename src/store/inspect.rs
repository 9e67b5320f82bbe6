//! Read-only queries for inspecting runs (the web mirror's `/api/agent-*` routes).

use rusqlite::{OptionalExtension, Row, params};

use super::{Store, StoreError};
use crate::protocol::ChatMessage;

/// A run with where and when it happened.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RunDetail {
    pub id: String,
    pub session_id: String,
    pub parent_id: Option<String>,
    pub agent_id: String,
    pub task: String,
    pub status: String,
    pub started_at: i64,
    pub ended_at: Option<i64>,
    /// The model that served its last call.
    pub model: Option<String>,
}

const RUN_COLUMNS: &str =
    "id, session_id, parent_id, agent_id, task, status, started_at, ended_at, model FROM runs";

fn run_detail(r: &Row<'_>) -> rusqlite::Result<RunDetail> {
    Ok(RunDetail {
        id: r.get(0)?,
        session_id: r.get(1)?,
        parent_id: r.get(2)?,
        agent_id: r.get(3)?,
        task: r.get(4)?,
        status: r.get(5)?,
        started_at: r.get(6)?,
        ended_at: r.get(7)?,
        model: r.get(8)?,
    })
}

impl Store {
    /// Every run of a session, oldest first.
    pub fn run_details(&self, session_id: &str) -> Result<Vec<RunDetail>, StoreError> {
        self.query_runs(
            &format!("SELECT {RUN_COLUMNS} WHERE session_id = ?1 ORDER BY started_at, rowid"),
            session_id,
        )
    }

    /// The runs `run_id` delegated to, oldest first.
    pub fn run_children(&self, run_id: &str) -> Result<Vec<RunDetail>, StoreError> {
        self.query_runs(
            &format!("SELECT {RUN_COLUMNS} WHERE parent_id = ?1 ORDER BY started_at, rowid"),
            run_id,
        )
    }

    /// The run with this id, or the one run whose id starts with it.
    pub fn find_run(&self, id: &str) -> Result<Option<RunDetail>, StoreError> {
        if let Some(run) = self.run(id)? {
            return Ok(Some(run));
        }
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Ok(None);
        }
        let found = self.query_runs(
            &format!("SELECT {RUN_COLUMNS} WHERE id LIKE ?1 || '%' LIMIT 2"),
            id,
        )?;
        Ok(if found.len() == 1 {
            found.into_iter().next()
        } else {
            None
        })
    }

    pub fn run(&self, run_id: &str) -> Result<Option<RunDetail>, StoreError> {
        self.conn
            .query_row(
                &format!("SELECT {RUN_COLUMNS} WHERE id = ?1"),
                [run_id],
                run_detail,
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// The messages one run added to its conversation, oldest first.
    pub fn run_messages(&self, run_id: &str) -> Result<Vec<ChatMessage>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT role, {}, tool_calls, tool_call_id, tool_name, is_error, run_id
                 FROM messages WHERE run_id = ?1 ORDER BY id",
                super::long_text::CONTENT
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![run_id], super::chat_message)
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Every message of the session, its delegated runs' included, oldest first, without
    /// system prompts: what was said and done, whatever a compaction later replaced (the
    /// transcript a person reads, not the history a model resumes with).
    pub fn session_transcript(&self, session_id: &str) -> Result<Vec<ChatMessage>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT role, {}, tool_calls, tool_call_id, tool_name, is_error, run_id
                 FROM messages WHERE session_id = ?1 AND role != 'system' ORDER BY id",
                super::long_text::CONTENT
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![session_id], super::chat_message)
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    fn query_runs(&self, sql: &str, key: &str) -> Result<Vec<RunDetail>, StoreError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.err(e))?;
        let rows = stmt.query_map([key], run_detail).map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }
}
