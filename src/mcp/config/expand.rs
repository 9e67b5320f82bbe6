//! Claude Code's environment expansion in `.mcp.json` and `~/.claude.json`: `${VAR}` and
//! `${VAR:-default}`, nothing else. A bare `$VAR` stays as written, and the first `}` ends
//! a reference (so a default cannot itself hold `${…}`), as in Claude Code: a file written
//! for it must mean the same thing here.

/// The references a text could not resolve, collected over every field of one server so
/// the warning names them all at once.
#[derive(Debug, Default)]
pub(super) struct Missing(pub Vec<String>);

impl Missing {
    fn add(&mut self, name: &str) {
        if !self.0.iter().any(|n| n == name) {
            self.0.push(name.to_string());
        }
    }
}

/// `text` with each `${VAR}` and `${VAR:-default}` replaced. A variable that is set counts,
/// even when empty (Claude Code uses the default only for an unset one); an unset one
/// without a default is left as written and recorded in `missing`.
pub(super) fn expand(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
    missing: &mut Missing,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            // An unclosed `${` is text, not a reference.
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (env(name), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                missing.add(name);
                out.push_str(&rest[start..start + 2 + end + 1]);
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOST" => Some("example.test".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn run(text: &str) -> (String, Vec<String>) {
        let mut missing = Missing::default();
        let out = expand(text, &env, &mut missing);
        (out, missing.0)
    }

    #[test]
    fn references_with_and_without_defaults() {
        assert_eq!(run("https://${HOST}/mcp").0, "https://example.test/mcp");
        assert_eq!(run("${PORT:-8080}").0, "8080");
        assert_eq!(run("${HOST:-other}").0, "example.test");
        // Set but empty is set: the default is for an unset variable.
        assert_eq!(run("[${EMPTY:-x}]").0, "[]");
        assert_eq!(
            run("${HOST}:${PORT:-1}${HOST}").0,
            "example.test:1example.test"
        );
    }

    #[test]
    fn what_claude_code_leaves_alone_stays() {
        assert_eq!(run("$HOST and ${ unclosed").0, "$HOST and ${ unclosed");
        assert_eq!(run("no references").0, "no references");
        // The first `}` ends the reference; the rest is text.
        assert_eq!(run("${NOPE:-${HOST}}").0, "${HOST}");
    }

    #[test]
    fn an_unset_variable_without_default_is_reported_once() {
        let (out, missing) = run("${TOKEN} ${TOKEN} ${OTHER}");
        assert_eq!(out, "${TOKEN} ${TOKEN} ${OTHER}");
        assert_eq!(missing, ["TOKEN", "OTHER"]);
    }
}
