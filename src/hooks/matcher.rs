//! A group's `matcher`, read as Claude Code reads it: empty or `*` matches everything; a
//! plain name (letters, digits, `_`, `-`) or a `|` list of them matches those names
//! exactly; anything else is a regular expression that must match the whole name
//! (`Edit|Write`, `mcp__github__.*`, `Notebook.*`).

use regex::Regex;

#[derive(Debug, Clone)]
pub struct Matcher {
    source: String,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    All,
    Names(Vec<String>),
    Pattern(Regex),
}

impl Matcher {
    /// An `Err` says why the pattern is not a regular expression (for a warning; the
    /// group is then skipped rather than run for everything).
    pub(in crate::hooks) fn new(source: &str) -> Result<Matcher, String> {
        let trimmed = source.trim();
        let kind = if trimmed.is_empty() || trimmed == "*" {
            Kind::All
        } else if trimmed
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '|' | ' '))
        {
            Kind::Names(
                trimmed
                    .split('|')
                    .map(|n| n.trim().to_string())
                    .filter(|n| !n.is_empty())
                    .collect(),
            )
        } else {
            let anchored = format!("^(?:{trimmed})$");
            Kind::Pattern(
                Regex::new(&anchored)
                    .map_err(|e| format!("matcher `{trimmed}` is not a regular expression: {e}"))?,
            )
        };
        Ok(Matcher {
            source: trimmed.to_string(),
            kind,
        })
    }

    /// As written (empty for "everything").
    pub fn source(&self) -> &str {
        match self.kind {
            Kind::All => "",
            _ => &self.source,
        }
    }

    pub fn accepts(&self, name: &str) -> bool {
        match &self.kind {
            Kind::All => true,
            Kind::Names(names) => names.iter().any(|n| n == name),
            Kind::Pattern(re) => re.is_match(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Matcher;

    fn m(source: &str) -> Matcher {
        Matcher::new(source).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn matchers_read_as_claude_code_reads_them() {
        assert!(m("").accepts("Bash") && m("*").accepts("mcp__x__y"));
        assert!(m("Bash").accepts("Bash"));
        assert!(!m("Bash").accepts("BashOutput"), "a plain name is exact");
        assert!(!m("bash").accepts("Bash"), "names are case-sensitive");
        assert!(m("Edit|Write").accepts("Write") && !m("Edit|Write").accepts("Read"));
        assert!(m("Edit | Write").accepts("Write"));
        assert!(m("mcp__github__.*").accepts("mcp__github__search"));
        assert!(!m("mcp__github__.*").accepts("mcp__gitlab__search"));
        assert!(
            !m("Notebook.*").accepts("xNotebookEdit"),
            "anchored at the start"
        );
        assert!(Matcher::new("Bash(").is_err());
        assert_eq!(m("*").source(), "");
        assert_eq!(m("Edit|Write").source(), "Edit|Write");
    }
}
