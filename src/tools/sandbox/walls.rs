//! Telling the model (and the person) that a command failed because the sandbox stopped
//! it. The kernel only says `EACCES`, `EROFS` or `ENETUNREACH`; left at that, a model
//! retries the same thing or concludes the machine is broken. One line names the wall and
//! the setting that opens it.

use std::path::{Path, PathBuf};

use super::Sandbox;

/// Phrases tools print when the network is missing.
const NO_NETWORK: &[&str] = &[
    "Network is unreachable",
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "nodename nor servname",
    "No address associated with hostname",
    "getaddrinfo",
    "Failed to resolve",
    "failed to lookup address",
    "dns error",
];

/// Phrases of a refused file access (a mount point cannot be moved: `EBUSY`).
const REFUSED: &[&str] = &[
    "Permission denied",
    "Read-only file system",
    "Operation not permitted",
    "Device or resource busy",
    "EACCES",
    "EROFS",
    "EPERM",
];

/// One line for each wall a failed command hit, as far as its output shows.
pub fn explain(sandbox: &Sandbox, output: &str) -> Option<String> {
    let mut protected = None;
    let mut outside = None;
    let mut hidden = None;
    let mut network = false;
    let hidden_paths: Vec<_> = sandbox
        .hidden()
        .into_iter()
        .filter(|h| !sandbox.root.starts_with(&h.path))
        .collect();
    let protected_paths = sandbox.protected_paths();
    let writable = sandbox.writable_paths();
    for line in output.lines() {
        if !sandbox.settings().network && NO_NETWORK.iter().any(|p| line.contains(p)) {
            network = true;
        }
        let refused = REFUSED.iter().any(|p| line.contains(p));
        let missing = line.contains("No such file or directory");
        if !refused && !missing {
            continue;
        }
        for path in paths_in(line, &sandbox.root) {
            if let Some(h) = hidden_paths.iter().find(|h| path.starts_with(&h.path)) {
                hidden.get_or_insert_with(|| h.clone());
            } else if !refused {
                continue;
            } else if let Some(p) = protected_paths.iter().find(|p| path.starts_with(p)) {
                protected.get_or_insert_with(|| p.clone());
            } else if !writable.iter().any(|w| path.starts_with(w)) && !is_kernel_file(&path) {
                outside.get_or_insert(path);
            }
        }
    }
    let root = &sandbox.root;
    let mut walls = Vec::new();
    if let Some(p) = protected {
        walls.push(format!(
            "sandbox: {} is read-only to commands (it is protected: git runs what .git says, \
             and linggen's own files grant powers); no setting opens it — if the change is \
             needed, run the command with `dangerouslyDisableSandbox: true`, which a person \
             must approve",
            shown(&p, root)
        ));
    }
    if let Some(h) = hidden {
        walls.push(format!("sandbox: {}", h.explain()));
    }
    if let Some(o) = outside {
        walls.push(format!(
            "sandbox: commands may write only inside the workspace and $TMPDIR, not {}; a \
             person can open a folder with [sandbox] write_paths in \
             ~/.linggen/linggen-agent.toml",
            o.display()
        ));
    }
    if network {
        walls.push(
            "sandbox: commands have no network (only loopback inside the sandbox); a person \
             can allow it with [sandbox] network = true in ~/.linggen/linggen-agent.toml"
                .to_string(),
        );
    }
    (!walls.is_empty()).then(|| walls.join("\n"))
}

/// `/proc`, `/sys` and `/dev` are the kernel's: no setting opens them, and a tool that
/// trips over one (`unshare` writing `/proc/self/uid_map`) needs no folder advice.
fn is_kernel_file(path: &Path) -> bool {
    ["/proc", "/sys", "/dev"]
        .iter()
        .any(|k| path.starts_with(k))
}

fn shown(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

/// Words of `line` that look like paths, made absolute against `root`: what follows
/// `cannot touch '…'`, `cannot create …:`, `open …:` and the like.
fn paths_in(line: &str, root: &Path) -> Vec<PathBuf> {
    line.split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '‘' | '’' | '(' | ')'))
        .map(|w| w.trim_end_matches([':', ',', ';']))
        .filter(|w| w.contains('/') || w.starts_with('.'))
        .filter(|w| !w.contains("://"))
        .map(|w| {
            let path = Path::new(w);
            if path.is_absolute() {
                path.to_path_buf()
            } else {
                root.join(path)
            }
        })
        .map(|p| fold_dots(&p))
        .collect()
}

/// `a/./b/../c` → `a/c`, lexically (the message already names where it failed).
fn fold_dots(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
