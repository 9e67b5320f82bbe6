//! What the machine running a test must have, and git as the tests use it to set up a
//! repository. A test that lacks something says SKIPPED and fails under `CI=true`.

use std::path::Path;
use std::process::Command;

pub(super) fn skipped(what: &str) {
    eprintln!("SKIPPED: {what}");
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "under CI=true nothing may be skipped: {what}"
    );
}

/// Whether the kernel has Landlock, which the sandbox needs.
pub fn sandbox_available() -> bool {
    // SAFETY: with a null attribute, size 0 and flag 1 this only asks for the ABI version.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    if abi < 1 {
        skipped("this kernel has no Landlock; the sandbox tests cannot run here");
    }
    abi >= 1
}

/// Whether `git` is installed (checkpoints, rewind and `--worktree` need it).
pub fn git_available() -> bool {
    let found = Command::new("git").arg("--version").output().is_ok();
    if !found {
        skipped("git is not installed");
    }
    found
}

/// Runs git in `dir` with a test identity (local submodules allowed); its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(["-c", "protocol.file.allow=always"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The entry script of the MCP reference server `@modelcontextprotocol/server-everything`,
/// which `.ci/run` installs into `~/.cache/linggen-mcp` (or `LINGGEN_TEST_MCP_EVERYTHING`),
/// when it and `node` are there.
pub fn mcp_everything() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("LINGGEN_TEST_MCP_EVERYTHING")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            let home = std::env::var_os("HOME")?;
            Some(Path::new(&home).join(
                ".cache/linggen-mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
            ))
        })
        .filter(|p| p.is_file());
    let node = Command::new("node").arg("--version").output().is_ok();
    match (path, node) {
        (Some(path), true) => Some(path),
        _ => {
            skipped(
                "the MCP reference server is not installed: run .ci/run, or `npm install \
                 @modelcontextprotocol/server-everything` in ~/.cache/linggen-mcp",
            );
            None
        }
    }
}

/// A child process killed (and reaped) when dropped.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the reference MCP server (`entry`, from [`mcp_everything`]) over HTTP
/// (`streamableHttp` or `sse`) on a free loopback port; it ends when the guard drops.
pub fn mcp_http_server(entry: &Path, mode: &str) -> (KillOnDrop, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port");
    let child = Command::new("node")
        .arg(entry)
        .arg(mode)
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start node");
    let guard = KillOnDrop(child);
    super::wait_until(
        "the HTTP server to listen",
        std::time::Duration::from_secs(20),
        || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
    );
    (guard, port)
}
