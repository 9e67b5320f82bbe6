//! The store as a subscriber of a session: a thread (SQLite calls block) that writes each
//! message and run change as its event arrives. It lives with the session, whose events
//! and projection it reads, so the store itself knows nothing of them.

use std::thread::JoinHandle;

use crate::session::Event;
use crate::session::bus::Subscription;
use crate::session::view::SessionView;
use crate::shared_text::SharedText;
use crate::store::{CheckpointRecord, RunRecord, Store, StoreError};

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
        let mut record = Record::default();
        while let Some(envelope) = events.blocking_recv() {
            if let Err(e) = record.persist(&store, &session_id, &envelope.event)
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
            | Event::SubagentSpawned { .. }
            | Event::Outcome { .. }
            | Event::SubagentResult { .. }
            | Event::SessionStarted { .. }
            | Event::SettingsUpdated { .. }
            | Event::ModelRouted { .. }
            | Event::Compacted { .. }
            | Event::ToolCallStarted { .. }
            | Event::ToolCallFinished { .. }
            | Event::CheckpointCreated { .. }
            | Event::CheckpointClosed { .. }
            | Event::ChangeReport { .. }
            | Event::HookRan { .. }
    )
}

/// What the writer knows of the session: the one projection every frontend folds, fed the
/// events it stores, so runs and settings are written as the session holds them.
#[derive(Default)]
struct Record {
    view: SessionView,
    /// The model last written to the session's row.
    model: Option<String>,
    /// The model last written for each run.
    stored_models: std::collections::HashMap<String, String>,
    /// Each running run's latest assistant message: its id and its text (shared with the
    /// event, not a copy). An outcome whose result is that text names the message.
    answers: std::collections::HashMap<String, (i64, SharedText)>,
}

impl Record {
    fn persist(
        &mut self,
        store: &Store,
        session_id: &str,
        event: &Event,
    ) -> Result<(), StoreError> {
        self.view.apply(event);
        self.persist_runs(store, session_id, event)?;
        log_audit(store, session_id, event)?;
        self.persist_session(store, session_id, event)
    }

    /// Messages as they complete, and runs as they start and end.
    fn persist_runs(
        &mut self,
        store: &Store,
        session_id: &str,
        event: &Event,
    ) -> Result<(), StoreError> {
        match event {
            Event::Message { run_id, .. } => {
                if let Some(msg) = event.as_chat_message() {
                    let id = store.append_message(session_id, Some(run_id), &msg)?;
                    if msg.role == crate::protocol::Role::Assistant {
                        self.answers.insert(run_id.clone(), (id, msg.content));
                    }
                }
            }
            Event::RunStarted { run_id, .. } => {
                if let Some(run) = self.view.run(run_id) {
                    store.start_run(
                        session_id,
                        &RunRecord {
                            id: run.run_id.clone(),
                            parent_id: run.parent_id.clone(),
                            agent_id: run.agent_id.clone(),
                            task: run.task.clone(),
                            status: run.status.stored().into(),
                            model: None,
                        },
                    )?;
                }
            }
            Event::Outcome {
                run_id: id, result, ..
            }
            | Event::SubagentResult {
                subagent_id: id,
                result,
                ..
            } => {
                let answer = self.answers.remove(id);
                if let Some(run) = self.view.run(id) {
                    store.finish_run(id, run.status.stored())?;
                    log_outcome(store, id, run.status, result, answer)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// What the session as a whole resumes from and is listed with.
    fn persist_session(
        &mut self,
        store: &Store,
        session_id: &str,
        event: &Event,
    ) -> Result<(), StoreError> {
        match event {
            // What `--continue` resumes. A delegated run's compaction is its own: only the
            // turns' conversation is resumed.
            Event::Compacted {
                run_id, history, ..
            } if self.view.depth(run_id) == 0 => {
                store.save_compaction(session_id, history)?;
            }
            // Written when it changes: a run whose calls all went to one model is one write.
            Event::ModelRouted {
                run_id, model_id, ..
            } if self.stored_models.get(run_id) != Some(model_id) => {
                store.set_run_model(run_id, model_id)?;
                self.stored_models.insert(run_id.clone(), model_id.clone());
            }
            // `linggen sessions` lists the model a session is on now, not the one it
            // started with.
            Event::SessionStarted { .. } | Event::SettingsUpdated { .. } => {
                let model = self.view.settings.model_id();
                if self.model.as_deref() != Some(model) {
                    store.set_session_model(session_id, model)?;
                    self.model = Some(model.to_string());
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The audit trail (`linggen runs show`): calls, results, checkpoints, hooks, changes.
fn log_audit(store: &Store, session_id: &str, event: &Event) -> Result<(), StoreError> {
    match event {
        Event::ToolCallStarted {
            run_id,
            summary,
            args,
            ..
        } => store.log(run_id, "call", summary, Some(&args.to_string()), None)?,
        Event::ToolCallFinished {
            run_id,
            tool,
            ok,
            summary,
            diff,
            excerpt,
            ..
        } => {
            let text = format!("{tool}: {summary}");
            let detail = diff.as_deref().or(excerpt.as_deref());
            store.log(run_id, "result", &text, detail, Some(*ok))?;
        }
        Event::CheckpointCreated {
            checkpoint_id,
            run_id,
            prompt,
            step,
            commit,
        } => {
            store.add_checkpoint(&CheckpointRecord {
                id: checkpoint_id.clone(),
                session_id: session_id.to_string(),
                run_id: run_id.clone(),
                prompt: prompt.clone(),
                step: *step,
                commit: commit.clone(),
                end_commit: None,
                created_at: crate::session::ids::now_ms(),
            })?;
            let text = match step {
                0 => format!("checkpoint {checkpoint_id}"),
                n => format!("checkpoint {checkpoint_id} (step {n})"),
            };
            store.log(run_id, "checkpoint", &text, Some(commit), None)?;
        }
        // Hooks outside any run are logged under the session's id.
        Event::HookRan {
            run_id,
            event,
            command,
            file,
            result,
            ok,
            duration_ms,
        } => {
            let text = format!("{event} hook `{command}`: {result} ({duration_ms} ms)");
            let run_id = run_id.as_deref().unwrap_or(session_id);
            store.log(run_id, "hook", &text, Some(file), Some(*ok))?;
        }
        Event::CheckpointClosed { run_id, commit } => {
            store.close_checkpoints(run_id, commit)?;
        }
        Event::ChangeReport {
            run_id,
            files,
            truncated_count,
            ..
        } => {
            let mut text = files.join(", ");
            if *truncated_count > 0 {
                text.push_str(&format!(" and {truncated_count} more"));
            }
            store.log(run_id, "changes", &text, None, None)?;
        }
        _ => {}
    }
    Ok(())
}

/// The outcome's line in the audit trail. A result that is the run's last answer (the usual
/// end of a run) is not stored a second time: the entry names the answer's message.
fn log_outcome(
    store: &Store,
    run_id: &str,
    status: crate::session::view::RunStatus,
    result: &SharedText,
    answer: Option<(i64, SharedText)>,
) -> Result<(), StoreError> {
    use crate::session::view::RunStatus;
    // As events spell the outcome (`max_iters`, `stopped`).
    let text = match status {
        RunStatus::Completed => "completed",
        RunStatus::Error => "error",
        RunStatus::Cancelled => "cancelled",
        RunStatus::MaxIters => "max_iters",
        RunStatus::Stopped => "stopped",
        RunStatus::Running | RunStatus::WaitingApproval => "running",
    };
    let ok = status == RunStatus::Completed;
    match answer {
        // The same allocation when the run ended on its answer; equal text otherwise
        // (compared only when the pointers differ, which is rare).
        Some((message_id, answer))
            if !result.is_empty() && (result.same_as(&answer) || *result == answer) =>
        {
            store.log_outcome_answer(run_id, text, message_id, ok)
        }
        _ => store.log(run_id, "outcome", text, Some(result), Some(ok)),
    }
}
