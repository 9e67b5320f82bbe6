//! `/share`: the web mirror of this shell's session. The server starts on first use and
//! follows the shell when it switches sessions (`/clear`, `/resume`, `/model`).

use std::sync::Arc;

use super::commands::SHARE_OPTIONS;
use super::shell::Shell;
use crate::web::{Hub, ServeOptions, Server};

/// What `/share …` asked for.
#[derive(Default)]
struct ShareRequest {
    read_only: bool,
    open: bool,
    lan: bool,
    stop: bool,
}

fn parse(args: &str) -> Result<ShareRequest, String> {
    let mut request = ShareRequest::default();
    for word in args.split_whitespace() {
        match word {
            "--read-only" => request.read_only = true,
            "--open" => request.open = true,
            "--lan" => request.lan = true,
            "stop" => request.stop = true,
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
            match self.share.take() {
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
            .share
            .as_ref()
            .is_some_and(|s| request.lan && !s.is_lan())
        {
            return self
                .view
                .error("already sharing on 127.0.0.1 only; run /share stop, then /share --lan");
        }
        if self.share.is_none() {
            match self.start_sharing(request.lan).await {
                Ok(server) => self.share = Some(server),
                Err(e) => return self.view.error(&e),
            }
        }
        let Some(server) = &self.share else {
            return;
        };
        let (url, viewer) = (server.url(), server.viewer_url());
        let mut lines = vec![
            format!("sharing this session: {url}"),
            "anyone with this link can read and drive this session · /share stop ends it".into(),
        ];
        if request.read_only {
            lines.push(format!("read-only viewer: {viewer}"));
        }
        self.view.lines(lines);
        if server.is_lan() {
            self.view.warning(
                "listening on every interface: anyone on your network with the link can drive the agent",
            );
        }
        if request.open
            && let Err(e) = open_browser(&url)
        {
            self.view.warning(&format!(
                "cannot open a browser ({e}); open the link yourself"
            ));
        }
    }

    async fn start_sharing(&mut self, lan: bool) -> Result<Server, String> {
        let mirror = self
            .live
            .mirror
            .clone()
            .ok_or("this session cannot be shared (it was started without a terminal)")?;
        let hub = Hub::new(&self.ws);
        hub.share(mirror);
        Server::start(Arc::new(hub), ServeOptions { port: 0, lan }).await
    }

    /// After the shell switched sessions: the browser follows.
    pub(super) fn share_follows(&self) {
        if let (Some(server), Some(mirror)) = (&self.share, &self.live.mirror) {
            server.hub().share(mirror.clone());
        }
    }
}

/// Opens `url` with `$BROWSER`, else the desktop's opener.
fn open_browser(url: &str) -> std::io::Result<()> {
    let program = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty())
        .unwrap_or_else(|| {
            if cfg!(target_os = "macos") {
                "open".into()
            } else {
                "xdg-open".into()
            }
        });
    std::process::Command::new(program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn options_parse_and_unknown_ones_are_refused() {
        let r = parse("--read-only --open").unwrap();
        assert!(r.read_only && r.open && !r.lan && !r.stop);
        assert!(parse("stop").unwrap().stop);
        let e = parse("--public").err().unwrap();
        assert!(e.contains("--public") && e.contains("--read-only"), "{e}");
    }
}
