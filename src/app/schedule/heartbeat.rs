//! The heartbeat: with `[heartbeat] every`, `linggen serve` reads `HEARTBEAT.md` in its
//! workspace at that interval and, when the file holds a task, runs it as a scheduled run
//! (see [`super::runner`]). A missing file, or one with only headings, comments and empty
//! list items, costs nothing: no model is called.

use std::path::{Path, PathBuf};

use super::runner::{self, RunOutcome};
use crate::config::heartbeat::HeartbeatSettings;

pub const HEARTBEAT_FILE: &str = "HEARTBEAT.md";
/// A larger file is not read: a heartbeat is a short list of standing tasks.
const MAX_BYTES: u64 = 64 * 1024;

/// The tasks `text` holds, or `None` when there is nothing to do in it.
pub fn task_in(text: &str) -> Option<String> {
    let without_comments = strip_comments(text);
    let holds_task = without_comments.lines().any(|line| {
        let line = line.trim();
        let bare = line
            .trim_start_matches(['-', '*', '+'])
            .trim()
            .trim_start_matches("[ ]")
            .trim_start_matches("[x]")
            .trim();
        !line.is_empty() && !line.starts_with('#') && !bare.is_empty()
    });
    holds_task.then(|| without_comments.trim().to_string())
}

/// Text without `<!-- … -->` comments (an unclosed one runs to the end).
fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        match rest[start..].find("-->") {
            Some(end) => rest = &rest[start + end + 3..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// The file's text when it is a regular file inside the root (a link out of the
/// workspace, a FIFO or a huge file is not read), else `None`.
fn read_file(root: &Path) -> Option<String> {
    let path = root.join(HEARTBEAT_FILE);
    let real = path.canonicalize().ok()?;
    let root = root.canonicalize().ok()?;
    let meta = std::fs::metadata(&real).ok()?;
    if !real.starts_with(&root) || !meta.is_file() || meta.len() > MAX_BYTES {
        return None;
    }
    std::fs::read_to_string(real).ok()
}

/// The prompt a heartbeat run gets.
fn prompt(tasks: &str) -> String {
    format!(
        "Heartbeat: this is a periodic run, with nobody watching. Do what is due among the \
         standing tasks below (from {HEARTBEAT_FILE}), and report briefly what you did; if \
         nothing is due, say so in one line.\n\n{tasks}"
    )
}

/// Starts the heartbeat thread; `told` hears the outcome line of each run.
pub fn spawn(
    home: PathBuf,
    root: PathBuf,
    settings: HeartbeatSettings,
    told: impl Fn(&RunOutcome, String) + Send + 'static,
) {
    let spawned = std::thread::Builder::new()
        .name("linggen-heartbeat".into())
        .spawn(move || {
            loop {
                std::thread::sleep(settings.every);
                let Some(tasks) = read_file(&root).and_then(|text| task_in(&text)) else {
                    continue;
                };
                let outcome = runner::run(&runner::RunSpec {
                    home: &home,
                    root: &root.display().to_string(),
                    task: &prompt(&tasks),
                    agent: settings.agent.as_deref(),
                    model: settings.model.as_deref(),
                });
                let line = outcome.told("heartbeat");
                told(&outcome, line);
            }
        });
    if let Err(e) = spawned {
        eprintln!("linggen: warning: the heartbeat will not run: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_file_with_something_to_do_is_a_task() {
        assert_eq!(task_in(""), None);
        assert_eq!(
            task_in("# Heartbeat\n\n<!-- add tasks below -->\n- \n- [ ]\n"),
            None
        );
        assert_eq!(task_in("<!-- unclosed\n- check the build"), None);
        assert_eq!(
            task_in("# Heartbeat\n<!-- x -->\n- [ ] check that CI is green\n").as_deref(),
            Some("# Heartbeat\n\n- [ ] check that CI is green")
        );
        assert!(task_in("Look at open PRs.").is_some());
    }

    #[test]
    fn a_link_out_of_the_workspace_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "the key").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret"),
            dir.path().join(HEARTBEAT_FILE),
        )
        .unwrap();
        assert_eq!(read_file(dir.path()), None);
        std::fs::remove_file(dir.path().join(HEARTBEAT_FILE)).unwrap();
        std::fs::write(dir.path().join(HEARTBEAT_FILE), "- check CI").unwrap();
        assert_eq!(read_file(dir.path()).as_deref(), Some("- check CI"));
    }
}
