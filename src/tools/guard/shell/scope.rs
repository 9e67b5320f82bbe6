//! Where a segment may run and what its words may reach: the directories `cd` can have led
//! to, and the checks that every path-like word, glob and write target stays inside the
//! workspace. Every walk here is bounded (directories tracked, entries scanned, candidate
//! values per word), and hitting a bound is a `Never`, so no command makes the analysis
//! itself slow.

use std::fs;
use std::path::{Path, PathBuf};

use super::glob;
use super::lexer::{QChar, Word};
use super::programs::{self, Verdict};
use super::work;
use crate::tools::guard::paths;

/// How many directories the analysis tracks as "where the next segment may run". Each `cd`
/// can double them (the analysis does not know whether it succeeded).
const MAX_CWDS: usize = 32;

/// How many directory entries one command may make us look at, over all its globs and
/// directory scans.
const SCAN_BUDGET: usize = 20_000;

/// How many directory levels a scan descends (each holds a directory open).
const MAX_SCAN_DEPTH: usize = 64;

/// The longest pattern component matched against directory entries while scanning.
const MAX_FILTER_LEN: usize = 64;

/// How many places in one word are tried as the start of a file name: a value glued to an
/// option (`-kf/etc/passwd`) or following `=`, `@` or `<`.
const MAX_VALUE_STARTS: usize = 32;

/// A directory a segment may run in: the shell's idea of it (`$PWD`, where `cd` folds `..`
/// before following symlinks) and the kernel's (symlinks resolved).
#[derive(Debug, Clone, PartialEq)]
struct Cwd {
    logical: PathBuf,
    physical: PathBuf,
}

/// What the analysis knows while it walks a command's segments in order: where each may
/// run (`cd` adds directories rather than replacing them: after `cd a || cat ../x` the
/// `cat` may run in either place) and how much scanning is left.
pub struct Scope {
    /// `$LINGGEN_HOME`, protected like the project's own configuration.
    home: Option<PathBuf>,
    root: PathBuf,
    /// `--add-dir` folders (canonical): an absolute path into one stays inside, checked
    /// against that folder as against the root.
    extra: Vec<PathBuf>,
    /// Whether git's configuration moves hooks (`core.hooksPath`), looked up once.
    hooks_redirected: Option<bool>,
    cwds: Vec<Cwd>,
    scan_budget: usize,
    /// Set once the `cd`s went past [`MAX_CWDS`]: where later segments run is unknown.
    lost: bool,
}

impl Scope {
    /// `root` must be canonical.
    pub fn new(root: PathBuf, home: Option<&Path>) -> Scope {
        Scope {
            home: home.map(Path::to_path_buf),
            cwds: vec![Cwd {
                logical: root.clone(),
                physical: root.clone(),
            }],
            root,
            extra: Vec::new(),
            hooks_redirected: None,
            scan_budget: SCAN_BUDGET,
            lost: false,
        }
    }

    /// The same scope with `--add-dir` folders (canonical) open to absolute paths.
    pub fn with_extra_roots(mut self, extra: &[PathBuf]) -> Scope {
        self.extra = extra.to_vec();
        self
    }

    /// `text` resolved from `base`, inside the root or (absolute) inside an `--add-dir`
    /// folder: the path and the folder it is in.
    fn locate(&self, base: &Path, text: &str) -> Result<(PathBuf, &Path), String> {
        let in_root = paths::locate(&self.root, base, text);
        if in_root.is_ok() || !Path::new(text).is_absolute() {
            return in_root.map(|abs| (abs, self.root.as_path()));
        }
        match self.extra.iter().find(|e| Path::new(text).starts_with(e)) {
            Some(extra) => paths::locate(extra, extra, text).map(|abs| (abs, extra.as_path())),
            None => in_root.map(|abs| (abs, self.root.as_path())),
        }
    }

    /// Why no later segment can be analysed, once the `cd`s went past the bound.
    pub fn lost(&self) -> Option<String> {
        self.lost.then(|| {
            format!(
                "the `cd`s before this point could leave the command in more than {MAX_CWDS} \
                 directories, so where this runs is not known; run fewer `cd`s per command"
            )
        })
    }

    /// Why `text`, resolved from any possible working directory, would leave the root.
    pub fn path_escapes(&self, text: &str) -> Option<String> {
        if text.is_empty() || text == "-" || programs::is_harmless_device(text) {
            return None;
        }
        self.cwds
            .iter()
            .find_map(|cwd| self.locate(&cwd.physical, text).err())
    }

    /// Checks every part of an argument that could name a file (see [`value_candidates`])
    /// and what a glob may expand to.
    pub fn argument_escapes(&mut self, word: &Word) -> Option<String> {
        let values = match value_candidates(&word.text) {
            Ok(values) => values,
            Err(reason) => return Some(reason),
        };
        if let Some(reason) = values.iter().find_map(|value| self.path_escapes(value)) {
            return Some(reason);
        }
        if word.has_glob() {
            return self.glob_escapes(word);
        }
        None
    }

    /// For a segment that may write: why `word` names a protected path (`rm -rf .git`,
    /// `sort -o.git/config`, `cp x agents/`), or a glob could (`.gi?`, `.*`, `*.toml`).
    /// Read-only segments may name them; everything else may change what it names.
    pub fn names_protected(&mut self, word: &Word) -> Option<String> {
        if word.has_glob() {
            return self.glob_names_protected(word);
        }
        let values = value_candidates(&word.text).ok()?;
        values.iter().find_map(|value| {
            self.cwds.iter().find_map(|cwd| {
                let (abs, root) = self.locate(&cwd.physical, value).ok()?;
                paths::protected_for_commands(
                    &abs,
                    &paths::relative(root, &abs),
                    self.home.as_deref(),
                )
                .map(|why| format!("`{value}` {why}"))
            })
        })
    }

    /// The first pattern component can only match entries of a directory we know, so
    /// those are listed; below it, the directory is unknown and a pattern that could match
    /// `.git` or `linggen-agent.toml` is enough.
    fn glob_names_protected(&mut self, word: &Word) -> Option<String> {
        let mut components = glob::components(word);
        let mut literal = Vec::new();
        let first = loop {
            let component = components.next()?;
            if glob::is_pattern(component) {
                break component;
            }
            literal.push(component.iter().map(|q| q.c).collect::<String>());
        };
        let dir = if literal.is_empty() {
            ".".to_string()
        } else {
            literal.join("/")
        };
        let bases: Vec<PathBuf> = self
            .cwds
            .iter()
            .filter_map(|cwd| paths::locate(&self.root, &cwd.physical, &dir).ok())
            .collect();
        for base in bases {
            let Ok(entries) = fs::read_dir(&base) else {
                continue;
            };
            for entry in entries.flatten() {
                work::tick(1);
                if self.scan_budget == 0 {
                    return Some("more files than can be checked; name them".into());
                }
                self.scan_budget -= 1;
                let name = entry.file_name().to_string_lossy().into_owned();
                let path = base.join(&name);
                let rel = paths::relative(&self.root, &path);
                if glob::matches(first, &name)
                    && paths::protected_for_commands(&path, &rel, self.home.as_deref()).is_some()
                {
                    return Some(format!(
                        "`{}` could match `{rel}`, which commands may not change",
                        abbreviate(&word.text)
                    ));
                }
            }
        }
        components
            .filter(|component| glob::is_pattern(component))
            .find_map(|component| {
                PROTECTED_ANYWHERE
                    .iter()
                    .find(|name| glob::matches(component, name))
            })
            .map(|name| {
                format!(
                    "`{}` could match `{name}`, which commands may not change",
                    abbreviate(&word.text)
                )
            })
    }

    /// A glob expands to names the analysis never sees; if one of them is a symlink that
    /// leads outside the workspace, `cat *` reads through it, and if one starts with `-`,
    /// `cat *` reads it as an option. The directories the pattern can reach are scanned (a
    /// superset of what it matches), following symlinks that stay inside.
    pub fn glob_escapes(&mut self, word: &Word) -> Option<String> {
        let first_meta = word.first_glob().unwrap_or(0);
        let literal: String = word.chars[..first_meta].iter().map(|q| q.c).collect();
        let dir = match literal.rfind('/') {
            Some(slash) => &literal[..=slash],
            None => ".",
        };
        let pattern_rest: String = word.chars[first_meta..].iter().map(|q| q.c).collect();
        let depth = pattern_rest.matches('/').count() + 1;
        if depth > MAX_SCAN_DEPTH {
            return Some(format!(
                "`{}` reaches more directory levels than can be checked; name the files",
                abbreviate(&word.text)
            ));
        }
        // `.*` matches `..` in dash (and bash before 5.2): `ls .*` lists the parent.
        let as_parent: Vec<String> = glob::components(word)
            .map(|component| {
                if glob::is_pattern(component) && glob::matches(component, "..") {
                    "..".to_string()
                } else {
                    component.iter().map(|q| q.c).collect()
                }
            })
            .collect();
        if let Some(reason) = self.path_escapes(&as_parent.join("/")) {
            return Some(format!(
                "`{}` may match `..`: {reason}",
                abbreviate(&word.text)
            ));
        }
        let options_matter = first_meta == 0;
        // The components from the one holding the first pattern character on, one per
        // level the scan descends; entries that cannot match their level are skipped.
        let all: Vec<&[QChar]> = glob::components(word).collect();
        let skip = word.chars[..first_meta]
            .iter()
            .filter(|q| q.c == '/')
            .count();
        let levels = all.get(skip..).unwrap_or_default();
        let bases: Result<Vec<PathBuf>, String> = self
            .cwds
            .iter()
            .map(|cwd| paths::locate(&self.root, &cwd.physical, dir))
            .collect();
        let bases = match bases {
            Ok(bases) => bases,
            Err(reason) => return Some(reason),
        };
        for base in bases {
            let scan = Scan {
                depth,
                level: 1,
                into_linked_dirs: true,
                options_matter,
            };
            if let Some(reason) = self.scan(&base, scan, levels) {
                return Some(format!(
                    "`{}` may expand to {reason}",
                    abbreviate(&word.text)
                ));
            }
        }
        None
    }

    /// Scans `dir` for entries that make reading it unsafe; see [`Scan`]. A directory we
    /// cannot list is one the program cannot list either.
    /// `levels` holds the pattern component for each level, if known: an entry that cannot
    /// match it is skipped (long components match everything, to keep matching cheap).
    fn scan(&mut self, dir: &Path, scan: Scan, levels: &[&[QChar]]) -> Option<String> {
        let filter = levels.first().filter(|c| c.len() <= MAX_FILTER_LEN);
        if scan.level > MAX_SCAN_DEPTH {
            return Some(format!(
                "`{}` has more directory levels than can be checked",
                paths::relative(&self.root, dir)
            ));
        }
        let Ok(entries) = fs::read_dir(dir) else {
            return None;
        };
        for entry in entries.flatten() {
            work::tick(1);
            if self.scan_budget == 0 {
                return Some("more files than can be checked for symlinks; name them".into());
            }
            self.scan_budget -= 1;
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            if let Some(component) = filter
                && !glob::matches(component, &entry.file_name().to_string_lossy())
            {
                continue;
            }
            let path = entry.path();
            if scan.options_matter && entry.file_name().to_string_lossy().starts_with('-') {
                return Some(format!(
                    "`{}`, which the program would read as an option",
                    paths::relative(&self.root, &path)
                ));
            }
            let next = if file_type.is_symlink() {
                let Ok(target) = path.canonicalize() else {
                    continue;
                };
                if !target.starts_with(&self.root) {
                    return Some(format!(
                        "`{}`, a symlink that leads outside the workspace",
                        paths::relative(&self.root, &path)
                    ));
                }
                if !scan.into_linked_dirs && target.is_dir() {
                    return Some(format!(
                        "`{}`, a symlink to a directory, which would be followed",
                        paths::relative(&self.root, &path)
                    ));
                }
                target
            } else if file_type.is_dir() {
                path
            } else {
                continue;
            };
            if scan.depth > 1
                && next.is_dir()
                && let Some(reason) = self.scan(
                    &next,
                    Scan {
                        depth: scan.depth - 1,
                        level: scan.level + 1,
                        options_matter: false,
                        ..scan
                    },
                    levels.get(1..).unwrap_or_default(),
                )
            {
                return Some(reason);
            }
        }
        None
    }

    /// `diff DIR1 DIR2` compares the files in both, following symlinks; with `-r` it does so
    /// in every subdirectory. Each directory operand is scanned for symlinks leading out
    /// (and, recursively, for symlinked directories, which diff would enter).
    pub fn diff_escapes(&mut self, args: &[Word]) -> Option<String> {
        let recursive = programs::find_option(args, "r", &["recursive"]).is_some();
        let operands: Vec<&str> = args
            .iter()
            .filter_map(|w| {
                let text = w.text.as_str();
                match text.strip_prefix("--") {
                    Some(long) => long
                        .strip_prefix("from-file=")
                        .or_else(|| long.strip_prefix("to-file=")),
                    None if text.starts_with('-') => None,
                    None => Some(text),
                }
            })
            .collect();
        let dirs: Vec<PathBuf> = operands
            .iter()
            .flat_map(|text| {
                self.cwds
                    .iter()
                    .filter_map(|cwd| paths::locate(&self.root, &cwd.physical, text).ok())
            })
            .filter(|path| path.is_dir())
            .collect();
        let scan = Scan {
            depth: if recursive { usize::MAX } else { 1 },
            level: 1,
            // Without `-r`, a symlinked subdirectory is only named, not entered.
            into_linked_dirs: !recursive,
            options_matter: false,
        };
        dirs.iter().find_map(|dir| {
            self.scan(dir, scan, &[])
                .map(|reason| format!("`diff` would read through {reason}"))
        })
    }

    /// Why a command may not write `target`, a file it names: outside the workspace, or
    /// protected inside it (`.git/`, linggen's configuration, agent and skill folders).
    pub fn write_refused(&self, target: &str) -> Option<String> {
        if let Some(reason) = self.path_escapes(target) {
            return Some(reason);
        }
        self.cwds.iter().find_map(|cwd| {
            let (abs, root) = self.locate(&cwd.physical, target).ok()?;
            paths::protected_for_commands(&abs, &paths::relative(root, &abs), self.home.as_deref())
                .map(|why| format!("`{target}` {why}"))
        })
    }

    /// Git reads the configuration of the repository it finds from its working directory,
    /// and that configuration can run programs (`core.fsmonitor` on `git status`). Only the
    /// workspace's own repository is trusted; a directory below the root that holds another
    /// `.git` (or is a bare repository) brings a configuration anyone could have written.
    /// A directory that does not exist yet may be one an earlier segment unpacks a
    /// repository into (`tar -xf r.tar && cd r && git status`), so it counts as foreign.
    pub fn foreign_repository(&self) -> Option<String> {
        self.cwds.iter().find_map(|cwd| {
            if !cwd.physical.is_dir() {
                return Some(format!(
                    "`git` may run in `{}`, which does not exist yet: an earlier command could \
                     create a repository there whose configuration runs programs",
                    paths::relative(&self.root, &cwd.physical)
                ));
            }
            let mut dir = cwd.physical.as_path();
            while dir != self.root && dir.starts_with(&self.root) {
                work::tick(1);
                let nested = dir.join(".git").symlink_metadata().is_ok();
                let bare = dir.join("HEAD").is_file()
                    && dir.join("objects").is_dir()
                    && dir.join("refs").is_dir();
                if nested || bare {
                    return Some(format!(
                        "`git` may run in `{}`, inside another repository whose configuration \
                         can run programs; run git from the workspace root",
                        paths::relative(&self.root, dir)
                    ));
                }
                dir = dir.parent()?;
            }
            None
        })
    }

    /// Git runs hooks on many commands, `git status` included (`post-index-change`). Hooks
    /// in `.git/hooks` are protected, but `core.hooksPath` can point them at files in the
    /// working tree (husky's `.husky/`, a global `.githooks`), which any command may have
    /// written. Then no git command is read-only.
    pub fn git_hooks_redirected(&mut self) -> Option<String> {
        let redirected = *self
            .hooks_redirected
            .get_or_insert_with(|| git_configs(&self.root).iter().any(|c| sets_hooks_path(c)));
        redirected.then(|| {
            "git's configuration sets `core.hooksPath`, so git may run hooks from files in \
             the working tree; run git yourself or ask the person"
                .to_string()
        })
    }

    /// `cd DIR` inside the workspace is read-only; later segments may run in DIR, or where
    /// they were (the analysis does not know whether `cd` succeeded).
    pub fn cd(&mut self, args: &[Word]) -> Verdict {
        let mut operands = Vec::new();
        for word in args {
            match word.text.as_str() {
                "-P" | "-L" | "-e" | "--" => {}
                // Later segments would run somewhere the analysis cannot follow.
                "-" => {
                    return Verdict::Never(
                        "`cd -` goes back to a directory the analysis cannot know".into(),
                    );
                }
                text if text.starts_with('-') => {
                    return Verdict::Never(format!("`cd {text}` is not analysed"));
                }
                _ => operands.push(word),
            }
        }
        let dir = match operands.as_slice() {
            [dir] => *dir,
            [] => {
                return Verdict::Never(
                    "`cd` without a directory goes to the home directory, outside the workspace"
                        .into(),
                );
            }
            _ => return Verdict::Never("`cd` with several operands is not analysed".into()),
        };
        if dir.has_glob() || dir.has_brace_expansion() {
            return Verdict::Never(format!(
                "`cd {}` goes to a directory a pattern picks; name it",
                dir.text
            ));
        }
        let mut next = Vec::new();
        for cwd in &self.cwds {
            match self.cd_from(cwd, &dir.text) {
                Ok(both) => next.extend(both),
                Err(reason) => return Verdict::Never(reason),
            }
        }
        for cwd in next {
            work::tick(self.cwds.len());
            if !self.cwds.contains(&cwd) {
                self.cwds.push(cwd);
            }
            if self.cwds.len() > MAX_CWDS {
                self.lost = true;
                self.cwds.clear();
                return Verdict::Never(format!(
                    "after this `cd` the command could be in more than {MAX_CWDS} \
                     directories; run fewer `cd`s per command"
                ));
            }
        }
        Verdict::ReadOnly
    }

    /// Where `cd dir` from `cwd` may land: `cd -L` (the default) folds `..` in the text of
    /// `$PWD/dir` before the kernel follows any symlink, `cd -P` and shells that fall back
    /// to it let the kernel resolve `dir` from the physical directory.
    fn cd_from(&self, cwd: &Cwd, dir: &str) -> Result<[Cwd; 2], String> {
        let physical = paths::locate(&self.root, &cwd.physical, dir)?;
        let logical = paths::normalize(&cwd.logical.join(dir));
        if !logical.starts_with(&self.root) {
            return Err(format!(
                "`cd {dir}` leaves the workspace (the shell folds `..` in `$PWD/{dir}` before \
                 following symlinks)"
            ));
        }
        let logical_physical = paths::locate(&self.root, &self.root, &logical.to_string_lossy())?;
        Ok([
            Cwd {
                logical: physical.clone(),
                physical,
            },
            Cwd {
                logical,
                physical: logical_physical,
            },
        ])
    }
}

/// The configuration files git reads for the workspace's repository: its own (through a
/// `.git` file for worktrees), and the person's global ones.
fn git_configs(root: &Path) -> Vec<PathBuf> {
    let dot_git = root.join(".git");
    let mut configs = Vec::new();
    match fs::read_to_string(&dot_git) {
        // A worktree or submodule: `gitdir: PATH`, whose `commondir` holds the config.
        Ok(text) => {
            if let Some(dir) = text.trim().strip_prefix("gitdir:") {
                let gitdir = root.join(dir.trim());
                configs.push(gitdir.join("config"));
                if let Ok(common) = fs::read_to_string(gitdir.join("commondir")) {
                    configs.push(gitdir.join(common.trim()).join("config"));
                }
            }
        }
        Err(_) => configs.push(dot_git.join("config")),
    }
    if let Some(home) = std::env::var_os("HOME") {
        configs.push(Path::new(&home).join(".gitconfig"));
        configs.push(Path::new(&home).join(".config/git/config"));
    }
    if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME") {
        configs.push(Path::new(&xdg).join("git/config"));
    }
    configs
}

/// Whether a git config file mentions `hooksPath` (any section: erring towards yes only
/// costs a question). Oversized files count as yes, so the read stays bounded; it happens
/// once per command, whatever its length.
fn sets_hooks_path(path: &Path) -> bool {
    const MAX_CONFIG: u64 = 1 << 20;
    match fs::metadata(path) {
        Ok(meta) if meta.len() > MAX_CONFIG => true,
        Ok(_) => fs::read_to_string(path)
            .is_ok_and(|text| text.to_ascii_lowercase().contains("hookspath")),
        Err(_) => false,
    }
}

/// What a directory scan looks for.
#[derive(Debug, Clone, Copy)]
struct Scan {
    /// Levels to descend, 1 for the directory's own entries.
    depth: usize,
    /// How deep this scan already is, 1 at the start.
    level: usize,
    /// Follow symlinks to directories inside the workspace (a glob matches through them);
    /// otherwise such a symlink is itself refused (`diff -r` follows it wherever it goes
    /// next).
    into_linked_dirs: bool,
    /// An entry starting with `-` is refused (a glob at the start of a word would pass it as
    /// an option).
    options_matter: bool,
}

/// Names a command may not change wherever they are below the root.
const PROTECTED_ANYWHERE: [&str; 2] = [".git", "linggen-agent.toml"];

/// The parts of an argument that could name a file: the word itself, the value after any
/// `=`, `@` or `<` (`--opt=value`, `if=value`, `@file`), and, in a short-option cluster, the rest of the word
/// after any option letter (`-kf/etc/x`: `f` may take `/etc/x`). `Err` when there are too
/// many to check.
fn value_candidates(text: &str) -> Result<Vec<&str>, String> {
    // After `=` (`if=/x`), `@` (`curl -d @/etc/passwd`, `-F f=@/x`, compilers' `@file`)
    // and a quoted `<` (`curl -F 'f=</x'`) a program may read the rest as a file name.
    let mut starts: Vec<usize> = text
        .match_indices(['=', '@', '<'])
        .map(|(i, _)| i + 1)
        .collect();
    let mut cluster_starts = Vec::new();
    if text.starts_with('-') && !text.starts_with("--") {
        let letters = text[1..]
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(text.len() - 1);
        cluster_starts.extend(2..=1 + letters);
    }
    if starts.len() + cluster_starts.len() > MAX_VALUE_STARTS {
        return Err(format!(
            "`{}` has too many places where a file name could start to check them all; split \
             it into separate options",
            abbreviate(text)
        ));
    }
    // The shell expands `~` at the start of a word and after `=` (`if=~/x`), not inside a
    // cluster: `sed -i~` names no home directory.
    starts.extend(
        cluster_starts
            .into_iter()
            .filter(|&start| !text[start..].starts_with('~')),
    );
    let values = starts
        .into_iter()
        .map(|start| &text[start..])
        // `cut -d/`, `sort -t/`: a lone slash is a delimiter, not a file.
        .filter(|value| !value.chars().all(|c| c == '/'));
    Ok(std::iter::once(text).chain(values).collect())
}

/// A long word shown in a reason, cut so the reason stays readable.
fn abbreviate(text: &str) -> String {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
