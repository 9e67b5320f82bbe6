//! Finding a server's authorization server, as the MCP authorization spec (2025-06-18,
//! 2025-11-25) and rmcp do: the protected-resource metadata (RFC 9728), pointed at by the
//! `WWW-Authenticate` of a 401 or found at its well-known addresses; then the authorization
//! server's metadata (RFC 8414, or OpenID's); failing both, the server's own well-known
//! addresses; failing those, the 2025-03-26 fallback of `/authorize`, `/token` and
//! `/register` at the server's origin.
//!
//! Addresses a server names are checked before they are asked: a public server cannot send
//! linggen to a loopback or private address (nor a cloud's metadata host), and an `https`
//! server cannot point to plain `http`. What a name resolves to is checked the same way when
//! it is resolved (`resolve`).

use std::collections::{BTreeMap, HashSet};
use std::net::{Ipv4Addr, Ipv6Addr};

use serde::Deserialize;
use url::{Host, Url};

use super::error::{OAuthError, shown};
use super::http::OAuthHttp;

/// An authorization server's metadata (RFC 8414), what linggen uses of it.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct AuthorizationMetadata {
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    pub issuer: Option<String>,
    pub scopes_supported: Option<Vec<String>>,
    pub response_types_supported: Option<Vec<String>>,
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// The rest, read leniently: a field of an unexpected type is as good as absent.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

impl AuthorizationMetadata {
    /// RFC 9207: the server promises `iss` on every redirect back.
    pub fn promises_issuer(&self) -> bool {
        self.other
            .get("authorization_response_iss_parameter_supported")
            .and_then(|v| v.as_bool())
            .unwrap_or(false)
    }

    /// Client secrets go in the form body, not HTTP Basic: only when the server offers
    /// `client_secret_post` and not `client_secret_basic`.
    pub fn secret_in_body(&self) -> bool {
        let methods = self
            .other
            .get("token_endpoint_auth_methods_supported")
            .and_then(|v| v.as_array());
        let offers =
            |name: &str| methods.is_some_and(|m| m.iter().any(|v| v.as_str() == Some(name)));
        offers("client_secret_post") && !offers("client_secret_basic")
    }

    /// Whether the authorization-code flow with PKCE S256 can be run against it. A list
    /// left out is taken as no objection.
    pub fn check_code_flow(&self) -> Result<(), OAuthError> {
        if let Some(types) = &self.response_types_supported
            && !types.iter().any(|t| t == "code")
        {
            return Err(OAuthError::CodeFlowUnsupported);
        }
        if let Some(methods) = &self.code_challenge_methods_supported
            && !methods.iter().any(|m| m == "S256")
        {
            return Err(OAuthError::PkceUnsupported);
        }
        Ok(())
    }
}

/// A protected resource's metadata (RFC 9728); `authorization_server` is an older draft's.
#[derive(Debug, Clone, Deserialize)]
struct ResourceMetadata {
    resource: Option<String>,
    authorization_server: Option<String>,
    authorization_servers: Option<Vec<String>>,
    scopes_supported: Option<Vec<String>>,
}

/// Where the metadata came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    ProtectedResource,
    AuthorizationServer,
    /// Nothing was published: endpoints at the server's origin were assumed.
    Legacy,
}

/// What discovery found.
#[derive(Debug, Clone)]
pub(super) struct Discovered {
    pub metadata: AuthorizationMetadata,
    pub source: Source,
    /// The `resource` indicator (RFC 8707) sent with the authorization and every token
    /// request: the protected resource's own name for itself, else the server's address.
    pub resource: String,
    /// The `scope` of the 401 that pointed at the resource metadata.
    pub challenge_scopes: Vec<String>,
    /// The resource metadata's `scopes_supported`.
    pub resource_scopes: Vec<String>,
}

impl Discovered {
    /// The scopes a first sign-in asks for, as rmcp picks them: what the server's 401 and
    /// its resource metadata ask for; else everything the authorization server offers;
    /// else none (the server's default). `offline_access` is added when offered, so
    /// OpenID-style servers issue a refresh token.
    pub fn scopes(&self) -> Vec<String> {
        let mut scopes: Vec<String> = Vec::new();
        for scope in self.challenge_scopes.iter().chain(&self.resource_scopes) {
            if !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
        let offered = self.metadata.scopes_supported.clone().unwrap_or_default();
        if scopes.is_empty() {
            scopes = offered.clone();
        }
        let offline = "offline_access";
        if !scopes.is_empty()
            && !scopes.iter().any(|s| s == offline)
            && offered.iter().any(|s| s == offline)
        {
            scopes.push(offline.to_string());
        }
        scopes
    }
}

/// What a discovery run learns on its way.
struct Run<'a> {
    http: &'a OAuthHttp,
    base: Url,
    /// Every address asked for resource metadata, so none is asked twice.
    asked: HashSet<Url>,
    challenge_scopes: Vec<String>,
    resource_scopes: Vec<String>,
    resource: Option<String>,
}

/// Finds the authorization server of the MCP server at `base`.
pub(super) async fn discover(http: &OAuthHttp, base: &Url) -> Result<Discovered, OAuthError> {
    let mut run = Run {
        http,
        base: base.clone(),
        asked: HashSet::new(),
        challenge_scopes: Vec::new(),
        resource_scopes: Vec::new(),
        resource: None,
    };
    let (metadata, source) = if let Some(metadata) = run.via_resource_metadata().await? {
        (metadata, Source::ProtectedResource)
    } else if let Some(metadata) = run.authorization_server(base, None).await? {
        (metadata, Source::AuthorizationServer)
    } else {
        (legacy_metadata(base), Source::Legacy)
    };
    Ok(Discovered {
        metadata,
        source,
        resource: run.resource.unwrap_or_else(|| base.to_string()),
        challenge_scopes: run.challenge_scopes,
        resource_scopes: run.resource_scopes,
    })
}

impl Run<'_> {
    /// RFC 9728: the resource metadata, then the authorization servers it names.
    async fn via_resource_metadata(&mut self) -> Result<Option<AuthorizationMetadata>, OAuthError> {
        let Some((url, document)) = self.resource_metadata().await? else {
            return Ok(None);
        };
        self.resource = Some(document.resource.clone().unwrap_or_default());
        self.resource_scopes = document.scopes_supported.clone().unwrap_or_default();
        let mut servers: Vec<String> = Vec::new();
        let named = document.authorization_server.iter();
        for server in named.chain(document.authorization_servers.iter().flatten()) {
            let server = server.trim();
            if !server.is_empty() && !servers.iter().any(|s| s == server) {
                servers.push(server.to_string());
            }
        }
        if servers.is_empty() {
            return Ok(None);
        }
        for server in &servers {
            let Some(candidate) = Url::parse(server).or_else(|_| url.join(server)).ok() else {
                continue;
            };
            // A resource at an IPv6 unique-local address may name its own origin.
            let private = matches!(candidate.host(), Some(Host::Ipv6(ip)) if ip.is_unique_local())
                && same_origin(&self.base, &candidate);
            if !allowed_metadata_url(&self.base, &candidate, private) {
                continue;
            }
            let found = if candidate.path().contains("/.well-known/") {
                self.authorization_metadata(&candidate, None).await?
            } else {
                // The issuer exactly as named (a non-root trailing slash is kept).
                self.authorization_server(&candidate, Some(candidate.as_str()))
                    .await?
            };
            if found.is_some() {
                return Ok(found);
            }
        }
        // Falling back to the server's own origin would send the person somewhere the
        // resource never named.
        Err(OAuthError::NoAuthorizationServer {
            url: shown(&url),
            servers: servers.join(", "),
        })
    }

    /// The resource metadata document: where the server's 401 points, else at the
    /// well-known addresses (whose own 401 may point elsewhere again).
    async fn resource_metadata(&mut self) -> Result<Option<(Url, ResourceMetadata)>, OAuthError> {
        let base = self.base.clone();
        let probe = self.http.discovery_get(&base).await?;
        if probe.status == 401
            && let Some(pointed) = self.challenge_pointer(&probe.headers)
        {
            self.asked.insert(pointed.clone());
            if let Some(document) = self.fetch_resource_metadata(&pointed, true).await? {
                return Ok(Some((pointed, document)));
            }
        }
        for candidate in protected_resource_urls(&base) {
            if !self.asked.insert(candidate.clone()) {
                continue;
            }
            let answer = self.http.discovery_get(&candidate).await?;
            match answer.status {
                200 => {
                    if let Some(document) =
                        self.read_resource_metadata(&candidate, &answer.body, false)?
                    {
                        return Ok(Some((candidate, document)));
                    }
                }
                401 => {
                    let Some(pointed) = self.challenge_pointer(&answer.headers) else {
                        continue;
                    };
                    if !self.asked.insert(pointed.clone()) {
                        continue;
                    }
                    if let Some(document) = self.fetch_resource_metadata(&pointed, false).await? {
                        return Ok(Some((pointed, document)));
                    }
                }
                _ => {}
            }
        }
        Ok(None)
    }

    /// The `resource_metadata` a 401's `WWW-Authenticate` points at; its `scope` is kept
    /// for the sign-in.
    fn challenge_pointer(&mut self, headers: &reqwest::header::HeaderMap) -> Option<Url> {
        for value in headers.get_all(reqwest::header::WWW_AUTHENTICATE) {
            let Ok(value) = value.to_str() else { continue };
            let challenge = Challenge::parse(value);
            let Some(pointed) = challenge
                .resource_metadata
                .as_deref()
                .and_then(|v| resource_metadata_url(v, &self.base))
            else {
                continue;
            };
            if let Some(scope) = challenge.scope {
                let scopes: Vec<String> = scope.split_whitespace().map(str::to_string).collect();
                if !scopes.is_empty() {
                    self.challenge_scopes = scopes;
                }
            }
            return Some(pointed);
        }
        None
    }

    async fn fetch_resource_metadata(
        &self,
        url: &Url,
        advertised: bool,
    ) -> Result<Option<ResourceMetadata>, OAuthError> {
        let answer = self.http.discovery_get(url).await?;
        if answer.status != 200 {
            return Ok(None);
        }
        self.read_resource_metadata(url, &answer.body, advertised)
    }

    /// The document at `url` as this resource's metadata. A document that is not one, or
    /// is another resource's, is an error where the server pointed (`advertised`): there
    /// is nothing better to try; where linggen only guessed, it rules out that address.
    fn read_resource_metadata(
        &self,
        url: &Url,
        body: &[u8],
        advertised: bool,
    ) -> Result<Option<ResourceMetadata>, OAuthError> {
        let Ok(document) = serde_json::from_slice::<ResourceMetadata>(body) else {
            return Ok(None);
        };
        let problem = if document.resource.is_none()
            && document.authorization_server.is_none()
            && document.authorization_servers.is_none()
        {
            Some("it names neither a resource nor an authorization server".to_string())
        } else {
            resource_problem(&self.base, document.resource.as_deref())
        };
        match problem {
            None => Ok(Some(document)),
            Some(reason) if advertised => Err(OAuthError::BadMetadata {
                url: shown(url),
                reason,
            }),
            Some(_) => Ok(None),
        }
    }

    /// RFC 8414 / OpenID metadata of the authorization server at `issuer`, trying its
    /// well-known addresses in the spec's order.
    async fn authorization_server(
        &self,
        issuer: &Url,
        expected_issuer: Option<&str>,
    ) -> Result<Option<AuthorizationMetadata>, OAuthError> {
        for url in authorization_server_urls(issuer) {
            if let Some(metadata) = self.authorization_metadata(&url, expected_issuer).await? {
                return Ok(Some(metadata));
            }
        }
        Ok(None)
    }

    async fn authorization_metadata(
        &self,
        url: &Url,
        expected_issuer: Option<&str>,
    ) -> Result<Option<AuthorizationMetadata>, OAuthError> {
        let answer = self.http.discovery_get(url).await?;
        if answer.status != 200 {
            return Ok(None);
        }
        let Ok(metadata) = serde_json::from_slice::<AuthorizationMetadata>(&answer.body) else {
            return Ok(None);
        };
        let expected = expected_issuer
            .map(str::to_string)
            .or_else(|| issuer_of_metadata_url(url));
        if let Some(expected) = expected {
            let Some(received) = metadata.issuer.as_deref() else {
                return Err(OAuthError::MissingIssuer { expected });
            };
            if !same_issuer(received, &expected) {
                return Err(OAuthError::IssuerMismatch {
                    expected,
                    received: received.to_string(),
                });
            }
        }
        Ok(Some(metadata))
    }
}

/// The 2025-03-26 fallback: `/authorize`, `/token` and `/register` at the origin.
fn legacy_metadata(base: &Url) -> AuthorizationMetadata {
    let at = |path: &str| at_path(base, path).to_string();
    AuthorizationMetadata {
        authorization_endpoint: at("/authorize"),
        token_endpoint: at("/token"),
        registration_endpoint: Some(at("/register")),
        ..Default::default()
    }
}

/// `base` with `path` for its path, no query, no fragment.
fn at_path(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.set_path(path);
    url
}

/// Where RFC 9728 puts a resource's metadata: inserted before its path, appended to it,
/// then at the root.
pub(super) fn protected_resource_urls(base: &Url) -> Vec<Url> {
    let well_known = "/.well-known/oauth-protected-resource";
    let path = base.path().trim_matches('/');
    let mut paths = Vec::new();
    if !path.is_empty() {
        paths.push(format!("{well_known}/{path}"));
        paths.push(format!("/{path}{well_known}"));
    }
    paths.push(well_known.to_string());
    paths.iter().map(|p| at_path(base, p)).collect()
}

/// Where an authorization server's metadata may be, in the order of the 2025-11-25 spec
/// (§4.3): RFC 8414 and OpenID with the issuer's path inserted, OpenID with it appended,
/// then RFC 8414 at the root.
pub(super) fn authorization_server_urls(issuer: &Url) -> Vec<Url> {
    let oauth = "/.well-known/oauth-authorization-server";
    let openid = "/.well-known/openid-configuration";
    let path = issuer.path().trim_matches('/');
    let paths = if path.is_empty() {
        vec![oauth.to_string(), openid.to_string()]
    } else {
        vec![
            format!("{oauth}/{path}"),
            format!("{openid}/{path}"),
            format!("/{path}{openid}"),
            oauth.to_string(),
        ]
    };
    paths.iter().map(|p| at_path(issuer, p)).collect()
}

/// The issuer a metadata address implies (RFC 8414 §3.3): the metadata there must name it.
fn issuer_of_metadata_url(url: &Url) -> Option<String> {
    let oauth = "/.well-known/oauth-authorization-server";
    let openid = "/.well-known/openid-configuration";
    let path = url.path();
    let issuer_path = if path == oauth || path == openid {
        ""
    } else if let Some(rest) = path.strip_prefix(&format!("{oauth}/")) {
        rest
    } else if let Some(rest) = path.strip_prefix(&format!("{openid}/")) {
        rest
    } else if let Some(front) = path.strip_suffix(openid) {
        front.trim_start_matches('/')
    } else {
        return None;
    };
    let mut issuer = at_path(url, "");
    if !issuer_path.is_empty() {
        issuer.set_path(&format!("/{issuer_path}"));
    }
    Some(issuer.to_string())
}

/// Issuers are compared exactly, but for a trailing slash on a bare origin.
fn same_issuer(received: &str, expected: &str) -> bool {
    let bare = |issuer: &str| -> String {
        match issuer.strip_suffix('/') {
            Some(without)
                if Url::parse(without).is_ok_and(|u| u.path().is_empty() || u.path() == "/") =>
            {
                without.to_string()
            }
            _ => issuer.to_string(),
        }
    };
    received == expected || bare(received) == bare(expected)
}

/// Why the metadata's `resource` is not the server at `base` (RFC 9728 §3.3), if it is
/// not: it must be `base` or a path above it, at the same origin.
fn resource_problem(base: &Url, resource: Option<&str>) -> Option<String> {
    let Some(resource) = resource else {
        return Some("it has no `resource`".into());
    };
    let Ok(named) = Url::parse(resource) else {
        return Some(format!("its `resource` ({resource}) is not an address"));
    };
    if named.fragment().is_some() {
        return Some("its `resource` has a fragment".into());
    }
    let (expected, actual) = (base.path(), named.path());
    let covers = base == &named
        || (same_origin(base, &named)
            && (expected == actual
                || (expected.starts_with(actual)
                    && (actual.ends_with('/')
                        || expected.as_bytes().get(actual.len()) == Some(&b'/')))));
    (!covers).then(|| format!("it describes {}, not {}", shown(&named), shown(base)))
}

pub(super) fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str()
            .zip(b.host_str())
            .is_some_and(|(a, b)| a.eq_ignore_ascii_case(b))
        && a.port_or_known_default() == b.port_or_known_default()
}

/// A 401's `resource_metadata`, resolved against the server's address: its own origin
/// always; elsewhere only by the host policy, and never from `https` down to `http`.
fn resource_metadata_url(value: &str, base: &Url) -> Option<Url> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    let url = Url::parse(value).or_else(|_| base.join(value)).ok()?;
    if is_http(&url) && same_origin(base, &url) {
        return Some(url);
    }
    if base.scheme() == "https" && url.scheme() != "https" {
        return None;
    }
    allowed_metadata_url(base, &url, false).then_some(url)
}

fn is_http(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https") && url.host_str().is_some()
}

/// Whether discovery may ask `url`, reached from the server at `base`: any public host;
/// a loopback one only from a loopback server; a private one only when `private` allows;
/// never link-local, a cloud's metadata host or other reserved addresses.
fn allowed_metadata_url(base: &Url, url: &Url, private: bool) -> bool {
    let Some(host) = url.host().filter(|_| is_http(url)) else {
        return false;
    };
    if !restricted_host(&host) {
        return true;
    }
    let is_private = match host {
        Host::Ipv4(ip) => ip.is_private() || in_shared_space(ip),
        Host::Ipv6(ip) => ip.is_unique_local(),
        Host::Domain(_) => false,
    };
    if private && is_private {
        return true;
    }
    base.host().is_some_and(|h| loopback_host(&h)) && loopback_host(&host)
}

const CLOUD_METADATA_HOSTS: [&str; 3] = [
    "metadata",
    "metadata.google.internal",
    "metadata.azure.internal",
];

fn restricted_host(host: &Host<&str>) -> bool {
    match host {
        Host::Domain(domain) => {
            let domain = domain.trim_end_matches('.').to_ascii_lowercase();
            domain == "localhost"
                || domain.ends_with(".localhost")
                || CLOUD_METADATA_HOSTS.contains(&domain.as_str())
        }
        Host::Ipv4(ip) => restricted_v4(*ip),
        Host::Ipv6(ip) => restricted_v6(*ip),
    }
}

/// 100.64.0.0/10, carrier-grade NAT.
pub(super) fn in_shared_space(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    a == 100 && (64..=127).contains(&b)
}

pub(super) fn restricted_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_unspecified()
        || ip.is_multicast()
        || a == 0
        || a >= 240
        || in_shared_space(ip)
        || (a == 198 && matches!(b, 18 | 19))
}

pub(super) fn restricted_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(ip) {
        return restricted_v4(v4);
    }
    let s = ip.segments();
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xfe00) == 0xfc00
        || s[..2] == [0x2001, 0]
        || s[..3] == [0x64, 0xff9b, 1]
}

/// The IPv4 address inside an IPv4-mapped, -compatible, NAT64 or 6to4 address.
pub(super) fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let [a, b, c, d, e, f, g, h] = ip.segments();
    let low = Ipv4Addr::from((u32::from(g) << 16) | u32::from(h));
    match [a, b, c, d, e, f] {
        [0, 0, 0, 0, 0, 0xffff] | [0x64, 0xff9b, 0, 0, 0, 0] => Some(low),
        [0, 0, 0, 0, 0, 0] if !ip.is_loopback() && !ip.is_unspecified() => Some(low),
        [0x2002, ..] => Some(Ipv4Addr::from((u32::from(b) << 16) | u32::from(c))),
        _ => None,
    }
}

fn loopback_host(host: &Host<&str>) -> bool {
    match host {
        Host::Domain(domain) => {
            let domain = domain.trim_end_matches('.').to_ascii_lowercase();
            domain == "localhost" || domain.ends_with(".localhost")
        }
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => ip.is_loopback(),
    }
}

/// The parameters of a `Bearer` challenge that discovery uses (RFC 6750 §3, RFC 9728 §5.1).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Challenge {
    pub resource_metadata: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
}

impl Challenge {
    /// Reads `name=value` and `name="quoted \"value\""` parameters, names in any case.
    pub fn parse(header: &str) -> Challenge {
        let mut challenge = Challenge::default();
        let mut rest = header;
        while let Some(eq) = rest.find('=') {
            let name = rest[..eq]
                .rsplit(|c: char| c == ',' || c.is_whitespace())
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            let (value, used) = param_value(&rest[eq + 1..]);
            rest = &rest[eq + 1 + used..];
            let slot = match name.as_str() {
                "resource_metadata" => &mut challenge.resource_metadata,
                "scope" => &mut challenge.scope,
                "error" => &mut challenge.error,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(value);
            }
        }
        challenge
    }
}

/// A parameter's value (quoted or a token) at the start of `text`, and the bytes it took.
fn param_value(text: &str) -> (String, usize) {
    let trimmed = text.trim_start();
    let lead = text.len() - trimmed.len();
    if let Some(quoted) = trimmed.strip_prefix('"') {
        let mut value = String::new();
        let mut escaped = false;
        for (i, c) in quoted.char_indices() {
            match (escaped, c) {
                (true, c) => {
                    value.push(c);
                    escaped = false;
                }
                (false, '\\') => escaped = true,
                (false, '"') => return (value, lead + 1 + i + 1),
                (false, c) => value.push(c),
            }
        }
        return (value, text.len());
    }
    let end = trimmed
        .find(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .unwrap_or(trimmed.len());
    (trimmed[..end].to_string(), lead + end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn strings(urls: Vec<Url>) -> Vec<String> {
        urls.iter().map(Url::to_string).collect()
    }

    #[test]
    fn resource_metadata_is_looked_for_inserted_appended_then_at_the_root() {
        assert_eq!(
            strings(protected_resource_urls(&url(
                "https://a.example/v1/mcp/?x=1"
            ))),
            [
                "https://a.example/.well-known/oauth-protected-resource/v1/mcp",
                "https://a.example/v1/mcp/.well-known/oauth-protected-resource",
                "https://a.example/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            strings(protected_resource_urls(&url("http://127.0.0.1:8080"))),
            ["http://127.0.0.1:8080/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn authorization_server_metadata_is_looked_for_in_the_specs_order() {
        assert_eq!(
            strings(authorization_server_urls(&url(
                "https://auth.example/tenant1/"
            ))),
            [
                "https://auth.example/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example/.well-known/openid-configuration/tenant1",
                "https://auth.example/tenant1/.well-known/openid-configuration",
                "https://auth.example/.well-known/oauth-authorization-server",
            ]
        );
        assert_eq!(
            strings(authorization_server_urls(&url("https://auth.example"))),
            [
                "https://auth.example/.well-known/oauth-authorization-server",
                "https://auth.example/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn each_metadata_address_implies_its_issuer() {
        let issuer = |u: &str| issuer_of_metadata_url(&url(u));
        assert_eq!(
            issuer("https://a.example/.well-known/oauth-authorization-server/t1").as_deref(),
            Some("https://a.example/t1")
        );
        assert_eq!(
            issuer("https://a.example/t1/.well-known/openid-configuration").as_deref(),
            Some("https://a.example/t1")
        );
        assert_eq!(
            issuer("https://a.example/.well-known/openid-configuration").as_deref(),
            Some("https://a.example/")
        );
        assert_eq!(issuer("https://a.example/meta.json"), None);
        assert!(same_issuer("https://a.example", "https://a.example/"));
        assert!(!same_issuer(
            "https://a.example/t1",
            "https://a.example/t1/"
        ));
        assert!(!same_issuer("https://evil.example", "https://a.example/"));
    }

    #[test]
    fn the_legacy_fallback_uses_the_servers_origin() {
        let metadata = legacy_metadata(&url("https://mcp.example/v1/mcp?k=1"));
        assert_eq!(
            metadata.authorization_endpoint,
            "https://mcp.example/authorize"
        );
        assert_eq!(metadata.token_endpoint, "https://mcp.example/token");
        assert_eq!(
            metadata.registration_endpoint.as_deref(),
            Some("https://mcp.example/register")
        );
    }

    #[test]
    fn a_challenge_gives_its_pointer_scope_and_error() {
        let challenge = Challenge::parse(
            r#"Bearer error="invalid_token", scope="read  write", Resource_Metadata="https://a.example/.well-known/oauth-protected-resource/mcp""#,
        );
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("https://a.example/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(challenge.scope.as_deref(), Some("read  write"));
        assert_eq!(challenge.error.as_deref(), Some("invalid_token"));
        let bare = Challenge::parse(r#"Bearer resource_metadata=/meta, realm="a\"b""#);
        assert_eq!(bare.resource_metadata.as_deref(), Some("/meta"));
        assert_eq!(bare.scope, None);
    }

    #[test]
    fn a_server_cannot_point_discovery_at_an_internal_address() {
        let public = url("https://mcp.example/mcp");
        let pointed = |v: &str| resource_metadata_url(v, &public).map(|u| u.to_string());
        assert_eq!(
            pointed("/meta").as_deref(),
            Some("https://mcp.example/meta")
        );
        assert!(pointed("https://other.example/meta").is_some());
        assert_eq!(pointed("http://other.example/meta"), None, "https → http");
        assert_eq!(pointed("https://169.254.169.254/latest"), None);
        assert_eq!(pointed("https://127.0.0.1/meta"), None);
        assert_eq!(pointed("https://metadata.google.internal/x"), None);
        assert_eq!(pointed("https://[::ffff:10.0.0.1]/x"), None);
        let local = url("http://127.0.0.1:9/mcp");
        assert!(allowed_metadata_url(
            &local,
            &url("http://localhost:7/"),
            false
        ));
        assert!(!allowed_metadata_url(
            &local,
            &url("http://10.0.0.1/"),
            false
        ));
        assert!(allowed_metadata_url(&local, &url("http://10.0.0.1/"), true));
    }

    #[test]
    fn resource_metadata_must_describe_this_server() {
        let base = url("https://mcp.example/v1/mcp");
        assert_eq!(
            resource_problem(&base, Some("https://mcp.example/v1/mcp")),
            None
        );
        assert_eq!(
            resource_problem(&base, Some("https://mcp.example/v1")),
            None
        );
        assert_eq!(resource_problem(&base, Some("https://mcp.example/")), None);
        assert!(resource_problem(&base, Some("https://mcp.example/v1/m")).is_some());
        assert!(resource_problem(&base, Some("https://evil.example/v1/mcp")).is_some());
        assert!(resource_problem(&base, None).is_some());
    }

    #[test]
    fn scopes_come_from_the_resource_before_the_authorization_server() {
        let mut found = Discovered {
            metadata: AuthorizationMetadata {
                scopes_supported: Some(vec!["all".into(), "offline_access".into()]),
                ..Default::default()
            },
            source: Source::ProtectedResource,
            resource: String::new(),
            challenge_scopes: vec!["read".into()],
            resource_scopes: vec!["read".into(), "write".into()],
        };
        assert_eq!(found.scopes(), ["read", "write", "offline_access"]);
        found.challenge_scopes.clear();
        found.resource_scopes.clear();
        assert_eq!(found.scopes(), ["all", "offline_access"]);
        found.metadata.scopes_supported = None;
        assert!(found.scopes().is_empty());
    }
}
