//! Schedules: `linggen schedule add "CRON" "TASK" [--agent A] [--model M]`, `list`,
//! `remove`, `run-now`, stored in the session database per workspace, and run by
//! `linggen serve` of that workspace ([`spawn_scheduler`]) as one-shot runs
//! (see [`runner`]). See doc/background.md.

pub mod cron;
pub mod heartbeat;
pub mod runner;

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Failure, Start, exit, load_workspace};
use crate::store::{ScheduleRecord, Store};
use cron::{When, local_time, now_secs};
pub use runner::RunOutcome;

/// What `linggen schedule` was asked to do.
#[derive(Debug, Clone)]
pub enum ScheduleCommand {
    Add {
        cron: String,
        task: String,
        agent: Option<String>,
        model: Option<String>,
    },
    List,
    Remove {
        id: String,
    },
    RunNow {
        id: String,
    },
}

/// `linggen schedule …`.
pub fn command(start: &Start, action: ScheduleCommand) -> i32 {
    let ws = match load_workspace(start) {
        Ok(ws) => ws,
        Err(f) => return f.report(),
    };
    let root = ws.root.display().to_string();
    super::print_lines(match action {
        ScheduleCommand::Add {
            cron,
            task,
            agent,
            model,
        } => add(&ws, &root, &cron, &task, agent, model),
        ScheduleCommand::List => list(&ws.home, &root),
        ScheduleCommand::Remove { id } => remove(&ws.home, &root, &id),
        ScheduleCommand::RunNow { id } => return run_now(&ws.home, &root, &id),
    })
}

fn usage(message: impl Into<String>) -> Failure {
    Failure {
        code: exit::USAGE,
        message: message.into(),
    }
}

fn add(
    ws: &super::Workspace,
    root: &str,
    expr: &str,
    task: &str,
    agent: Option<String>,
    model: Option<String>,
) -> Result<Vec<String>, Failure> {
    let when = When::parse(expr).map_err(|e| usage(e.to_string()))?;
    if task.trim().is_empty() {
        return Err(usage(
            "the task is empty; say what to do, e.g. \"run the tests and report failures\"",
        ));
    }
    if let Some(agent) = &agent {
        let agents = ws.agents.get();
        if agents.get(agent).is_none() {
            return Err(usage(format!(
                "no agent named `{agent}`; agents: {}",
                agents.names().join(", ")
            )));
        }
    }
    if let Some(model) = &model {
        let known = ws.config.models.iter().any(|m| &m.id == model);
        if !known && model != "local" && model != "cloud" {
            let ids: Vec<&str> = ws.config.models.iter().map(|m| m.id.as_str()).collect();
            return Err(usage(format!(
                "no model `{model}` in [[models]]; use one of: {}, local, cloud",
                ids.join(", ")
            )));
        }
    }
    let now = now_secs();
    let record = ScheduleRecord {
        id: crate::session::ids::new_id(),
        root: root.to_string(),
        cron: expr.split_whitespace().collect::<Vec<_>>().join(" "),
        task: task.trim().to_string(),
        agent,
        model,
        created_at: now,
        last_due: now,
        last_started_at: None,
        last_session_id: None,
        last_outcome: None,
    };
    Store::open(&ws.home)?.add_schedule(&record)?;
    let next = when.next_after(now).map_or("never".into(), local_time);
    Ok(vec![
        format!(
            "added schedule {}: {} (next {next})",
            short(&record.id),
            record.cron
        ),
        format!(
            "`linggen serve` in {root} runs it; `linggen schedule run-now {}` runs it now",
            short(&record.id)
        ),
    ])
}

fn list(home: &Path, root: &str) -> Result<Vec<String>, Failure> {
    let schedules = Store::open(home)?.schedules(root)?;
    if schedules.is_empty() {
        return Ok(vec![format!(
            "No schedules in {root}. Add one: linggen schedule add \"0 9 * * 1-5\" \"TASK\""
        )]);
    }
    let mut lines = vec![format!("{:<8}  {:<15}  {:<16}  TASK", "ID", "CRON", "NEXT")];
    for s in schedules {
        let next = When::parse(&s.cron)
            .ok()
            .and_then(|w| w.next_after(s.last_due))
            .map_or("never".into(), local_time);
        let with: Vec<String> = [
            s.agent.as_deref().map(|a| format!("agent {a}")),
            s.model.as_deref().map(|m| format!("model {m}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        let with = match with.is_empty() {
            true => String::new(),
            false => format!(" [{}]", with.join(", ")),
        };
        lines.push(format!(
            "{:<8}  {:<15}  {:<16}  {}{with}",
            short(&s.id),
            s.cron,
            next,
            crate::text::one_line(&s.task, 80)
        ));
        if let (Some(at), Some(outcome)) = (s.last_started_at, &s.last_outcome) {
            lines.push(format!("          last run {}: {outcome}", local_time(at)));
        }
        if let Some(session) = &s.last_session_id {
            lines.push(format!(
                "          session {session} (linggen --resume {session})"
            ));
        }
    }
    Ok(lines)
}

fn find(home: &Path, root: &str, id: &str) -> Result<(Store, ScheduleRecord), Failure> {
    let store = Store::open(home)?;
    match store.schedule(root, id.trim())? {
        Some(found) => Ok((store, found)),
        None => Err(usage(format!(
            "no schedule `{id}` in {root} (or the prefix names more than one); `linggen schedule list` shows them"
        ))),
    }
}

fn remove(home: &Path, root: &str, id: &str) -> Result<Vec<String>, Failure> {
    let (store, found) = find(home, root, id)?;
    store.remove_schedule(&found.id)?;
    Ok(vec![format!(
        "removed schedule {}: {} · {}",
        short(&found.id),
        found.cron,
        crate::text::one_line(&found.task, 80)
    )])
}

/// Runs a schedule here and now, as `linggen serve` would, and prints how it went; its
/// next run stays where it was.
fn run_now(home: &Path, root: &str, id: &str) -> i32 {
    let found = match find(home, root, id) {
        Ok((store, found)) => match store.schedule_started(&found.id, 0, now_secs()) {
            Ok(()) => found,
            Err(e) => return Failure::from(e).report(),
        },
        Err(f) => return f.report(),
    };
    eprintln!(
        "linggen: running schedule {}: {}",
        short(&found.id),
        crate::text::one_line(&found.task, 80)
    );
    let outcome = run_and_record(home, &found);
    println!("{}", outcome_line(&found, &outcome));
    for denied in &outcome.denied {
        println!("  denied: {denied}");
    }
    if outcome.ok {
        exit::SUCCESS
    } else {
        exit::FAILURE
    }
}

/// Runs it and stores how it went. Blocking.
fn run_and_record(home: &Path, schedule: &ScheduleRecord) -> RunOutcome {
    let outcome = runner::run(&runner::RunSpec {
        home,
        root: &schedule.root,
        task: &schedule.task,
        agent: schedule.agent.as_deref(),
        model: schedule.model.as_deref(),
    });
    let recorded = Store::open(home).and_then(|store| {
        store.schedule_finished(&schedule.id, outcome.session_id.as_deref(), &outcome.line)
    });
    if let Err(e) = recorded {
        eprintln!(
            "linggen: warning: schedule {}: its outcome was not stored: {e}",
            short(&schedule.id)
        );
    }
    outcome
}

/// `schedule 3f2a91c0: completed: … (session S)`: what a person is told of a run.
pub fn outcome_line(schedule: &ScheduleRecord, outcome: &RunOutcome) -> String {
    outcome.told(&format!("schedule {}", short(&schedule.id)))
}

fn short(id: &str) -> &str {
    &id[..id.len().min(8)]
}

impl Failure {
    fn report(self) -> i32 {
        eprintln!("linggen: error: {}", self.message);
        self.code
    }
}

/// Longest the scheduler sleeps before it looks again (schedules added while it runs are
/// seen within this).
const LOOK_EVERY: Duration = Duration::from_secs(10);

/// `linggen serve`'s scheduler: a thread that runs this workspace's due schedules, one at
/// a time, each as a one-shot run, and tells `told` how each went. A schedule whose time
/// passed while nothing ran it (serve was down) runs once when it is next seen; the next
/// run is then the first time after that start, so missed runs never come as a burst.
pub fn spawn_scheduler(
    home: PathBuf,
    root: String,
    told: impl Fn(&ScheduleRecord, &RunOutcome) + Send + 'static,
) {
    let spawned = std::thread::Builder::new()
        .name("linggen-scheduler".into())
        .spawn(move || {
            let mut warned = false;
            loop {
                let wake = match run_due(&home, &root, &told) {
                    Ok(wake) => wake,
                    Err(e) => {
                        if !std::mem::replace(&mut warned, true) {
                            eprintln!("linggen: warning: schedules cannot be read: {}", e.message);
                        }
                        now_secs() + LOOK_EVERY.as_secs() as i64
                    }
                };
                let secs = (wake - now_secs()).clamp(0, LOOK_EVERY.as_secs() as i64);
                std::thread::sleep(
                    Duration::from_secs(secs as u64).max(Duration::from_millis(200)),
                );
            }
        });
    if let Err(e) = spawned {
        eprintln!("linggen: warning: schedules will not run: {e}");
    }
}

/// Runs what is due now; returns when to look next (unix seconds).
fn run_due(
    home: &Path,
    root: &str,
    told: &impl Fn(&ScheduleRecord, &RunOutcome),
) -> Result<i64, Failure> {
    let schedules = Store::open(home)?.schedules(root)?;
    let mut wake = now_secs() + LOOK_EVERY.as_secs() as i64;
    for schedule in schedules {
        let Ok(when) = When::parse(&schedule.cron) else {
            continue;
        };
        let Some(due) = when.next_after(schedule.last_due) else {
            continue;
        };
        let now = now_secs();
        if due > now {
            wake = wake.min(due);
            continue;
        }
        Store::open(home)?.schedule_started(&schedule.id, now, now)?;
        let outcome = run_and_record(home, &schedule);
        told(&schedule, &outcome);
        if let Some(next) = when.next_after(now) {
            wake = wake.min(next);
        }
    }
    Ok(wake)
}
