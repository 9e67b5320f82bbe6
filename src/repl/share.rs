//! `/share`: the web mirror of this shell's session. The server starts on first use and
//! follows the shell when it switches sessions (`/clear`, `/resume`).
//!
//! Every printed link carries a one-time ticket: the first page that opens it trades it for
//! its own credential, and the ticket is dead. `/share` prints a fresh link each time;
//! `/share token` shows the long-lived token for scripts.

use super::commands::SHARE_OPTIONS;
use super::shell::Shell;
use crate::app::share::{self, Server, ShareError};

/// What `/share …` asked for.
#[derive(Default)]
struct ShareRequest {
    read_only: bool,
    open: bool,
    lan: bool,
    stop: bool,
    token: bool,
}

fn parse(args: &str) -> Result<ShareRequest, String> {
    let mut request = ShareRequest::default();
    for word in args.split_whitespace() {
        match word {
            "--read-only" => request.read_only = true,
            "--open" => request.open = true,
            "--lan" => request.lan = true,
            "stop" => request.stop = true,
            "token" => request.token = true,
            other => {
                return Err(format!(
                    "unknown /share option `{other}`; use {}",
                    SHARE_OPTIONS.join(", ")
                ));
            }
        }
    }
    Ok(request)
}

impl Shell {
    pub(super) async fn share(&mut self, args: &str) {
        let request = match parse(args) {
            Ok(r) => r,
            Err(e) => return self.view.error(&e),
        };
        if request.stop {
            match self.link.share.take() {
                Some(server) => {
                    server.stop().await;
                    self.view
                        .hint("stopped sharing; the links no longer work (the next /share makes new ones)");
                }
                None => self.view.hint("not sharing; /share starts it"),
            }
            return;
        }
        if self
            .link
            .share
            .as_ref()
            .is_some_and(|s| request.lan && !s.is_lan())
        {
            return self
                .view
                .error("already sharing on 127.0.0.1 only; run /share stop, then /share --lan");
        }
        if self.link.share.is_none() {
            match self.start_sharing(request.lan).await {
                Ok(server) => self.link.share = Some(server),
                Err(e) => return self.view.error(&e),
            }
        }
        let Some(server) = &self.link.share else {
            return;
        };
        if request.token {
            return self.view.lines(token_lines(server.as_ref()));
        }
        match link_lines(server.as_ref(), request.read_only) {
            Ok(lines) => self.view.lines(lines),
            Err(e) => return self.view.error(&e.to_string()),
        }
        if server.is_lan() {
            self.view.warning(
                "listening on every interface: anyone on your network with the link can drive the agent",
            );
        }
        // The browser gets a link of its own, so the printed one stays usable; it reaches the
        // browser through a private page, never the opener's command line.
        if request.open
            && let Err(e) = server
                .link()
                .map_err(|e| e.to_string())
                .and_then(|link| open_browser(&link))
        {
            self.view.warning(&format!(
                "cannot open a browser ({e}); open the link yourself"
            ));
        }
    }

    async fn start_sharing(&mut self, lan: bool) -> Result<Box<dyn Server>, String> {
        let mirror = self
            .link
            .mirror
            .clone()
            .ok_or("this session cannot be shared (it was started without a terminal)")?;
        share::start(&self.ws, mirror, lan)
            .await
            .map_err(|e| e.to_string())
    }

    /// After the shell switched sessions: the browser follows.
    pub(super) fn share_follows(&self) {
        if let (Some(server), Some(mirror)) = (&self.link.share, &self.link.mirror) {
            server.follow(mirror.clone());
        }
    }
}

/// `/share token`: the long-lived tokens for scripts.
fn token_lines(server: &dyn Server) -> Vec<String> {
    let (full, viewer) = server.tokens();
    vec![
        format!("token for scripts (Authorization: Bearer …): {full}"),
        format!("read-only token: {viewer}"),
        "they work until /share stop; keep them secret".into(),
    ]
}

/// `/share`: a fresh one-time link, and a read-only one when asked for.
fn link_lines(server: &dyn Server, read_only: bool) -> Result<Vec<String>, ShareError> {
    let link = server.link()?;
    let mut lines = vec![
        format!("sharing this session: {link}"),
        "the link works once, for one browser tab; /share prints a new one".into(),
        "anyone with this link can read and drive this session · /share stop ends it".into(),
    ];
    if read_only {
        lines.push(format!("read-only viewer: {}", server.viewer_link()?));
    }
    Ok(lines)
}

/// Opens `url` with `$BROWSER`, else the desktop's opener, through a private page: the
/// opener's command line, which every user can read, never holds the ticket.
fn open_browser(url: &str) -> Result<(), String> {
    let opener = crate::tools::launch::opener::browser_program();
    crate::tools::launch::opener::open(&opener, url).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::parse;
    use crate::tools::launch::opener;

    /// This process's zombie children named `comm`.
    fn zombies(comm: &str) -> usize {
        let me = std::process::id().to_string();
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("status")).ok())
            .filter(|status| {
                let field = |name: &str| {
                    status
                        .lines()
                        .find_map(|l| l.strip_prefix(name))
                        .map(|v| v.trim().to_string())
                        .unwrap_or_default()
                };
                field("PPid:") == me && field("Name:") == comm && field("State:").starts_with('Z')
            })
            .count()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_browser_opener_is_reaped() {
        let dir = tempfile::TempDir::new().unwrap();
        // A name of its own, so no other test's child is counted.
        let opener = dir.path().join("lg-test-opener");
        std::fs::copy("/bin/true", &opener).unwrap();
        opener::open(opener.to_str().unwrap(), "http://127.0.0.1:1/?ticket=x").unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        // It exits at once; then it must not stay behind as a zombie.
        std::thread::sleep(std::time::Duration::from_millis(200));
        while zombies("lg-test-opener") > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the opener stays a zombie"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    #[test]
    fn options_parse_and_unknown_ones_are_refused() {
        let r = parse("--read-only --open").unwrap();
        assert!(r.read_only && r.open && !r.lan && !r.stop);
        assert!(parse("stop").unwrap().stop);
        assert!(parse("token").unwrap().token);
        let e = parse("--public").err().unwrap();
        assert!(e.contains("--public") && e.contains("--read-only"), "{e}");
    }
}
