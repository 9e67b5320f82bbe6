//! Finding Chromium and running it once, headless, to capture one page.
//!
//! The browser is spawned directly (never through a shell) with the URL as one argument, in
//! its own process group, with a fresh profile in a private temp directory. A hard timeout
//! kills the whole group, and dropping the future (a cancelled turn) does too; the profile
//! is removed either way. Chromium writes the PNG into that temp directory; the caller
//! checks it and copies it into the workspace, so the browser never writes there itself.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::tools::launch::{Confinement, Env, Launch, Lifetime, Program};

use crate::tools::bash::ProcessGroup;

/// Program names tried on `PATH`, in order, when nothing is configured.
pub const CANDIDATES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];

/// The environment variable that names the browser; it beats `[tools] chromium`.
pub const ENV_VAR: &str = crate::config::tools::CHROMIUM_ENV;

/// How long Chromium may spend loading before it takes the picture of whatever is there
/// (its own `--timeout`): a page that keeps a request open forever still gets captured.
const LOAD_TIMEOUT: Duration = Duration::from_secs(15);
/// On top of the load timeout and the delay: start-up and encoding. Past this, the whole
/// process group is killed.
const KILL_GRACE: Duration = Duration::from_secs(20);
/// A screenshot larger than this is refused rather than read into memory.
pub const MAX_PNG_BYTES: u64 = 50 * 1024 * 1024;
/// How much of Chromium's own output an error message quotes.
const LOG_TAIL_BYTES: u64 = 4096;

/// Why no browser can run; each says how to get one (the model relays it to the person).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChromiumNotFound {
    /// Nothing is configured and no browser is on `PATH`.
    #[error(
        "capture_screenshot needs Chromium, and none was found (looked for {} on PATH). Tell \
         the user: install it (Debian/Ubuntu: `apt-get install chromium`), or set \
         `[tools] chromium = \"/path/to/chrome\"` in linggen-agent.toml or {ENV_VAR}. Do not \
         retry until then",
        CANDIDATES.join(", ")
    )]
    Missing,
    #[error(
        "{origin} = \"{}\", but no `{}` is on PATH. Tell the user to fix {origin} (an \
         absolute path, or a program name on PATH)",
        chosen.display(),
        chosen.display()
    )]
    NotOnPath { origin: String, chosen: PathBuf },
    #[error(
        "{origin} = \"{}\" is a relative path; tell the user to set it to an absolute path or \
         a program name on PATH",
        chosen.display()
    )]
    Relative { origin: String, chosen: PathBuf },
    #[error(
        "{origin} = \"{}\", but that is not an executable file, so capture_screenshot cannot \
         run Chromium. Tell the user: install it (Debian/Ubuntu: `apt-get install chromium`) \
         or point {origin} at the browser",
        chosen.display()
    )]
    NotExecutable { origin: String, chosen: PathBuf },
}

/// The browser to run. `env_choice` is `LINGGEN_CHROMIUM`, `configured` is `[tools]
/// chromium`, `path_var` is `PATH`. A choice with a `/` must be an absolute path to an
/// executable; a bare name is looked up on `PATH`. Only absolute `PATH` entries outside
/// `root` count: the agent can write files in the workspace, and a `chromium` it wrote
/// there must not be what runs (through `.` in `PATH`, or a project `bin/` on it).
pub(in crate::tools) fn find(
    env_choice: Option<&OsStr>,
    configured: Option<&str>,
    path_var: Option<&OsStr>,
    root: &Path,
) -> Result<PathBuf, ChromiumNotFound> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let outside_root = |dir: &PathBuf| {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        !dir.starts_with(&root)
    };
    let dirs: Vec<PathBuf> = path_var
        .map(|p| {
            std::env::split_paths(p)
                .filter(|d| d.is_absolute() && outside_root(d))
                .collect()
        })
        .unwrap_or_default();
    let choice = match env_choice.filter(|v| !v.is_empty()) {
        Some(value) => Some((PathBuf::from(value), ENV_VAR.to_string())),
        None => configured
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| (PathBuf::from(v), "[tools] chromium".to_string())),
    };
    let Some((chosen, origin)) = choice else {
        return CANDIDATES
            .iter()
            .find_map(|name| on_path(&dirs, OsStr::new(name)))
            .ok_or(ChromiumNotFound::Missing);
    };
    if chosen.components().count() == 1 {
        return on_path(&dirs, chosen.as_os_str())
            .ok_or(ChromiumNotFound::NotOnPath { origin, chosen });
    }
    if !chosen.is_absolute() {
        return Err(ChromiumNotFound::Relative { origin, chosen });
    }
    if is_executable(&chosen) {
        Ok(chosen)
    } else {
        Err(ChromiumNotFound::NotExecutable { origin, chosen })
    }
}

fn on_path(dirs: &[PathBuf], name: &OsStr) -> Option<PathBuf> {
    dirs.iter()
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// One capture.
#[derive(Debug, Clone)]
pub struct Shot<'a> {
    pub program: &'a Path,
    pub url: &'a str,
    pub width: u32,
    pub height: u32,
    pub delay_ms: u64,
    /// When the whole process group is killed; [`kill_after`] for real use.
    pub kill_after: Duration,
    /// Whose environment rules apply: the browser runs page scripts, so it gets no API
    /// keys either. (It is not confined: it must reach the person's loopback servers.)
    pub sandbox: Option<&'a crate::tools::sandbox::Sandbox>,
}

/// The hard limit for a capture with `delay_ms`: Chromium's own load timeout, the delay,
/// and time to start and encode.
pub fn kill_after(delay_ms: u64) -> Duration {
    load_timeout(delay_ms) + KILL_GRACE
}

fn load_timeout(delay_ms: u64) -> Duration {
    LOAD_TIMEOUT + Duration::from_millis(delay_ms)
}

/// Runs the browser and returns the PNG's bytes (not yet checked to be a PNG).
pub(in crate::tools) async fn capture(shot: &Shot<'_>) -> Result<Vec<u8>, String> {
    let scratch = Scratch::create()
        .map_err(|e| format!("cannot create a temporary directory for Chromium: {e}"))?;
    let result = capture_in(shot, &scratch).await;
    // Chromium is dead by now (its group went with `capture_in`). Removing its profile
    // (many files, with retries) happens on the blocking pool; only a cancelled capture
    // removes it inline, from `Drop`.
    let _ = tokio::task::spawn_blocking(move || drop(scratch)).await;
    result
}

async fn capture_in(shot: &Shot<'_>, scratch: &Scratch) -> Result<Vec<u8>, String> {
    let png = scratch.path.join("screenshot.png");
    let log_path = scratch.path.join("chromium.log");
    let log = File::create(&log_path)
        .map_err(|e| format!("cannot create a log file for Chromium: {e}"))?;
    let stderr = log
        .try_clone()
        .map_err(|e| format!("cannot create a log file for Chromium: {e}"))?;
    let launch = Launch {
        program: Program::Path(shot.program),
        env: match shot.sandbox {
            Some(sandbox) => Env::Scrubbed(sandbox),
            None => Env::Minimal,
        },
        // It must reach the page's server on this machine's network, which the sandbox's
        // network namespace would cut off; it writes only its scratch profile, runs with no
        // credential, and its own sandbox confines the pages it renders.
        confinement: Confinement::Unconfined("must reach the page's server on this machine"),
        lifetime: Lifetime::Tied,
    };
    let mut cmd = launch.tokio_command().map_err(|e| {
        format!(
            "cannot start Chromium ({}): {e}. Tell the user to check [tools] chromium",
            shot.program.display()
        )
    })?;
    cmd.args(flags(shot, &scratch.path, &png))
        // The URL is one argument after every flag; it was normalized by the URL check and
        // starts with `http`, so it cannot be read as a flag.
        .arg(shot.url)
        .current_dir(&scratch.path)
        // Chromium's crash reports and caches go to the XDG folders; keep them in the
        // scratch directory instead of the person's home.
        .env("XDG_CONFIG_HOME", scratch.path.join("config"))
        .env("XDG_CACHE_HOME", scratch.path.join("cache"))
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(stderr);
    let mut child = cmd.spawn().map_err(|e| {
        format!(
            "cannot start Chromium ({}): {e}. Tell the user to check the installation or \
             [tools] chromium",
            shot.program.display()
        )
    })?;
    // Dropped when this returns, before `scratch`: the browser dies before its profile goes.
    let _group = child.id().map(|pid| ProcessGroup {
        pgid: pid as libc::pid_t,
    });
    let limit = shot.kill_after;
    let status = match tokio::time::timeout(limit, child.wait()).await {
        Ok(Ok(status)) => status,
        Ok(Err(e)) => return Err(format!("lost track of Chromium: {e}")),
        Err(_) => {
            return Err(format!(
                "Chromium did not finish within {} s and was killed; the page may be stuck. \
                 Check that the server answers quickly, then retry{}",
                limit.as_secs_f64(),
                log_tail(&log_path)
            ));
        }
    };
    if !status.success() {
        return Err(format!(
            "Chromium failed ({status}) and took no screenshot{}{}",
            sandbox_hint(&log_path),
            log_tail(&log_path)
        ));
    }
    // Up to MAX_PNG_BYTES read from disk: on the blocking pool.
    let read = tokio::task::spawn_blocking(move || read_png(&png))
        .await
        .unwrap_or_else(|e| Err(format!("reading the screenshot failed: {e}")));
    read.map_err(|why| format!("{why}{}", log_tail(&log_path)))
}

fn flags(shot: &Shot<'_>, scratch: &Path, png: &Path) -> Vec<String> {
    let mut flags: Vec<String> = [
        "--headless",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--hide-scrollbars",
        "--mute-audio",
    ]
    .map(String::from)
    .to_vec();
    // Chromium refuses to start as root with its sandbox. For anyone else it stays on: the
    // page may come from a repository that is not trusted.
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        flags.push("--no-sandbox".into());
    }
    flags.push(format!(
        "--user-data-dir={}",
        scratch.join("profile").display()
    ));
    flags.push(format!("--window-size={},{}", shot.width, shot.height));
    flags.push(format!("--screenshot={}", png.display()));
    flags.push(format!(
        "--timeout={}",
        load_timeout(shot.delay_ms).as_millis()
    ));
    if shot.delay_ms > 0 {
        // Virtual time: the page's timers and animations run for this long after loading,
        // which is what a delay is for, without waiting that long in real time.
        flags.push(format!("--virtual-time-budget={}", shot.delay_ms));
    }
    flags
}

fn read_png(png: &Path) -> Result<Vec<u8>, String> {
    let size = match std::fs::metadata(png) {
        Ok(meta) => meta.len(),
        Err(_) => return Err("Chromium exited without writing a screenshot".into()),
    };
    if size > MAX_PNG_BYTES {
        return Err(format!(
            "the screenshot is {size} bytes, more than the {MAX_PNG_BYTES} allowed; use a \
             smaller width and height"
        ));
    }
    std::fs::read(png).map_err(|e| format!("cannot read the screenshot Chromium wrote: {e}"))
}

fn sandbox_hint(log: &Path) -> &'static str {
    if last_bytes(log).contains("No usable sandbox") {
        ". Chromium's sandbox cannot start here (user namespaces are off). Tell the user: \
         enable unprivileged user namespaces, or point [tools] chromium at a wrapper script \
         that adds --no-sandbox"
    } else {
        ""
    }
}

/// The end of Chromium's log as text; the log itself can grow without bound.
fn last_bytes(log: &Path) -> String {
    let mut bytes = Vec::new();
    if let Ok(mut file) = File::open(log) {
        let len = file.metadata().map_or(0, |m| m.len());
        let _ = file.seek(SeekFrom::Start(len.saturating_sub(LOG_TAIL_BYTES)));
        let _ = file.take(LOG_TAIL_BYTES).read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The last lines of Chromium's output as `"; Chromium said: …"`, or nothing. D-Bus
/// complaints are dropped: a container has no session bus and Chromium does not need one.
fn log_tail(log: &Path) -> String {
    let text = last_bytes(log);
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.contains("dbus") && !l.trim().is_empty())
        .map(|l| l.chars().filter(|c| !c.is_control()).collect())
        .collect();
    let tail = &lines[lines.len().saturating_sub(6)..];
    if tail.is_empty() {
        String::new()
    } else {
        format!("; Chromium said:\n{}", tail.join("\n"))
    }
}

/// 16 random hex digits from the OS.
fn random_name() -> std::io::Result<String> {
    let mut bytes = [0u8; 8];
    getrandom::getrandom(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A private temp directory (mode 0700, a fresh name) removed when dropped.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn create() -> std::io::Result<Scratch> {
        let base = std::env::temp_dir();
        let mut last = None;
        for _ in 0..16 {
            let path = base.join(format!("linggen-chromium-{}", random_name()?));
            // `create`, not `create_all`: it fails if the name exists (even as a symlink
            // someone planted), and then another name is tried.
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(Scratch { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no free name")))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Chromium's processes were just killed; one may still be closing files, so a
        // first attempt can find a directory refilled behind it.
        for _ in 0..3 {
            if std::fs::remove_dir_all(&self.path).is_ok() || !self.path.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    /// A root no test directory is inside.
    fn no_root() -> &'static Path {
        Path::new("/nonexistent-root")
    }

    fn executable(dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn path_of(dirs: &[&Path]) -> OsString {
        std::env::join_paths(dirs).unwrap()
    }

    #[test]
    fn searches_path_in_candidate_order() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        executable(a.path(), "google-chrome");
        let chromium = executable(b.path(), "chromium");
        let path = path_of(&[a.path(), b.path()]);
        assert_eq!(find(None, None, Some(&path), no_root()), Ok(chromium));
        // Not executable: skipped.
        let c = tempfile::tempdir().unwrap();
        std::fs::write(c.path().join("chromium"), "").unwrap();
        let chrome = executable(c.path(), "google-chrome-stable");
        assert_eq!(
            find(None, None, Some(&path_of(&[c.path()])), no_root()),
            Ok(chrome)
        );
    }

    #[test]
    fn relative_path_entries_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        executable(dir.path(), "chromium");
        let cwd = std::env::current_dir().unwrap();
        let rel = pathdiff_like(dir.path(), &cwd);
        let err = find(None, None, Some(OsStr::new(&rel)), no_root())
            .unwrap_err()
            .to_string();
        assert!(err.contains("needs Chromium"), "{err}");
    }

    #[test]
    fn path_entries_inside_the_workspace_are_ignored() {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        executable(&bin, "chromium");
        let outside = tempfile::tempdir().unwrap();
        let real = executable(outside.path(), "google-chrome");
        let path = path_of(&[&bin, outside.path()]);
        assert_eq!(find(None, None, Some(&path), root.path()), Ok(real));
        let err = find(None, Some("chromium"), Some(&path), root.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("no `chromium` is on PATH"), "{err}");
    }

    /// A relative spelling of `target` from `base` (`../../tmp/x`).
    fn pathdiff_like(target: &Path, base: &Path) -> String {
        let ups = base.components().count() - 1;
        format!(
            "{}{}",
            "../".repeat(ups),
            target.strip_prefix("/").unwrap().display()
        )
    }

    #[test]
    fn missing_browser_says_how_to_install_it() {
        let empty = tempfile::tempdir().unwrap();
        let err = find(None, None, Some(&path_of(&[empty.path()])), no_root())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("capture_screenshot needs Chromium")
                && err.contains("apt-get install chromium")
                && err.contains("[tools] chromium"),
            "{err}"
        );
        assert!(
            find(None, None, None, no_root())
                .unwrap_err()
                .to_string()
                .contains("needs Chromium")
        );
    }

    #[test]
    fn configured_browser_wins_and_env_beats_config() {
        let dir = tempfile::tempdir().unwrap();
        let mine = executable(dir.path(), "my-chrome");
        let other = executable(dir.path(), "other-chrome");
        executable(dir.path(), "chromium");
        let path = path_of(&[dir.path()]);
        let mine_text = mine.display().to_string();
        assert_eq!(
            find(None, Some(&mine_text), Some(&path), no_root()),
            Ok(mine.clone())
        );
        // A bare name is looked up on PATH.
        assert_eq!(
            find(None, Some("other-chrome"), Some(&path), no_root()),
            Ok(other)
        );
        let env = OsString::from(&mine);
        assert_eq!(
            find(Some(&env), Some("other-chrome"), Some(&path), no_root()),
            Ok(mine)
        );
        // An empty variable counts as unset.
        assert!(find(Some(OsStr::new("")), None, Some(&path), no_root()).is_ok());
    }

    #[test]
    fn a_configured_browser_that_is_not_there_is_an_error_not_a_fallback() {
        let dir = tempfile::tempdir().unwrap();
        executable(dir.path(), "chromium");
        let path = path_of(&[dir.path()]);
        let err = find(None, Some("/nowhere/chrome"), Some(&path), no_root())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("[tools] chromium = \"/nowhere/chrome\"")
                && err.contains("not an executable"),
            "{err}"
        );
        let err = find(
            Some(OsStr::new("/nowhere/chrome")),
            None,
            Some(&path),
            no_root(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("LINGGEN_CHROMIUM"), "{err}");
        let err = find(None, Some("no-such-browser"), Some(&path), no_root())
            .unwrap_err()
            .to_string();
        assert!(err.contains("no `no-such-browser` is on PATH"), "{err}");
        let err = find(None, Some("bin/chrome"), Some(&path), no_root())
            .unwrap_err()
            .to_string();
        assert!(err.contains("relative path"), "{err}");
    }

    #[test]
    fn log_tail_drops_dbus_noise_and_control_characters() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        std::fs::write(
            &log,
            "[1:2:ERROR:dbus/bus.cc:405] Failed to connect to the bus\nreal \x1b[31mproblem\n",
        )
        .unwrap();
        assert_eq!(log_tail(&log), "; Chromium said:\nreal [31mproblem");
        std::fs::write(&log, "").unwrap();
        assert_eq!(log_tail(&log), "");
    }

    #[test]
    fn scratch_is_private_and_removed() {
        let scratch = Scratch::create().unwrap();
        let path = scratch.path.clone();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::create_dir_all(path.join("profile/deep")).unwrap();
        drop(scratch);
        assert!(!path.exists());
    }
}
