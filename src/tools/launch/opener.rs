//! Opening a link in the person's browser without putting it on a command line.
//!
//! Every user of the machine can read every process's arguments (`/proc/*/cmdline`). A
//! `/share` link carries a ticket that grants control of the session to whoever uses it
//! first, so the opener is handed a `file://` page instead, in a folder only the person can
//! read (0700, the page 0600), that sends the browser on to the link — as notebook servers
//! do. The page is removed a little later; by then the browser has used the ticket.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use super::{Confinement, Env, Launch, Lifetime, Program};

/// How long the redirect page stays: long enough for a browser that starts slowly.
const PAGE_LIFETIME: Duration = Duration::from_secs(120);

/// `$BROWSER`, else the desktop's opener.
pub fn browser_program() -> String {
    std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty())
        .unwrap_or_else(|| {
            if cfg!(target_os = "macos") {
                "open".into()
            } else {
                "xdg-open".into()
            }
        })
}

/// Why the browser did not open; the caller shows the link instead.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot write the redirect page: {0}")]
    Page(std::io::Error),
    #[error(transparent)]
    Launch(#[from] super::LaunchError),
    #[error("cannot run {program}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
}

/// Opens `url` with `program` (`$BROWSER`, else the desktop's opener) through a private
/// redirect page.
pub fn open(program: &str, url: &str) -> Result<(), OpenError> {
    let page = write_redirect(url).map_err(OpenError::Page)?;
    let page_url = format!("file://{}", page.display());
    let program_path = Path::new(program);
    let launch = Launch {
        program: if program_path.is_absolute() {
            Program::Path(program_path)
        } else {
            Program::Named(program.as_ref())
        },
        env: Env::Desktop,
        // The person's browser: it shows their desktop and keeps their profile, which the
        // sandbox would hide, and it must outlive linggen.
        confinement: Confinement::Unconfined("the person's own browser, on their desktop"),
        lifetime: Lifetime::Detached("the browser the person reads the session in"),
    };
    let mut child = launch
        .command()?
        .arg(&page_url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| OpenError::Spawn {
            program: program.to_string(),
            source,
        })?;
    // Reaped when it exits, so no zombie stays behind; openers usually exit at once. The
    // page goes after a while (its folder with it).
    let folder = page.parent().map(Path::to_path_buf);
    std::thread::spawn(move || {
        let _ = child.wait();
        std::thread::sleep(PAGE_LIFETIME);
        if let Some(folder) = folder {
            let _ = std::fs::remove_dir_all(folder);
        }
    });
    Ok(())
}

/// A 0600 page in a new 0700 folder that sends the browser to `url`.
fn write_redirect(url: &str) -> std::io::Result<PathBuf> {
    let mut bytes = [0u8; 8];
    getrandom::getrandom(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    let name: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let folder = std::env::temp_dir().join(format!("linggen-open-{name}"));
    std::fs::DirBuilder::new().mode(0o700).create(&folder)?;
    let page = folder.join("open.html");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&page)?;
    let escaped = html_attribute(url);
    write!(
        file,
        "<!doctype html><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"0;url={escaped}\">\
         <title>linggen</title><p><a href=\"{escaped}\">Continue</a></p>"
    )?;
    Ok(page)
}

fn html_attribute(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn the_page_is_private_and_leads_to_the_link() {
        let link = "http://127.0.0.1:9/?ticket=abc&x=\"1\"";
        let page = write_redirect(link).unwrap();
        let mode = std::fs::metadata(&page).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let folder = page.parent().unwrap();
        let mode = std::fs::metadata(folder).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(
            html.contains("url=http://127.0.0.1:9/?ticket=abc&amp;x=&quot;1&quot;"),
            "{html}"
        );
        std::fs::remove_dir_all(folder).unwrap();
    }
}
