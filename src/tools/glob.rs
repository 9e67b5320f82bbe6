//! `Glob`: files matching patterns, respecting `.gitignore`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use ignore::WalkBuilder;
use serde_json::{Value, json};

use super::ToolName;
use super::guard::paths::{self, PathUse};
use super::{ToolContext, ToolOutput, args};
use crate::protocol::ToolSpec;

pub const DEFAULT_MAX_RESULTS: usize = 200;
const MAX_RESULTS_CAP: usize = 5000;

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: ToolName::Glob.name().into(),
        description: "List files matching glob patterns (gitignore-aware), e.g. [\"**/*.rs\"]."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "globs": {"type": "array", "items": {"type": "string"}},
                "path": {"type": "string", "description": "Directory to search; default root."},
                "max_results": {"type": "integer"}
            },
            "required": ["globs"]
        }),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct GlobArgs {
    pub globs: Vec<String>,
    pub base_rel: String,
    pub base: PathBuf,
    pub max_results: usize,
}

/// Where to search and with which globs, shared by Glob and Grep.
pub(super) fn parse_scope(
    ctx: &ToolContext,
    args: &Value,
    glob_keys: &[&'static str],
) -> Result<(Vec<String>, PathBuf, String), ToolOutput> {
    let globs = args::string_list(args, glob_keys)?
        .unwrap_or_default()
        .into_iter()
        .map(|g| g.trim().trim_start_matches("./").to_string())
        .filter(|g| !g.is_empty())
        .collect();
    let raw = args::string(args, &["path", "dir", "directory", "cwd"])?;
    let resolved = ctx
        .resolve(raw.as_deref().unwrap_or("."), PathUse::Read)
        .map_err(ToolOutput::error)?;
    Ok((globs, resolved.abs, resolved.rel))
}

/// Where Glob finds its patterns (`pattern` is Claude Code's name).
const GLOB_KEYS: &[&str] = args::keys::GLOBS;

pub(super) fn max_results(args: &Value) -> Result<usize, ToolOutput> {
    Ok(
        args::uint(args, &["max_results", "maxResults", "limit", "head_limit"])?
            .map_or(DEFAULT_MAX_RESULTS, |n| {
                (n as usize).clamp(1, MAX_RESULTS_CAP)
            }),
    )
}

impl GlobArgs {
    pub fn parse(ctx: &ToolContext, args: &Value) -> Result<Self, ToolOutput> {
        let (globs, base, base_rel) = parse_scope(ctx, args, GLOB_KEYS)?;
        if globs.is_empty() {
            return Err(args::missing(
                "globs",
                ToolName::Glob.name(),
                r#"{"globs": ["src/**/*.rs"]}"#,
            ));
        }
        FileFilter::new(&globs).map_err(ToolOutput::error)?;
        Ok(GlobArgs {
            globs,
            base,
            base_rel,
            max_results: max_results(args)?,
        })
    }

    pub fn summary(&self) -> String {
        match self.base_rel.as_str() {
            "." => format!("Glob {}", self.globs.join(" ")),
            dir => format!("Glob {} in {dir}", self.globs.join(" ")),
        }
    }

    pub async fn run(&self, ctx: &ToolContext) -> ToolOutput {
        let (args, sandbox) = (self.clone(), ctx.sandbox.clone());
        let root = paths::canonical_root(&ctx.root);
        let job = move || args.list(&root, sandbox.secrets().under(&args.base));
        match tokio::task::spawn_blocking(job).await {
            Ok(Ok(output)) => output,
            Ok(Err(message)) => ToolOutput::error(message),
            Err(e) => ToolOutput::error(format!("Glob failed: {e}")),
        }
    }

    /// Lists the files under the base, never entering `hidden`.
    fn list(&self, root: &Path, hidden: Vec<PathBuf>) -> Result<ToolOutput, String> {
        let filter = FileFilter::new(&self.globs)?;
        let skipped = Arc::new(SkipCounter::default());
        let mut files: Vec<String> = walk_builder(&self.base, hidden, skipped.clone())
            .build()
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_some_and(|t| !t.is_dir()))
            .filter(|entry| filter.matches(&self.base, entry.path()))
            .map(|entry| paths::relative(root, entry.path()))
            .collect();
        files.sort_unstable();
        let note = skipped.total().note().unwrap_or_default();
        let total = files.len();
        if total == 0 {
            let mut out = format!(
                "no files match {} under {}; patterns without `/` match file names at any \
                 depth, e.g. \"*.rs\"",
                self.globs.join(", "),
                self.base_rel
            );
            if !note.is_empty() {
                out = format!("{out}\n{note}");
            }
            return Ok(ToolOutput::ok(out, "0 files"));
        }
        files.truncate(self.max_results);
        let mut out = files.join("\n");
        out.push('\n');
        if total > self.max_results {
            out.push_str(&format!(
                "[{} of {total} files shown; narrow the globs or raise max_results]\n",
                self.max_results
            ));
        }
        out.push_str(&note);
        Ok(ToolOutput::ok(out, plural(total, "file", "files")))
    }
}

/// A walker over `base` that honours `.gitignore`/`.ignore` (even outside a git
/// repository, since an agent's workspace need not be one), includes hidden files and
/// skips `.git`. It never enters `hidden` (the secret stores and `$LINGGEN_HOME` below
/// `base`: see `sandbox::Secrets::under`), never yields a FIFO, socket or device, and
/// counts both in `skipped`.
pub(super) fn walk_builder(
    base: &Path,
    hidden: Vec<PathBuf>,
    skipped: Arc<SkipCounter>,
) -> WalkBuilder {
    let mut builder = WalkBuilder::new(base);
    builder
        .hidden(false)
        .require_git(false)
        .filter_entry(move |entry| {
            if entry.file_name() == ".git" {
                return false;
            }
            if entry
                .file_type()
                .is_some_and(|t| paths::special_kind(&t).is_some())
            {
                skipped.special.fetch_add(1, Ordering::Relaxed);
                return false;
            }
            if hidden.iter().any(|h| entry.path() == h) {
                skipped.hidden.fetch_add(1, Ordering::Relaxed);
                return false;
            }
            true
        });
    builder
}

/// What a walk left out on purpose, counted by its threads.
#[derive(Debug, Default)]
pub(super) struct SkipCounter {
    hidden: AtomicUsize,
    special: AtomicUsize,
}

impl SkipCounter {
    pub(super) fn total(&self) -> Skipped {
        Skipped {
            hidden: self.hidden.load(Ordering::Relaxed),
            special: self.special.load(Ordering::Relaxed),
        }
    }
}

/// What a Glob or Grep left out on purpose: the model hears it in one line, so it neither
/// thinks the files absent nor retries another way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Hidden paths not entered (secret stores, `$LINGGEN_HOME`, `[sandbox] deny_read`).
    pub hidden: usize,
    /// FIFOs, sockets and devices, never opened.
    pub special: usize,
}

impl Skipped {
    /// The lines to append to a result, each ending in a newline; `None` when nothing was
    /// skipped.
    pub fn note(self) -> Option<String> {
        let mut note = String::new();
        if self.hidden > 0 {
            note.push_str(&format!(
                "[{} skipped: secret stores, $LINGGEN_HOME and [sandbox] deny_read are hidden \
                 from the agent's tools; a person can open a secret store with [sandbox] \
                 allow_read]\n",
                plural(self.hidden, "hidden path", "hidden paths")
            ));
        }
        if self.special > 0 {
            note.push_str(&format!(
                "[{} skipped: FIFOs, sockets and devices are never opened]\n",
                plural(self.special, "special file", "special files")
            ));
        }
        (!note.is_empty()).then_some(note)
    }
}

/// Which files the globs select, in gitignore syntax relative to the search base: a
/// pattern without `/` matches a file name at any depth, one with `/` matches the path,
/// `!pattern` excludes. Applied to files only, so `*` does not pull the walker into
/// ignored directories (ignore's own overrides would whitelist them).
#[derive(Debug, Clone)]
pub(super) struct FileFilter {
    names: GlobSet,
    paths: GlobSet,
    excluded_names: GlobSet,
    excluded_paths: GlobSet,
    select_all: bool,
}

impl FileFilter {
    pub(super) fn new(globs: &[String]) -> Result<Self, String> {
        let mut sets: [GlobSetBuilder; 4] = std::array::from_fn(|_| GlobSetBuilder::new());
        let mut includes = 0;
        for raw in globs {
            let (negated, pattern) = match raw.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, raw.as_str()),
            };
            let pattern = pattern.trim_start_matches('/');
            let by_path = pattern.contains('/');
            let glob = GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("bad glob `{raw}`: {e}; use patterns like \"src/**/*.rs\""))?;
            let index = usize::from(by_path) + 2 * usize::from(negated);
            sets[index].add(glob);
            includes += usize::from(!negated);
        }
        let bad = |e: globset::Error| format!("bad globs: {e}; use fewer or simpler patterns");
        let [names, paths, excluded_names, excluded_paths] = sets;
        let (names, paths) = (names.build().map_err(bad)?, paths.build().map_err(bad)?);
        let excluded_names = excluded_names.build().map_err(bad)?;
        let excluded_paths = excluded_paths.build().map_err(bad)?;
        Ok(FileFilter {
            names,
            paths,
            excluded_names,
            excluded_paths,
            select_all: includes == 0,
        })
    }

    /// Whether the file at `path`, found by walking `base`, is selected.
    pub(super) fn matches(&self, base: &Path, path: &Path) -> bool {
        if self.select_all && self.excluded_names.is_empty() && self.excluded_paths.is_empty() {
            return true;
        }
        // When `base` is the file itself, its name is all there is to match.
        let rel = match path.strip_prefix(base) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel,
            _ => Path::new(path.file_name().unwrap_or(path.as_os_str())),
        };
        let name = rel.file_name().map_or(rel, Path::new);
        let included = self.select_all || self.names.is_match(name) || self.paths.is_match(rel);
        included && !self.excluded_names.is_match(name) && !self.excluded_paths.is_match(rel)
    }
}

pub(super) use crate::text::plural;

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn workspace() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for file in [
            "src/main.rs",
            "src/lib.rs",
            "src/tools/mod.rs",
            "README.md",
            "target/debug/build.rs",
            ".github/ci.yml",
            ".git/config",
        ] {
            let path = root.join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "x\n").unwrap();
        }
        fs::write(root.join(".gitignore"), "target/\n").unwrap();
        (dir, ToolContext::new(&root))
    }

    async fn glob(ctx: &ToolContext, args: Value) -> ToolOutput {
        match GlobArgs::parse(ctx, &args) {
            Ok(a) => a.run(ctx).await,
            Err(e) => e,
        }
    }

    #[tokio::test]
    async fn matches_sorted_and_ignore_aware() {
        let (_d, ctx) = workspace();
        let out = glob(&ctx, json!({"globs": ["**/*.rs"]})).await;
        assert_eq!(out.model, "src/lib.rs\nsrc/main.rs\nsrc/tools/mod.rs\n");
        assert_eq!(out.summary, "3 files");
        // A bare name pattern matches at any depth; a single string is accepted.
        let out = glob(&ctx, json!({"pattern": "mod.rs"})).await;
        assert_eq!(out.model, "src/tools/mod.rs\n");
    }

    #[tokio::test]
    async fn hidden_files_are_listed_but_git_is_not() {
        let (_d, ctx) = workspace();
        let out = glob(&ctx, json!({"globs": ["*"]})).await;
        assert!(out.model.contains(".github/ci.yml"), "{}", out.model);
        assert!(out.model.contains(".gitignore"));
        assert!(!out.model.contains(".git/config"));
        assert!(!out.model.contains("target/"));
    }

    #[tokio::test]
    async fn path_and_truncation() {
        let (_d, ctx) = workspace();
        let out = glob(&ctx, json!({"globs": ["*.rs"], "path": "src/tools"})).await;
        assert_eq!(out.model, "src/tools/mod.rs\n");
        let out = glob(&ctx, json!({"globs": ["*.rs"], "max_results": 1})).await;
        assert!(
            out.model.starts_with("src/lib.rs\n[1 of 3 files shown"),
            "{}",
            out.model
        );
    }

    #[tokio::test]
    async fn errors_and_empty_results() {
        let (_d, ctx) = workspace();
        let out = glob(&ctx, json!({"globs": ["*.zig"]})).await;
        assert!(!out.is_error && out.summary == "0 files");
        let out = glob(&ctx, json!({})).await;
        assert!(out.is_error && out.model.contains("needs `globs`"));
        let out = glob(&ctx, json!({"globs": ["*"], "path": "../"})).await;
        assert!(out.is_error && out.model.contains("outside"));
        let out = glob(&ctx, json!({"globs": ["[z-a]"]})).await;
        assert!(
            out.is_error && out.model.contains("bad glob"),
            "{}",
            out.model
        );
    }

    /// The root is `~`: a secret store's files are not listed, nor a FIFO; one line says
    /// so, and a store named as the path is refused.
    #[tokio::test]
    async fn secret_stores_and_fifos_are_not_listed() {
        use crate::tools::sandbox::{Sandbox, SandboxSettings};
        let (_d, mut ctx) = workspace();
        let root = ctx.root.clone();
        fs::create_dir_all(root.join(".ssh")).unwrap();
        fs::write(root.join(".ssh/id_rsa"), "KEY").unwrap();
        paths::mkfifo(&root.join("pipe"));
        ctx.sandbox = Arc::new(Sandbox::new(&root, SandboxSettings::default()).with_home(&root));
        let out = glob(&ctx, json!({"globs": ["*"]})).await;
        assert!(out.model.contains("src/main.rs"), "{}", out.model);
        assert!(
            !out.model.contains(".ssh/") && !out.model.contains("pipe\n"),
            "{}",
            out.model
        );
        assert!(
            out.model.contains("[1 hidden path skipped"),
            "{}",
            out.model
        );
        assert!(
            out.model.contains("[1 special file skipped"),
            "{}",
            out.model
        );
        let out = glob(&ctx, json!({"globs": ["*"], "path": ".ssh"})).await;
        assert!(
            out.is_error && out.model.contains("allow_read"),
            "{}",
            out.model
        );
    }
}
