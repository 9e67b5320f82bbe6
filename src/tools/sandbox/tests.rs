//! The sandbox on this machine's kernel: what a confined command can and cannot do. These
//! run real commands; where the kernel cannot confine them they say SKIPPED (and fail
//! under `CI=true`, where the machine is known to support it).

use std::path::Path;
use std::process::Stdio;

use super::*;

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(root.join("a.txt"), "hello\n").unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "s3cret\n").unwrap();
    Fixture {
        _dir: dir,
        root,
        outside,
    }
}

fn available() -> bool {
    match support() {
        Support::Available { .. } => true,
        Support::Unavailable(why) => {
            eprintln!("SKIPPED: the kernel cannot confine commands here: {why}");
            assert!(
                std::env::var("CI").is_err(),
                "CI must run the sandbox tests, but: {why}"
            );
            false
        }
    }
}

/// Runs `script` under `/bin/sh` in the sandbox; returns (success, stdout+stderr).
async fn run(sandbox: &Sandbox, cwd: &Path, script: &str) -> (bool, String) {
    let launch = crate::tools::launch::Launch {
        program: crate::tools::launch::Program::Path(Path::new("/bin/sh")),
        env: crate::tools::launch::Env::Scrubbed(sandbox),
        confinement: crate::tools::launch::Confinement::Sandbox(sandbox),
        lifetime: crate::tools::launch::Lifetime::Contained,
    };
    let mut cmd = launch.tokio_command().unwrap();
    cmd.arg("-c")
        .arg(script)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = cmd.output().await.unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[tokio::test]
async fn writes_stay_inside_the_root_and_the_private_temp_dir() {
    if !available() {
        return;
    }
    let f = fixture();
    let sandbox = Sandbox::new(&f.root, SandboxSettings::default());
    let (ok, out) = run(
        &sandbox,
        &f.root,
        "echo new > b.txt && mkdir -p d/e && cat b.txt",
    )
    .await;
    assert!(ok, "{out}");
    assert_eq!(out, "new\n");
    let (ok, out) = run(
        &sandbox,
        &f.root,
        "echo x > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"",
    )
    .await;
    assert!(ok, "{out}");
    let outside = f.outside.join("pwned");
    let (ok, out) = run(&sandbox, &f.root, &format!("touch {}", outside.display())).await;
    assert!(!ok && !outside.exists(), "{out}");
    assert!(out.contains("Read-only file system"), "{out}");
    assert_eq!(
        walls::explain(&sandbox, &out).unwrap_or_default(),
        format!(
            "sandbox: commands may write only inside the workspace and $TMPDIR, not {}; a \
             person can open a folder with [sandbox] write_paths in \
             ~/.linggen/linggen-agent.toml",
            outside.display()
        )
    );
    // Not even /tmp itself: only the private directory.
    let (ok, _) = run(&sandbox, &f.root, "touch /tmp/linggen-sandbox-test-pwned").await;
    assert!(!ok && !Path::new("/tmp/linggen-sandbox-test-pwned").exists());
}

#[tokio::test]
async fn protected_paths_are_read_only_and_cannot_be_moved_away() {
    if !available() {
        return;
    }
    let f = fixture();
    let sandbox = Sandbox::new(&f.root, SandboxSettings::default());
    std::fs::create_dir_all(f.root.join(".linggen/skills")).unwrap();
    for script in [
        "echo '[core] fsmonitor = touch pwned' >> .git/config",
        "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit",
        "mv .git .git-old && mkdir .git",
        "rm -rf .git",
        "echo x > .linggen/skills/evil.md",
        "sed -i.bak s/core/x/ .git/config",
    ] {
        let (ok, out) = run(&sandbox, &f.root, script).await;
        assert!(!ok, "{script}: {out}");
        assert_eq!(
            std::fs::read_to_string(f.root.join(".git/config")).unwrap(),
            "[core]\n",
            "{script}"
        );
    }
    assert!(!f.root.join(".linggen/skills/evil.md").exists());
    let (_, out) = run(&sandbox, &f.root, "echo x >> .git/config").await;
    let wall = walls::explain(&sandbox, &out).unwrap_or_default();
    assert!(
        wall.starts_with("sandbox: .git is read-only"),
        "{out} → {wall}"
    );
    // Reading them is fine.
    let (ok, out) = run(&sandbox, &f.root, "cat .git/config").await;
    assert!(ok && out == "[core]\n", "{out}");
}

#[tokio::test]
async fn hidden_paths_read_as_empty_and_the_rest_stays_readable() {
    if !available() {
        return;
    }
    let f = fixture();
    let settings = SandboxSettings {
        deny_read: vec![f.outside.clone()],
        ..Default::default()
    };
    let sandbox = Sandbox::new(&f.root, settings);
    let (ok, out) = run(
        &sandbox,
        &f.root,
        &format!("cat {}/secret.txt", f.outside.display()),
    )
    .await;
    assert!(!ok && !out.contains("s3cret"), "{out}");
    let wall = walls::explain(&sandbox, &out).unwrap_or_default();
    assert!(
        wall.contains("is hidden from the agent's tools and commands"),
        "{out} → {wall}"
    );
    let (ok, out) = run(
        &sandbox,
        &f.root,
        "cat a.txt && ls /usr/bin >/dev/null && echo ok",
    )
    .await;
    assert!(ok && out == "hello\nok\n", "{out}");
}

#[tokio::test]
async fn there_is_no_network_but_loopback_works_inside() {
    if !available() {
        return;
    }
    let f = fixture();
    let sandbox = Sandbox::new(&f.root, SandboxSettings::default());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let Some(client) = tcp_client(port) else {
        return;
    };
    let (ok, out) = run(&sandbox, &f.root, &client).await;
    assert!(!ok, "connected from the sandbox: {out}");
    assert!(
        listener.accept().is_err(),
        "the host's listener got a connection from the sandbox"
    );
    // The same command unconfined does connect: the test can fail.
    let unconfined = std::process::Command::new("/bin/sh")
        .args(["-c", &client])
        .output()
        .unwrap();
    assert!(unconfined.status.success(), "{unconfined:?}");
}

/// A shell snippet that opens a TCP connection to 127.0.0.1:port, from what is installed.
fn tcp_client(port: u16) -> Option<String> {
    let has = |p: &str| {
        std::process::Command::new("sh")
            .args(["-c", &format!("command -v {p}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if has("bash") {
        return Some(format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'"));
    }
    if has("python3") {
        return Some(format!(
            "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)'"
        ));
    }
    eprintln!("SKIPPED: neither bash nor python3 to open a TCP connection with");
    assert!(std::env::var("CI").is_err(), "CI needs bash for this test");
    None
}

#[tokio::test]
async fn a_command_cannot_signal_processes_outside_the_sandbox() {
    if !available() {
        return;
    }
    if !matches!(support(), Support::Available { landlock_abi } if *landlock_abi >= 6) {
        eprintln!("SKIPPED: signal scoping needs Landlock ABI 6");
        return;
    }
    let f = fixture();
    let sandbox = Sandbox::new(&f.root, SandboxSettings::default());
    let (ok, out) = run(
        &sandbox,
        &f.root,
        &format!("kill -0 {}", std::process::id()),
    )
    .await;
    assert!(!ok, "{out}");
    let (ok, out) = run(&sandbox, &f.root, "sleep 5 & kill $! && echo killed").await;
    assert!(ok && out == "killed\n", "{out}");
}

#[test]
fn hidden_paths_never_hide_the_workspace() {
    let settings = SandboxSettings {
        deny_read: vec![PathBuf::from("/work"), PathBuf::from("/work/ws/secret")],
        ..Default::default()
    };
    let sandbox = Sandbox::new(Path::new("/work/ws"), settings);
    let hidden = sandbox.hidden_paths();
    assert!(!hidden.contains(&PathBuf::from("/work")));
    assert!(hidden.contains(&PathBuf::from("/work/ws/secret")));
}

#[test]
fn linggen_home_is_hidden_except_what_skills_need() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    std::fs::write(home.join("linggen.db"), "").unwrap();
    let sandbox =
        Sandbox::new(Path::new("/work/ws"), SandboxSettings::default()).with_linggen_home(home);
    assert!(sandbox.hidden_paths().contains(&home.to_path_buf()));
    std::fs::create_dir_all(home.join("skills/x")).unwrap();
    std::fs::write(home.join("trusted.toml"), "").unwrap();
    let hidden = sandbox.hidden_paths();
    assert!(!hidden.contains(&home.to_path_buf()));
    assert!(hidden.contains(&home.join("linggen.db")));
    assert!(hidden.contains(&home.join("trusted.toml")));
    assert!(!hidden.contains(&home.join("skills")));
}

#[test]
fn every_wall_a_command_hit_is_named_once() {
    let settings = SandboxSettings {
        deny_read: vec![PathBuf::from("/home/me/.ssh")],
        ..Default::default()
    };
    let sandbox = Sandbox::new(Path::new("/work/ws"), settings);
    let output = "cat: /home/me/.ssh/id_rsa: No such file or directory\n\
                  touch: cannot touch '/work/outside/pwned': Permission denied\n\
                  ./build.sh: 5: cannot create .git/config: Read-only file system\n\
                  ./build.sh: 6: cannot create .git/HEAD: Read-only file system\n\
                  curl: (6) Could not resolve host: example.com\n\
                  ls: cannot open directory 'src': Permission denied\n";
    let walls = walls::explain(&sandbox, output).unwrap();
    let lines: Vec<&str> = walls.lines().collect();
    assert_eq!(lines.len(), 4, "{walls}");
    assert!(
        lines[0].starts_with("sandbox: .git is read-only"),
        "{walls}"
    );
    assert!(
        lines[1].starts_with("sandbox: /home/me/.ssh is hidden"),
        "{walls}"
    );
    assert!(lines[2].contains("not /work/outside/pwned;"), "{walls}");
    assert!(lines[3].contains("[sandbox] network = true"), "{walls}");
    // Nor is the kernel's own files.
    let kernel = "unshare: cannot open /proc/self/uid_map: Permission denied";
    assert_eq!(walls::explain(&sandbox, kernel), None);
    // An ordinary failure inside the workspace is not blamed on the sandbox.
    assert_eq!(
        walls::explain(
            &sandbox,
            "ls: cannot open directory 'src': Permission denied"
        ),
        None
    );
}
