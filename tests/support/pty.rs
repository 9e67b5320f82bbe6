//! The interactive shell in a real pseudo-terminal, against the scripted model server: the
//! driver the pty and browser tests share.

use std::time::Duration;

use expectrl::{Expect, Session};

use super::{Protocol, ScriptedServer, Step, Workspace};

pub const PROMPT: &str = "ling › ";
/// How long one expected output may take; generous for a loaded 2-core machine.
pub const EXPECT_TIMEOUT: Duration = Duration::from_secs(20);

pub struct Repl {
    pub session: expectrl::session::OsSession,
}

impl Repl {
    pub fn start(ws: &Workspace, args: &[&str]) -> Repl {
        Repl::start_with_env(ws, args, &[])
    }

    pub fn start_with_env(ws: &Workspace, args: &[&str], env: &[(&str, &str)]) -> Repl {
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
        let mut repl = Repl { session };
        repl.expect(PROMPT);
        repl
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
    let body = server.last_chat_request().unwrap();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == role)
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

pub fn last_tool_result(server: &ScriptedServer) -> String {
    let body = server.last_chat_request().unwrap();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}
