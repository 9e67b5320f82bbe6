//! The HTTP linggen's OAuth speaks: linggen's own reqwest, no redirect followed unless the
//! step allows it (a token or a code never follows a redirect elsewhere), every answer
//! bounded in time and size.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, LOCATION};
use url::Url;

use super::error::{OAuthError, shown};
use super::resolve::{Guard, GuardedResolver, Proxies};

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
    /// What a name may resolve to; checked here too for a request a proxy resolves.
    guard: Arc<Guard>,
    proxies: Arc<Proxies>,
}

impl OAuthHttp {
    /// The HTTP of the sign-in to the server at `server`: names resolve only to addresses
    /// that server may send linggen to (see `resolve`), through the person's proxy if they
    /// set one.
    pub fn new(server: &Url) -> Result<OAuthHttp, OAuthError> {
        OAuthHttp::with_proxies(server, Proxies::from_system())
    }

    fn with_proxies(server: &Url, proxies: Proxies) -> Result<OAuthHttp, OAuthError> {
        crate::llm::http::install_tls_provider();
        let resolver = GuardedResolver::new(server, &proxies);
        let guard = resolver.guard();
        let setup = |e: reqwest::Error| OAuthError::Internal(format!("cannot set up HTTP: {e}"));
        let client = crate::llm::http::with_system_roots(reqwest::Client::builder())
            .dns_resolver(Arc::new(resolver))
            .timeout(TIMEOUT)
            .connect_timeout(crate::llm::http::CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none());
        let client = proxies
            .apply(client)
            .map_err(setup)?
            .build()
            .map_err(setup)?;
        Ok(OAuthHttp {
            client,
            guard,
            proxies: Arc::new(proxies),
        })
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
        if self.proxies.host_for(url).is_some()
            && let Some(host) = url.host_str()
        {
            self.guard
                .check_proxied(host)
                .await
                .map_err(|refused| OAuthError::Unreachable {
                    url: shown(url),
                    reason: refused.to_string(),
                })?;
        }
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

    /// `url`, on `localhost`, is refused by the name check.
    async fn assert_refused_as_loopback(http: &OAuthHttp, url: &Url) {
        let refused = http.discovery_get(url).await.err().map(|e| e.to_string());
        assert!(
            refused
                .as_deref()
                .is_some_and(|e| e.contains("`localhost` resolves only to addresses")),
            "{refused:?}"
        );
    }

    /// The client resolves names through `resolve`'s check: from a public server, a name
    /// that resolves to loopback is refused before anything connects; from a loopback
    /// server, the same request goes out (and finds nothing listening).
    #[tokio::test]
    async fn a_name_is_resolved_with_the_servers_reach() {
        let target = Url::parse("http://localhost:1/.well-known/oauth-authorization-server")
            .unwrap_or_else(|e| panic!("{e}"));
        // No proxy, whatever the machine's environment says.
        let direct = |server: &str| {
            OAuthHttp::with_proxies(&Url::parse(server).unwrap(), Proxies::none())
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let public = direct("https://mcp.invalid/mcp");
        assert_refused_as_loopback(&public, &target).await;
        let local = direct("http://127.0.0.1:9/mcp");
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

    /// A proxy that answers 404 to every request, keeping each request's first line.
    async fn proxy() -> (String, tokio::sync::mpsc::UnboundedReceiver<String>) {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (seen, lines) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).await.unwrap_or(0) == 1
                {
                    head.push(byte[0]);
                }
                let text = String::from_utf8_lossy(&head);
                let _ = seen.send(text.lines().next().unwrap_or_default().to_string());
                let _ = stream
                    .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                    .await;
            }
        });
        // By name: the proxy's own name is the person's choice, even on loopback.
        (format!("http://localhost:{port}"), lines)
    }

    /// Through a proxy, the proxy's name resolves as it is (a company's proxy is on its
    /// private network, the server is public), and the name a request goes to is checked
    /// here before the proxy resolves it.
    #[tokio::test]
    async fn through_a_proxy_the_proxy_is_reached_and_the_target_still_checked() {
        let (proxy_url, mut seen) = proxy().await;
        let server = Url::parse("https://mcp.invalid/mcp").unwrap();
        let http = OAuthHttp::with_proxies(&server, Proxies::all(&proxy_url))
            .unwrap_or_else(|e| panic!("{e}"));
        // A name this machine cannot resolve goes to the proxy, which resolves it.
        let outside =
            Url::parse("http://mcp.invalid/.well-known/oauth-protected-resource").unwrap();
        let answer = http
            .discovery_get(&outside)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(answer.status, 404);
        assert_eq!(
            seen.recv().await.unwrap(),
            "GET http://mcp.invalid/.well-known/oauth-protected-resource HTTP/1.1"
        );
        // A name resolving to loopback is refused before the proxy hears of it.
        let inside =
            Url::parse("http://localhost:1/.well-known/oauth-authorization-server").unwrap();
        assert_refused_as_loopback(&http, &inside).await;
        assert!(
            seen.try_recv().is_err(),
            "the proxy was asked for a refused name"
        );
    }
}
