use std::path::Path;

use super::*;

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn hooks_are_read_from_every_place_and_project_ones_need_trust() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (home, lhome, root) = (
        dir.path().join("h"),
        dir.path().join("l"),
        dir.path().join("r"),
    );
    write(
        &home.join(".claude/settings.json"),
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}"#,
    );
    write(
        &root.join(".claude/settings.json"),
        r#"{"permissions": {}, "hooks": {"PreToolUse": [{"matcher": "Bash",
            "hooks": [{"type": "command", "command": "./check.py", "timeout": 5}]}],
            "Bogus": [], "PostToolUse": [{"matcher": "Edit(", "hooks": []}]}}"#,
    );
    write(&root.join(".linggen/settings.json"), "{\n  \"hooks\": [\n");
    let set = HookSet::load(Some(&home), &lhome, &root);
    assert_eq!(set.groups.len(), 2, "{:?}", set.groups);
    assert_eq!(set.warnings.len(), 3, "{:?}", set.warnings);
    assert!(set.warnings.iter().any(|w| w.contains("Bogus")));
    assert!(
        set.warnings
            .iter()
            .any(|w| w.contains("`Edit(` is not a regular expression"))
    );
    assert!(
        set.warnings
            .iter()
            .any(|w| w.contains(".linggen/settings.json:3"))
    );

    let grants = set.project_grants(&root);
    assert_eq!(
        grants,
        vec!["hook PreToolUse [Bash]: runs `./check.py` (.claude/settings.json)".to_string()]
    );
    let (untrusted, withheld) = set.trusted(&root, |_| false);
    assert_eq!(withheld, grants);
    assert!(
        untrusted
            .matching(HookEvent::PreToolUse, &["Bash"])
            .is_empty()
    );
    assert_eq!(
        untrusted.matching(HookEvent::Stop, &[]).len(),
        1,
        "the person's own run"
    );
    let (trusted, withheld) = set.trusted(&root, |g| grants.iter().any(|x| x == g));
    assert!(withheld.is_empty());
    let found = trusted.matching(HookEvent::PreToolUse, &["Bash"]);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].timeout, std::time::Duration::from_secs(5));
    assert!(
        trusted
            .matching(HookEvent::PreToolUse, &["Edit"])
            .is_empty()
    );
}

#[test]
fn disable_all_hooks_turns_off_what_was_read() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = dir.path().join("r");
    write(
        &root.join(".claude/settings.json"),
        r#"{"hooks": {"Stop": [{"hooks": [{"command": "a"}, {"command": "a"}]}]}}"#,
    );
    let set = HookSet::load(None, &dir.path().join("l"), &root);
    assert_eq!(
        set.matching(HookEvent::Stop, &[]).len(),
        1,
        "identical commands run once"
    );
    write(
        &root.join(".claude/settings.local.json"),
        r#"{"disableAllHooks": true}"#,
    );
    assert!(HookSet::load(None, &dir.path().join("l"), &root).is_empty());
}
