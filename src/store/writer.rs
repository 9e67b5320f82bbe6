//! The store's subscription to a session: a thread (SQLite calls block) that writes each
//! message and run change as its event arrives.

use std::thread::JoinHandle;

use super::{RunRecord, Store};
use crate::session::Event;
use crate::session::bus::Subscription;
use crate::session::view::RunStatus;

/// Persists `session_id`'s events until the bus closes. Write failures (disk full, the file
/// removed) are reported once through `on_error` and do not stop the session: losing the
/// record is better than losing the work in progress.
pub fn spawn_writer(
    store: Store,
    session_id: String,
    mut events: Subscription,
    on_error: impl Fn(String) + Send + 'static,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut reported = false;
        while let Some(envelope) = events.blocking_recv() {
            if let Err(e) = persist(&store, &session_id, &envelope.event)
                && !reported
            {
                reported = true;
                on_error(format!("could not save the session: {e}"));
            }
        }
    })
}

/// The events the writer stores; subscribe with this filter.
pub fn persisted(event: &Event) -> bool {
    matches!(
        event,
        Event::Message { .. }
            | Event::RunStarted { .. }
            | Event::Outcome { .. }
            | Event::SubagentResult { .. }
    )
}

fn persist(store: &Store, session_id: &str, event: &Event) -> Result<(), super::StoreError> {
    match event {
        Event::Message { run_id, .. } => {
            if let Some(msg) = event.as_chat_message() {
                store.append_message(session_id, Some(run_id), &msg)?;
            }
        }
        Event::RunStarted {
            run_id,
            parent_id,
            agent_id,
            task,
        } => store.start_run(
            session_id,
            &RunRecord {
                id: run_id.clone(),
                parent_id: parent_id.clone(),
                agent_id: agent_id.clone(),
                task: task.clone(),
                status: RunStatus::Running.stored().into(),
            },
        )?,
        Event::Outcome { run_id, status, .. } => store.finish_run(run_id, status.run_status())?,
        Event::SubagentResult {
            subagent_id,
            outcome,
            ..
        } => store.finish_run(subagent_id, outcome.run_status())?,
        _ => {}
    }
    Ok(())
}
