//! `git` is allowlisted for reading history and the working tree only. Git can be told to
//! run programs from its command line (`-c core.pager=sh`, `--exec-path`, `--ext-diff`,
//! `grep -O`, `--upload-pack`), to use another repository whose config names programs
//! (`--git-dir`, `-C`, `--work-tree`), or to write (`--output`, `branch -d`). So global
//! options are allowlisted, subcommands are allowlisted, and subcommands that both list and
//! modify (branch, tag, remote, reflog, stash) are accepted only in their listing form.
//!
//! The repository's own `.git/config` is trusted: file tools refuse to write into `.git/`,
//! which is what keeps it trustworthy.

use super::lexer::Word;
use super::programs::{Risk, find_option};

/// `Ok` when the invocation only reads; `Err` says why not, and how bad it is.
pub fn check(args: &[Word]) -> Result<(), (Risk, String)> {
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let text = word.text.as_str();
        if !text.starts_with('-') {
            break;
        }
        global_option(text)?;
        i += 1;
    }
    let Some(sub) = args.get(i) else {
        return Ok(());
    };
    let sub = sub.text.as_str();
    let rest = &args[i + 1..];
    // `ext::sh -c ...` is a remote URL that runs a command.
    if let Some(word) = args.iter().find(|w| w.text.contains("ext::")) {
        return Err((
            Risk::Never,
            format!(
                "`git ... {}` names a transport that runs a command",
                word.text
            ),
        ));
    }
    if let Some(why) = runs_programs(sub, rest) {
        return Err((Risk::Never, why));
    }
    program_options(sub, rest)?;
    subcommand(sub, rest)
}

/// Long options that run a program, open a viewer or write a file, whatever the subcommand.
fn program_options(sub: &str, rest: &[Word]) -> Result<(), (Risk, String)> {
    for (long, why, risk) in [
        ("help", "opens a manual viewer", Risk::Ask),
        ("output", "writes a file", Risk::Ask),
        ("ext-diff", "runs an external diff program", Risk::Never),
        ("upload-pack", "runs another program", Risk::Never),
        ("receive-pack", "runs another program", Risk::Never),
        ("exec", "runs another program", Risk::Never),
        ("open-files-in-pager", "runs a pager program", Risk::Never),
    ] {
        if let Some(word) = find_option(rest, "", &[long]) {
            return Err((risk, format!("`git {sub} {word}` {why}")));
        }
    }
    Ok(())
}

/// The subcommand allowlist: read-only subcommands pass, those that also modify pass only
/// in their listing form, and anything else asks.
fn subcommand(sub: &str, rest: &[Word]) -> Result<(), (Risk, String)> {
    let ask = |why: String| Err((Risk::Ask, why));
    match sub {
        "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "blame" | "describe"
        | "shortlog" | "cat-file" | "ls-tree" | "rev-list" | "show-ref" | "merge-base"
        | "for-each-ref" | "check-ignore" | "version" | "whatchanged" => Ok(()),
        "grep" => match find_option(rest, "O", &[]) {
            Some(word) => Err((
                Risk::Never,
                format!("`git grep {word}` runs a pager program"),
            )),
            None => Ok(()),
        },
        "branch" => listing(sub, rest, "arvli", BRANCH_LONG).or_else(ask),
        "tag" => listing(sub, rest, "lni", TAG_LONG).or_else(ask),
        "remote" => remote(rest).or_else(ask),
        "reflog" | "stash" => reflog_or_stash(sub, rest),
        other => ask(format!(
            "`git {other}` is not on the read-only allowlist (status, log, diff, show, grep, \
             blame, ...)"
        )),
    }
}

/// `git reflog` and `git stash` only in the forms that show: any other action asks.
fn reflog_or_stash(sub: &str, rest: &[Word]) -> Result<(), (Risk, String)> {
    let allowed: &[&str] = if sub == "reflog" {
        &["show", "exists"]
    } else {
        &["list", "show"]
    };
    let first = rest.iter().find(|w| !w.text.starts_with('-'));
    match first.map(|w| w.text.as_str()) {
        None if sub == "reflog" => Ok(()),
        Some(action) if allowed.contains(&action) => Ok(()),
        // `git reflog <ref>` shows that ref's log.
        Some(action) if sub == "reflog" && !MODIFYING_REFLOG.contains(&action) => Ok(()),
        other => Err((
            Risk::Ask,
            format!(
                "`git {sub} {}` changes the repository; only {} run without asking",
                other.unwrap_or_default(),
                allowed.join("/")
            ),
        )),
    }
}

const MODIFYING_REFLOG: &[&str] = &["expire", "delete", "drop", "write"];

/// Why `git SUB REST` runs, schedules or plants a command of the caller's choosing, if it
/// does. These are `Never` rather than merely off the allowlist: an ordinary write by git
/// is confined like any program's, but a command planted in the configuration, or a
/// program named on the command line, runs whatever the model chose.
fn runs_programs(sub: &str, rest: &[Word]) -> Option<String> {
    let option = |shorts: &str, longs: &[&str]| find_option(rest, shorts, longs);
    let why = match sub {
        // Any setting can name a program (core.pager, core.fsmonitor, alias.x = !sh ...).
        "config" if !config_only_reads(rest) => {
            "sets configuration, which can name programs to run"
        }
        "difftool" | "mergetool" => "runs a diff or merge tool program",
        "filter-branch" | "filter-repo" => "runs filter commands",
        "send-email" => "runs mail programs named in its options",
        "instaweb" | "daemon" | "web--browse" => "starts a server or a browser",
        "credential" | "credential-store" | "credential-cache" => {
            "runs credential helpers and prints secrets"
        }
        "maintenance" => "schedules git commands to run later",
        "hook" => "runs a hook program",
        "p4" | "svn" | "cvsimport" | "cvsexportcommit" | "cvsserver" | "archimport"
        | "quiltimport" => "runs other version-control programs",
        // `bisect--helper` and `submodule--helper` are the same commands in older gits.
        _ if sub.starts_with("bisect") && rest.iter().any(|w| w.text == "run") => {
            "runs a command on each step"
        }
        _ if sub.starts_with("submodule") && rest.iter().any(|w| w.text == "foreach") => {
            "runs a command in each submodule"
        }
        "rebase" if option("x", &["exec"]).is_some() => "runs a command after each commit",
        "clone" if option("uc", &["upload-pack", "config", "template"]).is_some() => {
            "sets configuration, hooks or an upload program for the new repository"
        }
        "init" if option("", &["template"]).is_some() => "copies hooks from a template",
        "ls-remote" if option("u", &[]).is_some() => "runs another program as upload-pack",
        "help" if option("wi", &["web", "info"]).is_some() => "starts a browser or viewer",
        _ => return None,
    };
    let shown: Vec<&str> = std::iter::once(sub)
        .chain(rest.iter().map(|w| w.text.as_str()))
        .collect();
    Some(format!("`git {}` {why}", shown.join(" ")))
}

/// `git config --get x`, `git config -l`, `git config get x`: only reading, and no
/// option that writes or opens an editor.
fn config_only_reads(rest: &[Word]) -> bool {
    const READS: &[&str] = &[
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--get-color",
        "--get-colorbool",
        "-l",
        "--list",
        "get",
        "list",
    ];
    const WRITES: &[&str] = &[
        "--add",
        "--replace-all",
        "--unset",
        "--unset-all",
        "--rename-section",
        "--remove-section",
        "-e",
        "--edit",
        "set",
        "unset",
        "rename-section",
        "remove-section",
        "edit",
    ];
    let words = || rest.iter().map(|w| w.text.as_str());
    words().any(|w| READS.contains(&w)) && !words().any(|w| WRITES.contains(&w))
}

/// Global options before the subcommand. Those that make git run a program of the
/// caller's choosing, or load another repository's config (which can name programs, e.g.
/// `core.fsmonitor` runs on `git status`), are `Never`.
fn global_option(text: &str) -> Result<(), (Risk, String)> {
    const HARMLESS: &str = "--no-pager -P --no-optional-locks --literal-pathspecs \
                            --glob-pathspecs --noglob-pathspecs --icase-pathspecs \
                            --no-replace-objects --version";
    let name = text.split('=').next().unwrap_or_default();
    if HARMLESS.split_whitespace().any(|h| h == name) {
        return Ok(());
    }
    let never = |why: &str| Err((Risk::Never, format!("`git {text}` {why}")));
    match name {
        "--config-env" => never("sets configuration, which can name programs to run"),
        "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix" => {
            never("points git at another repository, whose config may run programs")
        }
        "--exec-path" => never("changes where git finds its programs"),
        _ if text.starts_with("-c") => never(
            "sets configuration, which can name programs to run (core.pager, diff.external, ...)",
        ),
        _ if text.starts_with("-C") => {
            never("runs in another directory, whose repository config may run programs")
        }
        "-p" | "--paginate" => Err((Risk::Ask, format!("`git {text}` starts a pager program"))),
        _ => Err((
            Risk::Ask,
            format!("git option `{text}` is not on the allowlist"),
        )),
    }
}

/// Long options of `git branch` that only select or format what is listed. Those in
/// `LIST_MODE` also make positional words patterns or commits instead of new branch names.
const BRANCH_LONG: &[&str] = &[
    "all",
    "remotes",
    "list",
    "verbose",
    "show-current",
    "color",
    "no-color",
    "column",
    "no-column",
    "ignore-case",
    "omit-empty",
    "abbrev",
    "no-abbrev",
    "sort",
    "format",
    "contains",
    "no-contains",
    "merged",
    "no-merged",
    "points-at",
];
const TAG_LONG: &[&str] = &[
    "list",
    "color",
    "column",
    "no-column",
    "ignore-case",
    "omit-empty",
    "sort",
    "format",
    "contains",
    "no-contains",
    "merged",
    "no-merged",
    "points-at",
];
const LIST_MODE: &[&str] = &[
    "list",
    "contains",
    "no-contains",
    "merged",
    "no-merged",
    "points-at",
];
/// Options whose value may be the next word.
const WITH_VALUE: &[&str] = &[
    "sort",
    "format",
    "contains",
    "no-contains",
    "merged",
    "no-merged",
    "points-at",
];

/// `git branch` / `git tag` in listing form: only listing options, and operands only when
/// listing was asked for (`-l`, `--contains`, ...); otherwise an operand creates a ref.
fn listing(sub: &str, args: &[Word], shorts: &str, longs: &[&str]) -> Result<(), String> {
    let refuse = |word: &str| {
        Err(format!(
            "`git {sub} {word}` changes refs; only the listing form runs without asking"
        ))
    };
    let mut list_mode = false;
    let mut operands = false;
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let text = word.text.as_str();
        if let Some(long) = text.strip_prefix("--") {
            let (name, has_value) = match long.split_once('=') {
                Some((name, _)) => (name, true),
                None => (long, false),
            };
            if !longs.contains(&name) {
                return refuse(text);
            }
            list_mode |= LIST_MODE.contains(&name);
            if !has_value && WITH_VALUE.contains(&name) {
                // The value is optional for some of these; consuming the next word only
                // ever turns an operand into a value, which is the safer reading.
                i += 1;
            }
        } else if let Some(cluster) = text.strip_prefix('-') {
            // `git tag -n5` prints five annotation lines.
            let letters = cluster.trim_end_matches(|c: char| c.is_ascii_digit());
            if letters.is_empty() || !letters.chars().all(|c| shorts.contains(c)) {
                return refuse(text);
            }
            list_mode |= letters.contains('l') || (sub == "tag" && letters.contains('n'));
        } else {
            operands = true;
        }
        i += 1;
    }
    if operands && !list_mode {
        return refuse(
            &args
                .iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        );
    }
    Ok(())
}

fn remote(args: &[Word]) -> Result<(), String> {
    let words: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    match words.as_slice() {
        [] => Ok(()),
        ["-v" | "--verbose"] => Ok(()),
        ["get-url", ..] => Ok(()),
        _ => Err(format!(
            "`git remote {}` may change remotes or contact the network; only `git remote -v` \
             and `get-url` run without asking",
            words.join(" ")
        )),
    }
}
