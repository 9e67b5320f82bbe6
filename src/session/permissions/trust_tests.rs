use serde_json::json;

use super::*;
use crate::config::{FlagOverrides, PermissionMode};
use crate::session::permissions::{Permissions, Verdict};
use crate::tools::{ToolContext, prepare};

fn skill(root: &Path, name: &str, source: SkillSource, allowed: &[&str]) -> Skill {
    Skill {
        name: name.into(),
        description: "d".into(),
        argument_hint: None,
        disable_model_invocation: false,
        user_invocable: true,
        allowed_tools: allowed.iter().map(|s| s.to_string()).collect(),
        model: None,
        fork: false,
        agent: None,
        trigger: None,
        body: String::new(),
        dir: None,
        path: root
            .join(format!(".linggen/skills/{name}/SKILL.md"))
            .display()
            .to_string(),
        source,
        kind: SkillKind::Skill,
        extra: Default::default(),
    }
}

#[test]
fn grant_paths_are_skill_agent_and_permission_files() {
    for rel in [
        ".linggen/skills/x/SKILL.md",
        "./.agents/skills/x/SKILL.md",
        "agents/x.md",
        "Agents/X.md",
        ".linggen/agents/x.md",
        ".linggen/skills",
        "linggen-agent.toml",
        ".linggen/permissions.toml",
        ".mcp.json",
        "./.MCP.json",
        ".claude/commands/fix.md",
        ".linggen/commands/a/b.md",
    ] {
        assert!(is_grant_path(rel), "{rel}");
    }
    for rel in [
        "src/agents/x.rs",
        "agents.md",
        ".linggen/screenshots/a.png",
        "skills/x",
    ] {
        assert!(!is_grant_path(rel), "{rel}");
    }
}

#[test]
fn project_skill_rules_hold_only_as_far_as_accepted() {
    let root = Path::new("/repo");
    let project = skill(root, "deploy", SkillSource::Project, &["Read", "Bash(*)"]);
    let personal = skill(root, "mine", SkillSource::Personal, &["Bash(*)"]);
    let trust = Trust::new(root, None, BTreeSet::new());
    let (held, ignored) = trust.skill_rules(&project);
    assert!(held.is_empty());
    assert_eq!(
        ignored,
        vec![
            "skill deploy: allowed-tools Read (.linggen/skills/deploy/SKILL.md)",
            "skill deploy: allowed-tools Bash(*) (.linggen/skills/deploy/SKILL.md)",
        ]
    );
    assert_eq!(trust.skill_rules(&personal).0, vec!["Bash(*)"]);

    let accepted = [ignored[0].clone()].into_iter().collect();
    let trust = Trust::new(root, None, accepted);
    let (held, ignored) = trust.skill_rules(&project);
    assert_eq!(held, vec!["Read"]);
    assert_eq!(ignored.len(), 1);
}

#[test]
fn project_command_rules_are_grants_named_after_the_command() {
    let root = Path::new("/repo");
    let command = |source| Skill {
        name: "frontend:review".into(),
        path: "/repo/.claude/commands/frontend/review.md".into(),
        kind: SkillKind::Command,
        ..skill(root, "x", source, &["Bash(git log:*)"])
    };
    let trust = Trust::new(root, None, BTreeSet::new());
    let project = command(SkillSource::Project);
    let (held, ignored) = trust.skill_rules(&project);
    assert!(held.is_empty());
    let grant = "command /frontend:review: allowed-tools Bash(git log:*) \
                 (.claude/commands/frontend/review.md)";
    assert_eq!(ignored, vec![grant]);
    // `~/.claude/commands` and `$LINGGEN_HOME/commands` are the person's own.
    for source in [SkillSource::Claude, SkillSource::Personal] {
        let own = command(source);
        let (held, ignored) = trust.skill_rules(&own);
        assert_eq!((held, ignored.len()), (vec!["Bash(git log:*)"], 0));
    }
    let trust = Trust::new(root, None, [grant.to_string()].into_iter().collect());
    assert_eq!(trust.skill_rules(&project).0, vec!["Bash(git log:*)"]);
}

#[test]
fn workspace_grants_list_config_rules_and_skills_sorted() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let home = root.join("home");
    std::fs::write(
        root.join("linggen-agent.toml"),
        "[permissions]\nmode = \"accept-edits\"\nallow = [\"Bash(cargo*)\"]\n",
    )
    .unwrap();
    let config = Config::load(&home, &root, &|_| None, &FlagOverrides::default()).unwrap();
    let skills = SkillSet {
        skills: vec![skill(&root, "x", SkillSource::Project, &["Bash(touch*)"])],
        warnings: Vec::new(),
    };
    let grants = workspace_grants(&config, &root, &["Write(src/**)".to_string()], &skills, &[]);
    assert_eq!(
        grants,
        vec![
            "allow Bash(cargo*) (linggen-agent.toml)",
            "allow Write(src/**) (.linggen/permissions.toml)",
            "permission mode accept-edits (linggen-agent.toml)",
            "skill x: allowed-tools Bash(touch*) (.linggen/skills/x/SKILL.md)",
        ]
    );
    let mut folder = FolderTrust::load(
        &home,
        &root,
        &config,
        &["Write(src/**)".into()],
        &skills,
        &[],
    );
    assert_eq!(folder.untrusted().len(), 4);
    assert!(folder.note().unwrap().contains("linggen trust"));
    folder.trust_all().unwrap();
    assert!(folder.note().is_none());
    let again = FolderTrust::load(
        &home,
        &root,
        &config,
        &["Write(src/**)".into()],
        &skills,
        &[],
    );
    assert!(again.untrusted().is_empty(), "saved to the store");
}

#[test]
fn untrusted_project_rules_do_not_allow() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ctx = ToolContext::new(&root);
    let prepared = prepare(&ctx, "Bash", &json!({"command": "touch x"})).unwrap();
    let rules = vec!["Bash(touch*)".to_string()];
    let untrusted = Permissions::new(PermissionMode::Default, &[], &[])
        .unwrap()
        .with_trust(Trust::new(&root, None, BTreeSet::new()))
        .with_project_rules(&rules)
        .unwrap();
    assert!(matches!(untrusted.check(&prepared), Verdict::Ask { .. }));
    let accepted = [project_rule_grant("Bash(touch*)")].into_iter().collect();
    let trusted = Permissions::new(PermissionMode::Default, &[], &[])
        .unwrap()
        .with_trust(Trust::new(&root, None, accepted))
        .with_project_rules(&rules)
        .unwrap();
    assert_eq!(trusted.check(&prepared), Verdict::Allow);
}

#[test]
fn writes_to_grant_paths_ask_in_every_mode_and_are_never_remembered() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ctx = ToolContext::new(&root);
    let write = prepare(
        &ctx,
        "Write",
        &json!({"path": ".linggen/skills/x/SKILL.md", "content": "x"}),
    )
    .unwrap();
    let tee = prepare(
        &ctx,
        "Bash",
        &json!({"command": "echo x | tee agents/x.md"}),
    )
    .unwrap();
    for mode in [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Bypass,
    ] {
        let mut p = Permissions::new(mode, &["Write(**)".into(), "Bash(*)".into()], &[]).unwrap();
        p.allow_for_session(&write);
        p.allow_for_session(&tee);
        p.allow_for_project(&root, &write).unwrap();
        for prepared in [&write, &tee] {
            let Verdict::Ask { reason } = p.check(prepared) else {
                panic!("{mode:?}: {:?}", p.check(prepared));
            };
            // A Write says why it asks; the command is refused by the analysis as `Never`
            // (agents/ is protected), which asks in every mode too.
            assert!(
                reason.contains("every mode") || reason.contains("may not change it"),
                "{reason}"
            );
        }
    }
    assert!(
        !root.join(".linggen/permissions.toml").exists(),
        "nothing saved"
    );
    // Restrictions still win.
    let plan = Permissions::new(PermissionMode::Plan, &[], &[]).unwrap();
    assert!(matches!(plan.check(&write), Verdict::Deny { .. }));
}

#[test]
fn always_in_this_project_trusts_the_rule_it_saves() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let home = root.join("home");
    let ctx = ToolContext::new(&root);
    let prepared = prepare(&ctx, "Bash", &json!({"command": "touch x"})).unwrap();
    let store = TrustStore::new(&home);
    let mut p = Permissions::new(PermissionMode::Default, &[], &[])
        .unwrap()
        .with_trust(Trust::new(&root, Some(store.clone()), BTreeSet::new()));
    p.allow_for_project(&root, &prepared).unwrap();
    let accepted = store.accepted(&root).unwrap();
    assert!(
        accepted.contains("allow Bash(touch*) (.linggen/permissions.toml)"),
        "{accepted:?}"
    );
}

#[test]
fn a_symlink_into_a_skill_folder_is_still_a_grant_path() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join(".linggen/skills/x")).unwrap();
    std::os::unix::fs::symlink(root.join(".linggen/skills"), root.join("docs")).unwrap();
    let ctx = ToolContext::new(&root);
    let write = prepare(
        &ctx,
        "Write",
        &json!({"path": "docs/x/SKILL.md", "content": "x"}),
    )
    .unwrap();
    let p = Permissions::new(PermissionMode::Bypass, &[], &[]).unwrap();
    assert!(
        matches!(p.check(&write), Verdict::Ask { .. }),
        "{:?}",
        p.check(&write)
    );
}

#[test]
fn a_new_session_sees_grants_accepted_since_start() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let store = TrustStore::new(&root.join("home"));
    let at_start = Trust::new(&root, Some(store.clone()), BTreeSet::new());
    store
        .add(&root, "allow Read (.linggen/permissions.toml)")
        .unwrap();
    assert!(!at_start.is_accepted("allow Read (.linggen/permissions.toml)"));
    assert!(
        at_start
            .reloaded()
            .is_accepted("allow Read (.linggen/permissions.toml)")
    );
}
