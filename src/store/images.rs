//! The images of stored messages (what a tool returned), in their own table: `messages`
//! keeps `body` as its last column (see `long_text`), and a message rarely has any.
//!
//! Stored as the base64 the providers are sent, so resuming is a read and no re-encoding;
//! a third larger than the bytes, which for images already capped at
//! `llm::image::MAX_IMAGE_BYTES` is the simpler trade.

use std::collections::HashMap;

use rusqlite::{Connection, params};

use crate::protocol::Image;
use crate::protocol::image::ImageFormat;

/// Stores `images` as those of message `message_id`, in order. Call it in the transaction
/// that inserts the message.
pub(super) fn insert(conn: &Connection, message_id: i64, images: &[Image]) -> rusqlite::Result<()> {
    if images.is_empty() {
        return Ok(());
    }
    let mut stmt = conn.prepare_cached(
        "INSERT INTO message_images (message_id, position, media_type, data)
         VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (position, image) in images.iter().enumerate() {
        stmt.execute(params![
            message_id,
            position as i64,
            image.format.media_type(),
            image.data.as_str()
        ])?;
    }
    Ok(())
}

/// The images of session `session_id`'s messages with ids in `after..before` (exclusive),
/// by message id. A row whose media type this version does not know is left out (and its
/// message resumes with the text that names it).
pub(super) fn of_messages(
    conn: &Connection,
    session_id: &str,
    after: i64,
    before: i64,
) -> rusqlite::Result<HashMap<i64, Vec<Image>>> {
    let mut stmt = conn.prepare_cached(
        "SELECT i.message_id, i.media_type, i.data FROM message_images i
         JOIN messages m ON m.id = i.message_id
         WHERE m.session_id = ?1 AND m.id > ?2 AND m.id < ?3
         ORDER BY i.message_id, i.position",
    )?;
    let rows = stmt.query_map(params![session_id, after, before], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    let mut images: HashMap<i64, Vec<Image>> = HashMap::new();
    for row in rows {
        let (id, media_type, data) = row?;
        if let Some(format) = ImageFormat::from_media_type(&media_type) {
            let image = Image {
                format,
                data: data.into(),
            };
            images.entry(id).or_default().push(image);
        }
    }
    Ok(images)
}
