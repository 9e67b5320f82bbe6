//! `capture_screenshot`: a PNG of a web page, taken with headless Chromium and saved under
//! `<root>/.linggen/screenshots/`, so an agent building a web UI can show (or, with a
//! vision model, look at) what it made.
//!
//! Only `http`/`https` pages on this machine or on hosts the person allowed in `[tools]
//! screenshot_hosts` are opened ([`target`]); the browser is found and run by [`chromium`].
//! The call fetches a URL and writes a file, so the permission check treats it as neither
//! a read nor a plain edit (see `Access::Screenshot`).

mod chromium;
mod target;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::Url;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;

use super::ToolName;
use super::guard::paths::PathUse;
use super::{Access, ToolContext, ToolOutput, args};
use crate::protocol::ToolSpec;

pub use crate::config::tools::ScreenshotSettings;
pub use crate::protocol::image::png_dimensions;
pub use chromium::{CANDIDATES as CHROMIUM_NAMES, ENV_VAR as CHROMIUM_ENV};
pub use target::is_loopback;

/// Where screenshots are saved, relative to the root.
pub const DIR: &str = ".linggen/screenshots";
pub const DEFAULT_DELAY_MS: u64 = 500;
pub const MAX_DELAY_MS: u64 = 10_000;
pub const DEFAULT_WIDTH: u32 = 1280;
pub const DEFAULT_HEIGHT: u32 = 800;
const MIN_SIDE: u32 = 100;
const MAX_SIDE: u32 = 4096;
/// Checking that something listens before starting a browser turns "start your server
/// first" into a clear error instead of a screenshot of Chromium's error page.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: ToolName::Screenshot.name().into(),
        description: "PNG screenshot of a page served on this machine (e.g. http://localhost:3000/) by headless Chromium; returns its path."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "url": {"type": "string"},
                "delay_ms": {"type": "integer"},
                "width": {"type": "integer"},
                "height": {"type": "integer"}
            },
            "required": ["url"]
        }),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ScreenshotArgs {
    /// Checked against the host policy and normalized; this is what the browser opens.
    pub url: Url,
    pub delay_ms: u64,
    pub width: u32,
    pub height: u32,
    /// The browser found when the call was prepared.
    pub chromium: PathBuf,
}

impl ScreenshotArgs {
    /// Validates the URL and finds the browser, so a call that cannot work is refused
    /// before anyone is asked to approve it.
    pub fn parse(ctx: &ToolContext, args: &Value) -> Result<Self, ToolOutput> {
        let raw = args::required_string(
            args,
            &["url", "uri", "link", "href", "address", "page"],
            ToolName::Screenshot.name(),
            r#"{"url": "http://localhost:3000/"}"#,
        )?;
        let url = target::check(&raw, &ctx.screenshot.hosts).map_err(ToolOutput::error)?;
        let delay_ms = args::uint(args, &["delay_ms", "delay", "delayMs", "wait_ms", "wait"])?
            .unwrap_or(DEFAULT_DELAY_MS)
            .min(MAX_DELAY_MS);
        let side = |names: &[&'static str], default: u32| -> Result<u32, ToolOutput> {
            Ok(match args::uint(args, names)? {
                None | Some(0) => default,
                Some(n) => n.clamp(u64::from(MIN_SIDE), u64::from(MAX_SIDE)) as u32,
            })
        };
        let width = side(&["width", "viewport_width", "w"], DEFAULT_WIDTH)?;
        let height = side(&["height", "viewport_height", "h"], DEFAULT_HEIGHT)?;
        let chromium = locate_chromium(&ctx.screenshot, &ctx.root)
            .map_err(|e| ToolOutput::error(e.to_string()))?;
        Ok(ScreenshotArgs {
            url,
            delay_ms,
            width,
            height,
            chromium,
        })
    }

    pub fn summary(&self) -> String {
        format!("Screenshot {} ({}x{})", self.url, self.width, self.height)
    }

    pub fn access(&self) -> Access {
        Access::Screenshot {
            url: self.url.to_string(),
        }
    }

    pub async fn run(&self, ctx: &ToolContext) -> ToolOutput {
        if let Err(why) = reachable(&self.url).await {
            return ToolOutput::error(why);
        }
        let shot = chromium::Shot {
            program: &self.chromium,
            url: self.url.as_str(),
            width: self.width,
            height: self.height,
            delay_ms: self.delay_ms,
            kill_after: chromium::kill_after(self.delay_ms),
            sandbox: Some(&ctx.sandbox),
        };
        let bytes = match chromium::capture(&shot).await {
            Ok(bytes) => bytes,
            Err(why) => return ToolOutput::error(why),
        };
        let Some((width, height)) = png_dimensions(&bytes) else {
            return ToolOutput::error(
                "Chromium wrote a file that is not a PNG image, so nothing was saved; tell the \
                 user, the browser may be broken",
            );
        };
        let rel = match save(ctx, &timestamp(SystemTime::now()), &bytes).await {
            Ok(rel) => rel,
            Err(why) => return ToolOutput::error(why),
        };
        let size = bytes.len();
        let output = ToolOutput::ok(
            format!(
                "saved a screenshot of {} to {rel} (PNG, {width}x{height}, {size} bytes)",
                self.url
            ),
            format!("{rel} ({width}x{height}, {})", kilobytes(size)),
        );
        // The model sees the page too, when it takes images (a note says where it does
        // not); a shot too large to send is still saved.
        match crate::protocol::Image::from_bytes(crate::protocol::ImageFormat::Png, &bytes) {
            Ok(image) => output.with_images(vec![image]),
            Err(_) => output,
        }
    }
}

/// The browser `capture_screenshot` would run for the workspace at `root`:
/// `LINGGEN_CHROMIUM`, else `[tools] chromium`, else the first of [`CHROMIUM_NAMES`] on
/// `PATH` (outside `root`). The error says how to install one.
pub fn locate_chromium(
    settings: &ScreenshotSettings,
    root: &Path,
) -> Result<PathBuf, chromium::ChromiumNotFound> {
    chromium::find(
        settings.chromium_env.as_deref().map(std::ffi::OsStr::new),
        settings.chromium.as_deref(),
        std::env::var_os("PATH").as_deref(),
        root,
    )
}

/// `Ok` when something accepts a TCP connection at the URL's host and port.
async fn reachable(url: &Url) -> Result<(), String> {
    let shown = url.host_str().unwrap_or_default();
    let host = shown.trim_start_matches('[').trim_end_matches(']');
    let port = url.port_or_known_default().unwrap_or(80);
    let connect = tokio::net::TcpStream::connect((host, port));
    match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(format!(
            "nothing answers at {shown}:{port} ({e}); start the web server first (or check the \
             port), then call capture_screenshot again"
        )),
        Err(_) => Err(format!(
            "{shown}:{port} did not accept a connection within {} s; check that the server is \
             running, then call capture_screenshot again",
            CONNECT_TIMEOUT.as_secs()
        )),
    }
}

/// Writes `bytes` to a new file under [`DIR`] named `<stamp>.png` (or `<stamp>-N.png` when
/// that exists); returns its path relative to the root.
async fn save(ctx: &ToolContext, stamp: &str, bytes: &[u8]) -> Result<String, String> {
    for n in 0..100u32 {
        let name = match n {
            0 => format!("{stamp}.png"),
            n => format!("{stamp}-{n}.png"),
        };
        let resolved = ctx
            .resolve(&format!("{DIR}/{name}"), PathUse::Write)
            .map_err(|why| format!("cannot save the screenshot: {why}"))?;
        if let Some(parent) = resolved.abs.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| format!("cannot create {DIR}: {e}"))?;
            ignore_in_git(parent).await;
        }
        // `create_new` never replaces or follows what is already there (a symlink someone
        // planted under this name included); the next name is tried instead.
        let file = tokio::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&resolved.abs)
            .await;
        let mut file = match file {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(format!(
                    "cannot save the screenshot to {}: {e}",
                    resolved.rel
                ));
            }
        };
        let written = async {
            file.write_all(bytes).await?;
            file.flush().await
        };
        return match written.await {
            Ok(()) => Ok(resolved.rel),
            Err(e) => {
                // Half a PNG (a full disk) is worth nothing, and the name was new: remove it.
                let _ = tokio::fs::remove_file(&resolved.abs).await;
                Err(format!(
                    "cannot save the screenshot to {}: {e}",
                    resolved.rel
                ))
            }
        };
    }
    Err(format!(
        "cannot save the screenshot: too many files named {stamp}*.png in {DIR}"
    ))
}

/// Screenshots are output, not project files: a `.gitignore` of `*` in their folder keeps
/// them out of `git status` (and out of Glob and Grep) without touching the project's own
/// `.gitignore`. Best effort: a screenshot is still saved when this fails.
async fn ignore_in_git(dir: &Path) {
    let file = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dir.join(".gitignore"))
        .await;
    if let Ok(mut file) = file {
        let _ = file
            .write_all(b"# Written by linggen: screenshots are not project files.\n*\n")
            .await;
    }
}

/// `20251121-145804-123` (UTC, milliseconds): sorts by time and needs no quoting anywhere.
fn timestamp(now: SystemTime) -> String {
    let ms = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let t = crate::clock::Utc::from_unix((ms / 1000) as i64);
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}-{:03}",
        t.year,
        t.month,
        t.day,
        t.hour,
        t.minute,
        t.second,
        ms % 1000
    )
}

fn kilobytes(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests;
