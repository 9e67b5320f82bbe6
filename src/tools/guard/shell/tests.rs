//! The analysis against commands a hostile or confused model might send.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

use super::*;

pub(super) fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs::create_dir_all(root.join("src")).unwrap();
    fs::create_dir_all(root.join(".git")).unwrap();
    fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    fs::write(root.join("README.md"), "hello\n").unwrap();
    (dir, root)
}

/// The first segment that is not read-only, with its reason; panics if all are.
pub(super) fn worst(command: &str, root: &Path) -> (String, String) {
    let analysis = match analyze(command, root, None) {
        Err(reason) => return ("floor".into(), reason),
        Ok(a) => a,
    };
    let severity = |c: &SegmentClass| match c {
        SegmentClass::ReadOnly => 0,
        SegmentClass::Writes { .. } => 1,
        SegmentClass::Unlisted { .. } => 2,
        SegmentClass::Never { .. } => 3,
    };
    let top = analysis
        .segments
        .iter()
        .map(|s| severity(&s.class))
        .max()
        .unwrap();
    let seg = analysis
        .segments
        .iter()
        .find(|s| severity(&s.class) == top)
        .unwrap();
    match &seg.class {
        SegmentClass::ReadOnly => panic!("`{command}` was classified read-only: {analysis:?}"),
        SegmentClass::Writes { targets } => ("writes".into(), targets.join(" ")),
        SegmentClass::Unlisted { reason } => ("unlisted".into(), reason.clone()),
        SegmentClass::Never { reason } => ("never".into(), reason.clone()),
    }
}

#[test]
fn hostile_commands_are_never_read_only() {
    let (_d, root) = workspace();
    let hostile: &[(&str, &str, &str)] = &[
        // (command, expected level, a word the reason must contain)
        ("rm -rf /", "never", "outside"),
        ("rm -rf src", "unlisted", "`rm`"),
        ("echo $(id)", "floor", "$("),
        ("echo `id`", "floor", "backtick"),
        ("find . -exec rm {} \\;", "never", "-exec"),
        ("find . -execdir sh -c id \\;", "never", "-execdir"),
        ("find . -delete", "unlisted", "deletes"),
        ("find . -fprint out", "unlisted", "writes"),
        ("git -c core.pager=sh log", "never", "configuration"),
        ("git --exec-path=. status", "never", "exec-path"),
        ("git log --output=/tmp/x", "never", "outside"),
        ("git log --output=x", "unlisted", "writes a file"),
        ("git log --outp=x", "unlisted", "writes a file"),
        ("git grep -O sh x", "never", "pager"),
        ("git grep --open-files-in-pager=sh x", "never", "pager"),
        ("git -C .. status", "never", "outside"),
        ("git -C src status", "never", "another directory"),
        ("git --git-dir=x status", "never", "another repository"),
        ("git -p log", "unlisted", "pager"),
        ("git diff --ext-diff", "never", "external diff"),
        ("git push", "unlisted", "`git push`"),
        ("git branch -D main", "unlisted", "changes refs"),
        ("git branch newbranch", "unlisted", "changes refs"),
        ("git tag v1", "unlisted", "changes refs"),
        (
            "git reflog expire --all",
            "unlisted",
            "changes the repository",
        ),
        ("git stash", "unlisted", "changes the repository"),
        ("git remote add x y", "unlisted", "remote"),
        ("git log --help", "unlisted", "manual"),
        ("sed -n '1e id' f", "never", "sed script"),
        ("sed 's/a/b/e' f", "never", "sed script"),
        ("sed 's/a/b/w out' f", "never", "sed script"),
        ("sed -i 's/a/b/' src/main.rs", "writes", "src/main.rs"),
        ("awk 'BEGIN{system(\"id\")}'", "never", "interpreter"),
        ("rg --pre sh x", "never", "runs another program"),
        ("rg --pre=sh x", "never", "--pre"),
        ("rg -z x", "unlisted", "decompression"),
        ("rg --hostname-bin=sh x", "never", "runs another program"),
        ("ls | xargs rm", "never", "`xargs`"),
        ("env sh", "never", "`env`"),
        (
            "tar --to-command=sh -xf a.tar",
            "never",
            "runs another program",
        ),
        ("tar -xf a.tar", "unlisted", "`tar`"),
        ("ls; rm -rf x", "unlisted", "`rm`"),
        ("ls && curl x", "unlisted", "`curl`"),
        ("ls | sh", "never", "shell"),
        ("cat /etc/passwd", "never", "outside"),
        ("cat ../../etc/passwd", "never", "outside"),
        ("cat ~/.ssh/id_rsa", "never", "home"),
        ("echo hi > /etc/x", "never", "outside"),
        ("bash -c id", "never", "shell"),
        ("/bin/sh -c id", "never", "shell"),
        ("SH -c id", "never", "shell"),
        ("python3 -c 'import os'", "never", "interpreter"),
        ("python3.12 x.py", "never", "interpreter"),
        ("perl -e 1", "never", "interpreter"),
        ("node -e 1", "never", "interpreter"),
        ("eval ls", "never", "runs other programs"),
        ("sudo ls", "never", "runs other programs"),
        ("LD_PRELOAD=x ls", "never", "environment"),
        ("PATH=. ls", "never", "environment"),
        ("echo $HOME", "never", "secrets"),
        ("echo ${SECRET}", "never", "secrets"),
        ("echo \"$OPENAI_API_KEY\"", "never", "secrets"),
        ("echo $'\\x41'", "never", "secrets"),
        ("$0 -c id", "never", "expansion"),
        ("ls\nrm x", "floor", "line break"),
        ("cat <(ls)", "floor", "process substitution"),
        ("tee >(sh)", "floor", "process substitution"),
        ("cat <<EOF", "floor", "heredoc"),
        (
            "sort --compress-program=sh f",
            "never",
            "runs another program",
        ),
        ("sort --compress-prog=sh f", "never", "runs another program"),
        ("sort -o out f", "unlisted", "writes"),
        ("sort --files0-from=list", "never", "file names"),
        ("date -s 2020-01-01", "unlisted", "clock"),
        ("date --set=2020-01-01", "unlisted", "clock"),
        ("date 01011200", "unlisted", "clock"),
        ("date -u 010112002020.30", "unlisted", "clock"),
        ("dd if=/dev/zero of=x", "never", "outside"),
        ("dd if=a of=b", "unlisted", "`dd`"),
        ("curl http://x", "unlisted", "`curl`"),
        ("/bin/rm x", "unlisted", "by path"),
        ("./evil.sh", "unlisted", "by path"),
        ("source x", "never", "runs other programs"),
        (". x", "never", "runs other programs"),
        ("exec sh", "never", "runs other programs"),
        ("command sh", "never", "runs other programs"),
        ("builtin cd /", "never", "runs other programs"),
        ("cat < /dev/tcp/1.2.3.4/80", "never", "outside"),
        ("uniq a b", "unlisted", "second"),
        ("cd / && ls", "never", "outside"),
        ("cd && cat .ssh/id_rsa", "never", "home"),
        ("cd - && ls", "never", "cannot know"),
        ("cd src && cat ../../x", "never", "outside"),
        ("ls &  rm -rf x", "unlisted", "`rm`"),
        ("echo x > .git/config", "never", ".git"),
        ("echo x >> .git/hooks/pre-commit", "never", ".git"),
        ("tee .git/config", "never", ".git"),
        (
            "echo '[permissions]' > linggen-agent.toml",
            "never",
            "permission",
        ),
        ("echo x | tee out.txt", "writes", "out.txt"),
        ("ls > listing.txt", "writes", "listing.txt"),
        ("ls &> all.txt", "writes", "all.txt"),
        ("hostname evil", "unlisted", "host name"),
        ("grep -R foo .", "never", "symlinks"),
        ("find -L . -name x", "never", "symlinks"),
        ("xargs -a list rm", "never", "`xargs`"),
        ("nice rm x", "never", "runs other programs"),
        ("timeout 5 sh", "never", "runs other programs"),
        ("export A=1", "never", "state"),
        ("set", "never", "state"),
        ("printenv", "never", "`printenv`"),
        ("(cd / ; cat etc/passwd)", "never", "subshells"),
        ("f() { cd; }; f; cat .ssh/id_rsa", "never", "subshells"),
        ("function f { cd; }", "never", "function"),
        ("{ cd; }; cat .ssh/id_rsa", "never", "home"),
        ("if true; then rm -rf /; fi", "never", "outside"),
        ("if true; then rm -rf x; fi", "unlisted", "keyword"),
        ("for f in a; do cat $f; done", "never", "secrets"),
        ("cat {a,/etc/passwd}", "never", "brace"),
        ("rg foo *", "unlisted", "option"),
        ("* foo", "never", "pattern"),
        ("vim -c '!id' x", "never", "interpreter"),
        ("cargo test", "unlisted", "`cargo`"),
        ("make", "unlisted", "`make`"),
        ("npm test", "unlisted", "`npm`"),
        ("chmod +x x", "unlisted", "`chmod`"),
        ("cut -d/ -f1 /etc/passwd", "never", "outside"),
        ("grep -f/etc/shadow x", "never", "outside"),
        ("grep --file=/etc/shadow x", "never", "outside"),
        ("file -C -m magic", "unlisted", "writes"),
        ("tree -o out", "unlisted", "writes"),
        ("ls\u{202e}", "floor", "direction"),
        ("ls \u{1b}[2K", "floor", "control"),
        ("", "floor", "empty"),
        ("echo 'unbalanced", "floor", "unbalanced"),
        ("ls || ", "floor", "ends with"),
        ("pushd /tmp", "never", "state"),
        ("printf -v PATH %s x; ls", "never", "variable"),
        ("split --filter=sh big", "never", "runs another program"),
        ("fd -x rm", "never", "runs another program"),
        ("zip -TT sh a.zip x", "never", "runs another program"),
        ("man -P sh ls", "never", "runs another program"),
        ("jq -n env", "never", "secrets"),
        ("sed -f script.sed f", "never", "script file"),
        ("sed --in-place=.bak -n p .git/config", "never", ".git"),
        ("git diff --output=x", "unlisted", "writes a file"),
        ("find . -delete -name x", "unlisted", "deletes"),
        ("popd", "never", "state"),
    ];
    assert!(hostile.len() >= 40);
    let mut wrong = Vec::new();
    for (command, level, needle) in hostile {
        let (got_level, reason) = worst(command, &root);
        if got_level != *level || !reason.contains(needle) {
            wrong.push(format!("`{command}` -> {got_level}: {reason}"));
        }
    }
    assert!(wrong.is_empty(), "misclassified:\n{}", wrong.join("\n"));
}

#[test]
fn safe_commands_are_read_only() {
    let (_d, root) = workspace();
    for command in [
        "ls -la",
        "git status",
        "git --no-pager log --oneline -n 5",
        "git diff HEAD~1 -- src",
        "git show HEAD:src/main.rs",
        "git branch",
        "git branch -a -v",
        "git branch --list 'feat*'",
        "git tag -l 'v1*'",
        "git remote -v",
        "git reflog",
        "git stash list",
        "grep -rn foo src | head -5",
        "grep -rn '/api/v1' src",
        "rg -n --glob '*.rs' TODO src",
        "rg -e foo -g '*.md'",
        "wc -l src/*.rs",
        "cat README.md 2>/dev/null",
        "cat README.md 2>&1 | head",
        "find . -name '*.rs' -type f",
        "find src -name /x",
        "sed -n '1,20p' README.md",
        "sed 's/foo/bar/g' README.md",
        "cd src && ls",
        "echo hi; echo /etc/passwd",
        "printf '%s\\n' a b",
        "sort -u README.md | uniq -c",
        "uniq README.md",
        "date +%Y-%m-%d",
        "date -d yesterday +%F",
        "date -u",
        "date -r Cargo.toml",
        "diff README.md src/main.rs",
        "cut -d/ -f1 README.md",
        "tr / _ < README.md",
        "ls *",
        "cat ./*",
        "stat README.md",
        "hostname",
        "echo 'a $HOME literal'",
        "echo 'cost: 5$'",
        "grep -n 'end$' README.md",
        "cat README.md > /dev/null",
        "ls;",
        "test -f README.md",
        "[ -f README.md ] && cat README.md",
        "realpath src",
        "head -n 3 README.md && tail -n 2 README.md",
        "git log --format='%h %s' --author=someone",
    ] {
        let analysis = analyze(command, &root, None).unwrap_or_else(|e| panic!("`{command}`: {e}"));
        assert!(analysis.is_read_only(), "`{command}`: {analysis:?}");
    }
}

#[test]
fn segments_keep_text_and_program() {
    let (_d, root) = workspace();
    let analysis = analyze("ls -la | grep x && cargo test", &root, None).unwrap();
    let texts: Vec<_> = analysis.segments.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(texts, ["ls -la", "grep x", "cargo test"]);
    let programs: Vec<_> = analysis
        .segments
        .iter()
        .map(|s| s.program.as_str())
        .collect();
    assert_eq!(programs, ["ls", "grep", "cargo"]);
    assert!(!analysis.is_read_only());
}

#[test]
fn symlinks_leading_out_are_never() {
    let (_d, root) = workspace();
    symlink("/etc", root.join("etc")).unwrap();
    let (level, reason) = worst("cat etc/passwd", &root);
    assert_eq!(level, "never", "{reason}");
    assert!(reason.contains("symlink"), "{reason}");
    // A glob that could expand to the symlink is caught as well.
    let (level, reason) = worst("cat *", &root);
    assert_eq!(level, "never", "{reason}");
    assert!(reason.contains("`etc`"), "{reason}");
    let (level, _) = worst("ls > etc/x", &root);
    assert_eq!(level, "never");
    // Globs that cannot reach it stay read-only.
    assert!(analyze("cat src/*.rs", &root, None).unwrap().is_read_only());
}

#[test]
fn absolute_paths_inside_the_root_are_fine() {
    let (_d, root) = workspace();
    let command = format!("cat {}/README.md", root.display());
    assert!(analyze(&command, &root, None).unwrap().is_read_only());
}
