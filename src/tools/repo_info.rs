//! `get_repo_info`: where the agent is and what state the repository is in.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::process::Command;

use super::ToolName;
use super::guard::paths;
use super::{ToolContext, ToolOutput};
use crate::llm::ToolSpec;

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

async fn git(ctx: &ToolContext, args: &[&str]) -> GitRun {
    let mut cmd = Command::new("git");
    cmd.args(["--no-optional-locks", "--no-pager"])
        .args(args)
        .current_dir(&ctx.root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("GIT_TERMINAL_PROMPT", "0")
        .kill_on_drop(true);
    super::bash::refuse_embedded_bare_repositories(&mut cmd);
    // A repository that arrived as an archive brings its own `.git/config`, whose
    // `core.fsmonitor` or clean filters `git status` would run: confine git like any
    // command, and never hand it the API keys.
    ctx.sandbox.scrub_env(&mut cmd);
    match ctx.sandbox.unconfined_reason() {
        None => {
            if let Err(why) = ctx.sandbox.confine(&mut cmd) {
                return GitRun::Failed(format!("the sandbox could not be set up for git: {why}"));
            }
        }
        // Fail closed, as for Bash: nothing runs unconfined without a person.
        Some(why) if ctx.sandbox.unconfined_asks() => {
            return GitRun::Failed(format!("git was not run unconfined: {why}"));
        }
        Some(_) => {}
    }
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
    match git(ctx, &["rev-parse", "--is-inside-work-tree"]).await {
        GitRun::NotInstalled => return GitState::NotInstalled,
        GitRun::Failed(why) if why.contains("not a git repository") => {
            return GitState::NoRepository;
        }
        GitRun::Failed(why) => return GitState::Failed(why),
        GitRun::Ok(_) => {}
    }
    // symbolic-ref works on an unborn branch too; it fails only when HEAD is detached.
    let head = match git(ctx, &["symbolic-ref", "--short", "-q", "HEAD"]).await {
        GitRun::Ok(branch) => format!("branch {branch}"),
        _ => match git(ctx, &["rev-parse", "--short", "HEAD"]).await {
            GitRun::Ok(sha) => format!("detached at {sha}"),
            _ => "detached".into(),
        },
    };
    match git(ctx, &["status", "--porcelain"]).await {
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
