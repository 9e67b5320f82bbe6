//! Which pages `capture_screenshot` may open: `http`/`https` on this machine (`localhost`,
//! `127.0.0.0/8`, `::1`), or on a host the person listed in `[tools] screenshot_hosts`.
//!
//! The point is that a model steered by something it read cannot use the browser to send
//! workspace contents to a server of its choosing (`https://evil.example/?data=…`) or to
//! open local files. The URL is parsed with the WHATWG parser a browser uses (`reqwest`'s
//! `url`), so `127.1`, `0x7f000001` and `LOCALHOST` are judged as the browser will read
//! them, and the approval prompt shows the normalized form that is actually opened.

use std::net::{Ipv4Addr, Ipv6Addr};

use reqwest::Url;

/// Longer URLs are refused: they only make sense for carrying data out.
const MAX_URL_CHARS: usize = 2048;

/// Parses `raw` and checks it against the policy; the error says what was wrong and what to
/// do instead. `allowed` holds hosts normalized with `config::tools::normalize_host`.
pub(in crate::tools) fn check(raw: &str, allowed: &[String]) -> Result<Url, String> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err("the url is empty; pass a page such as http://localhost:3000/".into());
    }
    if raw.chars().count() > MAX_URL_CHARS {
        return Err(format!(
            "the url is longer than {MAX_URL_CHARS} characters; pass the page's address \
             without data in it"
        ));
    }
    let url = parse_lenient(raw)?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "capture_screenshot opens only http:// and https:// pages, not `{}:` URLs; serve \
             the page with a local web server and pass its http://127.0.0.1:PORT/ address",
            url.scheme()
        ));
    }
    let host = url.host_str().unwrap_or_default().to_string();
    // `http://127.0.0.1@evil.example/` goes to evil.example: what precedes `@` is a user
    // name. Such URLs have no legitimate use here and exist to mislead whoever reads them.
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "`{raw}` has a user name or password before `@`, so it would open `{host}`, not \
             what precedes the `@`; capture_screenshot refuses URLs with user info. Pass the \
             address without `user@`"
        ));
    }
    if host.is_empty() {
        return Err(format!(
            "`{raw}` names no host; pass a page such as http://localhost:3000/"
        ));
    }
    if is_loopback(&host) || allowed.contains(&host) {
        return Ok(url);
    }
    Err(format!(
        "capture_screenshot opens only pages on this machine (localhost, 127.0.0.1, [::1]) \
         and hosts listed in `[tools] screenshot_hosts` of linggen-agent.toml; `{host}` is \
         neither. Do not retry with another host; if the user wants this one, they can add \
         it to screenshot_hosts"
    ))
}

/// `localhost:3000` and `127.0.0.1:8080/x` are what a person (or a small model) types for a
/// local page; read them as `http://`. Anything that already has a scheme keeps it, so
/// `file:/etc/passwd` or `javascript:…` is refused for its scheme, not misread as a host:
/// without `://`, text is a host when it has no `:` or a port (a digit) follows the first.
fn parse_lenient(raw: &str) -> Result<Url, String> {
    let looks_like_host = !raw.contains("://")
        && (raw.starts_with('[')
            || raw
                .split_once(':')
                .is_none_or(|(_, rest)| rest.starts_with(|c: char| c.is_ascii_digit())));
    let text = if looks_like_host {
        format!("http://{raw}")
    } else {
        raw.to_string()
    };
    Url::parse(&text).map_err(|e| {
        format!("`{raw}` is not a valid URL ({e}); pass a page such as http://localhost:3000/")
    })
}

/// Whether `host` (as `Url::host_str` gives it: IPv6 in brackets) is this machine's
/// loopback interface. `0.0.0.0` is not: browsers are closing that path to local services.
pub fn is_loopback(host: &str) -> bool {
    if host == "localhost" {
        return true;
    }
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner.parse::<Ipv6Addr>().is_ok_and(|ip| {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        });
    }
    host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(raw: &str) -> String {
        match check(raw, &["myapp.test".into(), "[fd00::1]".into()]) {
            Ok(url) => url.to_string(),
            Err(e) => panic!("`{raw}` refused: {e}"),
        }
    }

    fn refused(raw: &str) -> String {
        match check(raw, &["myapp.test".into()]) {
            Ok(url) => panic!("`{raw}` accepted as {url}"),
            Err(e) => e,
        }
    }

    #[test]
    fn loopback_in_every_spelling_is_accepted() {
        assert_eq!(ok("http://localhost:3000/"), "http://localhost:3000/");
        assert_eq!(ok("https://LOCALHOST/app"), "https://localhost/app");
        assert_eq!(
            ok("http://127.0.0.1:8080/x?y=1#z"),
            "http://127.0.0.1:8080/x?y=1#z"
        );
        assert_eq!(ok("http://127.3.4.5/"), "http://127.3.4.5/");
        // The browser reads these as 127.0.0.1 too; the normalized form is what is shown.
        assert_eq!(ok("http://127.1/"), "http://127.0.0.1/");
        assert_eq!(ok("http://0x7f000001/"), "http://127.0.0.1/");
        assert_eq!(ok("http://[::1]:5173/"), "http://[::1]:5173/");
        assert_eq!(ok("http://[::ffff:127.0.0.1]/"), "http://[::ffff:7f00:1]/");
    }

    #[test]
    fn a_missing_scheme_means_http() {
        assert_eq!(ok("localhost:3000"), "http://localhost:3000/");
        assert_eq!(ok("localhost"), "http://localhost/");
        assert_eq!(ok("127.0.0.1:8080/page"), "http://127.0.0.1:8080/page");
        assert_eq!(ok("myapp.test"), "http://myapp.test/");
    }

    #[test]
    fn configured_hosts_are_accepted() {
        assert_eq!(ok("https://MyApp.test:8443/"), "https://myapp.test:8443/");
        assert_eq!(ok("http://[fd00::1]/"), "http://[fd00::1]/");
    }

    #[test]
    fn other_schemes_are_refused() {
        for raw in [
            "file:///etc/passwd",
            "file:/etc/passwd",
            "javascript:alert(1)",
            "data:text/html,<h1>x</h1>",
            "chrome://settings",
            "view-source:http://localhost/",
            "ftp://127.0.0.1/",
            "about:blank",
        ] {
            let err = refused(raw);
            assert!(err.contains("only http:// and https://"), "{raw}: {err}");
        }
    }

    #[test]
    fn other_hosts_are_refused() {
        for (raw, host) in [
            ("https://example.com/", "example.com"),
            ("http://evil.example/?d=secret", "evil.example"),
            ("http://0.0.0.0:3000/", "0.0.0.0"),
            ("http://192.168.1.10/", "192.168.1.10"),
            ("http://[fe80::1]/", "[fe80::1]"),
            ("http://localhost.evil.example/", "localhost.evil.example"),
            ("http://127.0.0.1.nip.io/", "127.0.0.1.nip.io"),
            ("http://myapp.test.evil.example/", "myapp.test.evil.example"),
        ] {
            let err = refused(raw);
            assert!(
                err.contains(&format!("`{host}` is neither")) && err.contains("screenshot_hosts"),
                "{raw}: {err}"
            );
        }
    }

    #[test]
    fn user_info_is_refused() {
        for raw in [
            "http://127.0.0.1@evil.example/",
            "http://localhost:3000@evil.example/",
            "http://user:pw@localhost/",
            "http://user@localhost/",
        ] {
            let err = refused(raw);
            assert!(err.contains("user name or password"), "{raw}: {err}");
        }
        assert!(refused("http://127.0.0.1@evil.example/").contains("open `evil.example`"));
    }

    #[test]
    fn nonsense_is_refused_with_an_example() {
        assert!(refused("").contains("empty"));
        assert!(refused("http://").contains("not a valid URL"));
        assert!(refused("http://[::1/").contains("not a valid URL"));
        let long = format!("http://localhost/?q={}", "a".repeat(3000));
        assert!(refused(&long).contains("longer than"));
    }
}
