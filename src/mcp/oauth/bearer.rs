//! A session's access token for one signed-in server: read once from the credentials
//! file, handed out as long as it is fresh (no request, no file read), refreshed — and the
//! refreshed one kept — when it is about to expire or the server refused it.

use std::time::{SystemTime, UNIX_EPOCH};

use url::Url;

use super::discovery::discover;
use super::error::OAuthError;
use super::http::OAuthHttp;
use super::store::{RefreshTurn, ServerCredentials, StoreError, StoredCredentials};
use super::token::{Client, TokenEndpoint};

/// At most this many seconds before it ends, a token is refreshed; a short-lived one at
/// half its life, so it is not refreshed before every request.
const REFRESH_BUFFER_SECS: u64 = 30;

/// The token of a server a login signed in to.
pub(in crate::mcp) struct Bearer {
    store: ServerCredentials,
    base: Url,
    http: OAuthHttp,
    /// Held across a refresh, so one refresh serves every request waiting for it.
    current: tokio::sync::Mutex<StoredCredentials>,
}

impl Bearer {
    /// The sign-in for `server` at `url`; `None` when no login left tokens for it there.
    pub(in crate::mcp) async fn load(
        server: &str,
        url: &str,
    ) -> Result<Option<Bearer>, OAuthError> {
        let Ok(path) = super::credentials_path() else {
            return Ok(None);
        };
        let store = ServerCredentials::new(path, server, url);
        let Some(credentials) = blocking(store.clone(), |store| store.load()).await? else {
            return Ok(None);
        };
        let base = Url::parse(url).map_err(|e| OAuthError::Internal(format!("`{url}`: {e}")))?;
        let http = OAuthHttp::new(&base)?;
        Ok(Some(Bearer {
            store,
            base,
            http,
            current: tokio::sync::Mutex::new(credentials),
        }))
    }

    /// The access token to send now, refreshed first when it is about to expire.
    /// [`OAuthError::SignInAgain`] when that is the only way left.
    pub(in crate::mcp) async fn access_token(&self) -> Result<String, OAuthError> {
        let mut current = self.current.lock().await;
        if let Some(token) = usable(&current, now()) {
            return Ok(token);
        }
        self.refresh(&mut current).await
    }

    /// The server refused `rejected` (a 401): a refreshed token, unless another request
    /// refreshed it meanwhile.
    pub(in crate::mcp) async fn refresh_after_rejection(
        &self,
        rejected: &str,
    ) -> Result<String, OAuthError> {
        let mut current = self.current.lock().await;
        let token = current.token_response.as_ref();
        match token.map(|t| t.access_token.as_str()) {
            Some(access) if access != rejected => Ok(access.to_string()),
            _ => self.refresh(&mut current).await,
        }
    }

    async fn refresh(&self, current: &mut StoredCredentials) -> Result<String, OAuthError> {
        // One refresh at a time across linggen processes, from reading the tokens to saving
        // the new ones (a refresh token may be good for one use only).
        let turn = blocking(self.store.clone(), ServerCredentials::refresh_turn).await?;
        // Another linggen may have refreshed since this one read the file: its token is
        // taken rather than refreshed again.
        let on_disk = blocking(self.store.clone(), |store| store.load()).await?;
        let Some(on_disk) = on_disk else {
            return Err(OAuthError::SignInAgain);
        };
        let ours = current.token_response.as_ref().map(|t| &t.access_token);
        let theirs = on_disk.token_response.as_ref().map(|t| &t.access_token);
        if theirs != ours
            && let Some(token) = usable(&on_disk, now())
        {
            *current = on_disk;
            return Ok(token);
        }
        *current = self.refreshed(on_disk, turn).await?;
        current
            .token_response
            .as_ref()
            .map(|t| t.access_token.clone())
            .ok_or(OAuthError::SignInAgain)
    }

    /// `credentials` refreshed at the server that issued them and saved, by the holder of
    /// `turn` (released once they are saved, or on failure).
    async fn refreshed(
        &self,
        credentials: StoredCredentials,
        turn: RefreshTurn,
    ) -> Result<StoredCredentials, OAuthError> {
        let refresh_token = credentials
            .token_response
            .as_ref()
            .and_then(|t| t.refresh_token.clone())
            .ok_or(OAuthError::SignInAgain)?;
        let found = discover(&self.http, &self.base).await?;
        // A refresh token goes back only to the server that issued it; one that moved
        // means signing in anew, and the old tokens are of no more use.
        if let (Some(issued_by), Some(now_at)) = (&credentials.issuer, &found.metadata.issuer)
            && issued_by != now_at
        {
            drop(turn);
            blocking(self.store.clone(), |store| store.forget()).await?;
            return Err(OAuthError::SignInAgain);
        }
        let client = Client {
            id: credentials.client_id.clone(),
            secret: credentials.client_secret.clone(),
        };
        let endpoint = TokenEndpoint::new(&self.http, &found.metadata, &client, &found.resource)?;
        let mut token = endpoint.refresh(&refresh_token).await?;
        // RFC 6749 §6: a new refresh token is optional; without one the old one stays good.
        token.refresh_token.get_or_insert(refresh_token);
        let refreshed = StoredCredentials {
            client_id: client.id,
            client_secret: client.secret,
            granted_scopes: kept_grant(&credentials.granted_scopes, token.scopes()),
            token_response: Some(token),
            token_received_at: Some(now()),
            issuer: found.metadata.issuer.clone(),
        };
        let saved = refreshed.clone();
        blocking(self.store.clone(), move |store| {
            store.save_in_turn(&turn, saved)
        })
        .await?;
        Ok(refreshed)
    }
}

/// The access token in `credentials`, unless it ends within the refresh margin. One whose
/// end is unknown is used as it is.
fn usable(credentials: &StoredCredentials, now: u64) -> Option<String> {
    let token = credentials.token_response.as_ref()?;
    if let (Some(lifetime), Some(received)) = (token.expires_in, credentials.token_received_at) {
        let remaining = lifetime.saturating_sub(now.saturating_sub(received));
        let margin = REFRESH_BUFFER_SECS.min(lifetime / 2).max(1);
        if remaining < margin {
            return None;
        }
    }
    Some(token.access_token.clone())
}

/// The grant kept after a refresh: a refresh never changes the refresh token's scope
/// (RFC 6749 §6), so the original grant stays; only an unknown one is learnt from the
/// answer.
fn kept_grant(original: &[String], answered: Option<Vec<String>>) -> Vec<String> {
    match original.is_empty() {
        true => answered.unwrap_or_default(),
        false => original.to_vec(),
    }
}

pub(super) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// A credentials-file step, off the runtime's threads.
async fn blocking<T: Send + 'static>(
    store: ServerCredentials,
    step: impl FnOnce(&ServerCredentials) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, OAuthError> {
    tokio::task::spawn_blocking(move || step(&store))
        .await
        .map_err(|e| OAuthError::Internal(format!("the credentials step stopped: {e}")))?
        .map_err(OAuthError::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::oauth::store::TokenResponse;

    fn credentials(expires_in: Option<u64>, received: Option<u64>) -> StoredCredentials {
        StoredCredentials {
            client_id: "c".into(),
            client_secret: None,
            token_response: Some(TokenResponse {
                access_token: "access-1".into(),
                token_type: "Bearer".into(),
                expires_in,
                refresh_token: None,
                scope: None,
                extra: Default::default(),
            }),
            granted_scopes: Vec::new(),
            token_received_at: received,
            issuer: None,
        }
    }

    #[test]
    fn a_token_is_refreshed_shortly_before_it_ends() {
        let hour = credentials(Some(3600), Some(1_000));
        assert_eq!(usable(&hour, 1_000 + 3_000).as_deref(), Some("access-1"));
        assert_eq!(usable(&hour, 1_000 + 3_569).as_deref(), Some("access-1"));
        assert_eq!(usable(&hour, 1_000 + 3_571), None, "within 30 s of its end");
        assert_eq!(usable(&hour, 1_000 + 9_000), None);
        // A 10-second token lives 5 seconds before it is refreshed, not 0.
        let short = credentials(Some(10), Some(1_000));
        assert!(usable(&short, 1_005).is_some());
        assert!(usable(&short, 1_006).is_none());
        // One whose end is unknown is used as it is.
        assert!(usable(&credentials(None, Some(1)), u64::MAX).is_some());
        assert!(usable(&credentials(Some(60), None), u64::MAX).is_some());
    }

    #[test]
    fn a_refresh_keeps_the_original_grant() {
        let read = vec!["read".to_string()];
        assert_eq!(kept_grant(&read, Some(vec!["other".into()])), read);
        assert_eq!(kept_grant(&[], Some(read.clone())), read);
        assert!(kept_grant(&[], None).is_empty());
    }
}
