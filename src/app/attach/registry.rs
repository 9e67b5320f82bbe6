//! Where a running `linggen serve` can be found: each one writes a record of itself to
//! `$LINGGEN_HOME/serve/PID.json` (its workspace, port and full-access token; readable by
//! its owner only) and removes it when it stops. `$LINGGEN_HOME` is hidden from every
//! command and file tool (see `tools::sandbox`), so the token is as private as the rest of
//! linggen's state. A record whose process is gone (a `kill -9`) is ignored and cleaned up
//! by the next reader.

use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One running `linggen serve`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServeRecord {
    pub pid: u32,
    /// The workspace root it serves.
    pub root: PathBuf,
    pub port: u16,
    /// Its long-lived full-access token (`Authorization: Bearer`).
    pub token: String,
    /// What it is, for people: `linggen serve`, or a terminal's `/share`.
    #[serde(default)]
    pub what: String,
}

impl ServeRecord {
    /// `linggen serve (pid 123) at http://127.0.0.1:4000`.
    pub fn describe(&self) -> String {
        let what = if self.what.is_empty() {
            "linggen"
        } else {
            &self.what
        };
        format!("{what} (pid {}) at {}", self.pid, self.base_url())
    }

    /// `http://127.0.0.1:PORT`: where a client on this machine reaches it (a `--lan`
    /// server listens there too).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("cannot create {path}: {source}")]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot record this server in {path}: {source}")]
    Write {
        path: PathBuf,
        source: crate::durable::WriteError,
    },
}

fn dir(home: &Path) -> PathBuf {
    home.join("serve")
}

/// This process's record; removed when dropped (Ctrl+C, SIGTERM and errors all unwind
/// through it; a `kill -9` leaves a record its readers skip).
pub struct Registration {
    path: PathBuf,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Records this process as the server of `root` at `port`.
pub fn register(
    home: &Path,
    root: &Path,
    port: u16,
    token: &str,
    what: &str,
) -> Result<Registration, RegistryError> {
    let record = ServeRecord {
        pid: std::process::id(),
        root: root.to_path_buf(),
        port,
        token: token.to_string(),
        what: what.to_string(),
    };
    let folder = dir(home);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&folder)
        .map_err(|source| RegistryError::Folder {
            path: folder.clone(),
            source,
        })?;
    let path = folder.join(format!("{}.json", record.pid));
    let json = serde_json::to_vec_pretty(&record).unwrap_or_default();
    crate::durable::replace(&path, &json, crate::durable::Options::private()).map_err(
        |source| RegistryError::Write {
            path: path.clone(),
            source,
        },
    )?;
    Ok(Registration { path })
}

/// The running servers of `root`, newest first. Records of processes that no longer exist
/// are removed on the way.
pub fn servers_of(home: &Path, root: &Path) -> Vec<ServeRecord> {
    let Ok(entries) = std::fs::read_dir(dir(home)) else {
        return Vec::new();
    };
    let mut found: Vec<(std::time::SystemTime, ServeRecord)> = entries
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let record = read(&path)?;
            if !alive(record.pid) {
                let _ = std::fs::remove_file(&path);
                return None;
            }
            let modified = entry.metadata().and_then(|m| m.modified()).ok()?;
            (record.root == root).then_some((modified, record))
        })
        .collect();
    found.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    found.into_iter().map(|(_, record)| record).collect()
}

/// The server of `root` running as process `pid`, if that is one.
pub fn server_with_pid(home: &Path, root: &Path, pid: u32) -> Option<ServeRecord> {
    servers_of(home, root).into_iter().find(|r| r.pid == pid)
}

fn read(path: &Path) -> Option<ServeRecord> {
    if path.extension().is_none_or(|e| e != "json") {
        return None;
    }
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    pid > 0 && i32::try_from(pid).is_ok_and(|pid| unsafe { libc::kill(pid, 0) } == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_server_is_found_for_its_root_only_and_gone_once_dropped() {
        let home = tempfile::tempdir().unwrap();
        let (root, other) = (Path::new("/w/one"), Path::new("/w/two"));
        let registration = register(home.path(), root, 4242, "secret", "linggen serve").unwrap();
        let found = servers_of(home.path(), root);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].port, 4242);
        assert_eq!(found[0].pid, std::process::id());
        assert!(servers_of(home.path(), other).is_empty());
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(
                home.path()
                    .join(format!("serve/{}.json", std::process::id())),
            )
            .unwrap()
            .permissions(),
        );
        assert_eq!(mode & 0o077, 0, "the token is readable by its owner only");
        drop(registration);
        assert!(servers_of(home.path(), root).is_empty());
    }

    #[test]
    fn a_record_of_a_dead_process_is_skipped_and_removed() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("serve")).unwrap();
        let stale = home.path().join("serve/999999999.json");
        let record = ServeRecord {
            pid: 999_999_999,
            root: "/w".into(),
            port: 1,
            token: "t".into(),
            what: String::new(),
        };
        std::fs::write(&stale, serde_json::to_vec(&record).unwrap()).unwrap();
        assert!(servers_of(home.path(), Path::new("/w")).is_empty());
        assert!(!stale.exists());
    }
}
