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
    /// Writes the files at these argument indices.
    Writes(Vec<usize>),
    Unlisted(String),
    Never(String),
}

/// Why a program is never run without a person, if it is one of those. `name` is the
/// basename as written; compared without case for case-insensitive file systems.
pub fn never_reason(name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    let n = lower.as_str();
    const SHELLS: &[&str] = &[
        "sh",
        "bash",
        "zsh",
        "dash",
        "fish",
        "ksh",
        "mksh",
        "pdksh",
        "csh",
        "tcsh",
        "ash",
        "yash",
        "rbash",
        "pwsh",
        "powershell",
        "nu",
        "elvish",
        "xonsh",
    ];
    const INTERPRETER_PREFIXES: &[&str] = &[
        "python", "pypy", "ipython", "perl", "ruby", "jruby", "php", "lua", "node", "tclsh",
    ];
    const INTERPRETERS: &[&str] = &[
        "deno",
        "bun",
        "awk",
        "gawk",
        "mawk",
        "nawk",
        "busybox",
        "toybox",
        "osascript",
        "rscript",
        "julia",
        "irb",
        "expect",
        "wish",
        "guile",
        "racket",
        "sbcl",
        "ghci",
        "runghc",
        "runhaskell",
        "scala",
        "groovy",
        "jshell",
        "erl",
        "escript",
        "elixir",
        "iex",
        "m4",
        "dc",
        "sqlite3",
        "vi",
        "vim",
        "nvim",
        "view",
        "ex",
        "ed",
        "emacs",
        "gdb",
        "lldb",
    ];
    const WRAPPERS: &[&str] = &[
        "eval",
        "exec",
        "source",
        ".",
        "command",
        "builtin",
        "env",
        "xargs",
        "sudo",
        "su",
        "doas",
        "pkexec",
        "runuser",
        "nohup",
        "nice",
        "renice",
        "ionice",
        "timeout",
        "gtimeout",
        "time",
        "watch",
        "strace",
        "ltrace",
        "valgrind",
        "chroot",
        "unshare",
        "nsenter",
        "setsid",
        "setpriv",
        "stdbuf",
        "unbuffer",
        "script",
        "ssh",
        "parallel",
        "flock",
        "taskset",
        "chrt",
        "systemd-run",
        "fakeroot",
        "proot",
        "firejail",
        "bwrap",
        "sg",
        "newgrp",
        "tmux",
        "screen",
        "at",
        "batch",
        "crontab",
        "caffeinate",
        "sandbox-exec",
        "arch",
        "fc",
    ];
    const STATE: &[&str] = &[
        "export", "alias", "unalias", "set", "unset", "trap", "readonly", "declare", "typeset",
        "local", "shopt", "enable", "hash", "ulimit", "umask", "bind", "complete", "let", "pushd",
        "popd",
    ];
    if SHELLS.contains(&n) {
        Some(format!("`{name}` is a shell; it runs any command"))
    } else if INTERPRETERS.contains(&n) || INTERPRETER_PREFIXES.iter().any(|p| n.starts_with(p)) {
        Some(format!(
            "`{name}` is an interpreter; it runs arbitrary code"
        ))
    } else if WRAPPERS.contains(&n) {
        Some(format!("`{name}` runs other programs"))
    } else if STATE.contains(&n) {
        Some(format!(
            "`{name}` changes the shell's state (or prints variables that may hold secrets)"
        ))
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

/// An option that turns an allowlisted program into something else.
struct Deny {
    short: &'static str,
    long: &'static [&'static str],
    why: &'static str,
}

fn deny_list(name: &str) -> &'static [Deny] {
    match name {
        "wc" => &[Deny {
            short: "",
            long: &["files0-from"],
            why: "reads file names from a file",
        }],
        "file" => &[Deny {
            short: "C",
            long: &["compile"],
            why: "writes a file",
        }],
        "tree" => &[
            Deny {
                short: "oR",
                long: &["output"],
                why: "writes files",
            },
            Deny {
                short: "l",
                long: &[],
                why: FOLLOWS,
            },
        ],
        "sort" => &[
            Deny {
                short: "o",
                long: &["output"],
                why: "writes a file",
            },
            Deny {
                short: "",
                long: &["compress-program"],
                why: "runs another program",
            },
            Deny {
                short: "",
                long: &["files0-from"],
                why: "reads file names from a file",
            },
        ],
        // bash's builtin `printf -v PATH ...` would redirect every later program lookup.
        "printf" => &[Deny {
            short: "v",
            long: &[],
            why: "assigns a shell variable",
        }],
        "date" => &[Deny {
            short: "s",
            long: &["set"],
            why: "sets the system clock",
        }],
        "grep" | "egrep" | "fgrep" => &[Deny {
            short: "R",
            long: &["dereference-recursive"],
            why: FOLLOWS,
        }],
        "rg" => &[
            Deny {
                short: "",
                long: &["pre", "pre-glob", "hostname-bin"],
                why: "runs another program",
            },
            Deny {
                short: "z",
                long: &["search-zip"],
                why: "runs decompression programs",
            },
            Deny {
                short: "L",
                long: &["follow"],
                why: FOLLOWS,
            },
        ],
        _ => &[],
    }
}

/// Classifies an allowlisted program by its arguments.
pub fn classify(name: &str, args: &[Word]) -> Verdict {
    for deny in deny_list(name) {
        if let Some(word) = find_option(args, deny.short, deny.long) {
            return Verdict::Unlisted(format!("`{name} {word}` {}", deny.why));
        }
    }
    match name {
        "hostname" if !args.is_empty() => {
            Verdict::Unlisted("`hostname` with arguments can set the host name".into())
        }
        "uniq" if positionals(args).count() > 1 => {
            Verdict::Unlisted("`uniq` with two file arguments writes the second one".into())
        }
        "find" => find(args),
        "git" => match git::check(args) {
            Ok(()) => Verdict::ReadOnly,
            Err(why) => Verdict::Unlisted(why),
        },
        "sed" => match sed::analyze(args) {
            Ok(call) if call.in_place => Verdict::Writes(call.files),
            Ok(_) => Verdict::ReadOnly,
            Err(why) => Verdict::Unlisted(why),
        },
        "tee" => Verdict::Writes(
            positionals(args)
                .filter(|&i| !is_harmless_device(&args[i].text))
                .collect(),
        ),
        _ => Verdict::ReadOnly,
    }
}

fn find(args: &[Word]) -> Verdict {
    for word in args {
        let why = match word.text.as_str() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => "runs other programs",
            "-delete" => "deletes files",
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => "writes a file",
            "-files0-from" => "reads file names from a file",
            "-L" | "-follow" => FOLLOWS,
            _ => continue,
        };
        return Verdict::Unlisted(format!("`find {}` {why}", word.text));
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

/// Marks arguments that are not file names (patterns, scripts, text to print), so the
/// path checks skip them: `grep /api/v1 src` searches for a string, it does not open
/// `/api/v1`. Only words we can place with certainty are marked.
pub fn non_path_args(name: &str, args: &[Word]) -> Vec<bool> {
    let mut marks = vec![false; args.len()];
    match name {
        "echo" | "printf" | "tr" | "basename" | "dirname" | "seq" | "true" | "false" => {
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
