//! Images in the conversation: what a tool returned (an MCP server's screenshot, a chart)
//! and, later, what a person attaches. Provider-neutral here; each provider writes them in
//! its own wire format, and a model configured without images (`images = false`, the
//! default for all but the providers' own clouds: see `ModelConfig::accepts_images`) gets
//! a line of text in their place (see `llm::image::TextOnly`).
//!
//! The history keeps the images whichever model answers next, so a session that falls back
//! from a cloud model to a local one (or back) sends each what it can read.

use serde::{Deserialize, Serialize};

use crate::shared_text::SharedText;

/// The largest image (decoded) passed to a model: Bedrock's limit, the strictest of the
/// providers (Anthropic's is 5 MB). A larger one would make every later request fail, since
/// the image stays in the history; it becomes a note instead.
pub const MAX_IMAGE_BYTES: usize = 3_750_000;

/// The most tokens an image is counted as: Anthropic scales larger images down to about
/// 1.15 megapixels first, which its rule of thumb (width × height / 750) puts at ~1,600.
pub const MAX_IMAGE_TOKENS: u64 = 1_600;

/// The formats every provider linggen talks to accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ImageFormat {
    #[serde(rename = "image/png")]
    Png,
    #[serde(rename = "image/jpeg")]
    Jpeg,
    #[serde(rename = "image/gif")]
    Gif,
    #[serde(rename = "image/webp")]
    Webp,
}

impl ImageFormat {
    /// From a media type as MCP servers write it (`image/png`; `image/jpg` too).
    pub fn from_media_type(media_type: &str) -> Option<ImageFormat> {
        let essence = media_type.split(';').next().unwrap_or_default().trim();
        match essence.to_ascii_lowercase().as_str() {
            "image/png" => Some(ImageFormat::Png),
            "image/jpeg" | "image/jpg" => Some(ImageFormat::Jpeg),
            "image/gif" => Some(ImageFormat::Gif),
            "image/webp" => Some(ImageFormat::Webp),
            _ => None,
        }
    }

    pub fn media_type(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Gif => "image/gif",
            ImageFormat::Webp => "image/webp",
        }
    }

    /// From a file name's extension (`shot.PNG`, `photo.jpeg`): what an `@file` mention or
    /// `--image` names.
    pub fn from_path(path: &std::path::Path) -> Option<ImageFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "png" => Some(ImageFormat::Png),
            "jpg" | "jpeg" => Some(ImageFormat::Jpeg),
            "gif" => Some(ImageFormat::Gif),
            "webp" => Some(ImageFormat::Webp),
            _ => None,
        }
    }

    /// The name Bedrock's Converse API gives it (`format` of an image block).
    pub fn short_name(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpeg",
            ImageFormat::Gif => "gif",
            ImageFormat::Webp => "webp",
        }
    }
}

/// One image, base64-encoded as every wire format carries it. The data is shared, not
/// copied, between the history, the events that announce the message and the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    #[serde(rename = "media_type")]
    pub format: ImageFormat,
    /// Standard base64, without line breaks.
    pub data: SharedText,
}

/// Why an image a tool returned is not passed on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageRefused {
    #[error("models take PNG, JPEG, GIF or WebP images, not {0}")]
    Format(String),
    #[error("it is {} KB, more than the {} KB a model takes", .bytes / 1024, MAX_IMAGE_BYTES / 1024)]
    TooLarge { bytes: usize },
    #[error("its data is not valid base64")]
    NotBase64,
}

/// Why an image file cannot go to a model: it cannot be read, or a model would refuse it.
#[derive(Debug, thiserror::Error)]
pub enum ImageFileError {
    #[error("`{}`: {}", path.display(), ImageRefused::Format("this file type".into()))]
    NotAnImage { path: std::path::PathBuf },
    #[error("cannot read `{}`: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("`{}` is not sent: {refused}", path.display())]
    Refused {
        path: std::path::PathBuf,
        refused: ImageRefused,
    },
}

impl Image {
    /// An image from a media type and base64 data as a tool gave them, checked so that no
    /// provider rejects it (which would fail this request and every later one).
    pub fn from_base64(media_type: &str, data: String) -> Result<Image, ImageRefused> {
        let format = ImageFormat::from_media_type(media_type)
            .ok_or_else(|| ImageRefused::Format(media_type.to_string()))?;
        // Some encoders wrap base64 at 76 columns; the APIs want it in one piece.
        let data = if data.bytes().any(|b| b.is_ascii_whitespace()) {
            data.split_ascii_whitespace().collect()
        } else {
            data
        };
        if !is_base64(&data) {
            return Err(ImageRefused::NotBase64);
        }
        let image = Image {
            format,
            data: data.into(),
        };
        match image.bytes() {
            bytes if bytes > MAX_IMAGE_BYTES => Err(ImageRefused::TooLarge { bytes }),
            _ => Ok(image),
        }
    }

    /// An image file a person attached (`@shot.png`, `--image`): its bytes, encoded.
    pub fn from_file(path: &std::path::Path) -> Result<Image, ImageFileError> {
        let path_buf = path.to_path_buf();
        let format = ImageFormat::from_path(path).ok_or_else(|| ImageFileError::NotAnImage {
            path: path_buf.clone(),
        })?;
        let bytes = std::fs::read(path).map_err(|source| ImageFileError::Read {
            path: path_buf.clone(),
            source,
        })?;
        Image::from_bytes(format, &bytes).map_err(|refused| ImageFileError::Refused {
            path: path_buf,
            refused,
        })
    }

    /// Raw image bytes (a file, a screenshot), encoded; refused when larger than a model
    /// takes.
    pub fn from_bytes(format: ImageFormat, bytes: &[u8]) -> Result<Image, ImageRefused> {
        use base64::Engine as _;
        if bytes.len() > MAX_IMAGE_BYTES {
            return Err(ImageRefused::TooLarge { bytes: bytes.len() });
        }
        Ok(Image {
            format,
            data: base64::engine::general_purpose::STANDARD
                .encode(bytes)
                .into(),
        })
    }

    /// A name for this image within the process that holds it (16 hex digits of a hash of
    /// its data): how events and the page refer to it without carrying the data.
    pub fn id(&self) -> String {
        use std::hash::{Hash as _, Hasher as _};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.data.as_str().hash(&mut hasher);
        format!("{:016x}", hasher.finish())
    }

    /// The decoded size in bytes.
    pub fn bytes(&self) -> usize {
        let padding = self.data.bytes().rev().take_while(|b| *b == b'=').count();
        (self.data.len() / 4 * 3).saturating_sub(padding)
    }

    /// `image/png, 12 KB`: how the text of a message names it.
    pub fn describe(&self) -> String {
        format!(
            "{}, {} KB",
            self.format.media_type(),
            self.bytes().div_ceil(1024)
        )
    }

    /// `data:image/png;base64,…`, as OpenAI's `image_url` takes it.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.format.media_type(), self.data)
    }

    /// Width and height, read from the header of a PNG or GIF (cheap: the first bytes);
    /// `None` for other formats.
    pub fn dimensions(&self) -> Option<(u32, u32)> {
        match self.format {
            ImageFormat::Png => {
                let header = decode_prefix(&self.data, 24)?;
                png_dimensions(&header)
            }
            ImageFormat::Gif => {
                let header = decode_prefix(&self.data, 10)?;
                let le = |at: usize| u32::from(u16::from_le_bytes([header[at], header[at + 1]]));
                header
                    .starts_with(b"GIF8")
                    .then(|| (le(6), le(8)))
                    .filter(|(w, h)| *w > 0 && *h > 0)
            }
            ImageFormat::Jpeg | ImageFormat::Webp => None,
        }
    }

    /// The prompt tokens the image costs, about: Anthropic's width × height / 750 when the
    /// size can be read cheaply, else the most any image costs there ([`MAX_IMAGE_TOKENS`]).
    /// Its base64 length says nothing of it: a 100 KB screenshot is not 130k characters.
    pub fn tokens(&self) -> u64 {
        match self.dimensions() {
            Some((w, h)) => (u64::from(w) * u64::from(h) / 750).clamp(1, MAX_IMAGE_TOKENS),
            None => MAX_IMAGE_TOKENS,
        }
    }
}

/// Width and height from a PNG's header (signature, then the IHDR chunk), or `None` when
/// `bytes` is not a PNG.
pub fn png_dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
    if bytes.len() < 24 || !bytes.starts_with(SIGNATURE) || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let be = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    let (width, height) = (be(16)?, be(20)?);
    (width > 0 && height > 0).then_some((width, height))
}

/// Whether `data` is standard base64 (padded or not) and nothing else.
fn is_base64(data: &str) -> bool {
    let body = data.trim_end_matches('=');
    !body.is_empty()
        && data.len() - body.len() <= 2
        && body.len() % 4 != 1
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

/// The first `n` bytes `data` decodes to, when it holds that many.
fn decode_prefix(data: &str, n: usize) -> Option<Vec<u8>> {
    let sextet = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let quads = data.as_bytes().get(..n.div_ceil(3) * 4)?;
    let mut out = Vec::with_capacity(n + 2);
    for quad in quads.chunks(4) {
        let word = quad
            .iter()
            .try_fold(0u32, |word, c| Some(word << 6 | u32::from(sextet(*c)?)))?;
        out.extend_from_slice(&word.to_be_bytes()[1..]);
    }
    out.truncate(n);
    Some(out)
}

/// A PNG for tests of the wire formats (its signature: what it shows does not matter).
#[cfg(test)]
pub(crate) fn test_png() -> Image {
    Image {
        format: ImageFormat::Png,
        data: "iVBORw0KGgo=".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference MCP server's 20×20 logo, cut to its header.
    const PNG_20X20: &str = "iVBORw0KGgoAAAANSUhEUgAAABQAAAAUCAYAAACNiR0N";

    #[test]
    fn tool_images_are_checked_before_they_can_break_a_request() {
        let png = Image::from_base64("image/png", PNG_20X20.into()).unwrap();
        assert_eq!(png.format, ImageFormat::Png);
        assert_eq!(png.dimensions(), Some((20, 20)));
        assert_eq!(png.tokens(), 1);
        let wrapped = format!("{}\n{}", &PNG_20X20[..20], &PNG_20X20[20..]);
        let unwrapped = Image::from_base64("IMAGE/PNG", wrapped).unwrap();
        assert_eq!(unwrapped.data, PNG_20X20);
        assert_eq!(
            Image::from_base64("image/svg+xml", "PHN2Zz4=".into()),
            Err(ImageRefused::Format("image/svg+xml".into()))
        );
        assert_eq!(
            Image::from_base64("image/png", "not base64!".into()),
            Err(ImageRefused::NotBase64)
        );
        let huge = "A".repeat(MAX_IMAGE_BYTES / 3 * 4 + 4);
        assert!(matches!(
            Image::from_base64("image/jpeg", huge),
            Err(ImageRefused::TooLarge { .. })
        ));
    }

    #[test]
    fn an_image_costs_tokens_by_its_size_not_its_base64_length() {
        let jpeg = Image::from_base64("image/jpeg", "/9j/4AAQ".repeat(20_000)).unwrap();
        assert_eq!(jpeg.tokens(), MAX_IMAGE_TOKENS);
        assert_eq!(jpeg.bytes(), 120_000);
        assert_eq!(jpeg.describe(), "image/jpeg, 118 KB");
        // A GIF header: 640×480.
        let gif = Image::from_base64("image/gif", "R0lGODlhgALgAYAAAA==".into()).unwrap();
        assert_eq!(gif.dimensions(), Some((640, 480)));
        assert_eq!(gif.tokens(), 409);
        assert!(gif.data_url().starts_with("data:image/gif;base64,R0lG"));
    }
}
