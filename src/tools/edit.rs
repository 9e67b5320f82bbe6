//! `Edit`: exact string replacement in one file.
//!
//! Exactness is the point: the model must quote what it replaces, so a stale or wrong idea
//! of the file fails loudly instead of editing the wrong place. When the quote does not
//! match, the error says why as precisely as we can tell (line-number prefixes copied from
//! Read, indentation, several matches), because a small model retries with whatever the
//! error tells it.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::ToolName;
use super::diff;
use super::guard::paths::PathUse;
use super::write::{Existing, PATH_NAMES, current_text, off_runtime, save};
use super::{Access, ToolContext, ToolOutput, args};
use crate::protocol::ToolSpec;

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: ToolName::Edit.name().into(),
        description: "Replace exact text in a file. old_string, copied exactly, must match once unless replace_all."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean"}
            },
            "required": ["path", "old_string", "new_string"]
        }),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct EditArgs {
    pub raw_path: String,
    pub rel: String,
    pub abs: PathBuf,
    pub old: String,
    pub new: String,
    pub replace_all: bool,
}

const EXAMPLE: &str =
    r#"{"path": "src/main.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"}"#;

impl EditArgs {
    pub fn parse(ctx: &ToolContext, args: &Value) -> Result<Self, ToolOutput> {
        let raw_path = args::required_string(args, PATH_NAMES, ToolName::Edit.name(), EXAMPLE)?;
        let old =
            args::required_string(args, args::keys::OLD_STRING, ToolName::Edit.name(), EXAMPLE)?;
        let new =
            args::required_string(args, args::keys::NEW_STRING, ToolName::Edit.name(), EXAMPLE)?;
        let replace_all = args::boolean(args, args::keys::REPLACE_ALL)?.unwrap_or(false);
        if old == new {
            return Err(ToolOutput::error(
                "old_string and new_string are identical; nothing would change",
            ));
        }
        let resolved = ctx
            .resolve(&raw_path, PathUse::Write)
            .map_err(ToolOutput::error)?;
        Ok(EditArgs {
            raw_path,
            rel: resolved.rel,
            abs: resolved.abs,
            old,
            new,
            replace_all,
        })
    }

    pub fn summary(&self) -> String {
        format!("Edit {}", self.rel)
    }

    /// Checks the edit applies and computes its diff for the approval prompt.
    pub fn access(&self, ctx: &ToolContext) -> Result<Access, ToolOutput> {
        let (old, new, _) = self.plan(ctx).map_err(ToolOutput::error)?;
        Ok(Access::Write {
            path: self.abs.clone(),
            rel: self.rel.clone(),
            preview_diff: diff::unified(&self.rel, &old, &new).0,
        })
    }

    /// Runs on the blocking pool: resolving, reading and writing all touch the disk.
    pub async fn run(&self, ctx: &ToolContext) -> ToolOutput {
        let (args, ctx) = (self.clone(), ctx.clone());
        off_runtime(move || args.edit(&ctx)).await
    }

    fn edit(&self, ctx: &ToolContext) -> ToolOutput {
        // Re-checked and re-read: the file may have changed since the call was prepared.
        match ctx.resolve(&self.raw_path, PathUse::Write) {
            Ok(r) if r.abs == self.abs => {}
            Ok(_) => {
                return ToolOutput::error(format!(
                    "`{}` now resolves elsewhere (a symlink changed); read it again and retry",
                    self.rel
                ));
            }
            Err(e) => return ToolOutput::error(e),
        }
        let (old, new, count) = match self.plan(ctx) {
            Ok(plan) => plan,
            Err(e) => return ToolOutput::error(e),
        };
        if let Some(failed) = save(ctx, &self.abs, &self.rel, &new) {
            return failed;
        }
        let (diff, stat) = diff::unified(&self.rel, &old, &new);
        let what = if count == 1 {
            "1 occurrence".to_string()
        } else {
            format!("{count} occurrences")
        };
        ToolOutput::ok(
            format!("edited {}: replaced {what} ({})", self.rel, stat.label()),
            stat.label(),
        )
        .with_diff(diff)
    }

    /// The current content, the edited content and the number of replacements.
    fn plan(&self, ctx: &ToolContext) -> Result<(String, String, usize), String> {
        let rel = &self.rel;
        let content = match current_text(ctx, &self.abs) {
            Existing::Text(text) => text,
            // An empty old_string on a missing file creates it, as Claude's Edit does.
            Existing::Missing if self.old.is_empty() => String::new(),
            Existing::Missing => {
                return Err(format!(
                    "`{rel}` does not exist; create it with Write, or find the right path with Glob"
                ));
            }
            Existing::Unreadable(why) => return Err(format!("cannot edit `{rel}`: {why}")),
        };
        let (edited, count) = self.apply(&content)?;
        Ok((content, edited, count))
    }

    fn apply(&self, content: &str) -> Result<(String, usize), String> {
        if self.old.is_empty() {
            return if content.is_empty() {
                Ok((self.new.clone(), 1))
            } else {
                Err(format!(
                    "old_string is empty but `{}` is not; quote the text to replace, or use \
                     Write to replace the whole file",
                    self.rel
                ))
            };
        }
        let (old, new) = match content.matches(self.old.as_str()).count() {
            // A file with CRLF line ends and a quote with LF ones: the model cannot see the
            // difference, so translate rather than fail.
            0 if content.contains("\r\n") && !self.old.contains('\r') => (
                self.old.replace('\n', "\r\n"),
                self.new.replace("\r\n", "\n").replace('\n', "\r\n"),
            ),
            _ => (self.old.clone(), self.new.clone()),
        };
        let positions: Vec<usize> = content
            .match_indices(old.as_str())
            .map(|(i, _)| i)
            .collect();
        match positions.len() {
            0 => Err(self.not_found(content)),
            1 => Ok((content.replacen(old.as_str(), &new, 1), 1)),
            n if self.replace_all => Ok((content.replace(old.as_str(), &new), n)),
            n => {
                let mut lines: Vec<String> = positions
                    .iter()
                    .take(10)
                    .map(|&i| (content[..i].matches('\n').count() + 1).to_string())
                    .collect();
                if n > 10 {
                    lines.push("...".into());
                }
                Err(format!(
                    "old_string matches {n} times in `{}` (lines {}); add surrounding lines \
                     to make it unique, or set replace_all to change every occurrence",
                    self.rel,
                    lines.join(", ")
                ))
            }
        }
    }

    fn not_found(&self, content: &str) -> String {
        let rel = &self.rel;
        let quoted: Vec<&str> = self.old.lines().collect();
        if !quoted.is_empty() && quoted.iter().all(|l| has_line_number_prefix(l)) {
            return format!(
                "old_string was not found in `{rel}`; it starts with line numbers copied from \
                 Read output (`  12\\t`). Remove them and quote only the file's text"
            );
        }
        let trimmed: Vec<&str> = quoted.iter().map(|l| l.trim()).collect();
        let file_lines: Vec<&str> = content.lines().map(str::trim).collect();
        if !trimmed.is_empty()
            && trimmed.len() <= file_lines.len()
            && let Some(at) = file_lines
                .windows(trimmed.len())
                .position(|window| window == trimmed.as_slice())
        {
            return format!(
                "old_string was not found in `{rel}` exactly, but text differing only in \
                     whitespace or indentation starts at line {}; Read that part and copy it \
                     exactly",
                at + 1
            );
        }
        format!(
            "old_string was not found in `{rel}`; Read the file and copy the exact text to \
             replace, including whitespace"
        )
    }
}

/// `   12\tfoo`: the `cat -n` prefix Read puts before each line.
fn has_line_number_prefix(line: &str) -> bool {
    let rest = line.trim_start();
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && rest[digits..].starts_with('\t')
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn setup(content: &str) -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f.rs"), content).unwrap();
        let ctx = ToolContext::new(&dir.path().canonicalize().unwrap());
        (dir, ctx)
    }

    async fn edit(ctx: &ToolContext, args: Value) -> ToolOutput {
        let args = match EditArgs::parse(ctx, &args) {
            Ok(a) => a,
            Err(e) => return e,
        };
        if let Err(e) = args.access(ctx) {
            return e;
        }
        args.run(ctx).await
    }

    fn content(dir: &tempfile::TempDir) -> String {
        fs::read_to_string(dir.path().join("f.rs")).unwrap()
    }

    #[tokio::test]
    async fn single_match_is_replaced_with_diff() {
        let (dir, ctx) = setup("let a = 1;\nlet b = 2;\n");
        let out = edit(
            &ctx,
            json!({"path": "f.rs", "old_string": "b = 2", "new_string": "b = 3"}),
        )
        .await;
        assert!(!out.is_error, "{}", out.model);
        assert_eq!(out.summary, "+1 -1");
        assert!(out.diff.unwrap().contains("-let b = 2;\n+let b = 3;\n"));
        assert_eq!(content(&dir), "let a = 1;\nlet b = 3;\n");
    }

    #[tokio::test]
    async fn zero_matches_explain() {
        let (dir, ctx) = setup("fn main() {\n    go();\n}\n");
        let out = edit(&ctx, json!({"path": "f.rs", "old": "stop();", "new": "x"})).await;
        assert!(
            out.is_error && out.model.contains("not found"),
            "{}",
            out.model
        );
        let out = edit(
            &ctx,
            json!({"path": "f.rs", "old": "  go();\n  }", "new": "x"}),
        )
        .await;
        assert!(
            out.model.contains("whitespace") && out.model.contains("line 2"),
            "{}",
            out.model
        );
        let out = edit(
            &ctx,
            json!({"path": "f.rs", "old": "     2\t    go();", "new": "x"}),
        )
        .await;
        assert!(out.model.contains("line numbers"), "{}", out.model);
        assert_eq!(content(&dir), "fn main() {\n    go();\n}\n");
    }

    #[tokio::test]
    async fn many_matches_need_replace_all() {
        let (dir, ctx) = setup("x\ny\nx\nx\n");
        let out = edit(
            &ctx,
            json!({"path": "f.rs", "old_text": "x", "new_text": "z"}),
        )
        .await;
        assert!(out.is_error);
        assert!(
            out.model.contains("matches 3 times") && out.model.contains("lines 1, 3, 4"),
            "{}",
            out.model
        );
        assert!(out.model.contains("replace_all"));
        let out = edit(
            &ctx,
            json!({"filepath": "f.rs", "oldText": "x", "newText": "z", "replace_all": true}),
        )
        .await;
        assert!(!out.is_error);
        assert!(out.model.contains("3 occurrences"));
        assert_eq!(content(&dir), "z\ny\nz\nz\n");
    }

    #[tokio::test]
    async fn aliases_crlf_and_creation() {
        let (dir, ctx) = setup("a\r\nb\r\n");
        let out = edit(
            &ctx,
            json!({"file": "f.rs", "search": "a\nb", "replace": "c\nd"}),
        )
        .await;
        assert!(!out.is_error, "{}", out.model);
        assert_eq!(content(&dir), "c\r\nd\r\n");
        let out = edit(
            &ctx,
            json!({"file_path": "new.rs", "from": "", "to": "hi\n"}),
        )
        .await;
        assert!(!out.is_error, "{}", out.model);
        assert_eq!(
            fs::read_to_string(dir.path().join("new.rs")).unwrap(),
            "hi\n"
        );
        let out = edit(&ctx, json!({"path": "missing.rs", "old": "a", "new": "b"})).await;
        assert!(out.is_error && out.model.contains("Write"));
        let out = edit(&ctx, json!({"path": "f.rs", "old": "c", "new": "c"})).await;
        assert!(out.is_error && out.model.contains("identical"));
        let out = edit(&ctx, json!({"path": "f.rs", "new_string": "c"})).await;
        assert!(
            out.is_error && out.model.contains("needs `old_string`"),
            "{}",
            out.model
        );
    }

    #[tokio::test]
    async fn preview_diff_matches_the_edit() {
        let (_dir, ctx) = setup("one\n");
        let args =
            EditArgs::parse(&ctx, &json!({"path": "f.rs", "old": "one", "new": "two"})).unwrap();
        let Ok(Access::Write {
            preview_diff: Some(diff),
            ..
        }) = args.access(&ctx)
        else {
            panic!("expected a write with a diff");
        };
        assert!(diff.contains("-one\n+two\n"));
    }
}
