//! Sessions in SQLite (`$LINGGEN_HOME/linggen.db`, WAL). The store is a subscriber of the
//! session's events: `session::persist::spawn_writer` persists each message as soon as it
//! is complete, so a crash loses at most the reply in flight. The store knows rows, not
//! events: it reads the shared `protocol` types and nothing above them.

mod audit;
mod images;
mod inspect;
mod lease;
mod long_text;
mod schedules;
mod schema;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OptionalExtension, params};

pub use inspect::RunDetail;
pub use lease::{Holder, HolderKind, LeaseError, SessionLease};

use crate::clock::now_ms;
use crate::protocol::{ChatMessage, Role};

pub const DB_FILE: &str = "linggen.db";

/// How long to wait for another linggen holding the write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "the session database {0} is locked by another process; wait for it to finish or close the other linggen"
    )]
    Locked(PathBuf),
    #[error(
        "the session database {0} is not a valid SQLite database (corrupt?); move it aside (linggen will create a new one) and rerun"
    )]
    Corrupt(PathBuf),
    #[error(
        "the session database {0} is read-only; make it (and its directory) writable or set LINGGEN_HOME elsewhere"
    )]
    ReadOnly(PathBuf),
    #[error(
        "the session database {path} was written by a newer linggen (schema {found}, this one knows {known}); upgrade linggen"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error(
        "the disk holding the session database {0} is full; free some space there (or set LINGGEN_HOME to a folder on another disk) and retry"
    )]
    DiskFull(PathBuf),
    #[error(
        "the session database {path} could not be read or written (disk I/O error: {source}); check that its disk is mounted and healthy, or set LINGGEN_HOME elsewhere"
    )]
    DiskIo {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("no session matches `{0}`; `linggen sessions` lists them")]
    NoSuchSession(String),
    #[error("`{0}` matches several sessions; give more of the id")]
    Ambiguous(String),
    #[error("session database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("cannot create {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A stored session, for listings and resuming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    pub id: String,
    pub root: String,
    pub model: String,
    pub title: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub message_count: i64,
}

/// A run as stored in `runs`.
pub use audit::{CheckpointRecord, LogEntry};
pub use schedules::ScheduleRecord;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRecord {
    pub id: String,
    pub parent_id: Option<String>,
    pub agent_id: String,
    pub task: String,
    pub status: String,
    /// The model that served its last call, once one did.
    pub model: Option<String>,
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) the database in `home` and brings its schema up to date.
    /// Opens (creating) the database in `home`. Transcripts are private: the folder is
    /// created 0700, and the database files are made 0600 even when an older linggen or the
    /// umask left them readable to other users.
    pub fn open(home: &Path) -> Result<Store, StoreError> {
        private_dir(home).map_err(|e| io_error(home, e))?;
        let store = Self::open_path(&home.join(DB_FILE))?;
        for suffix in ["", "-wal", "-shm"] {
            let file = home.join(format!("{DB_FILE}{suffix}"));
            match make_private(&file, 0o600) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io_error(&file, e));
                }
                _ => {}
            }
        }
        Ok(store)
    }

    pub fn open_path(path: &Path) -> Result<Store, StoreError> {
        let conn = Connection::open(path).map_err(|e| classify(path, e))?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.init().map_err(|e| classify(path, e))?;
        store.migrate()?;
        Ok(store)
    }

    fn init(&self) -> rusqlite::Result<()> {
        self.conn.busy_timeout(BUSY_TIMEOUT)?;
        // Reading the mode also makes SQLite read the header, which is where a corrupt file
        // or a non-database is noticed.
        //
        // Switching a new file to WAL needs it to itself; SQLite answers BUSY at once (without
        // the busy handler) when another linggen is opening the same new file, so retry for
        // as long as the busy timeout would have waited.
        let started = std::time::Instant::now();
        loop {
            match self
                .conn
                .query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
            {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy
                        && started.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                result => {
                    result?;
                    break;
                }
            }
        }
        self.conn
            .execute_batch("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")
    }

    fn migrate(&self) -> Result<(), StoreError> {
        let err = |e| classify(&self.path, e);
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(err)?;
        let known = schema::MIGRATIONS.len() as i64;
        if version > known {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                found: version,
                known,
            });
        }
        if version == known {
            return Ok(());
        }
        // Another linggen may be creating the same database right now (a `-p` run and
        // `linggen sessions` started together): take the write lock first (waiting up to the
        // busy timeout), then look again, so a step is never applied twice. The pending
        // steps go in one transaction: a first run creates the database in one commit.
        let tx = rusqlite::Transaction::new_unchecked(
            &self.conn,
            rusqlite::TransactionBehavior::Immediate,
        )
        .map_err(err)?;
        let now: i64 = tx
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(err)?;
        for sql in schema::MIGRATIONS.iter().skip(now.max(0) as usize) {
            tx.execute_batch(sql).map_err(err)?;
        }
        tx.pragma_update(None, "user_version", known.max(now))
            .map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(())
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        classify(&self.path, e)
    }

    fn project_id(&self, root: &str) -> Result<i64, StoreError> {
        self.conn
            .execute(
                "INSERT INTO projects (root, created_at) VALUES (?1, ?2) ON CONFLICT(root) DO NOTHING",
                params![root, now_ms()],
            )
            .map_err(|e| self.err(e))?;
        self.conn
            .query_row("SELECT id FROM projects WHERE root = ?1", [root], |r| {
                r.get(0)
            })
            .map_err(|e| self.err(e))
    }

    pub fn create_session(&self, id: &str, root: &str, model: &str) -> Result<(), StoreError> {
        let project = self.project_id(root)?;
        let now = now_ms();
        self.conn
            .execute(
                "INSERT INTO sessions (id, project_id, model, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)",
                params![id, project, model, now],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Records the model a session is on now (`/model` changed it).
    pub fn set_session_model(&self, id: &str, model: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE sessions SET model = ?2 WHERE id = ?1",
                params![id, model],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Sessions of one workspace that have at least one message, newest first. (A shell
    /// opened and closed without a word leaves an empty session behind; nobody wants to
    /// resume that.)
    pub fn list_sessions(&self, root: &str) -> Result<Vec<SessionInfo>, StoreError> {
        self.query_sessions(
            "WHERE p.root = ?1 AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)
             ORDER BY s.updated_at DESC, s.rowid DESC",
            root,
        )
    }

    /// The newest session of a workspace (`--continue`).
    pub fn latest_session(&self, root: &str) -> Result<Option<SessionInfo>, StoreError> {
        Ok(self.list_sessions(root)?.into_iter().next())
    }

    /// A session by id or unique id prefix (`--resume`).
    pub fn find_session(&self, id: &str) -> Result<SessionInfo, StoreError> {
        let pattern = format!("{}%", id.replace(['%', '_'], ""));
        let mut found =
            self.query_sessions("WHERE s.id LIKE ?1 ORDER BY s.updated_at DESC", &pattern)?;
        match found.len() {
            0 => Err(StoreError::NoSuchSession(id.to_string())),
            1 => Ok(found.remove(0)),
            _ => match found.iter().position(|s| s.id == id) {
                Some(i) => Ok(found.remove(i)),
                None => Err(StoreError::Ambiguous(id.to_string())),
            },
        }
    }

    fn query_sessions(&self, clause: &str, arg: &str) -> Result<Vec<SessionInfo>, StoreError> {
        let sql = format!(
            "SELECT s.id, p.root, s.model, s.title, s.created_at, s.updated_at,
                    (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)
             FROM sessions s JOIN projects p ON p.id = s.project_id {clause}"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([arg], |r| {
                Ok(SessionInfo {
                    id: r.get(0)?,
                    root: r.get(1)?,
                    model: r.get(2)?,
                    title: r.get(3)?,
                    created_at: r.get(4)?,
                    updated_at: r.get(5)?,
                    message_count: r.get(6)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Appends one complete message and returns its id; the first user message becomes the
    /// session's title.
    pub fn append_message(
        &self,
        session_id: &str,
        run_id: Option<&str>,
        msg: &ChatMessage,
    ) -> Result<i64, StoreError> {
        let tool_calls = if msg.tool_calls.is_empty() {
            None
        } else {
            serde_json::to_string(&msg.tool_calls).ok()
        };
        let now = now_ms();
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        let row = long_text::MessageRow {
            session_id,
            run_id,
            message: msg,
            tool_calls,
            created_at: now,
        };
        let id = long_text::insert_message(&tx, &row).map_err(|e| self.err(e))?;
        images::insert(&tx, id, &msg.images).map_err(|e| self.err(e))?;
        let title: String = msg
            .content
            .lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(80)
            .collect();
        tx.execute(
            "UPDATE sessions SET updated_at = ?2,
                 title = CASE WHEN title = '' AND ?3 = 'user' THEN ?4 ELSE title END
             WHERE id = ?1",
            params![session_id, now, msg.role.as_str(), title],
        )
        .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok(id)
    }

    /// The stored conversation, oldest first, without system messages and without the
    /// messages of delegated runs (they had their own history, which the parent never saw) (the system prompt is
    /// rebuilt fresh on resume so it reflects today's workspace).
    /// The conversation to resume: after a compaction, its history and the messages
    /// since; otherwise every message of the session's turns.
    pub fn load_messages(&self, session_id: &str) -> Result<Vec<ChatMessage>, StoreError> {
        self.messages_before(session_id, i64::MAX)
    }

    /// The conversation to resume as it was before message `before` was stored: the latest
    /// compaction made before it, then the messages since, up to it.
    pub(crate) fn messages_before(
        &self,
        session_id: &str,
        before: i64,
    ) -> Result<Vec<ChatMessage>, StoreError> {
        let compacted: Option<(i64, String)> = self
            .conn
            .query_row(
                "SELECT after_message_id, history FROM compactions
                 WHERE session_id = ?1 AND after_message_id < ?2 ORDER BY id DESC LIMIT 1",
                params![session_id, before],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let (after, mut history) = match compacted {
            Some((after, json)) => {
                // A history that does not parse (edited by hand?) is a corrupt database.
                let history: Vec<ChatMessage> = serde_json::from_str(&json)
                    .map_err(|_| StoreError::Corrupt(self.path.clone()))?;
                (after, history)
            }
            None => (0, Vec::new()),
        };
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT role, {}, tool_calls, tool_call_id, tool_name, is_error, run_id, id
                 FROM messages WHERE session_id = ?1 AND id > ?2 AND id < ?3 AND role != 'system'
                   AND (run_id IS NULL OR run_id NOT IN
                        (SELECT id FROM runs WHERE parent_id IS NOT NULL))
                 ORDER BY id",
                long_text::CONTENT
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![session_id, after, before], |r| {
                Ok((r.get::<_, i64>(7)?, chat_message(r)?))
            })
            .map_err(|e| self.err(e))?;
        let mut images =
            images::of_messages(&self.conn, session_id, after, before).map_err(|e| self.err(e))?;
        for row in rows {
            let (id, mut message) = row.map_err(|e| self.err(e))?;
            message.images = images.remove(&id).unwrap_or_default();
            history.push(message);
        }
        Ok(history)
    }

    /// Records that the conversation so far (every message stored until now) is replaced by
    /// `history` (without the system prompt) when the session is resumed.
    pub fn save_compaction(
        &self,
        session_id: &str,
        history: &[ChatMessage],
    ) -> Result<(), StoreError> {
        let json = serde_json::to_string(history).unwrap_or_else(|_| "[]".into());
        self.conn
            .execute(
                "INSERT INTO compactions (session_id, after_message_id, history, created_at)
                 VALUES (?1, (SELECT COALESCE(MAX(id), 0) FROM messages WHERE session_id = ?1),
                         ?2, ?3)",
                params![session_id, json, now_ms()],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    pub fn start_run(&self, session_id: &str, run: &RunRecord) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO runs (id, session_id, parent_id, agent_id, task, status, started_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6)",
                params![
                    run.id,
                    session_id,
                    run.parent_id,
                    run.agent_id,
                    run.task,
                    now_ms()
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    pub fn finish_run(&self, run_id: &str, status: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET status = ?2, ended_at = ?3 WHERE id = ?1",
                params![run_id, status, now_ms()],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Records the model that served a run's latest call.
    pub fn set_run_model(&self, run_id: &str, model: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET model = ?2 WHERE id = ?1",
                params![run_id, model],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Marks runs of `session_id` still `running` as `failed`: when a session is resumed,
    /// nothing is running it, so such runs belong to a process that died mid-run. Returns
    /// how many were closed.
    pub fn close_stale_runs(&self, session_id: &str) -> Result<usize, StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET status = 'failed', ended_at = ?2
                 WHERE session_id = ?1 AND status = 'running'",
                params![session_id, now_ms()],
            )
            .map_err(|e| self.err(e))
    }

    /// Runs of a session, oldest first.
    pub fn runs(&self, session_id: &str) -> Result<Vec<RunRecord>, StoreError> {
        Ok(self
            .run_details(session_id)?
            .into_iter()
            .map(|run| RunRecord {
                id: run.id,
                parent_id: run.parent_id,
                agent_id: run.agent_id,
                task: run.task,
                status: run.status,
                model: run.model,
            })
            .collect())
    }

    /// Whether a session exists (used by tests and `--resume`).
    pub fn has_session(&self, id: &str) -> Result<bool, StoreError> {
        self.conn
            .query_row("SELECT 1 FROM sessions WHERE id = ?1", [id], |_| Ok(()))
            .optional()
            .map(|r| r.is_some())
            .map_err(|e| self.err(e))
    }
}

/// A message row selected as `role, CONTENT, tool_calls, tool_call_id, tool_name, is_error,
/// run_id` (`CONTENT`: [`long_text::CONTENT`]).
fn chat_message(r: &rusqlite::Row<'_>) -> rusqlite::Result<ChatMessage> {
    let role: String = r.get(0)?;
    let calls: Option<String> = r.get(2)?;
    Ok(ChatMessage {
        role: Role::parse(&role).unwrap_or(Role::User),
        content: r.get::<_, String>(1)?.into(),
        tool_calls: calls
            .and_then(|c| serde_json::from_str(&c).ok())
            .unwrap_or_default(),
        tool_call_id: r.get(3)?,
        tool_name: r.get(4)?,
        is_error: r.get(5)?,
        // Read separately where they are needed (see `images`).
        images: Vec::new(),
        run_id: r.get(6)?,
    })
}

/// Turns SQLite's codes into the errors a person can act on. SQLite reports a full disk as
/// `SQLITE_FULL` only where it notices it itself; a write refused by the kernel is an I/O
/// error, so an I/O error on a disk with no room left is called what it is.
fn classify(path: &Path, e: rusqlite::Error) -> StoreError {
    let path = path.to_path_buf();
    match e.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => StoreError::DiskFull(path),
        Some(ErrorCode::SystemIoFailure | ErrorCode::CannotOpen) if disk_is_full(&path) => {
            StoreError::DiskFull(path)
        }
        Some(ErrorCode::SystemIoFailure) => StoreError::DiskIo { path, source: e },
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked(path),
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Corrupt(path),
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
            StoreError::ReadOnly(path)
        }
        _ => StoreError::Sqlite { path, source: e },
    }
}

/// A file error around the database, named as [`classify`] names SQLite's.
fn io_error(path: &Path, source: std::io::Error) -> StoreError {
    let path = path.to_path_buf();
    use crate::durable::StorageFault;
    match StorageFault::of(&source) {
        Some(StorageFault::DiskFull | StorageFault::QuotaExceeded) => StoreError::DiskFull(path),
        Some(StorageFault::ReadOnly) => StoreError::ReadOnly(path),
        _ => StoreError::Io { path, source },
    }
}

/// Whether the file system holding `path` has (almost) no room left for us: less than a
/// few pages, which is what one more write of SQLite needs.
fn disk_is_full(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let Ok(dir) = std::ffi::CString::new(dir.unwrap_or(path).as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statvfs writes only into the struct it is given; `dir` is NUL-terminated.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(dir.as_ptr(), &mut stat) } != 0 {
        return false;
    }
    (stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64) < 64 * 1024
}

/// Creates `dir` (and its parents) with mode 0700. An existing `.linggen` folder that
/// others can read is tightened; a folder the person chose by `LINGGEN_HOME` (their home,
/// `/tmp`…) is left as it is — the files in it are private either way.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    if !dir.exists() {
        return std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir);
    }
    if dir.file_name().is_some_and(|n| n == ".linggen") {
        make_private(dir, 0o700)?;
    }
    Ok(())
}

/// Sets `mode` on `path` if it is ours and grants more than `mode`.
fn make_private(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let meta = std::fs::metadata(path)?;
    // SAFETY: geteuid has no preconditions.
    let ours = meta.uid() == unsafe { libc::geteuid() };
    if ours && meta.mode() & 0o777 & !mode != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
