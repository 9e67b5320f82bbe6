//! The `!` lines of custom commands and skills (see `doc/commands.md`, `doc/skills.md`):
//! each `` !`cmd` `` and `` ```! `` block of a body runs before the body is sent, and is
//! replaced by what it printed. They are `Bash` calls of the run the body is for, made
//! through the same floor, sandbox, permission check and approvals as the person's `!cmd`;
//! they run without asking only where a rule allows them (the file's trusted
//! `allowed-tools`, the person's rules), not merely because the analysis finds them
//! read-only: the file's author chose them, not the person.

use std::ops::Range;

use super::event::Event;
use super::permissions::Verdict;
use super::run::RunCtx;
use super::tool_call::{self, Caller};
use super::{Conversation, TurnShared};
use crate::tools::{self, ToolName, ToolOutput};

/// The command or skill whose lines run, and who invoked it: the person's lines are theirs
/// ([`Caller::Person`]), the model's are held to its agent's gates ([`Caller::Loaded`]).
pub(super) struct Lines<'a> {
    pub name: &'a str,
    pub caller: Caller,
}

/// `body` with each `` !`cmd` `` and `` ```! `` block replaced by its output (or by why it
/// did not run). A body without any is returned as it is.
pub(super) async fn expand(
    shared: &TurnShared,
    ctx: &mut RunCtx,
    conv: &mut Conversation,
    of: Lines<'_>,
    body: &str,
    changed: &mut Vec<String>,
) -> String {
    let mut out = String::with_capacity(body.len());
    let mut done = 0;
    for span in shell_spans(body) {
        out.push_str(&body[done..span.range.start]);
        let text = if !conv.permissions.skill_shell() {
            turned_off(&span.command)
        } else if ctx.cancel.is_cancelled() {
            cancelled(&span.command)
        } else {
            let previous = conv.permissions.set_rules_only(true);
            let text = run_span(shared, ctx, conv, &of, &span.command, changed).await;
            conv.permissions.set_rules_only(previous);
            text
        };
        out.push_str(&text);
        done = span.range.end;
    }
    out.push_str(&body[done..]);
    out
}

/// `body` with its `!` lines blanked: what is left is prose (a line's `@{u}` is part of a
/// command, not a file mention).
pub(super) fn prose(body: &str) -> String {
    let mut prose = body.to_string();
    for span in shell_spans(body).iter().rev() {
        prose.replace_range(span.range.clone(), " ");
    }
    prose
}

/// Runs a `` !`cmd` ``, or a `` ```! `` block line by line, each line the person's `Bash`
/// call (the floor takes one command per call); returns what replaces it in the body, the
/// lines' outputs in order. Where nobody can approve, a block runs only when every line
/// can: none of it, or all.
async fn run_span(
    shared: &TurnShared,
    ctx: &mut RunCtx,
    conv: &mut Conversation,
    of: &Lines<'_>,
    script: &str,
    changed: &mut Vec<String>,
) -> String {
    let lines: Vec<&str> = script
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    for command in &lines {
        if let Some(note) = unapprovable(shared, ctx, conv, of.name, command).await {
            return note;
        }
    }
    let mut outputs = Vec::with_capacity(lines.len());
    for command in lines {
        if ctx.cancel.is_cancelled() {
            outputs.push(cancelled(command));
            continue;
        }
        // Boxed: a skill the model loads runs its lines from inside the `Skill` call.
        let call = tool_call::command_by(shared, ctx, conv, command, changed, of.caller);
        let output = Box::pin(call).await;
        outputs.push(spliced(command, &output));
    }
    outputs.join("\n")
}

/// What stands for a line where the person turned the lines off.
fn turned_off(script: &str) -> String {
    format!(
        "[`{}` was not run: the user turned off shell commands in skills and commands]",
        script.replace('\n', "; ")
    )
}

/// What stands for a command the cancelled turn did not run.
fn cancelled(command: &str) -> String {
    format!("[`{command}` was not run: the turn was cancelled]")
}

/// Where nobody can approve (`-p`, schedules), a line that would need approval gets a note
/// instead of a call: what did not run and why, for the model and (as a warning) the
/// person, who can allow it. `None`: go ahead (the call itself decides, asking if need be).
async fn unapprovable(
    shared: &TurnShared,
    ctx: &RunCtx,
    conv: &Conversation,
    name: &str,
    command: &str,
) -> Option<String> {
    if shared.interactive {
        return None;
    }
    let args = serde_json::json!({ "command": command });
    // A call that does not prepare (refused by the floor) is reported by the call itself.
    let prepared = tools::prepare_off_runtime(&shared.tools, ToolName::Bash.name(), &args)
        .await
        .ok()?;
    let Verdict::Ask { reason } = conv.permissions.check_with(&prepared, &ctx.skill_rules) else {
        return None;
    };
    shared.bus.publish(Event::Warning {
        message: format!(
            "/{name}: `{command}` was not run: it needs approval ({reason}) and nobody can \
             approve in this run; allow it in the file's allowed-tools (a project's entries \
             hold once you trust them: `linggen trust`) or with --allowedTools"
        ),
    });
    Some(format!(
        "[`{command}` was not run: it needs the user's approval ({reason}), and nobody can \
         approve in this non-interactive run]"
    ))
}

/// What a finished call puts in the body: the command's output (without the `exit 0` line
/// the model reads after its own calls), or, when it failed or did not run, why.
fn spliced(command: &str, output: &ToolOutput) -> String {
    if output.is_error {
        return format!("[`{command}` did not succeed: {}]", output.model.trim_end());
    }
    let text = output.model.trim_end();
    text.strip_prefix("exit 0\n").unwrap_or(text).to_string()
}

/// One `` !`cmd` `` or `` ```! `` block in a body.
#[derive(Debug, PartialEq, Eq)]
struct ShellSpan {
    /// From the `!` to the closing backtick, or from a block's opening fence to its closing
    /// one, inclusive (not the line's end after it).
    range: Range<usize>,
    command: String,
}

/// The commands of a body, in order, as Claude Code finds them: `` ```! `` blocks, then
/// the `` !`cmd` `` spans outside them.
fn shell_spans(body: &str) -> Vec<ShellSpan> {
    let blocks = shell_blocks(body);
    let mut spans: Vec<ShellSpan> = inline_spans(body)
        .into_iter()
        .filter(|span| {
            !blocks.iter().any(|block| {
                block.range.start < span.range.end && span.range.start < block.range.end
            })
        })
        .collect();
    spans.extend(blocks);
    spans.sort_by_key(|span| span.range.start);
    spans
}

/// The `` !`cmd` `` spans of a body: a `!` at the start of a line or after whitespace,
/// then a backtick, the command (one line, no backtick), and a closing backtick. An empty
/// command is text.
fn inline_spans(body: &str) -> Vec<ShellSpan> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(found) = body[from..].find("!`") {
        let start = from + found;
        from = start + 2;
        let at_word_start = body[..start]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        if !at_word_start {
            continue;
        }
        let rest = &body[start + 2..];
        let Some(len) = rest.find(['`', '\n']) else {
            break;
        };
        if !rest[len..].starts_with('`') {
            continue;
        }
        let command = rest[..len].trim();
        if command.is_empty() {
            continue;
        }
        let end = start + 2 + len + 1;
        spans.push(ShellSpan {
            range: start..end,
            command: command.to_string(),
        });
        from = end;
    }
    spans
}

/// The `` ```! `` blocks of a body: a line opening a fence of three or more backticks
/// with `!` right after them, the commands on the lines below (one a line: `run_span`
/// runs each on its own), and a line closing the fence (as many backticks or more,
/// nothing else). A block never closed, or with nothing in it, is text.
fn shell_blocks(body: &str) -> Vec<ShellSpan> {
    let mut blocks = Vec::new();
    let mut lines = line_ranges(body).into_iter();
    while let Some(open) = lines.next() {
        let Some(fence) = opening_fence(&body[open.clone()]) else {
            continue;
        };
        let script_start = open.end;
        let close = lines
            .by_ref()
            .find(|line| closes(&body[line.clone()], fence));
        let Some(close) = close else {
            break;
        };
        let script = body[script_start..close.start].trim();
        if script.is_empty() {
            continue;
        }
        // The closing line's end of line stays: what replaces the block ends where it did.
        let end = close.start + body[close.clone()].trim_end_matches(['\r', '\n']).len();
        blocks.push(ShellSpan {
            range: open.start..end,
            command: script.to_string(),
        });
    }
    blocks
}

/// Each line's range, its `\n` included.
fn line_ranges(body: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = 0;
    for (at, _) in body.match_indices('\n') {
        ranges.push(start..at + 1);
        start = at + 1;
    }
    if start < body.len() {
        ranges.push(start..body.len());
    }
    ranges
}

/// The fence's length when `line` opens a `` ```! `` block (up to three spaces before it,
/// as Markdown allows; nothing after the `!` but blanks).
fn opening_fence(line: &str) -> Option<usize> {
    let line = line.trim_end();
    let indented = line.trim_start_matches(' ');
    if line.len() - indented.len() > 3 {
        return None;
    }
    let fence = indented.len() - indented.trim_start_matches('`').len();
    (fence >= 3 && &indented[fence..] == "!").then_some(fence)
}

/// Whether `line` closes a fence of `fence` backticks.
fn closes(line: &str, fence: usize) -> bool {
    let line = line.trim();
    line.len() >= fence && line.bytes().all(|b| b == b'`')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(body: &str) -> Vec<String> {
        shell_spans(body).into_iter().map(|s| s.command).collect()
    }

    #[test]
    fn spans_are_found_where_claude_code_finds_them() {
        let body = "Log:\n!`git log -1`\n- status: !`git status --short` now\nnot!`this`\n\
                    !`` empty\n!`unclosed\nnext !`tail -n 1`";
        assert_eq!(
            commands(body),
            ["git log -1", "git status --short", "tail -n 1"]
        );
        let spans = shell_spans("a !`x` b");
        assert_eq!(spans[0].range, 2..6);
        assert!(shell_spans("no commands, `!x` and !").is_empty());
    }

    #[test]
    fn fenced_blocks_are_scripts_in_the_bodys_order() {
        let body = "First !`date`\n```!\ngit status --short\ngit log -1 !`not this`\n```\n\
                    Then:\n  ````!  \necho one\n```\necho two\n````\nlast !`pwd`\n";
        assert_eq!(
            commands(body),
            [
                "date",
                "git status --short\ngit log -1 !`not this`",
                "echo one\n```\necho two",
                "pwd"
            ]
        );
        let spans = shell_spans(body);
        assert_eq!(
            &body[spans[1].range.clone()],
            "```!\ngit status --short\ngit log -1 !`not this`\n```"
        );
        // A plain fence, a `!` with words after it, an empty block and an unclosed one are
        // text.
        for text in [
            "```\nls\n```",
            "```bash\nls\n```",
            "```! ls\nmore\n```",
            "```!\n\n```",
            "    ```!\nls\n```",
            "```!\nls\n",
        ] {
            assert!(commands(text).is_empty(), "{text:?}");
        }
        // The line after a closed block can open the next one.
        assert_eq!(commands("```!\na\n```\n```!\nb\n```"), ["a", "b"]);
    }

    #[test]
    fn a_finished_call_is_its_output_and_a_failed_one_says_so() {
        let ok = ToolOutput::ok("exit 0\nabc123 fix the parser\n", "exit 0, 1 line");
        assert_eq!(spliced("git log -1", &ok), "abc123 fix the parser");
        let failed = ToolOutput::error("exit 128\nfatal: not a git repository");
        assert_eq!(
            spliced("git log -1", &failed),
            "[`git log -1` did not succeed: exit 128\nfatal: not a git repository]"
        );
    }
}
