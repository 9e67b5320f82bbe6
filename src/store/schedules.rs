//! Schedules (`linggen schedule add|list|remove|run-now`): what to run, when, in which
//! workspace, and how its last run went. `linggen serve` reads them to run them.

use rusqlite::{Row, params};
use serde::Serialize;

use super::{Store, StoreError};

/// One schedule as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScheduleRecord {
    pub id: String,
    /// The workspace root it runs in (as `linggen serve` of that root sees it).
    pub root: String,
    /// Five-field cron expression, in local time.
    pub cron: String,
    pub task: String,
    pub agent: Option<String>,
    pub model: Option<String>,
    /// Unix seconds.
    pub created_at: i64,
    /// The last occurrence that was run (unix seconds); the next run is the first
    /// occurrence after it.
    pub last_due: i64,
    pub last_started_at: Option<i64>,
    /// The session of its last run (in `linggen sessions`).
    pub last_session_id: Option<String>,
    /// One line: how its last run ended.
    pub last_outcome: Option<String>,
}

const COLUMNS: &str = "id, root, cron, task, agent, model, created_at, last_due, last_started_at, \
                       last_session_id, last_outcome FROM schedules";

fn record(r: &Row<'_>) -> rusqlite::Result<ScheduleRecord> {
    Ok(ScheduleRecord {
        id: r.get(0)?,
        root: r.get(1)?,
        cron: r.get(2)?,
        task: r.get(3)?,
        agent: r.get(4)?,
        model: r.get(5)?,
        created_at: r.get(6)?,
        last_due: r.get(7)?,
        last_started_at: r.get(8)?,
        last_session_id: r.get(9)?,
        last_outcome: r.get(10)?,
    })
}

impl Store {
    pub fn add_schedule(&self, s: &ScheduleRecord) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO schedules (id, root, cron, task, agent, model, created_at, last_due)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    s.id,
                    s.root,
                    s.cron,
                    s.task,
                    s.agent,
                    s.model,
                    s.created_at,
                    s.last_due
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The schedules of one workspace, oldest first.
    pub fn schedules(&self, root: &str) -> Result<Vec<ScheduleRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {COLUMNS} WHERE root = ?1 ORDER BY created_at, id"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![root], record)
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// The schedule of `root` whose id is `id` or starts with it, when exactly one does.
    pub fn schedule(&self, root: &str, id: &str) -> Result<Option<ScheduleRecord>, StoreError> {
        let matching: Vec<ScheduleRecord> = self
            .schedules(root)?
            .into_iter()
            .filter(|s| s.id.starts_with(id))
            .collect();
        Ok(match matching.as_slice() {
            [one] => Some(one.clone()),
            _ => matching.into_iter().find(|s| s.id == id),
        })
    }

    pub fn remove_schedule(&self, id: &str) -> Result<bool, StoreError> {
        let removed = self
            .conn
            .execute("DELETE FROM schedules WHERE id = ?1", params![id])
            .map_err(|e| self.err(e))?;
        Ok(removed > 0)
    }

    /// A run of occurrence `due` started (its session is not known yet).
    pub fn schedule_started(&self, id: &str, due: i64, at: i64) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE schedules SET last_due = MAX(last_due, ?2), last_started_at = ?3,
                 last_outcome = 'running' WHERE id = ?1",
                params![id, due, at],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// How the last run ended, and its session.
    pub fn schedule_finished(
        &self,
        id: &str,
        session_id: Option<&str>,
        outcome: &str,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE schedules SET last_session_id = COALESCE(?2, last_session_id),
                 last_outcome = ?3 WHERE id = ?1",
                params![id, session_id, outcome],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }
}
