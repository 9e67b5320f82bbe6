//! The core's step from a line to a message, with a frontend's commands of its own: the
//! grammar does not depend on the shell's table.

use super::*;
use crate::session::{SkillInvocation, UserMessage};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Cmd {
    Help,
    Quit,
}

impl Builtin for Cmd {
    const ALL: &'static [Cmd] = &[Cmd::Help, Cmd::Quit];

    fn name(self) -> &'static str {
        match self {
            Cmd::Help => "help",
            Cmd::Quit => "quit",
        }
    }
}

fn skills() -> Vec<SkillInfo> {
    vec![SkillInfo {
        name: "review".into(),
        user_invocable: true,
        ..SkillInfo::default()
    }]
}

fn to_message(line: &str) -> Result<UserMessage, String> {
    // The message a frontend shows, which the tests read.
    let (skills, agents) = (skills(), vec!["coder".to_string()]);
    let ctx = TriggerContext {
        skills: &skills,
        agents: &agents,
        ..TriggerContext::default()
    };
    into_message(parse::<Cmd>(line, &ctx), line, "test").map_err(|e| e.to_string())
}

#[test]
fn the_frontends_commands_are_its_own() {
    let (skills, agents) = (skills(), Vec::new());
    let ctx = TriggerContext {
        skills: &skills,
        agents: &agents,
        ..TriggerContext::default()
    };
    let parsed = parse::<Cmd>("/quit now", &ctx);
    assert_eq!(
        parsed,
        Parsed::Command {
            command: Cmd::Quit,
            args: "now".into()
        }
    );
    assert_eq!(
        parse::<Cmd>("/", &ctx),
        Parsed::Command {
            command: Cmd::Help,
            args: String::new()
        }
    );
    let err = to_message("/quit").unwrap_err();
    assert!(
        err.contains("/quit is a command of the interactive shell"),
        "{err}"
    );
    let err = to_message("/qiut").unwrap_err();
    assert!(err.contains("Did you mean /quit?"), "{err}");
}

#[test]
fn mentions_come_from_the_words_the_person_wrote() {
    let msg = to_message("/review @a.rs").unwrap();
    assert_eq!(
        msg.skill,
        Some(SkillInvocation {
            name: "review".into(),
            args: "@a.rs".into()
        })
    );
    assert_eq!(mentions_of(&msg), ["a.rs"]);
    let msg = to_message("@coder look at @b.rs").unwrap();
    assert_eq!(msg.agent.as_deref(), Some("coder"));
    assert_eq!(mentions_of(&msg), ["b.rs"]);
    assert!(to_message("@coder").is_err(), "an agent needs a message");
}

#[test]
fn attachments_are_appended_and_confined_to_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("a.rs"), "fn a() {}\n").unwrap();
    std::fs::write(dir.path().join("secret"), "no\n").unwrap();
    let mut msg = to_message("see @a.rs and @../secret and @gone.rs").unwrap();
    msg.attached = "\n\n```\npiped\n```".into();
    attach_blocking(&root, &mut msg).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        msg.attached,
        "\n\n```\npiped\n```\n\na.rs:\n```\nfn a() {}\n```"
    );
}

#[tokio::test]
async fn attach_reads_off_the_runtime_with_the_same_result() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.rs"), "fn a() {}\n").unwrap();
    let mut msg = to_message("see @a.rs").unwrap();
    attach(dir.path().to_path_buf(), &mut msg)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(msg.attached, "\n\na.rs:\n```\nfn a() {}\n```");
}

#[test]
fn a_grouped_command_name_is_one_name() {
    let skills = vec![SkillInfo {
        name: "frontend:review".into(),
        user_invocable: true,
        command: true,
        ..SkillInfo::default()
    }];
    let ctx = TriggerContext {
        skills: &skills,
        ..TriggerContext::default()
    };
    assert_eq!(
        parse::<Cmd>("/frontend:review src/ui", &ctx),
        Parsed::Skill {
            name: "frontend:review".into(),
            args: "src/ui".into()
        }
    );
}

#[test]
fn a_built_in_command_name_taken_by_a_file_is_a_warning() {
    use crate::skills::{SkillSet, SkillSource};
    let command = |name: &str| {
        crate::skills::commands::parse(
            "body",
            name.into(),
            format!("/r/.claude/commands/{name}.md"),
            SkillSource::Project,
        )
        .unwrap()
    };
    let set = SkillSet {
        skills: vec![command("help"), command("fix-issue")],
        warnings: Vec::new(),
    };
    assert_eq!(
        builtin_clashes::<Cmd>(&set),
        [
            "/r/.claude/commands/help.md: /help is a built-in command, which wins over this \
          command; rename this file to use it"
        ]
    );
}

#[test]
fn mentions_in_text_the_person_did_not_write_are_read_as_the_tools_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("a.rs"), "fn a() {}\n").unwrap();
    std::fs::write(root.join("token.txt"), "hunter2\n").unwrap();
    let settings = crate::tools::sandbox::SandboxSettings {
        deny_read: vec![root.join("token.txt")],
        ..Default::default()
    };
    let mut tools = crate::tools::ToolContext::new(&root);
    tools.sandbox = std::sync::Arc::new(crate::tools::sandbox::Sandbox::new(&root, settings));
    let candidates = ["a.rs".to_string(), "token.txt".to_string()];
    assert_eq!(
        attached_files_as_tools(&tools, &candidates),
        "\n\na.rs:\n```\nfn a() {}\n```"
    );
    // The person's own mention of the same file is theirs to attach.
    assert!(attached_files(&root, &candidates).contains("hunter2"));
}
