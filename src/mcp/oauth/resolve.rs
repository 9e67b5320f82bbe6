//! The names OAuth's requests go to, resolved with a check. Discovery checks the addresses
//! a server names (`discovery`), but a name of the server's choosing may resolve to a
//! loopback, private or link-local address — a cloud's metadata service, a service on the
//! person's machine. What another name may resolve to follows where the server itself is:
//! public addresses always, private ones only from a server on a private network, loopback
//! only from a server on loopback, link-local and reserved ones never. The names the person
//! chose resolve as they are: the server's own host, and the proxy's (`HTTPS_PROXY` and the
//! rest, often a company's host on its private network).
//!
//! Through a proxy, the proxy resolves the name: the same check runs on this machine's
//! answer before the request leaves (`Guard::check_proxied`). A name this machine cannot
//! resolve at all is left to the proxy — behind a company's proxy, outside names often only
//! resolve there.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use hyper_util::client::proxy::matcher::Matcher;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use tokio::sync::OnceCell;
use url::{Host, Url};

use super::discovery::{embedded_v4, in_shared_space, restricted_v4, restricted_v6};

/// Where an address is, from the farthest to the nearest: a server may be sent to its own
/// reach and any farther one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Reach {
    Public,
    Private,
    Loopback,
}

/// The person's proxy settings, read as reqwest reads them (`HTTP_PROXY`, `HTTPS_PROXY`,
/// `ALL_PROXY`, `NO_PROXY`, in either case), so the check sees the requests the way the
/// client sends them.
pub(super) struct Proxies {
    matcher: Matcher,
    /// Whether the client reads the same settings itself; when not (tests), it is told
    /// the one proxy given, if any.
    from_env: bool,
    given: Option<String>,
}

impl Proxies {
    pub fn from_system() -> Proxies {
        Proxies {
            matcher: Matcher::from_system(),
            from_env: true,
            given: None,
        }
    }

    /// One proxy for every request.
    #[cfg(test)]
    pub fn all(proxy: &str) -> Proxies {
        Proxies {
            matcher: Matcher::builder().all(proxy.to_string()).build(),
            from_env: false,
            given: Some(proxy.to_string()),
        }
    }

    /// No proxy, whatever the environment says.
    #[cfg(test)]
    pub fn none() -> Proxies {
        Proxies {
            matcher: Matcher::builder().build(),
            from_env: false,
            given: None,
        }
    }

    /// `builder` sending its requests through these proxies.
    pub fn apply(
        &self,
        builder: reqwest::ClientBuilder,
    ) -> Result<reqwest::ClientBuilder, reqwest::Error> {
        if self.from_env {
            return Ok(builder);
        }
        match &self.given {
            None => Ok(builder.no_proxy()),
            Some(proxy) => Ok(builder.no_proxy().proxy(reqwest::Proxy::all(proxy)?)),
        }
    }

    /// The host of the proxy a request to `url` goes through; `None` when it goes direct.
    pub fn host_for(&self, url: &Url) -> Option<String> {
        let uri: hyper::Uri = url.as_str().parse().ok()?;
        let proxy = self.matcher.intercept(&uri)?;
        proxy.uri().host().map(normalized)
    }

    /// The hosts of the proxies any request may go through (one for `http`, one for
    /// `https` at most), found by asking where a request to a name that cannot exist would
    /// go (`NO_PROXY` would have to name `.invalid` to hide them).
    fn hosts(&self) -> Vec<String> {
        [
            "http://linggen-probe.invalid/",
            "https://linggen-probe.invalid/",
        ]
        .iter()
        .filter_map(|probe| Url::parse(probe).ok())
        .filter_map(|probe| self.host_for(&probe))
        .collect()
    }
}

/// A host as names are compared here: lower case, without a trailing dot or IPv6's
/// brackets.
fn normalized(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// A name that resolves only to addresses the server may not send linggen to.
#[derive(Debug, thiserror::Error)]
#[error("`{name}` resolves only to addresses this server may not send linggen to ({first})")]
pub(super) struct Refused {
    name: String,
    /// The first address found, to show.
    first: String,
}

/// Resolves names for the OAuth requests of the server at one address.
pub(super) struct GuardedResolver {
    guard: Arc<Guard>,
}

/// What a name may resolve to for one server's sign-in.
pub(super) struct Guard {
    /// The proxies' hosts: the person chose them.
    proxies: Vec<String>,
    /// The server's host.
    server_host: String,
    server_reach: OnceCell<Reach>,
    literal_reach: Option<Reach>,
}

impl GuardedResolver {
    pub fn new(server: &Url, proxies: &Proxies) -> GuardedResolver {
        let server_host = normalized(server.host_str().unwrap_or_default());
        let literal_reach = match server.host() {
            Some(Host::Ipv4(ip)) => Some(reach(IpAddr::V4(ip)).unwrap_or(Reach::Loopback)),
            Some(Host::Ipv6(ip)) => Some(reach(IpAddr::V6(ip)).unwrap_or(Reach::Loopback)),
            Some(Host::Domain(d)) if d == "localhost" || d.ends_with(".localhost") => {
                Some(Reach::Loopback)
            }
            _ => None,
        };
        GuardedResolver {
            guard: Arc::new(Guard {
                proxies: proxies.hosts(),
                server_host,
                server_reach: OnceCell::new(),
                literal_reach,
            }),
        }
    }

    /// The check, for the requests a proxy resolves.
    pub fn guard(&self) -> Arc<Guard> {
        Arc::clone(&self.guard)
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let guard = Arc::clone(&self.guard);
        let name = normalized(name.as_str());
        Box::pin(async move {
            let found = lookup(&name).await?;
            if guard.proxies.contains(&name) {
                return Ok(Box::new(found.into_iter()) as Addrs);
            }
            let kept = guard.allowed(&name, &found).await?;
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

impl Guard {
    /// The addresses of `found` (what `name` resolved to) this server may send linggen to
    /// (all of them for its own host); an error naming the name when there are none.
    async fn allowed(&self, name: &str, found: &[SocketAddr]) -> Result<Vec<SocketAddr>, Refused> {
        if name == self.server_host {
            return Ok(found.to_vec());
        }
        let limit = match self.literal_reach {
            Some(limit) => limit,
            None => {
                *self
                    .server_reach
                    .get_or_init(|| reach_of_name(&self.server_host))
                    .await
            }
        };
        let kept: Vec<SocketAddr> = found
            .iter()
            .copied()
            .filter(|addr| reach(addr.ip()).is_some_and(|at| at <= limit))
            .collect();
        if kept.is_empty() {
            return Err(Refused {
                name: name.to_string(),
                first: found
                    .first()
                    .map(|a| a.ip().to_string())
                    .unwrap_or_default(),
            });
        }
        Ok(kept)
    }

    /// The check for a request that a proxy sends on (it resolves `host` itself): what
    /// this machine resolves `host` to must pass as a direct request's would (the proxy's
    /// own name is no exception here: it is chosen to be reached, not to be asked for).
    /// Addresses written out are discovery's to check; a name that does not resolve here
    /// is left to the proxy.
    pub async fn check_proxied(&self, host: &str) -> Result<(), Refused> {
        let name = normalized(host);
        if name.parse::<IpAddr>().is_ok() {
            return Ok(());
        }
        match lookup(&name).await {
            Ok(found) if !found.is_empty() => self.allowed(&name, &found).await.map(drop),
            _ => Ok(()),
        }
    }
}

async fn lookup(name: &str) -> std::io::Result<Vec<SocketAddr>> {
    Ok(tokio::net::lookup_host((name, 0)).await?.collect())
}

/// The nearest reach among the addresses the server's own name resolves to (a company's
/// server on its private network may send linggen to another host there); public when it
/// does not resolve.
async fn reach_of_name(host: &str) -> Reach {
    let found = lookup(host).await.unwrap_or_default();
    found
        .iter()
        .filter_map(|addr| reach(addr.ip()))
        .max()
        .unwrap_or(Reach::Public)
}

/// Where `ip` is; `None` for addresses never asked by name: the ones discovery refuses as
/// written (`restricted_v4`, `restricted_v6`: link-local, as a cloud's metadata service,
/// unspecified, multicast, broadcast, the reserved blocks) that are neither loopback nor
/// private.
fn reach(ip: IpAddr) -> Option<Reach> {
    // An IPv6 address carrying an IPv4 one is where that one is.
    let ip = match ip {
        IpAddr::V6(v6) => embedded_v4(v6).map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    };
    let (restricted, private) = match ip {
        IpAddr::V4(v4) => (restricted_v4(v4), v4.is_private() || in_shared_space(v4)),
        IpAddr::V6(v6) => (restricted_v6(v6), v6.is_unique_local()),
    };
    if ip.is_loopback() {
        Some(Reach::Loopback)
    } else if private {
        Some(Reach::Private)
    } else if restricted {
        None
    } else {
        Some(Reach::Public)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn addresses_are_placed_by_how_near_they_are() {
        assert_eq!(reach(ip("93.184.216.34")), Some(Reach::Public));
        assert_eq!(reach(ip("10.1.2.3")), Some(Reach::Private));
        assert_eq!(reach(ip("100.64.0.1")), Some(Reach::Private));
        assert_eq!(reach(ip("127.0.0.1")), Some(Reach::Loopback));
        assert_eq!(reach(ip("::1")), Some(Reach::Loopback));
        assert_eq!(reach(ip("fd00::1")), Some(Reach::Private));
        assert_eq!(reach(ip("::ffff:127.0.0.1")), Some(Reach::Loopback));
        for never in [
            "169.254.169.254",
            "0.0.0.0",
            "224.0.0.1",
            "fe80::1",
            "::ffff:169.254.1.1",
        ] {
            assert_eq!(reach(ip(never)), None, "{never}");
        }
    }

    async fn resolve(server: &str, name: &str) -> Result<Vec<SocketAddr>, String> {
        let resolver = GuardedResolver::new(&Url::parse(server).unwrap(), &Proxies::none());
        let name = Name::from_str(name).unwrap();
        match resolver.resolve(name).await {
            Ok(addrs) => Ok(addrs.collect()),
            Err(e) => Err(e.to_string()),
        }
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused_unless_the_server_is_on_loopback() {
        // `.invalid` never resolves (RFC 6761): a server there counts as public.
        let refused = resolve("https://mcp.invalid/mcp", "localhost").await;
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.starts_with("`localhost` resolves only to addresses")),
            "{refused:?}"
        );
        let allowed = resolve("http://127.0.0.1:9/mcp", "localhost")
            .await
            .unwrap();
        assert!(allowed.iter().all(|a| a.ip().is_loopback()), "{allowed:?}");
        // The server's own name resolves as it is.
        assert!(resolve("http://localhost:9/mcp", "localhost").await.is_ok());
    }
}
