//! Checkpoints on real folders with the real `git`. Without git these say SKIPPED (and fail
//! under `CI=true`, where git is known to be installed).

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

fn git_available() -> bool {
    let found = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !found {
        eprintln!("SKIPPED: git not installed");
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must run the checkpoint tests, but git is not installed"
        );
    }
    found
}

struct Fixture {
    _dir: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
    store: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("root");
    std::fs::create_dir_all(&root).unwrap();
    Fixture {
        store: base.join("home/projects/p/checkpoints.git"),
        _dir: dir,
        base,
        root,
    }
}

/// Runs git as the person would, but independent of this machine's global config and of
/// any `GIT_*` variable a test runner (say, a git hook) passes down.
fn person_git(dir: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new("git");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(key);
        }
    }
    let out = cmd
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        // `status` would otherwise refresh `.git/index`, which we compare byte for byte.
        .env("GIT_OPTIONAL_LOCKS", "0")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn init_person_repo(dir: &Path) {
    person_git(dir, &["init", "-q", "-b", "main"]);
    person_git(dir, &["config", "user.name", "Person"]);
    person_git(dir, &["config", "user.email", "person@example.com"]);
    person_git(dir, &["config", "commit.gpgsign", "false"]);
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap()
}

fn mode(root: &Path, rel: &str) -> u32 {
    std::fs::metadata(root.join(rel))
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

fn chmod(root: &Path, rel: &str, mode: u32) {
    std::fs::set_permissions(root.join(rel), std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The paths a snapshot holds.
fn tree_paths(cp: &Checkpoints, commit: &str) -> Vec<String> {
    let out = cp
        .git
        .run("list", ["ls-tree", "-r", "-z", "--name-only", commit], None)
        .unwrap();
    split_paths(&out)
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

fn tree_of(cp: &Checkpoints, commit: &str) -> String {
    let out = cp
        .git
        .run("tree", ["rev-parse", &format!("{commit}^{{tree}}")], None)
        .unwrap();
    String::from_utf8_lossy(&out).trim().to_owned()
}

fn change(path: &str, kind: ChangeKind) -> FileChange {
    FileChange {
        path: path.to_owned(),
        kind,
    }
}

/// Every file under `dir` with its bytes (symlinks as their target).
fn all_files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                files.insert(path, target.as_os_str().as_bytes().to_vec());
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

#[test]
fn restore_rewinds_modified_deleted_and_created_files_in_a_plain_folder() {
    if !git_available() {
        return;
    }
    let f = fixture();
    let root = &f.root;
    write(root, "a.txt", "alpha\r\n");
    write(root, "dir/b.txt", "beta\n");
    write(root, "run.sh", "#!/bin/sh\necho hi\n");
    chmod(root, "run.sh", 0o755);
    std::os::unix::fs::symlink("a.txt", root.join("link")).unwrap();
    write(root, "with space.txt", "space\n");
    write(root, "new\nline.txt", "newline\n");
    write(root, "ünïcode.txt", "unicode\n");

    let cp = Checkpoints::open(&f.store, root).unwrap();
    assert!(
        cp.person_exclude().is_none(),
        "the root must not be in a repo"
    );
    let before = cp.snapshot("t1", "before the turn").unwrap();
    assert!(before.skipped.is_empty());

    write(root, "a.txt", "changed\n");
    std::fs::remove_file(root.join("dir/b.txt")).unwrap();
    write(root, "made/deep/c.txt", "created\n");
    chmod(root, "run.sh", 0o644);
    std::fs::remove_file(root.join("link")).unwrap();
    std::os::unix::fs::symlink("dir", root.join("link")).unwrap();
    std::fs::remove_file(root.join("with space.txt")).unwrap();
    write(root, "new\nline.txt", "edited\n");
    let after = cp.snapshot("t2", "after the turn").unwrap();

    let expected = vec![
        change("a.txt", ChangeKind::Modified),
        change("dir/b.txt", ChangeKind::Deleted),
        change("link", ChangeKind::Modified),
        change("made/deep/c.txt", ChangeKind::Added),
        change("new\nline.txt", ChangeKind::Modified),
        change("run.sh", ChangeKind::Modified),
        change("with space.txt", ChangeKind::Deleted),
    ];
    assert_eq!(cp.changed(&before.commit, &after.commit).unwrap(), expected);

    let restored = cp.restore(&before.commit, &after.commit).unwrap();
    assert_eq!(
        restored,
        vec![
            change("a.txt", ChangeKind::Modified),
            change("dir/b.txt", ChangeKind::Added),
            change("link", ChangeKind::Modified),
            change("made/deep/c.txt", ChangeKind::Deleted),
            change("new\nline.txt", ChangeKind::Modified),
            change("run.sh", ChangeKind::Modified),
            change("with space.txt", ChangeKind::Added),
        ]
    );
    assert_eq!(
        read(root, "a.txt"),
        "alpha\r\n",
        "exact bytes, no eol conversion"
    );
    assert_eq!(read(root, "dir/b.txt"), "beta\n");
    assert!(!root.join("made").exists(), "emptied folders go too");
    assert_eq!(mode(root, "run.sh"), 0o755);
    assert_eq!(
        std::fs::read_link(root.join("link")).unwrap(),
        Path::new("a.txt")
    );
    assert_eq!(read(root, "with space.txt"), "space\n");
    assert_eq!(read(root, "new\nline.txt"), "newline\n");
    assert_eq!(read(root, "ünïcode.txt"), "unicode\n");

    // The store's index still describes the tree correctly: a new snapshot equals `before`.
    let again = cp.snapshot("t3", "after the rewind").unwrap();
    assert_eq!(tree_of(&cp, &again.commit), tree_of(&cp, &before.commit));
    assert!(
        cp.changed(&before.commit, &again.commit)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn snapshots_chain_and_names_resolve() {
    if !git_available() {
        return;
    }
    let f = fixture();
    write(&f.root, "a.txt", "a\n");
    let cp = Checkpoints::open(&f.store, &f.root).unwrap();
    assert_eq!(cp.resolve("turn-1").unwrap(), None);
    let first = cp.snapshot("turn-1", "one").unwrap();
    let second = cp.snapshot("turn_2.b", "two").unwrap();
    assert_eq!(cp.resolve("turn-1").unwrap(), Some(first.commit.clone()));
    assert_eq!(cp.resolve("turn_2.b").unwrap(), Some(second.commit.clone()));
    let parent = cp.git.commit_of(&format!("{}^", second.commit)).unwrap();
    assert_eq!(
        parent,
        Some(first.commit.clone()),
        "the previous snapshot is the parent"
    );

    // Reusing a name moves it.
    let third = cp.snapshot("turn-1", "three").unwrap();
    assert_eq!(cp.resolve("turn-1").unwrap(), Some(third.commit));

    for bad in [
        "", "a/b", "a b", ".hidden", "end.", "x.lock", "a..b", "ref^",
    ] {
        assert!(
            matches!(cp.snapshot(bad, "x"), Err(CheckpointError::BadName(_))),
            "{bad:?} must be refused"
        );
        assert!(matches!(cp.resolve(bad), Err(CheckpointError::BadName(_))));
    }
    for bad in ["zzzz", "--output=/tmp/x", "HEAD", "abc", "deadbeef"] {
        assert!(
            matches!(
                cp.changed(bad, &first.commit),
                Err(CheckpointError::UnknownSnapshot(_))
            ),
            "{bad:?} is no snapshot"
        );
    }
}

#[test]
fn ignored_files_are_neither_snapshotted_nor_touched() {
    if !git_available() {
        return;
    }
    let f = fixture();
    let root = &f.root;
    write(root, ".gitignore", "secret.log\n");
    write(root, "secret.log", "v1\n");
    write(root, "late.txt", "tracked for now\n");
    write(root, "node_modules/pkg/index.js", "x\n");
    write(root, "web/node_modules/pkg/index.js", "x\n");
    write(root, "py/__pycache__/m.pyc", "x\n");
    write(root, ".venv/bin/python", "x\n");
    write(root, "src/main.rs", "fn main() {}\n");
    let cp = Checkpoints::open(&f.store, root).unwrap();
    let before = cp.snapshot("a", "a").unwrap();
    assert_eq!(
        tree_paths(&cp, &before.commit),
        vec![".gitignore", "late.txt", "src/main.rs"]
    );

    // A rule added later drops a file snapshotted before.
    write(root, ".gitignore", "secret.log\nlate.txt\n");
    write(root, "late.txt", "now ignored\n");
    write(root, "secret.log", "v2\n");
    let after = cp.snapshot("b", "b").unwrap();
    assert_eq!(
        tree_paths(&cp, &after.commit),
        vec![".gitignore", "src/main.rs"]
    );

    let restored = cp.restore(&before.commit, &after.commit).unwrap();
    assert_eq!(restored, vec![change(".gitignore", ChangeKind::Modified)]);
    assert_eq!(read(root, "secret.log"), "v2\n");
    assert_eq!(
        read(root, "late.txt"),
        "now ignored\n",
        "present and unsnapshotted: left alone"
    );
    assert!(root.join("node_modules/pkg/index.js").exists());

    // An ignored file now stands where the earlier snapshot had a folder: it stays.
    write(root, "cache/data.txt", "data\n");
    let with_folder = cp.snapshot("c", "c").unwrap();
    std::fs::remove_dir_all(root.join("cache")).unwrap();
    write(root, ".gitignore", "secret.log\ncache\n");
    write(root, "cache", "ignored file\n");
    let with_file = cp.snapshot("d", "d").unwrap();
    let restored = cp.restore(&with_folder.commit, &with_file.commit).unwrap();
    assert_eq!(restored, vec![change(".gitignore", ChangeKind::Modified)]);
    assert_eq!(read(root, "cache"), "ignored file\n");
}

/// A command that changes files and writes `.gitignore` = `*` (which ignores every file,
/// itself too): the turn's end still holds its changes, and a restore from a snapshot that
/// keeps the checkpoint's files brings every one of them back, the old rules included.
#[test]
fn a_rule_written_since_cannot_hide_what_a_restore_brings_back() {
    if !git_available() {
        return;
    }
    let f = fixture();
    let root = &f.root;
    write(root, ".gitignore", "build/\n");
    write(root, "a.txt", "alpha\n");
    write(root, "sub/b.txt", "beta\n");
    write(root, "run.sh", "#!/bin/sh\n");
    chmod(root, "run.sh", 0o755);
    let cp = Checkpoints::open(&f.store, root).unwrap();
    let start = cp.snapshot("start", "before the turn").unwrap();

    write(root, "a.txt", "changed\n");
    write(root, "sub/b.txt", "changed\n");
    chmod(root, "run.sh", 0o644);
    write(root, ".gitignore", "*\n");
    let plain = cp.snapshot("plain", "as the rules say").unwrap();
    assert_eq!(
        tree_paths(&cp, &plain.commit),
        vec![".gitignore"],
        "the rule file itself is held, what it ignores is not"
    );
    let end = cp
        .snapshot_keeping("end", "after the turn", &start.commit)
        .unwrap();
    let modified = vec![
        change(".gitignore", ChangeKind::Modified),
        change("a.txt", ChangeKind::Modified),
        change("run.sh", ChangeKind::Modified),
        change("sub/b.txt", ChangeKind::Modified),
    ];
    assert_eq!(cp.changed(&start.commit, &end.commit).unwrap(), modified);

    let now = cp
        .snapshot_keeping("now", "before the rewind", &start.commit)
        .unwrap();
    assert!(cp.changed(&end.commit, &now.commit).unwrap().is_empty());
    assert_eq!(cp.restore(&start.commit, &now.commit).unwrap(), modified);
    assert_eq!(read(root, "a.txt"), "alpha\n");
    assert_eq!(read(root, "sub/b.txt"), "beta\n");
    assert_eq!(read(root, ".gitignore"), "build/\n");
    assert_eq!(mode(root, "run.sh"), 0o755);
    // The rules are back, so a plain snapshot is the checkpoint again; and the snapshot of
    // before the rewind holds what the undo gives back.
    let again = cp.snapshot("again", "after the rewind").unwrap();
    assert_eq!(tree_of(&cp, &again.commit), tree_of(&cp, &start.commit));
    assert_eq!(
        tree_paths(&cp, &now.commit),
        vec![".gitignore", "a.txt", "run.sh", "sub/b.txt"]
    );
}

/// A `.gitignore` = `*` created where there was none (at the root, and in a folder holding
/// recorded files) is held by the snapshot taken before the rewind, so the restore deletes
/// it like any file created since, and the files it hid come back.
#[test]
fn a_new_self_ignoring_rule_file_is_removed_by_a_restore() {
    if !git_available() {
        return;
    }
    let f = fixture();
    let root = &f.root;
    write(root, "a.txt", "alpha\n");
    write(root, "sub/c.txt", "gamma\n");
    let cp = Checkpoints::open(&f.store, root).unwrap();
    let start = cp.snapshot("start", "before the turn").unwrap();

    write(root, "a.txt", "changed\n");
    write(root, "sub/c.txt", "changed\n");
    write(root, "sub/.gitignore", "*\n");
    write(root, ".gitignore", "*\n");
    let now = cp
        .snapshot_keeping("now", "before the rewind", &start.commit)
        .unwrap();
    assert_eq!(
        tree_paths(&cp, &now.commit),
        vec![".gitignore", "a.txt", "sub/.gitignore", "sub/c.txt"]
    );
    assert_eq!(
        cp.restore(&start.commit, &now.commit).unwrap(),
        vec![
            change(".gitignore", ChangeKind::Deleted),
            change("a.txt", ChangeKind::Modified),
            change("sub/.gitignore", ChangeKind::Deleted),
            change("sub/c.txt", ChangeKind::Modified),
        ]
    );
    assert!(!root.join(".gitignore").exists());
    assert!(!root.join("sub/.gitignore").exists());
    assert_eq!(read(root, "a.txt"), "alpha\n");
    assert_eq!(read(root, "sub/c.txt"), "gamma\n");
}

#[test]
fn large_files_are_skipped_and_left_alone() {
    if !git_available() {
        return;
    }
    let f = fixture();
    let root = &f.root;
    let big = std::fs::File::create(root.join("big.bin")).unwrap();
    big.set_len(MAX_FILE_BYTES + 1).unwrap();
    write(root, "grows.bin", "small\n");
    write(root, "a.txt", "a\n");
    let cp = Checkpoints::open(&f.store, root).unwrap();
    let before = cp.snapshot("a", "a").unwrap();
    assert_eq!(before.skipped, vec!["big.bin"]);
    assert_eq!(tree_paths(&cp, &before.commit), vec!["a.txt", "grows.bin"]);

    std::fs::OpenOptions::new()
        .write(true)
        .open(root.join("grows.bin"))
        .unwrap()
        .set_len(MAX_FILE_BYTES + 10)
        .unwrap();
    write(root, "a.txt", "b\n");
    let after = cp.snapshot("b", "b").unwrap();
    assert_eq!(after.skipped, vec!["big.bin", "grows.bin"]);

    let restored = cp.restore(&before.commit, &after.commit).unwrap();
    assert_eq!(restored, vec![change("a.txt", ChangeKind::Modified)]);
    let len = |rel: &str| std::fs::metadata(root.join(rel)).unwrap().len();
    assert_eq!(
        len("grows.bin"),
        MAX_FILE_BYTES + 10,
        "a skipped file is never rewritten"
    );
    assert_eq!(len("big.bin"), MAX_FILE_BYTES + 1);
}

#[test]
fn too_many_files_fail_instead_of_crawling() {
    if !git_available() {
        return;
    }
    let f = fixture();
    for i in 0..5 {
        write(&f.root, &format!("f{i}.txt"), "x\n");
    }
    let mut cp = Checkpoints::open(&f.store, &f.root).unwrap();
    cp.max_files = 3;
    let err = cp.snapshot("a", "a").unwrap_err();
    assert!(
        matches!(err, CheckpointError::TooMany { files: 4, limit: 3 }),
        "{err:?}"
    );
    assert!(err.to_string().contains(".gitignore"), "{err}");
    assert_eq!(cp.resolve("a").unwrap(), None);
}

/// What the person's repository looks like to them, and every byte of its `.git`.
fn person_state(repo: &Path) -> (Vec<String>, BTreeMap<PathBuf, Vec<u8>>) {
    let git_files = all_files(&repo.join(".git"));
    let views = [
        person_git(repo, &["rev-parse", "HEAD"]),
        person_git(repo, &["symbolic-ref", "HEAD"]),
        person_git(
            repo,
            &["status", "--porcelain=v1", "-z", "--untracked-files=all"],
        ),
        person_git(repo, &["stash", "list"]),
        person_git(repo, &["for-each-ref"]),
    ];
    (views.to_vec(), git_files)
}

#[test]
fn the_person_repository_is_exactly_untouched() {
    if !git_available() {
        return;
    }
    let f = fixture();
    let root = &f.root;
    init_person_repo(root);
    write(root, "tracked.txt", "one\n");
    write(root, "other.txt", "other\n");
    write(root, "src/lib.rs", "// lib\n");
    person_git(root, &["add", "."]);
    person_git(root, &["commit", "-q", "-m", "first"]);
    write(root, "tracked.txt", "stashed\n");
    person_git(root, &["stash", "-q"]);
    write(root, "other.txt", "staged\n");
    person_git(root, &["add", "other.txt"]);
    write(root, "src/lib.rs", "// unstaged\n");
    write(root, "untracked.txt", "new\n");
    // The person's own exclude rules apply to snapshots too.
    write(root, ".git/info/exclude", "*.scratch\n");
    write(root, "notes.scratch", "private\n");

    let state = person_state(root);
    assert!(state.0[3].contains("stash@{0}"));
    let cp = Checkpoints::open(&f.store, root).unwrap();
    let before = cp.snapshot("a", "a").unwrap();
    let paths = tree_paths(&cp, &before.commit);
    assert_eq!(
        paths,
        vec!["other.txt", "src/lib.rs", "tracked.txt", "untracked.txt"],
        "no .git, no excluded file"
    );
    assert_eq!(person_state(root), state, "a snapshot changes nothing");

    write(root, "tracked.txt", "agent\n");
    write(root, "created/by/agent.txt", "agent\n");
    std::fs::remove_file(root.join("other.txt")).unwrap();
    std::fs::remove_file(root.join("untracked.txt")).unwrap();
    let after = cp.snapshot("b", "b").unwrap();
    cp.restore(&before.commit, &after.commit).unwrap();

    assert_eq!(read(root, "other.txt"), "staged\n");
    assert_eq!(read(root, "untracked.txt"), "new\n");
    assert!(!root.join("created").exists());
    assert_eq!(
        person_state(root),
        state,
        "snapshot + restore change nothing"
    );
}

#[test]
fn a_subfolder_of_a_repository_is_its_own_tree() {
    if !git_available() {
        return;
    }
    let f = fixture();
    let repo = &f.root;
    init_person_repo(repo);
    write(repo, "top.txt", "top\n");
    write(repo, "sub/a.txt", "a\n");
    write(repo, "sub/inner/b.txt", "b\n");
    person_git(repo, &["add", "."]);
    person_git(repo, &["commit", "-q", "-m", "first"]);
    write(repo, ".git/info/exclude", "*.scratch\n");
    write(repo, "sub/x.scratch", "x\n");
    let state = person_state(repo);

    let sub = repo.join("sub");
    let cp = Checkpoints::open(&f.store, &sub).unwrap();
    let before = cp.snapshot("a", "a").unwrap();
    assert_eq!(
        tree_paths(&cp, &before.commit),
        vec!["a.txt", "inner/b.txt"]
    );
    write(&sub, "a.txt", "changed\n");
    std::fs::remove_file(sub.join("inner/b.txt")).unwrap();
    let after = cp.snapshot("b", "b").unwrap();
    cp.restore(&before.commit, &after.commit).unwrap();
    assert_eq!(read(&sub, "a.txt"), "a\n");
    assert_eq!(read(&sub, "inner/b.txt"), "b\n");
    assert_eq!(person_state(repo), state);
}

#[test]
fn restore_never_writes_or_deletes_through_a_symlinked_folder() {
    if !git_available() {
        return;
    }
    let f = fixture();
    let root = &f.root;
    let outside = f.base.join("outside");
    write(&outside, "f.txt", "outside\n");
    write(&outside, "new.txt", "outside new\n");
    let outside_before = all_files(&outside);

    write(root, "d/f.txt", "one\n");
    let cp = Checkpoints::open(&f.store, root).unwrap();
    let first = cp.snapshot("a", "a").unwrap();

    // The agent swaps the folder for a symlink before the current snapshot: the symlink is
    // a file of that snapshot, removed, and the folder comes back.
    std::fs::remove_dir_all(root.join("d")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("d")).unwrap();
    let swapped = cp.snapshot("b", "b").unwrap();
    assert_eq!(tree_paths(&cp, &swapped.commit), vec!["d"]);
    cp.restore(&first.commit, &swapped.commit).unwrap();
    assert!(std::fs::symlink_metadata(root.join("d")).unwrap().is_dir());
    assert_eq!(read(root, "d/f.txt"), "one\n");
    assert_eq!(all_files(&outside), outside_before);

    // The swap happens after the current snapshot (a stale `current`): nothing is written
    // or deleted beyond the symlink, and the symlink, which no snapshot holds, stays.
    write(root, "d/f.txt", "two\n");
    write(root, "d/new.txt", "made by the agent\n");
    let current = cp.snapshot("c", "c").unwrap();
    std::fs::remove_dir_all(root.join("d")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("d")).unwrap();
    let restored = cp.restore(&first.commit, &current.commit).unwrap();
    assert!(restored.is_empty(), "{restored:?}");
    assert_eq!(all_files(&outside), outside_before);
    assert!(
        std::fs::symlink_metadata(root.join("d"))
            .unwrap()
            .is_symlink()
    );

    // A snapshot taken while the symlink stands drops the files "beyond" it.
    let beyond = cp.snapshot("d", "d").unwrap();
    assert_eq!(tree_paths(&cp, &beyond.commit), vec!["d"]);
}

#[test]
fn the_store_is_private_and_never_snapshots_itself() {
    if !git_available() {
        return;
    }
    let f = fixture();
    write(&f.root, "a.txt", "a\n");
    let cp = Checkpoints::open(&f.store, &f.root).unwrap();
    let store_mode = std::fs::metadata(&f.store).unwrap().permissions().mode() & 0o777;
    assert_eq!(store_mode, 0o700);
    let attributes = std::fs::read_to_string(f.store.join("info/attributes")).unwrap();
    assert!(attributes.contains("-text") && attributes.contains("-filter"));
    drop(cp);

    let inside = f.root.join(".cache/linggen checkpoints");
    let cp = Checkpoints::open(&inside, &f.root).unwrap();
    let snap = cp.snapshot("a", "a").unwrap();
    assert_eq!(tree_paths(&cp, &snap.commit), vec!["a.txt"]);
}

#[test]
fn without_git_the_error_says_to_install_it() {
    let f = fixture();
    let err =
        Checkpoints::open_with(OsStr::new("/nonexistent/git"), &f.store, &f.root).unwrap_err();
    assert!(matches!(err, CheckpointError::NoGit), "{err:?}");
    assert!(err.to_string().contains("install git"));
}

#[test]
fn the_tree_own_attributes_cannot_change_the_bytes() {
    if !git_available() {
        return;
    }
    let f = fixture();
    let root = &f.root;
    let attributes =
        "* text eol=crlf\n*.legacy crlf\n*.id ident\n*.utf16 working-tree-encoding=UTF-16\n";
    write(root, ".gitattributes", attributes);
    let originals = [
        ("a.txt", "line one\nline two\n"),
        ("b.legacy", "x\n"),
        ("c.id", "$Id$\n"),
        ("d.utf16", "plain utf-8\n"),
    ];
    for (rel, content) in originals {
        write(root, rel, content);
    }
    let cp = Checkpoints::open(&f.store, root).unwrap();
    let before = cp.snapshot("a", "a").unwrap();
    for (rel, _) in originals {
        write(root, rel, "edited\r\n");
    }
    let after = cp.snapshot("b", "b").unwrap();
    cp.restore(&before.commit, &after.commit).unwrap();
    for (rel, content) in originals {
        assert_eq!(read(root, rel), content, "{rel}");
    }
    assert_eq!(read(root, ".gitattributes"), attributes);
}

/// Processes sharing a store (here: threads with a store handle each, which lock it the
/// way separate processes do) take turns instead of failing on git's `index.lock`, the
/// first one creating the store included; every snapshot chains onto the one before.
#[test]
fn concurrent_snapshots_wait_their_turn() {
    if !git_available() {
        return;
    }
    let f = fixture();
    for n in 0..50 {
        write(&f.root, &format!("f{n}.txt"), "x\n");
    }
    let snapshots: Vec<_> = (0..8)
        .map(|n| {
            let (store, root) = (f.store.clone(), f.root.clone());
            std::thread::spawn(move || {
                let cp = Checkpoints::open(&store, &root)?;
                cp.snapshot(&format!("run-{n}"), "concurrent")
            })
        })
        .collect();
    let mut commits = Vec::new();
    for handle in snapshots {
        commits.push(handle.join().unwrap().unwrap().commit);
    }
    let cp = Checkpoints::open(&f.store, &f.root).unwrap();
    for (n, commit) in commits.iter().enumerate() {
        assert_eq!(
            cp.resolve(&format!("run-{n}")).unwrap().as_ref(),
            Some(commit)
        );
    }
    // One chain: seven of the eight have another snapshot as their parent.
    let parents = commits
        .iter()
        .filter(|c| cp.git.commit_of(&format!("{c}^")).unwrap().is_some())
        .count();
    assert_eq!(parents, 7);
}

/// A store another linggen holds for longer than the wait is reported in one line naming
/// it; git's own multi-line complaints are cut to their first line too.
#[test]
fn a_store_that_cannot_be_used_says_why_in_one_line() {
    if !git_available() {
        return;
    }
    let f = fixture();
    write(&f.root, "a.txt", "a\n");
    let mut cp = Checkpoints::open(&f.store, &f.root).unwrap();
    cp.lock_wait = std::time::Duration::from_millis(200);
    let held = cp.lock().unwrap();
    let other = cp.clone();
    let err = other.snapshot("x", "x").unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, CheckpointError::Busy { .. }), "{message}");
    assert!(message.contains("in use by another linggen"), "{message}");
    assert_eq!(message.lines().count(), 1);
    drop(held);

    let err = git::git_error(
        &f.store,
        "add files to the checkpoint index",
        "fatal: Unable to create 'index.lock': File exists.\n\nAnother git process seems to be \
         running in this repository, e.g.\nan editor opened by 'git commit'.\n",
    );
    let message = err.to_string();
    assert_eq!(message.lines().count(), 1, "{message}");
    assert!(
        message.contains("(git: Unable to create 'index.lock': File exists.)"),
        "{message}"
    );
}
