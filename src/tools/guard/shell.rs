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
mod glob;
mod lexer;
mod programs;
mod scope;
mod sed;
pub(super) mod work;

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod red_team_tests;
#[cfg(test)]
mod tests;

use std::path::Path;

use lexer::{RawSegment, RedirectKind, Word};
use programs::Verdict;
use scope::Scope;

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

/// Analyses `command` as it would run in `root` (`home`: `$LINGGEN_HOME`, protected like
/// the project's configuration). `Err` is a floor refusal: the command never runs, whatever
/// the mode; the message says what to do instead.
pub fn analyze(command: &str, root: &Path, home: Option<&Path>) -> Result<CommandAnalysis, String> {
    analyze_in(command, root, &[], home)
}

/// [`analyze`] with `--add-dir` folders (canonical) that absolute paths may also name.
pub fn analyze_in(
    command: &str,
    root: &Path,
    extra_roots: &[std::path::PathBuf],
    home: Option<&Path>,
) -> Result<CommandAnalysis, String> {
    let raw_segments = lexer::split(command)?;
    let mut scope = Scope::new(paths::canonical_root(root), home).with_extra_roots(extra_roots);
    let segments = raw_segments
        .iter()
        .map(|raw| classify_segment(raw, &mut scope))
        .collect();
    Ok(CommandAnalysis { segments })
}

fn classify_segment(raw: &RawSegment, scope: &mut Scope) -> Segment {
    let assignments = raw.words.iter().take_while(|w| w.is_assignment()).count();
    let program = raw
        .words
        .get(assignments)
        .or(raw.words.first())
        .map(|w| w.text.clone())
        .unwrap_or_default();
    let class = if let Some(reason) = scope.lost() {
        never(reason)
    } else if assignments > 0 {
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
    // Checked whatever the program: `cargo build > .git/config` writes there in any mode.
    let redirect_targets: Vec<String> = raw
        .redirects
        .iter()
        .filter(|r| matches!(r.kind, RedirectKind::Output | RedirectKind::ReadWrite))
        .map(|r| r.target.text.clone())
        .filter(|text| !programs::is_harmless_device(text))
        .collect();
    if let Some(reason) = redirect_targets.iter().find_map(|t| scope.write_refused(t)) {
        return never(reason);
    }
    let verdict = match raw.words.first() {
        None => Verdict::ReadOnly,
        Some(program) => program_verdict(program, &name, args, scope),
    };
    if !matches!(verdict, Verdict::ReadOnly | Verdict::Never(_))
        && let Some(reason) = protected_arguments(&name, args, scope)
    {
        return never(reason);
    }
    let mut targets = match verdict {
        Verdict::Never(reason) => return never(reason),
        Verdict::Unlisted(reason) => return unlisted(reason),
        Verdict::ReadOnly => Vec::new(),
        Verdict::Writes { files, derived } => {
            if let Some(word) = files.iter().map(|&i| &args[i]).find(|w| w.has_glob()) {
                return never(format!(
                    "the write target `{}` is a pattern, which could match a protected file; \
                     name the file",
                    word.text
                ));
            }
            files
                .iter()
                .map(|&i| args[i].text.clone())
                .chain(derived)
                .collect()
        }
    };
    if let Some(reason) = targets.iter().find_map(|t| scope.write_refused(t)) {
        return never(reason);
    }
    targets.extend(redirect_targets);
    if targets.is_empty() {
        SegmentClass::ReadOnly
    } else {
        SegmentClass::Writes { targets }
    }
}

fn program_verdict(program: &Word, name: &str, args: &[Word], scope: &mut Scope) -> Verdict {
    if let Some(reason) = programs::reads_names_from_file(name, args) {
        return Verdict::Never(reason);
    }
    let by_path = program.text.contains('/');
    if name == "cd" && !by_path {
        return scope.cd(args);
    }
    let verdict = if programs::is_allowlisted(name) {
        allowlisted_verdict(name, args, scope)
    } else {
        match programs::never_by_options(name, args) {
            Some(reason) => Verdict::Never(reason),
            None => Verdict::Unlisted(format!("`{name}` is not on the read-only allowlist")),
        }
    };
    match verdict {
        // `/usr/bin/find -exec` runs programs as surely as `find -exec`.
        Verdict::Never(_) => verdict,
        _ if by_path => Verdict::Unlisted(format!(
            "`{}` runs a program by path; only allowlisted programs run without asking",
            program.text
        )),
        _ => verdict,
    }
}

fn allowlisted_verdict(name: &str, args: &[Word], scope: &mut Scope) -> Verdict {
    // Never verdicts first: a glob among the arguments must not soften `git config *`.
    let verdict = programs::classify(name, args);
    if matches!(verdict, Verdict::Never(_)) {
        return verdict;
    }
    let found = match name {
        "git" => scope
            .foreign_repository()
            .or_else(|| scope.git_hooks_redirected()),
        "diff" => scope.diff_escapes(args),
        _ => None,
    };
    if let Some(reason) = found {
        return Verdict::Never(reason);
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
    verdict
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

fn arguments_never(name: &str, args: &[Word], scope: &mut Scope) -> Option<String> {
    if let Some(word) = args.iter().find(|w| w.expands) {
        return Some(format!("{EXPANSION} (in `{}`)", word.text));
    }
    // `{.,.}./x` is `../x`, and `grep {x,/etc/passwd} f` shifts a path into a file
    // operand: the alternatives are not analysed, so only text-printing programs may
    // have them.
    if !programs::takes_no_paths(name)
        && let Some(word) = args.iter().find(|w| w.has_brace_expansion())
    {
        return Some(format!(
            "brace expansion `{}` is not analysed (its words could name paths outside the \
             workspace); list the arguments explicitly",
            word.text
        ));
    }
    let not_paths = programs::non_path_args(name, args);
    args.iter()
        .zip(not_paths)
        .find_map(|(word, not_path)| match not_path {
            false => scope.argument_escapes(word),
            // An unquoted glob in a pattern (`grep l* f`) expands to file names, and every
            // name after the first becomes a file operand.
            true if word.has_glob() && !programs::takes_no_paths(name) => scope.glob_escapes(word),
            true => None,
        })
}

/// For a segment that may change files: an argument naming a path commands may not change.
fn protected_arguments(name: &str, args: &[Word], scope: &mut Scope) -> Option<String> {
    let not_paths = programs::non_path_args(name, args);
    args.iter()
        .zip(not_paths)
        .filter(|(_, not_path)| !not_path)
        .find_map(|(word, _)| scope.names_protected(word))
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
        if target.has_glob() || target.has_brace_expansion() {
            return Some(format!(
                "the redirection target `{}` is a pattern, which could pick any file \
                 (`.gi?/config`); name the file",
                target.text
            ));
        }
        scope.path_escapes(&target.text)
    })
}
