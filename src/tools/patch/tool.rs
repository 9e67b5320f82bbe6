//! `propose_patch` and `apply_patch`: a unified diff checked against the workspace (paths,
//! protected files, hunks that apply); `propose_patch` stops there and reports, while
//! `apply_patch` writes every file once the whole patch checks. Auto mode's `patch` action
//! is an `apply_patch` call, so both modes share the checks, the permissions and the record.

use serde_json::{Value, json};

use super::{Checked, check};
use crate::protocol::ToolSpec;
use crate::tools::diff::{self, DiffStat};
use crate::tools::{Access, ToolContext, ToolName, ToolOutput, args};

pub fn propose_spec() -> ToolSpec {
    ToolSpec {
        name: ToolName::ProposePatch.name().into(),
        description: "Check that a unified diff applies; writes nothing.".into(),
        parameters: diff_parameters(),
    }
}

pub fn apply_spec() -> ToolSpec {
    ToolSpec {
        name: ToolName::ApplyPatch.name().into(),
        description: "Apply a unified diff (---/+++ headers, @@ hunks).".into(),
        parameters: diff_parameters(),
    }
}

fn diff_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {"diff": {"type": "string"}},
        "required": ["diff"]
    })
}

/// A patch call, checked when prepared (so the approval shows what it will write) and
/// checked again when it runs (the files may have changed while a person looked).
#[derive(Debug, Clone, PartialEq)]
pub struct PatchArgs {
    pub diff: String,
    /// `apply_patch` (writes) rather than `propose_patch` (reports only).
    pub apply: bool,
    files: Vec<String>,
    preview: Option<String>,
    stat: DiffStat,
    too_big: bool,
}

impl PatchArgs {
    pub fn parse(ctx: &ToolContext, tool: ToolName, args: &Value) -> Result<Self, ToolOutput> {
        let example =
            r#"{"diff": "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1 @@\n-old\n+new\n"}"#;
        let diff = args::required_string(args, &["diff", "patch", "input"], tool.name(), example)?;
        let verdict = if tool == ToolName::ApplyPatch {
            "the patch was not applied"
        } else {
            "the patch does not apply"
        };
        let checked =
            check(ctx, &diff).map_err(|why| ToolOutput::error(format!("{verdict}: {why}")))?;
        let (preview, stat) = preview(&checked);
        Ok(PatchArgs {
            diff,
            apply: tool == ToolName::ApplyPatch,
            files: checked.changes.iter().map(|c| c.rel.clone()).collect(),
            preview,
            stat,
            too_big: checked.needs_confirmation(),
        })
    }

    pub fn summary(&self) -> String {
        let verb = if self.apply {
            "apply_patch"
        } else {
            "propose_patch"
        };
        format!("{verb} {} ({})", self.files.join(", "), self.stat.label())
    }

    pub fn access(&self) -> Access {
        if !self.apply {
            return Access::Read;
        }
        let confirm = self.too_big.then(|| {
            format!(
                "the patch is large ({} files, {}): above {} lines or {} files a person confirms it",
                self.files.len(),
                self.stat.label(),
                super::CONFIRM_ABOVE_LINES,
                super::CONFIRM_ABOVE_FILES
            )
        });
        Access::Patch {
            files: self.files.clone(),
            preview_diff: self.preview.clone(),
            confirm,
        }
    }

    /// Runs on the blocking pool: checking and writing touch the disk.
    pub async fn run(&self, ctx: &ToolContext) -> ToolOutput {
        let (args, ctx) = (self.clone(), ctx.clone());
        crate::tools::write::off_runtime(move || args.carry_out(&ctx)).await
    }

    fn carry_out(&self, ctx: &ToolContext) -> ToolOutput {
        let checked = match check(ctx, &self.diff) {
            Ok(checked) => checked,
            Err(why) => return ToolOutput::error(format!("the patch was not applied: {why}")),
        };
        let (preview, stat) = preview(&checked);
        let files = checked
            .changes
            .iter()
            .map(|c| c.rel.as_str())
            .collect::<Vec<_>>();
        if !self.apply {
            let model = format!(
                "the patch applies cleanly: {} ({}); nothing was written — use apply_patch to write it",
                files.join(", "),
                stat.label()
            );
            return ToolOutput::ok(model, format!("applies cleanly, {}", stat.label()))
                .with_diff(preview);
        }
        // The approval covered these files; a patch that now touches others asks again.
        if files != self.files {
            return ToolOutput::error(
                "the files changed while the patch waited, and it now touches other files; \
                 read them again and send a new patch",
            );
        }
        if let Err(failed) = write_all(&checked) {
            return failed;
        }
        let model = format!("applied the patch: {} ({})", files.join(", "), stat.label());
        ToolOutput::ok(model, format!("applied, {}", stat.label())).with_diff(preview)
    }

    /// The files the patch changes, relative to the root.
    pub fn files(&self) -> &[String] {
        &self.files
    }
}

/// Writes every change: each new version is staged beside its file first, and only when
/// all are on disk are they put in place (and deleted files removed). The patch was checked
/// as a whole, so a write fails on the machine's account (a full disk), and then no file
/// changes. Only a failure between the renames, which a disk hardly ever gives, leaves part
/// of the patch written; the message then names that part.
fn write_all(checked: &Checked) -> Result<(), ToolOutput> {
    use crate::tools::write::{StagedFile, stage_file};
    let mut staged: Vec<Option<StagedFile>> = Vec::new();
    for change in &checked.changes {
        let stage = match &change.after {
            Some(text) => stage_file(&change.abs, text).map(Some),
            None => Ok(None),
        };
        match stage {
            Ok(file) => staged.push(file),
            Err(e) => return Err(failed(&change.rel, &e, &[])),
        }
    }
    let mut done: Vec<&str> = Vec::new();
    for (change, file) in checked.changes.iter().zip(staged) {
        let result = match file {
            Some(file) => file.commit(),
            None => {
                std::fs::remove_file(&change.abs).map_err(|source| crate::durable::WriteError::Io {
                    step: crate::durable::Step::Remove,
                    path: change.abs.clone(),
                    source,
                })
            }
        };
        if let Err(e) = result {
            return Err(failed(&change.rel, &e, &done));
        }
        done.push(&change.rel);
    }
    Ok(())
}

/// Why the patch was not (wholly) applied, naming what was written before the failure.
fn failed(rel: &str, error: &crate::durable::WriteError, done: &[&str]) -> ToolOutput {
    let written = if done.is_empty() {
        "the patch was not applied: no file was changed".to_string()
    } else {
        format!(
            "the rest of the patch was not applied; already written: {}",
            done.join(", ")
        )
    };
    let message = format!("cannot write `{rel}`: {} — {written}", error.reason());
    match error.fault() {
        Some(fault) => ToolOutput::storage_fault(message, fault),
        None => ToolOutput::error(message),
    }
}

/// The patch as a person reads it: a diff of each file as it will be, not the model's
/// text (which may have wrong counts or context).
fn preview(checked: &Checked) -> (Option<String>, DiffStat) {
    let mut text = String::new();
    let mut total = DiffStat::default();
    for change in &checked.changes {
        let before = change.before.as_deref().unwrap_or_default();
        let after = change.after.as_deref().unwrap_or_default();
        let (part, stat) = diff::unified(&change.rel, before, after);
        total.added += stat.added;
        total.removed += stat.removed;
        if let Some(part) = part {
            text.push_str(&part);
            if !text.ends_with('\n') {
                text.push('\n');
            }
        }
    }
    ((!text.is_empty()).then_some(text), total)
}
