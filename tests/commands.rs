//! Custom commands in Claude Code's format (`.claude/commands/**/*.md`, `~/.claude/commands`,
//! `.linggen/commands`, `$LINGGEN_HOME/commands`) through the real binary and the scripted
//! model server: `$ARGUMENTS`, `` !`cmd` `` lines run before the prompt is sent (only as far
//! as trusted `allowed-tools` or the person's rules allow), `@file` in the body, nested
//! `/group:name` commands, clashes reported once, and the shell's completion.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::json;
use support::pty::{PROMPT, Repl, last_message};
use support::{
    Protocol, Reply, ScriptedServer, Step, Workspace, git, git_available, run, sandbox_available,
    texts,
};

const SUBJECT: &str = "parser: handle empty input";

const FIX_ISSUE: &str = "---\ndescription: Fix a GitHub issue\nargument-hint: <number>\n\
                         allowed-tools: Bash(git log:*), Bash(touch:*)\n---\n\
                         Fix issue #$ARGUMENTS. The last commit:\n!`git log -1`\n\
                         Then fix it.\n";

/// A git repository with one commit, configured for a scripted model.
fn repository(steps: Vec<Step>) -> Option<(ScriptedServer, Workspace)> {
    if !git_available() || !sandbox_available() {
        return None;
    }
    let server = ScriptedServer::start_background(Protocol::OpenAi, steps);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    ws.write("src/parse.rs", "fn parse() {}\n");
    git(ws.root(), &["init", "-q"]);
    git(ws.root(), &["add", "src"]);
    git(ws.root(), &["commit", "-q", "-m", SUBJECT]);
    Some((server, ws))
}

/// The model makes a change the command's `allowed-tools` cover, then answers.
fn fixing_script() -> Vec<Step> {
    vec![
        Reply::tool("Bash", json!({"command": "touch fixed.txt"})).into(),
        Reply::text("Fixed.").into(),
    ]
}

/// Writes the person's own file `rel` under their home (the tests' HOME and
/// LINGGEN_HOME are the same folder).
fn own(ws: &Workspace, rel: &str, text: &str) {
    let path = ws.home().join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The user messages of the first request: what the command sent.
fn sent(server: &ScriptedServer) -> String {
    texts(&server.chat_requests()[0], "user").join("\n")
}

#[test]
fn a_trusted_project_command_runs_its_lines_and_sends_the_expanded_prompt() {
    let Some((server, ws)) = repository(fixing_script()) else {
        return;
    };
    ws.write(".claude/commands/fix-issue.md", FIX_ISSUE);
    let trusted = run(&ws, &["trust", "--yes"]);
    assert_eq!(trusted.code, Some(0), "{}", trusted.stderr);
    assert!(
        trusted.stdout.contains("Trusted 2 grant(s)"),
        "{}",
        trusted.stdout
    );

    let r = run(&ws, &["-p", "/fix-issue 123"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let user = sent(&server);
    assert!(user.contains("Fix issue #123. The last commit:"), "{user}");
    assert!(user.contains(SUBJECT), "the git log output: {user}");
    assert!(!user.contains("!`git log"), "{user}");
    assert!(user.contains("Then fix it."), "{user}");
    // The command's allowed-tools hold for the model's calls of that turn too.
    assert!(ws.root().join("fixed.txt").exists(), "{}", r.stderr);
    assert!(!r.stderr.contains("not run"), "{}", r.stderr);
}

#[test]
fn an_untrusted_project_command_grants_nothing_and_its_line_is_refused_with_a_note() {
    let mut script = fixing_script();
    script.push(Reply::text("Fixed, with the log.").into());
    let Some((server, ws)) = repository(script) else {
        return;
    };
    ws.write(".claude/commands/fix-issue.md", FIX_ISSUE);
    let r = run(&ws, &["-p", "/fix-issue 123"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let user = sent(&server);
    assert!(user.contains("Fix issue #123."), "{user}");
    assert!(
        user.contains(
            "[`git log -1` was not run: it needs the user's approval (`git log -1` comes from \
             a command or skill file, and no allowed-tools entry or rule of yours allows \
             it), and nobody can approve in this non-interactive run]"
        ),
        "{user}"
    );
    assert!(!user.contains(SUBJECT), "ran untrusted: {user}");
    // Nor do its allowed-tools lift the model's calls.
    assert!(!ws.root().join("fixed.txt").exists());
    let results = texts(&server.last_chat_request().unwrap(), "tool").join("\n");
    assert!(results.contains("needs the user's approval"), "{results}");
    // The person reads which grants were ignored and what did not run.
    for said in [
        "command /fix-issue: allowed-tools Bash(git log:*) (.claude/commands/fix-issue.md)",
        "/fix-issue: `git log -1` was not run",
        "linggen trust",
    ] {
        assert!(r.stderr.contains(said), "{said}: {}", r.stderr);
    }

    // The person's own rule allows the line, trusted folder or not.
    let r = run(
        &ws,
        &["-p", "/fix-issue 123", "--allowedTools", "Bash(git log:*)"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let user = texts(&server.last_chat_request().unwrap(), "user").join("\n");
    assert!(user.contains(SUBJECT), "{user}");
}

#[test]
fn the_persons_own_commands_need_no_trust() {
    let Some((server, ws)) = repository(vec![
        Reply::text("Noted.").into(),
        Reply::text("Standup done.").into(),
    ]) else {
        return;
    };
    own(&ws, ".claude/commands/fix-issue.md", FIX_ISSUE);
    own(
        &ws,
        "commands/standup.md",
        "---\nallowed-tools: Bash(git log:*)\n---\nSummarise: !`git log --oneline -1`\n",
    );
    let r = run(&ws, &["-p", "/fix-issue 7"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let user = sent(&server);
    assert!(user.contains("Fix issue #7."), "{user}");
    assert!(user.contains(SUBJECT), "{user}");
    assert!(!r.stderr.contains("not trusted"), "{}", r.stderr);

    let r = run(&ws, &["-p", "/standup"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let user = texts(&server.last_chat_request().unwrap(), "user").join("\n");
    assert!(
        user.contains("Summarise: ") && user.contains(SUBJECT),
        "{user}"
    );
}

/// A `` ```! `` block runs line by line where the command's allowed-tools cover every line,
/// and the lines' output takes its place; where nobody can approve, a block with one line
/// they do not cover runs nothing.
#[test]
fn a_fenced_block_runs_line_by_line_where_every_line_is_allowed() {
    let Some((server, ws)) = repository(vec![
        Reply::text("Reported.").into(),
        Reply::text("Refused.").into(),
    ]) else {
        return;
    };
    own(
        &ws,
        "commands/report.md",
        "---\nallowed-tools: Bash(git log:*), Bash(git rev-list:*)\n---\nReport:\n```!\n\
         git log --format=%s -1\ngit rev-list --count HEAD\n```\nEnd.\n",
    );
    own(
        &ws,
        "commands/sneaky.md",
        "---\nallowed-tools: Bash(git log:*)\n---\n```!\ngit log -1\ntouch planted.txt\n```\n",
    );
    let r = run(&ws, &["-p", "/report"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let user = sent(&server);
    assert!(
        user.contains(&format!("Report:\n{SUBJECT}\n1\nEnd.")),
        "{user}"
    );

    let r = run(&ws, &["-p", "/sneaky"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let user = texts(&server.last_chat_request().unwrap(), "user").join("\n");
    assert!(
        user.contains("was not run: it needs the user's approval"),
        "{user}"
    );
    assert!(!ws.root().join("planted.txt").exists());
    assert!(!user.contains(SUBJECT), "{user}");
}

#[test]
fn a_nested_command_is_group_colon_name_and_attaches_the_files_its_body_names() {
    let server = ScriptedServer::start_background(Protocol::OpenAi, vec![Reply::text("ok")]);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    ws.write(
        ".claude/commands/frontend/review.md",
        "Review the component $1 for accessibility.\nFollow @docs/style.md\n",
    );
    ws.write("docs/style.md", "Use semantic HTML.\n");
    ws.write("src/App.tsx", "export const App = () => null;\n");
    let r = run(&ws, &["-p", "/frontend:review @src/App.tsx"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let user = sent(&server);
    assert!(
        user.contains("The user ran the command `/frontend:review`"),
        "{user}"
    );
    assert!(
        user.contains("Review the component @src/App.tsx for accessibility."),
        "{user}"
    );
    // The body's `@file` and the arguments' are both attached, each once.
    assert!(user.contains("Use semantic HTML."), "{user}");
    assert_eq!(
        user.matches("export const App").count(),
        1,
        "attached once: {user}"
    );
}

#[test]
fn clashes_are_warned_about_once_and_the_order_is_kept() {
    let server = ScriptedServer::start_background(Protocol::OpenAi, vec![Reply::text("ok")]);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    ws.write(".claude/commands/help.md", "My help.\n");
    ws.write(".claude/commands/deploy.md", "Deploy, the command way.\n");
    ws.write(
        ".linggen/skills/deploy/SKILL.md",
        "---\ndescription: Deploy the build\n---\nDeploy, the skill way.\n",
    );
    let root = ws.root().display().to_string();
    let r = run(&ws, &["-p", "/deploy"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let warnings = [
        format!(
            "{root}/.claude/commands/deploy.md: /deploy is also the skill in \
             {root}/.linggen/skills/deploy/SKILL.md, which wins; rename this file to use it"
        ),
        format!(
            "{root}/.claude/commands/help.md: /help is a built-in command, which wins over \
             this command; rename this file to use it"
        ),
    ];
    for warning in &warnings {
        assert_eq!(
            r.stderr.matches(warning.as_str()).count(),
            1,
            "{}",
            r.stderr
        );
    }
    let user = sent(&server);
    assert!(user.contains("Deploy, the skill way."), "{user}");
    assert!(!user.contains("the command way"), "{user}");

    // A built-in is never a command's: `/help` in -p is the shell's.
    let r = run(&ws, &["-p", "/help"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("a command of the interactive shell"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_shell_completes_a_command_and_sends_its_expanded_prompt() {
    let Some((server, ws)) = repository(vec![Step::from(Reply::text("on it"))]) else {
        return;
    };
    ws.write(".claude/commands/fix-issue.md", FIX_ISSUE);
    ws.write(".claude/commands/frontend/review.md", "Review $1\n");
    let trusted = run(&ws, &["trust", "--yes"]);
    assert_eq!(trusted.code, Some(0), "{}", trusted.stderr);
    let mut repl = Repl::start(&ws, &[]);
    // Two commands start with `f`: the second Tab lists them with their descriptions.
    repl.send("/f\t\t");
    repl.expect("Fix a GitHub issue");
    repl.send("\x15");
    repl.send("/fix-\t");
    repl.expect("/fix-issue");
    repl.line("123");
    repl.expect("on it");
    let user = last_message(&server, "user");
    assert!(user.contains("Fix issue #123."), "{user}");
    assert!(user.contains(SUBJECT), "{user}");
    repl.expect(PROMPT);
    repl.line("/help");
    repl.expect("Custom commands: /fix-issue /frontend:review");
    repl.line("/quit");
}

#[test]
fn a_command_posted_from_the_web_page_runs_like_a_typed_line() {
    let server = ScriptedServer::start_background(Protocol::OpenAi, vec![Reply::text("done")]);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    ws.write(".linggen/commands/ship.md", "Ship version $1 today.\n");
    let serve = support::web_client::Serve::start(ws.cmd().arg("serve"));
    let after = serve.session()["seq"].as_u64().unwrap();
    serve.send("/ship 1.2.0");
    serve
        .events(Some(after))
        .until(std::time::Duration::from_secs(20), |e| {
            e.kind() == "Outcome"
        });
    let user = texts(&server.last_chat_request().unwrap(), "user").join("\n");
    assert!(user.contains("Ship version 1.2.0 today."), "{user}");
}

#[test]
fn in_the_shell_a_line_no_rule_allows_asks_the_person_first() {
    let Some((server, ws)) = repository(vec![
        Reply::text("first answer").into(),
        Reply::text("second answer").into(),
    ]) else {
        return;
    };
    // The person's own command, but without allowed-tools: read-only or not, its `!` line
    // is the file's, so it asks.
    let file = ws.home().join(".claude/commands/last.md");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "The last commit: !`git log -1`\n").unwrap();
    let mut repl = Repl::start(&ws, &[]);
    repl.line("/last");
    repl.expect("Allow Bash");
    repl.expect("comes from a command or skill file");
    repl.expect("type a reason");
    repl.line("y");
    repl.expect("first answer");
    assert!(last_message(&server, "user").contains(SUBJECT));

    repl.expect(PROMPT);
    repl.line("/last");
    repl.expect("Allow Bash");
    repl.expect("type a reason");
    repl.line("n");
    repl.expect("second answer");
    let user = last_message(&server, "user");
    assert!(
        user.contains("[`git log -1` did not succeed: the user"),
        "{user}"
    );
    assert!(!user.contains(SUBJECT), "{user}");
    repl.line("/quit");
}

/// `disable-model-invocation: false` lets the model run a command through the `Skill` tool
/// (its `!` lines run inside that call); without it the model is told there is no such
/// skill. `context: fork` runs a command in a child run, as a skill's.
#[test]
fn a_command_may_be_offered_to_the_model_and_may_fork() {
    if !sandbox_available() {
        return;
    }
    let server = ScriptedServer::start_background(
        Protocol::OpenAi,
        vec![
            Step::from(Reply::tool("Skill", json!({"skill": "ctx", "args": "7"}))),
            Reply::tool("Skill", json!({"skill": "mine"})).into(),
            Reply::text("Done.").into(),
            // The forked command's child.
            Reply::text("Forked answer.").into(),
        ],
    );
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    own(
        &ws,
        "commands/ctx.md",
        "---\ndescription: The context of an issue\ndisable-model-invocation: false\n\
         allowed-tools: Bash(echo:*)\n---\nIssue $1: !`echo from-the-command`\n",
    );
    own(&ws, "commands/mine.md", "Only for the person.\n");
    own(
        &ws,
        "commands/aside.md",
        "---\ncontext: fork\n---\nAnswer aside.\n",
    );
    let r = run(&ws, &["-p", "look into issue 7"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let requests = server.chat_requests();
    let catalog = requests[0]["tools"].to_string();
    assert!(
        catalog.contains("ctx: The context of an issue"),
        "{catalog}"
    );
    assert!(!catalog.contains("mine"), "{catalog}");
    let loaded = texts(&requests[1], "tool").pop().unwrap();
    assert!(
        loaded.contains("You ran the command `/ctx`. Follow its instructions:")
            && loaded.contains("Issue 7: from-the-command"),
        "{loaded}"
    );
    let refused = texts(&requests[2], "tool").pop().unwrap();
    assert!(refused.contains("no skill named `mine`"), "{refused}");

    let r = run(&ws, &["-p", "--continue", "/aside"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let child = server.last_chat_request().unwrap();
    let asked = texts(&child, "user");
    assert_eq!(asked.len(), 1, "a fresh history: {asked:?}");
    assert!(asked[0].contains("Answer aside."), "{asked:?}");
    assert!(r.stdout.contains("Forked answer."), "{}", r.stdout);
}
