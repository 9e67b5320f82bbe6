//! `Read`: a text file as numbered lines, a window at a time.

use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, Read as _};
use std::path::PathBuf;

use serde_json::{Value, json};

use super::ToolName;
use super::guard::paths::{self, PathUse};
use super::{ToolContext, ToolOutput, args};
use crate::protocol::ToolSpec;

/// Lines shown when the call does not ask for a range.
const DEFAULT_MAX_LINES: usize = 2000;
const DEFAULT_MAX_BYTES: usize = 100_000;
const MAX_BYTES_CAP: usize = 1_000_000;
/// Longer lines (minified code, data) are cut; the model rarely needs all of one.
const MAX_LINE_CHARS: usize = 2000;
/// The most of one line held in memory: [`MAX_LINE_CHARS`] characters of up to 4 bytes.
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4;
/// Binary detection looks at this much of the file, like git and ripgrep do.
const SNIFF_BYTES: u64 = 8192;
/// Past this size the lines after the window are not counted, to keep a read cheap.
const COUNT_LIMIT_BYTES: u64 = 64 * 1024 * 1024;

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: ToolName::Read.name().into(),
        description: "Read a text file as numbered lines. Large files are shown in windows.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "line_range": {
                    "type": "array", "items": {"type": "integer"},
                    "description": "[start, end], 1-based, inclusive."
                },
                "max_bytes": {"type": "integer"}
            },
            "required": ["path"]
        }),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReadArgs {
    pub rel: String,
    pub abs: PathBuf,
    /// First line to show, 1-based.
    pub start: usize,
    /// Last line to show, inclusive; `None` = as far as the caps allow.
    pub end: Option<usize>,
    pub max_bytes: usize,
}

const EXAMPLE: &str = r#"{"path": "src/main.rs", "line_range": [1, 200]}"#;

/// An absolute path inside one of the read-only roots (a skill's supporting file), with
/// symlinks resolved and checked like the workspace's. `None` when it is in none of them;
/// `Some(Err)` when it is but is hidden or not a regular file.
fn read_only_root(
    ctx: &ToolContext,
    raw: &str,
) -> Option<Result<paths::ResolvedPath, paths::PathRefused>> {
    if !std::path::Path::new(raw).is_absolute() {
        return None;
    }
    let found = ctx.read_only_roots.iter().find_map(|given| {
        let dir = given.canonicalize().ok()?;
        // Spelled through the folder as configured (`~/.linggen` may be a symlink).
        let anchored = match std::path::Path::new(raw).strip_prefix(given) {
            Ok(rest) => dir.join(rest),
            Err(_) => std::path::PathBuf::from(raw),
        };
        let abs = paths::locate(&dir, &dir, &anchored.to_string_lossy()).ok()?;
        Some(paths::ResolvedPath {
            rel: abs.display().to_string(),
            abs,
        })
    })?;
    Some(
        paths::refuse_unreadable(&found.abs, raw, &ctx.sandbox.secrets())
            .map(|()| found)
            .map_err(paths::PathRefused::Unreadable),
    )
}

impl ReadArgs {
    pub fn parse(ctx: &ToolContext, args: &Value) -> Result<Self, ToolOutput> {
        let raw = args::required_string(
            args,
            &["path", "file", "filepath", "file_path", "filename"],
            ToolName::Read.name(),
            EXAMPLE,
        )?;
        let resolved = ctx
            .resolve(&raw, PathUse::Read)
            .or_else(|outside| read_only_root(ctx, &raw).unwrap_or(Err(outside)))
            .map_err(ToolOutput::error)?;
        let (start, end) = line_window(args)?;
        let max_bytes = args::uint(args, &["max_bytes", "maxBytes"])?
            .map_or(DEFAULT_MAX_BYTES, |b| (b as usize).clamp(1, MAX_BYTES_CAP));
        Ok(ReadArgs {
            rel: resolved.rel,
            abs: resolved.abs,
            start,
            end,
            max_bytes,
        })
    }

    pub fn summary(&self) -> String {
        match self.end {
            Some(end) => format!("Read {} ({}-{end})", self.rel, self.start),
            None if self.start > 1 => format!("Read {} (from {})", self.rel, self.start),
            None => format!("Read {}", self.rel),
        }
    }

    pub async fn run(&self, ctx: &ToolContext) -> ToolOutput {
        let (args, editor) = (self.clone(), ctx.editor_files.clone());
        let read = move || match editor.and_then(|files| files.read(&args.abs)) {
            // The editor's buffer, unsaved changes included (the path was checked already).
            Some(text) => args.read_text(&text),
            None => args.read(),
        };
        match tokio::task::spawn_blocking(read).await {
            Ok(Ok(output)) => output,
            Ok(Err(message)) => ToolOutput::error(message),
            Err(e) => ToolOutput::error(format!("reading {} failed: {e}", self.rel)),
        }
    }

    fn read(&self) -> Result<ToolOutput, String> {
        let rel = &self.rel;
        let meta = std::fs::metadata(&self.abs).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!(
                "`{rel}` does not exist; find the right path with Glob, e.g. \
                 {{\"globs\": [\"**/{}\"]}}",
                file_name(rel)
            ),
            _ => format!("cannot read `{rel}`: {e}"),
        })?;
        if meta.is_dir() {
            return Err(format!(
                "`{rel}` is a directory; list it with Glob, e.g. {{\"globs\": [\"*\"], \"path\": \"{rel}\"}}"
            ));
        }
        // Checked before opening: opening a FIFO waits for a writer, and a device may act
        // on being opened. `open_regular` checks again on the file it opened.
        if let Some(kind) = paths::special_kind(&meta.file_type()) {
            return Err(format!(
                "`{rel}` is {kind}, not a regular file; Read never opens FIFOs, sockets or \
                 devices (reading one can wait for ever)"
            ));
        }
        let mut file: File =
            paths::open_regular(&self.abs, rel).map_err(|e| format!("cannot open `{rel}`: {e}"))?;
        let mut head = Vec::new();
        (&mut file)
            .take(SNIFF_BYTES)
            .read_to_end(&mut head)
            .map_err(|e| format!("cannot read `{rel}`: {e}"))?;
        if head.contains(&0) {
            return Err(binary(rel));
        }
        let reader = BufReader::with_capacity(64 * 1024, Cursor::new(head).chain(file));
        let window = self.collect(reader, meta.len() <= COUNT_LIMIT_BYTES)?;
        Ok(self.render(window))
    }

    /// The window of a text the editor gave.
    fn read_text(&self, text: &str) -> Result<ToolOutput, String> {
        let window = self.collect(Cursor::new(text.as_bytes()), true)?;
        Ok(self.render(window))
    }

    fn collect(&self, mut reader: impl BufRead, count_rest: bool) -> Result<Window, String> {
        let max_lines = self
            .end
            .map_or(DEFAULT_MAX_LINES, |end| end + 1 - self.start);
        let io_error = |e: std::io::Error| format!("cannot read `{}`: {e}", self.rel);
        let mut window = Window::default();
        let mut buf = Vec::new();
        let mut line_no = 0;
        loop {
            let full = window.lines.len() >= max_lines;
            let showing = line_no + 1 >= self.start && !full && window.bytes < self.max_bytes;
            // Lines that are not shown are only counted, so nothing of them is kept. A shown
            // line keeps at most the cap, however long it is: whole lines are shown until the
            // cap is passed (so the window may end up to one line over it), and a line longer
            // than the cap on its own is cut there.
            let keep = if showing {
                self.max_bytes.min(MAX_LINE_BYTES)
            } else {
                0
            };
            let Some(line) = next_line(&mut reader, &mut buf, keep).map_err(io_error)? else {
                window.total = Some(line_no);
                return Ok(window);
            };
            line_no += 1;
            if line_no < self.start {
                continue;
            }
            if !showing {
                // Reaching the end the caller asked for is not a truncation.
                if !(full && self.end.is_some()) {
                    window.more = true;
                    window.byte_capped = !full;
                }
                if !count_rest {
                    return Ok(window);
                }
                continue;
            }
            let text = line.text(&buf).ok_or_else(|| {
                format!(
                    "`{}` is not UTF-8 text (line {line_no}); Read shows text files only. \
                     Inspect it with Bash, e.g. `file {}`",
                    self.rel, self.rel
                )
            })?;
            let shown = clip(text, keep, line.dropped_chars);
            window.bytes += shown.len() + 1;
            window.lines.push((line_no, shown.into_owned()));
        }
    }

    fn render(&self, window: Window) -> ToolOutput {
        let rel = &self.rel;
        let total = window.total;
        let Some(&(first, _)) = window.lines.first() else {
            return match total {
                Some(0) => ToolOutput::ok(format!("`{rel}` is empty"), "empty file"),
                Some(n) => ToolOutput::error(format!(
                    "`{rel}` has only {n} lines; ask for a line_range within 1-{n}"
                )),
                None => ToolOutput::error(format!("`{rel}` has fewer than {} lines", self.start)),
            };
        };
        let last = window.lines.last().map_or(first, |&(n, _)| n);
        let width = last.to_string().len();
        let mut out = String::with_capacity(window.bytes + window.lines.len() * (width + 1));
        for (n, text) in &window.lines {
            out.push_str(&format!("{n:>width$}\t{text}\n"));
        }
        let of_total = total.map_or(String::new(), |t| format!(" of {t}"));
        let summary = if first == 1 && total == Some(last) {
            crate::text::plural(window.lines.len(), "line", "lines")
        } else {
            format!("lines {first}-{last}{of_total}")
        };
        if window.more {
            let why = if window.byte_capped {
                format!("output capped at {} bytes", self.max_bytes)
            } else {
                "more lines follow".to_string()
            };
            out.push_str(&format!(
                "[{why}; showing lines {first}-{last}{of_total}. Continue with \
                 {{\"path\": \"{rel}\", \"line_range\": [{}, {}]}}]\n",
                last + 1,
                last + DEFAULT_MAX_LINES
            ));
        }
        ToolOutput::ok(out, summary)
    }
}

#[derive(Debug, Default)]
struct Window {
    lines: Vec<(usize, String)>,
    bytes: usize,
    /// Lines exist after the window.
    more: bool,
    /// The window ended because of `max_bytes`, not the line count.
    byte_capped: bool,
    /// Total line count, when the whole file was scanned.
    total: Option<usize>,
}

/// One line as [`next_line`] read it: its kept head is in the caller's buffer.
#[derive(Debug, PartialEq)]
struct Line {
    /// Characters of the line past what was kept (UTF-8 lead bytes, not validated: they
    /// are never shown).
    dropped_chars: usize,
    /// The kept head ends inside a character that the cut split.
    split_char: bool,
}

impl Line {
    /// The kept head as text without its line ending; `None` when it is not UTF-8. A
    /// character split by the cut is left out rather than reported as bad text.
    fn text<'b>(&self, buf: &'b [u8]) -> Option<&'b str> {
        let text = match std::str::from_utf8(buf) {
            Ok(text) => text,
            Err(e) if e.error_len().is_none() && self.split_char => {
                std::str::from_utf8(&buf[..e.valid_up_to()]).ok()?
            }
            Err(_) => return None,
        };
        Some(if self.dropped_chars == 0 {
            text.trim_end_matches('\r')
        } else {
            text
        })
    }
}

/// Reads one line (up to and without its `\n`), keeping at most `keep` bytes of it in
/// `buf` and only counting the rest, so a multi-megabyte line costs no more memory than the
/// window it is shown in. `None` at the end of the input.
fn next_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    keep: usize,
) -> std::io::Result<Option<Line>> {
    buf.clear();
    let mut line = Line {
        dropped_chars: 0,
        split_char: false,
    };
    let mut seen_any = false;
    let mut last_dropped = None;
    loop {
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            break;
        }
        seen_any = true;
        let newline = available.iter().position(|&b| b == b'\n');
        let body = &available[..newline.unwrap_or(available.len())];
        let room = keep - buf.len();
        let (kept, dropped) = body.split_at(body.len().min(room));
        buf.extend_from_slice(kept);
        if !dropped.is_empty() {
            // A continuation byte first means the cut fell inside a character, which is then
            // not shown and counts as dropped.
            if last_dropped.is_none() && is_continuation(dropped[0]) {
                line.split_char = true;
                line.dropped_chars += 1;
            }
            line.dropped_chars += dropped.iter().filter(|&&b| !is_continuation(b)).count();
            last_dropped = dropped.last().copied();
        }
        let used = body.len() + usize::from(newline.is_some());
        reader.consume(used);
        if newline.is_some() {
            break;
        }
    }
    if !seen_any {
        return Ok(None);
    }
    // A `\r\n` ending is not part of the line, even when the cut dropped it.
    if last_dropped == Some(b'\r') {
        line.dropped_chars -= 1;
    }
    Ok(Some(line))
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// The line as shown: at most [`MAX_LINE_CHARS`] characters and `budget` bytes, with a
/// marker counting what was cut (including the `dropped` characters never read into memory).
fn clip(text: &str, budget: usize, dropped: usize) -> std::borrow::Cow<'_, str> {
    let by_chars = text
        .char_indices()
        .nth(MAX_LINE_CHARS)
        .map_or(text.len(), |(i, _)| i);
    let cut = by_chars.min(text.floor_char_boundary(budget));
    let more = text[cut..].chars().count() + dropped;
    if more == 0 {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(format!("{}… [{more} more chars]", &text[..cut]))
    }
}

fn binary(rel: &str) -> String {
    format!(
        "`{rel}` looks binary (it contains NUL bytes); Read shows text files only. Inspect it \
         with Bash, e.g. `file {rel}` or `od -c {rel} | head`"
    )
}

fn file_name(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap_or(rel)
}

/// The requested window from `line_range` (`[10, 20]`, `"10-20"`, `"10"`), or from
/// Claude-style `offset`/`limit`, or `start_line`/`end_line`.
fn line_window(args: &Value) -> Result<(usize, Option<usize>), ToolOutput> {
    let bad = |detail: &str| {
        ToolOutput::error(format!(
            "bad line_range ({detail}); use [start, end], 1-based and inclusive, e.g. \
             \"line_range\": [1, 200]"
        ))
    };
    let (start, end) = match args.get("line_range").or_else(|| args.get("lines")) {
        None | Some(Value::Null) => {
            let start = args::uint(args, args::keys::OFFSET)?;
            let end = args::uint(args, &["end_line", "end"])?;
            let limit = args::uint(args, &["limit"])?;
            let start = start.unwrap_or(1).max(1);
            let end = end.or_else(|| limit.map(|l| start + l.max(1) - 1));
            (start, end)
        }
        Some(Value::Array(items)) => {
            let num = |v: Option<&Value>| -> Result<Option<i64>, ToolOutput> {
                match v {
                    None | Some(Value::Null) => Ok(None),
                    Some(v) => v
                        .as_i64()
                        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                        .map(Some)
                        .ok_or_else(|| bad("numbers expected")),
                }
            };
            let start = num(items.first())?.unwrap_or(1);
            let end = num(items.get(1))?;
            if start < 1 {
                return Err(bad("lines start at 1"));
            }
            // `[10, -1]` or `[10, 0]` means "to the end".
            (start as u64, end.filter(|e| *e > 0).map(|e| e as u64))
        }
        Some(Value::String(s)) => {
            let parts: Vec<&str> = s.split(['-', ':', ',']).map(str::trim).collect();
            let parse = |p: &str| p.parse::<u64>().map_err(|_| bad("numbers expected"));
            match parts.as_slice() {
                [one] => (parse(one)?, None),
                [a, ""] => (parse(a)?, None),
                [a, b] => (parse(a)?, Some(parse(b)?)),
                _ => return Err(bad("expected start-end")),
            }
        }
        Some(_) => return Err(bad("expected [start, end]")),
    };
    let start = start.max(1) as usize;
    let end = end.map(|e| e as usize);
    if end.is_some_and(|e| e < start) {
        return Err(bad("end is before start"));
    }
    Ok((start, end))
}

#[cfg(test)]
mod tests {
    #[test]
    fn skill_folders_are_readable_but_nothing_else_outside() {
        let root = tempfile::tempdir().unwrap();
        let skills = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(skills.path().join("x/references")).unwrap();
        let doc = skills.path().join("x/references/guide.md");
        std::fs::write(&doc, "guide\n").unwrap();
        let secret = skills.path().join("../secret.txt");
        let mut ctx = ToolContext::new(&root.path().canonicalize().unwrap());
        let args = |p: &std::path::Path| serde_json::json!({"path": p.display().to_string()});
        assert!(ReadArgs::parse(&ctx, &args(&doc)).is_err());
        ctx.read_only_roots = vec![skills.path().to_path_buf()];
        let parsed = ReadArgs::parse(&ctx, &args(&doc)).unwrap();
        assert!(parsed.rel.ends_with("x/references/guide.md"));
        let err = ReadArgs::parse(&ctx, &args(&secret)).unwrap_err();
        assert!(err.model.contains("outside"), "{}", err.model);
    }

    use super::*;
    use std::fs;

    /// A file swapped for a FIFO after the call was prepared is refused when it runs, at
    /// once (no writer will ever come); named as a FIFO when it is prepared.
    #[test]
    fn a_fifo_is_refused_not_waited_on() {
        let (dir, ctx) = setup(b"x\n");
        let parsed = ReadArgs::parse(&ctx, &serde_json::json!({"path": "f.txt"})).unwrap();
        let fifo = dir.path().join("f.txt");
        fs::remove_file(&fifo).unwrap();
        paths::mkfifo(&fifo);
        let (done, result) = std::sync::mpsc::channel();
        std::thread::spawn(move || done.send(parsed.read()));
        let Ok(result) = result.recv_timeout(std::time::Duration::from_secs(10)) else {
            // Let the stuck read finish so the test ends.
            let _ = fs::OpenOptions::new().write(true).open(&fifo);
            panic!("Read waited on a FIFO");
        };
        let err = result.unwrap_err();
        assert!(err.contains("a FIFO (named pipe)"), "{err}");
        let err = ReadArgs::parse(&ctx, &serde_json::json!({"path": "f.txt"})).unwrap_err();
        assert!(err.model.contains("a FIFO (named pipe)"), "{}", err.model);
    }

    fn setup(content: &[u8]) -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f.txt"), content).unwrap();
        let ctx = ToolContext::new(&dir.path().canonicalize().unwrap());
        (dir, ctx)
    }

    async fn read(ctx: &ToolContext, args: Value) -> ToolOutput {
        match ReadArgs::parse(ctx, &args) {
            Ok(a) => a.run(ctx).await,
            Err(e) => e,
        }
    }

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[tokio::test]
    async fn whole_small_file_is_numbered() {
        let (_d, ctx) = setup(b"a\nb\r\nc");
        let out = read(&ctx, json!({"path": "f.txt"})).await;
        assert!(!out.is_error);
        assert_eq!(out.model, "1\ta\n2\tb\n3\tc\n");
        assert_eq!(out.summary, "3 lines");
    }

    #[tokio::test]
    async fn line_range_forms() {
        let (_d, ctx) = setup(numbered(30).as_bytes());
        for args in [
            json!({"path": "f.txt", "line_range": [10, 12]}),
            json!({"file_path": "f.txt", "line_range": "10-12"}),
            json!({"file": "f.txt", "offset": 10, "limit": 3}),
        ] {
            let out = read(&ctx, args.clone()).await;
            assert_eq!(
                out.model, "10\tline 10\n11\tline 11\n12\tline 12\n",
                "{args}"
            );
            assert_eq!(out.summary, "lines 10-12 of 30");
        }
        let out = read(&ctx, json!({"path": "f.txt", "line_range": [28, -1]})).await;
        assert_eq!(out.model, "28\tline 28\n29\tline 29\n30\tline 30\n");
        let out = read(&ctx, json!({"path": "f.txt", "line_range": [40, 50]})).await;
        assert!(
            out.is_error && out.model.contains("only 30 lines"),
            "{}",
            out.model
        );
        let out = read(&ctx, json!({"path": "f.txt", "line_range": [5, 2]})).await;
        assert!(out.is_error && out.model.contains("before start"));
    }

    #[tokio::test]
    async fn long_files_are_truncated_with_a_continuation() {
        let (_d, ctx) = setup(numbered(2500).as_bytes());
        let out = read(&ctx, json!({"path": "f.txt"})).await;
        assert_eq!(out.summary, "lines 1-2000 of 2500");
        assert!(out.model.contains("   1\tline 1\n"));
        assert!(out.model.contains("2000\tline 2000\n"));
        assert!(!out.model.contains("line 2001"));
        assert!(
            out.model.contains("\"line_range\": [2001, 4000]"),
            "{}",
            out.model
        );
    }

    #[tokio::test]
    async fn byte_cap_applies() {
        let (_d, ctx) = setup(numbered(100).as_bytes());
        let out = read(&ctx, json!({"path": "f.txt", "max_bytes": 30})).await;
        assert!(out.model.contains("capped at 30 bytes"), "{}", out.model);
        assert!(out.model.lines().count() < 10);
    }

    #[tokio::test]
    async fn binary_and_directories_are_refused() {
        let (dir, ctx) = setup(b"\x7fELF\0\0\x01");
        let out = read(&ctx, json!({"path": "f.txt"})).await;
        assert!(
            out.is_error && out.model.contains("binary"),
            "{}",
            out.model
        );
        fs::write(dir.path().join("latin1.txt"), b"caf\xe9\n").unwrap();
        let out = read(&ctx, json!({"path": "latin1.txt"})).await;
        assert!(
            out.is_error && out.model.contains("not UTF-8"),
            "{}",
            out.model
        );
        fs::create_dir(dir.path().join("sub")).unwrap();
        let out = read(&ctx, json!({"path": "sub"})).await;
        assert!(out.is_error && out.model.contains("Glob"), "{}", out.model);
    }

    #[tokio::test]
    async fn missing_and_outside_files_say_what_to_do() {
        let (_d, ctx) = setup(b"");
        let out = read(&ctx, json!({"path": "nope.rs"})).await;
        assert!(out.is_error && out.model.contains("Glob"), "{}", out.model);
        let out = read(&ctx, json!({"path": "/etc/passwd"})).await;
        assert!(
            out.is_error && out.model.contains("outside"),
            "{}",
            out.model
        );
        let out = read(&ctx, json!({})).await;
        assert!(out.is_error && out.model.contains("needs `path`"));
        let out = read(&ctx, json!({"path": "f.txt"})).await;
        assert_eq!(out.summary, "empty file");
    }

    #[tokio::test]
    async fn very_long_lines_are_clipped() {
        let (_d, ctx) = setup("x".repeat(5000).as_bytes());
        let out = read(&ctx, json!({"path": "f.txt"})).await;
        assert!(
            out.model.contains("… [3000 more chars]"),
            "{}",
            &out.model[..50]
        );
    }

    #[tokio::test]
    async fn a_huge_single_line_is_cut_at_the_byte_cap() {
        let mut content = "y".repeat(5 * 1024 * 1024);
        content.push_str("\nsecond\n");
        let (_d, ctx) = setup(content.as_bytes());
        let out = read(&ctx, json!({"path": "f.txt", "max_bytes": 64})).await;
        assert!(!out.is_error, "{}", out.model);
        let first = out.model.lines().next().unwrap();
        assert_eq!(
            first,
            format!(
                "1\t{}… [{} more chars]",
                "y".repeat(64),
                5 * 1024 * 1024 - 64
            )
        );
        assert!(out.model.contains("capped at 64 bytes"), "{}", out.model);
        assert!(!out.model.contains("second"));
        assert!(out.model.len() < 400, "{} bytes", out.model.len());
        assert_eq!(out.summary, "lines 1-1 of 2");
    }

    #[test]
    fn reading_a_line_keeps_only_what_it_may_show() {
        let line = "é".repeat(3 * 1024 * 1024);
        let text = format!("{line}\r\nnext\n");
        let mut reader = BufReader::with_capacity(64 * 1024, text.as_bytes());
        let mut buf = Vec::new();
        let first = next_line(&mut reader, &mut buf, 101).unwrap().unwrap();
        // The whole line went through a bounded buffer: nothing near its size was held.
        assert!(buf.capacity() < 4096, "{}", buf.capacity());
        assert_eq!(first.text(&buf), Some("é".repeat(50).as_str()));
        assert_eq!(first.dropped_chars, 3 * 1024 * 1024 - 50);
        let second = next_line(&mut reader, &mut buf, 101).unwrap().unwrap();
        assert_eq!((second.text(&buf), second.dropped_chars), (Some("next"), 0));
        assert_eq!(next_line(&mut reader, &mut buf, 101).unwrap(), None);
    }
}
