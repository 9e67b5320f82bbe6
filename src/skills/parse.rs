//! One `SKILL.md` → one [`Skill`]: field types, name and description rules, and the
//! `allowed-tools` forms Claude Code accepts.

use std::path::PathBuf;

use super::frontmatter::{self, Document, FrontmatterError};
use super::{Skill, SkillKind, SkillSource};

/// The longest description the Agent Skills standard allows.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

const KNOWN_KEYS: &[&str] = &[
    "name",
    "description",
    "argument-hint",
    "disable-model-invocation",
    "user-invocable",
    "allowed-tools",
    "model",
    "context",
    "agent",
    "trigger",
];

/// Where a `SKILL.md` came from, for messages and for the name-must-match-folder rule.
#[derive(Debug, Clone)]
pub struct SkillOrigin {
    /// The path shown in messages.
    pub path: String,
    /// The folder's name (`<skills_root>/<dir_name>/SKILL.md`).
    pub dir_name: String,
    /// The folder on disk; `None` for built-ins.
    pub dir: Option<PathBuf>,
    pub source: SkillSource,
}

impl Skill {
    /// Parses one `SKILL.md`. `Ok` carries the skill and warnings about fields that were
    /// ignored (the skill still loads); `Err` is the one warning line for a skipped file,
    /// `<path>:<line>: <what is wrong>; <what to do>`.
    pub(in crate::skills) fn parse(
        text: &str,
        origin: SkillOrigin,
    ) -> Result<(Skill, Vec<String>), String> {
        let path = origin.path.clone();
        parse_document(text, origin).map_err(|e| e.warning(&path))
    }
}

fn parse_document(
    text: &str,
    origin: SkillOrigin,
) -> Result<(Skill, Vec<String>), FrontmatterError> {
    let doc = frontmatter::parse(text)?;
    let mut warnings = Vec::new();
    let name = skill_name(&doc, &origin)?;
    let description = description(&doc)?;
    let fork = fork(&doc, &origin.path, &mut warnings)?;
    let trigger = trigger(&doc, &origin.path, &mut warnings)?;
    let skill = Skill {
        name,
        description,
        argument_hint: doc.string("argument-hint")?.map(|h| h.trim().to_string()),
        disable_model_invocation: doc.boolean("disable-model-invocation")?.unwrap_or(false),
        user_invocable: doc.boolean("user-invocable")?.unwrap_or(true),
        allowed_tools: allowed_tools(&doc)?,
        model: non_empty(doc.string("model")?),
        fork,
        agent: non_empty(doc.string("agent")?),
        trigger,
        body: doc.body.clone(),
        dir: origin.dir,
        path: origin.path,
        source: origin.source,
        kind: SkillKind::Skill,
        extra: doc.extra(KNOWN_KEYS),
    };
    Ok((skill, warnings))
}

/// `name`, which must be valid and match the skill's folder; the folder's name when left
/// out.
fn skill_name(doc: &Document, origin: &SkillOrigin) -> Result<String, FrontmatterError> {
    match doc.string("name")? {
        Some(name) => {
            let name = name.trim().to_string();
            frontmatter::validate_name(&name).map_err(|m| doc.error_at("name", m))?;
            if name != origin.dir_name {
                return Err(doc.error_at(
                    "name",
                    format!(
                        "name `{name}` does not match its folder `{}`; rename the folder to \
                         `{name}` or set `name: {}`",
                        origin.dir_name, origin.dir_name
                    ),
                ));
            }
            Ok(name)
        }
        // Claude Code names a skill after its folder when `name` is left out.
        None => {
            frontmatter::validate_name(&origin.dir_name).map_err(|m| {
                doc.error_at(
                    "name",
                    format!("the folder gives the skill its {m}; rename the folder"),
                )
            })?;
            Ok(origin.dir_name.clone())
        }
    }
}

/// `description`, required (the model picks skills by it) and at most
/// `MAX_DESCRIPTION_CHARS` long.
fn description(doc: &Document) -> Result<String, FrontmatterError> {
    let description = doc
        .string("description")?
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .ok_or_else(|| {
            doc.error_at(
                "description",
                "`description` is missing; add `description: <what the skill does and when \
                 to use it>` — the model picks skills by it",
            )
        })?;
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(doc.error_at(
            "description",
            format!(
                "`description` is {chars} characters long; shorten it to at most \
                 {MAX_DESCRIPTION_CHARS} and move details into the body"
            ),
        ));
    }
    Ok(description)
}

/// `context: fork` runs the skill in a child run; an unknown value warns and runs inline.
pub(super) fn fork(
    doc: &Document,
    path: &str,
    warnings: &mut Vec<String>,
) -> Result<bool, FrontmatterError> {
    Ok(match doc.string("context")?.as_deref().map(str::trim) {
        None | Some("") => false,
        Some("fork") => true,
        Some(other) => {
            warnings.push(
                doc.error_at(
                    "context",
                    format!(
                        "unknown `context: {other}`, so the skill runs inline; only `fork` \
                         is supported, remove the field to silence this"
                    ),
                )
                .warning(path),
            );
            false
        }
    })
}

/// `trigger`: a prefix that invokes the skill; empty is an error, and one starting with `/`
/// is ignored with a warning.
fn trigger(
    doc: &Document,
    path: &str,
    warnings: &mut Vec<String>,
) -> Result<Option<String>, FrontmatterError> {
    Ok(match doc.string("trigger")? {
        Some(t) if t.trim().is_empty() => {
            return Err(doc.error_at(
                "trigger",
                "`trigger` is empty; write a prefix such as `trigger: \"!!\"` or remove the field",
            ));
        }
        // `/` always starts a command (doc/triggers.md), so such a trigger could never fire.
        Some(t) if t.starts_with('/') => {
            warnings.push(
                doc.error_at(
                    "trigger",
                    format!(
                        "trigger `{t}` starts with `/`, which always means a command, so it \
                         is ignored; pick another prefix such as `!{}`",
                        t.trim_start_matches('/')
                    ),
                )
                .warning(path),
            );
            None
        }
        other => other,
    })
}

fn non_empty(value: Option<String>) -> Option<String> {
    value
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// `allowed-tools` as a YAML list, or as Claude Code's string form
/// `Read, Grep, Bash(git diff:*)` / `Read Grep`.
pub(super) fn allowed_tools(doc: &Document) -> Result<Vec<String>, FrontmatterError> {
    let key = "allowed-tools";
    let rules = match doc.value(key) {
        Some(serde_yaml::Value::String(s)) => split_rules(s),
        _ => doc
            .string_list(key)?
            .unwrap_or_default()
            .into_iter()
            .map(|r| r.trim().to_string())
            .filter(|r| !r.is_empty())
            .collect(),
    };
    for rule in &rules {
        if !balanced(rule) {
            return Err(doc.error_at(
                key,
                format!(
                    "`allowed-tools` entry `{rule}` has unbalanced parentheses; write rules \
                     like `Read` or `Bash(git diff:*)`"
                ),
            ));
        }
    }
    Ok(rules)
}

/// Splits on commas, and on whitespace outside parentheses, so `Bash(git diff:*)` stays one
/// rule while `Read Grep` is two.
pub fn split_rules(text: &str) -> Vec<String> {
    let mut rules = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            ',' if depth == 0 => flush(&mut current, &mut rules),
            c if c.is_whitespace() && depth == 0 => flush(&mut current, &mut rules),
            c => current.push(c),
        }
    }
    flush(&mut current, &mut rules);
    rules
}

fn flush(current: &mut String, rules: &mut Vec<String>) {
    let rule = current.trim();
    if !rule.is_empty() {
        rules.push(rule.to_string());
    }
    current.clear();
}

fn balanced(rule: &str) -> bool {
    let mut depth = 0i32;
    for c in rule.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(dir: &str) -> SkillOrigin {
        SkillOrigin {
            path: format!("/s/{dir}/SKILL.md"),
            dir_name: dir.into(),
            dir: None,
            source: SkillSource::Project,
        }
    }

    fn parse(dir: &str, text: &str) -> Result<(Skill, Vec<String>), String> {
        Skill::parse(text, origin(dir))
    }

    #[test]
    fn full_skill() {
        let (s, warnings) = parse(
            "deploy",
            "---\nname: deploy\ndescription: Deploys it\nargument-hint: [env]\n\
             disable-model-invocation: true\nuser-invocable: false\n\
             allowed-tools: [Read, \"Bash(git diff:*)\"]\nmodel: local\ncontext: fork\n\
             agent: coder\ntrigger: \"!!\"\nlicense: MIT\n---\nDo it to $ARGUMENTS\n",
        )
        .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(s.name, "deploy");
        assert_eq!(s.description, "Deploys it");
        assert_eq!(s.argument_hint.as_deref(), Some("[env]"));
        assert!(s.disable_model_invocation);
        assert!(!s.user_invocable);
        assert_eq!(s.allowed_tools, vec!["Read", "Bash(git diff:*)"]);
        assert_eq!(s.model.as_deref(), Some("local"));
        assert!(s.fork);
        assert_eq!(s.agent.as_deref(), Some("coder"));
        assert_eq!(s.trigger.as_deref(), Some("!!"));
        assert_eq!(s.body, "Do it to $ARGUMENTS");
        assert_eq!(s.extra.len(), 1);
        assert_eq!(s.extra["license"], serde_yaml::Value::String("MIT".into()));
    }

    #[test]
    fn defaults() {
        let (s, _) = parse("x", "---\ndescription: d\n---\nbody").unwrap();
        assert_eq!(s.name, "x", "the folder names the skill");
        assert!(s.user_invocable);
        assert!(!s.disable_model_invocation);
        assert!(!s.fork);
        assert!(s.allowed_tools.is_empty());
        assert!(s.extra.is_empty());
    }

    #[test]
    fn allowed_tools_string_forms() {
        let (s, _) = parse(
            "x",
            "---\ndescription: d\nallowed-tools: Read, Grep, Bash(git diff:*)\n---\n",
        )
        .unwrap();
        assert_eq!(s.allowed_tools, vec!["Read", "Grep", "Bash(git diff:*)"]);
        assert_eq!(
            split_rules("Read Grep  Bash(git log:*) Bash(git status)"),
            vec!["Read", "Grep", "Bash(git log:*)", "Bash(git status)"]
        );
        assert_eq!(split_rules(" , Read,,"), vec!["Read"]);
        let err = parse(
            "x",
            "---\ndescription: d\nallowed-tools: Bash(git diff\n---\n",
        )
        .unwrap_err();
        assert!(err.starts_with("/s/x/SKILL.md:3: "), "{err}");
        assert!(err.contains("unbalanced"), "{err}");
    }

    #[test]
    fn invalid_name_is_skipped_with_its_line() {
        let err = parse("Bad_Name", "---\nname: Bad_Name\ndescription: d\n---\n").unwrap_err();
        assert!(
            err.starts_with("/s/Bad_Name/SKILL.md:2: name `Bad_Name`"),
            "{err}"
        );
        let err = parse("Bad_Name", "---\ndescription: d\n---\n").unwrap_err();
        assert!(err.contains("rename the folder"), "{err}");
    }

    #[test]
    fn name_must_match_folder() {
        let err = parse("y", "---\ndescription: d\nname: x\n---\n").unwrap_err();
        assert_eq!(
            err,
            "/s/y/SKILL.md:3: name `x` does not match its folder `y`; rename the folder to \
             `x` or set `name: y`"
        );
    }

    #[test]
    fn description_rules() {
        let err = parse("x", "---\nname: x\n---\n").unwrap_err();
        assert!(
            err.starts_with("/s/x/SKILL.md:1: `description` is missing"),
            "{err}"
        );
        let long = "d".repeat(1025);
        let err = parse("x", &format!("---\nname: x\ndescription: {long}\n---\n")).unwrap_err();
        assert!(
            err.starts_with("/s/x/SKILL.md:3: `description` is 1025 characters"),
            "{err}"
        );
        let ok = "d".repeat(1024);
        assert!(parse("x", &format!("---\ndescription: {ok}\n---\n")).is_ok());
    }

    #[test]
    fn wrong_types_name_the_line() {
        let err = parse(
            "x",
            "---\nname: x\ndescription: d\nuser-invocable: \"maybe\"\n---\n",
        )
        .unwrap_err();
        assert_eq!(
            err,
            "/s/x/SKILL.md:4: `user-invocable` is the text \"maybe\"; write `true` or `false`"
        );
        let err = parse("x", "---\ndescription: [a]\n---\n").unwrap_err();
        assert!(
            err.starts_with("/s/x/SKILL.md:2: `description` is a list"),
            "{err}"
        );
        let err = parse("x", "---\ndescription: d\nallowed-tools: {a: 1}\n---\n").unwrap_err();
        assert!(
            err.starts_with("/s/x/SKILL.md:3: `allowed-tools` is a mapping"),
            "{err}"
        );
    }

    #[test]
    fn yaml_error_line_in_warning() {
        let err = parse("x", "---\nname: x\ndescription: a: b: c\n---\n").unwrap_err();
        assert!(err.starts_with("/s/x/SKILL.md:3: invalid YAML"), "{err}");
    }

    #[test]
    fn unknown_context_warns_and_loads() {
        let (s, warnings) = parse("x", "---\ndescription: d\ncontext: inline\n---\n").unwrap();
        assert!(!s.fork);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with("/s/x/SKILL.md:3: unknown `context: inline`"),
            "{warnings:?}"
        );
    }

    #[test]
    fn slash_trigger_is_dropped_with_a_warning() {
        let (s, warnings) = parse("x", "---\ndescription: d\ntrigger: /go\n---\n").unwrap();
        assert_eq!(s.trigger, None);
        assert!(
            warnings[0].contains("pick another prefix such as `!go`"),
            "{warnings:?}"
        );
    }
}
