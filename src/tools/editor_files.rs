//! Files as an editor holds them. When linggen works for an editor that offers it (ACP's
//! `fs/read_text_file` and `fs/write_text_file`), `Read` sees the editor's buffer, unsaved
//! changes included, and `Write` and `Edit` hand the new text to the editor, so the change
//! lands in the open buffer (and the editor's undo) instead of under it.
//!
//! Only the text travels this way: every decision stays linggen's. A path is resolved and
//! checked (inside the root or an added folder, never a secret, never `$LINGGEN_HOME`), and
//! a write approved, exactly as for a file on disk, before the editor is asked.

use std::path::Path;

/// An editor's view of the files. Called from blocking threads (the file tools run off
/// the async runtime).
pub trait EditorFiles: Send + Sync + std::fmt::Debug {
    /// The editor's text of `path` (absolute), or `None` when it cannot give it (the file
    /// is then read from disk).
    fn read(&self, path: &Path) -> Option<String>;

    /// Asks the editor to write `text` to `path` (absolute); `Err` says why it did not.
    /// `None` when the editor does not write files: linggen writes it to disk itself.
    fn write(&self, path: &Path, text: &str) -> Option<Result<(), String>>;
}
