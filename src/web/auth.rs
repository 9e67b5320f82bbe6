//! Who may talk to the mirror: the secret tokens, and the `Host` and `Origin` checks that
//! keep other web sites out (DNS rebinding, cross-site requests). See `doc/web.md`.

use std::net::{IpAddr, SocketAddr};

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

impl Tokens {
    /// Fresh tokens from the operating system's CSPRNG.
    pub fn generate() -> Result<Tokens, String> {
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

/// The cookie that carries the token after the first load. Cookies are shared by every port
/// of a host, so the name carries the port: two shares never overwrite each other's.
pub fn cookie_name(port: u16) -> String {
    format!("linggen_{port}")
}

/// The token in a `Cookie` header, if any.
pub fn token_from_cookies(header: &str, name: &str) -> Option<String> {
    header.split(';').find_map(|pair| {
        let (key, value) = pair.trim().split_once('=')?;
        (key == name).then(|| value.to_string())
    })
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
    fn cookies_and_bearer_headers_are_read() {
        let name = cookie_name(4242);
        assert_eq!(
            token_from_cookies("a=1; linggen_4242=tok; b=2", &name).as_deref(),
            Some("tok")
        );
        assert_eq!(token_from_cookies("linggen_4243=tok", &name), None);
        assert_eq!(
            token_from_authorization("Bearer abc").as_deref(),
            Some("abc")
        );
        assert_eq!(token_from_authorization("Basic abc"), None);
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
