//! Which programs are known, and what their arguments may do.
//!
//! Three lists: programs that run other code (never run without a person), the read-only
//! allowlist, and for allowlisted programs the options that would make them run, write or
//! leave the workspace. Allowlisting a program must never allowlist what it can launch, so
//! every option that executes something (`find -exec`, `rg --pre`, `sort
//! --compress-program`, `git -c`) is listed here.

use super::lexer::Word;
use super::{git, sed};

/// The verdict for an allowlisted program's own arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    ReadOnly,
    /// Writes the files at the argument indices `files`, and the files named `derived`
    /// (computed from those arguments, such as `sed -i.bak`'s backups).
    Writes {
        files: Vec<usize>,
        derived: Vec<String>,
    },
    Unlisted(String),
    Never(String),
}

/// Why a program is never run without a person, if it is one of those. `name` is the
/// basename as written; compared without case for case-insensitive file systems.
pub fn never_reason(name: &str) -> Option<String> {
    const SHELLS: &str = "sh bash zsh dash fish ksh mksh pdksh csh tcsh ash yash rbash pwsh \
                          powershell nu elvish xonsh";
    const INTERPRETER_PREFIXES: &str = "python pypy ipython perl ruby jruby php lua node tclsh";
    const INTERPRETERS: &str = "deno bun awk gawk mawk nawk busybox toybox osascript rscript \
                                julia irb expect wish guile racket sbcl ghci runghc runhaskell \
                                scala groovy jshell erl escript elixir iex m4 dc sqlite3 vi vim \
                                nvim view ex ed emacs gdb lldb";
    const WRAPPERS: &str = "eval exec source . command builtin env xargs sudo su doas pkexec \
                            runuser nohup nice renice ionice timeout gtimeout time watch strace \
                            ltrace valgrind perf hyperfine chroot unshare nsenter setsid setpriv \
                            stdbuf unbuffer script ssh parallel flock taskset chrt numactl \
                            prlimit cpulimit faketime systemd-run fakeroot proot firejail bwrap \
                            sg newgrp tmux screen at batch crontab caffeinate sandbox-exec arch \
                            setarch linux32 linux64 capsh chpst envdir ssh-agent dbus-launch \
                            xvfb-run proxychains proxychains4 torsocks rlwrap entr daemonize \
                            start-stop-daemon xdg-open open fc";
    const STATE: &str = "export alias unalias set unset trap readonly declare typeset local \
                         shopt enable hash ulimit umask bind complete let pushd popd";
    let lower = name.to_ascii_lowercase();
    let n = lower.as_str();
    let listed = |list: &str| list.split_whitespace().any(|item| item == n);
    if listed(SHELLS) {
        Some(format!("`{name}` is a shell; it runs any command"))
    } else if listed(INTERPRETERS)
        || INTERPRETER_PREFIXES
            .split_whitespace()
            .any(|p| n.starts_with(p))
    {
        Some(format!(
            "`{name}` is an interpreter; it runs arbitrary code"
        ))
    } else if listed(WRAPPERS) {
        Some(format!("`{name}` runs other programs"))
    } else if listed(STATE) {
        Some(format!("`{name}` changes the shell's state"))
    } else if n == "printenv" {
        Some("`printenv` prints environment variables, which may hold secrets".into())
    } else {
        None
    }
}

/// Shell keywords start compound commands whose bodies we do not analyse.
pub fn is_keyword(name: &str) -> bool {
    matches!(
        name,
        "if" | "then"
            | "else"
            | "elif"
            | "fi"
            | "for"
            | "while"
            | "until"
            | "do"
            | "done"
            | "case"
            | "esac"
            | "select"
            | "function"
            | "{"
            | "}"
            | "!"
            | "[["
            | "]]"
            | "coproc"
    )
}

/// Programs that only print what they are given or read; no option of theirs is a risk.
const PLAIN: &[&str] = &[
    "ls", "cat", "head", "tail", "pwd", "echo", "true", "false", "basename", "dirname", "realpath",
    "readlink", "stat", "df", "nl", "od", "hexdump", "cmp", "comm", "diff", "paste", "column",
    "fold", "fmt", "expand", "unexpand", "rev", "tac", "seq", "cut", "tr", "which", "whoami",
    "uname", "id", "test", "[", "du",
];

/// Allowlisted programs with options we must look at.
const CHECKED: &[&str] = &[
    "printf", "wc", "file", "tree", "sort", "uniq", "date", "hostname", "grep", "egrep", "fgrep",
    "rg", "find", "sed", "git", "tee",
];

pub fn is_allowlisted(name: &str) -> bool {
    PLAIN.contains(&name) || CHECKED.contains(&name)
}

/// Whether an option smuggled in by a glob (a file named `--pre=sh` matched by `*`) could
/// change what the program does.
pub fn has_risky_options(name: &str) -> bool {
    CHECKED.contains(&name)
}

const FOLLOWS: &str = "follows symlinks, which may lead outside the workspace";
const RUNS: &str = "runs another program";
const NAMES_FROM_FILE: &str = "reads file names from a file (they may lie outside the workspace)";

/// How bad a refused option is. Options that run other programs, or read outside the
/// workspace, are `Never`: the design promises `find -exec`, `git -c` and the like never
/// auto-run, not even in bypass mode. Options that merely write or change settings are
/// `Ask` (`Unlisted`), like any program off the allowlist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Risk {
    Ask,
    Never,
}

impl Risk {
    pub fn verdict(self, reason: String) -> Verdict {
        match self {
            Risk::Ask => Verdict::Unlisted(reason),
            Risk::Never => Verdict::Never(reason),
        }
    }
}

/// An option that turns a program into something else: (short letters, long names, why,
/// risk).
type Deny = (&'static str, &'static [&'static str], &'static str, Risk);

fn deny_list(name: &str) -> &'static [Deny] {
    use Risk::{Ask, Never};
    match name {
        "wc" => &[("", &["files0-from"], NAMES_FROM_FILE, Never)],
        "file" => &[("C", &["compile"], "writes a file", Ask)],
        "tree" => &[
            ("oR", &["output"], "writes files", Ask),
            ("l", &[], FOLLOWS, Never),
        ],
        "sort" => &[
            ("o", &["output"], "writes a file", Ask),
            ("", &["compress-program"], RUNS, Never),
            ("", &["files0-from"], NAMES_FROM_FILE, Never),
        ],
        // bash's builtin `printf -v PATH ...` would redirect every later program lookup.
        "printf" => &[("v", &[], "assigns a shell variable", Never)],
        "date" => &[("s", &["set"], "sets the system clock", Ask)],
        // BSD grep's `-S` follows every symlink while recursing.
        "grep" | "egrep" | "fgrep" => &[("RS", &["dereference-recursive"], FOLLOWS, Never)],
        // `ls -LR` walks into directories that symlinks lead to, wherever they are.
        "ls" => &[("L", &["dereference"], FOLLOWS, Never)],
        "du" => &[
            ("L", &["dereference"], FOLLOWS, Never),
            ("", &["files0-from"], NAMES_FROM_FILE, Never),
        ],
        "cp" | "gcp" => &[("L", &["dereference"], FOLLOWS, Never)],
        "rg" => &[
            ("", &["pre", "pre-glob", "hostname-bin"], RUNS, Never),
            ("z", &["search-zip"], "runs decompression programs", Ask),
            ("L", &["follow"], FOLLOWS, Never),
        ],
        // Off the allowlist, but able to run an arbitrary program named in an argument:
        // they must not become auto-runnable in bypass mode.
        "tar" | "gtar" | "bsdtar" => &[
            (
                "IF",
                &[
                    "to-command",
                    "use-compress-program",
                    "checkpoint-action",
                    "info-script",
                    "new-volume-script",
                    "rsh-command",
                    "rmt-command",
                ],
                RUNS,
                Never,
            ),
            ("h", &["dereference"], FOLLOWS, Never),
            ("T", &["files-from"], NAMES_FROM_FILE, Never),
        ],
        "split" | "gsplit" => &[("", &["filter"], RUNS, Never)],
        "rsync" => &[
            ("e", &["rsh", "rsync-path"], RUNS, Never),
            (
                "Lk",
                &["copy-links", "copy-dirlinks", "copy-unsafe-links"],
                FOLLOWS,
                Never,
            ),
        ],
        // `zip -@` reads the names to archive from its input.
        // `sha256sum -c LIST` opens every file LIST names.
        "md5sum" | "sha1sum" | "sha224sum" | "sha256sum" | "sha384sum" | "sha512sum" | "b2sum"
        | "shasum" | "cksum" => &[("c", &["check"], NAMES_FROM_FILE, Never)],
        "zip" => &[
            ("T", &["unzip-command"], RUNS, Never),
            ("@", &["names-stdin"], NAMES_FROM_FILE, Never),
        ],
        "scp" | "sftp" => &[("SoF", &[], RUNS, Never)],
        "fd" | "fdfind" => &[("xX", &["exec", "exec-batch"], RUNS, Never)],
        "sdiff" | "diff3" => &[("", &["diff-program"], RUNS, Never)],
        "man" => &[("PH", &["pager", "html"], RUNS, Never)],
        "wget" => &[("e", &["use-askpass", "execute"], RUNS, Never)],
        _ => &[],
    }
}

/// For a program off the allowlist: the reason it is `Never` rather than merely
/// `Unlisted`, if one of its arguments makes it run another program or read secrets.
pub fn never_by_options(name: &str, args: &[Word]) -> Option<String> {
    // Traditional `tar cvhf x.tar dir`: the first word is a cluster without its dash.
    let dashed;
    let args = match args.split_first() {
        Some((first, rest))
            if matches!(name, "tar" | "gtar" | "bsdtar") && !first.text.starts_with('-') =>
        {
            dashed = std::iter::once(Word {
                text: format!("-{}", first.text),
                ..first.clone()
            })
            .chain(rest.iter().cloned())
            .collect::<Vec<_>>();
            &dashed[..]
        }
        _ => args,
    };
    for &(short, long, why, risk) in deny_list(name) {
        if risk == Risk::Never
            && let Some(word) = find_option(args, short, long)
        {
            return Some(format!("`{name} {word}` {why}"));
        }
    }
    match name {
        // cpio archives or copies the files named on its input, wherever they are.
        "cpio" => return Some(format!("`cpio` {NAMES_FROM_FILE}")),
        // zip stores what symlinks point to unless told `-y`.
        "zip"
            if find_option(args, "rR", &["recurse-paths"]).is_some()
                && find_option(args, "y", &["symlinks"]).is_none() =>
        {
            return Some(format!("`zip -r` without `-y` {FOLLOWS}"));
        }
        _ => {}
    }
    // `jq -n env` and `$ENV` print every environment variable, API keys included.
    if name == "jq"
        && args
            .iter()
            .any(|w| w.text.contains("env") || w.text.contains("ENV"))
    {
        return Some(
            "`jq` reading `env` or `$ENV` prints environment variables, which may \
                     hold secrets"
                .into(),
        );
    }
    None
}

/// For any program: an option that reads the names of files to open from another file
/// (`--files0-from`, `--files-from`, find's `-files0-from`). The names can lie anywhere.
pub fn reads_names_from_file(name: &str, args: &[Word]) -> Option<String> {
    args.iter()
        .map(|w| w.text.as_str())
        .find(|text| {
            let Some(option) = text.strip_prefix("--").or_else(|| text.strip_prefix('-')) else {
                return false;
            };
            let option = option.split('=').next().unwrap_or_default();
            // At least this much of the name, so `rg --files` and
            // `grep --files-with-matches` stay what they are.
            option.starts_with("files0") || option.starts_with("files-f")
        })
        .map(|word| format!("`{name} {word}` {NAMES_FROM_FILE}"))
}

/// Classifies an allowlisted program by its arguments.
pub fn classify(name: &str, args: &[Word]) -> Verdict {
    for &(short, long, why, risk) in deny_list(name) {
        if let Some(word) = find_option(args, short, long) {
            return risk.verdict(format!("`{name} {word}` {why}"));
        }
    }
    match name {
        "hostname" if !args.is_empty() => {
            Verdict::Unlisted("`hostname` with arguments can set the host name".into())
        }
        // `date MMDDhhmm[[CC]YY][.ss]` sets the clock like `-s`: only `+FORMAT` operands
        // (and none) leave it alone.
        "date" if sets_the_clock(args) => Verdict::Unlisted(
            "`date` with an operand that is not a +FORMAT sets the system clock".into(),
        ),
        "uniq" if positionals(args).count() > 1 => {
            Verdict::Unlisted("`uniq` with two file arguments writes the second one".into())
        }
        "find" => find(args),
        "git" => match git::check(args) {
            Ok(()) => Verdict::ReadOnly,
            Err((risk, why)) => risk.verdict(why),
        },
        "sed" => match sed::analyze(args) {
            Ok(call) if call.in_place => Verdict::Writes {
                derived: call.backups,
                files: call.files,
            },
            Ok(_) => Verdict::ReadOnly,
            Err((risk, why)) => risk.verdict(why),
        },
        "tee" => Verdict::Writes {
            files: positionals(args)
                .filter(|&i| !is_harmless_device(&args[i].text))
                .collect(),
            derived: Vec::new(),
        },
        _ => Verdict::ReadOnly,
    }
}

fn find(args: &[Word]) -> Verdict {
    for word in args {
        let (why, risk) = match word.text.as_str() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => ("runs other programs", Risk::Never),
            "-delete" => ("deletes files", Risk::Ask),
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => ("writes a file", Risk::Ask),
            "-files0-from" => (NAMES_FROM_FILE, Risk::Never),
            "-L" | "-follow" => (FOLLOWS, Risk::Never),
            _ => continue,
        };
        return risk.verdict(format!("`find {}` {why}", word.text));
    }
    Verdict::ReadOnly
}

/// `/dev/null` and friends are fine to name anywhere: they hold no data and go nowhere.
pub fn is_harmless_device(text: &str) -> bool {
    matches!(
        text,
        "/dev/null" | "/dev/stdin" | "/dev/stdout" | "/dev/stderr"
    )
}

/// Indices of arguments that are not options.
/// Whether `date` has an operand other than `+FORMAT` (`date 01011200` sets the clock).
/// The values of `-d`, `-f`, `-r` and their long forms are not operands.
fn sets_the_clock(args: &[Word]) -> bool {
    let mut words = args.iter().map(|w| w.text.as_str());
    while let Some(word) = words.next() {
        match word {
            "-d" | "-f" | "-r" | "--date" | "--file" | "--reference" => {
                words.next();
            }
            w if w.starts_with('-') => {}
            w => return !w.starts_with('+'),
        }
    }
    false
}

fn positionals(args: &[Word]) -> impl Iterator<Item = usize> + '_ {
    args.iter()
        .enumerate()
        .filter(|(_, w)| !w.text.starts_with('-') || w.text == "-")
        .map(|(i, _)| i)
}

/// The first word that is one of the short options in `shorts` (alone or in a cluster such
/// as `-nz`) or one of the long options in `longs`. Every word is checked, even after `--`:
/// reading a file name as an option is harmless here, missing an option is not. GNU
/// `getopt_long` and git accept unambiguous abbreviations (`--compress-prog`), so any
/// prefix of a denied long option counts.
pub fn find_option<'a>(args: &'a [Word], shorts: &str, longs: &[&str]) -> Option<&'a str> {
    args.iter().map(|w| w.text.as_str()).find(|text| {
        if let Some(long) = text.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or_default();
            !name.is_empty() && longs.iter().any(|d| d.starts_with(name))
        } else if let Some(cluster) = text.strip_prefix('-') {
            cluster.chars().any(|c| shorts.contains(c))
        } else {
            false
        }
    })
}

/// Programs none of whose arguments names a file (they print or transform text).
pub fn takes_no_paths(name: &str) -> bool {
    matches!(
        name,
        "echo" | "printf" | "tr" | "basename" | "dirname" | "seq" | "true" | "false"
    )
}

/// Marks arguments that are not file names (patterns, scripts, text to print), so the
/// path checks skip them: `grep /api/v1 src` searches for a string, it does not open
/// `/api/v1`. Only words we can place with certainty are marked.
pub fn non_path_args(name: &str, args: &[Word]) -> Vec<bool> {
    let mut marks = vec![false; args.len()];
    match name {
        _ if takes_no_paths(name) => {
            marks.iter_mut().for_each(|m| *m = true);
        }
        "grep" | "egrep" | "fgrep" => mark_pattern(args, "ABmdD", &mut marks),
        "rg" => mark_pattern(args, "ABmMdEgtTjr", &mut marks),
        "sed" => {
            if let Ok(call) = sed::analyze(args) {
                call.script_args.iter().for_each(|&i| marks[i] = true);
            }
        }
        "find" => {
            for i in 0..args.len().saturating_sub(1) {
                let primary = args[i].text.as_str();
                if matches!(
                    primary,
                    "-name"
                        | "-iname"
                        | "-path"
                        | "-ipath"
                        | "-wholename"
                        | "-iwholename"
                        | "-regex"
                        | "-iregex"
                        | "-lname"
                        | "-ilname"
                ) {
                    marks[i + 1] = true;
                }
            }
        }
        _ => {}
    }
    marks
}

/// Marks the pattern of a grep-like command: the first operand, unless a pattern is given
/// with `-e`/`-f`. `with_value` lists the short options known to take a value. Erring
/// towards "takes no value" is safe: the word we then mistake for the pattern is one the
/// program would not open anyway, and the real pattern is merely checked as a path.
fn mark_pattern(args: &[Word], with_value: &str, marks: &mut [bool]) {
    if find_option(args, "ef", &["regexp", "file"]).is_some() {
        return;
    }
    let mut i = 0;
    while i < args.len() {
        let text = args[i].text.as_str();
        if text == "--" {
            if i + 1 < args.len() {
                marks[i + 1] = true;
            }
            return;
        }
        if text.starts_with("--") {
            // A long option; assumed to carry its value after `=`, if any.
        } else if !text.starts_with('-') || text == "-" {
            marks[i] = true;
            return;
        } else {
            // `-A 3`: the value is the next word unless glued (`-A3`).
            let cluster: Vec<char> = text[1..].chars().collect();
            if let Some(pos) = cluster.iter().position(|c| with_value.contains(*c))
                && pos == cluster.len() - 1
            {
                i += 1;
            }
        }
        i += 1;
    }
}
