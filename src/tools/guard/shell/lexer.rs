//! Splits a command line the way `/bin/sh` would, far enough to classify it: quote-aware
//! words, redirections, and the operators that separate commands. Anything whose meaning
//! depends on evaluation (command substitution, heredocs, unbalanced quotes) is refused here,
//! before classification; that refusal is the hard floor.

use super::work;

/// One character of a word and whether quoting made it literal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QChar {
    pub c: char,
    pub quoted: bool,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Word {
    /// The word after quote removal.
    pub text: String,
    pub chars: Vec<QChar>,
    /// A `$` outside single quotes that the shell would expand (`$HOME`, `${X}`, `$1`, `$'..'`).
    pub expands: bool,
}

impl Word {
    fn push(&mut self, c: char, quoted: bool) {
        self.text.push(c);
        self.chars.push(QChar { c, quoted });
    }

    /// Pathname expansion happens when `*` or `?` appears unquoted, or an unquoted `[`
    /// with an unquoted `]` after it (a lone `[` is the `test` command).
    pub fn has_glob(&self) -> bool {
        self.first_glob().is_some()
    }

    /// Index (into `chars`) of the first character that makes this word a glob.
    pub fn first_glob(&self) -> Option<usize> {
        work::tick(self.chars.len());
        // A `[` opens a pattern only if an unquoted `]` follows somewhere; knowing where the
        // last one is keeps this one pass over `[[[[…`.
        let last_close = self.chars.iter().rposition(|q| !q.quoted && q.c == ']');
        self.chars.iter().enumerate().find_map(|(i, q)| {
            let is_meta = !q.quoted
                && match q.c {
                    '*' | '?' => true,
                    '[' => last_close.is_some_and(|close| close > i),
                    _ => false,
                };
            is_meta.then_some(i)
        })
    }

    /// The expansion of a glob starting with a metacharacter can be any file name,
    /// including one that starts with `-` and so reads as an option.
    pub fn starts_with_glob(&self) -> bool {
        self.first_glob() == Some(0)
    }

    /// Brace expansion (`{a,b}`, `{1..3}`) in bash; dash leaves it alone, but the command
    /// may run under bash, so it is treated as "could become other words".
    pub fn has_brace_expansion(&self) -> bool {
        let Some(open) = self.chars.iter().position(|q| !q.quoted && q.c == '{') else {
            return false;
        };
        let rest = &self.chars[open..];
        let closes = rest.iter().any(|q| !q.quoted && q.c == '}');
        let comma = rest.iter().any(|q| !q.quoted && q.c == ',');
        let range = rest
            .windows(2)
            .any(|w| !w[0].quoted && !w[1].quoted && w[0].c == '.' && w[1].c == '.');
        closes && (comma || range)
    }

    /// `NAME=value` in command position sets the environment of the command.
    pub fn is_assignment(&self) -> bool {
        let Some(eq) = self.chars.iter().position(|q| q.c == '=') else {
            return false;
        };
        eq > 0
            && !self.chars[eq].quoted
            && self.chars[..eq].iter().enumerate().all(|(i, q)| {
                q.c == '_' || q.c.is_ascii_alphabetic() || (i > 0 && q.c.is_ascii_digit())
            })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectKind {
    /// `<` reads a file.
    Input,
    /// `>`, `>>`, `>|`, `&>`, `&>>`, `>&file`: writes a file.
    Output,
    /// `<>` opens a file for reading and writing.
    ReadWrite,
    /// `2>&1`, `<&0`, `>&-`: duplicates or closes a descriptor; touches no file.
    Duplicate,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Redirect {
    pub kind: RedirectKind,
    pub target: Word,
}

/// One simple command between operators.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RawSegment {
    /// The source text of the segment, trimmed.
    pub text: String,
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// Unquoted `(` or `)`: a subshell or function definition we do not analyse.
    pub has_paren: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Pipe,
    Or,
    And,
    Semi,
    Background,
}

impl Op {
    fn symbol(self) -> &'static str {
        match self {
            Op::Pipe => "|",
            Op::Or => "||",
            Op::And => "&&",
            Op::Semi => ";",
            Op::Background => "&",
        }
    }
}

/// Refuses what no mode may run, then splits the command into segments.
pub(in crate::tools) fn split(command: &str) -> Result<Vec<RawSegment>, String> {
    floor(command)?;
    let mut lexer = Lexer {
        src: command,
        chars: command.char_indices().collect(),
        pos: 0,
        segments: Vec::new(),
        current: RawSegment::default(),
        segment_start: 0,
        word: None,
        pending: None,
        last_op: None,
    };
    lexer.run()?;
    Ok(lexer.segments)
}

/// Character-level refusals that hold whatever the quoting.
fn floor(command: &str) -> Result<(), String> {
    if command.trim().is_empty() {
        return Err("the command is empty".into());
    }
    for c in command.chars() {
        match c {
            '\0' => return Err("the command contains a NUL byte".into()),
            '\n' | '\r' => {
                return Err(
                    "the command contains a line break; run one command per call, or join \
                     them with `&&`"
                        .into(),
                );
            }
            '`' => {
                return Err(
                    "backticks (command substitution) are never run; run the inner command \
                     separately first (to search for a backtick, use the Grep tool)"
                        .into(),
                );
            }
            // Control characters and bidi overrides can hide text from the person who
            // approves the command.
            '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => {
                return Err("the command contains Unicode direction overrides".into());
            }
            c if c.is_control() && c != '\t' => {
                return Err(format!(
                    "the command contains the control character U+{:04X}",
                    c as u32
                ));
            }
            _ => {}
        }
    }
    for (needle, what) in [
        ("$(", "`$(` (command substitution)"),
        ("<(", "`<(` (process substitution)"),
        (">(", "`>(` (process substitution)"),
    ] {
        if command.contains(needle) {
            return Err(format!(
                "{what} is never run; run the inner command separately first (to search \
                 for this text, use the Grep tool)"
            ));
        }
    }
    Ok(())
}

struct Lexer<'a> {
    src: &'a str,
    chars: Vec<(usize, char)>,
    pos: usize,
    segments: Vec<RawSegment>,
    current: RawSegment,
    segment_start: usize,
    word: Option<Word>,
    /// A redirection waiting for its target word.
    pending: Option<(RedirectKind, &'static str)>,
    last_op: Option<Op>,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).map(|&(_, c)| c)
    }

    fn byte_pos(&self) -> usize {
        self.chars.get(self.pos).map_or(self.src.len(), |&(i, _)| i)
    }

    fn word(&mut self) -> &mut Word {
        self.word.get_or_insert_with(Word::default)
    }

    fn run(&mut self) -> Result<(), String> {
        while let Some(c) = self.peek(0) {
            work::tick(1);
            match c {
                ' ' | '\t' => {
                    self.finish_word()?;
                    self.pos += 1;
                }
                '\'' => self.single_quoted()?,
                '"' => self.double_quoted()?,
                '\\' => {
                    let Some(next) = self.peek(1) else {
                        return Err("the command ends with a lone backslash".into());
                    };
                    self.word().push(next, true);
                    self.pos += 2;
                }
                '$' => {
                    let expands = dollar_expands(self.peek(1), false);
                    let word = self.word();
                    word.push('$', false);
                    word.expands |= expands;
                    self.pos += 1;
                }
                '(' | ')' => {
                    self.finish_word()?;
                    self.current.has_paren = true;
                    self.pos += 1;
                }
                '|' => match self.peek(1) {
                    Some('|') => self.operator(Op::Or, 2)?,
                    Some('&') => self.operator(Op::Pipe, 2)?,
                    _ => self.operator(Op::Pipe, 1)?,
                },
                '&' => match self.peek(1) {
                    Some('&') => self.operator(Op::And, 2)?,
                    Some('>') if self.peek(2) == Some('>') => {
                        self.redirect(RedirectKind::Output, "&>>", 3)?
                    }
                    Some('>') => self.redirect(RedirectKind::Output, "&>", 2)?,
                    _ => self.operator(Op::Background, 1)?,
                },
                ';' => self.operator(Op::Semi, 1)?,
                '<' => self.less_than()?,
                '>' => self.greater_than()?,
                c => {
                    self.word().push(c, false);
                    self.pos += 1;
                }
            }
        }
        self.finish_word()?;
        self.end()
    }

    fn single_quoted(&mut self) -> Result<(), String> {
        self.word();
        self.pos += 1;
        loop {
            match self.peek(0) {
                None => return Err("unbalanced single quote".into()),
                Some('\'') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(c) => {
                    self.word().push(c, true);
                    self.pos += 1;
                }
            }
        }
    }

    fn double_quoted(&mut self) -> Result<(), String> {
        self.word();
        self.pos += 1;
        loop {
            match self.peek(0) {
                None => return Err("unbalanced double quote".into()),
                Some('"') => {
                    self.pos += 1;
                    return Ok(());
                }
                // Inside double quotes a backslash only escapes these; elsewhere it is literal.
                Some('\\') if matches!(self.peek(1), Some('$' | '`' | '"' | '\\')) => {
                    let next = self.peek(1).unwrap_or('\\');
                    self.word().push(next, true);
                    self.pos += 2;
                }
                Some('$') => {
                    let expands = dollar_expands(self.peek(1), true);
                    let word = self.word();
                    word.push('$', true);
                    word.expands |= expands;
                    self.pos += 1;
                }
                Some(c) => {
                    self.word().push(c, true);
                    self.pos += 1;
                }
            }
        }
    }

    fn less_than(&mut self) -> Result<(), String> {
        match self.peek(1) {
            Some('<') => Err(
                "heredocs and here-strings (`<<`) are not supported; write the text to a file \
                 with the Write tool and read it from there"
                    .into(),
            ),
            Some('&') => self.redirect(RedirectKind::Duplicate, "<&", 2),
            Some('>') => self.redirect(RedirectKind::ReadWrite, "<>", 2),
            _ => self.redirect(RedirectKind::Input, "<", 1),
        }
    }

    fn greater_than(&mut self) -> Result<(), String> {
        match self.peek(1) {
            Some('>') => self.redirect(RedirectKind::Output, ">>", 2),
            Some('|') => self.redirect(RedirectKind::Output, ">|", 2),
            // `>&2` duplicates; `>&file` (bash) writes the file. Decided once the target is known.
            Some('&') => self.redirect(RedirectKind::Duplicate, ">&", 2),
            _ => self.redirect(RedirectKind::Output, ">", 1),
        }
    }

    fn redirect(
        &mut self,
        kind: RedirectKind,
        symbol: &'static str,
        len: usize,
    ) -> Result<(), String> {
        if self.pending.is_some() {
            return Err(format!(
                "redirection `{symbol}` follows another without a target"
            ));
        }
        // Digits right before the operator are a descriptor number (`2>`), not a word.
        let is_fd = self.word.as_ref().is_some_and(|w| {
            !w.chars.is_empty() && w.chars.iter().all(|q| !q.quoted && q.c.is_ascii_digit())
        });
        if is_fd {
            self.word = None;
        } else {
            self.finish_word()?;
        }
        self.pending = Some((kind, symbol));
        self.pos += len;
        Ok(())
    }

    fn finish_word(&mut self) -> Result<(), String> {
        let Some(word) = self.word.take() else {
            return Ok(());
        };
        match self.pending.take() {
            Some((kind, symbol)) => {
                let kind = match (kind, symbol) {
                    (RedirectKind::Duplicate, ">&") if !is_descriptor(&word.text) => {
                        RedirectKind::Output
                    }
                    (RedirectKind::Duplicate, "<&") if !is_descriptor(&word.text) => {
                        RedirectKind::Input
                    }
                    _ => kind,
                };
                self.current.redirects.push(Redirect { kind, target: word });
            }
            None => self.current.words.push(word),
        }
        Ok(())
    }

    fn operator(&mut self, op: Op, len: usize) -> Result<(), String> {
        self.finish_word()?;
        if let Some((_, symbol)) = self.pending {
            return Err(format!("redirection `{symbol}` has no target"));
        }
        if self.current.words.is_empty() && self.current.redirects.is_empty() {
            return Err(match self.last_op {
                Some(prev) => format!(
                    "empty command between `{}` and `{}`",
                    prev.symbol(),
                    op.symbol()
                ),
                None => format!("the command starts with `{}`", op.symbol()),
            });
        }
        let end = self.byte_pos();
        self.push_segment(end);
        self.pos += len;
        self.segment_start = self.byte_pos();
        self.last_op = Some(op);
        Ok(())
    }

    fn push_segment(&mut self, end: usize) {
        let mut segment = std::mem::take(&mut self.current);
        segment.text = self.src[self.segment_start..end].trim().to_string();
        self.segments.push(segment);
    }

    fn end(&mut self) -> Result<(), String> {
        if let Some((_, symbol)) = self.pending {
            return Err(format!("redirection `{symbol}` has no target"));
        }
        if self.current.words.is_empty() && self.current.redirects.is_empty() {
            return match self.last_op {
                // A trailing `;` or `&` ends the last command; nothing follows.
                Some(Op::Semi | Op::Background) => Ok(()),
                Some(op) => Err(format!("the command ends with `{}`", op.symbol())),
                None => Err("the command is empty".into()),
            };
        }
        self.push_segment(self.src.len());
        Ok(())
    }
}

/// Whether a `$` followed by `next` is an expansion. A `$` at the end of a word, before a
/// blank or an operator, or right before the closing double quote, is literal.
fn dollar_expands(next: Option<char>, in_double_quotes: bool) -> bool {
    match next {
        None => false,
        Some(c) if c.is_whitespace() => false,
        Some('"') if in_double_quotes => false,
        Some('|' | '&' | ';' | '<' | '>' | ')') if !in_double_quotes => false,
        Some(_) => true,
    }
}

fn is_descriptor(text: &str) -> bool {
    text == "-" || (!text.is_empty() && text.chars().all(|c| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(segment: &RawSegment) -> Vec<&str> {
        segment.words.iter().map(|w| w.text.as_str()).collect()
    }

    #[test]
    fn splits_on_operators_outside_quotes() {
        let segs = split("ls -la | grep 'a|b' && echo \"x; y\" ; true &").unwrap();
        assert_eq!(segs.len(), 4);
        assert_eq!(words(&segs[0]), ["ls", "-la"]);
        assert_eq!(words(&segs[1]), ["grep", "a|b"]);
        assert_eq!(words(&segs[2]), ["echo", "x; y"]);
        assert_eq!(segs[1].text, "grep 'a|b'");
    }

    #[test]
    fn redirections_are_parsed() {
        let segs = split("cat a 2>/dev/null >out 2>&1 < in &>both").unwrap();
        let kinds: Vec<_> = segs[0]
            .redirects
            .iter()
            .map(|r| (r.kind, r.target.text.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                (RedirectKind::Output, "/dev/null"),
                (RedirectKind::Output, "out"),
                (RedirectKind::Duplicate, "1"),
                (RedirectKind::Input, "in"),
                (RedirectKind::Output, "both"),
            ]
        );
        assert_eq!(words(&segs[0]), ["cat", "a"]);
    }

    #[test]
    fn escapes_and_dollars() {
        let segs = split(r#"echo \$HOME "\$x" 'it''s' "$X" a$ "b$""#).unwrap();
        let w = &segs[0].words;
        assert_eq!(w[1].text, "$HOME");
        assert!(!w[1].expands && !w[2].expands && !w[3].expands);
        assert!(w[4].expands);
        assert!(!w[5].expands && !w[6].expands);
    }

    #[test]
    fn floor_refusals() {
        for cmd in [
            "",
            "  ",
            "echo $(id)",
            "echo `id`",
            "cat <(ls)",
            "tee >(sh)",
            "ls\nrm x",
            "ls\rrm",
            "a\0b",
            "echo 'x",
            "echo \"x",
            "cat <<EOF",
            "cat <<< hi",
            "ls |",
            "| ls",
            "ls && && ls",
            "ls >",
            "ls > | x",
            "echo \\",
            "ls \u{1b}[2K",
        ] {
            assert!(split(cmd).is_err(), "should be refused: {cmd:?}");
        }
    }

    #[test]
    fn trailing_semicolon_and_background_are_fine() {
        assert_eq!(split("ls;").unwrap().len(), 1);
        assert_eq!(split("sleep 1 &").unwrap().len(), 1);
    }
}
