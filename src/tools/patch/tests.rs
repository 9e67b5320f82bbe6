use super::*;

const FILE: &str = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n\nfn other() {}\n";

fn one(diff: &str) -> FilePatch {
    let mut files = parse(diff).unwrap();
    assert_eq!(files.len(), 1);
    files.remove(0)
}

#[test]
fn a_git_diff_applies() {
    let diff = "diff --git a/src/main.rs b/src/main.rs\nindex 1..2 100644\n--- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,4 +1,4 @@\n fn main() {\n-    let x = 1;\n+    let x = 2;\n     println!(\"{x}\");\n }\n";
    let file = one(diff);
    assert_eq!(file.path(), "src/main.rs");
    assert_eq!(
        apply(&file, FILE).unwrap(),
        FILE.replace("let x = 1", "let x = 2")
    );
}

#[test]
fn wrong_counts_drifted_lines_fences_and_bare_blank_context_are_forgiven() {
    // The header says line 3 and wrong counts; the blank context line lost its space.
    let diff = "```diff\n--- a/m.rs\n+++ b/m.rs\n@@ -3,9 +3,9 @@\n }\n\n-fn other() {}\n+fn other() { todo!() }\n```";
    let file = one(diff);
    assert_eq!(
        apply(&file, FILE).unwrap(),
        FILE.replace("fn other() {}", "fn other() { todo!() }")
    );
}

#[test]
fn new_and_deleted_files() {
    let created = one("--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n");
    assert_eq!(created.old_path, None);
    assert_eq!(apply(&created, "").unwrap(), "one\ntwo\n");
    let deleted = one("--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n");
    assert_eq!(deleted.new_path, None);
    assert_eq!(deleted.path(), "old.txt");
}

#[test]
fn a_hunk_that_does_not_apply_is_named_with_the_line_that_is_missing() {
    let diff = "--- a/m.rs\n+++ b/m.rs\n@@ -1,2 +1,2 @@\n fn main() {\n-    let x = 1;\n+    let x = 2;\n@@ -5,2 +5,2 @@\n \n-fn another() {}\n+fn another() { 1 }\n";
    let error = apply(&one(diff), FILE).unwrap_err();
    assert!(
        error.starts_with("hunk 2 of 2 (`@@ -5,2 +5,2 @@`) does not apply to m.rs"),
        "{error}"
    );
    assert!(error.contains("`fn another() {}`"), "{error}");
}

#[test]
fn hunks_apply_in_order_and_keep_a_missing_final_newline() {
    let text = "a\nb\nc\nd\ne";
    let diff = "--- a/t\n+++ b/t\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n@@ -4,2 +4,2 @@\n d\n-e\n+E\n";
    assert_eq!(apply(&one(diff), text).unwrap(), "A\nb\nc\nd\nE");
}

#[test]
fn what_is_not_a_patch_says_why() {
    assert!(
        parse("just some text")
            .unwrap_err()
            .contains("not a unified diff")
    );
    assert!(
        parse("@@ -1 +1 @@\n-a\n+b\n")
            .unwrap_err()
            .contains("before any")
    );
    assert!(
        parse("--- a/x\n+++ b/x\n@@ -1 +1 @@\n a\n")
            .unwrap_err()
            .contains("changes nothing")
    );
    assert!(parse("--- a/x\nhello\n").unwrap_err().contains("`+++`"));
}

#[test]
fn removing_a_comment_that_starts_with_two_dashes_is_not_a_new_file() {
    let text = "-- keep\n-- drop\nSELECT 1;\n";
    let diff = "--- a/q.sql\n+++ b/q.sql\n@@ -1,3 +1,2 @@\n -- keep\n--- drop\n SELECT 1;\n";
    assert_eq!(apply(&one(diff), text).unwrap(), "-- keep\nSELECT 1;\n");
}

mod against_the_workspace {
    use super::super::*;
    use crate::tools::ToolContext;
    use crate::tools::sandbox::{Sandbox, SandboxSettings};

    fn ws() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "pub fn a() {}\n").unwrap();
        dir
    }

    #[test]
    fn a_good_patch_gives_each_files_new_text_and_writes_nothing() {
        let dir = ws();
        let diff = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1,2 @@\n pub fn a() {}\n+pub fn b() {}\n--- /dev/null\n+++ b/src/new.rs\n@@ -0,0 +1 @@\n+// new\n";
        let checked = check(&ToolContext::new(dir.path()), diff).unwrap();
        assert_eq!(checked.lines_changed, 2);
        assert!(!checked.needs_confirmation());
        assert_eq!(checked.changes[0].rel, "src/lib.rs");
        assert_eq!(
            checked.changes[0].after.as_deref(),
            Some("pub fn a() {}\npub fn b() {}\n")
        );
        assert_eq!(checked.changes[1].before, None);
        assert!(!dir.path().join("src/new.rs").exists());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(),
            "pub fn a() {}\n"
        );
    }

    #[test]
    fn paths_out_of_the_root_into_git_or_absolute_are_refused() {
        let dir = ws();
        let cases = [
            ("../outside.txt", "contains `..`"),
            ("src/../../x", "contains `..`"),
            (".git/hooks/pre-commit", "inside a `.git` directory"),
            ("linggen-agent.toml", "linggen's own configuration"),
        ];
        for (path, why) in cases {
            let diff = format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n");
            let error = check(&ToolContext::new(dir.path()), &diff).unwrap_err();
            assert!(error.contains(why), "{path}: {error}");
        }
        let absolute = "--- /dev/null\n+++ /etc/x\n@@ -0,0 +1 @@\n+x\n";
        assert!(
            check(&ToolContext::new(dir.path()), absolute)
                .unwrap_err()
                .contains("absolute")
        );
    }

    #[test]
    fn creating_what_exists_patching_what_does_not_and_big_patches() {
        let dir = ws();
        let create = "--- /dev/null\n+++ b/src/lib.rs\n@@ -0,0 +1 @@\n+x\n";
        assert!(
            check(&ToolContext::new(dir.path()), create)
                .unwrap_err()
                .contains("already exists")
        );
        let missing = "--- a/src/nope.rs\n+++ b/src/nope.rs\n@@ -1 +1 @@\n-a\n+b\n";
        assert!(
            check(&ToolContext::new(dir.path()), missing)
                .unwrap_err()
                .contains("does not exist")
        );
        let many: String = (0..=CONFIRM_ABOVE_LINES)
            .map(|n| format!("+line {n}\n"))
            .collect();
        let big = format!("--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1 @@\n{many}");
        assert!(
            check(&ToolContext::new(dir.path()), &big)
                .unwrap()
                .needs_confirmation()
        );
    }

    /// The root is `~`: a patch may not create or change a secret store's files, nor read
    /// (or write through) a FIFO.
    #[test]
    fn secret_stores_and_fifos_are_refused() {
        let dir = ws();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".ssh")).unwrap();
        std::fs::write(root.join(".ssh/authorized_keys"), "mine\n").unwrap();
        crate::tools::guard::paths::mkfifo(&root.join("pipe"));
        let mut ctx = ToolContext::new(&root);
        ctx.sandbox =
            std::sync::Arc::new(Sandbox::new(&root, SandboxSettings::default()).with_home(&root));
        let cases = [
            (
                "--- a/.ssh/authorized_keys\n+++ b/.ssh/authorized_keys\n@@ -1 +1 @@\n-mine\n+evil\n",
                "secret store",
            ),
            (
                "--- /dev/null\n+++ b/.aws/credentials\n@@ -0,0 +1 @@\n+x\n",
                "secret store",
            ),
            (
                "--- a/pipe\n+++ b/pipe\n@@ -1 +1 @@\n-a\n+b\n",
                "a FIFO (named pipe)",
            ),
        ];
        for (diff, why) in cases {
            let error = check(&ctx, diff).unwrap_err();
            assert!(error.contains(why), "{diff}: {error}");
        }
        assert_eq!(
            std::fs::read_to_string(root.join(".ssh/authorized_keys")).unwrap(),
            "mine\n"
        );
    }
}
