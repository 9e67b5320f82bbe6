//! `/tasks`: the session's background commands (`Bash` with `run_in_background`) as the
//! view folded them from `TaskUpdated` — command, age, state, last lines — and `/tasks stop
//! ID`, which asks the session to stop one.

use super::shell::Shell;
use crate::session::Input;
use crate::text::{one_line, plural};
use crate::tools::background::{TaskInfo, TaskState};

impl Shell {
    pub(super) async fn tasks(&mut self, args: &str) {
        let mut words = args.split_whitespace();
        match (words.next(), words.next()) {
            (None, _) => {
                let now = crate::session::ids::now_ms().max(0) as u64;
                let lines = task_lines(&self.view.session().tasks, now);
                self.view.lines(lines);
            }
            (Some("stop" | "kill"), id) => self.stop_task(id).await,
            (Some(other), _) => self.view.error(&format!(
                "unknown /tasks action `{other}`; use /tasks to list them or /tasks stop ID"
            )),
        }
    }

    /// Stops the command named, or the only one running when none is named.
    async fn stop_task(&mut self, id: Option<&str>) {
        let running: Vec<String> = self
            .view
            .session()
            .tasks
            .iter()
            .filter(|t| t.state == TaskState::Running)
            .map(|t| t.id.clone())
            .collect();
        let id = match (id, running.as_slice()) {
            (Some(id), _) => id.to_string(),
            (None, [only]) => only.clone(),
            (None, []) => {
                self.view.error("no background command is running");
                return;
            }
            (None, _) => {
                self.view.error(&format!(
                    "say which one: /tasks stop ID ({} run)",
                    running.join(", ")
                ));
                return;
            }
        };
        if self.link.live.is_none() {
            self.view
                .error("no session yet, so no background command to stop");
            return;
        }
        if self
            .ask(Input::StopTask {
                task_id: id.clone(),
            })
            .await
        {
            self.view.hint(&format!("stopped {id}"));
        }
    }
}

/// One block per command: its id, state and age, the command, its last lines.
pub(super) fn task_lines(tasks: &[TaskInfo], now_ms: u64) -> Vec<String> {
    if tasks.is_empty() {
        return vec![
            "no background commands in this session (the agent starts one with Bash's \
             run_in_background)"
                .into(),
        ];
    }
    let mut lines = Vec::new();
    for task in tasks {
        let end = task.ended_at_ms.unwrap_or(now_ms);
        let age = duration(end.saturating_sub(task.started_at_ms));
        let when = match task.state {
            TaskState::Running => format!("running for {age}"),
            _ => format!("{} after {age}", task.state_words()),
        };
        lines.push(format!(
            "{}  {when} · {} · {}",
            task.id,
            plural(task.lines as usize, "line", "lines"),
            one_line(&task.command, 160)
        ));
        for tail in &task.tail {
            lines.push(format!("  ⎿ {}", one_line(tail, 200)));
        }
    }
    if tasks.iter().any(|t| t.state == TaskState::Running) {
        lines.push("/tasks stop ID stops one (and everything it started)".into());
    }
    lines
}

/// `45 s`, `3 min 05 s`, `2 h 10 min`.
fn duration(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min {:02} s", secs / 60, secs % 60),
        _ => format!("{} h {:02} min", secs / 3600, secs / 60 % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::background::StopBy;

    fn task(id: &str, state: TaskState, tail: &[&str]) -> TaskInfo {
        TaskInfo {
            id: id.into(),
            command: "npm run dev\n--port 3000".into(),
            state,
            exit_code: (state == TaskState::Exited).then_some(1),
            signal: None,
            stopped_by: (state == TaskState::Stopped).then_some(StopBy::Person),
            started_at_ms: 1_000,
            ended_at_ms: (state != TaskState::Running).then_some(4_000),
            total_bytes: 40,
            lines: 3,
            tail: tail.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn each_command_shows_its_state_age_and_last_lines() {
        let lines = task_lines(
            &[
                task("bash_1", TaskState::Running, &["ready on :3000"]),
                task("bash_2", TaskState::Exited, &[]),
                task("bash_3", TaskState::Stopped, &[]),
            ],
            126_000,
        );
        assert_eq!(
            lines,
            [
                "bash_1  running for 2 min 05 s · 3 lines · npm run dev…",
                "  ⎿ ready on :3000",
                "bash_2  exit 1 after 3 s · 3 lines · npm run dev…",
                "bash_3  stopped after 3 s · 3 lines · npm run dev…",
                "/tasks stop ID stops one (and everything it started)",
            ]
        );
        assert!(task_lines(&[], 0)[0].starts_with("no background commands"));
        assert_eq!(duration(7_300_000), "2 h 01 min");
    }
}
