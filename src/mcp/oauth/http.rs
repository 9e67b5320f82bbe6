//! The HTTP linggen's OAuth speaks: linggen's own reqwest, no redirect followed unless the
//! step allows it (a token or a code never follows a redirect elsewhere), every answer
//! bounded in time and size.

use std::time::Duration;

use reqwest::header::{HeaderMap, LOCATION};
use url::Url;

use super::error::{OAuthError, shown};

/// How long one OAuth request may take, as rmcp allowed.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The most of an answer that is read: metadata and tokens are small.
pub(super) const BODY_LIMIT: usize = 1024 * 1024;

/// How many same-origin redirects a discovery request follows.
const MAX_REDIRECTS: usize = 10;

/// The protocol version discovery requests announce, as rmcp's did.
const PROTOCOL_VERSION: &str = "2024-11-05";

/// An answer, read whole.
pub(super) struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

#[derive(Clone)]
pub(super) struct OAuthHttp {
    client: reqwest::Client,
}

impl OAuthHttp {
    /// The HTTP of the sign-in to the server at `server`: names resolve only to addresses
    /// that server may send linggen to (see `resolve`).
    pub fn new(server: &Url) -> Result<OAuthHttp, OAuthError> {
        crate::llm::http::install_tls_provider();
        let resolver = std::sync::Arc::new(super::resolve::GuardedResolver::new(server));
        let client = crate::llm::http::with_system_roots(reqwest::Client::builder())
            .dns_resolver(resolver)
            .timeout(TIMEOUT)
            .connect_timeout(crate::llm::http::CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| OAuthError::Internal(format!("cannot set up HTTP: {e}")))?;
        Ok(OAuthHttp { client })
    }

    /// Sends `request` (to `url`) and reads the answer.
    pub async fn send(
        &self,
        url: &Url,
        request: reqwest::RequestBuilder,
    ) -> Result<Answer, OAuthError> {
        let unreachable = |e: reqwest::Error| OAuthError::Unreachable {
            url: shown(url),
            reason: crate::text::one_line(
                &crate::llm::http::with_root_cause(&e.without_url()),
                200,
            ),
        };
        let mut response = request.send().await.map_err(unreachable)?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = crate::llm::http::body_within(&mut response, BODY_LIMIT)
            .await
            .map_err(unreachable)?
            .ok_or_else(|| OAuthError::TooLarge { url: shown(url) })?;
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    /// A POST of `form` (`application/x-www-form-urlencoded`), answered in JSON.
    pub fn post_form(&self, url: &Url, form: &[(&str, &str)]) -> reqwest::RequestBuilder {
        self.client
            .post(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .form(form)
    }

    /// A POST of a JSON body.
    pub fn post_json(&self, url: &Url, body: &serde_json::Value) -> reqwest::RequestBuilder {
        self.client
            .post(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .json(body)
    }

    /// A discovery GET: same-origin redirects are followed (another origin is refused),
    /// and an answer that says "not now" (5xx, 408, 425, 429) fails the discovery rather
    /// than passing for "not here".
    pub async fn discovery_get(&self, url: &Url) -> Result<Answer, OAuthError> {
        let mut current = url.clone();
        for _ in 0..MAX_REDIRECTS {
            let request = self
                .client
                .get(current.clone())
                .header("MCP-Protocol-Version", PROTOCOL_VERSION);
            let answer = self.send(&current, request).await?;
            if answer.status >= 500 || matches!(answer.status, 408 | 425 | 429) {
                return Err(OAuthError::Status {
                    url: shown(&current),
                    status: answer.status,
                    said: String::new(),
                });
            }
            if !(300..400).contains(&answer.status) {
                return Ok(answer);
            }
            let Some(location) = answer.headers.get(LOCATION) else {
                return Ok(answer);
            };
            let next = location
                .to_str()
                .ok()
                .and_then(|location| current.join(location).ok());
            match next {
                Some(next) if super::discovery::same_origin(&current, &next) => current = next,
                _ => {
                    return Err(OAuthError::Redirect {
                        url: shown(&current),
                        reason: "to another origin, which discovery does not follow".into(),
                    });
                }
            }
        }
        Err(OAuthError::Redirect {
            url: shown(url),
            reason: format!("more than {MAX_REDIRECTS} times"),
        })
    }
}

/// What an OAuth error answer says (`error: error_description`), or the start of its text
/// when it is not one; `""` for an empty body. Only for answers that carry no token.
pub(super) fn said(body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body)
        && let Some(error) = value.get("error").and_then(|e| e.as_str())
    {
        let description = value.get("error_description").and_then(|d| d.as_str());
        return match description {
            Some(description) => format!("{error}: {description}"),
            None => error.to_string(),
        };
    }
    crate::text::one_line(&String::from_utf8_lossy(body), 200)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client resolves names through `resolve`'s check: from a public server, a name
    /// that resolves to loopback is refused before anything connects; from a loopback
    /// server, the same request goes out (and finds nothing listening).
    #[tokio::test]
    async fn a_name_is_resolved_with_the_servers_reach() {
        let target = Url::parse("http://localhost:1/.well-known/oauth-authorization-server")
            .unwrap_or_else(|e| panic!("{e}"));
        let public = OAuthHttp::new(&Url::parse("https://mcp.invalid/mcp").unwrap())
            .unwrap_or_else(|e| panic!("{e}"));
        let refused = public
            .discovery_get(&target)
            .await
            .err()
            .map(|e| e.to_string());
        assert!(
            refused
                .as_deref()
                .is_some_and(|e| e.contains("`localhost` resolves only to addresses")),
            "{refused:?}"
        );
        let local = OAuthHttp::new(&Url::parse("http://127.0.0.1:9/mcp").unwrap())
            .unwrap_or_else(|e| panic!("{e}"));
        let reached = local
            .discovery_get(&target)
            .await
            .err()
            .map(|e| e.to_string());
        assert!(
            reached
                .as_deref()
                .is_some_and(|e| !e.contains("resolves only") && e.contains("refused")),
            "{reached:?}"
        );
    }
}
