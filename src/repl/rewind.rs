//! `/rewind` and `/check` in the shell. `/rewind` lists this session's checkpoints and
//! goes back to one (see [`crate::app::rewind`]); when the files were changed by hand since,
//! it asks before overwriting them. A rewound conversation is picked up by reopening the
//! session, as `/resume` does. `/check CMD` runs an allowlisted verification command; when
//! it fails, the agent summarises the failures.

use std::path::Path;

use super::pager;
use super::shell::Shell;
use crate::app::rewind::{self, Refusal, What};
use crate::session::{UserMessage, ids};

/// What the picker offers to restore, and the `/rewind` word for each.
const RESTORE: [(&str, &str); 3] = [
    ("files and conversation", "both"),
    (
        "conversation only (the files stay as they are)",
        "conversation",
    ),
    ("files only (the conversation goes on)", "code"),
];

/// Esc Esc at an empty prompt: this session's checkpoints, newest first, in a picker on the
/// alternate screen, then what to restore. The `/rewind` line for the pick, run as if
/// typed (it asks about hand edits like any other); plain `/rewind` when there is nothing
/// to pick from (it says why); `None` when the person left the picker.
pub(super) fn pick(home: &Path, root: &Path, session_id: Option<&str>) -> Option<String> {
    let listed = match session_id.map(|id| rewind::list(home, root, id)) {
        Some(Ok(listed)) if !listed.is_empty() => listed,
        _ => return Some("/rewind".into()),
    };
    let now = ids::now_ms();
    let newest_first: Vec<_> = listed.iter().rev().collect();
    let items = newest_first.iter().map(|l| l.line(now)).collect();
    let title = "Rewind: back to before which prompt? (checkpoints of this session)";
    let picked = pager::choose(title, items, 0).ok()??;
    let id = newest_first.get(picked)?.record.id.clone();
    let options = RESTORE.iter().map(|(label, _)| label.to_string()).collect();
    let what = pager::choose(&format!("Rewind to {id}: restore what?"), options, 0).ok()??;
    Some(format!("/rewind {id} {}", RESTORE.get(what)?.1))
}

impl Shell {
    /// `/rewind`: the list; `/rewind ID [code|conversation|both]`: go back.
    pub(super) async fn rewind(&mut self, args: &str) {
        let Some(session_id) = self.link.live.as_ref().map(|l| l.session_id.clone()) else {
            return self.view.hint("no session yet, so no checkpoints");
        };
        let mut words = args.split_whitespace();
        let Some(id) = words.next() else {
            return self.list_checkpoints(session_id).await;
        };
        let what = match words.next().map(What::parse) {
            None => What::Both,
            Some(Some(what)) => what,
            Some(None) => {
                return self
                    .view
                    .error("/rewind ID takes code, conversation or both after the id");
            }
        };
        self.rewind_to(id.to_string(), what, false).await;
    }

    async fn list_checkpoints(&mut self, session_id: String) {
        let (home, root) = (self.ws.home.clone(), self.ws.root.clone());
        let listed =
            tokio::task::spawn_blocking(move || rewind::list(&home, &root, &session_id)).await;
        match listed {
            Ok(Ok(listed)) if listed.is_empty() => self.view.hint(
                "no checkpoints in this session yet: one is taken before the first change of each prompt",
            ),
            Ok(Ok(listed)) => {
                let now = ids::now_ms();
                let mut lines: Vec<String> = listed.iter().rev().map(|l| l.line(now)).collect();
                lines.push(
                    "/rewind ID goes back (files and conversation); add code or conversation for one of them"
                        .into(),
                );
                self.view.lines(lines);
            }
            Ok(Err(f)) => self.view.error(&f.message),
            Err(e) => self.view.error(&e.to_string()),
        }
    }

    async fn rewind_to(&mut self, id: String, what: What, force: bool) {
        let (home, root) = (self.ws.home.clone(), self.ws.root.clone());
        let target = id.clone();
        let done =
            tokio::task::spawn_blocking(move || rewind::rewind(&home, &root, &target, what, force))
                .await;
        match done {
            Ok(Ok(done)) => {
                self.view.lines(rewind::report(&done));
                if done.conversation {
                    // The session reads the rewound conversation back from the store.
                    let mut next = self.start.clone();
                    next.continue_session = false;
                    next.resume = Some(done.checkpoint.session_id.clone());
                    self.switch(next, "conversation rewound").await;
                }
            }
            Ok(Err(Refusal::HandEdits(files))) => {
                self.view.error(&format!(
                    "changed by hand since that checkpoint: {}; rewinding overwrites them. Overwrite? [y/N]",
                    files.join(", ")
                ));
                self.question = Some(super::shell::Question::Rewind(id, what));
            }
            Ok(Err(Refusal::Failed(f))) => self.view.error(&f.message),
            Err(e) => self.view.error(&e.to_string()),
        }
    }

    /// The answer to the question a refused rewind asked: yes overwrites, anything else
    /// leaves the files alone.
    pub(super) async fn answer_rewind(&mut self, id: String, what: What, yes: bool) {
        if yes {
            self.rewind_to(id, what, true).await;
        } else {
            self.view.hint("not rewound; your files are as they were");
        }
    }

    /// `/check CMD`: runs when `[checks] allow` lists it (with any further arguments), so
    /// a person's check never asks; anything else is a `!command`.
    pub(super) async fn check(&mut self, args: &str) {
        let command = args.trim();
        if command.is_empty() {
            let allowed = self.ws.config.auto.checks_allowed.join(", ");
            return self.view.hint(&format!(
                "/check CMD runs a verification command; allowed: {allowed}"
            ));
        }
        // The rules a check runs under: an entry alone or with more arguments.
        let allowed = crate::session::check_rules(&self.ws.config.auto.checks_allowed)
            .iter()
            .any(|rule| rule.matches(&crate::tools::ToolName::Bash.into(), command));
        if !allowed {
            return self.view.error(&format!(
                "`{command}` is not an allowed check; add it to [checks] allow in \
                 linggen-agent.toml, or run it with !{command}"
            ));
        }
        let mut message = UserMessage::new(format!("/check {command}"), "terminal");
        message.command = Some(command.to_string());
        message.check = true;
        self.send(message).await;
    }
}
