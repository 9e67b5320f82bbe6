//! A patch checked against the workspace before anything is written: every path relative,
//! without `..`, inside the root and not protected; every hunk applying to the file as it
//! is now. The result holds each file's new text, so applying it is only writing.

use std::path::{Component, Path, PathBuf};

use super::{FilePatch, Line};
use crate::tools::ToolContext;
use crate::tools::guard::paths::{self, PathUse};

/// A patch that changes more lines than this, or more files than [`CONFIRM_ABOVE_FILES`],
/// is applied only after a person confirms it, whatever the permission mode.
pub const CONFIRM_ABOVE_LINES: usize = 400;
pub const CONFIRM_ABOVE_FILES: usize = 20;

/// One file's change, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Relative to the root, `/`-separated.
    pub rel: String,
    pub abs: PathBuf,
    /// The text now; `None` for a file the patch creates.
    pub before: Option<String>,
    /// The text after; `None` for a file the patch deletes.
    pub after: Option<String>,
}

/// A whole patch, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub changes: Vec<Change>,
    /// Lines added plus lines removed.
    pub lines_changed: usize,
}

impl Checked {
    /// Too big to apply without a person's say-so.
    pub fn needs_confirmation(&self) -> bool {
        self.lines_changed > CONFIRM_ABOVE_LINES || self.changes.len() > CONFIRM_ABOVE_FILES
    }
}

/// Parses `diff` and checks it against the files under the root, each path resolved as
/// every file tool's is (`$LINGGEN_HOME` never written, secret stores, FIFOs and devices
/// refused). Reads files: call it off the async runtime. `Err` names the file or hunk and
/// says what to do.
pub(in crate::tools) fn check(ctx: &ToolContext, diff: &str) -> Result<Checked, String> {
    let files = super::parse(diff)?;
    let mut changes: Vec<Change> = Vec::new();
    let mut lines_changed = 0;
    for file in &files {
        for raw in [&file.old_path, &file.new_path].into_iter().flatten() {
            plain_relative(raw)?;
        }
        let target = ctx
            .resolve(file.path(), PathUse::Write)
            .map_err(|e| e.to_string())?;
        if changes.iter().any(|c| c.rel == target.rel) {
            return Err(format!(
                "`{}` appears twice in the patch; put all its hunks under one header",
                target.rel
            ));
        }
        let before = read(&target.abs, &target.rel, file)?;
        let after = match &file.new_path {
            None => None,
            Some(_) => Some(super::apply(file, before.as_deref().unwrap_or_default())?),
        };
        lines_changed += file
            .hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter(|l| !matches!(l, Line::Context(_)))
            .count();
        changes.push(Change {
            rel: target.rel,
            abs: target.abs,
            before,
            after,
        });
    }
    Ok(Checked {
        changes,
        lines_changed,
    })
}

/// Patch paths are relative to the root and never step out of it, even to come back.
fn plain_relative(raw: &str) -> Result<(), String> {
    let path = Path::new(raw);
    if path.is_absolute() {
        return Err(format!(
            "`{raw}` is absolute; patch paths are relative to the workspace root (a/src/main.rs)"
        ));
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "`{raw}` contains `..`; patch paths stay inside the workspace root"
        ));
    }
    Ok(())
}

/// The file's text now: `None` for one the patch creates (which must not exist yet).
fn read(abs: &Path, rel: &str, file: &FilePatch) -> Result<Option<String>, String> {
    let exists = abs.exists();
    match (&file.old_path, exists) {
        (None, true) => Err(format!(
            "`{rel}` already exists; patch it with `--- a/{rel}` instead of creating it"
        )),
        (None, false) => Ok(None),
        (Some(_), false) => Err(format!(
            "`{rel}` does not exist; create it with `--- /dev/null`"
        )),
        (Some(_), true) => match read_regular(abs, rel) {
            Ok(bytes) => String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| format!("`{rel}` is not UTF-8 text; patches change text files only")),
            Err(e) => Err(format!("cannot read `{rel}`: {e}")),
        },
    }
}

fn read_regular(abs: &Path, rel: &str) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    paths::open_regular(abs, rel)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}
