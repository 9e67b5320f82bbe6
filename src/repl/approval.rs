//! Reading a person's answer to an approval request typed at the prompt.

use crate::session::Decision;

/// What a submitted line means while an approval waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Decide(Decision),
    /// Enter alone never approves: show the choices again.
    Repeat,
}

/// `y` once, `a` always (session), `p` always (project), `n` deny; any other text denies
/// and is passed to the model as the reason.
pub fn parse(line: &str) -> Answer {
    let text = line.trim();
    match text.to_ascii_lowercase().as_str() {
        "" => Answer::Repeat,
        "y" | "yes" => Answer::Decide(Decision::AllowOnce),
        "a" | "always" => Answer::Decide(Decision::AllowSession),
        "p" | "project" => Answer::Decide(Decision::AllowProject),
        "n" | "no" => Answer::Decide(Decision::Deny { reason: None }),
        _ => Answer::Decide(Decision::Deny {
            reason: Some(text.to_string()),
        }),
    }
}

/// The line shown under an approval card.
pub const CHOICES: &str =
    "  y once · a always (session) · p always (project) · n deny · or type a reason, then Enter";

/// The line under a card that only "once" can answer (see `permissions::once_only`).
pub const CHOICES_ONCE: &str =
    "  y once (asked again next time) · n deny · or type a reason, then Enter";

/// The choices line for a request.
pub fn choices(once_only: bool) -> &'static str {
    if once_only { CHOICES_ONCE } else { CHOICES }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        assert_eq!(parse(""), Answer::Repeat);
        assert_eq!(parse("  "), Answer::Repeat);
        assert_eq!(parse("y"), Answer::Decide(Decision::AllowOnce));
        assert_eq!(parse("Y"), Answer::Decide(Decision::AllowOnce));
        assert_eq!(parse("a"), Answer::Decide(Decision::AllowSession));
        assert_eq!(parse("p"), Answer::Decide(Decision::AllowProject));
        assert_eq!(parse("no"), Answer::Decide(Decision::Deny { reason: None }));
        assert_eq!(
            parse("use y.txt instead"),
            Answer::Decide(Decision::Deny {
                reason: Some("use y.txt instead".into())
            })
        );
    }
}
