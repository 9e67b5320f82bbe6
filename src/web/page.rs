//! The page, embedded in the binary: one HTML file, one script, one style sheet, no build
//! step (see `src/web/assets/`).

pub const INDEX_HTML: &str = include_str!("assets/index.html");
pub const APP_JS: &str = include_str!("assets/app.js");
/// The Agents panel (list, create, edit, duplicate, delete), a script of its own.
pub const AGENTS_JS: &str = include_str!("assets/agents.js");
pub const APP_CSS: &str = include_str!("assets/app.css");
