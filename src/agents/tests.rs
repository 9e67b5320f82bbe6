use std::fs;
use std::path::Path;

use super::*;
use crate::tools::ToolName;

fn parse(text: &str) -> Result<(AgentSpec, Vec<String>), String> {
    AgentSpec::parse_with_warnings("/a/helper.md", text, AgentSource::Project)
}

fn only(names: &[&str]) -> ToolAllow {
    ToolAllow::Only(names.iter().map(|n| n.to_string()).collect())
}

#[test]
fn defaults() {
    let (a, warnings) = parse("---\ndescription: Helps\n---\n\nYou help.\n").unwrap();
    assert!(warnings.is_empty());
    assert_eq!(a.name, "helper", "the file stem names the agent");
    assert_eq!(a.description, "Helps");
    assert_eq!(a.tools, ToolAllow::All);
    assert_eq!(
        a.capabilities,
        vec![Capability::Patch, Capability::Finalize]
    );
    assert_eq!(a.delegate_targets, None);
    assert_eq!(a.prompt, "You help.");
    assert!(a.work_globs.is_empty());
    assert!(a.check_write("anything/at/all.rs").is_ok());
    assert!(a.allows_tool(ToolName::Edit));
    assert!(!a.allows_tool(ToolName::Delegate));
    assert!(a.check_delegate("coder").is_err());
}

#[test]
fn policy_shorthand_list() {
    let (a, _) = parse("---\npolicy: [patch, FINALIZE, Delegate, Patch]\n---\n").unwrap();
    assert_eq!(
        a.capabilities,
        vec![
            Capability::Patch,
            Capability::Finalize,
            Capability::Delegate
        ]
    );
    assert_eq!(a.delegate_targets, None);
    assert!(a.check_delegate("anyone").is_ok());
    let (a, _) = parse("---\npolicy: [Finalize]\n---\n").unwrap();
    assert!(!a.allows_tool(ToolName::Write));
    assert!(!a.allows_tool(ToolName::Edit));
    assert!(a.allows_tool(ToolName::Read));
    let (a, _) = parse("---\npolicy: Patch, Finalize\n---\n").unwrap();
    assert_eq!(
        a.capabilities,
        vec![Capability::Patch, Capability::Finalize]
    );
}

#[test]
fn policy_mapping() {
    let (a, warnings) = parse(
        "---\npolicy:\n  allow: [Patch, Finalize, Delegate]\n  delegate_targets: [coder]\n---\n",
    )
    .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(a.delegate_targets, Some(vec!["coder".to_string()]));
    assert!(a.check_delegate("coder").is_ok());
    let err = a.check_delegate("ling").unwrap_err();
    assert_eq!(err, "agent `helper` may only delegate to coder");
    assert!(a.allows_tool(ToolName::Delegate));

    let (a, _) = parse("---\npolicy: {allow: [Delegate], delegate_targets: \"*\"}\n---\n").unwrap();
    assert_eq!(a.capabilities, vec![Capability::Delegate]);
    assert_eq!(a.delegate_targets, None);
}

#[test]
fn policy_mistakes_skip_the_agent() {
    let err = parse("---\nname: x\npolicy: [Patch, Deploy]\n---\n").unwrap_err();
    assert!(
        err.starts_with("/a/helper.md:3: unknown capability `Deploy`"),
        "{err}"
    );
    let err = parse("---\npolicy: {alow: [Patch]}\n---\n").unwrap_err();
    assert!(
        err.starts_with("/a/helper.md:2: `policy` has an unknown field"),
        "{err}"
    );
    let err = parse("---\npolicy: 3\n---\n").unwrap_err();
    assert!(
        err.starts_with("/a/helper.md:2: `policy` is the number `3`"),
        "{err}"
    );
    let err =
        parse("---\npolicy: {allow: [Delegate], delegate_targets: [Bad]}\n---\n").unwrap_err();
    assert!(err.contains("delegate_targets"), "{err}");
}

#[test]
fn delegate_targets_without_delegate_warns() {
    let (a, warnings) =
        parse("---\npolicy: {allow: [Patch], delegate_targets: [coder]}\n---\n").unwrap();
    assert!(a.check_delegate("coder").is_err());
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].starts_with("/a/helper.md:2: `delegate_targets` has no effect"));
}

#[test]
fn tools_forms() {
    let (a, _) = parse("---\ntools: \"*\"\n---\n").unwrap();
    assert_eq!(a.tools, ToolAllow::All);
    let (a, _) = parse("---\ntools: [\"*\"]\n---\n").unwrap();
    assert_eq!(a.tools, ToolAllow::All);
    let (a, warnings) = parse(
        "---\ntools: [read_file, grep, Bash, skill, DELEGATE_TO_AGENT, lock_paths, Read]\n---\n",
    )
    .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        a.tools,
        only(&[
            "Read",
            "Grep",
            "Bash",
            "Skill",
            "delegate_to_agent",
            "lock_paths"
        ])
    );
    assert!(a.allows_tool(ToolName::Read));
    assert!(!a.allows_tool(ToolName::Write));
    // Listed, but the default policy has no Delegate.
    assert!(!a.allows_tool(ToolName::Delegate));
    let (a, _) = parse("---\ntools: []\n---\n").unwrap();
    assert_eq!(a.tools, only(&[]));
    assert!(!a.allows_tool(ToolName::Read));
}

#[test]
fn unknown_tool_warns_and_loads_without_it() {
    let (a, warnings) = parse("---\nname: x\ntools: [Read, teleport]\n---\n").unwrap();
    assert_eq!(a.tools, only(&["Read"]));
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].starts_with(
            "/a/helper.md:3: unknown tool `teleport`, so agent `x` loads without it; use one of"
        ),
        "{warnings:?}"
    );
    assert!(warnings[0].contains("capture_screenshot"));
}

#[test]
fn work_globs_gate_writes() {
    let (a, _) = parse("---\nwork_globs: [\"src/**\", \"docs/*.md\", ./tests/]\n---\n").unwrap();
    assert!(a.check_write("src/a/b.rs").is_ok());
    assert!(a.check_write("docs/x.md").is_ok());
    assert!(a.check_write("tests/it.rs").is_ok());
    assert!(a.may_write("tests/deep/it.rs"));
    assert!(!a.may_write("docs/sub/x.md"), "`*` does not cross `/`");
    let err = a.check_write("Cargo.toml").unwrap_err();
    assert_eq!(
        err,
        "agent `helper` may only write to src/**, docs/*.md, ./tests/; `Cargo.toml` is outside"
    );
    let (a, _) = parse("---\nwork_globs: \"*.txt\"\n---\n").unwrap();
    assert!(a.may_write("a.txt"));
    assert!(!a.may_write("d/a.txt"));
}

#[test]
fn bad_glob_skips_the_agent() {
    let err = parse("---\nname: x\ndescription: d\nwork_globs: [\"src/[\"]\n---\n").unwrap_err();
    assert!(
        err.starts_with("/a/helper.md:4: `work_globs` entry `src/[` is not a valid glob"),
        "{err}"
    );
}

#[test]
fn names_and_types() {
    let err = parse("---\nname: Not Valid\n---\n").unwrap_err();
    assert!(err.starts_with("/a/helper.md:2: name `Not Valid`"), "{err}");
    let err = AgentSpec::parse("/a/My Agent.md", "---\n---\n", AgentSource::Project).unwrap_err();
    assert!(err.contains("rename the file or add `name:`"), "{err}");
    let err = parse("---\ntools: {Read: yes}\n---\n").unwrap_err();
    assert!(
        err.starts_with("/a/helper.md:2: `tools` is a mapping"),
        "{err}"
    );
    let err = parse("no frontmatter").unwrap_err();
    assert!(err.starts_with("/a/helper.md:1: no frontmatter"), "{err}");
}

#[test]
fn unknown_fields_are_kept() {
    let (a, _) = parse("---\ncolor: blue\ntemperature: 0.2\n---\n").unwrap();
    assert_eq!(a.extra.len(), 2);
    assert_eq!(a.extra["color"], serde_yaml::Value::String("blue".into()));
}

#[test]
fn builtin_agents_load_without_warnings() {
    for (file, text) in builtin_sources() {
        let path = format!("built-in agents/{file}");
        let (_, warnings) =
            AgentSpec::parse_with_warnings(&path, text, AgentSource::Builtin).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
    }
    let tmp = tempfile::tempdir().unwrap();
    let set = AgentSet::discover(&dirs(tmp.path()));
    assert!(set.warnings.is_empty(), "{:?}", set.warnings);
    assert_eq!(set.names(), vec!["coder", "ling"]);

    let ling = set.get("ling").unwrap();
    assert_eq!(ling.tools, ToolAllow::All);
    assert_eq!(
        ling.capabilities,
        vec![
            Capability::Patch,
            Capability::Finalize,
            Capability::Delegate
        ]
    );
    assert!(ling.check_delegate("coder").is_ok());
    assert!(ling.check_delegate("ling").is_err());
    assert!(
        ling.prompt.chars().count() < 600,
        "ling's prompt is budgeted"
    );
    assert_eq!(ling.path, "built-in agents/ling.md");

    let coder = set.get("coder").unwrap();
    for tool in [
        "get_repo_info",
        "Glob",
        "Read",
        "Grep",
        "Edit",
        "Write",
        "Bash",
    ] {
        let typed = ToolName::from_name(tool).unwrap();
        assert!(coder.allows_tool(typed), "{tool}");
    }
    assert!(!coder.allows_tool(ToolName::Delegate));
    assert!(coder.check_delegate("ling").is_err());
    assert!(
        coder.prompt.chars().count() < 900,
        "coder's prompt is budgeted"
    );
}

fn dirs(base: &Path) -> AgentDirs {
    AgentDirs {
        linggen_home: base.join("lh"),
        root: base.join("repo"),
    }
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

#[test]
fn discovery_priority_and_readme() {
    let tmp = tempfile::tempdir().unwrap();
    let d = dirs(tmp.path());
    write(
        &d.root.join("agents/coder.md"),
        "---\ndescription: project\n---\nP\n",
    );
    write(
        &d.root.join(".linggen/agents/coder.md"),
        "---\ndescription: hidden\n---\nH\n",
    );
    write(
        &d.root.join("agents/README.md"),
        "# Agents\nno frontmatter here\n",
    );
    write(&d.root.join("agents/readme.MD"), "lower case too\n");
    write(&d.root.join("agents/notes.txt"), "not markdown\n");
    write(
        &d.root.join("agents/reviewer.md"),
        "---\ntools: [Read]\n---\nR\n",
    );
    write(
        &d.linggen_home.join("agents/mine.md"),
        "---\nname: ling\n---\nMy ling\n",
    );

    let set = AgentSet::discover(&d);
    assert!(set.warnings.is_empty(), "{:?}", set.warnings);
    assert_eq!(set.names(), vec!["coder", "ling", "reviewer"]);
    let coder = set.get("coder").unwrap();
    assert_eq!(coder.description, "hidden");
    assert_eq!(coder.source, AgentSource::ProjectHidden);
    let ling = set.get("ling").unwrap();
    assert_eq!(ling.prompt, "My ling");
    assert_eq!(ling.source, AgentSource::Personal);
    assert_eq!(set.get("reviewer").unwrap().source, AgentSource::Project);
}

#[test]
fn broken_files_warn_once_each() {
    let tmp = tempfile::tempdir().unwrap();
    let d = dirs(tmp.path());
    let bad = d.root.join("agents/bad.md");
    write(&bad, "---\nname: bad\ntools: [Read\n---\n");
    write(&d.root.join("agents/a.md"), "---\nname: twin\n---\n");
    write(&d.root.join("agents/b.md"), "---\nname: twin\n---\n");
    let set = AgentSet::discover(&d);
    assert!(set.get("bad").is_none());
    assert!(set.get("twin").is_some());
    assert!(set.get("ling").is_some());
    assert_eq!(set.warnings.len(), 2, "{:?}", set.warnings);
    let bad_path = bad.display().to_string();
    assert!(
        set.warnings
            .iter()
            .any(|w| w.starts_with(&format!("{bad_path}:")))
    );
    assert!(
        set.warnings
            .iter()
            .any(|w| w.contains("agent `twin` is already defined"))
    );
}

#[test]
fn watch_dirs_are_the_three_folders() {
    let d = dirs(Path::new("/x"));
    assert_eq!(
        AgentSet::watch_dirs(&d),
        vec![
            Path::new("/x/lh/agents").to_path_buf(),
            Path::new("/x/repo/.linggen/agents").to_path_buf(),
            Path::new("/x/repo/agents").to_path_buf(),
        ]
    );
}

#[test]
fn an_agent_file_names_tools_by_canonical_name_or_alias() {
    assert_eq!(
        canonical_tool("delegate_to_agent"),
        Some("delegate_to_agent")
    );
    assert_eq!(canonical_tool("edit"), Some("Edit"));
    assert_eq!(canonical_tool("LOCK_PATHS"), Some("lock_paths"));
    assert_eq!(canonical_tool("launch_missiles"), None);
}

#[test]
fn an_agent_lists_mcp_tools_by_name_or_server() {
    let (a, warnings) =
        parse("---\ntools: [Read, mcp__github__*, mcp__docs, mcp__db__query]\n---\n").unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let tool = |name: &str| ToolId::Registered(name.into());
    assert!(a.allows(&tool("mcp__github__create_issue")));
    assert!(a.allows(&tool("mcp__docs__search")));
    assert!(a.allows(&tool("mcp__db__query")));
    assert!(!a.allows(&tool("mcp__db__drop")));
    assert!(!a.allows(&tool("mcp__documents__search")));
    assert!(a.allows_tool(ToolName::Read));
    let (all, _) = parse("---\nname: x\n---\n").unwrap();
    assert!(all.allows(&tool("mcp__anything__at_all")));
}

#[test]
fn skills_narrow_what_the_agent_sees() {
    let (a, _) = parse("---\nskills: [review, fe:lint, review]\n---\n").unwrap();
    assert_eq!(a.skills, Some(vec!["review".into(), "fe:lint".into()]));
    assert!(a.allows_skill("review") && !a.allows_skill("deploy"));
    let (a, _) = parse("---\nskills: \"*\"\n---\n").unwrap();
    assert_eq!(a.skills, None);
    let (a, _) = parse("---\ndescription: x\n---\n").unwrap();
    assert!(a.allows_skill("anything"));
    let (a, _) = parse("---\nskills: []\n---\n").unwrap();
    assert!(!a.allows_skill("review"));
}

#[test]
fn ill_formed_skills_skip_the_agent_and_unknown_ones_warn() {
    let err = parse("---\nname: helper\nskills: [Deploy!]\n---\n").unwrap_err();
    assert!(
        err.starts_with("/a/helper.md:3: `skills` entry `Deploy!` is not a skill name"),
        "{err}"
    );
    let err = parse("---\nskills: {a: 1}\n---\n").unwrap_err();
    assert!(err.starts_with("/a/helper.md:2: `skills` is "), "{err}");
    let (a, _) = parse("---\nname: helper\nskills: [nope]\n---\n").unwrap();
    let set = AgentSet {
        agents: vec![a],
        warnings: Vec::new(),
    };
    let warnings = set.unknown_skill_warnings(&crate::skills::SkillSet::default());
    assert_eq!(
        warnings,
        [
            "/a/helper.md:3: agent `helper` lists skill `nope`, which does not exist, so the agent \
          has one skill fewer; add the skill or remove it from `skills:`"
        ]
    );
}

#[test]
fn a_composed_file_reads_back_as_the_fields_say() {
    let fields = edit::AgentFields {
        name: Some("reviewer".into()),
        description: Some("Reviews: diffs, carefully".into()),
        model: Some("local".into()),
        mode: Some("talk".into()),
        tools: Some(vec!["Read".into(), "Grep".into()]),
        skills: Some(vec!["review".into()]),
        policy: Some(vec!["Finalize".into(), "Delegate".into()]),
        delegate_targets: Some(vec!["coder".into()]),
        work_globs: Some(vec![]),
        checks: None,
        prompt: "You review.\n\n".into(),
    };
    let mut kept = serde_yaml::Mapping::new();
    kept.insert("color".into(), "blue".into());
    let text = edit::compose(&fields, &kept);
    assert!(text.starts_with("---\nname: reviewer\n"), "{text}");
    assert!(text.ends_with("---\nYou review.\n"), "{text}");
    let (a, warnings) = parse(&text).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(a.name, "reviewer");
    assert_eq!(a.description, "Reviews: diffs, carefully");
    assert_eq!(a.model.as_deref(), Some("local"));
    assert_eq!(a.tools, only(&["Read", "Grep"]));
    assert_eq!(a.skills, Some(vec!["review".to_string()]));
    assert_eq!(a.delegate_targets, Some(vec!["coder".to_string()]));
    assert_eq!(
        a.capabilities,
        vec![Capability::Finalize, Capability::Delegate]
    );
    assert_eq!(a.extra.get("color"), Some(&serde_yaml::Value::from("blue")));
    let (front, body) = edit::split(&text);
    assert!(front.starts_with("name: reviewer\n") && front.contains("color: blue"));
    assert_eq!(body, "You review.\n");
    assert!(!edit::unedited_fields(&text).contains_key("name"));
    assert!(edit::unedited_fields(&text).contains_key("color"));
}

#[test]
fn renaming_keeps_the_rest_of_the_file() {
    let text = "---\n# mine\nname: ling\ntools: \"*\"\n---\nHi.\n";
    assert_eq!(
        edit::renamed(text, "my-ling"),
        "---\n# mine\nname: my-ling\ntools: \"*\"\n---\nHi.\n"
    );
    assert_eq!(
        edit::renamed("---\ntools: []\n---\nHi.\n", "x"),
        "---\nname: x\ntools: []\n---\nHi.\n"
    );
    for bad in ["../x", "a/b", ".hidden", "", "X"] {
        assert!(edit::check_name(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_new_reading_names_each_agent_it_added_changed_or_removed() {
    let agent = |name: &str, prompt: &str| {
        let text = format!("---\nname: {name}\n---\n{prompt}\n");
        AgentSpec::parse(&format!("/a/{name}.md"), &text, AgentSource::Personal).unwrap()
    };
    let set = |agents: Vec<AgentSpec>| AgentSet {
        agents,
        warnings: Vec::new(),
    };
    let before = set(vec![agent("a", "A"), agent("b", "B")]);
    let after = set(vec![agent("a", "A2"), agent("c", "C")]);
    assert_eq!(
        after.changes_since(&before),
        [
            "agent a changed (/a/a.md)",
            "agent c added (/a/c.md)",
            "agent b removed (/a/b.md is gone)"
        ]
    );
    assert!(after.changes_since(&after).is_empty());
}
