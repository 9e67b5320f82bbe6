//! Asking the person to trust a folder: once when the shell starts (before the first prompt)
//! and with `linggen trust`. Both name every grant the folder's own files make; nothing is
//! trusted without a `y` typed by a person or an explicit `--yes`.

use std::io::{IsTerminal as _, Write as _};

use crate::app::{self, Failure, Start, Workspace, exit};

/// What `linggen trust` was asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustAction {
    /// Print the grants, then ask on a terminal.
    Ask,
    /// Trust without asking (`--yes`, for scripts).
    Yes,
    /// Forget the folder (`--revoke`).
    Revoke,
    /// Only print (`--list`).
    List,
}

/// The shell's question, before the first prompt, when the folder's files make grants the
/// person has not accepted. `y` saves and applies them; anything else continues without.
/// Returns the hint line to show once the shell is up, if any.
pub async fn ask_at_start(ws: &mut Workspace) -> Option<String> {
    let untrusted: Vec<String> = ws.trust.untrusted().iter().map(|g| g.to_string()).collect();
    if untrusted.is_empty() {
        return None;
    }
    eprintln!("{}", question(&untrusted));
    eprint!("Trust them? [y/N] ");
    let _ = std::io::stderr().flush();
    // The line editor is not running yet, so stdin is ours to read; a blocking read goes to
    // its own thread.
    let answer = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line)
    })
    .await
    .ok()
    .and_then(Result::ok)
    .unwrap_or_default();
    if !is_yes(&answer) {
        return Some(format!(
            "not trusted, so ignored: {}; `linggen trust` accepts them (or answer y at the next start)",
            untrusted.join("; ")
        ));
    }
    match ws.trust_folder() {
        Ok(()) => Some(format!(
            "trusted {} grant(s) of {}",
            untrusted.len(),
            ws.root.display()
        )),
        Err(e) => Some(format!("not trusted: {e}")),
    }
}

fn question(grants: &[String]) -> String {
    let mut text = String::from("This folder's files would grant:");
    for grant in grants {
        text.push_str(&format!("\n  - {grant}"));
    }
    text
}

/// A y/N question answered yes (`y` or `yes`, any case); anything else is no.
pub(super) fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// `linggen trust [--yes | --revoke | --list]`.
pub fn command(start: &Start, action: TrustAction) -> i32 {
    match try_command(start, action) {
        Ok(code) => code,
        Err(f) => {
            eprintln!("linggen: error: {}", f.message);
            f.code
        }
    }
}

fn try_command(start: &Start, action: TrustAction) -> Result<i32, Failure> {
    let mut ws = app::load_workspace(start)?;
    let failure = |message: String| Failure {
        code: exit::FAILURE,
        message,
    };
    if action == TrustAction::Revoke {
        let store = crate::config::trust::TrustStore::new(&ws.home);
        let forgotten = store.revoke(&ws.root).map_err(|e| failure(e.to_string()))?;
        println!(
            "{}",
            if forgotten {
                format!("{} is no longer trusted.", ws.root.display())
            } else {
                format!("{} was not trusted.", ws.root.display())
            }
        );
        return Ok(exit::SUCCESS);
    }
    println!("{}", listing(&ws));
    let untrusted = ws.trust.untrusted().len();
    if untrusted == 0 || action == TrustAction::List {
        return Ok(exit::SUCCESS);
    }
    let yes = match action {
        TrustAction::Yes => true,
        _ if !std::io::stdin().is_terminal() => {
            return Err(Failure {
                code: exit::USAGE,
                message: "stdin is not a terminal, so nobody can answer; rerun with --yes to \
                          trust these grants"
                    .into(),
            });
        }
        _ => {
            print!("Trust them? [y/N] ");
            let _ = std::io::stdout().flush();
            let mut line = String::new();
            std::io::stdin()
                .read_line(&mut line)
                .map_err(|e| failure(format!("cannot read the answer: {e}")))?;
            is_yes(&line)
        }
    };
    if !yes {
        println!("Not trusted; nothing changed.");
        return Ok(exit::SUCCESS);
    }
    ws.trust_folder().map_err(|e| failure(e.to_string()))?;
    println!("Trusted {untrusted} grant(s) of {}.", ws.root.display());
    Ok(exit::SUCCESS)
}

/// The folder and each grant with whether it holds.
fn listing(ws: &Workspace) -> String {
    let mut text = format!("Folder: {}", ws.root.display());
    if ws.trust.grants.is_empty() {
        text.push_str("\nIts files grant nothing, so there is nothing to trust.");
        return text;
    }
    text.push_str("\nIts files would grant:");
    for grant in &ws.trust.grants {
        let state = if ws.trust.trust.is_accepted(grant) {
            "trusted"
        } else {
            "NOT trusted"
        };
        text.push_str(&format!("\n  [{state}] {grant}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_explicit_yes_trusts() {
        for yes in ["y", "Y\n", " yes \r\n"] {
            assert!(is_yes(yes), "{yes:?}");
        }
        for no in ["", "\n", "n", "no", "sure", "yy"] {
            assert!(!is_yes(no), "{no:?}");
        }
    }

    #[test]
    fn the_question_names_every_grant() {
        let text = question(&["a (x)".into(), "b (y)".into()]);
        assert_eq!(
            text,
            "This folder's files would grant:\n  - a (x)\n  - b (y)"
        );
    }
}
