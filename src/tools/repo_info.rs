//! `get_repo_info`: where the agent is and what state the repository is in.

use std::ffi::OsString;
use std::process::Stdio;
use std::time::Duration;

use super::launch::{self, Confinement, LaunchError, Lifetime, ProgramError};
use serde_json::json;

use super::ToolName;
use super::guard::paths;
use super::{ToolContext, ToolOutput};
use crate::protocol::ToolSpec;

/// A slow network file system or a huge repository must not stall a turn.
const GIT_TIMEOUT: Duration = Duration::from_secs(5);

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: ToolName::RepoInfo.name().into(),
        description: "Workspace root, platform, and git branch/dirty state.".into(),
        parameters: json!({"type": "object", "properties": {}}),
    }
}

pub async fn run(ctx: &ToolContext) -> ToolOutput {
    let root = paths::canonical_root(&ctx.root);
    let platform = format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH);
    let git = git_state(ctx).await;
    let model = format!(
        "root: {}\nplatform: {platform}\ngit: {}\n",
        root.display(),
        git.describe()
    );
    let summary = format!("{platform}, git: {}", git.short());
    ToolOutput::ok(model, summary)
}

#[derive(Debug, PartialEq)]
enum GitState {
    NotInstalled,
    NoRepository,
    Repository {
        /// Branch name, or `detached at <sha>`.
        head: String,
        changed_files: usize,
    },
    Failed(String),
}

impl GitState {
    fn describe(&self) -> String {
        match self {
            GitState::NotInstalled => "not installed".into(),
            GitState::NoRepository => "no repository here".into(),
            GitState::Repository {
                head,
                changed_files: 0,
            } => format!("yes, {head}, clean"),
            GitState::Repository {
                head,
                changed_files,
            } => {
                format!("yes, {head}, dirty ({changed_files} changed files)")
            }
            GitState::Failed(why) => format!("unknown ({why})"),
        }
    }

    fn short(&self) -> String {
        match self {
            GitState::Repository {
                head,
                changed_files,
            } => {
                let dirty = if *changed_files > 0 { ", dirty" } else { "" };
                format!("{head}{dirty}")
            }
            GitState::NotInstalled => "not installed".into(),
            GitState::NoRepository => "none".into(),
            GitState::Failed(_) => "unknown".into(),
        }
    }
}

enum GitRun {
    Ok(String),
    Failed(String),
    NotInstalled,
}

/// Runs a git of linggen's own (see `launch::git`), confined like any command. `filters`
/// are the overrides of the filter drivers the repository defines.
async fn git(ctx: &ToolContext, filters: &[OsString], args: &[&str]) -> GitRun {
    let confinement = match ctx.sandbox.unconfined_reason() {
        None => Confinement::Sandbox(&ctx.sandbox),
        // Fail closed, as for Bash: nothing runs unconfined without a person.
        Some(why) if ctx.sandbox.unconfined_asks() => {
            return GitRun::Failed(format!("git was not run unconfined: {why}"));
        }
        Some(_) => Confinement::Unconfined("[sandbox] unconfined = \"allow\": the person's choice"),
    };
    let mut cmd = match launch::git::command(&ctx.root, confinement, Lifetime::Contained) {
        Ok(cmd) => tokio::process::Command::from(cmd),
        Err(LaunchError::Program(ProgramError::NotFound { .. })) => return GitRun::NotInstalled,
        Err(e) => return GitRun::Failed(format!("cannot run git: {e}")),
    };
    cmd.args(filters)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    match tokio::time::timeout(GIT_TIMEOUT, cmd.output()).await {
        Err(_) => GitRun::Failed(format!("git {} timed out", args.join(" "))),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => GitRun::NotInstalled,
        Ok(Err(e)) => GitRun::Failed(e.to_string()),
        Ok(Ok(out)) if out.status.success() => {
            GitRun::Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
        }
        Ok(Ok(out)) => GitRun::Failed(String::from_utf8_lossy(&out.stderr).trim().to_string()),
    }
}

async fn git_state(ctx: &ToolContext) -> GitState {
    // A repository that arrived as an archive brings its own `.git/config`, whose
    // `core.fsmonitor` or clean filters `git status` would run.
    let filters = match git(ctx, &[], launch::git::LIST_FILTERS).await {
        GitRun::Ok(names) => launch::git::filter_overrides(&names),
        _ => Vec::new(),
    };
    let git = |args: &'static [&'static str]| git(ctx, &filters, args);
    match git(&["rev-parse", "--is-inside-work-tree"]).await {
        GitRun::NotInstalled => return GitState::NotInstalled,
        GitRun::Failed(why) if why.contains("not a git repository") => {
            return GitState::NoRepository;
        }
        GitRun::Failed(why) => return GitState::Failed(why),
        GitRun::Ok(_) => {}
    }
    // symbolic-ref works on an unborn branch too; it fails only when HEAD is detached.
    let head = match git(&["symbolic-ref", "--short", "-q", "HEAD"]).await {
        GitRun::Ok(branch) => format!("branch {branch}"),
        _ => match git(&["rev-parse", "--short", "HEAD"]).await {
            GitRun::Ok(sha) => format!("detached at {sha}"),
            _ => "detached".into(),
        },
    };
    match git(&["status", "--porcelain"]).await {
        GitRun::Ok(status) => GitState::Repository {
            head,
            changed_files: status.lines().count(),
        },
        GitRun::Failed(why) => GitState::Failed(why),
        GitRun::NotInstalled => GitState::NotInstalled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has_git() -> bool {
        std::process::Command::new("git")
            .arg("--version")
            .output()
            .is_ok()
    }

    #[tokio::test]
    async fn reports_root_platform_and_no_repository() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(&dir.path().canonicalize().unwrap());
        let out = run(&ctx).await;
        assert!(!out.is_error);
        assert!(out.model.contains(&format!("root: {}", ctx.root.display())));
        assert!(out.model.contains(std::env::consts::OS));
        if has_git() {
            assert!(
                out.model.contains("git: no repository here"),
                "{}",
                out.model
            );
        }
    }

    #[tokio::test]
    async fn reports_branch_and_dirty_state() {
        if !has_git() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let status = std::process::Command::new("git")
            .args(["init", "-q", "-b", "trunk"])
            .current_dir(&root)
            .status()
            .unwrap();
        assert!(status.success());
        let ctx = ToolContext::new(&root);
        let out = run(&ctx).await;
        assert!(
            out.model.contains("git: yes, branch trunk, clean"),
            "{}",
            out.model
        );
        std::fs::write(root.join("new.txt"), "x").unwrap();
        let out = run(&ctx).await;
        assert!(
            out.model.contains("dirty (1 changed files)"),
            "{}",
            out.model
        );
    }
}
