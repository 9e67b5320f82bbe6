//! Writing a message without copying it: how a megabytes-long answer is stored.
//!
//! Binding a text to an `INSERT` makes SQLite copy it, and building the row makes a second
//! copy, so storing a 10 MB answer briefly cost 20 MB on top of the answer itself. A
//! message at least [`LONG_TEXT`] long is written instead into the row's last column,
//! `body`, as a zero-filled BLOB of its length (which SQLite writes page by page without
//! building it in memory, but only as a row's last column) that is then filled in place
//! through incremental BLOB I/O; its `content` stays empty. Readers select
//! [`CONTENT`], which gives the text whichever column holds it.

use rusqlite::{Connection, MAIN_DB, params};

use crate::protocol::ChatMessage;

/// From this length on, a message's text goes to `body`. Below it the two copies do not
/// matter, and the row stays readable as plain text in any SQLite browser.
pub(super) const LONG_TEXT: usize = 256 * 1024;

/// The message's text, whichever column holds it (`body` is NULL for short messages and
/// for every message written before migration 5).
pub(super) const CONTENT: &str = "COALESCE(CAST(body AS TEXT), content)";

/// The columns of a `messages` row besides its text.
pub(super) struct MessageRow<'a> {
    pub session_id: &'a str,
    pub run_id: Option<&'a str>,
    pub message: &'a ChatMessage,
    pub tool_calls: Option<String>,
    pub created_at: i64,
}

/// Inserts the row and returns its id. Call it inside a transaction: a long message is an
/// insert and a write, and must never be seen (or survive a crash) zero-filled.
pub(super) fn insert_message(conn: &Connection, row: &MessageRow<'_>) -> rusqlite::Result<i64> {
    let msg = row.message;
    let text = msg.content.as_str();
    let long = text.len() >= LONG_TEXT;
    // `zeroblob(NULL)` is an empty BLOB, not NULL: short messages bind NULL directly.
    let (content, body, body_len) = if long {
        ("", "zeroblob(?10)", Some(text.len() as i64))
    } else {
        (text, "?10", None)
    };
    let sql = format!(
        "INSERT INTO messages (session_id, run_id, role, content, tool_calls, tool_call_id,
                               tool_name, is_error, created_at, body)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, {body})"
    );
    conn.execute(
        &sql,
        params![
            row.session_id,
            row.run_id,
            msg.role.as_str(),
            content,
            row.tool_calls,
            msg.tool_call_id,
            msg.tool_name,
            msg.is_error,
            row.created_at,
            body_len,
        ],
    )?;
    let id = conn.last_insert_rowid();
    if long {
        let mut body = conn.blob_open(MAIN_DB, "messages", "body", id, false)?;
        body.write_at(text.as_bytes(), 0)?;
        body.close()?;
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use super::*;

    #[test]
    fn a_long_message_is_stored_in_body_and_reads_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.create_session("s", "/repo", "m").unwrap();
        let long = "ü long answer\n".repeat(LONG_TEXT / 10);
        let short = ChatMessage::assistant("short", Vec::new());
        store.append_message("s", Some("r"), &short).unwrap();
        let id = store
            .append_message(
                "s",
                Some("r"),
                &ChatMessage::assistant(long.as_str(), Vec::new()),
            )
            .unwrap();
        let loaded = store.load_messages("s").unwrap();
        assert_eq!(loaded.len(), 2);
        assert_eq!(loaded[0].content, "short");
        assert_eq!(loaded[1].content, long);
        assert_eq!(store.run_messages("r").unwrap()[1].content, long);
        // Stored once: in `body`, with `content` left empty.
        let (content, body_len): (String, i64) = store
            .conn
            .query_row(
                "SELECT content, length(body) FROM messages WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((content.as_str(), body_len), ("", long.len() as i64));
    }

    /// A database written before migration 5 (answers copied into the outcome's `detail`)
    /// still reads the same after the upgrade.
    #[test]
    fn a_database_from_before_migration_5_reads_as_it_did() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(crate::store::DB_FILE);
        {
            let conn = Connection::open(&path).unwrap();
            for sql in &crate::store::schema::MIGRATIONS[..4] {
                conn.execute_batch(sql).unwrap();
            }
            conn.execute_batch(
                "PRAGMA user_version = 4;
                 INSERT INTO projects (id, root, created_at) VALUES (1, '/repo', 0);
                 INSERT INTO sessions (id, project_id, model, created_at, updated_at)
                     VALUES ('s', 1, 'm', 0, 0);
                 INSERT INTO runs (id, session_id, agent_id, task, status, started_at)
                     VALUES ('r', 's', 'ling', 'task', 'completed', 0);
                 INSERT INTO messages (session_id, run_id, role, content, created_at)
                     VALUES ('s', 'r', 'assistant', 'the old answer', 0);
                 INSERT INTO run_log (run_id, kind, text, detail, ok, created_at)
                     VALUES ('r', 'outcome', 'completed', 'the old answer', 1, 0);",
            )
            .unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(
            store.load_messages("s").unwrap()[0].content,
            "the old answer"
        );
        let log = store.run_log("r").unwrap();
        assert_eq!(log[0].detail.as_deref(), Some("the old answer"));
    }
}
