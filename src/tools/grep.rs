//! `Grep`: regex search over the workspace with ripgrep's engine (grep-regex, grep-searcher,
//! ignore's parallel walker). [`search`] is public so `benches/` can time it against `rg`.
//!
//! Speed comes from the same places as ripgrep's: one walker thread per core, one
//! `Searcher` per thread reused across files, a matcher that knows the line terminator (so
//! it searches whole buffers and only finds line boundaries around a match), no
//! allocation except for matches, and a global counter that stops every thread once
//! enough matches are found. Because threads race, a truncated result is *a* set of
//! matches, not the first ones in path order; the output says so.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use serde_json::{Value, json};

use super::ToolName;
use super::glob::{self, FileFilter, SkipCounter, Skipped, plural, walk_builder};
use super::guard::paths;
use super::{ToolContext, ToolOutput, args};
use crate::protocol::ToolSpec;

/// Matched lines longer than this are cut; minified files would flood the context.
const MAX_LINE_CHARS: usize = 300;
/// The most context lines asked around a match.
const MAX_CONTEXT: usize = 20;

/// The globs of a ripgrep file type (`rust`, `rs`, `py`, `js`, …); the error names the
/// type and how to use globs instead.
fn type_globs(kind: &str) -> Result<Vec<String>, ToolOutput> {
    let mut types = ignore::types::TypesBuilder::new();
    types.add_defaults();
    let kind = kind.trim();
    // Extensions people use as types: `rs`, `py`, `ts`.
    let aliases = [
        ("rs", "rust"),
        ("py", "python"),
        ("ts", "ts"),
        ("js", "js"),
        ("md", "markdown"),
    ];
    let name = aliases
        .iter()
        .find(|(alias, _)| *alias == kind)
        .map_or(kind, |(_, name)| *name);
    types
        .definitions()
        .into_iter()
        .find(|d| d.name() == name)
        .map(|d| d.globs().to_vec())
        .ok_or_else(|| {
            ToolOutput::error(format!(
                "unknown file type `{kind}`; use a ripgrep type such as rust, py, js, ts, go, \
                 or give globs, e.g. \"glob\": \"*.rs\""
            ))
        })
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: ToolName::Grep.name().into(),
        description: "Search file contents with a regex (gitignore-aware). Returns path:line:text."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Rust regex syntax."},
                "globs": {"type": "array", "items": {"type": "string"}},
                "path": {"type": "string"},
                "case_insensitive": {"type": "boolean"},
                "max_results": {"type": "integer"}
            },
            "required": ["query"]
        }),
    }
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepMatch {
    /// Relative to the root, `/`-separated.
    pub path: String,
    pub line: u64,
    /// The line without its terminator, cut to a few hundred characters.
    pub text: String,
    /// A line around a match (`-A`, `-B`, `-C`), not a match itself.
    pub context: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GrepResult {
    /// Sorted by path, then line.
    pub matches: Vec<GrepMatch>,
    /// More matches exist than were returned.
    pub truncated: bool,
    /// What was not searched on purpose.
    pub skipped: Skipped,
}

/// Options beyond the query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchOptions {
    pub globs: Vec<String>,
    pub max_results: usize,
    pub case_insensitive: bool,
    /// Lines of context before and after each match.
    pub before: usize,
    pub after: usize,
    /// Walker threads; 0 picks one per core (at most 12, ignore's default).
    pub threads: usize,
    /// Paths below the base never entered (`sandbox::Secrets::under`).
    pub hidden: Vec<PathBuf>,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            globs: Vec::new(),
            max_results: glob::DEFAULT_MAX_RESULTS,
            case_insensitive: false,
            before: 0,
            after: 0,
            threads: 0,
            hidden: Vec::new(),
        }
    }
}

/// A search that cannot start: the query or a glob does not compile. Each message tells the
/// model how to write it instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    #[error(
        "bad regex `{query}`: {reason}. Escape special characters such as ( [ {{ . * + ? with \
         a backslash to search for them literally"
    )]
    Regex { query: String, reason: String },
    /// The message names the glob.
    #[error("{0}")]
    Glob(String),
}

/// Searches every file under `root` for `query`. The error is a message for the model
/// (bad regex, bad glob).
pub fn search(
    root: &Path,
    query: &str,
    globs: &[String],
    max_results: usize,
) -> Result<GrepResult, SearchError> {
    let options = SearchOptions {
        globs: globs.to_vec(),
        max_results,
        ..SearchOptions::default()
    };
    search_in(root, root, query, &options)
}

/// Searches under `base` (a directory or file inside `root`); paths are reported relative
/// to `root`.
pub fn search_in(
    root: &Path,
    base: &Path,
    query: &str,
    options: &SearchOptions,
) -> Result<GrepResult, SearchError> {
    let matcher = regex_matcher(query, options.case_insensitive)?;
    let max = options.max_results.max(1);
    let filter = FileFilter::new(&options.globs).map_err(SearchError::Glob)?;
    let skipped = Arc::new(SkipCounter::default());
    let walker = walk_builder(base, options.hidden.clone(), skipped.clone())
        .threads(options.threads)
        .build_parallel();
    let walk = SharedWalk {
        root,
        base,
        filter: &filter,
        found: AtomicUsize::new(0),
        results: Mutex::new(Vec::new()),
        max,
    };
    walker.run(|| {
        let matcher = matcher.clone();
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(options.before)
            .after_context(options.after)
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .build();
        let walk = &walk;
        Box::new(move |entry| walk.visit(&mut searcher, &matcher, entry))
    });
    let matches = walk
        .results
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (matches, truncated) = first_matches(matches, max);
    Ok(GrepResult {
        matches,
        truncated,
        skipped: skipped.total(),
    })
}

/// The query as a line-oriented regex; the error tells the model how to search literally.
fn regex_matcher(query: &str, case_insensitive: bool) -> Result<RegexMatcher, SearchError> {
    RegexMatcherBuilder::new()
        .case_insensitive(case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(query)
        .map_err(|e| SearchError::Regex {
            query: query.to_string(),
            reason: e.to_string(),
        })
}

/// What every walker thread shares: where to search, which files, and the matches so far.
struct SharedWalk<'a> {
    root: &'a Path,
    base: &'a Path,
    filter: &'a FileFilter,
    /// Counts up to max + 1 so that "more exist" is known without searching further.
    found: AtomicUsize,
    results: Mutex<Vec<GrepMatch>>,
    max: usize,
}

impl SharedWalk<'_> {
    /// Searches one walked entry if it is a wanted regular file; quits once enough matched.
    fn visit(
        &self,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
        entry: Result<ignore::DirEntry, ignore::Error>,
    ) -> WalkState {
        if self.found.load(Ordering::Relaxed) > self.max {
            return WalkState::Quit;
        }
        let Ok(entry) = entry else {
            return WalkState::Continue;
        };
        // Symlinks are not followed (the walker's default), so nothing outside the
        // root is searched, nor a hidden path through a link to it.
        if !entry.file_type().is_some_and(|t| t.is_file())
            || !self.filter.matches(self.base, entry.path())
        {
            return WalkState::Continue;
        }
        // Opened without waiting, and searched only if it is still a regular file (a
        // FIFO swapped in since the directory was read is skipped).
        let Ok(file) = paths::open_regular(entry.path(), "") else {
            return WalkState::Continue;
        };
        let mut sink = Collector {
            root: self.root,
            path: entry.path(),
            rel: None,
            local: Vec::new(),
            found: &self.found,
            max: self.max,
        };
        // Unreadable files are skipped, as ripgrep does without --debug.
        let _ = searcher.search_file(matcher, &file, &mut sink);
        if !sink.local.is_empty()
            && let Ok(mut all) = self.results.lock()
        {
            all.append(&mut sink.local);
        }
        if self.found.load(Ordering::Relaxed) > self.max {
            WalkState::Quit
        } else {
            WalkState::Continue
        }
    }
}

/// The matches in path and line order, cut after `max` of them (context lines come with
/// the matches kept), and whether any were cut.
fn first_matches(mut matches: Vec<GrepMatch>, max: usize) -> (Vec<GrepMatch>, bool) {
    matches.sort_unstable_by(|a, b| a.path.cmp(&b.path).then(a.line.cmp(&b.line)));
    let mut kept = Vec::with_capacity(matches.len().min(max.saturating_mul(2)));
    let (mut seen, mut truncated) = (0, false);
    for m in matches {
        if !m.context {
            seen += 1;
            if seen > max {
                truncated = true;
                break;
            }
        }
        kept.push(m);
    }
    (kept, truncated)
}

/// Collects one file's matches; the path string is built only if something matches.
struct Collector<'a> {
    root: &'a Path,
    path: &'a Path,
    rel: Option<String>,
    local: Vec<GrepMatch>,
    found: &'a AtomicUsize,
    max: usize,
}

impl Sink for Collector<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let n = self.found.fetch_add(1, Ordering::Relaxed) + 1;
        // Saturating: a benchmark asks for `usize::MAX` results.
        if n > self.max.saturating_add(1) {
            return Ok(false);
        }
        self.keep(mat.bytes(), mat.line_number(), false);
        Ok(n <= self.max)
    }

    fn context(&mut self, _searcher: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        self.keep(ctx.bytes(), ctx.line_number(), true);
        Ok(true)
    }
}

impl Collector<'_> {
    /// Keeps one line (a match, or context around one) without its terminator.
    fn keep(&mut self, bytes: &[u8], line: Option<u64>, context: bool) {
        let (root, path) = (self.root, self.path);
        let rel = self
            .rel
            .get_or_insert_with(|| paths::relative(root, path))
            .clone();
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        self.local.push(GrepMatch {
            path: rel,
            line: line.unwrap_or(0),
            text: clip(&String::from_utf8_lossy(bytes)),
            context,
        });
    }
}

fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_LINE_CHARS) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct GrepArgs {
    pub query: String,
    pub globs: Vec<String>,
    pub base: PathBuf,
    pub base_rel: String,
    pub max_results: usize,
    pub case_insensitive: bool,
    /// Context lines before and after each match (`-B`, `-A`, `-C`).
    pub before: usize,
    pub after: usize,
    pub mode: OutputMode,
}

/// What Grep returns (Claude Code's `output_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// `path:line:text` per matching line (the default).
    Content,
    /// Each file with a match, once.
    FilesWithMatches,
    /// `path:count` per file.
    Count,
}

/// Keys a query may come under. `pattern` is Claude Code's name for it; when one of these
/// is given too, `pattern` is taken as a file glob instead (what Glob calls it).
const QUERY_KEYS: &[&str] = args::keys::QUERY;

impl GrepArgs {
    pub fn parse(ctx: &ToolContext, args: &Value) -> Result<Self, ToolOutput> {
        let has_query = QUERY_KEYS
            .iter()
            .any(|k| args.get(*k).is_some_and(|v| !v.is_null()));
        let (query_keys, glob_keys): (&[&'static str], &[&'static str]) = if has_query {
            (QUERY_KEYS, &["globs", "glob", "include", "pattern"])
        } else {
            (&["pattern"], &["globs", "glob", "include"])
        };
        let query = args::required_string(
            args,
            query_keys,
            ToolName::Grep.name(),
            r#"{"query": "fn main", "globs": ["*.rs"]}"#,
        )?;
        if query.is_empty() {
            return Err(ToolOutput::error(
                "the query is empty; give a regex or a plain word to search for",
            ));
        }
        let (mut globs, base, base_rel) = glob::parse_scope(ctx, args, glob_keys)?;
        // ripgrep's file types (`type: "rust"`, `"py"`) as the globs they stand for.
        if let Some(kind) = args::string(args, &["type", "file_type", "filetype"])? {
            globs.extend(type_globs(&kind)?);
        }
        let context = args::uint(args, &["-C", "context", "C"])?.unwrap_or(0);
        let before = args::uint(args, &["-B", "before_context", "B"])?.unwrap_or(context);
        let after = args::uint(args, &["-A", "after_context", "A"])?.unwrap_or(context);
        // `-n` (line numbers) is accepted: every line already has its number.
        let _ = args::boolean(args, &["-n", "line_numbers"])?;
        let mode = match args::string(args, &["output_mode", "outputMode", "mode"])?.as_deref() {
            None | Some("content") => OutputMode::Content,
            Some("files_with_matches" | "files") => OutputMode::FilesWithMatches,
            Some("count") => OutputMode::Count,
            Some(other) => {
                return Err(ToolOutput::error(format!(
                    "unknown output_mode `{other}`; use content, files_with_matches or count"
                )));
            }
        };
        let case_insensitive = args::boolean(
            args,
            &[
                "case_insensitive",
                "ignore_case",
                "caseInsensitive",
                "-i",
                "i",
            ],
        )?
        .unwrap_or(false);
        Ok(GrepArgs {
            query,
            globs,
            base,
            base_rel,
            max_results: glob::max_results(args)?,
            case_insensitive,
            before: (before as usize).min(MAX_CONTEXT),
            after: (after as usize).min(MAX_CONTEXT),
            mode,
        })
    }

    pub fn summary(&self) -> String {
        let mut s = format!("Grep `{}`", self.query);
        if self.base_rel != "." {
            s.push_str(&format!(" in {}", self.base_rel));
        }
        if !self.globs.is_empty() {
            s.push_str(&format!(" ({})", self.globs.join(" ")));
        }
        s
    }

    pub async fn run(&self, ctx: &ToolContext) -> ToolOutput {
        let (args, sandbox) = (self.clone(), ctx.sandbox.clone());
        let root = paths::canonical_root(&ctx.root);
        let job = move || {
            let options = SearchOptions {
                globs: args.globs.clone(),
                max_results: args.max_results,
                case_insensitive: args.case_insensitive,
                before: args.before,
                after: args.after,
                threads: 0,
                hidden: sandbox.secrets().under(&args.base),
            };
            search_in(&root, &args.base, &args.query, &options).map(|r| args.render(r))
        };
        match tokio::task::spawn_blocking(job).await {
            Ok(Ok(output)) => output,
            Ok(Err(message)) => ToolOutput::error(message),
            Err(e) => ToolOutput::error(format!("Grep failed: {e}")),
        }
    }

    fn render(&self, result: GrepResult) -> ToolOutput {
        let note = result.skipped.note().unwrap_or_default();
        if result.matches.is_empty() {
            let within = match self.base_rel.as_str() {
                "." => String::new(),
                dir => format!(" in {dir}"),
            };
            let mut out = format!(
                "no matches for `{}`{within}; try a simpler regex, case_insensitive, or other \
                 globs",
                self.query
            );
            if !note.is_empty() {
                out = format!("{out}\n{note}");
            }
            return ToolOutput::ok(out, "0 matches");
        }
        let mut out = String::new();
        let mut per_file: Vec<(&str, usize)> = Vec::new();
        let mut last: Option<(&str, u64)> = None;
        for m in &result.matches {
            if !m.context {
                match per_file.last_mut() {
                    Some((path, n)) if *path == m.path => *n += 1,
                    _ => per_file.push((&m.path, 1)),
                }
            }
            if self.mode != OutputMode::Content {
                continue;
            }
            // Like ripgrep: `path:12:match`, `path-11-context`, `--` between groups.
            let gap = last.is_some_and(|(path, line)| path != m.path || m.line > line + 1);
            if gap && (self.before > 0 || self.after > 0) {
                out.push_str("--\n");
            }
            let sep = if m.context { '-' } else { ':' };
            out.push_str(&format!("{}{sep}{}{sep}{}\n", m.path, m.line, m.text));
            last = Some((&m.path, m.line));
        }
        for (path, count) in &per_file {
            match self.mode {
                OutputMode::Content => {}
                OutputMode::FilesWithMatches => out.push_str(&format!("{path}\n")),
                OutputMode::Count => out.push_str(&format!("{path}:{count}\n")),
            }
        }
        let matched = per_file.iter().map(|(_, n)| n).sum();
        let summary = format!(
            "{} in {}",
            plural(matched, "match", "matches"),
            plural(per_file.len(), "file", "files")
        );
        if result.truncated {
            out.push_str(&format!(
                "[stopped at {} matches; more exist. Narrow the query, path or globs, or raise \
                 max_results]\n",
                matched
            ));
            out.push_str(&note);
            return ToolOutput::ok(out, format!("{summary} (truncated)"));
        }
        out.push_str(&note);
        ToolOutput::ok(out, summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn workspace() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let files: &[(&str, &[u8])] = &[
            ("src/main.rs", b"fn main() {\n    helper();\n}\n"),
            ("src/lib.rs", b"pub fn helper() {}\n// Helper docs\n"),
            ("notes.md", b"helper in prose\n"),
            ("target/gen.rs", b"fn helper_generated() {}\n"),
            ("bin.dat", b"helper\0\x01\x02"),
            (".gitignore", b"target/\n"),
        ];
        for (path, content) in files {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, content).unwrap();
        }
        (dir, root)
    }

    fn lines(result: &GrepResult) -> Vec<String> {
        result
            .matches
            .iter()
            .map(|m| format!("{}:{}:{}", m.path, m.line, m.text))
            .collect()
    }

    #[test]
    fn finds_sorted_matches_and_respects_ignores() {
        let (_d, root) = workspace();
        let result = search(&root, "helper", &[], 100).unwrap();
        assert_eq!(
            lines(&result),
            [
                "notes.md:1:helper in prose",
                "src/lib.rs:1:pub fn helper() {}",
                "src/main.rs:2:    helper();",
            ]
        );
        assert!(!result.truncated);
    }

    #[test]
    fn globs_case_and_truncation() {
        let (_d, root) = workspace();
        let only_rs = search(&root, "helper", &["*.rs".to_string()], 100).unwrap();
        assert_eq!(only_rs.matches.len(), 2);
        let options = SearchOptions {
            case_insensitive: true,
            ..SearchOptions::default()
        };
        let ci = search_in(&root, &root.join("src"), "HELPER", &options).unwrap();
        assert_eq!(ci.matches.len(), 3);
        let all = search(&root, "helper", &[], usize::MAX).unwrap();
        assert_eq!(all.matches.len(), 3);
        let capped = search(&root, "helper", &[], 2).unwrap();
        assert_eq!(capped.matches.len(), 2);
        assert!(capped.truncated);
    }

    #[test]
    fn single_file_base_and_exclusions() {
        let (_d, root) = workspace();
        let options = SearchOptions {
            globs: vec!["*.rs".into()],
            ..SearchOptions::default()
        };
        let one = search_in(&root, &root.join("src/main.rs"), "helper", &options).unwrap();
        assert_eq!(lines(&one), ["src/main.rs:2:    helper();"]);
        let excluded = search(&root, "helper", &["!src/lib.rs".to_string()], 10).unwrap();
        let paths: Vec<_> = excluded.matches.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(paths, ["notes.md", "src/main.rs"]);
    }

    #[test]
    fn bad_regex_is_explained() {
        let (_d, root) = workspace();
        let err = search(&root, "fn (", &[], 10).unwrap_err().to_string();
        assert!(
            err.contains("bad regex") && err.contains("backslash"),
            "{err}"
        );
    }

    #[test]
    fn long_lines_are_clipped() {
        let (_d, root) = workspace();
        fs::write(
            root.join("long.txt"),
            format!("needle{}\n", "x".repeat(1000)),
        )
        .unwrap();
        let result = search(&root, "needle", &[], 10).unwrap();
        assert_eq!(result.matches[0].text.chars().count(), MAX_LINE_CHARS + 1);
    }

    #[tokio::test]
    async fn tool_output_and_aliases() {
        let (_d, root) = workspace();
        let ctx = ToolContext::new(&root);
        let args = GrepArgs::parse(&ctx, &json!({"pattern": "helper", "glob": "*.rs"})).unwrap();
        let out = args.run(&ctx).await;
        assert_eq!(out.summary, "2 matches in 2 files");
        assert_eq!(
            out.model,
            "src/lib.rs:1:pub fn helper() {}\nsrc/main.rs:2:    helper();\n"
        );
        let args = GrepArgs::parse(&ctx, &json!({"regex": "zzz"})).unwrap();
        assert_eq!(args.run(&ctx).await.summary, "0 matches");
        let args = GrepArgs::parse(&ctx, &json!({"query": "("})).unwrap();
        let out = args.run(&ctx).await;
        assert!(out.is_error && out.model.contains("bad regex"));
    }

    /// The root is `~`: Grep over it never returns a secret store's lines, says in one line
    /// that it skipped some, and passes a FIFO by without waiting on it.
    #[tokio::test]
    async fn secret_stores_and_fifos_are_skipped_and_counted() {
        use crate::tools::sandbox::{Sandbox, SandboxSettings};
        let (_d, root) = workspace();
        fs::create_dir_all(root.join(".aws")).unwrap();
        fs::write(root.join(".aws/credentials"), "helper_secret = SECRET\n").unwrap();
        paths::mkfifo(&root.join("pipe"));
        let mut ctx = ToolContext::new(&root);
        ctx.sandbox = Arc::new(Sandbox::new(&root, SandboxSettings::default()).with_home(&root));
        let args = GrepArgs::parse(&ctx, &json!({"query": "helper"})).unwrap();
        let out = tokio::time::timeout(std::time::Duration::from_secs(20), args.run(&ctx))
            .await
            .expect("Grep waited on the FIFO");
        assert!(!out.model.contains("SECRET"), "{}", out.model);
        assert!(out.model.contains("src/main.rs:2:"), "{}", out.model);
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
        // Named directly, the store is refused outright.
        let err = GrepArgs::parse(&ctx, &json!({"query": "x", "path": ".aws"})).unwrap_err();
        assert!(err.model.contains("secret store"), "{}", err.model);
    }
}
