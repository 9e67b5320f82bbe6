//! A file system that fills up: a small tmpfs mounted in a private mount namespace (a user
//! namespace makes that possible without privileges), with linggen run inside it by a shell
//! script. Nothing is mounted on the machine itself, and the mount ends with the script.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use super::{Workspace, run_with_timeout};

/// How this machine lets a test mount a tmpfs: a user namespace where it is root (works
/// unprivileged), else a plain mount namespace (when it is root already); `None` (after a
/// loud SKIPPED, a failure under `CI=true`) when neither works.
pub fn namespace_prefix() -> Option<Vec<&'static str>> {
    for prefix in [
        vec!["unshare", "--user", "--map-root-user", "--mount"],
        vec!["unshare", "--mount"],
    ] {
        let works = Command::new(prefix[0])
            .args(&prefix[1..])
            .args([
                "sh",
                "-c",
                "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs \"$d\"",
            ])
            .output()
            .is_ok_and(|out| out.status.success());
        if works {
            return Some(prefix);
        }
    }
    super::host::skipped("cannot mount a tmpfs in a namespace here (no unshare, or not allowed)");
    None
}

/// Runs `script` with `sh` (through `prefix`, from [`namespace_prefix`]) after mounting a
/// `size_kib` tmpfs on `mount_at`, in `ws`'s environment (`$LINGGEN` is the binary, the
/// working directory is the root).
pub fn run_on_small_disk(
    prefix: &[&str],
    ws: &Workspace,
    mount_at: &Path,
    size_kib: u32,
    script: &str,
) -> Output {
    let template = ws.cmd();
    let mut cmd = Command::new(prefix[0]);
    cmd.args(&prefix[1..])
        .args(["sh", "-euc"])
        .arg(format!(
            "mount -t tmpfs -o size={size_kib}k tmpfs \"$MOUNT_AT\"\n{script}"
        ))
        .env("MOUNT_AT", mount_at)
        .env("LINGGEN", env!("CARGO_BIN_EXE_linggen"))
        .current_dir(ws.root());
    for (name, value) in template.get_envs() {
        match value {
            Some(value) => cmd.env(name, value),
            None => cmd.env_remove(name),
        };
    }
    run_with_timeout(&mut cmd, Duration::from_secs(120))
}
