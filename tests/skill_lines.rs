//! Skills' `` !`cmd` `` lines and `` ```! `` blocks (Claude Code's dynamic context), through
//! the real binary and the scripted model server: they run before the skill's instructions
//! reach the model — invoked by the person, loaded by the model with the `Skill` tool, or
//! forked — under the same rules as a custom command's (only where a trusted
//! `allowed-tools` entry or the person's rule allows them, within the loading agent's
//! limits, not at all once the person turned them off), and `${CLAUDE_SKILL_DIR}` and
//! `${CLAUDE_SESSION_ID}` are filled in.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::json;
use support::{Protocol, Reply, ScriptedServer, Step, Workspace, run, sandbox_available, texts};

/// A skill whose line and two-line block print where it is, two words and a count, all
/// allowed by its own rules.
const CONTEXT: &str = "---\nname: gather\ndescription: Report the context\n\
                       allowed-tools: Bash(echo:*), Bash(wc:*)\n---\n\
                       Folder: !`echo ${CLAUDE_SKILL_DIR}`\n```!\necho one two\n\
                       echo three | wc -w\n```\nSession ${CLAUDE_SESSION_ID}; report on $1.\n";

fn setup(steps: Vec<Step>) -> Option<(ScriptedServer, Workspace)> {
    if !sandbox_available() {
        return None;
    }
    let server = ScriptedServer::start_background(Protocol::OpenAi, steps);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    Some((server, ws))
}

/// The person's own skill `gather` with the file `text`, under their home (the tests' HOME
/// and LINGGEN_HOME are the same folder): theirs, so its `allowed-tools` need no trust.
fn own_skill(ws: &Workspace, text: &str) -> std::path::PathBuf {
    let dir = ws.home().join("skills/gather");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), text).unwrap();
    dir
}

/// The id of the session `-p --output-format json` ran in.
fn session_id(stdout: &str) -> String {
    let result: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    result["session_id"].as_str().unwrap().to_string()
}

/// What `CONTEXT` becomes for the skill in `dir`, the session `session` and argument `x`.
fn expanded(dir: &std::path::Path, session: &str) -> String {
    format!(
        "Folder: {}\none two\n1\nSession {session}; report on x.",
        dir.display()
    )
}

#[test]
fn the_persons_skill_runs_its_lines_before_the_model_reads_it() {
    let Some((server, ws)) = setup(vec![Reply::text("Reported.").into()]) else {
        return;
    };
    let dir = own_skill(&ws, CONTEXT);
    let r = run(&ws, &["-p", "/gather x", "--output-format", "json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let user = texts(&server.chat_requests()[0], "user").join("\n");
    assert!(
        user.contains(&expanded(&dir, &session_id(&r.stdout))),
        "{user}"
    );
    assert!(
        user.contains("The user invoked the skill `gather`"),
        "{user}"
    );
    assert!(!r.stderr.contains("not run"), "{}", r.stderr);
}

#[test]
fn a_skill_the_model_loads_runs_its_lines_inside_the_skill_call() {
    let Some((server, ws)) = setup(vec![
        Reply::tool("Skill", json!({"skill": "gather", "args": "x"})).into(),
        Reply::text("Reported.").into(),
    ]) else {
        return;
    };
    let dir = own_skill(&ws, CONTEXT);
    let r = run(&ws, &["-p", "report", "--output-format", "json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2);
    let loaded = texts(&requests[1], "tool").join("\n");
    assert!(
        loaded.contains(&expanded(&dir, &session_id(&r.stdout))),
        "{loaded}"
    );
    assert!(
        loaded.contains("You invoked the skill `gather`"),
        "{loaded}"
    );
}

#[test]
fn a_forked_skill_runs_its_lines_before_its_child_starts() {
    let Some((server, ws)) = setup(vec![
        Reply::text("Reported.").into(),
        // The model forks it too.
        Reply::tool("Skill", json!({"skill": "gather", "args": "x"})).into(),
        Reply::text("Reported again.").into(),
        Reply::text("Done.").into(),
    ]) else {
        return;
    };
    let dir = own_skill(
        &ws,
        &CONTEXT.replace("---\nFolder", "context: fork\n---\nFolder"),
    );
    let r = run(&ws, &["-p", "/gather x", "--output-format", "json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 1, "only the child asks the model");
    let task = texts(&requests[0], "user").join("\n");
    assert!(
        task.contains(&expanded(&dir, &session_id(&r.stdout))),
        "{task}"
    );

    let r = run(&ws, &["-p", "report", "--output-format", "json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 4);
    let task = texts(&requests[2], "user").join("\n");
    assert!(
        task.contains(&expanded(&dir, &session_id(&r.stdout))),
        "{task}"
    );
    assert!(!r.stderr.contains("not run"), "{}", r.stderr);
}

/// A project skill came with the repository: its `allowed-tools` grant nothing until
/// trusted, so where nobody can approve its lines do not run (a block not at all), each
/// replaced by a note; once trusted they run.
#[test]
fn an_untrusted_project_skills_lines_do_not_run_where_nobody_can_approve() {
    let Some((server, ws)) = setup(vec![
        Reply::text("Without context.").into(),
        Reply::text("With context.").into(),
    ]) else {
        return;
    };
    ws.write(
        ".linggen/skills/gather/SKILL.md",
        "---\nname: gather\ndescription: Report\nallowed-tools: Bash(touch:*)\n---\n\
         Made: !`touch made.txt`\n```!\ntouch block.txt\n```\nDone.\n",
    );
    let r = run(&ws, &["-p", "/gather"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let user = texts(&server.chat_requests()[0], "user").join("\n");
    assert!(
        user.contains("Made: [`touch made.txt` was not run: it needs the user's approval (")
            && user.contains("nobody can approve in this non-interactive run]\n"),
        "{user}"
    );
    assert!(user.contains("[`touch block.txt` was not run"), "{user}");
    assert!(!ws.root().join("made.txt").exists());
    assert!(!ws.root().join("block.txt").exists());
    for said in ["/gather: `touch made.txt` was not run", "linggen trust"] {
        assert!(r.stderr.contains(said), "{said}: {}", r.stderr);
    }

    let trusted = run(&ws, &["trust", "--yes"]);
    assert_eq!(trusted.code, Some(0), "{}", trusted.stderr);
    let r = run(&ws, &["-p", "/gather"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(ws.root().join("made.txt").exists(), "{}", r.stderr);
    assert!(ws.root().join("block.txt").exists(), "{}", r.stderr);
    let user = texts(&server.last_chat_request().unwrap(), "user").join("\n");
    assert!(
        user.contains("Made: (no output)\n(no output)\nDone."),
        "{user}"
    );
}

/// Claude Code's `disableSkillShellExecution` (or linggen's `[permissions] skill_shell =
/// false`) turns every line off: nothing runs, each says so, and a project cannot turn
/// them back on.
#[test]
fn the_person_can_turn_the_lines_off() {
    let Some((server, ws)) = setup(vec![
        Reply::text("Without.").into(),
        Reply::text("Without again.").into(),
    ]) else {
        return;
    };
    let dir = own_skill(&ws, &CONTEXT.replace("echo one two", "touch ran.txt"));
    std::fs::create_dir_all(ws.home().join(".claude")).unwrap();
    std::fs::write(
        ws.home().join(".claude/settings.json"),
        r#"{"disableSkillShellExecution": true}"#,
    )
    .unwrap();
    let r = run(&ws, &["-p", "/gather x"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let user = texts(&server.chat_requests()[0], "user").join("\n");
    let off = "was not run: the user turned off shell commands in skills and commands]";
    assert!(
        user.contains(&format!("Folder: [`echo {}` {off}", dir.display())),
        "{user}"
    );
    assert!(
        user.contains("[`touch ran.txt; echo three | wc -w` was not run: the user turned off"),
        "{user}"
    );
    assert!(!ws.root().join("ran.txt").exists());

    // linggen's own key does the same, and a project's `true` does not undo it.
    std::fs::remove_file(ws.home().join(".claude/settings.json")).unwrap();
    let config = ws.home().join("linggen-agent.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[permissions]\nskill_shell = false\n");
    std::fs::write(&config, text).unwrap();
    ws.write("linggen-agent.toml", "[permissions]\nskill_shell = true\n");
    let trusted = run(&ws, &["trust", "--yes"]);
    assert_eq!(trusted.code, Some(0), "{}", trusted.stderr);
    let r = run(&ws, &["-p", "/gather x"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let user = texts(&server.last_chat_request().unwrap(), "user").join("\n");
    assert!(user.contains("was not run: the user turned off"), "{user}");
    assert!(!ws.root().join("ran.txt").exists());
}

/// A skill the model loads runs its lines in the model's run, so its agent's limits hold:
/// an agent that may not run commands gets a note instead of the output, even where the
/// skill's own rules would allow the line.
#[test]
fn a_loaded_skills_lines_keep_to_the_agents_tools() {
    let Some((server, ws)) = setup(vec![
        Reply::tool("Skill", json!({"skill": "gather", "args": "x"})).into(),
        Reply::text("Reported.").into(),
    ]) else {
        return;
    };
    own_skill(&ws, CONTEXT);
    ws.write(
        "agents/reader.md",
        "---\nname: reader\ndescription: Reads\ntools: [Read, Skill]\n---\nYou read.\n",
    );
    let r = run(&ws, &["-p", "report", "--agent", "reader"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let loaded = texts(&server.chat_requests()[1], "tool").pop().unwrap();
    assert!(
        loaded.contains("[`echo one two` did not succeed: agent `reader` may not use `Bash`"),
        "{loaded}"
    );
    assert!(!loaded.contains("\none two\n"), "{loaded}");
}
