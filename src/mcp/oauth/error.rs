//! What can go wrong in the OAuth protocol, said for a person: one line, never a token.

use super::store::StoreError;

/// Why a step of the sign-in, or of keeping its token fresh, failed.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("cannot reach {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("{url} answered HTTP {status}{said}")]
    Status {
        url: String,
        status: u16,
        said: String,
    },
    #[error("{url} answered with more than {} KB", super::http::BODY_LIMIT / 1024)]
    TooLarge { url: String },
    #[error("{url} redirected {reason}")]
    Redirect { url: String, reason: String },
    #[error("the OAuth metadata at {url} is unusable: {reason}")]
    BadMetadata { url: String, reason: String },
    #[error(
        "the metadata at {url} names the authorization servers {servers}, but none of them \
         published usable metadata"
    )]
    NoAuthorizationServer { url: String, servers: String },
    #[error("the authorization server calls itself {received}, but {expected} was expected")]
    IssuerMismatch { expected: String, received: String },
    #[error("the authorization server did not say who it is (its issuer, {expected}, expected)")]
    MissingIssuer { expected: String },
    #[error("the authorization server does not offer PKCE with S256, which linggen requires")]
    PkceUnsupported,
    #[error("the authorization server does not offer the authorization-code flow")]
    CodeFlowUnsupported,
    #[error("the authorization server does not let clients register (no registration endpoint)")]
    NoRegistration,
    #[error("registering linggen as a client failed: {said}")]
    Registration { said: String },
    #[error("the browser came back without {0}")]
    Callback(&'static str),
    #[error("the browser came back from another sign-in (its `state` differs); sign in again")]
    StateMismatch,
    #[error("the authorization server refused the token request: {said}")]
    Token { said: String },
    #[error("the sign-in is no longer accepted; sign in again")]
    SignInAgain,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Internal(String),
}

/// `url` without its query and fragment, for a message: a server's address may carry a
/// key in its query.
pub(super) fn shown(url: &url::Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}
