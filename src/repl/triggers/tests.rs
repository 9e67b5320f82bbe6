use super::*;
use crate::session::line::suggest::edit_distance;

struct Registry {
    skills: Vec<SkillInfo>,
    agents: Vec<String>,
    triggers: Vec<CustomTrigger>,
    targets: Vec<SkillTarget>,
}

impl Registry {
    fn new() -> Self {
        let skill = |name: &str, user_invocable: bool| SkillInfo {
            name: name.to_string(),
            description: format!("the {name} skill"),
            argument_hint: Some("<where>".to_string()),
            user_invocable,
            command: false,
        };
        let trigger = |prefix: &str, skill: &str| CustomTrigger {
            prefix: prefix.to_string(),
            skill: skill.to_string(),
        };
        Registry {
            skills: vec![
                skill("deploy", true),
                skill("模型", true),
                skill("summarize-internal", false),
                skill("help", true),
            ],
            agents: vec!["ling".into(), "coder".into(), "作者".into()],
            triggers: vec![
                trigger("!", "shell"),
                trigger("!!", "repeat"),
                trigger("?", "ask"),
            ],
            targets: vec![SkillTarget {
                target: "jira".into(),
                skill: "jira-ticket".into(),
            }],
        }
    }

    fn parse(&self, input: &str) -> Parsed {
        let ctx = TriggerContext {
            skills: &self.skills,
            agents: &self.agents,
            custom_triggers: &self.triggers,
            skill_targets: &self.targets,
        };
        parse(input, &ctx)
    }
}

fn command(command: Command, args: &str) -> Parsed {
    Parsed::Command {
        command,
        args: args.to_string(),
    }
}

fn message(text: &str, attachments: &[&str]) -> Parsed {
    Parsed::Message {
        text: text.to_string(),
        attachments: attachments.iter().map(|a| a.to_string()).collect(),
    }
}

fn suggestions(parsed: Parsed) -> Vec<String> {
    match parsed {
        Parsed::UnknownCommand { suggestions, .. } => suggestions,
        other => panic!("expected an unknown command, got {other:?}"),
    }
}

#[test]
fn empty_and_blank_input_do_nothing() {
    let r = Registry::new();
    assert_eq!(r.parse(""), Parsed::Empty);
    assert_eq!(r.parse("   \n\t "), Parsed::Empty);
}

#[test]
fn builtins_parse_with_trimmed_arguments() {
    let r = Registry::new();
    assert_eq!(r.parse("/help"), command(Command::Help, ""));
    assert_eq!(r.parse("/help   extra  "), command(Command::Help, "extra"));
    assert_eq!(r.parse("   /model qwen3"), command(Command::Model, "qwen3"));
    assert_eq!(r.parse("\n/clear\n"), command(Command::Clear, ""));
    assert_eq!(r.parse("/quit"), command(Command::Quit, ""));
    assert_eq!(r.parse("/exit"), command(Command::Exit, ""));
}

#[test]
fn a_lone_slash_asks_for_help() {
    let r = Registry::new();
    assert_eq!(r.parse("/"), command(Command::Help, ""));
    assert_eq!(r.parse("  /  "), command(Command::Help, ""));
}

#[test]
fn double_slash_escapes_to_a_message_starting_with_slash() {
    let r = Registry::new();
    assert_eq!(r.parse("//x"), message("/x", &[]));
    assert_eq!(
        r.parse("//help is a command, see @doc/triggers.md"),
        message(
            "/help is a command, see @doc/triggers.md",
            &["doc/triggers.md"]
        )
    );
}

#[test]
fn a_first_word_that_is_a_path_is_a_message() {
    let r = Registry::new();
    assert_eq!(
        r.parse("/usr/bin/ls is broken"),
        message("/usr/bin/ls is broken", &[])
    );
    // One segment cannot be told from a typo, so it stays an (unknown) command.
    assert!(matches!(r.parse("/usr"), Parsed::UnknownCommand { .. }));
}

#[test]
fn skills_come_after_builtins() {
    let r = Registry::new();
    assert_eq!(
        r.parse("/deploy staging now"),
        Parsed::Skill {
            name: "deploy".into(),
            args: "staging now".into()
        }
    );
    // A skill cannot shadow a built-in.
    assert_eq!(r.parse("/help"), command(Command::Help, ""));
    // Model-only skills are not slash commands.
    assert!(matches!(
        r.parse("/summarize-internal"),
        Parsed::UnknownCommand { .. }
    ));
}

#[test]
fn unknown_commands_suggest_the_closest_names() {
    let r = Registry::new();
    assert_eq!(suggestions(r.parse("/hlep")), ["/help"]);
    assert_eq!(suggestions(r.parse("/Help")), ["/help"]);
    assert_eq!(suggestions(r.parse("/se")), ["/settings", "/sessions"]);
    assert_eq!(suggestions(r.parse("/depoly prod"))[0], "/deploy");
    assert_eq!(suggestions(r.parse("/models")), ["/model", "/mode"]);
    assert!(suggestions(r.parse("/zzzzzzzz")).is_empty());
    // The hidden skill is never suggested.
    assert!(suggestions(r.parse("/summarize")).is_empty());
}

#[test]
fn unknown_command_error_says_what_to_do() {
    let r = Registry::new();
    let text = r.parse("/hlep").error_message().unwrap_or_default();
    assert!(text.contains("/hlep"), "{text}");
    assert!(text.contains("Did you mean /help?"), "{text}");
    assert!(text.contains("//"), "{text}");
    assert_eq!(r.parse("hello").error_message(), None);
}

#[test]
fn unicode_names_work_for_skills_agents_and_suggestions() {
    let r = Registry::new();
    assert_eq!(
        r.parse("/模型 切换"),
        Parsed::Skill {
            name: "模型".into(),
            args: "切换".into()
        }
    );
    assert_eq!(suggestions(r.parse("/模形")), ["/模型"]);
    assert_eq!(
        r.parse("@作者 你好"),
        Parsed::AgentMessage {
            agent: "作者".into(),
            message: "你好".into(),
            attachments: vec![]
        }
    );
    assert_eq!(edit_distance("模形", "模型"), 1);
    assert_eq!(edit_distance("hlep", "help"), 1);
    assert_eq!(edit_distance("", "abc"), 3);
}

#[test]
fn agent_mentions_route_the_message() {
    let r = Registry::new();
    assert_eq!(
        r.parse("@coder fix @src/main.rs please"),
        Parsed::AgentMessage {
            agent: "coder".into(),
            message: "fix @src/main.rs please".into(),
            attachments: vec!["src/main.rs".into()]
        }
    );
    assert_eq!(
        r.parse("@coder: and\nthen this"),
        Parsed::AgentMessage {
            agent: "coder".into(),
            message: "and\nthen this".into(),
            attachments: vec![]
        }
    );
    assert_eq!(
        r.parse("@ling"),
        Parsed::AgentMessage {
            agent: "ling".into(),
            message: String::new(),
            attachments: vec![]
        }
    );
}

#[test]
fn skill_targets_route_to_their_skill() {
    let r = Registry::new();
    assert_eq!(
        r.parse("@jira open a bug"),
        Parsed::Skill {
            name: "jira-ticket".into(),
            args: "open a bug".into()
        }
    );
}

#[test]
fn at_sign_that_is_not_an_agent_is_a_message() {
    let r = Registry::new();
    assert_eq!(r.parse("@"), message("@", &[]));
    assert_eq!(r.parse("@ hello"), message("@ hello", &[]));
    assert_eq!(
        r.parse("@README.md explain"),
        message("@README.md explain", &["README.md"])
    );
    assert_eq!(
        r.parse("ask @coder later"),
        message("ask @coder later", &["coder"])
    );
}

#[test]
fn attachments_are_word_start_mentions_without_punctuation() {
    let found = attachment_candidates(
        "see @src/main.rs, @./x and (@README.md). Mail a@b.com or me @ home; @@x @a@b \
         @../up @src/. @src/main.rs again `@Makefile`",
    );
    assert_eq!(
        found,
        [
            "src/main.rs",
            "./x",
            "README.md",
            "../up",
            "src/.",
            "Makefile"
        ]
    );
    assert!(attachment_candidates("email: ops@example.com").is_empty());
    assert!(attachment_candidates("price @ 5, a @ b").is_empty());
    assert_eq!(
        attachment_candidates("读 @文档/说明.md。"),
        ["文档/说明.md"]
    );
}

#[test]
fn custom_triggers_longest_prefix_wins() {
    let r = Registry::new();
    let custom = |skill: &str, trigger: &str, rest: &str| Parsed::CustomTrigger {
        skill: skill.into(),
        trigger: trigger.into(),
        rest: rest.into(),
    };
    assert_eq!(r.parse("!ls -la"), custom("shell", "!", "ls -la"));
    assert_eq!(r.parse("!!"), custom("repeat", "!!", ""));
    assert_eq!(r.parse("!! again"), custom("repeat", "!!", "again"));
    assert_eq!(r.parse("  ? why"), custom("ask", "?", "why"));
    // Only the start of the input counts.
    assert_eq!(r.parse("why ?"), message("why ?", &[]));
}

#[test]
fn first_registered_trigger_wins_a_tie() {
    let skills = [];
    let triggers = [
        CustomTrigger {
            prefix: "%".into(),
            skill: "first".into(),
        },
        CustomTrigger {
            prefix: "%".into(),
            skill: "second".into(),
        },
    ];
    let ctx = TriggerContext {
        skills: &skills,
        custom_triggers: &triggers,
        ..TriggerContext::default()
    };
    assert!(matches!(
        parse("% x", &ctx),
        Parsed::CustomTrigger { skill, .. } if skill == "first"
    ));
}

#[test]
fn system_triggers_come_before_custom_ones() {
    let skills = [];
    let agents = ["coder".to_string()];
    let triggers = [
        CustomTrigger {
            prefix: "/".into(),
            skill: "never".into(),
        },
        CustomTrigger {
            prefix: "@".into(),
            skill: "at".into(),
        },
    ];
    let ctx = TriggerContext {
        skills: &skills,
        agents: &agents,
        custom_triggers: &triggers,
        ..TriggerContext::default()
    };
    assert_eq!(parse("/help", &ctx), command(Command::Help, ""));
    assert!(matches!(
        parse("/nope", &ctx),
        Parsed::UnknownCommand { .. }
    ));
    assert!(matches!(
        parse("@coder hi", &ctx),
        Parsed::AgentMessage { .. }
    ));
    assert!(matches!(
        parse("@other hi", &ctx),
        Parsed::CustomTrigger { .. }
    ));
}

#[test]
fn only_the_first_line_decides() {
    let r = Registry::new();
    assert_eq!(
        r.parse("hello\n/help\n!ls"),
        message("hello\n/help\n!ls", &[])
    );
    assert_eq!(
        r.parse("/deploy staging\nwith care"),
        Parsed::Skill {
            name: "deploy".into(),
            args: "staging\nwith care".into()
        }
    );
    assert_eq!(
        r.parse("look\n@src/lib.rs"),
        message("look\n@src/lib.rs", &["src/lib.rs"])
    );
}
