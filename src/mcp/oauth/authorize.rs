//! The authorization request a person's browser is sent with, and the checks on the
//! address it comes back to: PKCE (RFC 7636, S256), a `state` only this login knows, the
//! `resource` (RFC 8707), and the issuer (RFC 9207) when the server names it.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use url::Url;

use super::discovery::AuthorizationMetadata;
use super::error::OAuthError;

/// One login's secrets: what the browser's return must match, and what proves to the
/// token endpoint that this process asked.
pub(super) struct Pending {
    /// The PKCE verifier: 32 random bytes, base64url (43 characters, as `oauth2` made).
    pub verifier: String,
    pub state: String,
    /// The issuer the redirect's `iss` must name, and whether it must be there at all.
    pub issuer: Option<String>,
    pub issuer_promised: bool,
}

impl Pending {
    pub fn new(metadata: &AuthorizationMetadata) -> Result<Pending, OAuthError> {
        Ok(Pending {
            verifier: random_token(32)?,
            state: random_token(16)?,
            issuer: metadata.issuer.clone(),
            issuer_promised: metadata.promises_issuer(),
        })
    }

    /// The address the person's browser opens.
    pub fn authorization_url(
        &self,
        endpoint: &str,
        client_id: &str,
        redirect: &str,
        scopes: &[String],
        resource: &str,
    ) -> Result<Url, OAuthError> {
        let mut url = Url::parse(endpoint).map_err(|e| OAuthError::BadMetadata {
            url: endpoint.to_string(),
            reason: format!("its authorization endpoint is not an address: {e}"),
        })?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", client_id)
                .append_pair("state", &self.state)
                .append_pair("code_challenge", &s256(&self.verifier))
                .append_pair("code_challenge_method", "S256")
                .append_pair("redirect_uri", redirect);
            if !scopes.is_empty() {
                query.append_pair("scope", &scopes.join(" "));
            }
            query.append_pair("resource", resource);
        }
        Ok(url)
    }

    /// The authorization code in the address the browser came back to, once it is shown
    /// to answer this login: the same `state`, and the expected issuer when one is named
    /// (or promised).
    pub fn code(&self, callback: &str) -> Result<String, OAuthError> {
        let url = Url::parse(callback).map_err(|_| OAuthError::Callback("an address"))?;
        let pair = |name: &str| {
            url.query_pairs()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.into_owned())
        };
        let code = pair("code").ok_or(OAuthError::Callback("a code"))?;
        let state = pair("state").ok_or(OAuthError::Callback("a state"))?;
        // Compared whole: the state is not a secret once the browser has it, only a tie
        // between this request and its answer.
        if state != self.state {
            return Err(OAuthError::StateMismatch);
        }
        self.check_issuer(pair("iss").as_deref())?;
        Ok(code)
    }

    /// RFC 9207, as rmcp checks it: a named issuer must be the expected one; a missing one
    /// is tolerated unless the server promised it.
    fn check_issuer(&self, received: Option<&str>) -> Result<(), OAuthError> {
        match (&self.issuer, received) {
            (Some(expected), Some(received)) if received != expected => {
                Err(OAuthError::IssuerMismatch {
                    expected: expected.clone(),
                    received: received.to_string(),
                })
            }
            (Some(expected), None) if self.issuer_promised => Err(OAuthError::MissingIssuer {
                expected: expected.clone(),
            }),
            (None, Some(_)) => Err(OAuthError::Internal(
                "the browser came back naming an issuer, but the authorization server's \
                 metadata named none to check it against"
                    .into(),
            )),
            (None, None) if self.issuer_promised => Err(OAuthError::Internal(
                "the authorization server promises an issuer but its metadata names none".into(),
            )),
            _ => Ok(()),
        }
    }
}

/// PKCE's S256 challenge: base64url (unpadded) of the verifier's SHA-256.
pub(super) fn s256(verifier: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
    URL_SAFE_NO_PAD.encode(digest.as_ref())
}

/// `bytes` random bytes from the operating system, base64url.
fn random_token(bytes: usize) -> Result<String, OAuthError> {
    let mut buf = vec![0u8; bytes];
    getrandom::getrandom(&mut buf)
        .map_err(|e| OAuthError::Internal(format!("no randomness for the sign-in: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(issuer: Option<&str>, promised: bool) -> Pending {
        Pending {
            verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".into(),
            state: "state-1".into(),
            issuer: issuer.map(str::to_string),
            issuer_promised: promised,
        }
    }

    #[test]
    fn the_s256_challenge_is_rfc_7636s_example() {
        // RFC 7636, appendix B.
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn each_login_has_its_own_verifier_and_state() {
        let a = Pending::new(&AuthorizationMetadata::default()).unwrap_or_else(|e| panic!("{e}"));
        let b = Pending::new(&AuthorizationMetadata::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.verifier.len(), 43);
        assert!(a.state.len() >= 22);
        assert_ne!(a.verifier, b.verifier);
        assert_ne!(a.state, b.state);
    }

    #[test]
    fn the_authorization_url_carries_pkce_state_scope_and_resource() {
        let login = pending(None, false);
        let url = login
            .authorization_url(
                "https://auth.example/authorize?tenant=t1",
                "client-1",
                "http://127.0.0.1:5/callback",
                &["read".into(), "write".into()],
                "https://mcp.example/mcp",
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        let get = |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("tenant"), Some("t1"));
        assert_eq!(get("response_type"), Some("code"));
        assert_eq!(get("client_id"), Some("client-1"));
        assert_eq!(get("state"), Some("state-1"));
        assert_eq!(
            get("code_challenge"),
            Some("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        );
        assert_eq!(get("code_challenge_method"), Some("S256"));
        assert_eq!(get("redirect_uri"), Some("http://127.0.0.1:5/callback"));
        assert_eq!(get("scope"), Some("read write"));
        assert_eq!(get("resource"), Some("https://mcp.example/mcp"));
        assert!(
            !url.as_str().contains(&login.verifier),
            "the verifier stays here"
        );
    }

    #[test]
    fn the_return_must_carry_this_logins_state_and_issuer() {
        let login = pending(Some("https://auth.example"), false);
        let back = |query: &str| login.code(&format!("http://127.0.0.1:5/callback?{query}"));
        assert_eq!(back("code=c1&state=state-1").ok().as_deref(), Some("c1"));
        assert_eq!(
            back("code=c1&state=state-1&iss=https%3A%2F%2Fauth.example")
                .ok()
                .as_deref(),
            Some("c1")
        );
        assert!(matches!(
            back("code=c1&state=other"),
            Err(OAuthError::StateMismatch)
        ));
        assert!(matches!(back("code=c1"), Err(OAuthError::Callback(_))));
        assert!(matches!(
            back("state=state-1"),
            Err(OAuthError::Callback(_))
        ));
        assert!(matches!(
            back("code=c1&state=state-1&iss=https%3A%2F%2Fevil.example"),
            Err(OAuthError::IssuerMismatch { .. })
        ));
        let promised = pending(Some("https://auth.example"), true);
        assert!(matches!(
            promised.code("http://127.0.0.1:5/callback?code=c1&state=state-1"),
            Err(OAuthError::MissingIssuer { .. })
        ));
    }
}
