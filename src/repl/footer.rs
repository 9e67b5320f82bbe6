//! The dim row under the line being typed: the turn mode, the permission mode, the model
//! and how full the context is — the state that decides what the next message does, where
//! the eye already is.
//!
//! It is drawn as the end of the editor's hint (a hint may hold a newline, and the editor
//! counts its rows), so the editor itself clears and redraws it with the line, and takes it
//! away when a line is sent: the scrollback keeps what was typed, not the footer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::repl::render::paint::cut_to_width;
use crate::session::lock;
use crate::session::view::{ContextState, Settings};

/// The footer's text, shared by the shell (which writes it) and the editor (which draws it).
#[derive(Clone, Default)]
pub struct Footer {
    text: Arc<Mutex<String>>,
    /// Rows drawn under the line (the popup's and the footer's) when the editor last drew
    /// it: what a read that ends left on screen, whatever the text has become since.
    drawn: Arc<AtomicUsize>,
}

impl Footer {
    /// Sets the text; whether it changed.
    pub fn set(&self, text: String) -> bool {
        let mut now = lock(&self.text);
        let changed = *now != text;
        *now = text;
        changed
    }

    /// The editor's hint for the line: `hint` after the cursor, then the `popup`'s rows
    /// (see `popup`), then the footer.
    pub fn under(&self, hint: Option<String>, popup: Vec<String>) -> Option<String> {
        let text = lock(&self.text);
        // Cut to fit one row of the terminal as it is now (it may have been resized).
        let columns = crate::repl::tty::terminal_width();
        let (footer, _) = cut_to_width(&text, usize::from(columns).saturating_sub(1));
        let mut rows = popup;
        if !footer.is_empty() {
            rows.push(footer.to_string());
        }
        self.drawn.store(rows.len(), Ordering::SeqCst);
        if rows.is_empty() {
            return hint;
        }
        Some(format!("{}\n{}", hint.unwrap_or_default(), rows.join("\n")))
    }

    /// Rows drawn under the line when the editor last drew it.
    pub fn rows(&self) -> usize {
        self.drawn.load(Ordering::SeqCst)
    }
}

/// `chat · accept-edits · qwen · context 12%`; empty until the session has said its
/// settings. It is cut to the terminal's width when drawn (the last column stays free, so
/// the row never wraps).
pub fn text(settings: &Settings, context: Option<&ContextState>) -> String {
    if settings.max_iters == 0 && settings.model.is_empty() {
        return String::new();
    }
    let model = match settings.model_id() {
        "" => "no model yet",
        id => id,
    };
    let mut parts = vec![
        settings.mode.as_str().to_string(),
        format!("{} (shift+tab)", settings.permission_mode.as_str()),
        model.to_string(),
    ];
    if let Some(context) = context {
        parts.push(match crate::repl::view::context::used_percent(context) {
            Some(percent) => format!("context {percent}%"),
            None => format!("context {} tokens", context.used_tokens),
        });
    }
    parts.push("ctrl+o transcript".into());
    format!("  {}", parts.join(" · "))
}

/// After a read ended by Ctrl+C, with the cursor on the row below the footer: clears the
/// footer's row and stands there.
pub fn erase_below() {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(b"\x1b[1A\r\x1b[2K");
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PermissionMode;
    use crate::session::TurnMode;

    fn settings() -> Settings {
        Settings {
            model: "local (qwen @ http://x)".into(),
            root: "/p".into(),
            agent_id: "ling".into(),
            mode: TurnMode::Chat,
            permission_mode: PermissionMode::AcceptEdits,
            max_iters: 30,
        }
    }

    #[test]
    fn it_names_the_modes_the_model_and_the_context() {
        let text = text(&settings(), None);
        assert_eq!(
            text,
            "  chat · accept-edits (shift+tab) · local · ctrl+o transcript"
        );
        assert!(super::text(&Settings::default(), None).is_empty());
    }

    #[test]
    fn it_fits_one_row() {
        let text = text(&settings(), None);
        assert_eq!(cut_to_width(&text, 29).0.chars().count(), 29);
        let footer = Footer::default();
        assert_eq!(footer.under(Some("x".into()), vec![]), Some("x".into()));
        assert!(footer.set("f".into()));
        assert!(!footer.set("f".into()));
        assert_eq!(footer.rows(), 0, "not drawn yet");
        assert_eq!(footer.under(None, vec![]), Some("\nf".into()));
        assert_eq!(footer.rows(), 1);
        let popup = vec!["❯ /model".to_string(), "  /mode".to_string()];
        assert_eq!(
            footer.under(None, popup),
            Some("\n❯ /model\n  /mode\nf".into())
        );
        assert_eq!(footer.rows(), 3);
    }
}
