//! Nothing is lost and nothing is left broken (issue 23), through the real binary:
//!
//! - On a full disk, `Write`, `Edit` and `apply_patch` leave the file exactly as it was,
//!   leave no temporary file behind, say that the disk is full, and end the run with an
//!   error (exit 1): the model cannot free space, so the run must not pretend it worked.
//!   The full disk is a real one: a small tmpfs mounted over the workspace in a mount
//!   namespace of the test's own (`unshare`), filled to the last page.
//! - Twenty `-p` runs at once in one workspace each get their checkpoint: they wait for the
//!   shared checkpoint store instead of failing on git's lock files.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use support::{
    Protocol, Reply, ScriptedServer, ServerOptions, Step, Workspace, git_available, linggen_cmd,
    namespace_prefix, run_with_timeout, texts,
};

fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The 112 KB source file of the issue: 28 pages of 4 KiB exactly, lines of 64 bytes.
fn original_source() -> String {
    let text: String = (0..1792)
        .map(|n| format!("    let value_{n:05} = compute({n:05}); // keep this line intact!\n"))
        .map(|line| format!("{line:>64}"))
        .collect();
    assert_eq!(text.len(), 114_688);
    text
}

/// Mounts a tmpfs over the workspace (`$1`), copies the original in as `big.rs`, fills
/// every remaining page, runs linggen (`$3`) with the arguments after it, and copies out
/// to `$2` what the test checks: the mount disappears with the namespace.
const FULL_DISK_SCRIPT: &str = r#"
set -e
ws="$1"; out="$2"; bin="$3"; shift 3
mount -t tmpfs -o size=1m tmpfs "$ws"
cd "$ws"
cp "$out/original.rs" big.rs
dd if=/dev/zero of=filler bs=4096 2>/dev/null || true
dd if=/dev/zero of=filler2 bs=1 2>/dev/null || true
set +e
"$bin" "$@" > "$out/stdout" 2> "$out/stderr"
echo $? > "$out/code"
cp big.rs "$out/after.rs"
ls -A > "$out/listing"
"#;

/// Like [`FULL_DISK_SCRIPT`], but the disk fills between a run that rewrites `big.rs`
/// (while there is room) and the rewind of that run (`linggen rewind ID --only code`):
/// putting the original back needs room too. The filler is ignored, so it is neither in a
/// checkpoint nor a hand edit the rewind would refuse to overwrite.
const FULL_DISK_REWIND_SCRIPT: &str = r#"
set -e
ws="$1"; out="$2"; bin="$3"; shift 3
mount -t tmpfs -o size=1m tmpfs "$ws"
cd "$ws"
cp "$out/original.rs" big.rs
printf 'filler*\n' > .gitignore
"$bin" "$@" > "$out/first" 2>&1
cp big.rs "$out/rewritten.rs"
dd if=/dev/zero of=filler bs=4096 2>/dev/null || true
dd if=/dev/zero of=filler2 bs=1 2>/dev/null || true
id=$("$bin" rewind --list | head -n 1 | cut -d ' ' -f 1)
set +e
"$bin" rewind "$id" --only code > "$out/stdout" 2> "$out/stderr"
echo $? > "$out/code"
cp big.rs "$out/after.rs"
ls -A > "$out/listing"
"#;

/// What a run on the full disk left.
struct FullDiskRun {
    code: i32,
    stdout: String,
    stderr: String,
    after: Vec<u8>,
    listing: Vec<String>,
}

/// Runs `linggen -p` (bypass mode, stream-json) in a workspace on a full tmpfs holding
/// `big.rs` = [`original_source`], with the model scripted to make `call`.
fn run_on_full_disk(prefix: &[&str], call: Reply) -> FullDiskRun {
    let (run, _) = in_namespace(prefix, FULL_DISK_SCRIPT, vec![Step::from(call)], &[]);
    run
}

/// Runs `script` (see [`FULL_DISK_SCRIPT`]) in a mount namespace, with linggen's arguments
/// for one `-p` run (plus `extra`) whose model answers with `steps`, then says it is done.
/// Also returns the folder the script copied to.
fn in_namespace(
    prefix: &[&str],
    script: &str,
    mut steps: Vec<Step>,
    extra: &[&str],
) -> (FullDiskRun, tempfile::TempDir) {
    steps.push(Reply::text("done, all written").into());
    let server = ScriptedServer::start_background(Protocol::OpenAi, steps);
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    let out = tempfile::tempdir().unwrap();
    std::fs::write(out.path().join("original.rs"), original_source()).unwrap();
    let base = linggen_cmd(ws.home(), ws.root());
    let mut cmd = Command::new(prefix[0]);
    cmd.args(&prefix[1..]).args(["sh", "-c", script, "sh"]);
    cmd.arg(ws.root()).arg(out.path()).arg(base.get_program());
    cmd.args([
        "-p",
        "rewrite big.rs",
        "--permission-mode",
        "bypass",
        "--output-format",
        "stream-json",
    ]);
    cmd.args(extra);
    for (name, value) in base.get_envs() {
        match value {
            Some(value) => cmd.env(name, value),
            None => cmd.env_remove(name),
        };
    }
    cmd.stdin(std::process::Stdio::null());
    let done = run_with_timeout(&mut cmd, Duration::from_secs(90));
    let read = |name: &str| std::fs::read(out.path().join(name)).unwrap_or_default();
    let text = |name: &str| String::from_utf8_lossy(&read(name)).into_owned();
    assert!(
        out.path().join("code").exists(),
        "the namespace script failed: {done:?}\n{}",
        text("first")
    );
    let run = FullDiskRun {
        code: text("code").trim().parse().unwrap(),
        stdout: text("stdout"),
        stderr: text("stderr"),
        after: read("after.rs"),
        listing: text("listing").lines().map(str::to_string).collect(),
    };
    (run, out)
}

/// Everything a full disk must not change: the file, byte for byte; no temporary file;
/// the failed call, the reason and an error outcome (exit 1) naming the unmade change.
fn assert_nothing_lost(run: &FullDiskRun, tool: &str) {
    // The stdout lines worth reading: not the messages, which quote the whole file.
    let told: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| {
            !l.contains("\"type\":\"Message\"") && !l.contains("\"type\":\"ToolCallStarted\"")
        })
        .collect();
    let context = format!(
        "{tool}: exit {}\n--- stderr ---\n{}\n--- stdout ---\n{}",
        run.code,
        run.stderr,
        told.join("\n")
    );
    assert!(
        run.after == original_source().as_bytes(),
        "{tool}: big.rs changed ({} bytes now)\n{context}",
        run.after.len()
    );
    assert_eq!(
        run.listing,
        ["big.rs", "filler", "filler2"],
        "a temporary file was left: {context}"
    );
    assert_eq!(run.code, 1, "{context}");
    let events = events(&run.stdout);
    let finished = events
        .iter()
        .find(|e| e["type"] == "ToolCallFinished")
        .unwrap_or_else(|| panic!("no tool call finished: {context}"));
    assert_eq!(finished["tool"], tool, "{context}");
    assert_eq!(finished["ok"], false, "{context}");
    let outcome = events.iter().find(|e| e["type"] == "Outcome").unwrap();
    assert_eq!(outcome["status"], "error", "{context}");
    let result = outcome["result"].as_str().unwrap();
    assert!(
        result.contains("disk is full") && result.contains("big.rs"),
        "{context}"
    );
    assert!(
        result.contains("was not changed") || result.contains("no file was changed"),
        "{context}"
    );
    assert!(run.stderr.contains("disk is full"), "{context}");
    assert!(!run.stderr.contains("panicked"), "{context}");
    // The run stopped at the fault: the model was not asked to carry on as if it worked.
    assert!(
        !run.stdout.contains("done, all written"),
        "the run went on after the failed write: {context}"
    );
}

/// A whole new version of the file, larger than the space the old one frees, and different
/// from its first byte (a cut-off write of it is then never the original by chance).
fn larger_content() -> String {
    original_source().replace("keep this line intact!", "this line was rewritten")
        + &"// more\n".repeat(4096)
}

#[test]
fn write_on_a_full_disk_leaves_the_file_intact_and_fails_the_run() {
    let Some(prefix) = namespace_prefix() else {
        return;
    };
    let call = Reply::tool(
        "Write",
        json!({"path": "big.rs", "content": larger_content()}),
    );
    assert_nothing_lost(&run_on_full_disk(&prefix, call), "Write");
}

#[test]
fn edit_on_a_full_disk_leaves_the_file_intact_and_fails_the_run() {
    let Some(prefix) = namespace_prefix() else {
        return;
    };
    let old = format!(
        "{:>64}",
        "    let value_00900 = compute(00900); // keep this line intact!\n"
    );
    let call = Reply::tool(
        "Edit",
        json!({"path": "big.rs", "old_string": old, "new_string": format!("{old}{}", "// more\n".repeat(4096))}),
    );
    assert_nothing_lost(&run_on_full_disk(&prefix, call), "Edit");
}

#[test]
fn apply_patch_on_a_full_disk_leaves_the_file_intact_and_fails_the_run() {
    let Some(prefix) = namespace_prefix() else {
        return;
    };
    let call = Reply::tool("apply_patch", json!({ "diff": edit_patch() }));
    assert_nothing_lost(&run_on_full_disk(&prefix, call), "apply_patch");
}

/// Auto mode's patch action is an `apply_patch` call: a full disk ends the run the same
/// way, with no further step asked of the model.
#[test]
fn an_auto_mode_patch_on_a_full_disk_fails_the_run() {
    let Some(prefix) = namespace_prefix() else {
        return;
    };
    let action = json!({"type": "patch", "diff": edit_patch()});
    let steps = vec![Reply::text(format!("```json\n{action}\n```")).into()];
    let (run, _) = in_namespace(&prefix, FULL_DISK_SCRIPT, steps, &["--mode", "auto"]);
    assert_nothing_lost(&run, "apply_patch");
}

/// A delegated run that meets a full disk stops, and so does the run that delegated: the
/// parent is not asked to carry on either.
#[test]
fn a_delegated_write_on_a_full_disk_stops_the_parent_too() {
    let Some(prefix) = namespace_prefix() else {
        return;
    };
    let steps = vec![
        Reply::tool(
            "delegate_to_agent",
            json!({"target_agent_id": "coder", "task": "rewrite big.rs"}),
        )
        .into(),
        Reply::tool(
            "Write",
            json!({"path": "big.rs", "content": larger_content()}),
        )
        .into(),
    ];
    let (run, _) = in_namespace(&prefix, FULL_DISK_SCRIPT, steps, &[]);
    assert_nothing_lost(&run, "Write");
    let errors = run.stderr.matches("linggen: error:").count();
    assert_eq!(errors, 1, "one error line: {}", run.stderr);
}

/// A rewind needs room to put the old version back: on a full disk it fails before it
/// changes anything (the file stays as the run left it, no temporary file stays), says the
/// disk is full, and exits 1.
#[test]
fn rewind_on_a_full_disk_changes_nothing() {
    if !git_available() {
        return;
    }
    let Some(prefix) = namespace_prefix() else {
        return;
    };
    // The run makes the file small, so putting the 112 KB original back needs more room
    // than removing the small one frees (writing in place would cut it off).
    let small = "fn main() {}\n";
    let call = Reply::tool("Write", json!({"path": "big.rs", "content": small}));
    let (run, out) = in_namespace(&prefix, FULL_DISK_REWIND_SCRIPT, vec![call.into()], &[]);
    let rewritten = std::fs::read(out.path().join("rewritten.rs")).unwrap();
    let context = format!("exit {}\n{}{}", run.code, run.stdout, run.stderr);
    assert_eq!(rewritten, small.as_bytes(), "the run's Write: {context}");
    assert!(run.after == rewritten, "big.rs changed: {context}");
    assert_eq!(
        run.listing,
        [".gitignore", "big.rs", "filler", "filler2"],
        "{context}"
    );
    assert_eq!(run.code, 1, "{context}");
    assert!(run.stderr.contains("the disk is full"), "{context}");
    assert!(run.stderr.contains("no file was changed"), "{context}");
    assert_eq!(run.stderr.lines().count(), 1, "{context}");
}

/// A patch that adds 300 long lines after line 901 of `big.rs`: under the 400 lines above
/// which a person must confirm a patch, whatever the mode.
fn edit_patch() -> String {
    let line = format!(
        "{:>63}",
        "    let value_00900 = compute(00900); // keep this line intact!"
    );
    let added: String = (0..300)
        .map(|n| format!("+// added line {n:03} {}\n", "x".repeat(80)))
        .collect();
    format!("--- a/big.rs\n+++ b/big.rs\n@@ -901,1 +901,301 @@\n {line}\n{added}")
}

/// Answers every run of the concurrent test from the request itself: the first request of
/// a run (its prompt names the file) gets a `Write` of that file, a request that carries
/// the tool's result gets the final answer.
fn write_the_named_file(body: &Value) -> Option<Reply> {
    let answered = body["messages"]
        .as_array()?
        .iter()
        .any(|m| m["role"] == "tool");
    if answered {
        return Some(Reply::text("written"));
    }
    let prompt = texts(body, "user").last()?.clone();
    let file = prompt.strip_prefix("write ")?.trim().to_string();
    Some(Reply::tool(
        "Write",
        json!({"path": file, "content": format!("made for {file}\n")}),
    ))
}

/// Twenty runs at once in one workspace, each writing its own file in bypass mode: every
/// one takes its checkpoint (before) and closes it (after), none warns, and no git text
/// reaches stderr; `linggen runs show` lists each run's checkpoint.
#[test]
fn twenty_concurrent_runs_each_get_their_checkpoint() {
    if !git_available() {
        return;
    }
    const RUNS: usize = 20;
    let mut options = ServerOptions::new(Protocol::OpenAi);
    options.responder = Some(write_the_named_file);
    let server = ScriptedServer::start_with(options, Vec::<Step>::new());
    let ws = Workspace::new();
    ws.configure(Protocol::OpenAi, &server.url());
    // Enough files that a snapshot takes a while, so the runs overlap.
    for n in 0..300 {
        ws.write(&format!("src/f{n}.txt"), &format!("file {n}\n"));
    }
    let children: Vec<_> = (0..RUNS)
        .map(|n| {
            let root = ws.root().to_path_buf();
            let home = ws.home().to_path_buf();
            std::thread::spawn(move || {
                let mut cmd = linggen_cmd(&home, &root);
                cmd.args([
                    "-p",
                    &format!("write out{n}.txt"),
                    "--permission-mode",
                    "bypass",
                    "--output-format",
                    "stream-json",
                ]);
                run_with_timeout(&mut cmd, Duration::from_secs(240))
            })
        })
        .collect();
    let mut run_ids = Vec::new();
    for (n, child) in children.into_iter().enumerate() {
        let out = child.join().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let context = format!("run {n}: {:?}\n{stderr}", out.status);
        assert!(out.status.success(), "{context}");
        let events = events(&stdout);
        let count = |kind: &str| events.iter().filter(|e| e["type"] == kind).count();
        assert_eq!(count("CheckpointCreated"), 1, "{context}");
        assert_eq!(count("CheckpointClosed"), 1, "{context}");
        assert_eq!(count("Warning"), 0, "{context}");
        for noise in ["fatal:", "index.lock", "checkpoint", "git"] {
            assert!(!stderr.contains(noise), "{noise:?} on stderr: {context}");
        }
        assert_eq!(
            ws.read(&format!("out{n}.txt")),
            format!("made for out{n}.txt\n")
        );
        let run_id = events
            .iter()
            .find(|e| e["type"] == "RunStarted")
            .and_then(|e| e["run_id"].as_str())
            .unwrap()
            .to_string();
        run_ids.push(run_id);
    }
    for run_id in run_ids {
        let shown = support::run(&ws, &["runs", "show", &run_id]);
        assert_eq!(shown.code, Some(0), "{}", shown.stderr);
        assert!(
            shown.stdout.to_lowercase().contains("checkpoint"),
            "{run_id}: {}",
            shown.stdout
        );
    }
}
