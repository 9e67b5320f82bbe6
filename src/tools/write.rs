//! `Write`: replace (or create) a whole file inside the root.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::ToolName;
use super::diff::{self, DiffStat};
use super::guard::paths::PathUse;
use super::{Access, ToolContext, ToolOutput, args};
use crate::durable;
use crate::protocol::ToolSpec;

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: ToolName::Write.name().into(),
        description: "Create or overwrite a whole file. Prefer Edit for changes to existing files."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "content": {"type": "string"}
            },
            "required": ["path", "content"]
        }),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct WriteArgs {
    pub raw_path: String,
    pub rel: String,
    pub abs: PathBuf,
    pub content: String,
}

pub(super) const PATH_NAMES: &[&str] = args::keys::PATH;

impl WriteArgs {
    pub fn parse(ctx: &ToolContext, args: &Value) -> Result<Self, ToolOutput> {
        let example = r#"{"path": "src/new.rs", "content": "..."}"#;
        let raw_path = args::required_string(args, PATH_NAMES, ToolName::Write.name(), example)?;
        let content =
            args::required_string(args, args::keys::CONTENT, ToolName::Write.name(), example)?;
        let resolved = ctx
            .resolve(&raw_path, PathUse::Write)
            .map_err(ToolOutput::error)?;
        if resolved.abs.is_dir() {
            return Err(ToolOutput::error(format!(
                "`{}` is a directory; give a file path inside it",
                resolved.rel
            )));
        }
        Ok(WriteArgs {
            raw_path,
            rel: resolved.rel,
            abs: resolved.abs,
            content,
        })
    }

    pub fn summary(&self) -> String {
        format!("Write {}", self.rel)
    }

    /// The write, with the diff against what is on disk now, for the approval prompt.
    pub fn access(&self, _ctx: &ToolContext) -> Access {
        let preview_diff = match read_existing(&self.abs) {
            Existing::Text(old) => diff::unified(&self.rel, &old, &self.content).0,
            Existing::Missing => diff::unified(&self.rel, "", &self.content).0,
            Existing::Unreadable(_) => None,
        };
        Access::Write {
            path: self.abs.clone(),
            rel: self.rel.clone(),
            preview_diff,
        }
    }

    /// Runs on the blocking pool: resolving, reading and writing all touch the disk.
    pub async fn run(&self, ctx: &ToolContext) -> ToolOutput {
        let (args, ctx) = (self.clone(), ctx.clone());
        off_runtime(move || args.write(&ctx)).await
    }

    fn write(&self, ctx: &ToolContext) -> ToolOutput {
        // Checked again: the tree may have changed while a person looked at the prompt.
        let resolved = match ctx.resolve(&self.raw_path, PathUse::Write) {
            Ok(r) if r.abs == self.abs => r,
            Ok(_) => {
                return ToolOutput::error(format!(
                    "`{}` now resolves elsewhere (a symlink changed); read it again and retry",
                    self.rel
                ));
            }
            Err(e) => return ToolOutput::error(e),
        };
        let old = match current_text(ctx, &resolved.abs) {
            Existing::Text(old) => Some(old),
            Existing::Missing => None,
            // Overwriting a binary file is allowed; there is just no line diff to show.
            Existing::Unreadable(_) => Some(String::new()),
        };
        if let Some(failed) = save(ctx, &resolved.abs, &self.rel, &self.content) {
            return failed;
        }
        let (diff, stat) = diff::unified(&self.rel, old.as_deref().unwrap_or(""), &self.content);
        let lines = crate::text::plural(self.content.lines().count(), "line", "lines");
        let (model, summary) = match old {
            None => (
                format!("created {} ({lines})", self.rel),
                format!("created, {lines}"),
            ),
            Some(_) if stat == DiffStat::default() => (
                format!("{} already had this content; nothing changed", self.rel),
                "unchanged".to_string(),
            ),
            Some(_) => (
                format!("wrote {} ({lines}, {})", self.rel, stat.label()),
                stat.label(),
            ),
        };
        ToolOutput::ok(model, summary).with_diff(diff)
    }
}

pub(super) enum Existing {
    Text(String),
    Missing,
    Unreadable(String),
}

pub(super) fn read_existing(path: &Path) -> Existing {
    let read = |path: &Path| -> std::io::Result<Vec<u8>> {
        use std::io::Read as _;
        let mut bytes = Vec::new();
        super::guard::paths::open_regular(path, &path.display().to_string())?
            .read_to_end(&mut bytes)?;
        Ok(bytes)
    };
    match read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => Existing::Text(text),
            Err(_) => Existing::Unreadable("it is not UTF-8 text".into()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Existing::Missing,
        Err(e) => Existing::Unreadable(e.to_string()),
    }
}

/// A file's text as the person sees it: the editor's buffer when linggen works for an
/// editor that offers it, else the file on disk.
pub(super) fn current_text(ctx: &ToolContext, path: &Path) -> Existing {
    match ctx.editor_files.as_ref().and_then(|files| files.read(path)) {
        Some(text) => Existing::Text(text),
        None => read_existing(path),
    }
}

/// Writes `content` to `path` (already resolved and approved): through the editor when it
/// offers that, else durably on disk. `Some` is the failed call's output.
pub(super) fn save(ctx: &ToolContext, path: &Path, rel: &str, content: &str) -> Option<ToolOutput> {
    if let Some(written) = ctx
        .editor_files
        .as_ref()
        .and_then(|f| f.write(path, content))
    {
        return written
            .err()
            .map(|why| ToolOutput::error(format!("the editor did not write `{rel}`: {why}")));
    }
    let existed = path.exists();
    write_file(path, content)
        .err()
        .map(|e| write_failed(rel, existed, &e))
}

/// Replaces (or creates) `path` with `content` durably: the old content stays whole until
/// the new one is all on disk (see [`crate::durable`]), and a symlink at the path leads to
/// the file replaced, as the path check resolved it. Never through a FIFO or a device that
/// took the file's place since it was checked: neither is opened nor replaced.
pub(super) fn write_file(path: &Path, content: &str) -> Result<(), durable::WriteError> {
    stage_file(path, content)?.commit()
}

/// `content` written beside `path`, ready to replace it (see [`StagedFile`]).
pub(super) fn stage_file(path: &Path, content: &str) -> Result<StagedFile, durable::WriteError> {
    refuse_read_only(path)?;
    let made = match path.parent() {
        Some(parent) => create_folders(parent)?,
        None => Vec::new(),
    };
    let mut staged = StagedFile { staged: None, made };
    staged.staged = Some(durable::stage(
        path,
        content.as_bytes(),
        durable::Options::default(),
    )?);
    Ok(staged)
}

/// A new version of a file, staged beside it, and the parent folders made for it (the path
/// was checked to be inside the root, so they are too). Dropped uncommitted, it removes
/// both: a failed write leaves no trace.
pub(super) struct StagedFile {
    staged: Option<durable::Staged>,
    /// Deepest first.
    made: Vec<PathBuf>,
}

impl StagedFile {
    pub(super) fn commit(mut self) -> Result<(), durable::WriteError> {
        if let Some(staged) = self.staged.take() {
            staged.commit()?;
        }
        self.made.clear();
        Ok(())
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        // The temporary file first: its folder must be empty to go.
        drop(self.staged.take());
        for folder in &self.made {
            // `remove_dir` leaves a folder something else put a file in since.
            let _ = std::fs::remove_dir(folder);
        }
    }
}

/// A file the person may not write stays unwritten: replacing it needs only the folder's
/// permission, but writing it in place needed the file's, and a read-only file is a
/// person's way of saying "not this one".
fn refuse_read_only(path: &Path) -> Result<(), durable::WriteError> {
    use std::os::unix::ffi::OsStrExt as _;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return Ok(());
    };
    // SAFETY: access with a valid NUL-terminated path; no memory is written.
    if unsafe { libc::access(c_path.as_ptr(), libc::W_OK) } == 0 {
        return Ok(());
    }
    let source = std::io::Error::last_os_error();
    if source.kind() != std::io::ErrorKind::PermissionDenied {
        // Missing (a new file), or what the write itself will say better (a read-only
        // file system).
        return Ok(());
    }
    Err(durable::WriteError::Io {
        step: durable::Step::Inspect,
        path: path.to_path_buf(),
        source,
    })
}

/// Creates `folder` and its missing parents; returns those it created, deepest first.
fn create_folders(folder: &Path) -> Result<Vec<PathBuf>, durable::WriteError> {
    let missing: Vec<PathBuf> = folder
        .ancestors()
        .take_while(|f| std::fs::symlink_metadata(f).is_err())
        .map(Path::to_path_buf)
        .collect();
    std::fs::create_dir_all(folder).map_err(|source| durable::WriteError::Io {
        step: durable::Step::CreateFolder,
        path: folder.to_path_buf(),
        source,
    })?;
    Ok(missing)
}

/// A file tool's write that failed. What the model reads says what failed, what to do and
/// that the file is as it was; a failure of the machine (a full disk) also stops the run,
/// since the model cannot fix it (see [`ToolOutput::fault`]).
pub(super) fn write_failed(rel: &str, existed: bool, error: &durable::WriteError) -> ToolOutput {
    let unchanged = if existed {
        "the file was not changed"
    } else {
        "the file was not created"
    };
    let message = format!("cannot write `{rel}`: {} — {unchanged}", error.reason());
    match error.fault() {
        Some(fault) => ToolOutput::storage_fault(message, fault),
        None => ToolOutput::error(message),
    }
}

/// Runs a file tool's work on the blocking pool, so the runtime's two threads never wait
/// on the disk.
pub(super) async fn off_runtime(work: impl FnOnce() -> ToolOutput + Send + 'static) -> ToolOutput {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| ToolOutput::error(format!("the file operation failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn setup() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(&dir.path().canonicalize().unwrap());
        (dir, ctx)
    }

    #[tokio::test]
    async fn creates_file_and_parents_with_all_added_diff() {
        let (dir, ctx) = setup();
        let args =
            WriteArgs::parse(&ctx, &json!({"path": "a/b/c.txt", "content": "x\ny\n"})).unwrap();
        let Access::Write {
            rel, preview_diff, ..
        } = args.access(&ctx)
        else {
            panic!("not a write");
        };
        assert_eq!(rel, "a/b/c.txt");
        assert!(preview_diff.unwrap().contains("+x\n+y\n"));
        let out = args.run(&ctx).await;
        assert!(!out.is_error, "{}", out.model);
        assert_eq!(out.summary, "created, 2 lines");
        assert!(out.diff.unwrap().starts_with("--- /dev/null"));
        assert_eq!(
            fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
            "x\ny\n"
        );
    }

    #[tokio::test]
    async fn overwrite_reports_diff() {
        let (dir, ctx) = setup();
        fs::write(dir.path().join("f.txt"), "one\ntwo\n").unwrap();
        let args =
            WriteArgs::parse(&ctx, &json!({"file_path": "f.txt", "content": "one\n2\n"})).unwrap();
        let out = args.run(&ctx).await;
        assert_eq!(out.summary, "+1 -1");
        let diff = out.diff.unwrap();
        assert!(diff.contains("-two\n+2\n"), "{diff}");
    }

    /// The file a symlink leads to is replaced, not the link (as writing in place did), and
    /// it keeps its mode; no temporary file is left beside it.
    #[tokio::test]
    async fn writes_through_a_symlink_and_keeps_the_mode() {
        use std::os::unix::fs::PermissionsExt as _;
        let (dir, ctx) = setup();
        fs::create_dir(dir.path().join("real")).unwrap();
        let target = dir.path().join("real/run.sh");
        fs::write(&target, "echo old\n").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("real/run.sh", dir.path().join("run.sh")).unwrap();
        let args =
            WriteArgs::parse(&ctx, &json!({"path": "run.sh", "content": "echo new\n"})).unwrap();
        let out = args.run(&ctx).await;
        assert!(!out.is_error, "{}", out.model);
        assert!(
            fs::symlink_metadata(dir.path().join("run.sh"))
                .unwrap()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&target).unwrap(), "echo new\n");
        let mode = fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755);
        assert_eq!(fs::read_dir(dir.path().join("real")).unwrap().count(), 1);
    }

    #[tokio::test]
    async fn refuses_outside_git_and_directories() {
        let (dir, ctx) = setup();
        fs::create_dir(dir.path().join(".git")).unwrap();
        for (path, needle) in [
            ("../x", "outside"),
            ("/tmp/x", "outside"),
            (".git/config", ".git"),
            (".", "root"),
        ] {
            let err = WriteArgs::parse(&ctx, &json!({"path": path, "content": ""})).unwrap_err();
            assert!(
                err.is_error && err.model.contains(needle),
                "{path}: {}",
                err.model
            );
        }
        fs::create_dir(dir.path().join("d")).unwrap();
        let err = WriteArgs::parse(&ctx, &json!({"path": "d", "content": ""})).unwrap_err();
        assert!(err.model.contains("directory"));
        let err = WriteArgs::parse(&ctx, &json!({"path": "x"})).unwrap_err();
        assert!(err.model.contains("needs `content`"), "{}", err.model);
    }
}
