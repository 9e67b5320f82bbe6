//! The ACP messages linggen reads and writes (protocol v1), as the protocol's schema names
//! them: camelCase fields, snake_case kinds, `sessionUpdate`, `type` and `outcome` as the
//! tags. Only what linggen sends or reads is typed; whatever else an editor sends is
//! skipped, and a kind that a later protocol may add (a content block, an MCP transport, a
//! permission outcome) reads as an `Unknown` or `Other` variant that linggen refuses with
//! a reason, rather than failing the whole request.
//!
//! Our own types rather than the `agent-client-protocol-schema` crate's, which brought
//! anyhow, derive_more, serde_with and strum and cost about 0.3 MB of the binary.
//! `tests/acp.rs` and `tests/acp_reference.rs` still check the wire format against the
//! official client crate.

mod client;
mod prompt;
mod setup;
mod update;

pub use client::*;
pub use prompt::*;
pub use setup::*;
pub use update::*;

use serde::{Deserialize, Deserializer, de::DeserializeOwned};
use serde_json::Value;

/// The protocol version linggen speaks; an editor asking for a later one gets this one and
/// decides.
pub const PROTOCOL_VERSION: u16 = 1;

/// `T`, or its default when the editor sent something of another shape: a capability
/// worded oddly must not cost the editor its `initialize`.
fn or_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let value = Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).unwrap_or_default())
}

/// `T`, with `null` read as its default (an empty list), as the protocol allows for lists.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests;
