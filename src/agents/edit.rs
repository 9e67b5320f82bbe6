//! Writing agent files for a frontend that manages them (the web page's Agents panel): the
//! file text made from form fields, the folder a new agent goes to, and the atomic write or
//! removal. Every text is checked by the loader's own parser before it is written, so what
//! is written is exactly what the next discovery reads, with the same messages.

use std::path::{Path, PathBuf};

use serde_yaml::{Mapping, Value};

use super::{AgentDirs, AgentSource, AgentSpec};
use crate::durable;
use crate::skills::frontmatter;

/// Where a new or duplicated agent is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `$LINGGEN_HOME/agents/`: the person's own, in every workspace.
    Personal,
    /// `<root>/.linggen/agents/`: this workspace's (it grants nothing, so needs no trust).
    Project,
}

impl Scope {
    pub fn parse(word: &str) -> Option<Scope> {
        match word {
            "personal" => Some(Scope::Personal),
            "project" => Some(Scope::Project),
            _ => None,
        }
    }

    pub fn source(self) -> AgentSource {
        match self {
            Scope::Personal => AgentSource::Personal,
            Scope::Project => AgentSource::ProjectHidden,
        }
    }

    /// The folder new agents of this scope go to.
    pub fn folder(self, dirs: &AgentDirs) -> PathBuf {
        match self {
            Scope::Personal => dirs.linggen_home.join("agents"),
            Scope::Project => dirs.root.join(".linggen").join("agents"),
        }
    }

    /// What the folder must stay inside (a symlinked folder leading elsewhere is refused).
    fn base(self, dirs: &AgentDirs) -> &Path {
        match self {
            Scope::Personal => &dirs.linggen_home,
            Scope::Project => &dirs.root,
        }
    }
}

/// Why an agent file was not written.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("`{name}` cannot name an agent: it {why}; use 1-64 characters of a-z, 0-9 and -")]
    BadName { name: String, why: String },
    /// The loader's own warning line, `<path>:<line>: <what is wrong>; <what to do>`.
    #[error("{0}")]
    Invalid(String),
    #[error("{} exists already; edit that agent instead, or choose another name", .0.display())]
    Exists(PathBuf),
    #[error("{0}")]
    Refused(String),
    #[error("cannot write {}: {}", .path.display(), .source.reason())]
    Write {
        path: PathBuf,
        source: durable::WriteError,
    },
    #[error("cannot {what} {}: {source}", .path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Checks a name before it becomes part of a path: the loader's rule (a-z, 0-9, `-`), which
/// also rules out `/`, `..` and hidden files.
pub fn check_name(name: &str) -> Result<(), EditError> {
    frontmatter::validate_name(name).map_err(|why| EditError::BadName {
        name: name.to_string(),
        why: why.to_string().trim_start_matches("name ").to_string(),
    })
}

/// An agent as a form edits it. `None` leaves the field out of the file (its default).
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct AgentFields {
    pub name: Option<String>,
    pub description: Option<String>,
    pub model: Option<String>,
    pub mode: Option<String>,
    pub tools: Option<Vec<String>>,
    pub skills: Option<Vec<String>>,
    pub policy: Option<Vec<String>>,
    pub delegate_targets: Option<Vec<String>>,
    pub work_globs: Option<Vec<String>>,
    pub checks: Option<Vec<String>>,
    #[serde(default)]
    pub prompt: String,
}

/// The file text for `fields`, keeping `kept` (the fields of the file being replaced that a
/// form does not edit: linggen keeps fields it does not know).
pub fn compose(fields: &AgentFields, kept: &Mapping) -> String {
    let mut map = Mapping::new();
    let mut text = |key: &str, value: &Option<String>| {
        if let Some(v) = value.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
            map.insert(key.into(), v.into());
        }
    };
    text("name", &fields.name);
    text("description", &fields.description);
    text("model", &fields.model);
    text("mode", &fields.mode);
    let list = |items: &[String]| -> Value {
        Value::Sequence(items.iter().map(|i| Value::from(i.trim())).collect())
    };
    if let Some(tools) = &fields.tools {
        map.insert("tools".into(), list(tools));
    }
    if let Some(skills) = &fields.skills {
        map.insert("skills".into(), list(skills));
    }
    if let Some(policy) = policy(fields) {
        map.insert("policy".into(), policy);
    }
    for (key, value) in [
        ("work_globs", &fields.work_globs),
        ("checks", &fields.checks),
    ] {
        if let Some(items) = value.as_ref().filter(|i| !i.is_empty()) {
            map.insert(key.into(), list(items));
        }
    }
    for (key, value) in kept {
        if !map.contains_key(key) {
            map.insert(key.clone(), value.clone());
        }
    }
    // A mapping of strings and lists always serializes; the fallback keeps the type total.
    let yaml = serde_yaml::to_string(&map).unwrap_or_default();
    format!("---\n{yaml}---\n{}\n", fields.prompt.trim_end())
}

/// `policy: [..]`, or the mapping form when delegation targets are named.
fn policy(fields: &AgentFields) -> Option<Value> {
    let words = |items: &[String]| -> Value {
        Value::Sequence(items.iter().map(|i| Value::from(i.trim())).collect())
    };
    match (&fields.policy, &fields.delegate_targets) {
        (None, None) => None,
        (allow, Some(targets)) if !targets.is_empty() => {
            let mut map = Mapping::new();
            if let Some(allow) = allow {
                map.insert("allow".into(), words(allow));
            }
            map.insert("delegate_targets".into(), words(targets));
            Some(Value::Mapping(map))
        }
        (Some(allow), _) => Some(words(allow)),
        (None, Some(_)) => None,
    }
}

/// The fields of `text`'s frontmatter that a form does not edit (empty when it does not
/// parse: the form then replaces the file whole).
pub fn unedited_fields(text: &str) -> Mapping {
    let Ok(doc) = frontmatter::parse(text) else {
        return Mapping::new();
    };
    doc.fields
        .into_iter()
        .filter(|(k, _)| {
            !k.as_str()
                .is_some_and(|k| super::parse::KNOWN_KEYS.contains(&k))
        })
        .collect()
}

/// `text` with its `name:` set to `name` (the first frontmatter line that starts with
/// `name:` is replaced, or one is added), everything else byte for byte: a duplicate keeps
/// the original's comments and layout.
pub fn renamed(text: &str, name: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let open = lines.iter().position(|l| l.trim_end() == "---");
    let close = open.and_then(|o| {
        lines[o + 1..]
            .iter()
            .position(|l| l.trim_end() == "---")
            .map(|c| o + 1 + c)
    });
    match (open, close) {
        (Some(open), Some(close)) => {
            match (open + 1..close).find(|&i| lines[i].starts_with("name:")) {
                Some(i) => lines[i] = format!("name: {name}"),
                None => lines.insert(open + 1, format!("name: {name}")),
            }
        }
        _ => return format!("---\nname: {name}\n---\n{text}"),
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// Parses `text` as the loader would read it at `path`: the agent and the warnings about
/// parts it ignores, or the loader's own message for a file it would skip.
pub fn check(
    path: &Path,
    text: &str,
    source: AgentSource,
) -> Result<(AgentSpec, Vec<String>), EditError> {
    AgentSpec::parse_with_warnings(&path.display().to_string(), text, source)
        .map_err(EditError::Invalid)
}

/// The file a new agent `name` of `scope` is written to; the folder must not lead outside
/// its base through a symlink.
pub fn new_file(dirs: &AgentDirs, scope: Scope, name: &str) -> Result<PathBuf, EditError> {
    check_name(name)?;
    let folder = scope.folder(dirs);
    inside(&folder, scope.base(dirs))?;
    Ok(folder.join(format!("{name}.md")))
}

/// Refuses to change the file of an existing agent whose folder leads outside where agents
/// of its source live (see [`inside`]).
pub fn check_existing(dirs: &AgentDirs, source: AgentSource, path: &Path) -> Result<(), EditError> {
    let base = match source {
        AgentSource::Personal => &dirs.linggen_home,
        AgentSource::Project | AgentSource::ProjectHidden => &dirs.root,
        AgentSource::Builtin => {
            return Err(EditError::Refused(
                "a built-in agent has no file to change".to_string(),
            ));
        }
    };
    match path.parent() {
        Some(folder) => inside(folder, base),
        None => Ok(()),
    }
}

/// Refuses a folder that resolves outside `base` (a repository could ship
/// `.linggen/agents` as a symlink to a file of the person's elsewhere).
fn inside(folder: &Path, base: &Path) -> Result<(), EditError> {
    let Ok(real) = folder.canonicalize() else {
        // Not there yet: it is created below `base` itself.
        return Ok(());
    };
    let base = base.canonicalize().unwrap_or_else(|_| base.to_path_buf());
    if real.starts_with(&base) {
        return Ok(());
    }
    Err(EditError::Refused(format!(
        "{} leads to {}, outside {}; agents are not written there",
        folder.display(),
        real.display(),
        base.display()
    )))
}

/// Refuses to replace or remove anything but a regular file (a symlink in a repository's
/// agent folder could lead to any file of the person's).
fn regular(path: &Path) -> Result<(), EditError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(EditError::Refused(format!(
            "{} is a symbolic link; change the file it leads to yourself",
            path.display()
        ))),
        Ok(meta) if !meta.is_file() => Err(EditError::Refused(format!(
            "{} is not a regular file",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// Writes `text` to `path` atomically (creating its folder); with `new`, refuses a path that
/// exists.
pub fn write(path: &Path, text: &str, new: bool) -> Result<(), EditError> {
    if new && std::fs::symlink_metadata(path).is_ok() {
        return Err(EditError::Exists(path.to_path_buf()));
    }
    regular(path)?;
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).map_err(|source| EditError::Io {
            what: "create the folder",
            path: folder.to_path_buf(),
            source,
        })?;
    }
    durable::replace(path, text.as_bytes(), durable::Options::default()).map_err(|source| {
        EditError::Write {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// Removes the agent file `path`.
pub fn remove(path: &Path) -> Result<(), EditError> {
    regular(path)?;
    std::fs::remove_file(path).map_err(|source| EditError::Io {
        what: "remove",
        path: path.to_path_buf(),
        source,
    })
}

/// The frontmatter (between the `---` lines) and the body of an agent file, for a form.
/// A file without frontmatter is all body.
pub fn split(text: &str) -> (String, String) {
    let normalized = text.trim_start_matches('\u{feff}').replace("\r\n", "\n");
    let lines: Vec<&str> = normalized.split_inclusive('\n').collect();
    let is_fence = |l: &str| l.trim_end() == "---";
    if !lines.first().is_some_and(|l| is_fence(l)) {
        return (String::new(), normalized);
    }
    match lines.iter().skip(1).position(|l| is_fence(l)) {
        Some(close) => (lines[1..=close].concat(), lines[close + 2..].concat()),
        None => (String::new(), normalized),
    }
}
