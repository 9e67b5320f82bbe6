//! The checked-in shell completions in `completions/` must be exactly what the binary
//! generates, so they cannot drift from the command line. After changing `src/cli.rs`,
//! regenerate them with `LINGGEN_UPDATE_COMPLETIONS=1 cargo test --test completions`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

/// Each shell clap_complete supports, with the file its script is checked in as.
const SHELLS: [(&str, &str); 5] = [
    ("bash", "linggen.bash"),
    ("zsh", "_linggen"),
    ("fish", "linggen.fish"),
    ("elvish", "linggen.elv"),
    ("powershell", "_linggen.ps1"),
];

fn generate(shell: &str) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_linggen"))
        .args(["completions", shell])
        .output()
        .expect("run linggen");
    assert!(
        output.status.success(),
        "`linggen completions {shell}` failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("completion script is UTF-8")
}

fn checked_in(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("completions")
        .join(file)
}

#[test]
fn checked_in_completions_match_the_cli() {
    let update = std::env::var_os("LINGGEN_UPDATE_COMPLETIONS").is_some();
    let mut stale = Vec::new();
    for (shell, file) in SHELLS {
        let generated = generate(shell);
        assert!(
            generated.contains("completions") && generated.contains("permission-mode"),
            "the {shell} script does not look like linggen's completions:\n{generated}"
        );
        let path = checked_in(file);
        if update {
            std::fs::write(&path, &generated).unwrap();
            continue;
        }
        // A missing file counts as drift, so a new shell is noticed too.
        if std::fs::read_to_string(&path).ok().as_deref() != Some(generated.as_str()) {
            stale.push(format!("completions/{file} ({shell})"));
        }
    }
    assert!(
        stale.is_empty(),
        "shell completions are out of date with the CLI: {}.\nRegenerate them with \
         `LINGGEN_UPDATE_COMPLETIONS=1 cargo test --test completions` and commit the result.",
        stale.join(", ")
    );
}

#[test]
fn unknown_shell_is_a_usage_error() {
    let output = Command::new(env!("CARGO_BIN_EXE_linggen"))
        .args(["completions", "tcsh"])
        .output()
        .expect("run linggen");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("possible values"), "{stderr}");
}
