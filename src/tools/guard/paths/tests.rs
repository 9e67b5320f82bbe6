use super::*;
use std::fs;
use std::os::unix::fs::symlink;

fn root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    (dir, root)
}

/// `$LINGGEN_HOME` inside the root (the root is `~`) is protected because the tool
/// context names it, not because the guard read the environment.
#[test]
fn the_linggen_home_from_the_context_is_never_written() {
    let (_dir, root) = root();
    let home = root.join(".linggen-home");
    fs::create_dir_all(&home).unwrap();
    let err = resolve(
        &root,
        Some(&home),
        &Secrets::none(),
        ".linggen-home/skills/x/SKILL.md",
        PathUse::Write,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("linggen's own configuration"), "{err}");
    assert!(
        resolve(
            &root,
            Some(&home),
            &Secrets::none(),
            ".linggen-home/x",
            PathUse::Read
        )
        .is_ok()
    );
    assert!(
        resolve(
            &root,
            None,
            &Secrets::none(),
            ".linggen-home/x",
            PathUse::Write
        )
        .is_ok()
    );
    use crate::tools::guard::shell::{SegmentClass, analyze};
    let class = |home| {
        analyze("echo x > .linggen-home/x", &root, home)
            .unwrap()
            .segments[0]
            .class
            .clone()
    };
    assert!(matches!(class(Some(&home)), SegmentClass::Never { .. }));
    assert!(matches!(class(None), SegmentClass::Writes { .. }));
}

fn refused(root: &Path, raw: &str, usage: PathUse) -> String {
    match resolve(root, None, &Secrets::none(), raw, usage) {
        Ok(p) => panic!("`{raw}` should be refused, resolved to {}", p.abs.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn relative_paths_resolve_inside() {
    let (_d, root) = root();
    let p = resolve(&root, None, &Secrets::none(), "src/main.rs", PathUse::Read).unwrap();
    assert_eq!(p.abs, root.join("src/main.rs"));
    assert_eq!(p.rel, "src/main.rs");
    let p = resolve(
        &root,
        None,
        &Secrets::none(),
        "./src/../src/main.rs",
        PathUse::Read,
    )
    .unwrap();
    assert_eq!(p.rel, "src/main.rs");
    assert_eq!(
        resolve(&root, None, &Secrets::none(), ".", PathUse::Read)
            .unwrap()
            .rel,
        "."
    );
}

#[test]
fn parent_escape_is_refused() {
    let (_d, root) = root();
    assert!(refused(&root, "../x", PathUse::Read).contains("outside the workspace root"));
    assert!(refused(&root, "a/../../x", PathUse::Read).contains("outside"));
    refused(&root, "src/../../../etc/passwd", PathUse::Write);
}

#[test]
fn absolute_paths_outside_are_refused_inside_are_fine() {
    let (_d, root) = root();
    assert!(refused(&root, "/etc/passwd", PathUse::Read).contains("outside"));
    let inside = root.join("src/main.rs");
    let p = resolve(
        &root,
        None,
        &Secrets::none(),
        inside.to_str().unwrap(),
        PathUse::Read,
    )
    .unwrap();
    assert_eq!(p.rel, "src/main.rs");
}

#[test]
fn home_paths_are_refused() {
    let (_d, root) = root();
    assert!(refused(&root, "~/.ssh/id_rsa", PathUse::Read).contains("home directory"));
    refused(&root, "~", PathUse::Read);
}

#[test]
fn symlink_to_outside_file_is_refused() {
    let (_d, root) = root();
    symlink("/etc/passwd", root.join("passwd")).unwrap();
    assert!(refused(&root, "passwd", PathUse::Read).contains("through a symlink"));
}

#[test]
fn symlinked_directory_escaping_is_refused() {
    let (_d, root) = root();
    symlink("/etc", root.join("etc")).unwrap();
    assert!(refused(&root, "etc/hostname", PathUse::Read).contains("symlink"));
    // Creating a new file under the link would create it in /etc.
    assert!(refused(&root, "etc/new/file", PathUse::Write).contains("symlink"));
}

#[test]
fn symlink_inside_root_is_fine() {
    let (_d, root) = root();
    symlink(root.join("src"), root.join("code")).unwrap();
    let p = resolve(&root, None, &Secrets::none(), "code/main.rs", PathUse::Read).unwrap();
    assert_eq!(p.rel, "src/main.rs");
}

#[test]
fn dot_dot_applies_after_the_symlink_before_it() {
    let (_d, root) = root();
    let outside = tempfile::tempdir().unwrap();
    let deep = outside.path().join("a/b/c");
    fs::create_dir_all(&deep).unwrap();
    fs::write(outside.path().join("a/b/secret"), "s").unwrap();
    symlink(&deep, root.join("link")).unwrap();
    // The kernel reads `link/../secret` as `/…/a/b/secret`, not `secret` in the root.
    assert!(refused(&root, "link/../secret", PathUse::Read).contains("symlink"));
    refused(&root, "link/../new", PathUse::Write);
    // A link inside the root with `..` after it resolves where the kernel goes.
    fs::create_dir_all(root.join("x/y")).unwrap();
    symlink(root.join("x/y"), root.join("in")).unwrap();
    let p = resolve(&root, None, &Secrets::none(), "in/../z", PathUse::Read).unwrap();
    assert_eq!(p.rel, "x/z");
    // A loop is an error, not a hang.
    symlink("loop", root.join("loop")).unwrap();
    refused(&root, "loop/x", PathUse::Read);
}

#[test]
fn dangling_symlink_is_refused() {
    let (_d, root) = root();
    symlink("/nonexistent-linggen-target", root.join("dangling")).unwrap();
    assert!(refused(&root, "dangling", PathUse::Write).contains("missing target"));
}

#[test]
fn git_dir_writes_are_refused_reads_allowed() {
    let (_d, root) = root();
    fs::create_dir_all(root.join(".git/hooks")).unwrap();
    assert!(refused(&root, ".git/config", PathUse::Write).contains(".git"));
    refused(&root, ".git/hooks/pre-commit", PathUse::Write);
    refused(&root, "sub/.GIT/config", PathUse::Write);
    assert!(resolve(&root, None, &Secrets::none(), ".git/config", PathUse::Read).is_ok());
    // A symlink pointing into .git is resolved first, so it is caught too.
    symlink(root.join(".git"), root.join("g")).unwrap();
    refused(&root, "g/config", PathUse::Write);
}

#[test]
fn own_config_is_not_writable() {
    let (_d, root) = root();
    assert!(refused(&root, "linggen-agent.toml", PathUse::Write).contains("permission"));
    assert!(
        resolve(
            &root,
            None,
            &Secrets::none(),
            "linggen-agent.toml",
            PathUse::Read
        )
        .is_ok()
    );
    assert!(
        resolve(
            &root,
            None,
            &Secrets::none(),
            "docs/linggen-agent.toml",
            PathUse::Write
        )
        .is_ok()
    );
}

#[test]
fn nonexistent_nested_path_inside_root_is_fine_for_writes() {
    let (_d, root) = root();
    let p = resolve(
        &root,
        None,
        &Secrets::none(),
        "new/deep/dir/file.txt",
        PathUse::Write,
    )
    .unwrap();
    assert_eq!(p.abs, root.join("new/deep/dir/file.txt"));
    assert_eq!(p.rel, "new/deep/dir/file.txt");
}

#[test]
fn empty_and_root_writes_are_refused() {
    let (_d, root) = root();
    assert!(refused(&root, "  ", PathUse::Read).contains("empty"));
    refused(&root, ".", PathUse::Write);
    refused(&root, "x\0y", PathUse::Read);
}

#[test]
fn non_canonical_root_is_handled() {
    let (_d, root) = root();
    let link_parent = tempfile::tempdir().unwrap();
    let alias = link_parent.path().join("alias");
    symlink(&root, &alias).unwrap();
    let p = resolve(&alias, None, &Secrets::none(), "src/main.rs", PathUse::Read).unwrap();
    assert_eq!(p.abs, root.join("src/main.rs"));
    let spelled = alias.join("src/main.rs");
    let p = resolve(
        &alias,
        None,
        &Secrets::none(),
        spelled.to_str().unwrap(),
        PathUse::Read,
    )
    .unwrap();
    assert_eq!(p.rel, "src/main.rs");
}

/// The root is `~`: the stores in it are refused for reads and writes, through a
/// symlink too, and the message names the setting that opens one.
#[test]
fn secret_stores_inside_the_root_are_refused() {
    use crate::tools::sandbox::{Sandbox, SandboxSettings};
    let (_d, root) = root();
    fs::create_dir_all(root.join(".ssh")).unwrap();
    fs::write(root.join(".ssh/id_rsa"), "KEY").unwrap();
    symlink(root.join(".ssh"), root.join("keys")).unwrap();
    let sandbox = Sandbox::new(&root, SandboxSettings::default()).with_home(&root);
    let secrets = sandbox.secrets();
    for (raw, usage) in [
        (".ssh/id_rsa", PathUse::Read),
        ("keys/id_rsa", PathUse::Read),
        (".ssh/authorized_keys", PathUse::Write),
        (".aws/credentials", PathUse::Write),
    ] {
        let err = resolve(&root, None, &secrets, raw, usage)
            .unwrap_err()
            .to_string();
        assert!(err.contains("secret store"), "{raw}: {err}");
        assert!(err.contains("[sandbox] allow_read"), "{raw}: {err}");
    }
    assert!(resolve(&root, None, &secrets, "src/main.rs", PathUse::Read).is_ok());
    // Opened by the setting, for file tools as for commands.
    let settings = SandboxSettings {
        allow_read: vec![root.join(".ssh")],
        ..Default::default()
    };
    let opened = Sandbox::new(&root, settings).with_home(&root);
    assert!(resolve(&root, None, &opened.secrets(), ".ssh/id_rsa", PathUse::Read).is_ok());
    assert!(!opened.hidden_paths().contains(&root.join(".ssh")));
    assert!(opened.hidden_paths().contains(&root.join(".aws")));
}

/// `$LINGGEN_HOME` inside the root: its private files are refused for reads too, its
/// skills stay readable.
#[test]
fn the_linggen_home_is_not_read_either() {
    use crate::tools::sandbox::{Sandbox, SandboxSettings};
    let (_d, root) = root();
    let home = root.join("lh");
    fs::create_dir_all(home.join("skills/x")).unwrap();
    fs::write(home.join("skills/x/SKILL.md"), "skill").unwrap();
    fs::write(home.join("trusted.toml"), "trust").unwrap();
    let sandbox = Sandbox::new(&root, SandboxSettings::default()).with_linggen_home(&home);
    let secrets = sandbox.secrets();
    let err = resolve(
        &root,
        Some(&home),
        &secrets,
        "lh/trusted.toml",
        PathUse::Read,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("no setting opens it"), "{err}");
    assert!(
        resolve(
            &root,
            Some(&home),
            &secrets,
            "lh/skills/x/SKILL.md",
            PathUse::Read
        )
        .is_ok()
    );
}

#[test]
fn fifos_and_sockets_are_refused_without_being_opened() {
    let (_d, root) = root();
    mkfifo(&root.join("pipe"));
    let _listener = std::os::unix::net::UnixListener::bind(root.join("sock")).unwrap();
    for usage in [PathUse::Read, PathUse::Write] {
        assert!(refused(&root, "pipe", usage).contains("a FIFO (named pipe)"));
        assert!(refused(&root, "sock", usage).contains("a socket"));
    }
    // Opening it for reading would wait for a writer; `open_regular` does not.
    let err = open_regular(&root.join("pipe"), "pipe").unwrap_err();
    assert!(err.to_string().contains("FIFO"), "{err}");
    assert!(open_regular(&root.join("src/main.rs"), "src/main.rs").is_ok());
}
