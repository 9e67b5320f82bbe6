//! An ACP prompt (content blocks) as a linggen message: the text is read by the line
//! grammar as a typed line is (`/skill`, `@agent`, `@file`); links to files of the
//! workspace attach them as `@file` does; embedded resources (an editor's open buffer,
//! saved or not) are attached with the text the editor sent; images go to models that take
//! them.

use std::path::Path;

use super::model::{ContentBlock, EmbeddedResourceResource};
use crate::app::Workspace;
use crate::llm::Image;
use crate::session::UserMessage;
use crate::session::line::{ATTACHMENT_MAX_BYTES, attached_and_noted};

/// Who the message is from, as events and the store name the frontend.
pub const FROM: &str = "acp";

/// The message for `blocks`, or what is wrong with them (for the editor to show). Reads
/// files: call it off the async runtime.
pub(in crate::acp) fn message(
    ws: &Workspace,
    blocks: &[ContentBlock],
) -> Result<UserMessage, String> {
    let mut text = String::new();
    let mut attached = String::new();
    let mut linked = Vec::new();
    let mut images = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => push_line(&mut text, &t.text),
            ContentBlock::ResourceLink(link) => match workspace_file(&ws.root, &link.uri) {
                Some(rel) => linked.push(rel),
                None => push_line(&mut text, &format!("[{}]({})", link.name, link.uri)),
            },
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::Text(r) => {
                    let name = workspace_file(&ws.root, &r.uri).unwrap_or_else(|| r.uri.clone());
                    attached.push_str(&embedded(&name, &r.text));
                }
                EmbeddedResourceResource::Blob(r) => {
                    let media = r.mime_type.as_deref().unwrap_or("");
                    let image = Image::from_base64(media, r.blob.clone())
                        .map_err(|e| format!("{}: {e}", r.uri))?;
                    images.push(image);
                }
                EmbeddedResourceResource::Unknown(_) => {
                    return Err("a kind of embedded resource linggen cannot read".into());
                }
            },
            ContentBlock::Image(i) => {
                let image = Image::from_base64(&i.mime_type, i.data.clone())
                    .map_err(|e| format!("an image in the prompt: {e}"))?;
                images.push(image);
            }
            ContentBlock::Unknown => {
                return Err("linggen reads text, images, links and resources, not audio".into());
            }
        }
    }
    if text.trim().is_empty() && attached.is_empty() && linked.is_empty() && images.is_empty() {
        return Err("the prompt is empty".into());
    }
    let mut message = ws.read_line(text.trim(), FROM).map_err(|e| e.to_string())?;
    let (files, _notes) = attached_and_noted(&ws.root, &linked);
    message.attached.push_str(&files);
    message.attached.push_str(&attached);
    message.images.extend(images);
    Ok(message)
}

/// An embedded resource as a fenced block, cut where an `@file` attachment is cut so that
/// one open buffer cannot fill the context.
fn embedded(name: &str, text: &str) -> String {
    let kept = crate::text::prefix_bytes(text, ATTACHMENT_MAX_BYTES);
    let cut = if kept.len() < text.len() {
        format!(
            "\n[cut: the first {ATTACHMENT_MAX_BYTES} of {} bytes]",
            text.len()
        )
    } else {
        String::new()
    };
    format!("\n\n{name}:\n```\n{}\n```{cut}", kept.trim_end())
}

fn push_line(text: &mut String, line: &str) {
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(line);
}

/// A `file://` URI of a file inside the workspace, as a path relative to its root.
fn workspace_file(root: &Path, uri: &str) -> Option<String> {
    let path = uri.strip_prefix("file://")?;
    let path = percent_decode(path);
    let rel = Path::new(&path).strip_prefix(root).ok()?;
    // `root/../x` is not inside the root: such a link stays a link.
    let plain = rel
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    plain.then(|| rel.to_string_lossy().into_owned())
}

/// `%20` and the like, as editors write them in file URIs.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_buffer_is_cut_where_an_attachment_is() {
        let big = "x".repeat(ATTACHMENT_MAX_BYTES + 10);
        let block = embedded("big.txt", &big);
        assert!(block.len() < ATTACHMENT_MAX_BYTES + 200);
        assert!(
            block.ends_with(&format!("of {} bytes]", big.len())),
            "{}",
            &block[block.len() - 80..]
        );
        assert_eq!(embedded("a", "hi\n"), "\n\na:\n```\nhi\n```");
    }

    #[test]
    fn file_uris_inside_the_root_become_relative_paths() {
        let root = Path::new("/w/proj");
        assert_eq!(
            workspace_file(root, "file:///w/proj/src/my%20file.rs").as_deref(),
            Some("src/my file.rs")
        );
        assert_eq!(workspace_file(root, "file:///etc/passwd"), None);
        assert_eq!(
            workspace_file(root, "file:///w/proj/../../etc/passwd"),
            None
        );
        assert_eq!(workspace_file(root, "https://example.com/x"), None);
    }
}
