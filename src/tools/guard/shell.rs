//! Shell command analysis: the floor (what never runs), and a class for every simple
//! command so the permission check can decide what runs without asking.
//!
//! The analysis is deliberately conservative. It does not evaluate the shell language; it
//! refuses the constructs whose effect depends on evaluation (substitution, heredocs), and
//! classifies each segment between `|`, `||`, `;`, `&&` and `&` on its own. Where it cannot
//! be sure a segment only reads, the segment is `Unlisted` (a person decides) or `Never`
//! (a person decides even in bypass mode). Misreading a file name as an option, or a
//! harmless string as a path, costs a question; the reverse would cost a compromise.

mod git;
mod lexer;
mod programs;
mod sed;
#[cfg(test)]
mod tests;

use std::fs;
use std::path::{Path, PathBuf};

use lexer::{RawSegment, RedirectKind, Word};
use programs::Verdict;

use super::paths;

/// The result of analysing a command that passed the floor.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandAnalysis {
    pub segments: Vec<Segment>,
}

impl CommandAnalysis {
    /// True when every segment only reads inside the workspace.
    /// The files the segments are known to write (redirect targets, `cp`/`mv`
    /// destinations…), as written in the command.
    pub fn write_targets(&self) -> Vec<String> {
        self.segments
            .iter()
            .filter_map(|s| match &s.class {
                SegmentClass::Writes { targets } => Some(targets.iter().cloned()),
                _ => None,
            })
            .flatten()
            .collect()
    }

    pub fn is_read_only(&self) -> bool {
        self.segments
            .iter()
            .all(|s| s.class == SegmentClass::ReadOnly)
    }

    /// The most restrictive class over all segments' classes.
    pub fn has_never(&self) -> bool {
        self.segments
            .iter()
            .any(|s| matches!(s.class, SegmentClass::Never { .. }))
    }
}

/// One simple command of a command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// The segment's source text, trimmed.
    pub text: String,
    /// The program as written (after quote removal), e.g. `git`, `/bin/rm`, `./build.sh`.
    pub program: String,
    pub class: SegmentClass,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SegmentClass {
    /// Allowlisted program, no risky option, reads only inside the workspace.
    ReadOnly,
    /// Read-only apart from writing these files inside the workspace (redirections, `tee`,
    /// `sed -i`), named as written.
    Writes { targets: Vec<String> },
    /// Not on the allowlist, or used in a way we do not analyse; a person decides.
    Unlisted { reason: String },
    /// Runs other code, reaches outside the workspace, or could leak secrets; a person
    /// decides even when the mode would otherwise allow everything.
    Never { reason: String },
}

/// Analyses `command` as it would run in `root`. `Err` is a floor refusal: the command
/// never runs, whatever the mode; the message says what to do instead.
pub fn analyze(command: &str, root: &Path) -> Result<CommandAnalysis, String> {
    let raw_segments = lexer::split(command)?;
    let root = paths::canonical_root(root);
    let mut scope = Scope {
        cwds: vec![root.clone()],
        root,
    };
    let segments = raw_segments
        .iter()
        .map(|raw| classify_segment(raw, &mut scope))
        .collect();
    Ok(CommandAnalysis { segments })
}

/// Where relative paths may be resolved from. `cd` adds directories rather than replacing
/// the start: after `cd a || cat ../x` the `cat` may run in either place.
struct Scope {
    root: PathBuf,
    cwds: Vec<PathBuf>,
}

fn classify_segment(raw: &RawSegment, scope: &mut Scope) -> Segment {
    let assignments = raw.words.iter().take_while(|w| w.is_assignment()).count();
    let program = raw
        .words
        .get(assignments)
        .or(raw.words.first())
        .map(|w| w.text.clone())
        .unwrap_or_default();
    let class = if assignments > 0 {
        SegmentClass::Never {
            reason: "`NAME=value` before a command changes its environment (LD_PRELOAD, PATH, \
                     ...); run the command without it"
                .into(),
        }
    } else {
        classify_command(raw, scope)
    };
    Segment {
        text: raw.text.clone(),
        program,
        class,
    }
}

fn never(reason: impl Into<String>) -> SegmentClass {
    SegmentClass::Never {
        reason: reason.into(),
    }
}

fn unlisted(reason: impl Into<String>) -> SegmentClass {
    SegmentClass::Unlisted {
        reason: reason.into(),
    }
}

fn classify_command(raw: &RawSegment, scope: &mut Scope) -> SegmentClass {
    if raw.has_paren {
        // A subshell can `cd` anywhere for the commands inside it, and a function body can
        // change the directory later segments run in; neither is tracked.
        return never(
            "subshells and function definitions `( ... )` are not analysed; run the commands \
             directly",
        );
    }
    let keywords = raw
        .words
        .iter()
        .take_while(|w| programs::is_keyword(&w.text))
        .count();
    if keywords > 0 {
        return after_keywords(raw, keywords, scope);
    }
    let (name, args) = match raw.words.split_first() {
        Some((program, args)) => {
            if let Some(reason) = program_never(program) {
                return never(reason);
            }
            (basename(&program.text).to_string(), args)
        }
        None => (String::new(), &[][..]),
    };
    if let Some(reason) = arguments_never(&name, args, scope) {
        return never(reason);
    }
    if let Some(reason) = redirects_never(raw, scope) {
        return never(reason);
    }
    let verdict = match raw.words.first() {
        None => Verdict::ReadOnly,
        Some(program) => program_verdict(program, &name, args, scope),
    };
    let mut targets = match verdict {
        Verdict::Never(reason) => return never(reason),
        Verdict::Unlisted(reason) => return unlisted(reason),
        Verdict::ReadOnly => Vec::new(),
        Verdict::Writes(indices) => indices.iter().map(|&i| args[i].text.clone()).collect(),
    };
    for redirect in &raw.redirects {
        let text = &redirect.target.text;
        if redirect.target.has_glob() || redirect.target.has_brace_expansion() {
            return unlisted(format!("the redirection target `{text}` is a pattern"));
        }
        let writes = matches!(
            redirect.kind,
            RedirectKind::Output | RedirectKind::ReadWrite
        );
        if writes && !programs::is_harmless_device(text) {
            targets.push(text.clone());
        }
    }
    if let Some((target, why)) = targets
        .iter()
        .find_map(|t| scope.protected(t).map(|why| (t, why)))
    {
        return never(format!("`{target}` {why}"));
    }
    if targets.is_empty() {
        SegmentClass::ReadOnly
    } else {
        SegmentClass::Writes { targets }
    }
}

fn program_verdict(program: &Word, name: &str, args: &[Word], scope: &mut Scope) -> Verdict {
    if program.text.contains('/') {
        return Verdict::Unlisted(format!(
            "`{}` runs a program by path; only allowlisted programs run without asking",
            program.text
        ));
    }
    if name == "cd" {
        return scope.cd(args);
    }
    if !programs::is_allowlisted(name) {
        if let Some(reason) = programs::never_by_options(name, args) {
            return Verdict::Never(reason);
        }
        return Verdict::Unlisted(format!("`{name}` is not on the read-only allowlist"));
    }
    if let Some(word) = args.iter().find(|w| w.has_brace_expansion()) {
        return Verdict::Unlisted(format!(
            "brace expansion `{}` is not analysed; list the arguments explicitly",
            word.text
        ));
    }
    if programs::has_risky_options(name)
        && let Some(word) = args.iter().find(|w| w.starts_with_glob())
    {
        return Verdict::Unlisted(format!(
            "`{}` could expand to a file name that `{name}` reads as an option; write \
                 `./{}` instead",
            word.text, word.text
        ));
    }
    programs::classify(name, args)
}

/// `then rm x`, `{ cd`, `do cat f`: the command after the keywords is classified as usual,
/// so a keyword cannot hide it, and the segment is at least `Unlisted` because the compound
/// command around it is not analysed.
fn after_keywords(raw: &RawSegment, keywords: usize, scope: &mut Scope) -> SegmentClass {
    let keyword = &raw.words[0].text;
    if keyword == "function" {
        return never("function definitions are not analysed; run the commands directly");
    }
    let inner = RawSegment {
        words: raw.words[keywords..].to_vec(),
        ..raw.clone()
    };
    match classify_command(&inner, scope) {
        class @ (SegmentClass::Never { .. } | SegmentClass::Unlisted { .. }) => class,
        _ => unlisted(format!(
            "`{keyword}` is a shell keyword; compound commands are not analysed"
        )),
    }
}

/// The last `/`-separated part: `/usr/bin/python3` is still python.
fn basename(text: &str) -> &str {
    text.rsplit('/')
        .find(|part| !part.is_empty())
        .unwrap_or(text)
}

fn program_never(program: &Word) -> Option<String> {
    if program.expands {
        return Some("the program name comes from a `$` expansion".into());
    }
    if program.has_glob() || program.has_brace_expansion() {
        return Some(format!(
            "the program name `{}` is a pattern that picks a file to run",
            program.text
        ));
    }
    programs::never_reason(basename(&program.text))
}

const EXPANSION: &str = "`$` expansion is never run automatically: it could reveal secrets such \
                         as API keys; write the value literally";

fn arguments_never(name: &str, args: &[Word], scope: &Scope) -> Option<String> {
    if let Some(word) = args.iter().find(|w| w.expands) {
        return Some(format!("{EXPANSION} (in `{}`)", word.text));
    }
    let not_paths = programs::non_path_args(name, args);
    args.iter()
        .zip(not_paths)
        .filter(|(_, not_path)| !not_path)
        .find_map(|(word, _)| scope.argument_escapes(word))
}

fn redirects_never(raw: &RawSegment, scope: &Scope) -> Option<String> {
    raw.redirects.iter().find_map(|redirect| {
        let target = &redirect.target;
        if target.expands {
            return Some(format!("{EXPANSION} (in `{}`)", target.text));
        }
        if redirect.kind == RedirectKind::Duplicate || programs::is_harmless_device(&target.text) {
            return None;
        }
        scope.path_escapes(&target.text)
    })
}

impl Scope {
    /// Why `text`, resolved from any possible working directory, would leave the root.
    fn path_escapes(&self, text: &str) -> Option<String> {
        if text.is_empty() || text == "-" || programs::is_harmless_device(text) {
            return None;
        }
        self.cwds
            .iter()
            .find_map(|cwd| paths::locate(&self.root, cwd, text).err())
    }

    /// Checks every part of an argument that could name a file: the word itself, the value
    /// of `--opt=value` or `if=value`, and a value glued to a short option (`-f/etc/x`).
    fn argument_escapes(&self, word: &Word) -> Option<String> {
        let text = word.text.as_str();
        if let Some(reason) = self.path_escapes(text) {
            return Some(reason);
        }
        if let Some((_, value)) = text.split_once('=')
            && let Some(reason) = self.path_escapes(value)
        {
            return Some(reason);
        }
        if text.starts_with('-') && !text.starts_with("--") && text.len() > 2 {
            let tail = &text[2..];
            let path_like = (tail.starts_with('/') && tail.len() > 1)
                || tail.starts_with('~')
                || tail.split('/').any(|part| part == "..");
            if path_like && let Some(reason) = self.path_escapes(tail) {
                return Some(reason);
            }
        }
        if word.has_glob() {
            return self.glob_escapes(word);
        }
        None
    }

    /// A glob expands to names the analysis never sees; if one of them is a symlink that
    /// leads outside the workspace, `cat *` would read through it. The directories the
    /// pattern can reach are scanned for such symlinks (a superset of what it matches).
    fn glob_escapes(&self, word: &Word) -> Option<String> {
        let first_meta = word.first_glob().unwrap_or(0);
        let literal: String = word.chars[..first_meta].iter().map(|q| q.c).collect();
        let dir = match literal.rfind('/') {
            Some(slash) => &literal[..=slash],
            None => ".",
        };
        let pattern_rest: String = word.chars[first_meta..].iter().map(|q| q.c).collect();
        let depth = pattern_rest.matches('/').count() + 1;
        let mut budget = GLOB_SCAN_BUDGET;
        for cwd in &self.cwds {
            let base = match paths::locate(&self.root, cwd, dir) {
                Ok(base) => base,
                Err(reason) => return Some(reason),
            };
            if let Some(reason) = self.scan_for_escaping_links(&base, depth, &mut budget) {
                return Some(format!("`{}` may expand to {reason}", word.text));
            }
        }
        None
    }

    fn scan_for_escaping_links(
        &self,
        dir: &Path,
        depth: usize,
        budget: &mut usize,
    ) -> Option<String> {
        let Ok(entries) = fs::read_dir(dir) else {
            return None;
        };
        for entry in entries.flatten() {
            if *budget == 0 {
                return Some("more files than can be checked for symlinks; name them".into());
            }
            *budget -= 1;
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if file_type.is_symlink() {
                if let Ok(target) = path.canonicalize()
                    && !target.starts_with(&self.root)
                {
                    return Some(format!(
                        "`{}`, a symlink that leads outside the workspace",
                        paths::relative(&self.root, &path)
                    ));
                }
            } else if file_type.is_dir()
                && depth > 1
                && let Some(reason) = self.scan_for_escaping_links(&path, depth - 1, budget)
            {
                return Some(reason);
            }
        }
        None
    }

    /// Why writing `target` is refused although it is inside the root (`.git/`, linggen's
    /// own configuration).
    fn protected(&self, target: &str) -> Option<&'static str> {
        self.cwds.iter().find_map(|cwd| {
            let abs = paths::locate(&self.root, cwd, target).ok()?;
            paths::protected(&abs, &paths::relative(&self.root, &abs))
        })
    }

    /// `cd DIR` inside the workspace is read-only; later segments may run in DIR.
    fn cd(&mut self, args: &[Word]) -> Verdict {
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
                text => operands.push(text),
            }
        }
        match operands.as_slice() {
            // Every operand already passed the path checks, so it is inside the root.
            [dir] => {
                let next: Vec<PathBuf> = self
                    .cwds
                    .iter()
                    .filter_map(|cwd| paths::locate(&self.root, cwd, dir).ok())
                    .collect();
                self.cwds.extend(next);
                Verdict::ReadOnly
            }
            [] => Verdict::Never(
                "`cd` without a directory goes to the home directory, outside the workspace".into(),
            ),
            _ => Verdict::Never("`cd` with several operands is not analysed".into()),
        }
    }
}

/// How many directory entries one glob may make us look at.
const GLOB_SCAN_BUDGET: usize = 20_000;
