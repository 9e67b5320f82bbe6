//! `sed` is allowlisted only for scripts we can prove just print, delete or substitute.
//! GNU sed can run programs (`e`, `s///e`) and read or write files (`r`, `R`, `w`, `W`,
//! `s///w`), and those can hide anywhere in a script, so the script is parsed command by
//! command and anything not understood is refused. GNU 4.x and BSD sed skip delimiters
//! inside `[...]`, older and smaller seds do not, so a script with brackets must be safe
//! under both readings. Likewise, where `sed` may be BSD's (macOS), whose `-i` takes the
//! next word as the backup suffix, an invocation must be safe read either way.

use super::lexer::Word;
use super::programs::Risk;

/// What a `sed` invocation does, as far as the classification is concerned.
#[derive(Debug, Default)]
pub struct SedCall {
    /// Indices (into the argument list) of words that are scripts, not file names.
    pub script_args: Vec<usize>,
    /// Indices of file operands.
    pub files: Vec<usize>,
    /// `-i`/`--in-place`: the files are rewritten.
    pub in_place: bool,
    /// `-iSUFFIX`/`--in-place=SUFFIX`: each file is first renamed to its own path plus the
    /// suffix (a suffix with `*` or `/` is refused before this), so those are written too.
    pub backups: Vec<String>,
}

/// How the arguments are read: GNU's `-i` takes only a glued suffix, BSD's takes the next
/// word when nothing is glued (`sed -i '' s/a/b/ f`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Gnu,
    Bsd,
}

/// Parses `sed` arguments. `Err` is the reason the call is not read-only-provable.
pub fn analyze(args: &[Word]) -> Result<SedCall, (Risk, String)> {
    analyze_dialects(args, cfg!(not(target_os = "linux")))
}

/// With `bsd_too`, the call must pass under both readings; what either reading writes is
/// written, and only words both read as scripts are exempt from the path checks.
fn analyze_dialects(args: &[Word], bsd_too: bool) -> Result<SedCall, (Risk, String)> {
    let gnu = analyze_as(args, Dialect::Gnu)?;
    if !bsd_too {
        return Ok(gnu);
    }
    let bsd = analyze_as(args, Dialect::Bsd)?;
    let mut files = gnu.files;
    files.extend(bsd.files);
    files.sort_unstable();
    files.dedup();
    let mut backups = gnu.backups;
    backups.extend(bsd.backups);
    let mut bsd_scripts = bsd.script_args;
    bsd_scripts.sort_unstable();
    Ok(SedCall {
        script_args: gnu
            .script_args
            .into_iter()
            .filter(|i| bsd_scripts.binary_search(i).is_ok())
            .collect(),
        files,
        in_place: gnu.in_place || bsd.in_place,
        backups,
    })
}

fn analyze_as(args: &[Word], dialect: Dialect) -> Result<SedCall, (Risk, String)> {
    analyze_options(args, dialect)
        .map_err(|e| (Risk::Ask, e))
        .and_then(|(mut call, scripts, suffix)| {
            if scripts.iter().any(|s| s == SCRIPT_FILE) {
                let why = "`sed -f` runs a script file we cannot check (it may use `e` or `w`)";
                return Err((Risk::Never, why.into()));
            }
            for script in &scripts {
                check_script(script, false).map_err(|e| (Risk::Never, e))?;
                if script.contains('[') {
                    check_script(script, true).map_err(|e| (Risk::Never, e))?;
                }
            }
            if let Some(suffix) = &suffix
                && suffix.contains(['*', '/'])
            {
                // `*` becomes the file's name and a `/` makes the backup a path: the
                // original can be renamed anywhere, `.git/` included.
                return Err((
                    Risk::Never,
                    format!(
                        "`sed -i{suffix}` renames each file to a name built from the suffix \
                         `{suffix}`, which could be anywhere; use a plain suffix such as `.bak`"
                    ),
                ));
            }
            if let Some(suffix) = suffix.filter(|s| !s.is_empty()) {
                call.backups = call
                    .files
                    .iter()
                    .map(|&i| format!("{}{suffix}", args[i].text))
                    .collect();
            }
            Ok(call)
        })
}

/// Parses the options; returns the call, its scripts (still unchecked) and the backup
/// suffix, if any.
type Options = (SedCall, Vec<String>, Option<String>);

fn analyze_options(args: &[Word], dialect: Dialect) -> Result<Options, String> {
    let mut reader = OptionReader {
        args,
        dialect,
        i: 0,
        call: SedCall::default(),
        suffix: None,
        scripts: Vec::new(),
        explicit_script: false,
        positional: Vec::new(),
        options_done: false,
        script_file: false,
    };
    while reader.i < args.len() {
        let text = args[reader.i].text.as_str();
        if reader.options_done || !text.starts_with('-') || text == "-" {
            reader.positional.push(reader.i);
        } else if text == "--" {
            reader.options_done = true;
        } else if let Some(long) = text.strip_prefix("--") {
            reader.long(long)?;
        } else {
            reader.shorts(text)?;
        }
        reader.i += 1;
    }
    reader.finish()
}

/// What `analyze_options` has read so far, one argument at a time.
struct OptionReader<'a> {
    args: &'a [Word],
    dialect: Dialect,
    /// The argument being read; an option that takes the next word moves it on.
    i: usize,
    call: SedCall,
    suffix: Option<String>,
    scripts: Vec<String>,
    /// A script came from `-e`/`-f` (or their long forms), so no operand is the script.
    explicit_script: bool,
    positional: Vec<usize>,
    /// After `--`, every word is an operand.
    options_done: bool,
    script_file: bool,
}

impl OptionReader<'_> {
    /// One `--name[=value]` option.
    fn long(&mut self, long: &str) -> Result<(), String> {
        let args = self.args;
        let (given, value) = long
            .split_once('=')
            .map_or((long, None), |(n, v)| (n, Some(v)));
        // GNU getopt takes any unambiguous prefix: `--in=.x` is `--in-place=.x`.
        let name = long_option(given)?;
        match name {
            "expression" => {
                self.explicit_script = true;
                match value {
                    Some(v) => self.scripts.push(v.to_string()),
                    None => {
                        self.i += 1;
                        let Some(word) = args.get(self.i) else {
                            return Err("`sed --expression` has no script".into());
                        };
                        self.scripts.push(word.text.clone());
                    }
                }
                self.call.script_args.push(self.i);
            }
            "in-place" => {
                self.call.in_place = true;
                self.suffix = value.map(str::to_string);
            }
            "quiet" | "silent" | "regexp-extended" | "separate" | "null-data"
            | "zero-terminated" | "unbuffered" | "posix" | "debug" | "sandbox" => {}
            "line-length" => {
                if value.is_none() {
                    self.i += 1;
                }
            }
            "file" => {
                self.explicit_script = true;
                self.script_file = true;
            }
            other => return Err(format!("`sed --{other}` is not on the allowlist")),
        }
        Ok(())
    }

    /// A cluster of short options; `-e` and `-l` take the rest or the next word.
    fn shorts(&mut self, text: &str) -> Result<(), String> {
        let args = self.args;
        let flags: Vec<char> = text[1..].chars().collect();
        let mut j = 0;
        while j < flags.len() {
            match flags[j] {
                'n' | 'E' | 'r' | 's' | 'u' | 'z' => {}
                'i' => {
                    // `-i[SUFFIX]`: everything after it is the backup suffix.
                    self.call.in_place = true;
                    let glued: String = flags[j + 1..].iter().collect();
                    self.suffix = Some(glued);
                    if self.dialect == Dialect::Bsd && flags.len() == j + 1 {
                        self.i += 1;
                        self.suffix = args.get(self.i).map(|w| w.text.clone());
                    }
                    break;
                }
                'e' | 'l' | 'f' => {
                    let rest: String = flags[j + 1..].iter().collect();
                    let value = if rest.is_empty() {
                        self.i += 1;
                        args.get(self.i)
                            .map(|w| w.text.clone())
                            .ok_or_else(|| format!("`sed -{}` has no argument", flags[j]))?
                    } else {
                        rest
                    };
                    if flags[j] == 'e' {
                        self.scripts.push(value);
                        self.call.script_args.push(self.i);
                    }
                    self.explicit_script |= flags[j] != 'l';
                    self.script_file |= flags[j] == 'f';
                    break;
                }
                other => return Err(format!("`sed -{other}` is not on the allowlist")),
            }
            j += 1;
        }
        Ok(())
    }

    /// The operands once every option is read: the script (unless `-e`/`-f` gave one),
    /// then the files.
    fn finish(mut self) -> Result<Options, String> {
        let args = self.args;
        let mut operands = self.positional.into_iter();
        if !self.explicit_script {
            let Some(index) = operands.next() else {
                return Err("`sed` without a script".into());
            };
            self.scripts.push(args[index].text.clone());
            self.call.script_args.push(index);
        }
        self.call.files = operands.collect();
        if self.call.in_place && self.call.files.is_empty() {
            return Err("`sed -i` without a file".into());
        }
        if self.script_file {
            // Returned as a script that fails the check, so it is refused as firmly as `e`.
            self.scripts.push(SCRIPT_FILE.into());
        }
        Ok((self.call, self.scripts, self.suffix))
    }
}

/// GNU sed's long options, for resolving abbreviations.
const LONG_OPTIONS: &[&str] = &[
    "expression",
    "file",
    "in-place",
    "line-length",
    "null-data",
    "zero-terminated",
    "quiet",
    "silent",
    "regexp-extended",
    "separate",
    "unbuffered",
    "posix",
    "debug",
    "sandbox",
    "follow-symlinks",
    "help",
    "version",
    "binary",
];

/// The long option `given` stands for: itself, or the one option it is a prefix of.
fn long_option(given: &str) -> Result<&'static str, String> {
    if let Some(exact) = LONG_OPTIONS.iter().find(|o| **o == given) {
        return Ok(exact);
    }
    let mut matching = LONG_OPTIONS.iter().filter(|o| o.starts_with(given));
    match (matching.next(), matching.next()) {
        (Some(only), None) if !given.is_empty() => Ok(only),
        _ => Err(format!("`sed --{given}` is not on the allowlist")),
    }
}

/// Stands for a `-f` script; a NUL never appears in a real argument (the floor refuses it).
const SCRIPT_FILE: &str = "\0script file";

const UNSAFE: &str = "the sed script is not a plain print/delete/substitute (commands like \
                      `e`, `w`, `r` run programs or touch files)";

/// Accepts a script made only of addresses and the commands
/// `p P d D n N q Q = l g G h H x z { } s y`, with `s` flags limited to `g p i I m M` and
/// digits.
fn check_script(script: &str, brackets: bool) -> Result<(), String> {
    let chars: Vec<char> = script.chars().collect();
    let mut p = Parser {
        chars: &chars,
        pos: 0,
        brackets,
    };
    p.script().ok_or_else(|| UNSAFE.to_string())
}

struct Parser<'a> {
    chars: &'a [char],
    pos: usize,
    brackets: bool,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
    }

    fn script(&mut self) -> Option<()> {
        loop {
            self.skip_blanks();
            match self.peek() {
                None => return Some(()),
                Some(';') => {
                    self.pos += 1;
                    continue;
                }
                Some(_) => self.command()?,
            }
        }
    }

    fn command(&mut self) -> Option<()> {
        if self.address()? {
            self.skip_blanks();
            if self.peek() == Some(',') {
                self.pos += 1;
                self.skip_blanks();
                // `addr,+N` and `addr,~N` are GNU forms of the second address.
                if matches!(self.peek(), Some('+' | '~')) {
                    self.pos += 1;
                }
                if !self.address()? {
                    return None;
                }
            }
        }
        self.skip_blanks();
        if self.peek() == Some('!') {
            self.pos += 1;
            self.skip_blanks();
        }
        let command = self.peek()?;
        self.pos += 1;
        match command {
            // The block's commands follow directly.
            '{' => return Some(()),
            'p' | 'P' | 'd' | 'D' | 'n' | 'N' | '=' | 'g' | 'G' | 'h' | 'H' | 'x' | 'z' | '}' => {}
            // Exit code or line length may follow.
            'q' | 'Q' | 'l' => {
                self.skip_blanks();
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
            }
            's' => {
                let delim = self.delimiter()?;
                self.delimited(delim)?;
                self.delimited(delim)?;
                while let Some(c) = self.peek() {
                    match c {
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' => self.pos += 1,
                        c if c.is_ascii_digit() => self.pos += 1,
                        _ => break,
                    }
                }
            }
            'y' => {
                let delim = self.delimiter()?;
                self.delimited(delim)?;
                self.delimited(delim)?;
            }
            _ => return None,
        }
        // A command ends at `;`, `}` or the end of the script.
        self.skip_blanks();
        match self.peek() {
            None | Some(';') | Some('}') => Some(()),
            _ => None,
        }
    }

    /// Parses an optional address; `Some(true)` if one was present.
    fn address(&mut self) -> Option<bool> {
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {
                while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '~') {
                    self.pos += 1;
                }
                Some(true)
            }
            Some('$') => {
                self.pos += 1;
                Some(true)
            }
            Some('/') => {
                self.pos += 1;
                self.delimited('/')?;
                self.regex_flags();
                Some(true)
            }
            Some('\\') => {
                self.pos += 1;
                let delim = self.delimiter()?;
                self.delimited(delim)?;
                self.regex_flags();
                Some(true)
            }
            _ => Some(false),
        }
    }

    fn regex_flags(&mut self) {
        while matches!(self.peek(), Some('I' | 'M')) {
            self.pos += 1;
        }
    }

    fn delimiter(&mut self) -> Option<char> {
        let d = self.peek()?;
        if d == '\\' || d == '\n' {
            return None;
        }
        self.pos += 1;
        Some(d)
    }

    /// Skips text up to and including the unescaped `delim`.
    fn delimited(&mut self, delim: char) -> Option<()> {
        loop {
            let c = self.peek()?;
            self.pos += 1;
            if c == '\\' {
                self.peek()?;
                self.pos += 1;
            } else if c == '[' && self.brackets && delim != '[' {
                self.bracket()?;
            } else if c == delim {
                return Some(());
            }
        }
    }

    /// Skips a bracket expression the way GNU 4.x and BSD sed do: `]` first is literal, and
    /// `[:class:]`, `[=e=]`, `[.c.]` are skipped whole.
    fn bracket(&mut self) -> Option<()> {
        if self.peek() == Some('^') {
            self.pos += 1;
        }
        if self.peek() == Some(']') {
            self.pos += 1;
        }
        loop {
            let c = self.peek()?;
            self.pos += 1;
            match c {
                ']' => return Some(()),
                '[' if matches!(self.peek(), Some(':' | '=' | '.')) => {
                    let kind = self.peek()?;
                    self.pos += 1;
                    loop {
                        let c = self.peek()?;
                        self.pos += 1;
                        if c == kind && self.peek() == Some(']') {
                            self.pos += 1;
                            break;
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[&str]) -> Vec<Word> {
        args.iter()
            .map(|a| Word {
                text: a.to_string(),
                ..Word::default()
            })
            .collect()
    }

    #[test]
    fn plain_scripts_pass() {
        for args in [
            &["-n", "1,20p", "f"][..],
            &["s/a/b/g", "f"],
            &["-e", "s|x|y|", "-e", "/foo/d", "f"],
            &["-E", "s/([a-z]+)/\\1/2", "f"],
            &["-n", "/start/,/end/{p;=}", "f"],
            &["$!N;P;D", "f"],
            &["y/abc/xyz/"],
            &["-n", "5q"],
            &["s/[[:alpha:]]/x/g", "f"],
        ] {
            assert!(analyze(&words(args)).is_ok(), "{args:?}");
        }
    }

    #[test]
    fn dangerous_scripts_fail() {
        for args in [
            &["-n", "1e id", "f"][..],
            &["s/a/b/e", "f"],
            &["s/a/b/w /tmp/x", "f"],
            &["r /etc/passwd", "f"],
            &["R x", "f"],
            &["W x", "f"],
            &["1w out", "f"],
            &["-f", "script.sed", "f"],
            &["--file=s.sed", "f"],
            // GNU reads `[` literally: regex `[`, replacement `]`, flags `e`.
            &["s/[/]/e", "f"],
            // BSD skips the bracket: regex `[/]`, replacement `x`, flags `w`.
            &["s/[/]/x/w out", "f"],
            // Provable only under one reading, so refused (conservative).
            &["s/[/]/x/g", "f"],
            &["s/[[:alpha:]/]/x/e", "f"],
            &["a\\ text", "f"],
            &["-z", "--unknown", "p"],
            &[],
        ] {
            assert!(analyze(&words(args)).is_err(), "{args:?}");
        }
    }

    #[test]
    fn bsd_reading_of_bare_i_must_be_safe_too() {
        // BSD: suffix `p`, script `w /x`, which writes outside.
        let args = words(&["-i", "p", "w /x", "f"]);
        assert!(analyze_dialects(&args, false).is_ok());
        assert!(analyze_dialects(&args, true).is_err());
        let call = analyze_dialects(&words(&["-i", "", "s/a/b/", "f"]), true).unwrap();
        assert_eq!(call.files, [2, 3]);
        assert!(call.script_args.is_empty());
        let call = analyze_dialects(&words(&["-i", ".bak", "s/a/b/", "f"]), true);
        assert!(call.is_err(), "GNU reads `.bak` as a script: {call:?}");
        assert!(analyze_dialects(&words(&["-i", "x/*", "p", "f"]), true).is_err());
    }

    #[test]
    fn in_place_lists_files() {
        let call = analyze(&words(&["-i.bak", "s/a/b/", "x.txt", "y.txt"])).unwrap();
        assert!(call.in_place);
        assert_eq!(call.files, [2, 3]);
        assert_eq!(call.script_args, [1]);
        assert_eq!(call.backups, ["x.txt.bak", "y.txt.bak"]);
        assert!(analyze(&words(&["-i", "s/a/b/"])).is_err());
    }
}
