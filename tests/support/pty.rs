//! The interactive shell in a real pseudo-terminal, against the scripted model server: the
//! driver the pty and browser tests share.

use std::time::Duration;

use expectrl::{Expect, Session};

use super::{Protocol, ScriptedServer, Step, Workspace, texts};

pub const PROMPT: &str = "ling › ";
/// How long one expected output may take; generous for a loaded 2-core machine.
pub const EXPECT_TIMEOUT: Duration = Duration::from_secs(20);

pub struct Repl {
    pub session: expectrl::session::OsSession,
    /// What the shell printed up to its first prompt.
    pub before_prompt: String,
}

impl Repl {
    pub fn start(ws: &Workspace, args: &[&str]) -> Repl {
        Repl::start_with_env(ws, args, &[])
    }

    pub fn start_with_env(ws: &Workspace, args: &[&str], env: &[(&str, &str)]) -> Repl {
        Repl::start_with_prompt(ws, args, env, PROMPT)
    }

    /// Starts the shell and waits for `prompt` (flags such as `--permission-mode` show in it).
    pub fn start_with_prompt(
        ws: &Workspace,
        args: &[&str],
        env: &[(&str, &str)],
        prompt: &str,
    ) -> Repl {
        let mut cmd = ws.cmd();
        // The pty becomes the child's stdio only where the command does not say otherwise.
        cmd.args(args)
            .env("TERM", "xterm-256color")
            .stdin(std::process::Stdio::inherit())
            .stdout(std::process::Stdio::inherit())
            .stderr(std::process::Stdio::inherit());
        for (name, value) in env {
            cmd.env(name, value);
        }
        let mut session = Session::spawn(cmd).expect("spawn linggen in a pty");
        session.set_expect_timeout(Some(EXPECT_TIMEOUT));
        let mut repl = Repl {
            session,
            before_prompt: String::new(),
        };
        repl.before_prompt = repl.expect(prompt);
        repl
    }

    /// Waits for `needle` unless `printed` (output already consumed) holds it: for lines whose
    /// place relative to the prompt depends on timing (the banner is drawn when the session
    /// has started, which may be before or after the first prompt).
    pub fn expect_unless_in(&mut self, printed: &str, needle: &str) {
        if !printed.contains(needle) {
            self.expect(needle);
        }
    }

    /// Whether `needle` shows up within `timeout` (for polling; [`Repl::expect`] fails).
    pub fn shows_within(&mut self, needle: &str, timeout: Duration) -> bool {
        self.session.set_expect_timeout(Some(timeout));
        let found = self.session.expect(needle).is_ok();
        self.session.set_expect_timeout(Some(EXPECT_TIMEOUT));
        found
    }

    /// Waits for `needle`; returns everything printed up to and including it.
    pub fn expect(&mut self, needle: &str) -> String {
        match self.session.expect(needle) {
            Ok(found) => String::from_utf8_lossy(found.before()).into_owned() + needle,
            Err(e) => {
                // What the terminal showed instead, for the failure message.
                let shown = self
                    .session
                    .check(expectrl::Regex("(?s).+"))
                    .map(|found| String::from_utf8_lossy(found.as_bytes()).into_owned())
                    .unwrap_or_default();
                panic!("waiting for {needle:?}: {e}; the terminal showed {shown:?}")
            }
        }
    }

    pub fn send(&mut self, text: &str) {
        self.session.send(text).unwrap();
    }

    pub fn line(&mut self, text: &str) {
        self.send(text);
        self.send("\r");
    }
}

pub fn workspace(script: Vec<Step>) -> (Workspace, ScriptedServer) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, script);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    (ws, server)
}

/// The content of the last message with `role` in the last chat request.
pub fn last_message(server: &ScriptedServer, role: &str) -> String {
    texts(&server.last_chat_request().unwrap(), role)
        .pop()
        .unwrap_or_default()
}

pub fn last_tool_result(server: &ScriptedServer) -> String {
    last_message(server, "tool")
}

/// A link `/share` printed: `http://ADDR/?ticket=TICKET` (the ticket works once).
pub struct ShareLink {
    pub url: String,
    pub addr: std::net::SocketAddr,
    /// The one-time ticket the link carries.
    pub ticket: String,
}

impl ShareLink {
    /// The first share link in `printed` (terminal output, colours included).
    pub fn find(printed: &str) -> ShareLink {
        // Other addresses are printed too (the banner names the model's server).
        let url: String = printed
            .match_indices("http://")
            .map(|(start, _)| {
                printed[start..]
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '\x1b')
                    .collect::<String>()
            })
            .find(|url| url.contains("/?ticket="))
            .unwrap_or_else(|| panic!("no share link in {printed:?}"));
        let rest = url.strip_prefix("http://").unwrap();
        let (addr, ticket) = rest
            .split_once("/?ticket=")
            .unwrap_or_else(|| panic!("share link without a ticket: {url}"));
        ShareLink {
            addr: addr.parse().unwrap(),
            ticket: ticket.to_string(),
            url,
        }
    }
}

impl Repl {
    /// Waits for the next link `/share` prints (matched whole, so colours around it and
    /// the text before it do not matter).
    pub fn expect_share_link(&mut self) -> ShareLink {
        let found = self
            .session
            .expect(expectrl::Regex(r"http://[0-9.:]+/\?ticket=[0-9a-f]{48}"))
            .unwrap_or_else(|e| panic!("waiting for a share link: {e}"));
        ShareLink::find(&String::from_utf8_lossy(found.as_bytes()))
    }
}

impl Repl {
    /// Resizes the pty (the shell gets SIGWINCH), as a person dragging the window does.
    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.session
            .get_process_mut()
            .set_window_size(cols, rows)
            .expect("resize the pty");
    }
}
