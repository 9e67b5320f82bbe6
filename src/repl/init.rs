//! `/init`: an `AGENTS.md` written from a look at the repository, the model doing the
//! looking. The shell only sends the running agent a built-in prompt; the agent explores
//! with its read-only tools and writes the file with `Write`, so the usual approval
//! applies. An existing `AGENTS.md` (or `CLAUDE.md`) is replaced only after a `y`.

use super::shell::Shell;
use crate::session::UserMessage;

/// What the agent is asked to do.
const PROMPT: &str = "/init: look at this repository and write AGENTS.md at its root, a \
concise guide for coding agents (and people) working here. First explore with your read-only \
tools (get_repo_info, Glob, Grep, Read): the build, test, lint and run commands (from the \
manifests, CI files, Makefile or scripts), the layout (which folder holds what, the entry \
points), the conventions (style, naming, error handling, how tests are written) and anything \
surprising a newcomer would trip over. Do not run anything that changes the repository. Then \
write AGENTS.md with the Write tool: short sections, commands in code blocks, well under 150 \
lines, only what you found in the files (no guesses, no generic advice).";

impl Shell {
    /// `/init`: asks first when a guide exists, else sends the prompt at once.
    pub(super) async fn init(&mut self) {
        let root = self.ws.root.clone();
        // Small files, but files: off the runtime.
        let existing = tokio::task::spawn_blocking(move || {
            ["AGENTS.md", "CLAUDE.md"].into_iter().find_map(|name| {
                let text = std::fs::read_to_string(root.join(name)).ok()?;
                Some((name, text.lines().count()))
            })
        })
        .await
        .ok()
        .flatten();
        match existing {
            None => self.send_init(None).await,
            Some((name, lines)) => {
                let lines = crate::text::plural(lines, "line", "lines");
                let question = match name {
                    "AGENTS.md" => format!("AGENTS.md exists ({lines}). Overwrite it? [y/N]"),
                    _ => format!(
                        "{name} exists ({lines}). Write AGENTS.md from it and the repository? [y/N]"
                    ),
                };
                self.view.warning(&question);
                self.question = Some(super::shell::Question::Init(name));
            }
        }
    }

    /// The answer to `/init`'s question: yes sends the prompt, anything else leaves the
    /// files alone.
    pub(super) async fn answer_init(&mut self, existing: &'static str, yes: bool) {
        if yes {
            self.send_init(Some(existing)).await;
        } else {
            self.view
                .hint(&format!("/init: nothing sent; {existing} is as it was"));
        }
    }

    async fn send_init(&mut self, existing: Option<&str>) {
        let mut prompt = PROMPT.to_string();
        match existing {
            Some("AGENTS.md") => prompt.push_str(
                " AGENTS.md exists already: read it first, keep what is still true, correct \
                 what is not, add what is missing, and replace the file with the improved \
                 version.",
            ),
            Some(other) => prompt.push_str(&format!(
                " {other} exists: read it first and carry over what is still true; leave \
                 {other} itself unchanged."
            )),
            None => {}
        }
        self.send(UserMessage::new(prompt, "terminal")).await;
    }
}
