//! One agent file → one [`AgentSpec`]: name, tools, policy and work globs.

use std::path::Path;

use serde_yaml::Value;

use super::{AgentSource, AgentSpec, Capability, ToolAllow};
use crate::skills::frontmatter::{self, Document, FrontmatterError, describe};

pub(super) const KNOWN_KEYS: &[&str] = &[
    "name",
    "description",
    "tools",
    "model",
    "work_globs",
    "policy",
    "mode",
    "checks",
    "skills",
];

/// What `policy` grants when it is left out: the agent may edit and finish, not delegate.
pub const DEFAULT_CAPABILITIES: &[Capability] = &[Capability::Patch, Capability::Finalize];

impl Capability {
    pub fn name(self) -> &'static str {
        match self {
            Capability::Patch => "Patch",
            Capability::Finalize => "Finalize",
            Capability::Delegate => "Delegate",
        }
    }

    /// Case-insensitive.
    pub fn from_name(name: &str) -> Option<Capability> {
        [
            Capability::Patch,
            Capability::Finalize,
            Capability::Delegate,
        ]
        .into_iter()
        .find(|c| c.name().eq_ignore_ascii_case(name.trim()))
    }
}

impl AgentSpec {
    /// Parses one agent file, dropping the warnings about ignored parts (see
    /// [`AgentSpec::parse_with_warnings`]). `path` is the label used in messages; its file
    /// stem is the default name.
    #[cfg(test)]
    pub(in crate::agents) fn parse(
        path: &str,
        text: &str,
        source: AgentSource,
    ) -> Result<AgentSpec, String> {
        AgentSpec::parse_with_warnings(path, text, source).map(|(spec, _)| spec)
    }

    /// Parses one agent file. `Ok` carries the agent and warnings about parts that were
    /// ignored (an unknown tool name: the agent loads without it); `Err` is the one warning
    /// line for a skipped file, `<path>:<line>: <what is wrong>; <what to do>`.
    pub(in crate::agents) fn parse_with_warnings(
        path: &str,
        text: &str,
        source: AgentSource,
    ) -> Result<(AgentSpec, Vec<String>), String> {
        parse_document(path, text, source).map_err(|e| e.warning(path))
    }

    /// Whether writing `rel` (relative to the root, `/`-separated) is within `work_globs`.
    pub fn may_write(&self, rel: &str) -> bool {
        self.check_write(rel).is_ok()
    }
}

fn parse_document(
    path: &str,
    text: &str,
    source: AgentSource,
) -> Result<(AgentSpec, Vec<String>), FrontmatterError> {
    let doc = frontmatter::parse(text)?;
    let mut warnings = Vec::new();
    let name = match doc.string("name")? {
        Some(name) => {
            let name = name.trim().to_string();
            frontmatter::validate_name(&name).map_err(|m| doc.error_at("name", m))?;
            name
        }
        None => {
            let stem = Path::new(path)
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_string();
            frontmatter::validate_name(&stem).map_err(|m| {
                doc.error_at(
                    "name",
                    format!(
                        "the file name gives the agent its {m}; rename the file or add `name:`"
                    ),
                )
            })?;
            stem
        }
    };
    let tools = tools(&doc, &name, path, &mut warnings)?;
    let (capabilities, delegate_targets) = policy(&doc, path, &mut warnings)?;
    let (work_globs, work_matcher) = work_globs(&doc)?;
    let mode = match doc.string("mode")? {
        None => None,
        Some(m) => Some(crate::config::TurnMode::parse(&m).ok_or_else(|| {
            doc.error_at(
                "mode",
                format!(
                    "`mode: {}` is not a mode; write chat, auto or talk",
                    m.trim()
                ),
            )
        })?),
    };
    let checks = doc
        .string_list("checks")?
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect();
    let skills = skills(&doc)?;
    let spec = AgentSpec {
        name,
        description: doc
            .string("description")?
            .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default(),
        tools,
        model: doc
            .string("model")?
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty()),
        work_globs,
        work_matcher,
        capabilities,
        delegate_targets,
        mode,
        checks,
        skills,
        skills_line: doc.line_of("skills"),
        prompt: doc.body.trim_end().to_string(),
        path: path.to_string(),
        source,
        extra: doc.extra(KNOWN_KEYS),
    };
    Ok((spec, warnings))
}

/// The canonical name of a tool an agent file lists, or `None` when linggen has no such tool.
pub fn canonical_tool(name: &str) -> Option<&'static str> {
    crate::tools::canonical_name(name)
}

fn tools(
    doc: &Document,
    agent: &str,
    path: &str,
    warnings: &mut Vec<String>,
) -> Result<ToolAllow, FrontmatterError> {
    let Some(listed) = doc.string_list("tools")? else {
        return Ok(ToolAllow::All);
    };
    if listed.iter().any(|t| t.trim() == "*") {
        return Ok(ToolAllow::All);
    }
    let mut names: Vec<String> = Vec::new();
    for tool in &listed {
        // An MCP server's tools are registered while the session runs, so their names are
        // kept as written (`mcp__github__create_issue`, `mcp__github__*`, `mcp__github`).
        let mcp = tool.trim().starts_with("mcp__").then(|| tool.trim());
        match canonical_tool(tool).or(mcp) {
            Some(canonical) => {
                if !names.iter().any(|n| n == canonical) {
                    names.push(canonical.to_string());
                }
            }
            None => warnings.push(
                doc.error_at(
                    "tools",
                    format!(
                        "unknown tool `{}`, so agent `{agent}` loads without it; use one of {}, \
                         or `\"*\"` for all",
                        tool.trim(),
                        known_tools().join(", ")
                    ),
                )
                .warning(path),
            ),
        }
    }
    Ok(ToolAllow::Only(names))
}

fn known_tools() -> Vec<&'static str> {
    crate::tools::all_tool_names()
}

/// `skills: [review, fe:lint]` (or one string, split on commas and spaces); `"*"` or no
/// field means every skill. A name that no skill has is a warning made once skills are
/// known ([`super::AgentSet::unknown_skill_warnings`]); one that cannot be a skill's name is
/// an error, like every other mistake that would silently change what the agent sees.
fn skills(doc: &Document) -> Result<Option<Vec<String>>, FrontmatterError> {
    let key = "skills";
    let value = match doc.value(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(value) => value,
    };
    let names = words(doc, value, key).map_err(|_| {
        doc.type_error(key, value, "skill names such as `skills: [review, deploy]`")
    })?;
    if names.iter().any(|n| n == "*") {
        return Ok(None);
    }
    let mut listed: Vec<String> = Vec::new();
    for name in names {
        let well_formed = name.chars().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | ':' | '.')
        });
        if !well_formed {
            return Err(doc.error_at(
                key,
                format!(
                    "`skills` entry `{name}` is not a skill name; write the names `/skills` \
                     lists, such as `skills: [review, deploy]`, or `\"*\"` for all"
                ),
            ));
        }
        if !listed.contains(&name) {
            listed.push(name);
        }
    }
    Ok(Some(listed))
}

type Policy = (Vec<Capability>, Option<Vec<String>>);

/// `policy: [Patch, Finalize]` or `policy: {allow: [...], delegate_targets: [...]}`.
/// Mistakes here are errors, not warnings: a typo must not silently grant or drop rights.
fn policy(
    doc: &Document,
    path: &str,
    warnings: &mut Vec<String>,
) -> Result<Policy, FrontmatterError> {
    let key = "policy";
    let (allow, targets) = match doc.value(key) {
        None | Some(Value::Null) => return Ok((DEFAULT_CAPABILITIES.to_vec(), None)),
        Some(Value::String(_) | Value::Sequence(_)) => (doc.value(key), None),
        Some(Value::Mapping(map)) => {
            for k in map.keys() {
                let known = matches!(k.as_str(), Some("allow" | "delegate_targets"));
                if !known {
                    return Err(doc.error_at(
                        key,
                        format!(
                            "`policy` has an unknown field {}; write `policy: {{allow: [Patch, \
                             Finalize, Delegate], delegate_targets: [coder]}}`",
                            describe(k)
                        ),
                    ));
                }
            }
            (map.get("allow"), map.get("delegate_targets"))
        }
        Some(other) => {
            return Err(doc.type_error(
                key,
                other,
                "a list such as `policy: [Patch, Finalize]` or a mapping such as \
                 `policy: {allow: [Patch, Finalize, Delegate], delegate_targets: [coder]}`",
            ));
        }
    };
    let capabilities = match allow {
        None | Some(Value::Null) => DEFAULT_CAPABILITIES.to_vec(),
        Some(value) => capabilities(doc, value)?,
    };
    let delegate_targets = match targets {
        None | Some(Value::Null) => None,
        Some(value) => delegate_targets(doc, value)?,
    };
    if delegate_targets.is_some() && !capabilities.contains(&Capability::Delegate) {
        warnings.push(
            doc.error_at(
                key,
                "`delegate_targets` has no effect without `Delegate` in `allow`; add \
                 `Delegate` or remove `delegate_targets`",
            )
            .warning(path),
        );
    }
    Ok((capabilities, delegate_targets))
}

fn capabilities(doc: &Document, value: &Value) -> Result<Vec<Capability>, FrontmatterError> {
    let mut caps = Vec::new();
    for word in words(doc, value, "policy")? {
        let cap = Capability::from_name(&word).ok_or_else(|| {
            doc.error_at(
                "policy",
                format!(
                    "unknown capability `{word}` in `policy`; use Patch (edit files), Finalize \
                     (finish with an answer) and Delegate (hand tasks to other agents)"
                ),
            )
        })?;
        caps.push(cap);
    }
    caps.sort();
    caps.dedup();
    Ok(caps)
}

/// `None` for `"*"` (any agent).
fn delegate_targets(
    doc: &Document,
    value: &Value,
) -> Result<Option<Vec<String>>, FrontmatterError> {
    let targets = words(doc, value, "policy")?;
    if targets.iter().any(|t| t == "*") {
        return Ok(None);
    }
    for target in &targets {
        frontmatter::validate_name(target)
            .map_err(|m| doc.error_at("policy", format!("in `delegate_targets`: {m}")))?;
    }
    Ok(Some(targets))
}

/// A list or a single string of names, split on commas and whitespace.
fn words(doc: &Document, value: &Value, key: &str) -> Result<Vec<String>, FrontmatterError> {
    let items: Vec<&Value> = match value {
        Value::Sequence(items) => items.iter().collect(),
        other => vec![other],
    };
    let mut words = Vec::new();
    for item in items {
        let Value::String(s) = item else {
            return Err(doc.type_error(key, item, "names such as `[Patch, Finalize]`"));
        };
        words.extend(
            s.split(|c: char| c == ',' || c.is_whitespace())
                .filter(|w| !w.is_empty())
                .map(str::to_string),
        );
    }
    Ok(words)
}

/// Compiles `work_globs`. Globs are relative to the workspace root: a leading `./` or `/`
/// is dropped, a trailing `/` means everything below (`src/` = `src/**`), and `*` does not
/// cross `/` (only `**` does), as in `.gitignore`.
fn work_globs(doc: &Document) -> Result<(Vec<String>, Option<globset::GlobSet>), FrontmatterError> {
    let Some(globs) = doc.string_list("work_globs")? else {
        return Ok((Vec::new(), None));
    };
    let globs: Vec<String> = globs
        .into_iter()
        .map(|g| g.trim().to_string())
        .filter(|g| !g.is_empty())
        .collect();
    if globs.is_empty() {
        return Ok((globs, None));
    }
    let mut builder = globset::GlobSetBuilder::new();
    for glob in &globs {
        let mut pattern = glob
            .trim_start_matches("./")
            .trim_start_matches('/')
            .to_string();
        if pattern.ends_with('/') {
            pattern.push_str("**");
        }
        let compiled = globset::GlobBuilder::new(&pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| {
                doc.error_at(
                    "work_globs",
                    format!(
                        "`work_globs` entry `{glob}` is not a valid glob ({}); write globs \
                         relative to the workspace root such as `src/**` or `docs/*.md`",
                        e.kind()
                    ),
                )
            })?;
        builder.add(compiled);
    }
    let set = builder.build().map_err(|e| {
        doc.error_at(
            "work_globs",
            format!("`work_globs` cannot be compiled ({e}); simplify the globs"),
        )
    })?;
    Ok((globs, Some(set)))
}
