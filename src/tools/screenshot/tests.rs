use super::*;
use std::fs;

fn setup() -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = ToolContext::new(&dir.path().canonicalize().unwrap());
    // A browser that exists, so parsing does not depend on this machine's PATH.
    ctx.screenshot.chromium = Some("/bin/sh".into());
    (dir, ctx)
}

/// True when `LINGGEN_CHROMIUM` is set in the test's environment: it beats the config, so
/// tests about configured paths cannot hold.
fn env_overrides() -> bool {
    std::env::var_os(CHROMIUM_ENV).is_some_and(|v| !v.is_empty())
}

/// A PNG header for a `width`x`height` image (enough for `png_dimensions`).
fn png_header(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    bytes.extend(width.to_be_bytes());
    bytes.extend(height.to_be_bytes());
    bytes.extend([8, 2, 0, 0, 0]);
    bytes
}

#[test]
fn parses_defaults_aliases_and_caps() {
    if env_overrides() {
        return;
    }
    let (_d, ctx) = setup();
    let a = ScreenshotArgs::parse(&ctx, &json!({"url": "localhost:5173"})).unwrap();
    assert_eq!(a.url.as_str(), "http://localhost:5173/");
    assert_eq!(
        (a.delay_ms, a.width, a.height),
        (DEFAULT_DELAY_MS, DEFAULT_WIDTH, DEFAULT_HEIGHT)
    );
    assert_eq!(a.chromium, PathBuf::from("/bin/sh"));
    assert_eq!(a.summary(), "Screenshot http://localhost:5173/ (1280x800)");
    assert_eq!(
        a.access(),
        Access::Screenshot {
            url: "http://localhost:5173/".into()
        }
    );
    let a = ScreenshotArgs::parse(
        &ctx,
        &json!({"uri": "http://127.0.0.1/", "delay": "999999", "width": 10, "height": 99999}),
    )
    .unwrap();
    assert_eq!((a.delay_ms, a.width, a.height), (MAX_DELAY_MS, 100, 4096));
    let a = ScreenshotArgs::parse(&ctx, &json!({"url": "http://[::1]/", "width": 0})).unwrap();
    assert_eq!(a.width, DEFAULT_WIDTH);
}

#[test]
fn bad_urls_are_refused_before_anyone_is_asked() {
    let (_d, ctx) = setup();
    let err = ScreenshotArgs::parse(&ctx, &json!({})).unwrap_err();
    assert!(
        err.model.contains("capture_screenshot needs `url`"),
        "{}",
        err.model
    );
    for (url, needle) in [
        ("file:///etc/passwd", "only http:// and https://"),
        ("https://example.com/", "`example.com` is neither"),
        ("http://127.0.0.1@example.com/", "user name or password"),
    ] {
        let err = ScreenshotArgs::parse(&ctx, &json!({ "url": url })).unwrap_err();
        assert!(
            err.is_error && err.model.contains(needle),
            "{url}: {}",
            err.model
        );
    }
    let err = ScreenshotArgs::parse(
        &ctx,
        &json!({"url": "http://localhost/", "delay_ms": "soon"}),
    )
    .unwrap_err();
    assert!(err.model.contains("`delay_ms`"), "{}", err.model);
}

#[test]
fn configured_hosts_are_allowed() {
    if env_overrides() {
        return;
    }
    let (_d, mut ctx) = setup();
    // As `[tools] screenshot_hosts = ["MyApp.test"]` reads (config normalizes it).
    ctx.screenshot.hosts = vec!["myapp.test".to_string()];
    let a = ScreenshotArgs::parse(&ctx, &json!({"url": "https://myapp.test:8443/x"})).unwrap();
    assert_eq!(a.url.as_str(), "https://myapp.test:8443/x");
}

#[test]
fn a_configured_browser_that_is_missing_is_a_clear_error() {
    if env_overrides() {
        return;
    }
    let (_d, mut ctx) = setup();
    ctx.screenshot.chromium = Some("/nonexistent/chromium".into());
    let err = ScreenshotArgs::parse(&ctx, &json!({"url": "http://localhost/"})).unwrap_err();
    assert!(
        err.is_error
            && err
                .model
                .contains("[tools] chromium = \"/nonexistent/chromium\"")
            && err.model.contains("apt-get install chromium"),
        "{}",
        err.model
    );
}

#[test]
fn the_tool_is_registered_under_its_contract_name() {
    assert_eq!(
        crate::tools::canonical_name("capture_screenshot"),
        Some("capture_screenshot")
    );
    assert_eq!(
        crate::tools::canonical_name("screenshot"),
        Some("capture_screenshot")
    );
    assert!(crate::tools::all_tool_names().contains(&"capture_screenshot"));
    assert!(
        crate::tools::specs()
            .iter()
            .any(|s| s.name == "capture_screenshot")
    );
}

#[test]
fn png_header_gives_dimensions() {
    assert_eq!(png_dimensions(&png_header(1280, 800)), Some((1280, 800)));
    assert_eq!(png_dimensions(b"<html>not a png</html> padding...."), None);
    assert_eq!(png_dimensions(&png_header(1280, 800)[..20]), None);
    assert_eq!(png_dimensions(&png_header(0, 800)), None);
    let mut wrong_chunk = png_header(1, 1);
    wrong_chunk[12..16].copy_from_slice(b"IDAT");
    assert_eq!(png_dimensions(&wrong_chunk), None);
}

#[test]
fn timestamps_are_utc_and_sortable() {
    let at = |ms: u64| timestamp(UNIX_EPOCH + Duration::from_millis(ms));
    assert_eq!(at(1_763_737_084_123), "20251121-145804-123");
    assert_eq!(at(951_868_799_999), "20000229-235959-999");
    assert_eq!(at(0), "19700101-000000-000");
}

#[tokio::test]
async fn saves_under_the_screenshot_folder_without_overwriting() {
    let (dir, ctx) = setup();
    let png = png_header(2, 2);
    let first = save(&ctx, "20250101-000000-000", &png).await.unwrap();
    let second = save(&ctx, "20250101-000000-000", &png).await.unwrap();
    assert_eq!(first, ".linggen/screenshots/20250101-000000-000.png");
    assert_eq!(second, ".linggen/screenshots/20250101-000000-000-1.png");
    assert_eq!(fs::read(dir.path().join(&first)).unwrap(), png);
    let ignore = fs::read_to_string(dir.path().join(DIR).join(".gitignore")).unwrap();
    assert!(ignore.ends_with("\n*\n"), "{ignore}");
}

#[tokio::test]
async fn a_screenshot_folder_leading_outside_is_refused() {
    let (dir, ctx) = setup();
    let outside = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join(".linggen")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join(".linggen/screenshots")).unwrap();
    let err = save(&ctx, "x", &png_header(1, 1)).await.unwrap_err();
    assert!(err.contains("outside the workspace root"), "{err}");
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn nothing_listening_is_reported_before_starting_a_browser() {
    let (_d, ctx) = setup();
    // A port that was free a moment ago: bind, note it, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/");
    let args = ScreenshotArgs::parse(&ctx, &json!({ "url": url })).unwrap();
    let out = args.run(&ctx).await;
    assert!(
        out.is_error
            && out
                .model
                .contains(&format!("nothing answers at 127.0.0.1:{port}")),
        "{}",
        out.model
    );
    assert!(!ctx.root.join(DIR).exists());
}

/// A stand-in browser: a shell script that records its arguments in `dir/args` and then
/// runs `body` (which sees the screenshot path as `$shot`).
fn fake_browser(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join("fake-chromium");
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{args}'\nfor a in \"$@\"; do case \"$a\" in --screenshot=*) shot=\"${{a#--screenshot=}}\";; esac; done\n{body}\n",
        args = dir.join("args").display()
    );
    fs::write(&path, script).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn shot<'a>(program: &'a Path, kill_after: Duration) -> chromium::Shot<'a> {
    chromium::Shot {
        program,
        url: "http://127.0.0.1:9/page",
        width: 640,
        height: 400,
        delay_ms: 250,
        kill_after,
        sandbox: None,
    }
}

#[tokio::test]
async fn the_browser_gets_headless_flags_and_the_url_last() {
    let dir = tempfile::tempdir().unwrap();
    let png = png_header(640, 400);
    let body = format!(
        "printf '{}' > \"$shot\"",
        png.iter().map(|b| format!("\\{b:03o}")).collect::<String>()
    );
    let program = fake_browser(dir.path(), &body);
    let bytes = chromium::capture(&shot(&program, Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(bytes, png);
    let args = fs::read_to_string(dir.path().join("args")).unwrap();
    let args: Vec<&str> = args.lines().collect();
    for expected in [
        "--headless",
        "--disable-gpu",
        "--window-size=640,400",
        "--virtual-time-budget=250",
        "--timeout=15250",
    ] {
        assert!(args.contains(&expected), "{expected} missing from {args:?}");
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    assert_eq!(args.contains(&"--no-sandbox"), root, "{args:?}");
    assert!(args.iter().any(|a| a.starts_with("--user-data-dir=")));
    assert_eq!(args.last(), Some(&"http://127.0.0.1:9/page"));
}

#[tokio::test]
async fn a_hung_browser_is_killed_with_everything_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("survived");
    let program = fake_browser(
        dir.path(),
        &format!("(sleep 1; touch '{}') &\nsleep 30", marker.display()),
    );
    let started = std::time::Instant::now();
    let err = chromium::capture(&shot(&program, Duration::from_millis(300)))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(err.contains("did not finish within 0.3 s"), "{err}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!marker.exists(), "a child of the browser outlived the kill");
}

#[tokio::test]
async fn a_failing_browser_is_quoted() {
    let dir = tempfile::tempdir().unwrap();
    let program = fake_browser(
        dir.path(),
        "echo '[1:1:ERROR:dbus/bus.cc] Failed to connect to the bus' >&2\necho 'crashed: out of cheese' >&2\nexit 3",
    );
    let err = chromium::capture(&shot(&program, Duration::from_secs(30)))
        .await
        .unwrap_err();
    assert!(
        err.starts_with("Chromium failed (exit status: 3) and took no screenshot; Chromium said:\ncrashed: out of cheese"),
        "{err}"
    );
    let program = fake_browser(dir.path(), "exit 0");
    let err = chromium::capture(&shot(&program, Duration::from_secs(30)))
        .await
        .unwrap_err();
    assert!(err.contains("exited without writing a screenshot"), "{err}");
}

#[tokio::test]
async fn a_file_that_is_not_a_png_is_not_saved() {
    let (dir, mut ctx) = setup();
    let bin = tempfile::tempdir().unwrap();
    let program = fake_browser(bin.path(), "echo '<html>' > \"$shot\"");
    ctx.screenshot.chromium = Some(program.display().to_string());
    // Something must listen, or the call stops before starting the browser.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://127.0.0.1:{}/",
        listener.local_addr().unwrap().port()
    );
    if env_overrides() {
        return;
    }
    let args = ScreenshotArgs::parse(&ctx, &json!({ "url": url })).unwrap();
    let out = args.run(&ctx).await;
    assert!(
        out.is_error && out.model.contains("not a PNG image"),
        "{}",
        out.model
    );
    assert!(!dir.path().join(DIR).exists());
}
