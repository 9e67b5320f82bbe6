//! The settings the tools read, owned here with the rest of the configuration (the tools
//! import them; the configuration never imports a tool): `[sandbox]`, the screenshot
//! tool's part of `[tools]`, and the defaults the file's keys fall back to.

use std::net::Ipv6Addr;
use std::path::PathBuf;

use url::Url;

/// `bash_timeout_ms`'s default: a command's time limit.
pub const BASH_TIMEOUT_MS: u64 = 30_000;

/// The environment variable naming the browser `capture_screenshot` starts; beats
/// `[tools] chromium`.
pub const CHROMIUM_ENV: &str = "LINGGEN_CHROMIUM";

/// `[sandbox]` in `linggen-agent.toml`.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxSettings {
    /// `enabled = false` runs commands unconfined (then `unconfined` decides whether each asks).
    pub enabled: bool,
    /// `network = true`: commands share the machine's network.
    pub network: bool,
    /// Folders outside the root that commands may write (toolchain caches: `~/.cargo`…).
    pub write_paths: Vec<PathBuf>,
    /// Paths hidden from commands and file tools besides the built-in secret stores.
    pub deny_read: Vec<PathBuf>,
    /// Built-in secret stores opened to commands and file tools (a store, or a folder that
    /// contains some). Never `$LINGGEN_HOME` nor what `deny_read` lists.
    pub allow_read: Vec<PathBuf>,
    /// Environment variables passed to commands although they look like secrets.
    pub env_allow: Vec<String>,
    pub unconfined: Unconfined,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings {
            enabled: true,
            network: false,
            write_paths: Vec::new(),
            deny_read: Vec::new(),
            allow_read: Vec::new(),
            env_allow: Vec::new(),
            unconfined: Unconfined::Ask,
        }
    }
}

/// What happens to commands that cannot be confined (no kernel support, or `enabled = false`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unconfined {
    /// Every command needs a person; `-p` denies them. The default: fail closed.
    #[default]
    Ask,
    /// The analysis alone decides, as without a sandbox. Chosen knowingly.
    Allow,
}

/// `[tools]` settings the tool reads (see `doc/config.md`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScreenshotSettings {
    /// `[tools] chromium`: an absolute path or a program name on `PATH`.
    pub chromium: Option<String>,
    /// `$LINGGEN_CHROMIUM` as the configuration read it at start; beats `chromium`.
    pub chromium_env: Option<String>,
    /// `[tools] screenshot_hosts`, normalized with [`normalize_host`]: hosts besides
    /// loopback whose pages may be captured.
    pub hosts: Vec<String>,
}

/// A `[tools] screenshot_hosts` entry in the form the screenshot tool's URL check compares
/// against: lower case, punycode, IPv6 in brackets. Only a host: no scheme, port, path or
/// wildcard.
pub(in crate::config) fn normalize_host(entry: &str) -> Result<String, String> {
    let entry = entry.trim();
    let bad = |why: &str| {
        format!(
            "screenshot_hosts entry \"{entry}\": {why}; write a bare host name such as \"myapp.test\" or an IP address"
        )
    };
    if entry.is_empty() {
        return Err(bad("it is empty"));
    }
    if entry.contains('*') {
        return Err(bad("wildcards are not supported, list each host"));
    }
    if entry.contains(['/', '@', '?', '#', '\\']) || entry.chars().any(char::is_whitespace) {
        return Err(bad("it is not just a host (no scheme, path or user)"));
    }
    let bracketed = entry.parse::<Ipv6Addr>().is_ok();
    let text = if bracketed {
        format!("http://[{entry}]/")
    } else {
        format!("http://{entry}/")
    };
    let url = Url::parse(&text).map_err(|e| bad(&e.to_string()))?;
    if url.port().is_some() {
        return Err(bad(
            "ports are not part of it (every port of an allowed host is allowed)",
        ));
    }
    match url.host_str() {
        Some(host) if !host.is_empty() => Ok(host.to_string()),
        _ => Err(bad("it names no host")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_entries_are_normalized_or_refused() {
        assert_eq!(normalize_host(" MyApp.Test ").unwrap(), "myapp.test");
        assert_eq!(normalize_host("10.0.0.5").unwrap(), "10.0.0.5");
        assert_eq!(normalize_host("fd00::1").unwrap(), "[fd00::1]");
        assert_eq!(normalize_host("[fd00::1]").unwrap(), "[fd00::1]");
        for (entry, why) in [
            ("", "empty"),
            ("*.test", "wildcards"),
            ("http://x.test", "not just a host"),
            ("x.test/path", "not just a host"),
            ("u@x.test", "not just a host"),
            ("x.test:8080", "ports"),
        ] {
            let err = normalize_host(entry).unwrap_err();
            assert!(err.contains(why), "{entry}: {err}");
        }
    }
}
