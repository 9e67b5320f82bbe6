//! Custom commands in Claude Code's format: every `*.md` under a commands folder is one
//! command named after its path (`fix-issue.md` → `fix-issue`, `frontend/review.md` →
//! `frontend:review`). Frontmatter is optional; without it the whole file is the body and
//! its first line the description. A command loads as a [`Skill`] of the kind
//! [`SkillKind::Command`], so everything that invokes, lists and completes skills serves
//! commands too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::discover::{MAX_FILE_BYTES, dedup_roots, read_capped, read_folder};
use super::frontmatter::{self, FrontmatterError};
use super::{Skill, SkillDirs, SkillKind, SkillSource};

/// Folders nested deeper than this below a commands folder are not read: names that long
/// are nobody's commands, and the cap bounds a symlink loop.
const MAX_DEPTH: usize = 5;
/// Files read from one commands folder at most, so a huge tree dropped there (a checkout,
/// a `node_modules`) costs little and says so.
const MAX_FILES: usize = 500;

/// The fields a command file may set (Claude Code's); others are kept in `extra`.
const KNOWN_KEYS: &[&str] = &[
    "description",
    "argument-hint",
    "allowed-tools",
    "model",
    "disable-model-invocation",
    "context",
    "agent",
];

/// The description taken from a body without one is cut to this many characters.
const FIRST_LINE_CHARS: usize = 120;

/// The command folders with their source, highest priority first, without duplicates. The
/// person's own come before the project's, so a repository cannot replace a command the
/// person wrote; when the root is the home folder, `.claude/commands` stays the person's.
pub(crate) fn roots(dirs: &SkillDirs) -> Vec<(PathBuf, SkillSource)> {
    let mut roots = vec![(dirs.linggen_home.join("commands"), SkillSource::Personal)];
    if let Some(home) = &dirs.user_home {
        roots.push((home.join(".claude").join("commands"), SkillSource::Claude));
    }
    roots.push((
        dirs.root.join(".linggen").join("commands"),
        SkillSource::Project,
    ));
    roots.push((
        dirs.root.join(".claude").join("commands"),
        SkillSource::Project,
    ));
    dedup_roots(&mut roots);
    roots
}

/// Every command file of every folder, in priority order (folder by folder, each sorted by
/// name), parsed; the warnings name skipped files. Clashes are the caller's to settle.
pub(crate) fn discover(dirs: &SkillDirs, warnings: &mut Vec<String>) -> Vec<Skill> {
    let mut commands = Vec::new();
    for (root, source) in roots(dirs) {
        for (name, file) in command_files(&root, warnings) {
            let path = file.display().to_string();
            let text = match read_capped(&file, MAX_FILE_BYTES) {
                Ok(Some(text)) => text,
                // Gone between listing and reading: a live edit; the next reload sees it.
                Ok(None) => continue,
                Err(warning) => {
                    warnings.push(warning.to_string());
                    continue;
                }
            };
            match parse_warning(&text, name, path.clone(), source) {
                Ok((command, warned)) => {
                    commands.push(command);
                    warnings.extend(warned);
                }
                Err(e) => warnings.push(e.warning(&path)),
            }
        }
    }
    commands
}

/// The `*.md` files under `root` with the command name each gives, sorted by name.
fn command_files(root: &Path, warnings: &mut Vec<String>) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    let mut walk = Walk {
        warnings,
        found: &mut found,
        capped: false,
    };
    walk.folder(root, &[], 0);
    if walk.capped {
        walk.warnings.push(format!(
            "{}: more than {MAX_FILES} files, so only the first {MAX_FILES} are read as \
             commands; keep only command files there",
            root.display()
        ));
    }
    found.sort();
    found
}

struct Walk<'a> {
    warnings: &'a mut Vec<String>,
    found: &'a mut Vec<(String, PathBuf)>,
    capped: bool,
}

impl Walk<'_> {
    /// Reads one folder; `prefix` are the names of the folders above it (the command's group).
    fn folder(&mut self, dir: &Path, prefix: &[String], depth: usize) {
        let what = "commands";
        let layout = "`<name>.md` files";
        let Some(entries) = read_folder(dir, what, layout, self.warnings) else {
            return;
        };
        let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            if self.found.len() >= MAX_FILES {
                self.capped = true;
                return;
            }
            let Some(file_name) = path.file_name().and_then(|n| n.to_str()) else {
                self.warnings.push(format!(
                    "{}: the name is not valid UTF-8, so it is skipped; rename it",
                    path.display()
                ));
                continue;
            };
            if file_name.starts_with('.') {
                continue;
            }
            // Follows symlinks on purpose, as for skills; MAX_DEPTH bounds a loop.
            if path.is_dir() {
                if depth >= MAX_DEPTH {
                    self.warnings.push(format!(
                        "{}: more than {MAX_DEPTH} folders deep, so its commands are not read; \
                         move them up",
                        path.display()
                    ));
                    continue;
                }
                let mut inner = prefix.to_vec();
                inner.push(file_name.to_string());
                self.folder(&path, &inner, depth + 1);
                continue;
            }
            let Some(stem) = file_name.strip_suffix(".md") else {
                continue;
            };
            let mut parts = prefix.to_vec();
            parts.push(stem.to_string());
            match command_name(&parts) {
                Ok(name) => self.found.push((name, path)),
                Err(why) => self
                    .warnings
                    .push(format!("{}: {why}, so it is skipped", path.display())),
            }
        }
    }
}

/// `["frontend", "review"]` → `frontend:review`, each part checked: the name is typed after
/// `/` and ends at the first space, and `:` separates the parts.
fn command_name(parts: &[String]) -> Result<String, String> {
    for part in parts {
        let valid = part
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
            && part
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid {
            return Err(format!(
                "`{part}` cannot be part of a command name; rename it to letters, digits, \
                 `-`, `_` and `.`, starting with a letter or digit"
            ));
        }
    }
    Ok(parts.join(":"))
}

/// One command file → one [`Skill`] of the kind [`SkillKind::Command`]. `Err` is the
/// problem at its line; the file is then skipped.
#[cfg(test)]
pub(crate) fn parse(
    text: &str,
    name: String,
    path: String,
    source: SkillSource,
) -> Result<Skill, FrontmatterError> {
    parse_warning(text, name, path, source).map(|(command, _)| command)
}

/// [`parse`], with the warnings about fields that were read but not taken (an unknown
/// `context`).
fn parse_warning(
    text: &str,
    name: String,
    path: String,
    source: SkillSource,
) -> Result<(Skill, Vec<String>), FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let opens_frontmatter = text.lines().next().is_some_and(|l| l.trim_end() == "---");
    let mut warnings = Vec::new();
    let mut command = Skill {
        name,
        description: String::new(),
        argument_hint: None,
        // A command is the person's shortcut unless its file says the model may run it
        // (`disable-model-invocation: false`): a repository's commands are not offered to
        // the model behind the person's back.
        disable_model_invocation: true,
        user_invocable: true,
        allowed_tools: Vec::new(),
        model: None,
        fork: false,
        agent: None,
        trigger: None,
        body: String::new(),
        dir: None,
        path,
        source,
        kind: SkillKind::Command,
        extra: BTreeMap::new(),
    };
    if opens_frontmatter {
        let doc = frontmatter::parse(text)?;
        command.description = non_empty(doc.string("description")?).unwrap_or_default();
        command.argument_hint = non_empty(doc.string("argument-hint")?);
        command.allowed_tools = super::parse::allowed_tools(&doc)?;
        command.model = non_empty(doc.string("model")?);
        command.disable_model_invocation = doc.boolean("disable-model-invocation")?.unwrap_or(true);
        command.fork = super::parse::fork(&doc, &command.path, &mut warnings)?;
        command.agent = non_empty(doc.string("agent")?);
        command.body = doc.body.clone();
        command.extra = doc.extra(KNOWN_KEYS);
    } else {
        command.body = text
            .lines()
            .skip_while(|l| l.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n");
    }
    if command.description.is_empty() {
        command.description = first_line(&command.body);
    }
    Ok((command, warnings))
}

fn non_empty(value: Option<String>) -> Option<String> {
    value
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The body's first non-empty line without its heading marks, as Claude Code describes a
/// command that has no `description`.
fn first_line(body: &str) -> String {
    let line = body
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    let mut cut: String = line.chars().take(FIRST_LINE_CHARS).collect();
    if line.chars().count() > FIRST_LINE_CHARS {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn dirs(base: &Path) -> SkillDirs {
        SkillDirs {
            linggen_home: base.join("lh"),
            root: base.join("repo"),
            user_home: Some(base.join("home")),
        }
    }

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn names_come_from_paths_and_nesting_gives_groups() {
        let tmp = tempfile::tempdir().unwrap();
        let d = dirs(tmp.path());
        let project = d.root.join(".claude/commands");
        write(&project.join("fix-issue.md"), "Fix issue $ARGUMENTS\n");
        write(&project.join("frontend/review.md"), "Review the UI\n");
        write(&project.join("frontend/deep/x_y.md"), "x\n");
        write(&project.join("notes.txt"), "not a command");
        write(&project.join(".hidden.md"), "skipped");
        write(&project.join("bad name.md"), "skipped with a warning");
        let mut warnings = Vec::new();
        let found = discover(&d, &mut warnings);
        let names: Vec<&str> = found.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["fix-issue", "frontend:deep:x_y", "frontend:review"]);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("bad name.md") && warnings[0].contains("`bad name`"),
            "{warnings:?}"
        );
        let fix = &found[0];
        assert_eq!(fix.kind, SkillKind::Command);
        assert_eq!(fix.source, SkillSource::Project);
        assert_eq!(fix.description, "Fix issue $ARGUMENTS");
        assert!(fix.disable_model_invocation && fix.user_invocable);
        assert_eq!(fix.render("7"), "Fix issue 7");
    }

    #[test]
    fn frontmatter_fields() {
        let text = "---\ndescription: Fix an issue\nargument-hint: [number]\n\
                    allowed-tools: Bash(git log:*), Read\nmodel: local\nlicense: MIT\n---\n\n\
                    # Fix\nDo $1\n";
        let c = parse(text, "fix".into(), "f.md".into(), SkillSource::Claude).unwrap();
        assert_eq!(c.description, "Fix an issue");
        assert_eq!(c.argument_hint.as_deref(), Some("[number]"));
        assert_eq!(c.allowed_tools, ["Bash(git log:*)", "Read"]);
        assert_eq!(c.model.as_deref(), Some("local"));
        assert_eq!(c.body, "# Fix\nDo $1");
        assert_eq!(c.extra.len(), 1);
        let list = "---\nallowed-tools:\n  - Bash(git status:*)\n  - Grep\n---\nbody";
        let c = parse(list, "x".into(), "x.md".into(), SkillSource::Claude).unwrap();
        assert_eq!(c.allowed_tools, ["Bash(git status:*)", "Grep"]);
        assert_eq!(c.description, "body", "the first line describes it");
        let err = parse(
            "---\ndescription: [a\n---\n",
            "x".into(),
            "x.md".into(),
            SkillSource::Project,
        )
        .unwrap_err();
        assert!(err.warning("x.md").starts_with("x.md:2: invalid YAML"));
    }

    #[test]
    fn description_without_frontmatter_is_the_first_line() {
        assert_eq!(
            first_line("\n\n## Review the diff  \nmore"),
            "Review the diff"
        );
        let long = "w".repeat(200);
        assert_eq!(first_line(&long).chars().count(), FIRST_LINE_CHARS + 1);
        assert_eq!(first_line(""), "");
    }

    #[test]
    fn folders_in_priority_order_and_deduplicated() {
        let tmp = tempfile::tempdir().unwrap();
        let d = dirs(tmp.path());
        let home = d.user_home.clone().unwrap();
        assert_eq!(
            roots(&d),
            vec![
                (d.linggen_home.join("commands"), SkillSource::Personal),
                (home.join(".claude/commands"), SkillSource::Claude),
                (d.root.join(".linggen/commands"), SkillSource::Project),
                (d.root.join(".claude/commands"), SkillSource::Project),
            ]
        );
        // Run in the home folder: `~/.claude/commands` is still the person's own.
        let at_home = SkillDirs {
            root: home.clone(),
            ..d
        };
        let roots = roots(&at_home);
        assert_eq!(roots.len(), 3);
        assert!(roots.contains(&(home.join(".claude/commands"), SkillSource::Claude)));
    }

    #[test]
    fn a_huge_folder_is_capped_with_a_warning() {
        let tmp = tempfile::tempdir().unwrap();
        let d = dirs(tmp.path());
        let folder = d.linggen_home.join("commands");
        fs::create_dir_all(&folder).unwrap();
        for i in 0..MAX_FILES + 3 {
            fs::write(folder.join(format!("c{i:04}.md")), "x").unwrap();
        }
        let mut warnings = Vec::new();
        assert_eq!(discover(&d, &mut warnings).len(), MAX_FILES);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("more than 500 files"), "{warnings:?}");
    }
}
