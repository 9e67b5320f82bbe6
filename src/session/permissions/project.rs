//! Rules the person approved with "always in this project" (`p`), kept in
//! `<root>/.linggen/permissions.toml` as `allow = ["Bash(cargo test*)", "Write(src/**)"]`.
//!
//! They load as ordinary allow rules, so they can never loosen the floor: a `Never` command
//! segment still goes to a person. The file is edited by splicing only the `allow` array, so
//! comments and any other keys a person wrote survive; writes go through a temporary file
//! and a rename, so a crash never leaves half a file behind.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::{Rule, RuleError};

/// Where the project rules live, relative to the workspace root.
pub use crate::tools::guard::paths::PROJECT_RULES_FILE as FILE;

/// Written at the top of a file this module creates, for the person who finds it.
const HEADER: &str = "# Approved with `p` (always in this project). Remove a rule with \
                      `/permissions` or by editing this file.\n";

/// Why the project's rules could not be read or changed; the file is as it was.
#[derive(Debug, thiserror::Error)]
pub enum ProjectRulesError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file does not parse, or holds a rule that does not: `at` is `path:line`.
    #[error("{at}: {message}")]
    Broken { at: String, message: String },
    /// A rule to add that does not parse.
    #[error(transparent)]
    Rule(RuleError),
    /// A rule read from the file (with its line already named) that does not parse.
    #[error("{0} (in {FILE})")]
    RuleInFile(RuleError),
    #[error("{} holds no project rules to remove", path.display())]
    NothingToRemove { path: PathBuf },
    #[error(
        "no rule `{wanted}` in {}; give the rule's text or its number: {numbered}",
        path.display()
    )]
    NoSuchRule {
        wanted: String,
        path: PathBuf,
        numbered: String,
    },
    #[error("cannot create {}: {source}", path.display())]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot save {}: {reason} — the project's rules are as they were", path.display())]
    Save { path: PathBuf, reason: String },
}

#[derive(Debug, Default, Deserialize)]
struct ProjectFile {
    allow: Option<Spanned<Vec<Spanned<String>>>>,
}

/// The file's text and where its `allow` array sits, for splicing.
struct Parsed {
    text: String,
    rules: Vec<String>,
    /// Byte range of the `allow = [...]` value; `None` when the key is absent.
    span: Option<Range<usize>>,
}

/// The project's rules; a missing file means none. A file that does not parse, or holds a
/// rule that does not, is an error naming the file and the line.
pub fn load(root: &Path) -> Result<Vec<String>, ProjectRulesError> {
    Ok(read(root)?.rules)
}

/// Adds `rule` (if it is not there yet), creating `.linggen/` and the file as needed.
pub(in crate::session) fn add(root: &Path, rule: &str) -> Result<(), ProjectRulesError> {
    let rule = rule.trim();
    Rule::parse(rule).map_err(ProjectRulesError::Rule)?;
    let mut parsed = read(root)?;
    if parsed.rules.iter().any(|r| r == rule) {
        return Ok(());
    }
    parsed.rules.push(rule.to_string());
    write(root, &parsed)
}

/// Removes a rule given as its exact text or its 1-based position (as `/permissions`
/// lists them); returns the rule that was removed.
pub fn remove(root: &Path, rule_or_index: &str) -> Result<String, ProjectRulesError> {
    let wanted = rule_or_index.trim();
    let mut parsed = read(root)?;
    let position = match wanted.parse::<usize>() {
        Ok(n) if (1..=parsed.rules.len()).contains(&n) => Some(n - 1),
        _ => parsed.rules.iter().position(|r| r == wanted),
    };
    let Some(index) = position else {
        let path = path_of(root);
        return Err(if parsed.rules.is_empty() {
            ProjectRulesError::NothingToRemove { path }
        } else {
            ProjectRulesError::NoSuchRule {
                wanted: wanted.to_string(),
                path,
                numbered: numbered(&parsed.rules),
            }
        });
    };
    let removed = parsed.rules.remove(index);
    write(root, &parsed)?;
    Ok(removed)
}

fn path_of(root: &Path) -> PathBuf {
    root.join(FILE)
}

fn numbered(rules: &[String]) -> String {
    rules
        .iter()
        .enumerate()
        .map(|(i, r)| format!("{}. {r}", i + 1))
        .collect::<Vec<_>>()
        .join(", ")
}

fn read(root: &Path) -> Result<Parsed, ProjectRulesError> {
    let path = path_of(root);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(ProjectRulesError::Read { path, source }),
    };
    let at = |span: Option<Range<usize>>, message: &str| ProjectRulesError::Broken {
        at: match span {
            Some(span) => format!("{}:{}", path.display(), line_of(&text, span.start)),
            None => path.display().to_string(),
        },
        message: message.to_string(),
    };
    let file: ProjectFile =
        toml::from_str(&text).map_err(|e| at(e.span(), e.message().trim_end()))?;
    let Some(allow) = file.allow else {
        return Ok(Parsed {
            text,
            rules: Vec::new(),
            span: None,
        });
    };
    let span = allow.span();
    let mut rules = Vec::new();
    for entry in allow.into_inner() {
        let entry_span = entry.span();
        let rule = entry.into_inner().trim().to_string();
        Rule::parse(&rule).map_err(|e| at(Some(entry_span), &e.to_string()))?;
        if !rules.contains(&rule) {
            rules.push(rule);
        }
    }
    Ok(Parsed {
        text,
        rules,
        span: Some(span),
    })
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Writes `parsed.rules` back, replacing only the `allow` array (or adding the key in
/// front, where it is still a top-level key whatever tables follow).
fn write(root: &Path, parsed: &Parsed) -> Result<(), ProjectRulesError> {
    let array = format_array(&parsed.rules);
    let text = match &parsed.span {
        Some(span) => format!(
            "{}{array}{}",
            &parsed.text[..span.start],
            &parsed.text[span.end..]
        ),
        None if parsed.text.trim().is_empty() => format!("{HEADER}allow = {array}\n"),
        None => format!("allow = {array}\n{}", parsed.text),
    };
    let path = path_of(root);
    let dir = path.parent().unwrap_or(root);
    std::fs::create_dir_all(dir).map_err(|source| ProjectRulesError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })?;
    // Durable: a crash or a full disk leaves the rules as they were, never half a file. A
    // symlink there is replaced, never followed: the repository decides where it leads.
    let options = crate::durable::Options {
        through_symlinks: false,
        ..crate::durable::Options::default()
    };
    crate::durable::replace(&path, text.as_bytes(), options).map_err(|e| ProjectRulesError::Save {
        reason: e.reason(),
        path,
    })
}

fn format_array(rules: &[String]) -> String {
    if rules.is_empty() {
        return "[]".to_string();
    }
    let lines: String = rules
        .iter()
        // `Value`'s display quotes and escapes the string as TOML requires.
        .map(|r| format!("    {},\n", toml::Value::String(r.clone())))
        .collect();
    format!("[\n{lines}]")
}

#[cfg(test)]
#[path = "project_tests.rs"]
mod tests;
