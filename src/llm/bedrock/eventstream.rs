//! AWS's binary event-stream framing (`application/vnd.amazon.eventstream`), which
//! ConverseStream answers in. Each message is
//!
//! ```text
//! total length u32 | headers length u32 | CRC32 of those 8 bytes
//! headers | payload | CRC32 of everything before it
//! ```
//!
//! all big-endian; a header is a 1-byte name length, the name, a 1-byte type and a value
//! whose size the type gives (strings and byte arrays: a u16 length first).

/// One decoded message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// String-valued headers (`:event-type`, `:message-type`, `:exception-type`, …).
    pub headers: Vec<(String, String)>,
    pub payload: Vec<u8>,
}

impl Message {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Bigger messages are refused rather than buffered: a text delta is a few bytes, and a
/// corrupt length must not make us allocate gigabytes.
const MAX_MESSAGE: usize = 16 * 1024 * 1024;
const PRELUDE: usize = 12;

/// Splits a byte stream into messages, checking both checksums.
#[derive(Debug, Default)]
pub struct Decoder {
    buffer: Vec<u8>,
}

impl Decoder {
    /// The messages completed by `bytes`; `Err` for a corrupt stream.
    pub(in crate::llm) fn push(&mut self, bytes: &[u8]) -> Result<Vec<Message>, String> {
        self.buffer.extend_from_slice(bytes);
        let mut messages = Vec::new();
        while self.buffer.len() >= PRELUDE {
            let total = be32(&self.buffer[0..4]) as usize;
            let headers_len = be32(&self.buffer[4..8]) as usize;
            if crc32(&self.buffer[0..8]) != be32(&self.buffer[8..12]) {
                return Err("the event stream's prelude checksum does not match".into());
            }
            if !(PRELUDE + 4..=MAX_MESSAGE).contains(&total) || headers_len > total - PRELUDE - 4 {
                return Err(format!(
                    "an event stream message claims an impossible size ({total} bytes)"
                ));
            }
            if self.buffer.len() < total {
                break;
            }
            let frame: Vec<u8> = self.buffer.drain(..total).collect();
            if crc32(&frame[..total - 4]) != be32(&frame[total - 4..]) {
                return Err("an event stream message's checksum does not match".into());
            }
            let headers = parse_headers(&frame[PRELUDE..PRELUDE + headers_len])?;
            let payload = frame[PRELUDE + headers_len..total - 4].to_vec();
            messages.push(Message { headers, payload });
        }
        Ok(messages)
    }

    /// Bytes of an unfinished message left when the body ended.
    pub fn pending(&self) -> usize {
        self.buffer.len()
    }
}

fn parse_headers(mut bytes: &[u8]) -> Result<Vec<(String, String)>, String> {
    let bad = || "an event stream header is malformed".to_string();
    let mut headers = Vec::new();
    while !bytes.is_empty() {
        let name_len = *bytes.first().ok_or_else(bad)? as usize;
        let name = bytes.get(1..1 + name_len).ok_or_else(bad)?;
        let name = String::from_utf8_lossy(name).to_string();
        bytes = &bytes[1 + name_len..];
        let kind = *bytes.first().ok_or_else(bad)?;
        bytes = &bytes[1..];
        // Fixed sizes of the non-string types; only strings are kept.
        let fixed = match kind {
            0 | 1 => 0,
            2 => 1,
            3 => 2,
            4 => 4,
            5 | 8 => 8,
            9 => 16,
            6 | 7 => {
                let len = bytes.get(0..2).map(be16).ok_or_else(bad)? as usize;
                let value = bytes.get(2..2 + len).ok_or_else(bad)?;
                if kind == 7 {
                    headers.push((name, String::from_utf8_lossy(value).to_string()));
                }
                bytes = &bytes[2 + len..];
                continue;
            }
            other => return Err(format!("an event stream header has unknown type {other}")),
        };
        bytes = bytes.get(fixed..).ok_or_else(bad)?;
    }
    Ok(headers)
}

/// Encodes a message with string headers (the scripted test servers speak it).
pub fn encode(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut encoded_headers = Vec::new();
    for (name, value) in headers {
        encoded_headers.push(name.len() as u8);
        encoded_headers.extend_from_slice(name.as_bytes());
        encoded_headers.push(7);
        encoded_headers.extend_from_slice(&(value.len() as u16).to_be_bytes());
        encoded_headers.extend_from_slice(value.as_bytes());
    }
    let total = PRELUDE + encoded_headers.len() + payload.len() + 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(total as u32).to_be_bytes());
    out.extend_from_slice(&(encoded_headers.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc32(&out[0..8]).to_be_bytes());
    out.extend_from_slice(&encoded_headers);
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32(&out).to_be_bytes());
    out
}

fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_byte_by_byte() {
        let one = encode(
            &[
                (":event-type", "contentBlockDelta"),
                (":message-type", "event"),
            ],
            br#"{"contentBlockIndex":0,"delta":{"text":"hi"}}"#,
        );
        let two = encode(
            &[(":event-type", "messageStop")],
            br#"{"stopReason":"end_turn"}"#,
        );
        let stream = [one, two].concat();
        let mut decoder = Decoder::default();
        let mut messages = Vec::new();
        for byte in &stream {
            messages.extend(decoder.push(std::slice::from_ref(byte)).unwrap());
        }
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].header(":event-type"), Some("contentBlockDelta"));
        assert_eq!(messages[0].header(":message-type"), Some("event"));
        assert_eq!(messages[1].payload, br#"{"stopReason":"end_turn"}"#);
        assert_eq!(decoder.pending(), 0);
    }

    /// Headers of every other type are skipped; only strings are kept.
    #[test]
    fn skips_non_string_headers() {
        let mut headers = Vec::new();
        headers.extend_from_slice(&[4, b'b', b'o', b'o', b'l', 0]);
        headers.extend_from_slice(&[3, b'i', b'n', b't', 4, 0, 0, 0, 42]);
        headers.extend_from_slice(&[4, b'u', b'u', b'i', b'd', 9]);
        headers.extend_from_slice(&[7; 16]);
        headers.extend_from_slice(&[4, b'n', b'a', b'm', b'e', 7, 0, 2, b'o', b'k']);
        let total = PRELUDE + headers.len() + 2 + 4;
        let mut frame = Vec::new();
        frame.extend_from_slice(&(total as u32).to_be_bytes());
        frame.extend_from_slice(&(headers.len() as u32).to_be_bytes());
        frame.extend_from_slice(&crc32(&frame[0..8]).to_be_bytes());
        frame.extend_from_slice(&headers);
        frame.extend_from_slice(b"{}");
        frame.extend_from_slice(&crc32(&frame).to_be_bytes());
        let messages = Decoder::default().push(&frame).unwrap();
        assert_eq!(
            messages[0].headers,
            [("name".to_string(), "ok".to_string())]
        );
        assert_eq!(messages[0].payload, b"{}");
    }

    #[test]
    fn corruption_is_an_error() {
        let mut frame = encode(&[(":event-type", "x")], b"{}");
        let last = frame.len() - 5;
        frame[last] ^= 1;
        assert!(Decoder::default().push(&frame).is_err());
        let mut prelude = encode(&[], b"");
        prelude[1] ^= 1;
        assert!(Decoder::default().push(&prelude).is_err());
    }
}
