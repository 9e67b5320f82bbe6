//! The web mirror: a small hyper server that lets a browser watch and join a live session
//! (`/share` in the shell, `linggen serve` without one). It is one more subscriber of the
//! session's events and one more sender of its inputs; see `doc/web.md`.

mod agents;
mod api;
pub mod auth;
pub mod hub;
pub mod mirror;
mod page;
mod runs;
pub mod serve;
mod server;
mod settings;
pub mod share;
mod sse;
#[cfg(test)]
mod tests;

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;

pub use hub::{Hub, SessionOpener};
pub use mirror::Mirror;
pub use server::{ServeOptions, Server};

/// Every response body: a whole asset or JSON, or an endless event stream.
pub type Body = BoxBody<Bytes, Infallible>;
