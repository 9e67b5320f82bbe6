//! The authorization server's two POST endpoints: registration (RFC 7591), where linggen
//! becomes a client, and the token endpoint (RFC 6749 §4.1.3, §6), where a code or a
//! refresh token becomes an access token.

use base64::Engine as _;
use url::Url;

use super::discovery::AuthorizationMetadata;
use super::error::{OAuthError, shown};
use super::http::{OAuthHttp, said};
use super::store::TokenResponse;

/// OpenID's `application_type` for a program on the person's machine (SEP-837).
const APPLICATION_TYPE: &str = "native";

/// Who linggen is to one authorization server.
#[derive(Clone)]
pub(super) struct Client {
    pub id: String,
    /// Only when the server insisted on giving one: linggen registers as a public client.
    pub secret: Option<String>,
}

/// Registers linggen as a public client that comes back to `redirect`.
pub(super) async fn register(
    http: &OAuthHttp,
    metadata: &AuthorizationMetadata,
    name: &str,
    redirect: &str,
    scopes: &[String],
) -> Result<Client, OAuthError> {
    let endpoint = metadata
        .registration_endpoint
        .as_deref()
        .ok_or(OAuthError::NoRegistration)?;
    metadata.check_code_flow()?;
    let url = endpoint_url(endpoint, "registration")?;
    let mut request = serde_json::json!({
        "client_name": name,
        "redirect_uris": [redirect],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
        "response_types": ["code"],
        "application_type": APPLICATION_TYPE,
    });
    if !scopes.is_empty() {
        request["scope"] = scopes.join(" ").into();
    }
    let answer = http.send(&url, http.post_json(&url, &request)).await?;
    if !answer.is_success() {
        return Err(OAuthError::Registration {
            said: format!("HTTP {}: {}", answer.status, said(&answer.body)),
        });
    }
    #[derive(serde::Deserialize)]
    struct Registered {
        client_id: String,
        client_secret: Option<String>,
    }
    let registered: Registered =
        serde_json::from_slice(&answer.body).map_err(|e| OAuthError::Registration {
            said: format!("its answer has no client id ({e})"),
        })?;
    Ok(Client {
        id: registered.client_id,
        // Some servers answer a public client with an empty secret: none.
        secret: registered.client_secret.filter(|s| !s.is_empty()),
    })
}

/// The token endpoint, as one client of it.
pub(super) struct TokenEndpoint<'a> {
    pub http: &'a OAuthHttp,
    pub url: Url,
    pub client: &'a Client,
    /// Where a client secret goes: the form (`client_secret_post`) or HTTP Basic.
    pub secret_in_body: bool,
    /// RFC 8707: sent with every token request, refreshes too.
    pub resource: &'a str,
}

impl TokenEndpoint<'_> {
    pub fn new<'a>(
        http: &'a OAuthHttp,
        metadata: &AuthorizationMetadata,
        client: &'a Client,
        resource: &'a str,
    ) -> Result<TokenEndpoint<'a>, OAuthError> {
        Ok(TokenEndpoint {
            http,
            url: endpoint_url(&metadata.token_endpoint, "token")?,
            client,
            secret_in_body: metadata.secret_in_body(),
            resource,
        })
    }

    /// The authorization code, with the PKCE verifier that proves this process asked.
    pub async fn exchange_code(
        &self,
        code: &str,
        verifier: &str,
        redirect: &str,
    ) -> Result<TokenResponse, OAuthError> {
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("code_verifier", verifier),
            ("redirect_uri", redirect),
        ];
        self.request(&form).await.map_err(|refusal| match refusal {
            Refusal::Said { said, .. } => OAuthError::Token { said },
            Refusal::Failed(e) => e,
        })
    }

    /// A new access token for `refresh_token`. A refresh token the server no longer takes
    /// (`invalid_grant`) means the person must sign in again; anything else may pass.
    pub async fn refresh(&self, refresh_token: &str) -> Result<TokenResponse, OAuthError> {
        let form = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
        ];
        self.request(&form).await.map_err(|refusal| match refusal {
            Refusal::Said { error, .. } if error == "invalid_grant" => OAuthError::SignInAgain,
            Refusal::Said { said, .. } => OAuthError::Token { said },
            Refusal::Failed(e) => e,
        })
    }

    async fn request(&self, grant: &[(&str, &str)]) -> Result<TokenResponse, Refusal> {
        let mut form: Vec<(&str, &str)> = grant.to_vec();
        let mut basic = None;
        match &self.client.secret {
            Some(secret) if !self.secret_in_body => {
                basic = Some(basic_auth(&self.client.id, secret))
            }
            Some(secret) => form.extend([
                ("client_id", self.client.id.as_str()),
                ("client_secret", secret),
            ]),
            None => form.push(("client_id", &self.client.id)),
        }
        form.push(("resource", self.resource));
        let mut request = self.http.post_form(&self.url, &form);
        if let Some(basic) = basic {
            request = request.header(reqwest::header::AUTHORIZATION, basic);
        }
        let answer = self
            .http
            .send(&self.url, request)
            .await
            .map_err(Refusal::Failed)?;
        if !answer.is_success() {
            let error = serde_json::from_slice::<serde_json::Value>(&answer.body)
                .ok()
                .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_string))
                .unwrap_or_default();
            // Only the error fields, never the body: an answer here may carry a token.
            let said = match error.is_empty() {
                true => format!("HTTP {}", answer.status),
                false => format!("HTTP {}: {}", answer.status, said(&answer.body)),
            };
            return Err(Refusal::Said { error, said });
        }
        // serde's message names where the answer went wrong, never a value in it.
        serde_json::from_slice(&answer.body).map_err(|e| {
            Refusal::Failed(OAuthError::Token {
                said: format!("its answer from {} is not a token: {e}", shown(&self.url)),
            })
        })
    }
}

/// A token request the server refused (`error` is its OAuth error code), or one that
/// failed on the way.
enum Refusal {
    Said { error: String, said: String },
    Failed(OAuthError),
}

/// RFC 6749 §2.3.1: id and secret form-encoded, then joined for HTTP Basic.
fn basic_auth(id: &str, secret: &str) -> String {
    let encode = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let pair = format!("{}:{}", encode(id), encode(secret));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

fn endpoint_url(endpoint: &str, which: &str) -> Result<Url, OAuthError> {
    Url::parse(endpoint).map_err(|e| OAuthError::BadMetadata {
        url: endpoint.to_string(),
        reason: format!("its {which} endpoint is not an address: {e}"),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn basic_auth_form_encodes_before_joining() {
        // RFC 6749 §2.3.1: "a:b" as an id is sent as a%3Ab.
        assert_eq!(super::basic_auth("a:b", "s p"), "Basic YSUzQWI6cytw");
    }
}
