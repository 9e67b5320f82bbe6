//! `---`-delimited YAML frontmatter, shared by `SKILL.md` and agent files. Errors carry the
//! 1-based line in the file, so a warning can point at it.

use serde_yaml::{Mapping, Value};

/// A frontmatter problem at a line of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontmatterError {
    pub line: usize,
    pub message: String,
}

impl FrontmatterError {
    fn at(line: usize, message: impl Into<String>) -> FrontmatterError {
        FrontmatterError {
            line,
            message: message.into(),
        }
    }

    /// The one-line warning for a file: `<path>:<line>: <message>`.
    pub fn warning(&self, path: &str) -> String {
        format!("{path}:{}: {}", self.line, self.message)
    }
}

/// The parsed frontmatter mapping and the body after it.
#[derive(Debug, Clone)]
pub struct Document {
    pub fields: serde_yaml::Mapping,
    pub body: String,
    /// The line (1-based) of each top-level key, for error messages.
    pub key_lines: Vec<(String, usize)>,
}

impl Document {
    /// The line of `key`, or 1.
    pub fn line_of(&self, key: &str) -> usize {
        self.key_lines
            .iter()
            .find(|(k, _)| k == key)
            .map_or(1, |(_, l)| *l)
    }

    /// The raw value of `key`.
    pub fn value(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    /// An optional string field. Numbers are taken as their text (`model: 4` is "4"), since
    /// YAML makes it too easy to write an unquoted number where a name was meant; `null`
    /// (`key:` with nothing after it) counts as missing.
    pub fn string(&self, key: &str) -> Result<Option<String>, FrontmatterError> {
        match self.value(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(other) => Err(self.type_error(key, other, "a text value, e.g. `key: some text`")),
        }
    }

    /// An optional boolean field. `"true"`/`"false"` in quotes are accepted too: quoting
    /// a flag is a common slip and its meaning is unambiguous.
    pub fn boolean(&self, key: &str) -> Result<Option<bool>, FrontmatterError> {
        match self.value(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(other) => Err(self.type_error(key, other, "`true` or `false`")),
        }
    }

    /// An optional list of strings; a single string is a one-element list.
    pub fn string_list(&self, key: &str) -> Result<Option<Vec<String>>, FrontmatterError> {
        match self.value(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(vec![s.clone()])),
            Some(Value::Sequence(items)) => items
                .iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s.clone()),
                    Value::Number(n) => Ok(n.to_string()),
                    other => Err(self.type_error(
                        key,
                        other,
                        "a list of text values, e.g. `key: [a, b]`",
                    )),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(self.type_error(key, other, "a list, e.g. `key: [a, b]`")),
        }
    }

    /// The error for a value of the wrong type at `key`'s line.
    pub fn type_error(&self, key: &str, found: &Value, expected: &str) -> FrontmatterError {
        FrontmatterError::at(
            self.line_of(key),
            format!("`{key}` is {}; write {expected}", describe(found)),
        )
    }

    /// An error at `key`'s line.
    pub fn error_at(&self, key: &str, message: impl std::fmt::Display) -> FrontmatterError {
        FrontmatterError::at(self.line_of(key), message.to_string())
    }

    /// The fields not in `known`, kept as they were (fields other tools or later versions
    /// use must survive a round through linggen).
    pub fn extra(&self, known: &[&str]) -> std::collections::BTreeMap<String, Value> {
        self.fields
            .iter()
            .filter_map(|(k, v)| {
                let key = match k {
                    Value::String(s) => s.clone(),
                    other => serde_yaml::to_string(other).ok()?.trim().to_string(),
                };
                (!known.contains(&key.as_str())).then_some((key, v.clone()))
            })
            .collect()
    }
}

/// A short description of a YAML value's type for messages, quoting short scalars.
pub fn describe(value: &Value) -> String {
    match value {
        Value::Null => "empty".into(),
        Value::Bool(b) => format!("the boolean `{b}`"),
        Value::Number(n) => format!("the number `{n}`"),
        Value::String(s) if s.chars().count() <= 40 => format!("the text \"{s}\""),
        Value::String(_) => "a text value".into(),
        Value::Sequence(_) => "a list".into(),
        Value::Mapping(_) => "a mapping".into(),
        Value::Tagged(_) => "a tagged value".into(),
    }
}

/// Keys whose single-line value is literal text even when it starts with `[`. Claude Code
/// documents `argument-hint: [pr-number] [priority]`, which is not valid YAML (or, for one
/// bracket group, a list); the hint is meant to be shown exactly as written.
const LITERAL_KEYS: &[&str] = &["argument-hint"];

/// Splits and parses a document. A file without frontmatter is an error (line 1).
pub fn parse(text: &str) -> Result<Document, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // `lines()` drops a trailing `\r` too, so CRLF files split like LF ones.
    let lines: Vec<&str> = text.lines().collect();
    match lines.first() {
        Some(first) if first.trim_end() == "---" => {}
        _ => {
            return Err(FrontmatterError::at(
                1,
                "no frontmatter; start the file with a `---` line, then `name: …` and \
                 `description: …`, then another `---` line before the body",
            ));
        }
    }
    let Some(close) = lines
        .iter()
        .skip(1)
        .position(|l| l.trim_end() == "---")
        .map(|i| i + 1)
    else {
        return Err(FrontmatterError::at(
            1,
            "the frontmatter opened here is never closed; add a `---` line after the last \
             field, before the body",
        ));
    };
    let yaml_lines = &lines[1..close];
    let key_lines = top_level_keys(yaml_lines);
    let yaml = yaml_lines
        .iter()
        .map(|l| quote_literal_value(l))
        .collect::<Vec<_>>()
        .join("\n");
    let fields = parse_mapping(&yaml, yaml_lines.len(), &key_lines)?;
    let body = lines[close + 1..]
        .iter()
        .skip_while(|l| l.trim().is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    Ok(Document {
        fields,
        body,
        key_lines,
    })
}

fn parse_mapping(
    yaml: &str,
    line_count: usize,
    key_lines: &[(String, usize)],
) -> Result<Mapping, FrontmatterError> {
    if yaml.trim().is_empty() {
        return Ok(Mapping::new());
    }
    match serde_yaml::from_str::<Value>(yaml) {
        Ok(Value::Mapping(m)) => Ok(m),
        Ok(Value::Null) => Ok(Mapping::new()),
        Ok(other) => Err(FrontmatterError::at(
            2,
            format!(
                "the frontmatter is {}, not fields; write one `key: value` per line",
                describe(&other)
            ),
        )),
        Err(e) => {
            let message = strip_location(&e.to_string());
            if let Some(duplicate) = duplicate_key_error(&message, key_lines) {
                return Err(duplicate);
            }
            // serde_yaml counts from the first YAML line (1-based); the opening `---` is
            // line 1 of the file. An error at the end of the input (an unclosed `[`) is
            // shown on the last field line rather than on the closing `---`.
            let yaml_line = e
                .location()
                .map_or(1, |l| l.line().clamp(1, line_count.max(1)));
            Err(FrontmatterError::at(
                yaml_line + 1,
                format!(
                    "invalid YAML in the frontmatter: {message}; fix the syntax (quote values \
                     that contain `: ` or start with `[`, `{{`, `*`, `&` or `!`)"
                ),
            ))
        }
    }
}

/// serde_yaml places a duplicate key at the start of the mapping; point at the second
/// occurrence instead, which is the line to delete.
fn duplicate_key_error(message: &str, key_lines: &[(String, usize)]) -> Option<FrontmatterError> {
    let key = message
        .strip_prefix("duplicate entry with key \"")?
        .strip_suffix('"')?;
    let line = key_lines.iter().filter(|(k, _)| k == key).nth(1)?.1;
    Some(FrontmatterError::at(
        line,
        format!("`{key}` is set twice; keep one of the two `{key}:` lines"),
    ))
}

/// serde_yaml says `at line N column M` counted within the YAML (once for the problem, once
/// for its context); the warning carries the file's line instead, so those would mislead.
fn strip_location(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(" at line ") {
        out.push_str(&rest[..at]);
        let after = &rest[at + " at line ".len()..];
        let after = after.trim_start_matches(|c: char| c.is_ascii_digit());
        let after = after.strip_prefix(" column ").map_or(after, |a| {
            a.trim_start_matches(|c: char| c.is_ascii_digit())
        });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// `key:` at column 0 (not a comment, not a list item or continuation) with its 1-based line
/// in the file (the YAML starts on line 2).
fn top_level_keys(yaml_lines: &[&str]) -> Vec<(String, usize)> {
    yaml_lines
        .iter()
        .enumerate()
        .filter_map(|(i, line)| {
            let key = top_level_key(line)?;
            Some((key.to_string(), i + 2))
        })
        .collect()
}

fn top_level_key(line: &str) -> Option<&str> {
    let first = line.chars().next()?;
    if first.is_whitespace() || matches!(first, '#' | '-' | '[' | '{') {
        return None;
    }
    let colon = line.find(':')?;
    let key = line[..colon].trim();
    let key = key
        .strip_prefix('"')
        .and_then(|k| k.strip_suffix('"'))
        .or_else(|| key.strip_prefix('\'').and_then(|k| k.strip_suffix('\'')))
        .unwrap_or(key);
    (!key.is_empty()).then_some(key)
}

/// `argument-hint: [a] [b]` → `argument-hint: '[a] [b]'` (see [`LITERAL_KEYS`]).
fn quote_literal_value(line: &str) -> std::borrow::Cow<'_, str> {
    if let Some(key) = top_level_key(line)
        && LITERAL_KEYS.contains(&key)
        && let Some(colon) = line.find(':')
    {
        let value = line[colon + 1..].trim();
        if value.starts_with('[') {
            let quoted = value.replace('\'', "''");
            return format!("{key}: '{quoted}'").into();
        }
    }
    line.into()
}

/// Checks a skill or agent name: 1–64 characters of `a-z`, `0-9` and `-`, no leading or
/// trailing hyphen, no `--` (the Agent Skills rule, so names work as `/name` and `@name` and
/// as folder names everywhere). `Err` says what is wrong, for a warning.
pub fn validate_name(name: &str) -> Result<(), BadName> {
    let problem = if name.is_empty() {
        Some("is empty".to_string())
    } else if name.chars().count() > 64 {
        Some(format!(
            "is {} characters long (at most 64)",
            name.chars().count()
        ))
    } else if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        Some(format!("contains `{c}`"))
    } else if name.starts_with('-') || name.ends_with('-') {
        Some("starts or ends with `-`".to_string())
    } else if name.contains("--") {
        Some("contains `--`".to_string())
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(BadName {
            name: name.to_string(),
            problem,
        }),
    }
}

/// A skill or agent name that breaks the naming rule: the name, what is wrong, and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "name `{name}` {problem}; use 1-64 lowercase letters, digits and single hyphens, e.g. \
     `commit-message`"
)]
pub struct BadName {
    name: String,
    problem: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_fields_and_body() {
        let doc = parse("---\nname: x\ndescription: Does x\n---\n\n\nBody line\nmore\n").unwrap();
        assert_eq!(doc.string("name").unwrap().as_deref(), Some("x"));
        assert_eq!(doc.body, "Body line\nmore");
        assert_eq!(doc.line_of("name"), 2);
        assert_eq!(doc.line_of("description"), 3);
        assert_eq!(doc.line_of("missing"), 1);
    }

    #[test]
    fn crlf_and_bom() {
        let doc = parse("\u{feff}---\r\nname: x\r\ndescription: y\r\n---\r\nBody\r\n").unwrap();
        assert_eq!(doc.string("description").unwrap().as_deref(), Some("y"));
        assert_eq!(doc.body, "Body");
    }

    #[test]
    fn missing_frontmatter_is_line_1() {
        let err = parse("# Just markdown\n").unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.message.contains("start the file with a `---` line"));
        assert_eq!(parse("").unwrap_err().line, 1);
    }

    #[test]
    fn unclosed_frontmatter() {
        let err = parse("---\nname: x\nbody\n").unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.message.contains("never closed"), "{}", err.message);
    }

    #[test]
    fn yaml_error_reports_the_file_line() {
        // Line 4 of the file: an unterminated flow sequence.
        let err = parse("---\nname: x\ndescription: ok\ntools: [a, b\n---\nbody").unwrap_err();
        assert_eq!(err.line, 4, "{}", err.message);
        assert!(!err.message.contains("at line"), "{}", err.message);
        let err = parse("---\nname: x\n  bad: indent\n---\n").unwrap_err();
        assert_eq!(err.line, 3, "{}", err.message);
        assert!(err.message.contains("invalid YAML"));
        assert!(!err.message.contains("at line"), "{}", err.message);
    }

    #[test]
    fn duplicate_key_points_at_the_second() {
        let err = parse("---\nname: x\ndescription: d\nname: y\n---\n").unwrap_err();
        assert_eq!(err.line, 4);
        assert_eq!(
            err.message,
            "`name` is set twice; keep one of the two `name:` lines"
        );
    }

    #[test]
    fn non_mapping_frontmatter() {
        let err = parse("---\n- a\n- b\n---\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("key: value"));
    }

    #[test]
    fn empty_frontmatter_is_an_empty_mapping() {
        let doc = parse("---\n---\nbody").unwrap();
        assert!(doc.fields.is_empty());
        assert_eq!(doc.body, "body");
    }

    #[test]
    fn key_lines_skip_nested_and_comments() {
        let doc =
            parse("---\n# c\nname: x\npolicy:\n  allow: [Patch]\ntools:\n  - Read\n---\n").unwrap();
        let keys: Vec<_> = doc
            .key_lines
            .iter()
            .map(|(k, l)| (k.as_str(), *l))
            .collect();
        assert_eq!(keys, vec![("name", 3), ("policy", 4), ("tools", 6)]);
    }

    #[test]
    fn argument_hint_brackets_are_literal() {
        let doc = parse("---\nargument-hint: [pr] [priority]\n---\n").unwrap();
        assert_eq!(
            doc.string("argument-hint").unwrap().as_deref(),
            Some("[pr] [priority]")
        );
        let doc = parse("---\nargument-hint: [it's]\n---\n").unwrap();
        assert_eq!(
            doc.string("argument-hint").unwrap().as_deref(),
            Some("[it's]")
        );
    }

    #[test]
    fn typed_getters() {
        let doc = parse("---\na: yes\nb: \"true\"\nc: [x, 1]\nd: maybe\ne: 3\n---\n").unwrap();
        // YAML 1.2: `yes` is text, not a boolean.
        let err = doc.boolean("a").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("`true` or `false`"), "{}", err.message);
        assert_eq!(doc.boolean("b").unwrap(), Some(true));
        assert_eq!(doc.string_list("c").unwrap().unwrap(), vec!["x", "1"]);
        assert_eq!(doc.string_list("d").unwrap().unwrap(), vec!["maybe"]);
        assert_eq!(doc.string("e").unwrap().as_deref(), Some("3"));
        assert!(doc.string("c").is_err());
        assert_eq!(doc.string("zzz").unwrap(), None);
    }

    #[test]
    fn extra_keeps_unknown_fields() {
        let doc = parse("---\nname: x\nlicense: MIT\nmetadata:\n  k: v\n---\n").unwrap();
        let extra = doc.extra(&["name"]);
        assert_eq!(extra.len(), 2);
        assert_eq!(extra["license"], Value::String("MIT".into()));
    }

    #[test]
    fn names() {
        for ok in ["a", "commit-message", "x1", &"a".repeat(64)] {
            assert!(validate_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "A",
            "a_b",
            "-a",
            "a-",
            "a--b",
            "a b",
            "é",
            &"a".repeat(65),
        ] {
            let err = validate_name(bad).unwrap_err().to_string();
            assert!(err.contains("lowercase letters"), "{bad}: {err}");
        }
    }
}
