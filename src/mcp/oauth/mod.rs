//! OAuth for remote MCP servers, as the MCP authorization spec (2025-06-18, 2025-11-25)
//! describes it: `linggen mcp login NAME` discovers the server's authorization server
//! ([`discovery`]), registers linggen as a client ([`token`], dynamic registration), sends
//! the person's browser to sign in ([`authorize`]: PKCE, `state`, a loopback redirect in
//! [`browser`]), and keeps the tokens ([`store`]). A session then sends the access token
//! with every request and refreshes it when it expires ([`Bearer`]).
//!
//! Tokens live in `$LINGGEN_HOME/mcp-credentials.json`, owner-only (0600), keyed by server
//! name and bound to its address: a server renamed onto another address never gets another
//! server's token. The sandbox hides `$LINGGEN_HOME` from tools, no token is ever put in an
//! event, a log line or an error message, and nothing here is sent to a model.

mod authorize;
mod bearer;
mod browser;
mod discovery;
mod error;
mod http;
mod resolve;
mod store;
mod token;

use std::path::PathBuf;
use std::time::Duration;

use url::Url;

pub(in crate::mcp) use bearer::Bearer;
pub use error::OAuthError;
pub use store::{ServerCredentials, StoreError};

use authorize::Pending;
use discovery::{Discovered, Source};
use http::OAuthHttp;
use store::StoredCredentials;
use token::{Client, TokenEndpoint};

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
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Where the tokens are kept.
pub fn credentials_path() -> Result<PathBuf, LoginError> {
    crate::config::paths::linggen_home()
        .map(|home| home.join(CREDENTIALS_FILE))
        .map_err(|e| LoginError::NoHome(e.to_string()))
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
    let failed = |e: OAuthError| LoginError::Failed {
        server: server.to_string(),
        reason: crate::text::one_line(&e.to_string(), 300),
    };
    let store = ServerCredentials::new(credentials_path()?, server, url);
    let base = Url::parse(url).map_err(|e| failed(OAuthError::Internal(e.to_string())))?;
    let http = OAuthHttp::new(&base).map_err(failed)?;
    let found = discovery::discover(&http, &base)
        .await
        .map_err(|e| LoginError::Discovery {
            server: server.to_string(),
            reason: crate::text::one_line(&e.to_string(), 300),
        })?;

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(LoginError::Listen)?;
    let port = listener.local_addr().map_err(LoginError::Listen)?.port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let scopes = found.scopes();
    let client =
        match token::register(&http, &found.metadata, CLIENT_NAME, &redirect, &scopes).await {
            Ok(client) => client,
            Err(e) if found.source == Source::Legacy => {
                return Err(LoginError::Discovery {
                    server: server.to_string(),
                    reason: format!(
                        "it publishes no OAuth metadata, and the usual endpoints at its origin \
                     do not work ({})",
                        crate::text::one_line(&e.to_string(), 200)
                    ),
                });
            }
            Err(e) => return Err(failed(e)),
        };
    found.metadata.check_code_flow().map_err(failed)?;
    let pending = Pending::new(&found.metadata).map_err(failed)?;
    let link = pending
        .authorization_url(
            &found.metadata.authorization_endpoint,
            &client.id,
            &redirect,
            &scopes,
            &found.resource,
        )
        .map_err(failed)?;

    let callback = ask_person(server, link.as_str(), listener, person).await?;
    let code = pending.code(&callback).map_err(failed)?;
    let endpoint =
        TokenEndpoint::new(&http, &found.metadata, &client, &found.resource).map_err(failed)?;
    let token = endpoint
        .exchange_code(&code, &pending.verifier, &redirect)
        .await
        .map_err(failed)?;
    let credentials = signed_in(&found, client, token, scopes);
    tokio::task::spawn_blocking(move || store.save(credentials))
        .await
        .map_err(|e| failed(OAuthError::Internal(e.to_string())))??;
    Ok(())
}

/// Shows the person the link, opens their browser and waits for it to come back: the
/// address it came back to.
async fn ask_person(
    server: &str,
    link: &str,
    listener: tokio::net::TcpListener,
    person: &Person<'_>,
) -> Result<String, LoginError> {
    (person.say)(&format!("Sign in to `{server}` in your browser:\n  {link}"));
    if let Err(e) = (person.open_browser)(link) {
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
    let waiting = browser::wait_for_callback(listener, person.can_paste);
    let callback = tokio::time::timeout(LOGIN_WAIT, waiting)
        .await
        .map_err(|_| LoginError::TimedOut {
            server: server.to_string(),
        })??;
    match browser::refused(&callback) {
        Some(said) => Err(LoginError::Failed {
            server: server.to_string(),
            reason: format!("the authorization server refused it ({said})"),
        }),
        None => Ok(callback),
    }
}

/// What a login keeps. The granted scopes are the answer's, or (RFC 6749 §5.1: an answer
/// without `scope` granted what was asked) the ones asked for.
fn signed_in(
    found: &Discovered,
    client: Client,
    token: store::TokenResponse,
    asked: Vec<String>,
) -> StoredCredentials {
    StoredCredentials {
        client_id: client.id,
        client_secret: client.secret,
        granted_scopes: token.scopes().unwrap_or(asked),
        token_response: Some(token),
        token_received_at: Some(bearer::now()),
        issuer: found.metadata.issuer.clone(),
    }
}
