//! `linggen mcp login|logout NAME`: OAuth sign-in for a remote MCP server (see
//! [`crate::mcp::oauth`] and doc/mcp.md#signing-in).

use std::io::IsTerminal as _;

use super::exit;
use super::mcp::{state_note, unknown};
use super::{Start, load_workspace, print_lines};
use crate::mcp::config::{ServerConfig, Transport};
use crate::mcp::oauth::{self, LoginError, Person, ServerCredentials};

/// `linggen mcp login NAME`.
pub async fn login(start: &Start, name: &str) -> i32 {
    let ws = match load_workspace(start) {
        Ok(ws) => ws,
        Err(f) => return print_lines(Err(f)),
    };
    let Some(server) = ws.mcp.get(name).cloned() else {
        return unknown(&ws, name);
    };
    // A folder's own server signs in only once the folder is trusted: its address, and
    // where the browser is sent, come from the repository.
    let note = state_note(&ws, &server);
    if !note.is_empty() {
        eprintln!("linggen: error: `{name}` is not used here{note}");
        return exit::USAGE;
    }
    let Some(url) = http_url(&server) else {
        return fail(LoginError::NotHttp {
            server: name.to_string(),
        });
    };
    let open = |link: &str| {
        let opener = crate::tools::launch::opener::browser_program();
        crate::tools::launch::opener::open(&opener, link).map_err(|e| e.to_string())
    };
    let say = |line: &str| eprintln!("{line}");
    let person = Person {
        open_browser: &open,
        say: &say,
        can_paste: std::io::stdin().is_terminal(),
    };
    match oauth::login(name, url, &person).await {
        Ok(()) => {
            println!(
                "Signed in to `{name}`. Sessions started from now on use it; \
                 `linggen mcp logout {name}` forgets the sign-in."
            );
            exit::SUCCESS
        }
        Err(e) => fail(e),
    }
}

/// `linggen mcp logout NAME`: forgets the tokens, whether or not the server is still
/// configured (so a removed server's tokens can go too).
pub fn logout(start: &Start, name: &str) -> i32 {
    let ws = match load_workspace(start) {
        Ok(ws) => ws,
        Err(f) => return print_lines(Err(f)),
    };
    let path = match oauth::credentials_path() {
        Ok(path) => path,
        Err(e) => return fail(e),
    };
    let url = ws.mcp.get(name).and_then(http_url).unwrap_or_default();
    match ServerCredentials::new(path, name, url).remove() {
        Ok(true) => {
            println!("Signed out of `{name}`: its tokens are gone from this machine.");
            exit::SUCCESS
        }
        Ok(false) => {
            println!("`{name}` had no sign-in to forget.");
            exit::SUCCESS
        }
        Err(e) => fail(e),
    }
}

/// Whether a login left tokens for `server`: for `linggen mcp get`.
pub fn signed_in(server: &ServerConfig) -> bool {
    match (http_url(server), oauth::credentials_path()) {
        (Some(url), Ok(path)) => ServerCredentials::new(path, &server.name, url).exist(),
        _ => false,
    }
}

fn http_url(server: &ServerConfig) -> Option<&str> {
    match &server.transport {
        Transport::Http { url, .. } => Some(url),
        Transport::Stdio { .. } => None,
    }
}

fn fail(e: LoginError) -> i32 {
    eprintln!("linggen: error: {e}");
    match e {
        LoginError::NotHttp { .. } => exit::USAGE,
        _ => exit::FAILURE,
    }
}
