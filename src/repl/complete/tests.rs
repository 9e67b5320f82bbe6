use std::fs;
use std::path::Path;
use std::time::Duration;

use super::fuzzy::{best_files, is_subsequence};
use super::*;
use crate::repl::triggers::{CustomTrigger, SkillInfo, SkillTarget};

struct Fixture {
    skills: Vec<SkillInfo>,
    agents: Vec<String>,
    triggers: Vec<CustomTrigger>,
    targets: Vec<SkillTarget>,
    models: Vec<Choice>,
    sessions: Vec<Choice>,
    themes: Vec<Choice>,
}

impl Fixture {
    fn new() -> Self {
        Fixture {
            skills: vec![
                SkillInfo {
                    name: "deploy".into(),
                    description: "ship it".into(),
                    argument_hint: Some("<environment>".into()),
                    user_invocable: true,
                    command: false,
                },
                SkillInfo {
                    name: "internal".into(),
                    description: String::new(),
                    argument_hint: None,
                    user_invocable: false,
                    command: false,
                },
                SkillInfo {
                    name: "翻译".into(),
                    description: String::new(),
                    argument_hint: Some("<文本>".into()),
                    user_invocable: true,
                    command: false,
                },
            ],
            agents: vec!["ling".into(), "coder".into(), "作者".into()],
            triggers: vec![
                CustomTrigger {
                    prefix: "!".into(),
                    skill: "shell".into(),
                },
                CustomTrigger {
                    prefix: "!!".into(),
                    skill: "repeat".into(),
                },
            ],
            targets: vec![SkillTarget {
                target: "jira".into(),
                skill: "jira-ticket".into(),
            }],
            models: vec![
                Choice::described("qwen3:8b", "ollama"),
                Choice::described("qwen3:32b", "ollama"),
                Choice::described("claude-sonnet", "anthropic"),
            ],
            sessions: vec![Choice::described("s-20240101-ab", "fix the parser")],
            themes: vec![Choice::new("dark"), Choice::new("light")],
        }
    }

    fn ctx(&self, busy: bool) -> CompletionContext<'_> {
        CompletionContext {
            triggers: TriggerContext {
                skills: &self.skills,
                agents: &self.agents,
                custom_triggers: &self.triggers,
                skill_targets: &self.targets,
            },
            busy,
            models: &self.models,
            sessions: &self.sessions,
            themes: &self.themes,
            ..CompletionContext::default()
        }
    }

    /// Replacements for the line with the cursor at the end.
    fn at_end(&self, line: &str) -> Vec<String> {
        replacements(complete(line, line.len(), &self.ctx(false)).1)
    }
}

fn replacements(candidates: Vec<Candidate>) -> Vec<String> {
    candidates.into_iter().map(|c| c.replacement).collect()
}

fn write_files(root: &Path, paths: &[&str]) {
    for path in paths {
        let path = root.join(path);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(path, "x").unwrap();
    }
}

#[test]
fn slash_completes_commands_with_hints() {
    let f = Fixture::new();
    let (start, candidates) = complete("/he", 3, &f.ctx(false));
    assert_eq!(start, 0);
    assert_eq!(
        candidates,
        [Candidate {
            replacement: "/help".into(),
            display: "/help".into(),
            hint: None,
            description: Some(Command::Help.summary().into()),
        }]
    );
    let model = complete("/mod", 4, &f.ctx(false)).1;
    assert_eq!(replacements(model.clone()), ["/model ", "/mode "]);
    assert_eq!(model[0].hint.as_deref(), Some("<id>"));
    assert_eq!(model[1].hint.as_deref(), Some("[chat|auto|talk]"));
}

#[test]
fn a_bare_slash_lists_everything_in_table_order_then_skills() {
    let f = Fixture::new();
    let all = f.at_end("/");
    assert_eq!(all.len(), Command::ALL.len() + 2);
    assert_eq!(all[0], "/help");
    assert_eq!(all[all.len() - 2..], ["/deploy ", "/翻译 "]);
    assert!(!all.iter().any(|c| c.contains("internal")));
}

#[test]
fn skills_carry_their_hint_and_description() {
    let f = Fixture::new();
    let deploy = complete("/dep", 4, &f.ctx(false)).1;
    assert_eq!(deploy[0].hint.as_deref(), Some("<environment>"));
    assert_eq!(deploy[0].description.as_deref(), Some("ship it"));
}

#[test]
fn busy_state_offers_only_commands_valid_now() {
    let f = Fixture::new();
    let busy = replacements(complete("/", 1, &f.ctx(true)).1);
    assert!(busy.contains(&"/help".to_string()));
    assert!(busy.contains(&"/context".to_string()));
    assert!(!busy.contains(&"/clear".to_string()));
    assert!(!busy.contains(&"/model ".to_string()));
    // Nor the arguments of a command that has to wait.
    assert!(complete("/model q", 8, &f.ctx(true)).1.is_empty());
    assert!(!complete("/theme ", 7, &f.ctx(true)).1.is_empty());
}

#[test]
fn no_prefix_match_falls_back_to_a_subsequence() {
    let f = Fixture::new();
    assert_eq!(f.at_end("/hlp"), ["/help"]);
    assert!(f.at_end("/zzz").is_empty());
}

#[test]
fn a_prefix_match_in_one_list_hides_subsequence_matches_in_the_other() {
    let mut f = Fixture::new();
    f.skills.push(SkillInfo {
        name: "late".into(),
        description: String::new(),
        argument_hint: None,
        user_invocable: true,
        command: false,
    });
    // `la` is a subsequence of `clear` but a prefix of the skill `late`.
    assert_eq!(f.at_end("/la"), ["/late"]);
    // `ji` is a prefix of the target `jira`, a subsequence of no agent; `co` the reverse.
    assert_eq!(f.at_end("@ji"), ["@jira "]);
    assert_eq!(f.at_end("@co"), ["@coder "]);
}

#[test]
fn escapes_and_paths_offer_nothing() {
    let f = Fixture::new();
    assert!(f.at_end("//he").is_empty());
    assert!(f.at_end("/usr/bi").is_empty());
    assert!(f.at_end("").is_empty());
    assert!(f.at_end("hello wor").is_empty());
}

#[test]
fn at_completes_agents_and_skill_targets() {
    let f = Fixture::new();
    let (start, candidates) = complete("@co", 3, &f.ctx(false));
    assert_eq!(start, 0);
    assert_eq!(replacements(candidates.clone()), ["@coder "]);
    assert_eq!(candidates[0].display, "@coder");
    assert_eq!(f.at_end("@"), ["@ling ", "@coder ", "@作者 ", "@jira "]);
    assert_eq!(f.at_end("@作"), ["@作者 "]);
    assert_eq!(f.at_end("@ji"), ["@jira "]);
}

#[test]
fn agents_are_not_offered_mid_sentence() {
    let f = Fixture::new();
    assert!(f.at_end("ask @co").is_empty());
}

#[test]
fn builtin_arguments_come_from_the_context() {
    let f = Fixture::new();
    assert_eq!(f.at_end("/agent c"), ["coder"]);
    assert_eq!(f.at_end("/model qwen"), ["qwen3:8b", "qwen3:32b"]);
    assert_eq!(f.at_end("/model sonnet"), ["claude-sonnet"]);
    assert_eq!(f.at_end("/mode "), ["chat", "auto", "talk"]);
    assert_eq!(
        f.at_end("/permissions "),
        ["default", "accept-edits", "plan", "bypass"]
    );
    assert_eq!(f.at_end("/permissions a"), ["accept-edits"]);
    assert_eq!(f.at_end("/theme l"), ["light"]);
    let resume = complete("/resume ", 8, &f.ctx(false)).1;
    assert_eq!(resume[0].replacement, "s-20240101-ab");
    assert_eq!(resume[0].description.as_deref(), Some("fix the parser"));
    // Only the first argument, and only for arguments built-ins declare.
    assert!(f.at_end("/mode auto x").is_empty());
    assert!(f.at_end("/help ").is_empty());
    assert!(f.at_end("/deploy st").is_empty());
}

#[test]
fn setting_keys_are_followed_by_a_space_for_the_value() {
    let keys = [Choice::new("ui.theme"), Choice::new("max_iters")];
    let ctx = CompletionContext {
        setting_keys: &keys,
        prompts: &[],
        ..CompletionContext::default()
    };
    let (start, candidates) = complete("/settings ui", 12, &ctx);
    assert_eq!(start, 10);
    assert_eq!(replacements(candidates), ["ui.theme "]);
}

#[test]
fn custom_triggers_are_offered_at_the_start() {
    let f = Fixture::new();
    assert_eq!(f.at_end("!"), ["!", "!!"]);
    assert_eq!(f.at_end("!!"), ["!!"]);
    assert!(f.at_end("say !").is_empty());
}

#[test]
fn only_text_before_the_cursor_counts() {
    let f = Fixture::new();
    let line = "/he and more";
    let (start, candidates) = complete(line, 3, &f.ctx(false));
    assert_eq!((start, replacements(candidates)), (0, vec!["/help".into()]));
    let line = "@co please fix";
    assert_eq!(
        replacements(complete(line, 3, &f.ctx(false)).1),
        ["@coder "]
    );
    // A cursor inside a multi-byte character is moved back, not a panic.
    let line = "@作者";
    assert_eq!(complete(line, 2, &f.ctx(false)).0, 0);
    assert_eq!(replacements(complete(line, 4, &f.ctx(false)).1), ["@作者 "]);
}

#[test]
fn later_lines_are_never_commands() {
    let f = Fixture::new();
    assert!(f.at_end("hello\n/he").is_empty());
    assert!(f.at_end("/mode\nau").is_empty());
}

#[test]
fn hints_show_the_argument_shape_once_the_name_is_typed() {
    let f = Fixture::new();
    let hint = |line: &str| hint(line, line.len(), &f.ctx(false));
    assert_eq!(hint("/model").as_deref(), Some(" <id>"));
    assert_eq!(hint("/model ").as_deref(), Some("<id>"));
    assert_eq!(hint("/deploy").as_deref(), Some(" <environment>"));
    assert_eq!(hint("/model q"), None);
    assert_eq!(hint("/help"), None);
    assert_eq!(hint("/mod"), None);
    assert_eq!(hint("hello"), None);
    assert_eq!(super::hint("/model", 3, &f.ctx(false)), None);
    // `/` alone lists what can follow.
    let slash = hint("/").unwrap_or_default();
    assert!(slash.starts_with("help clear settings"), "{slash}");
    assert!(slash.contains("Tab lists every command"), "{slash}");
}

#[test]
fn subsequence_matching_is_in_order() {
    assert!(is_subsequence("smr", "src/main.rs"));
    assert!(is_subsequence("", "x"));
    assert!(!is_subsequence("msr", "src/main.rs"));
    assert!(is_subsequence("文明", "文档/说明.md"));
}

#[test]
fn file_ranking_prefers_prefix_then_basename_then_shorter() {
    let dir = tempfile::tempdir().unwrap();
    write_files(
        dir.path(),
        &[
            "src/main.rs",
            "src/repl/main_loop.rs",
            "doc/domain.md",
            "main.rs",
            "tests/mainline/x.rs",
            "README.md",
        ],
    );
    let index = FileIndex::new(dir.path());
    index.refresh_now();
    let files = index.snapshot();
    assert_eq!(
        best_files("main", &files, 10),
        [
            "main.rs",
            "src/main.rs",
            "src/repl/main_loop.rs",
            "tests/mainline/x.rs",
            "doc/domain.md"
        ]
    );
    assert_eq!(best_files("SRC/", &files, 10)[0], "src/main.rs");
    assert_eq!(best_files("./src/m", &files, 10)[0], "src/main.rs");
    assert_eq!(best_files("readme", &files, 10), ["README.md"]);
    assert_eq!(best_files("", &files, 2), ["main.rs", "README.md"]);
    assert!(best_files("zzz", &files, 10).is_empty());
}

#[test]
fn at_completes_files_anywhere_in_the_line() {
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path(), &["src/main.rs", "src/lib.rs", "文档/说明.md"]);
    let index = FileIndex::new(dir.path());
    index.refresh_now();
    let f = Fixture::new();
    let ctx = CompletionContext {
        files: Some(&index),
        ..f.ctx(false)
    };
    let line = "explain @smain please";
    let (start, candidates) = complete(line, 14, &ctx);
    assert_eq!(start, 8);
    assert_eq!(replacements(candidates), ["@src/main.rs "]);
    assert_eq!(
        replacements(complete("@说明", 7, &ctx).1),
        ["@文档/说明.md "]
    );
    // At the start agents come first, then files.
    assert_eq!(
        replacements(complete("@l", 2, &ctx).1),
        ["@ling ", "@src/lib.rs "]
    );
}

#[test]
fn index_honours_gitignore_and_skips_dot_git() {
    let dir = tempfile::tempdir().unwrap();
    write_files(
        dir.path(),
        &[
            ".gitignore",
            ".git/config",
            ".github/workflows/ci.yml",
            "target/debug/app",
            "src/app.log",
            "src/app.rs",
        ],
    );
    fs::write(dir.path().join(".gitignore"), "target/\n*.log\n").unwrap();
    let index = FileIndex::new(dir.path());
    index.refresh_now();
    let paths: Vec<String> = index.snapshot().iter().map(|f| f.path.clone()).collect();
    assert_eq!(
        paths,
        [".gitignore", "src/app.rs", ".github/workflows/ci.yml"]
    );
}

#[test]
fn index_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..20).map(|i| format!("f{i}.txt")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    write_files(dir.path(), &names);
    let index = FileIndex::with_limits(dir.path(), 5, DEFAULT_MAX_AGE);
    assert_eq!(index.refresh_now(), 5);
}

#[test]
fn keystrokes_read_the_cache_and_a_background_walk_fills_it() {
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path(), &["a.rs"]);
    let index = FileIndex::with_limits(dir.path(), DEFAULT_MAX_FILES, Duration::ZERO);
    // The first read never waits for the walk: it starts one and answers from the
    // (still empty) cache.
    assert!(index.snapshot().is_empty());
    assert!(index.wait_until_built(Duration::from_secs(10)));
    assert_eq!(index.snapshot().len(), 1);
    // With a maximum age of zero every read is stale: a new file appears after the
    // background refresh that read started.
    write_files(dir.path(), &["b.rs"]);
    let _ = index.snapshot();
    assert!(index.wait_until_built(Duration::from_secs(10)));
    let paths: Vec<String> = index.snapshot().iter().map(|f| f.path.clone()).collect();
    assert_eq!(paths, ["a.rs", "b.rs"]);
}

#[test]
fn a_fresh_cache_is_not_walked_again() {
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path(), &["a.rs"]);
    let index = FileIndex::with_limits(dir.path(), DEFAULT_MAX_FILES, Duration::from_secs(3600));
    index.refresh_now();
    write_files(dir.path(), &["b.rs"]);
    assert_eq!(index.snapshot().len(), 1);
    assert!(index.wait_until_built(Duration::from_secs(1)));
    assert_eq!(index.snapshot().len(), 1);
}
