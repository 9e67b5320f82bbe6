//! Finding skills: `<skills_root>/<name>/SKILL.md` in each root, highest priority first,
//! then the built-ins compiled into the binary. Only that one level is read, so a skills
//! folder next to a huge tree costs one `read_dir`. Custom commands ([`super::commands`])
//! join the same set here, with the clash rules of [`discover`].

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::parse::SkillOrigin;
use super::{Skill, SkillDirs, SkillKind, SkillSet, SkillSource};

/// The built-in skills: (folder name, `SKILL.md` text).
const BUILTIN: &[(&str, &str)] = &[
    (
        "commit-message",
        include_str!("../../skills/commit-message/SKILL.md"),
    ),
    ("explain", include_str!("../../skills/explain/SKILL.md")),
    ("review", include_str!("../../skills/review/SKILL.md")),
];

/// A `SKILL.md` larger than this is not a prompt anyone meant to send to a model.
pub(crate) const MAX_FILE_BYTES: u64 = 256 * 1024;

/// The on-disk skill roots with their source, highest priority first, without duplicates
/// (`$LINGGEN_HOME` can be `<root>/.linggen` when linggen runs in the home folder).
pub(super) fn roots(dirs: &SkillDirs) -> Vec<(PathBuf, SkillSource)> {
    let mut roots = vec![
        (dirs.linggen_home.join("skills"), SkillSource::Personal),
        (
            dirs.root.join(".linggen").join("skills"),
            SkillSource::Project,
        ),
        (
            dirs.root.join(".agents").join("skills"),
            SkillSource::Project,
        ),
    ];
    if let Some(home) = &dirs.user_home {
        roots.push((home.join(".claude").join("skills"), SkillSource::Claude));
        roots.push((home.join(".codex").join("skills"), SkillSource::Codex));
    }
    dedup_roots(&mut roots);
    roots
}

/// Drops later duplicates of a folder, keeping the first (highest-priority) source.
pub(crate) fn dedup_roots<S>(roots: &mut Vec<(PathBuf, S)>) {
    let mut seen = Vec::new();
    roots.retain(|(path, _)| {
        let fresh = !seen.contains(path);
        seen.push(path.clone());
        fresh
    });
}

/// Lists a discovery folder. A missing folder is simply empty; a file in its place or an
/// unreadable folder is a warning that names `what` it should hold and how (`layout`).
pub(crate) fn read_folder(
    root: &Path,
    what: &str,
    layout: &str,
    warnings: &mut Vec<String>,
) -> Option<std::fs::ReadDir> {
    match std::fs::read_dir(root) {
        Ok(entries) => Some(entries),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            warnings.push(format!(
                "{}: is a file, not a folder, so no {what} are read from it; move it away \
                 and create a folder of {layout} there",
                root.display()
            ));
            None
        }
        Err(e) => {
            warnings.push(format!(
                "{}: cannot read the {what} folder ({e}); check its permissions",
                root.display()
            ));
            None
        }
    }
}

/// Skills, then commands, then the built-in skills: on a name clash the earlier wins. A
/// clash that involves a command is one warning naming both files and the winner; between
/// skills the order is the documented override (a personal `review` replaces the
/// built-in one) and says nothing.
pub(super) fn discover(dirs: &SkillDirs) -> SkillSet {
    let mut by_name: BTreeMap<String, Skill> = BTreeMap::new();
    let mut warnings = Vec::new();
    for (root, source) in roots(dirs) {
        for (dir_name, dir) in skill_folders(&root, &mut warnings) {
            let file = dir.join("SKILL.md");
            let path = file.display().to_string();
            let text = match read_skill_file(&file) {
                Ok(Some(text)) => text,
                // A folder without SKILL.md is not a skill (it may hold shared scripts).
                Ok(None) => continue,
                Err(warning) => {
                    warnings.push(warning);
                    continue;
                }
            };
            let origin = SkillOrigin {
                path,
                dir_name,
                dir: Some(dir),
                source,
            };
            add_parsed(&mut by_name, Skill::parse(&text, origin), &mut warnings);
        }
    }
    for command in super::commands::discover(dirs, &mut warnings) {
        add(&mut by_name, command, &mut warnings);
    }
    for (name, text) in BUILTIN {
        let origin = SkillOrigin {
            path: format!("built-in skills/{name}/SKILL.md"),
            dir_name: (*name).to_string(),
            dir: None,
            source: SkillSource::Builtin,
        };
        add_parsed(&mut by_name, Skill::parse(text, origin), &mut warnings);
    }
    SkillSet {
        skills: by_name.into_values().collect(),
        warnings,
    }
}

fn add_parsed(
    by_name: &mut BTreeMap<String, Skill>,
    parsed: Result<(Skill, Vec<String>), String>,
    warnings: &mut Vec<String>,
) {
    match parsed {
        Ok((skill, skill_warnings)) => {
            warnings.extend(skill_warnings);
            add(by_name, skill, warnings);
        }
        Err(warning) => warnings.push(warning),
    }
}

/// Adds `skill` unless its name is taken (by something found earlier, which wins).
fn add(by_name: &mut BTreeMap<String, Skill>, skill: Skill, warnings: &mut Vec<String>) {
    match by_name.get(&skill.name) {
        None => {
            by_name.insert(skill.name.clone(), skill);
        }
        Some(winner) => {
            if winner.kind == SkillKind::Command || skill.kind == SkillKind::Command {
                warnings.push(clash(winner, &skill));
            }
        }
    }
}

/// `<loser's path>: /name is also <the winner> (<its path>), which wins; …`, or, when a
/// command replaces a built-in skill, the same said from the command's file.
fn clash(winner: &Skill, loser: &Skill) -> String {
    if loser.source == SkillSource::Builtin {
        return format!(
            "{}: /{} replaces the built-in skill `{}`; rename this file to keep the built-in one",
            winner.path, winner.name, loser.name
        );
    }
    let what = match winner.kind {
        SkillKind::Command => "the command",
        SkillKind::Skill => "the skill",
    };
    let rename = match loser.kind {
        SkillKind::Command => "rename this file",
        SkillKind::Skill => "rename this skill's folder",
    };
    format!(
        "{}: /{} is also {what} in {}, which wins; {rename} to use it",
        loser.path, loser.name, winner.path
    )
}

/// The sub-folders of a skills root, sorted by name. A missing root is normal (nothing to
/// warn about); an unreadable one is a warning.
fn skill_folders(root: &Path, warnings: &mut Vec<String>) -> Vec<(String, PathBuf)> {
    let Some(entries) = read_folder(root, "skills", "`<name>/SKILL.md`", warnings) else {
        return Vec::new();
    };
    let mut folders = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        // Follows symlinks on purpose: linking a skill folder in is a common way to share it.
        if !path.is_dir() {
            continue;
        }
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            warnings.push(format!(
                "{}: the folder name is not valid UTF-8, so it is skipped; rename it to \
                 lowercase letters, digits and hyphens",
                path.display()
            ));
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        folders.push((name, path));
    }
    folders.sort();
    folders
}

/// `Ok(None)` when there is no such file.
fn read_skill_file(file: &Path) -> Result<Option<String>, String> {
    read_capped(file, MAX_FILE_BYTES).map_err(|e| e.to_string())
}

/// Why a skill, command or agent file was skipped: a whole warning line naming the file
/// and saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum ReadFileError {
    #[error("{}:1: cannot open the file ({source}); check its permissions", path.display())]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:1: cannot read the file ({source}); check it is a regular file", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{}:1: the file is larger than {} KiB; keep it short and move reference material into \
         separate files next to it",
        path.display(),
        max / 1024
    )]
    TooLarge { path: PathBuf, max: u64 },
    #[error("{}:1: the file is not valid UTF-8 (byte {valid_up_to}); save it as UTF-8", path.display())]
    NotUtf8 { path: PathBuf, valid_up_to: usize },
}

/// Reads a text file of at most `max` bytes. `Ok(None)` when it does not exist.
pub(crate) fn read_capped(file: &Path, max: u64) -> Result<Option<String>, ReadFileError> {
    let path = || file.to_path_buf();
    let f = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ReadFileError::Open {
                path: path(),
                source,
            });
        }
    };
    let mut bytes = Vec::new();
    if let Err(source) = f.take(max + 1).read_to_end(&mut bytes) {
        return Err(ReadFileError::Read {
            path: path(),
            source,
        });
    }
    if bytes.len() as u64 > max {
        return Err(ReadFileError::TooLarge { path: path(), max });
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| ReadFileError::NotUtf8 {
            path: path(),
            valid_up_to: e.utf8_error().valid_up_to(),
        })
}

/// The built-in `SKILL.md` texts, for tests and docs.
pub fn builtin_sources() -> &'static [(&'static str, &'static str)] {
    BUILTIN
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    struct Fixture {
        _tmp: tempfile::TempDir,
        dirs: SkillDirs,
    }

    fn fixture() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = SkillDirs {
            linggen_home: tmp.path().join("lh"),
            root: tmp.path().join("repo"),
            user_home: Some(tmp.path().join("home")),
        };
        Fixture { _tmp: tmp, dirs }
    }

    fn write_skill(root: &Path, name: &str, description: &str) {
        let dir = root.join(name);
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\nBody of {name}\n"),
        )
        .unwrap();
    }

    #[test]
    fn builtins_load_without_warnings() {
        let f = fixture();
        let set = discover(&f.dirs);
        assert!(set.warnings.is_empty(), "{:?}", set.warnings);
        for name in ["commit-message", "explain", "review"] {
            let s = set.get(name).unwrap();
            assert_eq!(s.source, SkillSource::Builtin);
            assert_eq!(s.path, format!("built-in skills/{name}/SKILL.md"));
            assert!(s.dir.is_none());
            assert!(s.description.len() > 20);
            assert!(!s.body.is_empty());
        }
        let commit = set.get("commit-message").unwrap();
        assert!(
            commit
                .allowed_tools
                .contains(&"Bash(git diff:*)".to_string())
        );
        let review = set.get("review").unwrap();
        assert_eq!(review.argument_hint.as_deref(), Some("[ref]"));
        assert!(review.render("main").contains("git diff main"));
        let explain = set.get("explain").unwrap();
        assert!(explain.render("src/lib.rs").contains("src/lib.rs"));
    }

    #[test]
    fn priority_on_name_clash() {
        let f = fixture();
        let home = f.dirs.user_home.clone().unwrap();
        write_skill(&home.join(".codex/skills"), "dup", "codex");
        write_skill(&home.join(".claude/skills"), "dup", "claude");
        write_skill(&f.dirs.root.join(".agents/skills"), "dup", "agents");
        write_skill(&f.dirs.root.join(".linggen/skills"), "dup", "project");
        write_skill(&f.dirs.linggen_home.join("skills"), "dup", "personal");
        write_skill(&f.dirs.linggen_home.join("skills"), "review", "my review");
        write_skill(&home.join(".codex/skills"), "only-codex", "c");

        let set = discover(&f.dirs);
        assert!(set.warnings.is_empty(), "{:?}", set.warnings);
        let dup = set.get("dup").unwrap();
        assert_eq!(dup.description, "personal");
        assert_eq!(dup.source, SkillSource::Personal);
        assert_eq!(
            dup.dir.as_deref(),
            Some(f.dirs.linggen_home.join("skills/dup").as_path())
        );
        assert_eq!(set.get("review").unwrap().description, "my review");
        assert_eq!(set.get("only-codex").unwrap().source, SkillSource::Codex);
        assert_eq!(set.skills.iter().filter(|s| s.name == "dup").count(), 1);
        let names: Vec<&str> = set.skills.iter().map(|s| s.name.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);

        fs::remove_dir_all(f.dirs.linggen_home.join("skills/dup")).unwrap();
        fs::remove_dir_all(f.dirs.root.join(".linggen/skills/dup")).unwrap();
        assert_eq!(discover(&f.dirs).get("dup").unwrap().description, "agents");
        fs::remove_dir_all(f.dirs.root.join(".agents/skills/dup")).unwrap();
        assert_eq!(discover(&f.dirs).get("dup").unwrap().description, "claude");
    }

    #[test]
    fn a_broken_file_is_one_warning_and_the_rest_loads() {
        let f = fixture();
        let root = f.dirs.root.join(".linggen/skills");
        write_skill(&root, "good", "fine");
        fs::create_dir_all(root.join("broken")).unwrap();
        fs::write(
            root.join("broken/SKILL.md"),
            "---\nname: broken\ndescription: x\nuser-invocable: [1\n---\n",
        )
        .unwrap();
        fs::create_dir_all(root.join("no-front")).unwrap();
        fs::write(root.join("no-front/SKILL.md"), "# hello\n").unwrap();
        fs::create_dir_all(root.join("not-a-skill")).unwrap();
        fs::write(root.join("stray.md"), "ignored").unwrap();

        let set = discover(&f.dirs);
        assert!(set.get("good").is_some());
        assert!(set.get("broken").is_none());
        assert!(set.get("no-front").is_none());
        assert_eq!(set.warnings.len(), 2, "{:?}", set.warnings);
        let broken = root.join("broken/SKILL.md").display().to_string();
        assert!(
            set.warnings[0].starts_with(&format!("{broken}:4: invalid YAML")),
            "{:?}",
            set.warnings
        );
        let no_front = root.join("no-front/SKILL.md").display().to_string();
        assert!(set.warnings[1].starts_with(&format!("{no_front}:1: no frontmatter")));
    }

    #[test]
    fn a_file_where_a_folder_belongs_is_a_warning() {
        let f = fixture();
        fs::create_dir_all(&f.dirs.linggen_home).unwrap();
        fs::write(f.dirs.linggen_home.join("skills"), "oops").unwrap();
        let set = discover(&f.dirs);
        assert_eq!(set.warnings.len(), 1, "{:?}", set.warnings);
        assert!(set.warnings[0].contains("is a file, not a folder"));
        assert!(set.get("review").is_some());
    }

    #[cfg(unix)]
    #[test]
    fn unreadable_folder_is_a_warning() {
        use std::os::unix::fs::PermissionsExt;
        let f = fixture();
        let root = f.dirs.linggen_home.join("skills");
        write_skill(&root, "a", "b");
        fs::set_permissions(&root, fs::Permissions::from_mode(0o000)).unwrap();
        let set = discover(&f.dirs);
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).unwrap();
        // Root ignores permissions; then the folder simply reads.
        if set.get("a").is_none() {
            assert_eq!(set.warnings.len(), 1, "{:?}", set.warnings);
            assert!(set.warnings[0].contains("check its permissions"));
        }
    }

    #[test]
    fn oversized_file_is_skipped() {
        let f = fixture();
        let dir = f.dirs.root.join(".agents/skills/big");
        fs::create_dir_all(&dir).unwrap();
        let text = format!("---\ndescription: d\n---\n{}", "x".repeat(300 * 1024));
        fs::write(dir.join("SKILL.md"), text).unwrap();
        let set = discover(&f.dirs);
        assert!(set.get("big").is_none());
        assert!(
            set.warnings[0].contains("larger than 256 KiB"),
            "{:?}",
            set.warnings
        );
    }

    #[test]
    fn watch_dirs_lists_every_root() {
        let f = fixture();
        let dirs = SkillSet::watch_dirs(&f.dirs);
        let home = f.dirs.user_home.clone().unwrap();
        assert_eq!(
            dirs,
            vec![
                f.dirs.linggen_home.join("skills"),
                f.dirs.root.join(".linggen/skills"),
                f.dirs.root.join(".agents/skills"),
                home.join(".claude/skills"),
                home.join(".codex/skills"),
                f.dirs.linggen_home.join("commands"),
                home.join(".claude/commands"),
                f.dirs.root.join(".linggen/commands"),
                f.dirs.root.join(".claude/commands"),
            ]
        );
        let same = SkillDirs {
            linggen_home: f.dirs.root.join(".linggen"),
            root: f.dirs.root.clone(),
            user_home: None,
        };
        assert_eq!(SkillSet::watch_dirs(&same).len(), 4);
    }

    fn write_command(folder: &Path, rel: &str, text: &str) {
        let file = folder.join(rel);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(file, text).unwrap();
    }

    #[test]
    fn skills_win_over_commands_and_every_clash_is_one_warning() {
        let f = fixture();
        let home = f.dirs.user_home.clone().unwrap();
        let project = f.dirs.root.join(".claude/commands");
        write_skill(&f.dirs.root.join(".linggen/skills"), "deploy", "the skill");
        write_command(&project, "deploy.md", "the project command");
        write_command(&home.join(".claude/commands"), "sync.md", "mine");
        write_command(&project, "sync.md", "theirs");
        write_command(&project, "review.md", "our review");
        write_command(&project, "fix-issue.md", "no clash");

        let set = discover(&f.dirs);
        let deploy = set.get("deploy").unwrap();
        assert_eq!(
            (deploy.kind, deploy.description.as_str()),
            (SkillKind::Skill, "the skill")
        );
        let sync = set.get("sync").unwrap();
        assert_eq!(
            (sync.kind, sync.source),
            (SkillKind::Command, SkillSource::Claude)
        );
        let review = set.get("review").unwrap();
        assert_eq!(
            review.kind,
            SkillKind::Command,
            "a command replaces a built-in skill"
        );
        assert_eq!(set.get("fix-issue").unwrap().kind, SkillKind::Command);

        let shown = |p: &Path| p.display().to_string();
        assert_eq!(
            set.warnings,
            vec![
                format!(
                    "{}: /deploy is also the skill in {}, which wins; rename this file to use it",
                    shown(&project.join("deploy.md")),
                    shown(&f.dirs.root.join(".linggen/skills/deploy/SKILL.md"))
                ),
                format!(
                    "{}: /sync is also the command in {}, which wins; rename this file to use it",
                    shown(&project.join("sync.md")),
                    shown(&home.join(".claude/commands/sync.md"))
                ),
                format!(
                    "{}: /review replaces the built-in skill `review`; rename this file to keep \
                     the built-in one",
                    shown(&project.join("review.md"))
                ),
            ]
        );
    }
}
