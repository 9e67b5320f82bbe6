//! A file system that fills up: a small tmpfs mounted in a private mount namespace (a user
//! namespace makes that possible without privileges), with linggen run inside it by a shell
//! script. Nothing is mounted on the machine itself, and the mount ends with the script.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use super::{Workspace, run_with_timeout};

/// Whether this machine lets a test mount a private tmpfs; says SKIPPED (and fails under
/// `CI=true`) when it does not.
pub fn private_tmpfs_available() -> bool {
    let works = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "true"])
        .output()
        .is_ok_and(|out| out.status.success());
    if !works {
        super::host::skipped("unshare cannot make a user and mount namespace here");
    }
    works
}

/// Runs `script` with `sh` after mounting a `size_kib` tmpfs on `mount_at`, in `ws`'s
/// environment (`$LINGGEN` is the binary, the working directory is the root).
pub fn run_on_small_disk(ws: &Workspace, mount_at: &Path, size_kib: u32, script: &str) -> Output {
    let template = ws.cmd();
    let mut cmd = Command::new("unshare");
    cmd.args(["--user", "--map-root-user", "--mount", "sh", "-euc"])
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
