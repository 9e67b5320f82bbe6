//! The names OAuth's requests go to, resolved with a check. Discovery checks the addresses
//! a server names (`discovery`), but a name of the server's choosing may resolve to a
//! loopback, private or link-local address — a cloud's metadata service, a service on the
//! person's machine. What another name may resolve to follows where the server itself is:
//! public addresses always, private ones only from a server on a private network, loopback
//! only from a server on loopback, link-local and reserved ones never. The server's own
//! host resolves as it is: the person chose it.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

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

/// Resolves names for the OAuth requests of the server at one address.
pub(super) struct GuardedResolver {
    /// The server's host, lower case, without a trailing dot.
    server_host: String,
    server_reach: Arc<OnceCell<Reach>>,
    literal_reach: Option<Reach>,
}

impl GuardedResolver {
    pub fn new(server: &Url) -> GuardedResolver {
        let server_host = server
            .host_str()
            .unwrap_or_default()
            .trim_end_matches('.')
            .to_ascii_lowercase();
        let literal_reach = match server.host() {
            Some(Host::Ipv4(ip)) => Some(reach(IpAddr::V4(ip)).unwrap_or(Reach::Loopback)),
            Some(Host::Ipv6(ip)) => Some(reach(IpAddr::V6(ip)).unwrap_or(Reach::Loopback)),
            Some(Host::Domain(d)) if d == "localhost" || d.ends_with(".localhost") => {
                Some(Reach::Loopback)
            }
            _ => None,
        };
        GuardedResolver {
            server_host,
            server_reach: Arc::default(),
            literal_reach,
        }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let name = name.as_str().trim_end_matches('.').to_ascii_lowercase();
        let own = name == self.server_host;
        let server_host = self.server_host.clone();
        let server_reach = self.server_reach.clone();
        let literal_reach = self.literal_reach;
        Box::pin(async move {
            let found = lookup(&name).await?;
            if own {
                return Ok(Box::new(found.into_iter()) as Addrs);
            }
            let limit = match literal_reach {
                Some(limit) => limit,
                None => {
                    *server_reach
                        .get_or_init(|| reach_of_name(&server_host))
                        .await
                }
            };
            let kept: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|addr| reach(addr.ip()).is_some_and(|at| at <= limit))
                .collect();
            if kept.is_empty() {
                return Err(format!(
                    "`{name}` resolves only to addresses this server may not send linggen to \
                     ({})",
                    found
                        .first()
                        .map(|a| a.ip().to_string())
                        .unwrap_or_default()
                )
                .into());
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
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
        let resolver = GuardedResolver::new(&Url::parse(server).unwrap());
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
