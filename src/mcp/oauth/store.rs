//! `$LINGGEN_HOME/mcp-credentials.json`: every server's tokens, owner-only, keyed by server
//! name and bound to the address they were issued for.
//!
//! An entry's `credentials` keep the shape rmcp's `StoredCredentials` had (linggen signed
//! in through rmcp before it spoke OAuth itself), so a person signed in then stays signed
//! in, and the file reads the same whichever wrote it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file's shape: one entry per server name.
#[derive(Debug, Default, Serialize, Deserialize)]
struct CredentialsFile {
    #[serde(default)]
    servers: BTreeMap<String, Entry>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    /// The address the tokens were issued for.
    url: String,
    /// A [`StoredCredentials`], kept as a value here so that one entry this version cannot
    /// read still leaves the others readable, and is written back untouched.
    credentials: serde_json::Value,
}

/// One server's sign-in: the client linggen registered as, and the tokens it was given.
/// Field for field rmcp's `StoredCredentials`, plus the client secret a server may hand a
/// client it registers (rmcp kept none, and could not refresh for such a client).
#[derive(Clone, Serialize, Deserialize)]
pub struct StoredCredentials {
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    pub token_response: Option<TokenResponse>,
    #[serde(default)]
    pub granted_scopes: Vec<String>,
    /// When the token arrived (seconds since the epoch): with `expires_in`, when it ends.
    #[serde(default)]
    pub token_received_at: Option<u64>,
    /// The authorization server that issued the tokens: a refresh token is only ever sent
    /// back to it.
    #[serde(default)]
    pub issuer: Option<String>,
}

/// Never a token or secret in a log line or a panic message.
impl std::fmt::Debug for StoredCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredCredentials")
            .field("client_id", &self.client_id)
            .field("granted_scopes", &self.granted_scopes)
            .field("token_received_at", &self.token_received_at)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

/// A token endpoint's answer (RFC 6749 §5.1), as the `oauth2` crate wrote it for rmcp:
/// `scope` space-separated, fields it does not know kept.
#[derive(Clone, Serialize, Deserialize)]
pub struct TokenResponse {
    pub access_token: String,
    /// Sent as `Bearer` whatever the server calls it; kept as it came.
    #[serde(default = "bearer")]
    pub token_type: String,
    #[serde(
        default,
        deserialize_with = "seconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub expires_in: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl TokenResponse {
    /// The scopes the server says it granted, when it says.
    pub fn scopes(&self) -> Option<Vec<String>> {
        self.scope
            .as_deref()
            .map(|scope| scope.split_whitespace().map(str::to_string).collect())
    }
}

fn bearer() -> String {
    "bearer".into()
}

/// `expires_in` as a number, or as the string of one (some servers send `"3600"`).
fn seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Option::<serde_json::Value>::deserialize(d)? {
        Some(serde_json::Value::Number(n)) => n.as_u64().or_else(|| n.as_f64().map(|f| f as u64)),
        Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    })
}

/// Why the credentials file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("cannot keep the credentials in {}: {reason}", path.display())]
pub struct StoreError {
    pub path: PathBuf,
    pub reason: String,
}

/// One server's tokens in the credentials file.
#[derive(Debug, Clone)]
pub struct ServerCredentials {
    path: PathBuf,
    server: String,
    url: String,
}

impl ServerCredentials {
    pub fn new(path: PathBuf, server: &str, url: &str) -> Self {
        ServerCredentials {
            path,
            server: server.to_string(),
            url: url.to_string(),
        }
    }

    /// Whether a login left tokens for this server at this address.
    pub fn exist(&self) -> bool {
        matches!(self.load(), Ok(Some(_)))
    }

    /// This server's sign-in, when one was made at this address; an entry whose tokens
    /// are gone (or that cannot be read) is none.
    pub fn load(&self) -> Result<Option<StoredCredentials>, StoreError> {
        let file = self.read_file()?;
        let Some(entry) = file.servers.get(&self.server) else {
            return Ok(None);
        };
        if entry.url != self.url {
            return Ok(None);
        }
        // Not serde's message: it may quote a value, and a value here may be a token.
        let credentials = StoredCredentials::deserialize(&entry.credentials).map_err(|_| {
            self.error(format!(
                "the entry of `{}` is not one linggen reads; log in again",
                self.server
            ))
        })?;
        Ok(credentials.token_response.is_some().then_some(credentials))
    }

    /// Keeps `credentials` as this server's, at this address.
    pub fn save(&self, credentials: StoredCredentials) -> Result<(), StoreError> {
        let entry = self.entry(credentials)?;
        self.rewrite(|file| {
            file.servers.insert(self.server.clone(), entry);
            ((), true)
        })
    }

    fn entry(&self, credentials: StoredCredentials) -> Result<Entry, StoreError> {
        let credentials =
            serde_json::to_value(credentials).map_err(|e| self.error(e.to_string()))?;
        Ok(Entry {
            url: self.url.clone(),
            credentials,
        })
    }

    /// Forgets this server's tokens; `Ok(false)` when there were none.
    pub fn remove(&self) -> Result<bool, super::LoginError> {
        Ok(self.forget()?)
    }

    pub(super) fn forget(&self) -> Result<bool, StoreError> {
        self.rewrite(|file| {
            let removed = file.servers.remove(&self.server).is_some();
            (removed, removed)
        })
    }

    fn read_file(&self) -> Result<CredentialsFile, StoreError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
            Err(e) => return Err(self.error(e.to_string())),
        };
        // serde's message names the line and column, never the text there: no token in it.
        serde_json::from_str(&text).map_err(|e| {
            self.error(format!(
                "line {}: {e}; remove the file and log in again",
                e.line()
            ))
        })
    }

    fn write_file(&self, file: &CredentialsFile) -> Result<(), StoreError> {
        let text = serde_json::to_string_pretty(file).map_err(|e| self.error(e.to_string()))?;
        if let Some(folder) = self.path.parent() {
            std::fs::create_dir_all(folder).map_err(|e| self.error(e.to_string()))?;
        }
        crate::durable::replace(
            &self.path,
            text.as_bytes(),
            crate::durable::Options::private(),
        )
        .map_err(|e| self.error(e.reason()))?;
        // A file made before by hand may be readable by others: tokens never stay so.
        set_owner_only(&self.path).map_err(|e| self.error(e.to_string()))
    }

    /// The file whose lock makes two linggen processes (a shell refreshing a token while
    /// `mcp login` saves another server's) take turns reading and rewriting the
    /// credentials; the caller holds `durable::FileLock::exclusive` on it.
    fn lock_file(&self) -> Result<std::fs::File, StoreError> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let lock_path = self.path.with_extension("lock");
        if let Some(folder) = lock_path.parent() {
            std::fs::create_dir_all(folder).map_err(|e| self.error(e.to_string()))?;
        }
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(|e| self.error(e.to_string()))
    }

    /// Waits for, and takes, the credentials file's lock until the [`RefreshTurn`] is
    /// dropped: a refresh holds it from reading the tokens until the new ones are saved, so
    /// two linggen processes never spend the same refresh token (a server may take each
    /// only once: the second would be told to sign in again).
    pub fn refresh_turn(&self) -> Result<RefreshTurn, StoreError> {
        let lock = self.lock_file()?;
        crate::durable::lock_exclusive(&lock).map_err(|e| self.error(e.to_string()))?;
        Ok(RefreshTurn { _lock: lock })
    }

    /// As [`ServerCredentials::save`], by the holder of `turn` (the lock is held).
    pub fn save_in_turn(
        &self,
        _turn: &RefreshTurn,
        credentials: StoredCredentials,
    ) -> Result<(), StoreError> {
        let entry = self.entry(credentials)?;
        self.rewrite_locked(|file| {
            file.servers.insert(self.server.clone(), entry);
            ((), true)
        })
    }

    /// Reads the file, changes it with `change` and writes it back, holding the lock.
    fn rewrite<T>(
        &self,
        change: impl FnOnce(&mut CredentialsFile) -> (T, bool),
    ) -> Result<T, StoreError> {
        let lock = self.lock_file()?;
        let _turn =
            crate::durable::FileLock::exclusive(&lock).map_err(|e| self.error(e.to_string()))?;
        self.rewrite_locked(change)
    }

    /// [`ServerCredentials::rewrite`] for a caller that holds the lock.
    fn rewrite_locked<T>(
        &self,
        change: impl FnOnce(&mut CredentialsFile) -> (T, bool),
    ) -> Result<T, StoreError> {
        let mut file = self.read_file()?;
        let (result, changed) = change(&mut file);
        if changed {
            self.write_file(&file)?;
        }
        Ok(result)
    }

    fn error(&self, reason: String) -> StoreError {
        StoreError {
            path: self.path.clone(),
            reason,
        }
    }
}

/// The credentials file's lock, held by one refresh at a time (see
/// [`ServerCredentials::refresh_turn`]); released when dropped, or by the kernel when the
/// process dies.
pub struct RefreshTurn {
    _lock: std::fs::File,
}

fn set_owner_only(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    const FILE: &str = "mcp-credentials.json";

    fn stored(client: &str) -> StoredCredentials {
        StoredCredentials {
            client_id: client.to_string(),
            client_secret: None,
            token_response: Some(TokenResponse {
                access_token: format!("access-{client}"),
                token_type: "bearer".into(),
                expires_in: Some(60),
                refresh_token: None,
                scope: None,
                extra: BTreeMap::new(),
            }),
            granted_scopes: vec!["read".into()],
            token_received_at: Some(1),
            issuer: None,
        }
    }

    fn client_of(store: &ServerCredentials) -> Option<String> {
        store
            .load()
            .unwrap_or_else(|e| panic!("{e}"))
            .map(|c| c.client_id)
    }

    #[test]
    fn tokens_are_owner_only_and_bound_to_the_servers_address() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join(FILE);
        let github = ServerCredentials::new(path.clone(), "github", "https://a.example/mcp");
        github.save(stored("c1")).unwrap_or_else(|e| panic!("{e}"));
        let mode = std::fs::metadata(&path)
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or_default();
        assert_eq!(mode, 0o600);
        assert_eq!(client_of(&github).as_deref(), Some("c1"));

        // The same name at another address (a project's .mcp.json, say) gets nothing.
        let elsewhere = ServerCredentials::new(path.clone(), "github", "https://b.example/mcp");
        assert!(!elsewhere.exist());
        assert_eq!(client_of(&elsewhere), None);

        // Another server's save keeps the first; removing one keeps the other.
        let docs = ServerCredentials::new(path.clone(), "docs", "https://d.example/mcp");
        docs.save(stored("c2")).unwrap_or_else(|e| panic!("{e}"));
        assert!(github.exist() && docs.exist());
        assert!(github.remove().unwrap_or_else(|e| panic!("{e}")));
        assert!(!github.exist() && docs.exist());
        assert!(!github.remove().unwrap_or_else(|e| panic!("{e}")));
    }

    #[test]
    fn a_broken_file_names_itself_and_its_line() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join(FILE);
        std::fs::write(&path, "{\n\"servers\": [\n").unwrap_or_else(|e| panic!("{e}"));
        let store = ServerCredentials::new(path.clone(), "x", "https://x.example");
        let message = store.remove().map(|_| ()).unwrap_err().to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("line 2"), "{message}");
        assert!(message.contains("log in again"), "{message}");
    }

    /// An entry as rmcp 3.11 wrote it (its `StoredCredentials`, the token response as the
    /// `oauth2` crate serialises it): a person who signed in then is still signed in.
    const RMCP_ENTRY: &str = r#"{
      "servers": {
        "remote": {
          "url": "https://mcp.example/mcp",
          "credentials": {
            "client_id": "client-1",
            "token_response": {
              "access_token": "access-1",
              "token_type": "bearer",
              "expires_in": 3600,
              "refresh_token": "refresh-1",
              "scope": "read write",
              "id_token": "vendor-field"
            },
            "granted_scopes": ["read", "write"],
            "token_received_at": 1700000000,
            "issuer": "https://auth.example"
          }
        }
      }
    }"#;

    #[test]
    fn an_entry_rmcp_wrote_is_read_and_written_back_in_its_shape() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join(FILE);
        std::fs::write(&path, RMCP_ENTRY).unwrap_or_else(|e| panic!("{e}"));
        let store = ServerCredentials::new(path.clone(), "remote", "https://mcp.example/mcp");
        let stored = store
            .load()
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("the rmcp entry was not read"));
        assert_eq!(stored.client_id, "client-1");
        assert_eq!(stored.granted_scopes, ["read", "write"]);
        assert_eq!(stored.token_received_at, Some(1_700_000_000));
        assert_eq!(stored.issuer.as_deref(), Some("https://auth.example"));
        let token = stored
            .token_response
            .clone()
            .unwrap_or_else(|| panic!("no token response"));
        assert_eq!(token.access_token, "access-1");
        assert_eq!(token.refresh_token.as_deref(), Some("refresh-1"));
        assert_eq!(token.expires_in, Some(3600));
        assert_eq!(token.scopes(), Some(vec!["read".into(), "write".into()]));

        // Saved again, the entry has the same fields, and the vendor's field is kept.
        store.save(stored).unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let written: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        let original: serde_json::Value =
            serde_json::from_str(RMCP_ENTRY).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(written, original);
    }

    #[test]
    fn a_token_response_with_string_seconds_or_no_type_is_read() {
        let token: TokenResponse =
            serde_json::from_str(r#"{"access_token":"a","expires_in":"120"}"#)
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(token.expires_in, Some(120));
        assert_eq!(token.token_type, "bearer");
        assert_eq!(token.scopes(), None);
    }

    #[test]
    fn debug_output_has_no_token() {
        let shown = format!("{:?}", stored("c1"));
        assert!(!shown.contains("access-c1"), "{shown}");
    }
}
