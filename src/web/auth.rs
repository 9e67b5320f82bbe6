//! Who may talk to the mirror: the secret tokens, the one-time tickets a printed link carries,
//! the credentials a page holds, and the `Host` and `Origin` checks that keep other web sites
//! out (DNS rebinding, cross-site requests). See `doc/web.md`.
//!
//! No credential ever travels in a cookie: a browser sends a `127.0.0.1` cookie to every port
//! of that address, so any other local listener would receive it. The page keeps its
//! credential in `sessionStorage` (scoped to the origin, port included) and sends it as
//! `Authorization: Bearer`; the event stream, which cannot carry a header, gets a one-time
//! stream ticket in its query.

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::session::lock;

/// What a request's token allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Full,
    ReadOnly,
}

impl Access {
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Full => "full",
            Access::ReadOnly => "read_only",
        }
    }
}

/// The two tokens of one share: full access, and the viewer's.
pub struct Tokens {
    full: String,
    read_only: String,
}

/// Random bytes per token: 192 bits, well past guessing.
const TOKEN_BYTES: usize = 24;

/// Link tickets not yet used; past this many the oldest stops working (each `/share` prints
/// one, so only a script printing links in a loop gets here).
const MAX_LINK_TICKETS: usize = 64;

/// Page credentials kept; past this many the oldest page must open a fresh link.
const MAX_PAGES: usize = 256;

/// Stream tickets not yet used, and how long one stays valid: the page uses it at once.
const MAX_STREAM_TICKETS: usize = 256;
const STREAM_TICKET_LIFETIME: Duration = Duration::from_secs(60);

impl Tokens {
    /// Fresh tokens from the operating system's CSPRNG.
    pub(in crate::web) fn generate() -> Result<Tokens, String> {
        Ok(Tokens {
            full: random_hex()?,
            read_only: random_hex()?,
        })
    }

    pub fn full(&self) -> &str {
        &self.full
    }

    pub fn read_only(&self) -> &str {
        &self.read_only
    }

    /// The access a presented token grants. Both tokens are always compared, in constant
    /// time, so the answer's timing says nothing about either.
    pub fn check(&self, presented: &str) -> Option<Access> {
        let full = constant_time_eq(presented.as_bytes(), self.full.as_bytes());
        let read_only = constant_time_eq(presented.as_bytes(), self.read_only.as_bytes());
        if full {
            Some(Access::Full)
        } else if read_only {
            Some(Access::ReadOnly)
        } else {
            None
        }
    }
}

/// A secret that works once.
struct Ticket {
    value: String,
    access: Access,
    expires: Option<Instant>,
}

/// Everything that admits a request: the long-lived tokens (for scripts, `Authorization:
/// Bearer`), the one-time link tickets, the pages' credentials and the stream tickets.
pub struct Credentials {
    pub tokens: Tokens,
    links: Mutex<VecDeque<Ticket>>,
    pages: Mutex<VecDeque<Ticket>>,
    streams: Mutex<VecDeque<Ticket>>,
}

impl Credentials {
    pub(in crate::web) fn generate() -> Result<Credentials, String> {
        Ok(Credentials {
            tokens: Tokens::generate()?,
            links: Mutex::new(VecDeque::new()),
            pages: Mutex::new(VecDeque::new()),
            streams: Mutex::new(VecDeque::new()),
        })
    }

    /// The access an `Authorization: Bearer` value grants: a token or a page's credential.
    pub fn check_bearer(&self, presented: &str) -> Option<Access> {
        let page = find(&lock(&self.pages), presented);
        self.tokens.check(presented).or(page)
    }

    /// A fresh one-time ticket for a printed link.
    pub(in crate::web) fn issue_link(&self, access: Access) -> Result<String, String> {
        issue(&self.links, access, None, MAX_LINK_TICKETS)
    }

    /// Spends a link ticket: the page's own credential and its access, or `None` when the
    /// ticket is wrong or was used already.
    pub(in crate::web) fn redeem_link(
        &self,
        ticket: &str,
    ) -> Result<Option<(String, Access)>, String> {
        let Some(access) = take(&self.links, ticket) else {
            return Ok(None);
        };
        let credential = issue(&self.pages, access, None, MAX_PAGES)?;
        Ok(Some((credential, access)))
    }

    /// A one-time ticket for one event stream (`GET /api/events?ticket=`).
    pub(in crate::web) fn issue_stream(&self, access: Access) -> Result<String, String> {
        let expires = Instant::now() + STREAM_TICKET_LIFETIME;
        issue(&self.streams, access, Some(expires), MAX_STREAM_TICKETS)
    }

    /// Spends a stream ticket.
    pub fn redeem_stream(&self, ticket: &str) -> Option<Access> {
        take(&self.streams, ticket)
    }
}

fn issue(
    store: &Mutex<VecDeque<Ticket>>,
    access: Access,
    expires: Option<Instant>,
    max: usize,
) -> Result<String, String> {
    let value = random_hex()?;
    let mut store = lock(store);
    let now = Instant::now();
    store.retain(|t| t.expires.is_none_or(|e| e > now));
    while store.len() >= max {
        store.pop_front();
    }
    store.push_back(Ticket {
        value: value.clone(),
        access,
        expires,
    });
    Ok(value)
}

/// The access of `presented` in `store`, comparing every entry in constant time.
fn find(store: &VecDeque<Ticket>, presented: &str) -> Option<Access> {
    let now = Instant::now();
    store
        .iter()
        .filter(|t| constant_time_eq(presented.as_bytes(), t.value.as_bytes()))
        .filter(|t| t.expires.is_none_or(|e| e > now))
        .map(|t| t.access)
        .next_back()
}

fn take(store: &Mutex<VecDeque<Ticket>>, presented: &str) -> Option<Access> {
    let mut store = lock(store);
    let access = find(&store, presented)?;
    store.retain(|t| !constant_time_eq(presented.as_bytes(), t.value.as_bytes()));
    Some(access)
}

fn random_hex() -> Result<String, String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::getrandom(&mut bytes)
        .map_err(|e| format!("cannot get random bytes for the share token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares without an early exit on the first differing byte. The length is not secret
/// (every token has the same length), so a length mismatch may return at once.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token in an `Authorization: Bearer …` header, if any.
pub fn token_from_authorization(header: &str) -> Option<String> {
    let (scheme, token) = header.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_string())
}

/// Whether a `Host` header names this server. Only an IP address or `localhost` with the
/// bound port passes: a DNS-rebinding attack arrives with the attacker's domain name. On
/// loopback the address must be a loopback one; with `--lan` any IP address of this machine
/// may be used to reach it.
pub fn host_allowed(host: &str, bound: SocketAddr, lan: bool) -> bool {
    let Some((name, port)) = split_host_port(host) else {
        return false;
    };
    if port != bound.port() {
        return false;
    }
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match name.parse::<IpAddr>() {
        Ok(ip) => lan || ip.is_loopback(),
        Err(_) => false,
    }
}

/// Whether a state-changing request comes from the page itself: its `Origin` must be
/// exactly `http://` + the (already checked) `Host`.
pub fn origin_allowed(origin: Option<&str>, host: &str) -> bool {
    origin.is_some_and(|o| o == format!("http://{host}"))
}

/// `host:port` or `[v6]:port`; the port is required (the server never runs on port 80).
fn split_host_port(host: &str) -> Option<(&str, u16)> {
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let (name, after) = rest.split_once(']')?;
        (name, after.strip_prefix(':')?)
    } else {
        host.rsplit_once(':')?
    };
    Some((name, port.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn tokens_are_long_distinct_and_checked() {
        let t = Tokens::generate().unwrap();
        assert_eq!(t.full().len(), TOKEN_BYTES * 2);
        assert_ne!(t.full(), t.read_only());
        assert_eq!(t.check(t.full()), Some(Access::Full));
        assert_eq!(t.check(t.read_only()), Some(Access::ReadOnly));
        assert_eq!(t.check(""), None);
        let mut wrong = t.full().to_string();
        wrong.replace_range(0..1, if wrong.starts_with('0') { "1" } else { "0" });
        assert_eq!(t.check(&wrong), None);
        assert_ne!(Tokens::generate().unwrap().full(), t.full());
    }

    #[test]
    fn constant_time_eq_compares_whole_slices() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn bearer_headers_are_read() {
        assert_eq!(
            token_from_authorization("Bearer abc").as_deref(),
            Some("abc")
        );
        assert_eq!(token_from_authorization("Basic abc"), None);
    }

    #[test]
    fn a_link_ticket_works_once_and_yields_a_page_credential_of_its_access() {
        let c = Credentials::generate().unwrap();
        let full = c.issue_link(Access::Full).unwrap();
        let viewer = c.issue_link(Access::ReadOnly).unwrap();
        assert_ne!(full, viewer);
        // A ticket is not a bearer credential.
        assert_eq!(c.check_bearer(&full), None);
        let (page, access) = c.redeem_link(&full).unwrap().unwrap();
        assert_eq!(access, Access::Full);
        assert_eq!(c.check_bearer(&page), Some(Access::Full));
        assert!(
            c.redeem_link(&full).unwrap().is_none(),
            "a used ticket is dead"
        );
        let (page, access) = c.redeem_link(&viewer).unwrap().unwrap();
        assert_eq!(
            (access, c.check_bearer(&page)),
            (Access::ReadOnly, Some(Access::ReadOnly))
        );
        assert!(c.redeem_link("").unwrap().is_none());
        assert_eq!(c.check_bearer(c.tokens.full()), Some(Access::Full));
    }

    #[test]
    fn a_stream_ticket_works_once_and_only_for_streams() {
        let c = Credentials::generate().unwrap();
        let ticket = c.issue_stream(Access::ReadOnly).unwrap();
        assert_eq!(c.check_bearer(&ticket), None);
        assert!(c.redeem_link(&ticket).unwrap().is_none());
        assert_eq!(c.redeem_stream(&ticket), Some(Access::ReadOnly));
        assert_eq!(c.redeem_stream(&ticket), None);
    }

    #[test]
    fn host_must_be_the_bound_address() {
        let bound = addr("127.0.0.1:4242");
        assert!(host_allowed("127.0.0.1:4242", bound, false));
        assert!(host_allowed("localhost:4242", bound, false));
        assert!(host_allowed("[::1]:4242", bound, false));
        assert!(!host_allowed("127.0.0.1:4243", bound, false));
        assert!(!host_allowed("127.0.0.1", bound, false));
        assert!(!host_allowed("evil.example:4242", bound, false));
        assert!(!host_allowed("192.168.1.5:4242", bound, false));
        assert!(host_allowed("192.168.1.5:4242", addr("0.0.0.0:4242"), true));
        assert!(!host_allowed(
            "evil.example:4242",
            addr("0.0.0.0:4242"),
            true
        ));
    }

    #[test]
    fn origin_must_match_the_host() {
        assert!(origin_allowed(
            Some("http://127.0.0.1:4242"),
            "127.0.0.1:4242"
        ));
        assert!(!origin_allowed(None, "127.0.0.1:4242"));
        assert!(!origin_allowed(Some("null"), "127.0.0.1:4242"));
        assert!(!origin_allowed(
            Some("http://evil.example"),
            "127.0.0.1:4242"
        ));
        assert!(!origin_allowed(
            Some("https://127.0.0.1:4242"),
            "127.0.0.1:4242"
        ));
    }
}
