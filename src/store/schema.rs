//! Versioned migrations, tracked in `PRAGMA user_version`. Append new steps; never edit a
//! shipped one, or existing databases would not get the change.

pub const MIGRATIONS: &[&str] = &[
    // 1: projects, sessions, messages, runs.
    "
    CREATE TABLE projects (
        id INTEGER PRIMARY KEY,
        root TEXT NOT NULL UNIQUE,
        created_at INTEGER NOT NULL
    );
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id),
        model TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    );
    CREATE INDEX sessions_by_project ON sessions(project_id, updated_at);
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        run_id TEXT,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        tool_calls TEXT,
        tool_call_id TEXT,
        tool_name TEXT,
        is_error INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX messages_by_session ON messages(session_id, id);
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        parent_id TEXT REFERENCES runs(id),
        agent_id TEXT NOT NULL,
        task TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
        started_at INTEGER NOT NULL,
        ended_at INTEGER
    );
    CREATE INDEX runs_by_session ON runs(session_id, started_at);
    ",
    // 2: the model that served each run (its last call's, with routing).
    "ALTER TABLE runs ADD COLUMN model TEXT;",
    // 3: compacted conversations. `history` (JSON) replaces every message up to
    // `after_message_id` when the session is resumed; the messages themselves stay.
    "CREATE TABLE compactions (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        after_message_id INTEGER NOT NULL,
        history TEXT NOT NULL,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX compactions_by_session ON compactions(session_id, id);",
    // 4: checkpoints (snapshots in the project's private checkpoint store) and each run's
    // audit trail: its calls, their results, checkpoints, changes and outcome.
    "CREATE TABLE checkpoints (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        run_id TEXT NOT NULL,
        prompt TEXT NOT NULL,
        step INTEGER NOT NULL,
        commit_id TEXT NOT NULL,
        end_commit TEXT,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX checkpoints_by_session ON checkpoints(session_id, created_at);
    CREATE TABLE run_log (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        text TEXT NOT NULL,
        detail TEXT,
        ok INTEGER,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX run_log_by_run ON run_log(run_id, id);",
    // 5: each answer stored once. A long message's text goes to `body`, the row's last
    // column, written in place (see `long_text`); an `outcome` entry whose result is its
    // run's last answer names that message (`message_id`) instead of copying it into
    // `detail`.
    "ALTER TABLE messages ADD COLUMN body BLOB;
    ALTER TABLE run_log ADD COLUMN message_id INTEGER REFERENCES messages(id);",
    // 6: the images of a message (a tool's screenshot), base64 as sent to the model, in
    // their own table so that `messages.body` stays the row's last column.
    "CREATE TABLE message_images (
        message_id INTEGER NOT NULL REFERENCES messages(id),
        position INTEGER NOT NULL,
        media_type TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (message_id, position)
    );",
    // 7: schedules (`linggen schedule`), run by `linggen serve` of their workspace.
    // `last_due` is the time (unix seconds) of the last occurrence that was run or skipped:
    // the next run is the first occurrence after it, so runs missed while nothing ran
    // them come back as one, never as a burst.
    "CREATE TABLE schedules (
        id TEXT PRIMARY KEY,
        root TEXT NOT NULL,
        cron TEXT NOT NULL,
        task TEXT NOT NULL,
        agent TEXT,
        model TEXT,
        created_at INTEGER NOT NULL,
        last_due INTEGER NOT NULL,
        last_started_at INTEGER,
        last_session_id TEXT,
        last_outcome TEXT
    );
    CREATE INDEX schedules_by_root ON schedules(root);",
];
