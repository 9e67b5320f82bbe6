//! The page, embedded in the binary: one HTML file, one script, one style sheet, no build
//! step (see `src/web/assets/`).

pub const INDEX_HTML: &str = include_str!("assets/index.html");
pub const APP_JS: &str = include_str!("assets/app.js");
pub const APP_CSS: &str = include_str!("assets/app.css");
