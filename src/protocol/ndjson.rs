//! Incremental line splitting and newline-delimited JSON (Ollama's stream format).
//!
//! Network chunks split lines, and even multi-byte UTF-8 characters, anywhere. Bytes are
//! buffered and only complete lines are decoded; a `\n` byte never occurs inside a UTF-8
//! sequence, so every complete line of a valid stream is valid UTF-8 on its own.

/// Buffer capacity kept whatever the lines were; above it, an emptied buffer shrinks.
const SHRINK_ABOVE: usize = 256 * 1024;

/// The most one line (or one server-sent event) may hold: far above any real message (a
/// model's chunk, an MCP answer carrying an image), and all that a server which never ends
/// its line can make linggen keep.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// A line (or event) longer than [`MAX_LINE_BYTES`]; what was buffered of it is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("it sent a message over {} without ending it", size(*.0))]
pub struct TooLong(pub usize);

/// `64 MiB`, or bytes below a MiB.
fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// Splits a byte stream into lines (`\n` or `\r\n`), remembering how far it has already
/// looked so a long line arriving in tiny chunks costs linear, not quadratic, time.
#[derive(Debug)]
pub struct LineBuffer {
    buf: Vec<u8>,
    /// Bytes of `buf` already known to contain no `\n`.
    scanned: usize,
    /// The longest line taken ([`MAX_LINE_BYTES`] but in tests).
    limit: usize,
}

impl Default for LineBuffer {
    fn default() -> Self {
        LineBuffer::with_limit(MAX_LINE_BYTES)
    }
}

impl LineBuffer {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_limit(limit: usize) -> Self {
        LineBuffer {
            buf: Vec::new(),
            scanned: 0,
            limit,
        }
    }

    /// Appends `chunk` and calls `on_line` for every line it completes (without the line
    /// ending). A partial line left longer than the limit is an error (and dropped): the
    /// stream cannot be read on from there.
    pub fn push(&mut self, chunk: &[u8], mut on_line: impl FnMut(&str)) -> Result<(), TooLong> {
        self.buf.extend_from_slice(chunk);
        let mut line_start = 0;
        let mut search_from = self.scanned;
        while let Some(offset) = self.buf[search_from..].iter().position(|&b| b == b'\n') {
            let newline = search_from + offset;
            if newline - line_start > self.limit {
                return Err(self.overflow());
            }
            on_line(&decode_line(&self.buf[line_start..newline]));
            line_start = newline + 1;
            search_from = line_start;
        }
        // One drain per chunk keeps the work per byte constant; the remainder is at most
        // one partial line.
        self.buf.drain(..line_start);
        self.scanned = self.buf.len();
        if self.buf.len() > self.limit {
            return Err(self.overflow());
        }
        // A megabytes-long line leaves a buffer that size behind: give it back.
        if self.buf.capacity() > SHRINK_ABOVE && self.buf.len() < self.buf.capacity() / 4 {
            self.buf.shrink_to(self.buf.len().max(SHRINK_ABOVE / 4));
        }
        Ok(())
    }

    /// Drops what is buffered (a line over the limit, and anything after it in the chunk:
    /// the stream cannot be read on in step).
    fn overflow(&mut self) -> TooLong {
        self.buf = Vec::new();
        self.scanned = 0;
        TooLong(self.limit)
    }

    /// Hands out a final line that had no line ending when the stream closed.
    pub fn finish(&mut self, mut on_line: impl FnMut(&str)) {
        if !self.buf.is_empty() {
            on_line(&decode_line(&self.buf));
        }
        self.buf.clear();
        self.scanned = 0;
    }
}

/// The lines of a reader, as tokio's `lines()` reads them but each at most
/// [`MAX_LINE_BYTES`]: the stdio of a JSON-RPC peer (an MCP server, an editor) that could
/// otherwise make linggen keep a line without end. Cancel-safe: the only wait is a read,
/// and what a read brought is kept before the next.
pub struct BoundedLines<R> {
    reader: R,
    lines: LineBuffer,
    ready: std::collections::VecDeque<String>,
    chunk: Box<[u8]>,
    ended: bool,
    /// A line over the limit, reported once the lines before it are read.
    failed: Option<TooLong>,
}

impl<R: tokio::io::AsyncRead + Unpin> BoundedLines<R> {
    pub fn new(reader: R) -> Self {
        BoundedLines::with_limit(reader, MAX_LINE_BYTES)
    }

    fn with_limit(reader: R, limit: usize) -> Self {
        BoundedLines {
            reader,
            lines: LineBuffer::with_limit(limit),
            ready: std::collections::VecDeque::new(),
            chunk: vec![0; 64 * 1024].into_boxed_slice(),
            ended: false,
            failed: None,
        }
    }

    /// The next line without its ending; `None` once the reader ends; an error of kind
    /// `InvalidData`, carrying [`TooLong`], in the place of a line over the limit (and
    /// `None` after it: the stream cannot be read on in step).
    pub async fn next_line(&mut self) -> std::io::Result<Option<String>> {
        use tokio::io::AsyncReadExt as _;
        loop {
            if let Some(line) = self.ready.pop_front() {
                return Ok(Some(line));
            }
            if let Some(too_long) = self.failed.take() {
                self.ended = true;
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    too_long,
                ));
            }
            if self.ended {
                return Ok(None);
            }
            let n = self.reader.read(&mut self.chunk).await?;
            let ready = &mut self.ready;
            if n == 0 {
                self.ended = true;
                self.lines.finish(|line| ready.push_back(line.to_string()));
                continue;
            }
            if let Err(too_long) = self
                .lines
                .push(&self.chunk[..n], |line| ready.push_back(line.to_string()))
            {
                self.failed = Some(too_long);
            }
        }
    }
}

/// Decodes one line without its `\r`. Invalid UTF-8 is replaced rather than rejected: the
/// JSON parser that reads the line reports anything that matters, with context.
fn decode_line(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    String::from_utf8_lossy(bytes)
}

/// Newline-delimited JSON: yields each non-blank line; the caller parses it so that a bad
/// line can be reported together with what the protocol expected there.
#[derive(Debug, Default)]
pub struct NdjsonDecoder {
    lines: LineBuffer,
}

impl NdjsonDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<String>, TooLong> {
        let mut out = Vec::new();
        self.lines
            .push(chunk, |line| keep_json_line(line, &mut out))?;
        Ok(out)
    }

    /// The last line, when the stream closed without a final newline.
    pub fn finish(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        self.lines.finish(|line| keep_json_line(line, &mut out));
        out
    }
}

fn keep_json_line(line: &str, out: &mut Vec<String>) {
    let line = line.trim();
    if !line.is_empty() {
        out.push(line.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_chunks(input: &[u8], size: usize) -> Vec<String> {
        let mut decoder = NdjsonDecoder::new();
        let mut out = Vec::new();
        for chunk in input.chunks(size) {
            out.extend(decoder.push(chunk).unwrap());
        }
        out.extend(decoder.finish());
        out
    }

    #[tokio::test]
    async fn bounded_lines_reads_lines_and_refuses_one_over_the_limit() {
        let input: &[u8] = b"one\r\ntwo\nlast";
        let mut lines = BoundedLines::with_limit(input, 8);
        let mut read = Vec::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            read.push(line);
        }
        assert_eq!(read, ["one", "two", "last"]);
        let input: &[u8] = b"short\nand far too long\n";
        let mut lines = BoundedLines::with_limit(input, 8);
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("short"));
        let error = lines.next_line().await.unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
        assert_eq!(
            error.to_string(),
            "it sent a message over 8 bytes without ending it"
        );
        assert_eq!(lines.next_line().await.unwrap(), None);
    }

    #[test]
    fn a_line_over_the_limit_is_an_error_and_the_next_line_reads() {
        let mut lines = LineBuffer::with_limit(8);
        let mut seen = Vec::new();
        // A line of exactly the limit is fine, in any chunks.
        lines.push(b"1234", |l| seen.push(l.to_string())).unwrap();
        lines
            .push(b"5678\nab", |l| seen.push(l.to_string()))
            .unwrap();
        assert_eq!(seen, ["12345678"]);
        let err = lines.push(b"cdefghi", |l| seen.push(l.to_string()));
        assert_eq!(err, Err(TooLong(8)));
        // What was kept of it is gone.
        lines.push(b"xy\n", |l| seen.push(l.to_string())).unwrap();
        assert_eq!(seen, ["12345678", "xy"]);
        // A whole line over the limit in one chunk, too.
        let err = lines.push(b"123456789\nz\n", |l| seen.push(l.to_string()));
        assert_eq!(err, Err(TooLong(8)));
        assert_eq!(seen, ["12345678", "xy"]);
    }

    const STREAM: &str = "{\"message\":{\"content\":\"héllo — 你好 🦀\"},\"done\":false}\r\n\n  \n{\"done\":true,\"eval_count\":3}\n";

    #[test]
    fn every_chunk_size_gives_the_same_lines() {
        let expected = vec![
            "{\"message\":{\"content\":\"héllo — 你好 🦀\"},\"done\":false}".to_string(),
            "{\"done\":true,\"eval_count\":3}".to_string(),
        ];
        for size in [1, 2, 3, 4, 5, 7, 13, 64, 4096] {
            assert_eq!(
                decode_in_chunks(STREAM.as_bytes(), size),
                expected,
                "size {size}"
            );
        }
    }

    #[test]
    fn last_line_without_newline_is_flushed_on_finish() {
        let lines = decode_in_chunks(b"{\"a\":1}\n{\"done\":true}", 3);
        assert_eq!(lines, vec!["{\"a\":1}", "{\"done\":true}"]);
    }

    #[test]
    fn a_long_line_in_tiny_chunks_is_decoded_once() {
        let content = "ü".repeat(100_000);
        let input = format!("{{\"c\":\"{content}\"}}\n");
        let lines = decode_in_chunks(input.as_bytes(), 4);
        assert_eq!(lines, vec![input.trim_end().to_string()]);
    }

    #[test]
    fn line_buffer_strips_crlf_and_keeps_empty_lines() {
        let mut buffer = LineBuffer::new();
        let mut lines = Vec::new();
        buffer
            .push(b"a\r\n\r\nb\nc", |l| lines.push(l.to_string()))
            .unwrap();
        buffer.finish(|l| lines.push(l.to_string()));
        assert_eq!(lines, vec!["a", "", "b", "c"]);
    }
}
