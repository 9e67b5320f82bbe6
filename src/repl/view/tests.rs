//! The view fed with events, printing plain text into a buffer.

use crate::shared_text::SharedText;
use std::sync::{Arc, Mutex};

use super::*;
use crate::config::PermissionMode;
use crate::llm::Usage;
use crate::session::TurnMode;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<String>>);

impl ExternalPrinter for Captured {
    fn print(&mut self, msg: String) -> rustyline::Result<()> {
        crate::session::lock(&self.0).push_str(&msg);
        Ok(())
    }
}

fn view() -> (View, Captured) {
    let out = Captured::default();
    let view = View::new(
        Box::new(out.clone()),
        RenderStyle::Plain,
        80,
        Arc::new(Shared::default()),
        "ling",
    );
    (view, out)
}

impl Captured {
    fn take(&self) -> String {
        std::mem::take(&mut *crate::session::lock(&self.0))
    }
}

fn run_started(id: &str, parent: Option<&str>, agent: &str) -> Event {
    Event::RunStarted {
        run_id: id.into(),
        parent_id: parent.map(str::to_string),
        agent_id: agent.into(),
        task: "task".into(),
    }
}

fn token(run: &str, text: &str, done: bool) -> Event {
    Event::Token {
        run_id: run.into(),
        agent_id: String::new(),
        token: text.into(),
        thinking: false,
        done,
    }
}

fn tool(run: &str, name: &str, summary: &str) -> [Event; 2] {
    [
        Event::ToolCallStarted {
            run_id: run.into(),
            call_id: format!("{run}-{name}"),
            tool: name.into(),
            args: serde_json::Value::Null,
            summary: summary.into(),
        },
        Event::ToolCallFinished {
            run_id: run.into(),
            call_id: format!("{run}-{name}"),
            tool: name.into(),
            ok: true,
            summary: "3 lines".into(),
            diff: None,
            excerpt: None,
        },
    ]
}

fn outcome(run: &str, result: &str) -> Event {
    Event::Outcome {
        run_id: run.into(),
        status: OutcomeStatus::Completed,
        result: result.into(),
        num_turns: 1,
        usage: Usage::default(),
        duration_ms: 0,
    }
}

fn delegation(parent: &str, child: &str, task: &str) -> Vec<Event> {
    vec![
        Event::ToolCallStarted {
            run_id: parent.into(),
            call_id: "d".into(),
            tool: "delegate_to_agent".into(),
            args: serde_json::Value::Null,
            summary: format!("delegate to coder: {task}"),
        },
        Event::SubagentSpawned {
            parent_id: parent.into(),
            subagent_id: child.into(),
            agent_id: "coder".into(),
            task: task.into(),
            background: false,
        },
        run_started(child, Some(parent), "coder"),
    ]
}

fn child_result(parent: &str, child: &str, result: &str) -> [Event; 2] {
    [
        Event::SubagentResult {
            parent_id: parent.into(),
            subagent_id: child.into(),
            agent_id: "coder".into(),
            outcome: OutcomeStatus::Completed,
            result: result.into(),
        },
        Event::ToolCallFinished {
            run_id: parent.into(),
            call_id: "d".into(),
            tool: "delegate_to_agent".into(),
            ok: true,
            summary: "coder finished (2 model calls)".into(),
            diff: None,
            excerpt: None,
        },
    ]
}

#[test]
fn a_delegated_run_is_indented_and_its_answer_is_summarised() {
    let (mut view, out) = view();
    let mut events = vec![run_started("top", None, "ling")];
    events.extend(delegation("top", "child", "fix the bug\nin detail"));
    events.extend(tool("child", "Read", "Read src/lib.rs"));
    events.push(token("child", "Fixed the bug.\nSECOND LINE\n", true));
    events.extend(child_result("top", "child", "Fixed the bug.\nSECOND LINE"));
    events.push(token("top", "All done.\n", true));
    events.push(outcome("top", "All done."));
    for event in &events {
        view.on_event(event);
    }
    let text = out.take();
    assert_eq!(
        text,
        "⏺ coder ← fix the bug…\n\
         \x20 ⏺ Read src/lib.rs\n\
         \x20   ⎿ 3 lines\n\
         \x20 ⎿ coder completed: Fixed the bug.…\n\
         All done.\n"
    );
    assert!(!text.contains("SECOND LINE"));
    assert!(!text.contains("delegate to coder"));
}

#[test]
fn nested_delegation_indents_per_level() {
    let (mut view, out) = view();
    view.on_event(&run_started("a", None, "ling"));
    for event in delegation("a", "b", "outer") {
        view.on_event(&event);
    }
    for event in delegation("b", "c", "inner") {
        view.on_event(&event);
    }
    for event in tool("c", "Grep", "Grep x") {
        view.on_event(&event);
    }
    let text = out.take();
    assert!(text.contains("\n  ⏺ coder ← inner\n"), "{text:?}");
    assert!(
        text.contains("\n    ⏺ Grep x\n      ⎿ 3 lines\n"),
        "{text:?}"
    );
}

#[test]
fn a_refused_delegation_shows_as_a_failed_tool_call() {
    let (mut view, out) = view();
    view.on_event(&run_started("top", None, "ling"));
    view.on_event(&Event::ToolCallStarted {
        run_id: "top".into(),
        call_id: "d".into(),
        tool: "delegate_to_agent".into(),
        args: serde_json::Value::Null,
        summary: "delegate to nobody: x".into(),
    });
    view.on_event(&Event::ToolCallFinished {
        run_id: "top".into(),
        call_id: "d".into(),
        tool: "delegate_to_agent".into(),
        ok: false,
        summary: "no agent named `nobody`".into(),
        diff: None,
        excerpt: None,
    });
    assert_eq!(
        out.take(),
        "⏺ delegate to nobody: x\n  ⎿ ✗ no agent named `nobody`\n"
    );
}

#[test]
fn a_childs_approval_is_indented_and_answerable() {
    let (mut view, out) = view();
    view.on_event(&run_started("top", None, "ling"));
    for event in delegation("top", "child", "write it") {
        view.on_event(&event);
    }
    out.take();
    view.on_event(&Event::ApprovalRequested {
        id: "ap-1".into(),
        run_id: "child".into(),
        tool: "Write".into(),
        summary: "Write a.txt".into(),
        display: "Write a.txt".into(),
        reason: "Write changes a.txt".into(),
        diff: None,
        once_only: false,
        always: Vec::new(),
    });
    let text = out.take();
    assert!(text.starts_with("  ⏵ Allow Write a.txt\n"), "{text:?}");
    let pending = crate::session::lock(&view.shared.approval).clone();
    assert_eq!(pending.map(|p| p.id), Some("ap-1".to_string()));
    // Busy until the turn's outcome, not the child's end.
    for event in child_result("top", "child", "done") {
        view.on_event(&event);
    }
    assert!(view.shared.is_busy());
    view.on_event(&outcome("top", ""));
    assert!(!view.shared.is_busy());
}

#[test]
fn a_forked_skill_shows_its_result_as_the_answer() {
    let (mut view, out) = view();
    view.on_event(&run_started("top", None, "ling"));
    view.on_event(&Event::SubagentSpawned {
        parent_id: "top".into(),
        subagent_id: "fork".into(),
        agent_id: "ling".into(),
        task: "/summarize".into(),
        background: false,
    });
    view.on_event(&run_started("fork", Some("top"), "ling"));
    view.on_event(&token("fork", "The summary.\n", true));
    view.on_event(&Event::SubagentResult {
        parent_id: "top".into(),
        subagent_id: "fork".into(),
        agent_id: "ling".into(),
        outcome: OutcomeStatus::Completed,
        result: "The summary.".into(),
    });
    view.on_event(&outcome("top", "The summary."));
    let text = out.take();
    assert!(text.ends_with("The summary.\n"), "{text:?}");
    assert_eq!(text.matches("The summary.").count(), 2, "{text:?}");
}

#[test]
fn settings_and_warnings_are_shown() {
    let (mut view, out) = view();
    view.on_event(&Event::SettingsUpdated {
        agent_id: "coder".into(),
        mode: TurnMode::Talk,
        model: String::new(),
        permission_mode: PermissionMode::Default,
        max_iters: 0,
    });
    assert_eq!(view.settings().agent_id, "coder");
    assert_eq!(view.settings().mode, TurnMode::Talk);
    view.on_event(&Event::Warning {
        message: "x/SKILL.md:1: bad".into(),
    });
    assert_eq!(out.take(), "agent coder · mode talk\n⚠ x/SKILL.md:1: bad\n");
}

/// The answer to `/model`, `/permissions` or `/settings max_iters` names what changed;
/// an answer that changed nothing names everything.
#[test]
fn a_settings_answer_names_what_changed() {
    let (mut view, out) = view();
    let settings = |model: &str, permission_mode, max_iters| Event::SettingsUpdated {
        agent_id: "ling".into(),
        mode: TurnMode::Chat,
        model: model.into(),
        permission_mode,
        max_iters,
    };
    view.on_event(&settings("second", PermissionMode::Plan, 3));
    assert_eq!(
        out.take(),
        "model second · permission mode plan · max_iters = 3\n"
    );
    assert_eq!(view.settings().model, "second");
    assert_eq!(view.settings().permission_mode, PermissionMode::Plan);
    assert_eq!(view.settings().max_iters, 3);
    view.on_event(&settings("second", PermissionMode::Plan, 3));
    assert_eq!(
        out.take(),
        "agent ling · mode chat · model second · permission mode plan · max_iters = 3\n"
    );
}

/// Command output (`/runs` quoting a task the model wrote) and a message from the browser
/// are stripped of control sequences like everything else the view prints.
#[test]
fn command_lines_and_web_messages_lose_control_sequences() {
    let (mut view, out) = view();
    view.lines(vec![
        "completed ling \x1b]52;c;AA==\x07fix\x1b[2J it".into(),
    ]);
    view.on_event(&Event::Message {
        run_id: "r".into(),
        from: "web".into(),
        to: "ling".into(),
        role: crate::llm::Role::User,
        content: "hi\u{9b}2J\rthere".into(),
        tool_calls: vec![],
        tool_call_id: None,
        tool_name: None,
        is_error: false,
        images: vec![],
    });
    let text = out.take();
    assert_eq!(text, "completed ling fix it\n[web] hithere\n");
}

/// An approval longer than the terminal is wrapped, with all of it on screen.
#[test]
fn a_long_approval_is_wrapped_not_cut() {
    let (mut view, out) = view();
    let display = format!("Bash: echo {}␠×300&& touch tail-end", "y".repeat(120));
    view.on_event(&Event::ApprovalRequested {
        id: "ap".into(),
        run_id: "r".into(),
        tool: "Bash".into(),
        summary: "Bash: echo yyy…".into(),
        display: display.clone(),
        reason: "not read-only".into(),
        diff: None,
        once_only: false,
        always: Vec::new(),
    });
    let text = out.take();
    let head: Vec<&str> = text.lines().take_while(|l| !l.contains("(not")).collect();
    assert!(head.len() >= 2, "{text}");
    assert_eq!(head.concat(), format!("⏵ Allow {display}"));
}

fn request(id: &str, display: &str) -> Event {
    Event::ApprovalRequested {
        id: id.into(),
        run_id: "r".into(),
        tool: "Bash".into(),
        summary: display.into(),
        display: display.into(),
        reason: "not read-only".into(),
        diff: None,
        once_only: false,
        always: Vec::new(),
    }
}

/// Two delegated runs asking at once: the second question waits until the first is
/// answered, then shows; neither is lost.
#[test]
fn approvals_asked_at_once_are_shown_one_after_the_other() {
    let (mut view, out) = view();
    view.on_event(&request("one", "Bash: make a"));
    view.on_event(&request("two", "Bash: make b"));
    let text = out.take();
    assert!(
        text.contains("make a") && !text.contains("make b"),
        "{text}"
    );
    let shown = || {
        crate::session::lock(&view.shared.approval)
            .clone()
            .map(|p| p.id)
    };
    assert_eq!(shown(), Some("one".to_string()));
    view.on_event(&Event::ApprovalResolved {
        id: "one".into(),
        decision: Decision::AllowOnce,
        by: "terminal".into(),
    });
    let text = out.take();
    assert!(
        text.contains("allowed once") && text.contains("make b"),
        "{text}"
    );
    let shown = crate::session::lock(&view.shared.approval)
        .clone()
        .map(|p| p.id);
    assert_eq!(shown, Some("two".to_string()));
}

/// A request only "once" can answer offers no "always" choices.
#[test]
fn a_once_only_approval_offers_only_once_and_deny() {
    let (mut view, out) = view();
    view.on_event(&Event::ApprovalRequested {
        id: "ap".into(),
        run_id: "r".into(),
        tool: "Bash".into(),
        summary: "Bash: git commit".into(),
        display: "Bash: git commit".into(),
        reason: "runs outside the sandbox (dangerouslyDisableSandbox)".into(),
        diff: None,
        once_only: true,
        always: Vec::new(),
    });
    let text = out.take();
    assert!(
        text.contains("y once (asked again next time) · n deny"),
        "{text}"
    );
    assert!(!text.contains("always"), "{text}");
}

/// tok/s is over the time the model produced output, not the whole turn (a turn that
/// waited a minute for an approval is not a slow model).
#[test]
fn tokens_per_second_count_generation_time_only() {
    let (mut view, out) = view();
    view.on_event(&Event::Outcome {
        run_id: "t".into(),
        status: OutcomeStatus::Completed,
        result: SharedText::default(),
        num_turns: 2,
        usage: Usage {
            input_tokens: 10,
            output_tokens: 100,
            generation_ms: 2000,
        },
        duration_ms: 60_000,
    });
    let shown = out.take();
    assert!(shown.contains("50.0 tok/s"), "{shown:?}");
}

/// A failed command's first lines show under its result; an approved write's diff is not
/// shown a second time with its result.
#[test]
fn failures_show_an_excerpt_and_an_approved_diff_shows_once() {
    let (mut view, out) = view();
    view.on_event(&Event::ToolCallFinished {
        run_id: "t".into(),
        call_id: "c".into(),
        tool: "Bash".into(),
        ok: false,
        summary: "exit 2, 3 lines".into(),
        diff: None,
        excerpt: Some("error: no such file\n… 2 more lines".into()),
    });
    let shown = out.take();
    assert!(shown.contains("    error: no such file"), "{shown:?}");
    assert!(shown.contains("… 2 more lines"), "{shown:?}");
    let diff = "--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+hello\n";
    view.on_event(&Event::ApprovalRequested {
        id: "a".into(),
        run_id: "t".into(),
        tool: "Write".into(),
        summary: "Write x".into(),
        display: "Write x".into(),
        reason: "writes".into(),
        diff: Some(diff.into()),
        once_only: false,
        always: Vec::new(),
    });
    view.on_event(&Event::ToolCallFinished {
        run_id: "t".into(),
        call_id: "c2".into(),
        tool: "Write".into(),
        ok: true,
        summary: "created, 1 line".into(),
        diff: Some(diff.into()),
        excerpt: None,
    });
    let shown = out.take();
    assert_eq!(shown.matches("+hello").count(), 1, "{shown:?}");
}

/// A terminal resized mid-answer: lines rendered after it take the new width.
#[test]
fn a_resize_mid_answer_applies_to_the_next_lines() {
    let out = Captured::default();
    let style = RenderStyle::styled(crate::repl::theme::Theme::uncoloured());
    let mut view = View::new(
        Box::new(out.clone()),
        style,
        80,
        Arc::new(Shared::default()),
        "ling",
    );
    let long = "word ".repeat(14);
    view.on_event(&run_started("t", None, "ling"));
    view.set_width(80);
    view.on_event(&token("t", &format!("{long}\n"), false));
    view.set_width(30);
    view.on_event(&token("t", &format!("{long}\n"), true));
    let shown = out.take();
    // What is on screen: escape sequences (the live area's erase) take no columns.
    let visible = |line: &str| {
        let mut out = String::new();
        let mut escape = false;
        for c in line.chars() {
            match (escape, c) {
                (false, '\x1b') => escape = true,
                (true, c) if c.is_ascii_alphabetic() => escape = false,
                (true, _) => {}
                (false, '\r') => {}
                (false, c) => out.push(c),
            }
        }
        out.trim_end().to_string()
    };
    let rows: Vec<String> = shown
        .lines()
        .filter(|l| l.contains("word"))
        .map(visible)
        .collect();
    assert_eq!(rows.first().map(String::len), Some(69), "{rows:#?}");
    assert!(rows[1..].iter().all(|r| r.len() <= 30), "{rows:#?}");
}
