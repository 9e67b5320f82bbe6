//! Incremental Server-Sent Events decoding (OpenAI-compatible and Anthropic streams).
//!
//! Follows the WHATWG event-stream rules that matter for LLM APIs: `data:` lines of one
//! event are joined with `\n`, `event:` names the event, lines starting with `:` are
//! comments (keep-alives), and a blank line dispatches. Line splitting is shared with
//! NDJSON, so chunk boundaries (even inside a UTF-8 character) are handled there.

use super::ndjson::{LineBuffer, MAX_LINE_BYTES, TooLong};

/// One dispatched event. `event` is empty when the server sent no `event:` line (OpenAI
/// style); Anthropic names every event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

#[derive(Debug)]
pub struct SseDecoder {
    lines: LineBuffer,
    pending: PendingEvent,
}

impl Default for SseDecoder {
    fn default() -> Self {
        SseDecoder::with_limit(MAX_LINE_BYTES)
    }
}

/// The fields of the event being read, until a blank line dispatches it.
#[derive(Debug)]
struct PendingEvent {
    event: String,
    data: String,
    has_data: bool,
    /// The most `data` may hold, as one line ([`MAX_LINE_BYTES`] but in tests).
    limit: usize,
    /// Its data went over `limit`: the event is dropped, and the stream is an error.
    too_long: bool,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    fn with_limit(limit: usize) -> Self {
        SseDecoder {
            lines: LineBuffer::with_limit(limit),
            pending: PendingEvent {
                event: String::new(),
                data: String::new(),
                has_data: false,
                limit,
                too_long: false,
            },
        }
    }

    /// Feeds a chunk of the body; returns the events it completed. A line, or an event of
    /// many `data:` lines, over the limit is an error, and the event is dropped.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, TooLong> {
        let mut out = Vec::new();
        let SseDecoder { lines, pending } = self;
        lines.push(chunk, |line| pending.on_line(line, &mut out))?;
        if std::mem::take(&mut pending.too_long) {
            return Err(TooLong(pending.limit));
        }
        Ok(out)
    }

    /// The stream closed. Some servers end with `data: [DONE]\n` and no blank line, so an
    /// event still being read is dispatched instead of dropped as the spec would.
    pub fn finish(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let SseDecoder { lines, pending, .. } = self;
        lines.finish(|line| pending.on_line(line, &mut out));
        pending.dispatch(&mut out);
        out
    }
}

impl PendingEvent {
    fn on_line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" if self.too_long => {}
            "data" if self.data.len() + 1 + value.len() > self.limit => {
                self.too_long = true;
                self.data = String::new();
                self.has_data = false;
            }
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => value.clone_into(&mut self.event),
            // `id` and `retry` only matter for browser reconnection, which we never do.
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data),
            });
        }
        self.event.clear();
        self.data.clear();
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    fn decode_in_chunks(input: &[u8], size: usize) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in input.chunks(size) {
            out.extend(decoder.push(chunk).unwrap());
        }
        out.extend(decoder.finish());
        out
    }

    #[test]
    fn an_event_over_the_limit_is_an_error_in_one_line_or_many() {
        let mut decoder = SseDecoder::with_limit(16);
        assert_eq!(decoder.push(b"data: 0123456789abcdefg"), Err(TooLong(16)));
        let mut decoder = SseDecoder::with_limit(16);
        decoder.push(b"data: 01234567\n").unwrap();
        assert_eq!(decoder.push(b"data: 89abcdef\n"), Err(TooLong(16)));
        // The stream reads on after it.
        assert_eq!(decoder.push(b"\ndata: ok\n\n"), Ok(vec![ev("", "ok")]));
    }

    #[test]
    fn openai_style_stream_in_any_chunking() {
        let input = "data: {\"c\":\"héllo 你好 🦀\"}\n\n: keep-alive\n\ndata: [DONE]\n\n";
        let expected = vec![ev("", "{\"c\":\"héllo 你好 🦀\"}"), ev("", "[DONE]")];
        for size in [1, 2, 3, 4, 5, 7, 11, 4096] {
            assert_eq!(
                decode_in_chunks(input.as_bytes(), size),
                expected,
                "size {size}"
            );
        }
    }

    #[test]
    fn named_events_with_crlf_line_endings() {
        let input =
            "event: message_start\r\ndata: {\"a\":1}\r\n\r\nevent: ping\r\ndata: {}\r\n\r\n";
        for size in [1, 3, 6, 100] {
            assert_eq!(
                decode_in_chunks(input.as_bytes(), size),
                vec![ev("message_start", "{\"a\":1}"), ev("ping", "{}")]
            );
        }
    }

    #[test]
    fn multi_line_data_is_joined_with_newlines() {
        let input = "data: first\ndata:second\ndata: \n\n";
        assert_eq!(
            decode_in_chunks(input.as_bytes(), 2),
            vec![ev("", "first\nsecond\n")]
        );
    }

    #[test]
    fn comments_and_unknown_fields_are_ignored_and_blank_lines_without_data_do_nothing() {
        let input = ":comment\nid: 7\nretry: 100\n\n\n\nevent: x\n\ndata: y\n\n";
        // The `event: x` block has no data, so it is not dispatched and does not leak into
        // the next event.
        assert_eq!(decode_in_chunks(input.as_bytes(), 1), vec![ev("", "y")]);
    }

    #[test]
    fn event_without_trailing_blank_line_is_flushed_on_finish() {
        assert_eq!(decode_in_chunks(b"data: [DONE]", 4), vec![ev("", "[DONE]")]);
        assert_eq!(
            decode_in_chunks(b"data: [DONE]\n", 4),
            vec![ev("", "[DONE]")]
        );
    }

    #[test]
    fn a_megabyte_event_in_four_byte_chunks() {
        let payload = "ß".repeat(512 * 1024);
        let input = format!("data: {payload}\n\n");
        let events = decode_in_chunks(input.as_bytes(), 4);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, payload);
    }
}
