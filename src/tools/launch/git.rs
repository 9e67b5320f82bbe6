//! The git that linggen runs for itself (checkpoints, rewind, worktree jobs, repository
//! facts) never executes code that a repository controls.
//!
//! A repository's `.git/config` (or a nested repository's, or one that arrived in an
//! archive) can name programs that git then runs: hooks (`core.hooksPath`), `core.fsmonitor`,
//! clean and smudge filters, submodule recursion into another such config, commit signing
//! (`gpg.program`), a pager. Every git of linggen's own gets settings on its command line,
//! which win over every configuration file and reach the gits it starts in turn
//! (`GIT_CONFIG_PARAMETERS`): each mechanism off. Filters have free names, so the ones a
//! repository defines are listed first ([`filter_overrides`]) and each is emptied.
//! Aliases need nothing: git never lets an alias replace a built-in command, and linggen
//! runs only built-ins.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};

use super::{Confinement, Env, Launch, LaunchError, Lifetime, Program};

/// Given with `-c` to every git of linggen's own.
pub const HARDENING: &[&str] = &[
    // No hook runs, wherever `core.hooksPath` points.
    "core.hooksPath=/dev/null",
    // No file-system monitor program.
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    // Nothing to page through, no editor to open.
    "core.pager=cat",
    "core.editor=false",
    // No recursion into submodules, whose configuration is theirs.
    "submodule.recurse=false",
    "diff.ignoreSubmodules=all",
    "status.submoduleSummary=false",
    // No signing program.
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    // A bare repository found inside the work tree is never used.
    "safe.bareRepository=explicit",
    // No network helpers (linggen's own git is local only).
    "protocol.allow=never",
    "credential.helper=",
    "core.sshCommand=false",
    "core.askPass=false",
];

/// A git of linggen's own: the trusted `git`, a minimal environment, the hardening
/// settings, started in `dir`. The caller states confinement and lifetime.
pub fn command(
    dir: &Path,
    confinement: Confinement<'_>,
    lifetime: Lifetime,
) -> Result<Command, LaunchError> {
    let launch = Launch {
        program: Program::Named("git".as_ref()),
        env: Env::Minimal,
        confinement,
        lifetime,
    };
    let mut cmd = launch.command()?;
    cmd.current_dir(dir)
        .stdin(Stdio::null())
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .arg("--no-pager");
    for setting in HARDENING {
        cmd.arg("-c").arg(setting);
    }
    Ok(cmd)
}

/// The git arguments that list the filter drivers a configuration defines; give their
/// output to [`filter_overrides`]. A git that fails here (no repository) prints nothing,
/// and then nothing needs overriding.
pub const LIST_FILTERS: &[&str] = &["config", "--name-only", "--get-regexp", r"^filter\."];

/// `-c` settings that empty every filter driver (`filter.NAME.clean`, `.smudge`,
/// `.process`) named in the output of [`LIST_FILTERS`], and make none required.
pub fn filter_overrides(names: &str) -> Vec<OsString> {
    let mut drivers: Vec<&str> = names
        .lines()
        .filter_map(|line| line.strip_prefix("filter."))
        .filter_map(|rest| rest.rsplit_once('.').map(|(driver, _)| driver))
        .collect();
    drivers.sort_unstable();
    drivers.dedup();
    let mut args = Vec::new();
    for driver in drivers {
        for (key, value) in [
            ("clean", ""),
            ("smudge", ""),
            ("process", ""),
            ("required", "false"),
        ] {
            args.push(OsString::from("-c"));
            args.push(OsString::from(format!("filter.{driver}.{key}={value}")));
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_defined_filter_is_emptied() {
        let args = filter_overrides("filter.lfs.clean\nfilter.lfs.smudge\nfilter.a.b.process\n");
        let text: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(text.contains(&"filter.lfs.clean=".to_string()), "{text:?}");
        assert!(
            text.contains(&"filter.a.b.process=".to_string()),
            "{text:?}"
        );
        assert!(text.contains(&"filter.a.b.required=false".to_string()));
        assert_eq!(text.len(), 16, "two drivers, four settings each, with -c");
    }
}
