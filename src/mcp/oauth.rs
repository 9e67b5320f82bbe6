//! OAuth for remote MCP servers, as the MCP authorization spec describes it: `linggen mcp
//! login NAME` discovers the server's authorization server, registers linggen as a client
//! (dynamic registration), sends the person's browser to sign in (PKCE, a loopback
//! redirect), and keeps the tokens. A session then sends the access token with every
//! request and refreshes it when it expires — rmcp's `auth` does the protocol; this module
//! keeps the tokens and runs the person's side of the login.
//!
//! Tokens live in `$LINGGEN_HOME/mcp-credentials.json`, owner-only (0600), keyed by server
//! name and bound to its address: a server renamed onto another address never gets another
//! server's token. The sandbox hides `$LINGGEN_HOME` from tools, no token is ever put in an
//! event, a log line or an error message, and nothing here is sent to a model.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationRequest,
    AuthorizationSession, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The file under `$LINGGEN_HOME` holding every server's tokens.
pub const CREDENTIALS_FILE: &str = "mcp-credentials.json";

/// How long `login` waits for the browser to come back.
const LOGIN_WAIT: Duration = Duration::from_secs(300);

/// The client name linggen registers under: what the sign-in page shows the person.
const CLIENT_NAME: &str = "linggen";

/// Why a login or logout did not happen: one line for the person, never a token.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error(
        "`{server}` is a stdio server; only HTTP servers log in (give it credentials in its `env`)"
    )]
    NotHttp { server: String },
    #[error("cannot find linggen's home for the credentials: {0}")]
    NoHome(String),
    #[error("`{server}` does not offer OAuth sign-in: {reason}")]
    Discovery { server: String, reason: String },
    #[error("the sign-in with `{server}` failed: {reason}")]
    Failed { server: String, reason: String },
    #[error(
        "no answer from the browser within {} minutes; run `linggen mcp login {server}` again",
        LOGIN_WAIT.as_secs() / 60
    )]
    TimedOut { server: String },
    #[error("cannot open a local port for the browser to come back to: {0}")]
    Listen(std::io::Error),
    #[error("cannot keep the credentials in {path}: {reason}")]
    Store { path: PathBuf, reason: String },
}

/// Where the tokens are kept.
pub fn credentials_path() -> Result<PathBuf, LoginError> {
    crate::config::paths::linggen_home()
        .map(|home| home.join(CREDENTIALS_FILE))
        .map_err(|e| LoginError::NoHome(e.to_string()))
}

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
    /// rmcp's record (client id, tokens, scopes, issuer), kept as it writes it.
    credentials: serde_json::Value,
}

/// One server's tokens in the credentials file: rmcp's [`CredentialStore`].
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
        matches!(self.read_entry(), Ok(Some(_)))
    }

    /// Forgets this server's tokens; `Ok(false)` when there were none.
    pub fn remove(&self) -> Result<bool, LoginError> {
        self.rewrite(|file| {
            let removed = file.servers.remove(&self.server).is_some();
            (removed, removed)
        })
    }

    fn read_entry(&self) -> Result<Option<serde_json::Value>, LoginError> {
        let file = self.read_file()?;
        Ok(file
            .servers
            .get(&self.server)
            .filter(|entry| entry.url == self.url)
            .map(|entry| entry.credentials.clone()))
    }

    fn read_file(&self) -> Result<CredentialsFile, LoginError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
            Err(e) => return Err(self.store_error(e.to_string())),
        };
        serde_json::from_str(&text).map_err(|e| {
            self.store_error(format!(
                "line {}: {e}; remove the file and log in again",
                e.line()
            ))
        })
    }

    fn write_file(&self, file: &CredentialsFile) -> Result<(), LoginError> {
        let text =
            serde_json::to_string_pretty(file).map_err(|e| self.store_error(e.to_string()))?;
        if let Some(folder) = self.path.parent() {
            std::fs::create_dir_all(folder).map_err(|e| self.store_error(e.to_string()))?;
        }
        crate::durable::replace(
            &self.path,
            text.as_bytes(),
            crate::durable::Options::private(),
        )
        .map_err(|e| self.store_error(e.reason()))?;
        // A file made before by hand may be readable by others: tokens never stay so.
        set_owner_only(&self.path).map_err(|e| self.store_error(e.to_string()))
    }

    /// The file whose lock makes two linggen processes (a shell refreshing a token while
    /// `mcp login` saves another server's) take turns reading and rewriting the
    /// credentials; the caller holds `durable::FileLock::exclusive` on it.
    fn lock_file(&self) -> Result<std::fs::File, LoginError> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let lock_path = self.path.with_extension("lock");
        if let Some(folder) = lock_path.parent() {
            std::fs::create_dir_all(folder).map_err(|e| self.store_error(e.to_string()))?;
        }
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(|e| self.store_error(e.to_string()))
    }

    /// Reads the file, changes it with `change` and writes it back, holding the lock.
    fn rewrite<T>(
        &self,
        change: impl FnOnce(&mut CredentialsFile) -> (T, bool),
    ) -> Result<T, LoginError> {
        let lock = self.lock_file()?;
        let _turn = crate::durable::FileLock::exclusive(&lock)
            .map_err(|e| self.store_error(e.to_string()))?;
        let mut file = self.read_file()?;
        let (result, changed) = change(&mut file);
        if changed {
            self.write_file(&file)?;
        }
        Ok(result)
    }

    fn store_error(&self, reason: String) -> LoginError {
        LoginError::Store {
            path: self.path.clone(),
            reason,
        }
    }
}

fn set_owner_only(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

#[async_trait::async_trait]
impl CredentialStore for ServerCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(value) = self.read_entry().map_err(store_failure)? else {
            return Ok(None);
        };
        serde_json::from_value(value)
            .map(Some)
            .map_err(|e| AuthError::CredentialStoreError(format!("unreadable entry: {e}")))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let value = serde_json::to_value(&credentials)
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        let entry = Entry {
            url: self.url.clone(),
            credentials: value,
        };
        self.rewrite(|file| {
            file.servers.insert(self.server.clone(), entry);
            ((), true)
        })
        .map_err(store_failure)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.remove().map(|_| ()).map_err(store_failure)
    }
}

fn store_failure(e: LoginError) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

/// rmcp's HTTP client that adds the server's access token to every request, refreshing it
/// when it expires; `None` when no login left tokens for this server.
pub(in crate::mcp) async fn authorized_client(
    server: &str,
    url: &str,
) -> Result<Option<AuthClient<reqwest013::Client>>, String> {
    let Ok(path) = credentials_path() else {
        return Ok(None);
    };
    let store = ServerCredentials::new(path, server, url);
    if !store.exist() {
        return Ok(None);
    }
    crate::llm::http::install_tls_provider();
    let mut manager = AuthorizationManager::new(url).await.map_err(plain)?;
    manager.set_credential_store(store);
    // Reads the authorization server's metadata, so a refresh knows where to go; `false`
    // when the server moved to another authorization server (the tokens were dropped).
    if !manager.initialize_from_store().await.map_err(plain)? {
        return Ok(None);
    }
    let http = reqwest013::Client::builder()
        // As rmcp's own client: no idle pool (stalls on Linux's delayed ACK), and a token
        // never follows a redirect elsewhere.
        .pool_max_idle_per_host(0)
        .redirect(reqwest013::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    Ok(Some(AuthClient::new(http, manager)))
}

/// The person's side of a login, given by the caller: how to open a link, and where to
/// say what is happening.
pub struct Person<'a> {
    pub open_browser: &'a dyn Fn(&str) -> Result<(), String>,
    pub say: &'a dyn Fn(&str),
    /// Whether the person can paste the address the browser ended on (stdin is a
    /// terminal): for a browser on another machine, whose redirect cannot reach this one.
    pub can_paste: bool,
}

/// `linggen mcp login NAME`: signs in and keeps the tokens.
pub async fn login(server: &str, url: &str, person: &Person<'_>) -> Result<(), LoginError> {
    crate::llm::http::install_tls_provider();
    let path = credentials_path()?;
    let failed = |e: AuthError| LoginError::Failed {
        server: server.to_string(),
        reason: plain(e),
    };
    let mut manager = AuthorizationManager::new(url).await.map_err(failed)?;
    manager.set_credential_store(ServerCredentials::new(path, server, url));
    let metadata = manager
        .resolve_metadata()
        .await
        .map_err(|e| LoginError::Discovery {
            server: server.to_string(),
            reason: plain(e),
        })?;
    manager.set_metadata(metadata.metadata);

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(LoginError::Listen)?;
    let port = listener.local_addr().map_err(LoginError::Listen)?.port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let request = AuthorizationRequest::new(redirect.as_str()).with_client_name(CLIENT_NAME);
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| failed(e))?;

    let link = session.get_authorization_url().to_string();
    (person.say)(&format!("Sign in to `{server}` in your browser:\n  {link}"));
    if let Err(e) = (person.open_browser)(&link) {
        (person.say)(&format!(
            "(could not open a browser: {e}; open the link yourself)"
        ));
    }
    if person.can_paste {
        (person.say)(
            "Waiting for the browser. If it runs on another machine, paste the address it \
             ended on here and press Enter.",
        );
    } else {
        (person.say)("Waiting for the browser…");
    }
    let callback = tokio::time::timeout(LOGIN_WAIT, wait_for_callback(listener, person.can_paste))
        .await
        .map_err(|_| LoginError::TimedOut {
            server: server.to_string(),
        })??;
    if let Some(said) = refused(&callback) {
        return Err(LoginError::Failed {
            server: server.to_string(),
            reason: format!("the authorization server refused it ({said})"),
        });
    }
    let callback = AuthorizationCallback::from_redirect_url(&callback).map_err(failed)?;
    session
        .handle_callback_with_issuer(
            &callback.code,
            &callback.csrf_token,
            callback.issuer.as_deref(),
        )
        .await
        .map_err(failed)?;
    Ok(())
}

/// The address the browser was sent back to: from the loopback redirect, or pasted.
async fn wait_for_callback(
    listener: tokio::net::TcpListener,
    can_paste: bool,
) -> Result<String, LoginError> {
    let (pasted_tx, mut pasted) = tokio::sync::mpsc::channel::<String>(1);
    if can_paste {
        // A plain thread, not tokio's stdin: a read blocked on the terminal must not hold
        // the runtime open once the login is over.
        std::thread::spawn(move || {
            let mut line = String::new();
            while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {
                if line.contains("code=") || line.contains("error=") {
                    let _ = pasted_tx.blocking_send(line.trim().to_string());
                    return;
                }
                line.clear();
            }
        });
    }
    loop {
        tokio::select! {
            Some(url) = pasted.recv() => return Ok(url),
            accepted = listener.accept() => {
                let (stream, _) = accepted.map_err(LoginError::Listen)?;
                if let Some(url) = answer_browser(stream).await {
                    return Ok(url);
                }
            }
        }
    }
}

/// Reads one browser request; the full callback address when it is the callback (a
/// favicon or a probe gets a 404 and the wait goes on).
async fn answer_browser(mut stream: tokio::net::TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head);
    let target = head.lines().next()?.split(' ').nth(1)?.to_string();
    let port = stream.local_addr().ok()?.port();
    let is_callback = target.starts_with("/callback?");
    let (status, body) = if !is_callback {
        ("404 Not Found", "Not the sign-in callback.")
    } else if target.contains("error=") {
        (
            "200 OK",
            "linggen: the sign-in was refused. You can close this tab.",
        )
    } else {
        (
            "200 OK",
            "linggen: signed in. You can close this tab and go back to the terminal.",
        )
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
    is_callback.then(|| format!("http://127.0.0.1:{port}{target}"))
}

/// rmcp's error as a person reads it. `AuthorizationFailed` carries what the authorization
/// server said (`error=access_denied`), which is the useful part.
fn plain(e: AuthError) -> String {
    crate::text::one_line(&e.to_string(), 300)
}

/// The server refused the login's redirect (`?error=…`): what it said.
fn refused(callback: &str) -> Option<String> {
    let url = url::Url::parse(callback).ok()?;
    let pairs: BTreeMap<String, String> = url.query_pairs().into_owned().collect();
    let error = pairs.get("error")?;
    Some(match pairs.get("error_description") {
        Some(description) => format!("{error}: {description}"),
        None => error.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn stored(client: &str) -> StoredCredentials {
        StoredCredentials::new(client.to_string(), None, vec!["read".into()], Some(1))
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn tokens_are_owner_only_and_bound_to_the_servers_address() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join(CREDENTIALS_FILE);
        let github = ServerCredentials::new(path.clone(), "github", "https://a.example/mcp");
        let rt = runtime();
        rt.block_on(github.save(stored("c1")))
            .unwrap_or_else(|e| panic!("{e}"));
        let mode = std::fs::metadata(&path)
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or_default();
        assert_eq!(mode, 0o600);
        let loaded = rt.block_on(github.load()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(loaded.map(|c| c.client_id).as_deref(), Some("c1"));

        // The same name at another address (a project's .mcp.json, say) gets nothing.
        let elsewhere = ServerCredentials::new(path.clone(), "github", "https://b.example/mcp");
        assert!(!elsewhere.exist());
        assert!(
            rt.block_on(elsewhere.load())
                .unwrap_or_else(|e| panic!("{e}"))
                .is_none()
        );

        // Another server's save keeps the first; removing one keeps the other.
        let docs = ServerCredentials::new(path.clone(), "docs", "https://d.example/mcp");
        rt.block_on(docs.save(stored("c2")))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(github.exist() && docs.exist());
        assert!(github.remove().unwrap_or_else(|e| panic!("{e}")));
        assert!(!github.exist() && docs.exist());
        assert!(!github.remove().unwrap_or_else(|e| panic!("{e}")));
    }

    #[test]
    fn a_broken_file_names_itself_and_its_line() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join(CREDENTIALS_FILE);
        std::fs::write(&path, "{\n\"servers\": [\n").unwrap_or_else(|e| panic!("{e}"));
        let store = ServerCredentials::new(path.clone(), "x", "https://x.example");
        let message = store.remove().map(|_| ()).unwrap_err().to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("line 2"), "{message}");
        assert!(message.contains("log in again"), "{message}");
    }

    #[test]
    fn a_refused_sign_in_says_what_the_server_said() {
        assert_eq!(
            refused("http://127.0.0.1:1/callback?error=access_denied&error_description=no+thanks")
                .as_deref(),
            Some("access_denied: no thanks")
        );
        assert_eq!(refused("http://127.0.0.1:1/callback?code=a&state=b"), None);
    }
}
