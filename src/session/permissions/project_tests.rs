use serde_json::json;

use super::*;
use crate::config::PermissionMode;
use crate::session::permissions::{Permissions, Verdict, scope_rules};
use crate::tools::{ToolContext, prepare};

fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    (dir, root)
}

fn file_text(root: &Path) -> String {
    std::fs::read_to_string(root.join(FILE)).unwrap()
}

/// A session as a start-up builds it: the project's rules count as far as the trust store
/// (here inside the temp dir) accepts them; `p` answers add to it.
fn session(root: &Path) -> Permissions {
    let store = crate::config::trust::TrustStore::new(&root.join(".trust-home"));
    let accepted = store.accepted(root).unwrap();
    Permissions::new(PermissionMode::Default, &[], &[])
        .unwrap()
        .with_trust(crate::session::permissions::Trust::new(
            root,
            Some(store),
            accepted,
        ))
        .with_project_rules(&load(root).unwrap())
        .unwrap()
}

fn check(perms: &Permissions, root: &Path, tool: &str, args: serde_json::Value) -> Verdict {
    let prepared = prepare(&ToolContext::new(root), tool, &args).unwrap();
    perms.check(&prepared)
}

#[test]
fn missing_file_means_no_rules() {
    let (_dir, root) = workspace();
    assert_eq!(load(&root).unwrap(), Vec::<String>::new());
}

#[test]
fn add_load_remove_round_trip() {
    let (_dir, root) = workspace();
    add(&root, "Bash(cargo test*)").unwrap();
    add(&root, "Write(src/**)").unwrap();
    add(&root, "Bash(say \"hi\"*)").unwrap();
    assert_eq!(
        load(&root).unwrap(),
        ["Bash(cargo test*)", "Write(src/**)", "Bash(say \"hi\"*)"]
    );
    assert!(file_text(&root).starts_with("# Approved with `p`"));

    assert_eq!(remove(&root, "Write(src/**)").unwrap(), "Write(src/**)");
    assert_eq!(remove(&root, "2").unwrap(), "Bash(say \"hi\"*)");
    assert_eq!(load(&root).unwrap(), ["Bash(cargo test*)"]);

    let err = remove(&root, "Bash(make*)").unwrap_err().to_string();
    assert!(err.contains("1. Bash(cargo test*)"), "{err}");
    assert!(remove(&root, "5").is_err());
    remove(&root, "1").unwrap();
    assert_eq!(load(&root).unwrap(), Vec::<String>::new());
    // No temporary files are left beside it.
    let entries = std::fs::read_dir(root.join(".linggen")).unwrap().count();
    assert_eq!(entries, 1);
}

#[test]
fn add_does_not_duplicate() {
    let (_dir, root) = workspace();
    add(&root, "Bash(make*)").unwrap();
    add(&root, " Bash(make*) ").unwrap();
    assert_eq!(load(&root).unwrap(), ["Bash(make*)"]);
    // A hand-written duplicate is read once.
    std::fs::write(root.join(FILE), "allow = [\"Read\", \"Read\"]\n").unwrap();
    assert_eq!(load(&root).unwrap(), ["Read"]);
}

#[test]
fn add_keeps_comments_and_other_keys() {
    let (_dir, root) = workspace();
    std::fs::create_dir_all(root.join(".linggen")).unwrap();
    let before = "# mine\nnote = \"keep\"\nallow = [\"Read\"] # trailing\n\n[later]\nx = 1\n";
    std::fs::write(root.join(FILE), before).unwrap();
    add(&root, "Bash(make*)").unwrap();
    let after = file_text(&root);
    assert!(
        after.starts_with("# mine\nnote = \"keep\"\nallow = [\n"),
        "{after}"
    );
    assert!(
        after.ends_with("] # trailing\n\n[later]\nx = 1\n"),
        "{after}"
    );
    assert_eq!(load(&root).unwrap(), ["Read", "Bash(make*)"]);

    // Without an `allow` key, it goes in front of the tables so it stays top-level.
    std::fs::write(root.join(FILE), "[later]\nx = 1\n").unwrap();
    add(&root, "Read").unwrap();
    assert_eq!(load(&root).unwrap(), ["Read"]);
    assert!(file_text(&root).ends_with("[later]\nx = 1\n"));
}

#[test]
fn broken_file_names_file_and_line() {
    let (_dir, root) = workspace();
    std::fs::create_dir_all(root.join(".linggen")).unwrap();
    std::fs::write(root.join(FILE), "# rules\n\nallow = [\"Read\",\n").unwrap();
    let err = load(&root).unwrap_err().to_string();
    assert!(err.contains(".linggen/permissions.toml:"), "{err}");

    std::fs::write(
        root.join(FILE),
        "# rules\nallow = [\n  \"Read\",\n  \"Bash(cargo\",\n]\n",
    )
    .unwrap();
    let err = load(&root).unwrap_err().to_string();
    assert!(err.contains(".linggen/permissions.toml:4:"), "{err}");
    assert!(err.contains("missing `)`"), "{err}");

    std::fs::write(root.join(FILE), "\nallow = \"Read\"\n").unwrap();
    let err = load(&root).unwrap_err().to_string();
    assert!(err.contains(".linggen/permissions.toml:2:"), "{err}");

    // A broken file is not overwritten by `add`.
    assert!(add(&root, "Read").is_err());
    assert_eq!(file_text(&root), "\nallow = \"Read\"\n");
    assert!(add(&root, "Frobnicate").is_err());
}

#[test]
fn allow_project_persists_and_allows_the_next_call() {
    let (_dir, root) = workspace();
    let ctx = ToolContext::new(&root);
    let mut perms = session(&root);
    let make = prepare(&ctx, "Bash", &json!({"cmd": "make build && cargo test"})).unwrap();
    assert!(matches!(perms.check(&make), Verdict::Ask { .. }));
    perms.allow_for_project(&root, &make).unwrap();
    assert_eq!(perms.check(&make), Verdict::Allow);
    assert_eq!(load(&root).unwrap(), ["Bash(make*)", "Bash(cargo*)"]);

    let write = json!({"path": "src/[id].rs", "content": "x"});
    let prepared = prepare(&ctx, "Write", &write).unwrap();
    perms.allow_for_project(&root, &prepared).unwrap();

    // A later session starts with the saved rules.
    let next = session(&root);
    assert_eq!(
        check(&next, &root, "Bash", json!({"cmd": "make test"})),
        Verdict::Allow
    );
    assert_eq!(check(&next, &root, "Write", write), Verdict::Allow);
    // The path rule is that path only, not a glob character class.
    assert!(matches!(
        check(
            &next,
            &root,
            "Write",
            json!({"path": "src/i.rs", "content": ""})
        ),
        Verdict::Ask { .. }
    ));
}

#[test]
fn project_rules_never_loosen_the_floor() {
    let (_dir, root) = workspace();
    add(&root, "Bash(python3*)").unwrap();
    add(&root, "Bash").unwrap();
    let perms = session(&root);
    assert!(matches!(
        check(
            &perms,
            &root,
            "Bash",
            json!({"cmd": "python3 -c 'print(1)'"})
        ),
        Verdict::Ask { .. }
    ));
    assert!(matches!(
        check(&perms, &root, "Bash", json!({"cmd": "sh -c 'make'"})),
        Verdict::Ask { .. }
    ));
}

#[test]
fn scope_rules_name_program_or_path() {
    let (_dir, root) = workspace();
    let ctx = ToolContext::new(&root);
    let bash = prepare(&ctx, "Bash", &json!({"cmd": "cargo build | cargo fmt"})).unwrap();
    assert_eq!(scope_rules(&bash), ["Bash(cargo*)"]);
    let edit = prepare(&ctx, "Write", &json!({"path": "a/b*.rs", "content": ""})).unwrap();
    assert_eq!(scope_rules(&edit), ["Write(a/b[*].rs)"]);
}

#[test]
fn the_agent_cannot_write_the_project_rules() {
    let (_dir, root) = workspace();
    let ctx = ToolContext::new(&root);
    let write = json!({"path": FILE, "content": "allow = [\"Bash\"]\n"});
    assert!(prepare(&ctx, "Write", &write).is_err());
    // Nor through the shell: a redirect there must always go to a person.
    let bash = json!({"cmd": "echo 'allow = [\"Bash\"]' > .linggen/permissions.toml"});
    let prepared = prepare(&ctx, "Bash", &bash);
    let floor = match prepared {
        Err(_) => true,
        Ok(p) => matches!(
            &p.access,
            crate::tools::Access::Command { analysis, .. }
                if analysis.segments.iter().any(|s| matches!(s.class, crate::tools::SegmentClass::Never { .. }))
        ),
    };
    assert!(floor, "a shell redirect into {FILE} is not refused");
}
