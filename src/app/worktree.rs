//! `-p --worktree`: the task runs in a new `git worktree` on a branch of its own
//! (`job/<id>`, made from HEAD), beside the repository, so the person's checkout is never
//! touched while it works. When it ends, whatever it changed is committed on that branch
//! and left there for the person to review and merge.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::tools::launch::{self, Confinement, Lifetime};

use super::{Failure, exit};

/// A worktree made for one job.
pub struct Job {
    pub branch: String,
    /// The worktree's top folder.
    pub path: PathBuf,
    /// Where the task runs: the same folder inside the worktree as the one it was started
    /// from inside the repository.
    pub root: PathBuf,
}

/// linggen's own git in the person's repository (`launch::git`: no hook, fsmonitor,
/// filter, submodule or signing program, whatever its configuration says). The filter
/// drivers the configuration defines are listed once, then emptied on every call.
struct RepoGit {
    filters: Vec<OsString>,
}

impl RepoGit {
    fn of(dir: &Path) -> Result<RepoGit, String> {
        let names = command(dir)?
            .args(launch::git::LIST_FILTERS)
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
            .unwrap_or_default();
        Ok(RepoGit {
            filters: launch::git::filter_overrides(&names),
        })
    }

    fn run(&self, dir: &Path, args: &[&str]) -> Result<String, String> {
        let out = command(dir)?
            .args(&self.filters)
            .args(args)
            .output()
            .map_err(|e| format!("cannot run git: {e}; --worktree needs git on PATH"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }
}

fn command(dir: &Path) -> Result<std::process::Command, String> {
    launch::git::command(dir, UNCONFINED, Lifetime::Contained)
        .map_err(|e| format!("cannot run git: {e}; --worktree needs git"))
}

/// The job's git writes the person's repository (its objects, refs and the worktree's
/// index), which the sandbox keeps read-only to commands. It runs no repository code: see
/// `launch::git`.
const UNCONFINED: Confinement<'static> =
    Confinement::Unconfined("writes the person's .git, which the sandbox protects");

/// Makes the worktree for a job started in `dir` (the `--root`, else the current folder).
pub fn create(dir: &Path) -> Result<Job, Failure> {
    // The repository's own folders: a program planted there by an earlier session is
    // never what runs as git.
    launch::distrust(&[dir]);
    let git = RepoGit::of(dir).map_err(|message| Failure {
        code: exit::USAGE,
        message,
    })?;
    let usage = |message: String| Failure {
        code: exit::USAGE,
        message,
    };
    let top = git
        .run(dir, &["rev-parse", "--show-toplevel"])
        .map_err(|e| {
            usage(format!(
                "--worktree needs a git repository, and {} is not in one ({e})",
                dir.display()
            ))
        })?;
    let top = PathBuf::from(top);
    git.run(&top, &["rev-parse", "--verify", "HEAD"])
        .map_err(|_| {
            usage("--worktree needs a commit to branch from; this repository has none yet".into())
        })?;
    let id: String = crate::session::ids::new_id().chars().take(8).collect();
    let name = top
        .file_name()
        .map_or("repo".into(), |n| n.to_string_lossy().into_owned());
    let parent = top.parent().unwrap_or(&top);
    let path = parent.join(format!("{name}-job-{id}"));
    let branch = format!("job/{id}");
    let path_text = path.display().to_string();
    // No hooks (post-checkout) run: `launch::git`'s hardening.
    let add = ["worktree", "add", "-q", "-b"];
    let add: Vec<&str> = add
        .into_iter()
        .chain([branch.as_str(), &path_text, "HEAD"])
        .collect();
    git.run(&top, &add).map_err(|e| Failure {
        code: exit::FAILURE,
        message: format!("cannot create the worktree {path_text}: {e}"),
    })?;
    let canonical_dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let inside = canonical_dir
        .strip_prefix(top.canonicalize().unwrap_or(top.clone()))
        .map(Path::to_path_buf)
        .unwrap_or_default();
    Ok(Job {
        root: path.join(inside),
        branch,
        path,
    })
}

/// Commits what the job changed on its branch; the line to tell the person.
pub fn finish(job: &Job, task: &str) -> String {
    let merge = format!(
        "review with `git diff HEAD...{0}`, merge with `git merge {0}`, then `git worktree remove {1}`",
        job.branch,
        job.path.display()
    );
    let git = match RepoGit::of(&job.path) {
        Ok(git) => git,
        Err(e) => {
            return format!(
                "the result is in the worktree {} (branch {}), not committed ({e})",
                job.path.display(),
                job.branch
            );
        }
    };
    let status = git
        .run(&job.path, &["status", "--porcelain"])
        .unwrap_or_default();
    if status.is_empty() {
        return format!(
            "the job changed nothing; its worktree is {} (branch {}): `git worktree remove {}` cleans up",
            job.path.display(),
            job.branch,
            job.path.display()
        );
    }
    let title: String = task.lines().next().unwrap_or("").chars().take(60).collect();
    let message = format!("linggen: {title}");
    // No hooks: the agent could write them into the worktree (`core.hooksPath = .husky`);
    // `launch::git` switches them off, and `--no-verify` says so twice.
    let commit = ["commit", "-q", "--no-verify", "-m"];
    let committed = git.run(&job.path, &["add", "-A"]).and_then(|_| {
        let with_message: Vec<&str> = commit.iter().copied().chain([message.as_str()]).collect();
        git.run(&job.path, &with_message).or_else(|_| {
            // No identity configured: commit as linggen rather than leave it loose.
            let anonymous: Vec<&str> = [
                "-c",
                "user.name=linggen",
                "-c",
                "user.email=linggen@localhost",
            ]
            .into_iter()
            .chain(with_message.iter().copied())
            .collect();
            git.run(&job.path, &anonymous)
        })
    });
    match committed {
        Ok(_) => format!(
            "the result is committed on branch {} in the worktree {}; {merge}",
            job.branch,
            job.path.display()
        ),
        Err(e) => format!(
            "the result is in the worktree {} (branch {}), not committed ({e}); {merge}",
            job.path.display(),
            job.branch
        ),
    }
}
