use std::path::{Path, PathBuf};

/// Spellings that start a process. Only the launcher may use them (and the sandbox's child
/// setup, which forks the keeper through `lifetime::keep`).
const SPAWNS: &[&str] = &[
    "Command::new(",
    "process::Command::new",
    "libc::fork(",
    "libc::vfork(",
    "libc::execv",
    "libc::posix_spawn",
    "libc::clone(",
    "libc::system(",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file that ships: a file that is itself a test module (`tests.rs`,
/// `*_tests.rs`) has none, and a file's own `#[cfg(test)] mod tests` is cut off.
fn shipped_code(path: &Path, text: &str) -> String {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return String::new();
    }
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.starts_with("mod tests"))
        {
            break;
        }
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// Whether `line` uses `spelling` as written, not as the tail of a longer name
/// (`AvailableCommand::new(` is not `Command::new(`).
fn spells(line: &str, spelling: &str) -> bool {
    line.match_indices(spelling).any(|(at, _)| {
        !line[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// DESIGN.md: every process linggen starts goes through one launcher. A process started
/// anywhere else would get none of its decisions (program, environment, confinement,
/// lifetime), so this fails naming the file and line.
#[test]
fn a_longer_name_ending_in_a_spawn_is_not_one() {
    assert!(spells("let c = Command::new(\"git\");", "Command::new("));
    assert!(spells("std::process::Command::new(x)", "Command::new("));
    assert!(!spells(
        "AvailableCommand::new(name, text)",
        "Command::new("
    ));
}

#[test]
fn no_process_is_started_outside_the_launcher() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let launcher = src.join("tools/launch");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 50, "the source tree was not found");
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !f.starts_with(&launcher)) {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in shipped_code(file, &text).lines().enumerate() {
            if SPAWNS.iter().any(|s| spells(line, s)) {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "processes started outside src/tools/launch:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_a_spawn() {
    let code = shipped_code(
        Path::new("x.rs"),
        "fn f() { std::process::Command::new(\"git\"); }\n#[cfg(test)]\nmod tests {\n Command::new(\"x\");\n}\n",
    );
    assert!(SPAWNS.iter().any(|s| code.contains(s)));
    assert_eq!(code.matches("Command::new").count(), 1);
}

mod programs {
    use super::super::program::{Program, ProgramError, distrust, trusted_dirs};
    use std::os::unix::fs::PermissionsExt as _;

    /// A `git` planted in a distrusted folder on PATH is never the one that runs, and an
    /// absolute path into such a folder is refused.
    #[test]
    fn planted_programs_in_writable_folders_are_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join(".venv/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let planted = bin.join("git");
        std::fs::write(&planted, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
        distrust(&[dir.path()]);
        assert!(
            !trusted_dirs()
                .iter()
                .any(|d| d.starts_with(dir.path().canonicalize().unwrap()))
        );
        let err = Program::Path(&planted).resolve().unwrap_err();
        assert!(matches!(err, ProgramError::Writable { .. }), "{err}");
        assert!(matches!(
            Program::Path("relative/git".as_ref()).resolve(),
            Err(ProgramError::NotAbsolute(_))
        ));
    }
}
