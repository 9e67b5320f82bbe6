//! Text with several owners and one copy.
//!
//! A model's answer can be megabytes. The history keeps it for the next request, the
//! `Message` and `Outcome` events carry it to every subscriber on other threads (the
//! printer, the shell, the web mirror, the store), and the `-p` printer holds it until it
//! prints it. Each of those holding a `String` of its own made a 10 MB answer cost 70 MB of
//! memory; a [`SharedText`] is one allocation they all point at.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Immutable text behind a reference count; cloning it copies a pointer.
///
/// An `Arc<String>` rather than an `Arc<str>`: turning a `String` into an `Arc<str>`
/// copies it, while `Arc::new(string)` only moves its three words, so the text a response
/// was streamed into becomes shared without ever existing twice.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SharedText(Arc<String>);

impl SharedText {
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// Whether `self` and `other` are the same allocation (not only equal text): a cheap
    /// test that an outcome's result is the answer a message carried.
    pub fn same_as(&self, other: &SharedText) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The text as an owned `String`: moved out when this is the last owner, copied
    /// otherwise.
    pub fn into_string(self) -> String {
        Arc::try_unwrap(self.0).unwrap_or_else(|shared| shared.as_str().to_string())
    }
}

impl From<String> for SharedText {
    fn from(mut text: String) -> Self {
        // A streamed answer's buffer grew by doubling; what it never used would stay
        // allocated for as long as the history keeps the answer. Shrinking reallocates in
        // place (or remaps the pages) rather than copying.
        if text.capacity() > text.len() {
            text.shrink_to_fit();
        }
        SharedText(Arc::new(text))
    }
}

impl From<&str> for SharedText {
    fn from(text: &str) -> Self {
        SharedText(Arc::new(text.to_string()))
    }
}

impl From<&String> for SharedText {
    fn from(text: &String) -> Self {
        SharedText::from(text.as_str())
    }
}

impl From<SharedText> for String {
    fn from(text: SharedText) -> String {
        text.into_string()
    }
}

impl Deref for SharedText {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for SharedText {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for SharedText {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl fmt::Debug for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq<str> for SharedText {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for SharedText {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for SharedText {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<SharedText> for str {
    fn eq(&self, other: &SharedText) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<SharedText> for &str {
    fn eq(&self, other: &SharedText) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<SharedText> for String {
    fn eq(&self, other: &SharedText) -> bool {
        self.as_str() == other.as_str()
    }
}

/// Serialized as the plain string it is: the event contract and the stored history do not
/// change shape.
impl Serialize for SharedText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for SharedText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(SharedText::from)
    }
}

/// A string in the events' JSON Schema (`doc/events.schema.json`).
impl schemars::JsonSchema for SharedText {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        String::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_allocation() {
        let text = SharedText::from("x".repeat(1000));
        let copy = text.clone();
        assert!(copy.same_as(&text));
        assert_eq!(copy.as_ptr(), text.as_ptr());
        assert!(!SharedText::from("a").same_as(&SharedText::from("a")));
    }

    #[test]
    fn the_last_owner_gets_the_string_back_without_a_copy() {
        let text = "x".repeat(100);
        let before = text.as_ptr();
        let shared = SharedText::from(text);
        assert_eq!(shared.as_ptr(), before);
        let back = shared.into_string();
        assert_eq!(back.as_ptr(), before);
    }

    #[test]
    fn serializes_as_a_plain_string_and_compares_with_strings() {
        let text = SharedText::from("héllo \"x\"");
        assert_eq!(serde_json::to_string(&text).unwrap(), r#""héllo \"x\"""#);
        let back: SharedText = serde_json::from_str(r#""héllo \"x\"""#).unwrap();
        assert_eq!(back, text);
        assert_eq!("héllo \"x\"", text);
        assert_eq!(text.clone().into_string(), "héllo \"x\"".to_string());
    }
}
