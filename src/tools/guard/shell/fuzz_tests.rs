//! Random and adversarial commands against the analysis: it never panics, and the work it
//! does before anyone is asked (counted by [`work::tick`]) grows linearly with the
//! command's length. No clock is involved: the step count is the measure.

use std::fs;
use std::os::unix::fs::symlink;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use super::{analyze, work};

/// Steps allowed per byte of command (plus one). The worst input below takes about 45 (a
/// chain of `cd`s, each checked from every directory tracked so far); a quadratic or
/// exponential walk over the adversarial inputs (thousands of bytes) exceeds it by orders
/// of magnitude.
const STEPS_PER_BYTE: u64 = 200;

/// xorshift64*: small, seeded, reproducible; no dependency needed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Words, quotes, operators, redirections, globs, `cd`, `..`, options, Unicode and control
/// characters: the pieces a random command is made of.
const PIECES: &[&str] = &[
    "ls",
    "cat",
    "cd",
    "git",
    "sed",
    "grep",
    "find",
    "diff",
    "tee",
    "echo",
    "rm",
    "cargo",
    "status",
    "log",
    "config",
    "-i",
    "-i.bak",
    "-ni'*'",
    "--in-place=.x",
    "-e",
    "s/a/b/",
    "-kf/etc/passwd",
    "-rf",
    "-L",
    "-r",
    "-R",
    "--files0-from=x",
    "-exec",
    "--",
    "-",
    "..",
    "../",
    "./",
    "/",
    "/etc/passwd",
    "~",
    "~/x",
    ".git",
    ".git/config",
    "src",
    "lnk",
    "loop",
    "d",
    "sub",
    "*",
    "?",
    "[a]",
    "[",
    "]",
    "{a,b}",
    "{",
    "}",
    "'",
    "\"",
    "\\",
    "$",
    "$HOME",
    "${X}",
    "$(",
    "`",
    "|",
    "||",
    "&&",
    ";",
    "&",
    ">",
    ">>",
    "<",
    "<>",
    "2>&1",
    ">&",
    "(",
    ")",
    "=",
    "x=y",
    "--opt=",
    " ",
    " ",
    " ",
    "\t",
    "é",
    "🦀",
    "\u{202e}",
    "\u{7f}",
    "\n",
    "\0",
    "if",
    "then",
    "do",
    "!",
    "-C",
    "-c",
    "a",
    "b",
    "x",
    "y",
];

fn random_command(rng: &mut Rng) -> String {
    if rng.below(8) == 0 {
        let bytes: Vec<u8> = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
        return String::from_utf8_lossy(&bytes).into_owned();
    }
    let mut command = String::new();
    for _ in 0..rng.below(24) + 1 {
        command.push_str(rng.pick(PIECES));
        if rng.below(3) > 0 {
            command.push(' ');
        }
    }
    command
}

/// Commands built to make a naive analysis branch, rescan or backtrack.
fn adversarial() -> Vec<String> {
    let mut commands = vec![
        format!("{}ls", "cd . && ".repeat(200)),
        format!("{}ls", "cd src && cd .. && ".repeat(100)),
        format!("{}ls", "cd src || ".repeat(200)),
        format!("{}ls", "cd sub; ".repeat(200)),
        "a".repeat(10_000),
        format!("echo {}", "'\"'\"".repeat(2_500)),
        format!("echo {}", "\"'\"'".repeat(2_500)),
        format!("echo {}]", "[".repeat(10_000)),
        format!("cat {}]", "[".repeat(10_000)),
        format!("cat {}*", "*/".repeat(2_000)),
        format!("cat -{}/etc", "a".repeat(5_000)),
        format!("cat -kf{}", "a/".repeat(2_000)),
        format!("cat {}", "x=".repeat(5_000)),
        format!("ls {}", "-kf/x ".repeat(2_000)),
        format!("cat {}x", "lnk/../".repeat(1_000)),
        format!("cat {}x", "loop/".repeat(1_000)),
        format!("cat {}x", "src/../".repeat(2_000)),
        format!("cat {}", "./".repeat(5_000)),
        format!("{}ls", "ls | ".repeat(2_000)),
        format!("ls {}", "* ".repeat(2_000)),
        format!("ls {}", "*/* ".repeat(1_000)),
        format!("sed {}f", "-e p ".repeat(1_000)),
        format!("sed -n '{}' f", "p;".repeat(5_000)),
        format!("sed 's/{}/x/' f", "[".repeat(5_000)),
        format!("git {}status", "--no-pager ".repeat(1_000)),
        format!("{}ls", "if then ".repeat(1_000)),
        format!("diff -r {}", "src ".repeat(500)),
        format!("echo x {}", "> o ".repeat(2_000)),
        format!("{}", "{a,".repeat(3_000)),
        format!("tee {}", "f ".repeat(3_000)),
        "\\".repeat(10_001),
        format!("ls {}", "*a".repeat(30)),
        format!("ls {}", "*".repeat(10_000)),
        format!("ls {}", ".*/".repeat(60)),
        format!("rm {}", "[!a-z]*".repeat(9)),
        format!("rm {}", ".gi? ".repeat(2_000)),
        format!("cat {}", "-a@=<".repeat(1_000)),
        format!("sed -i.b{} s/a/b/ f", "x".repeat(5_000)),
        format!("git config {}", "x ".repeat(3_000)),
        format!("cd sub && {}", "git status; ".repeat(500)),
        format!("diff {}", "d ".repeat(2_000)),
        format!("ls {}", "\\ ".repeat(5_000)),
    ];
    let chain: String = (0..40).map(|i| format!("cd d{i} && ")).collect();
    commands.push(format!("{chain}ls"));
    commands
}

/// A workspace with the things the analysis walks: symlinks in and out, a symlink loop, a
/// nested repository, a directory to scan.
fn fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for sub in ["src", ".git", "d", "sub/.git", "d0/d1/d2"] {
        fs::create_dir_all(root.join(sub)).unwrap();
    }
    fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    symlink("/etc", root.join("out")).unwrap();
    symlink(root.join("src"), root.join("lnk")).unwrap();
    symlink(".", root.join("loop")).unwrap();
    symlink("/etc/passwd", root.join("d/p")).unwrap();
    (dir, root)
}

/// Runs the analysis on `command`; the failure message, if it panicked or worked too hard.
fn check(command: &str, root: &Path) -> Option<String> {
    work::reset();
    let outcome = catch_unwind(AssertUnwindSafe(|| analyze(command, root, None)));
    let steps = work::steps();
    let shown: String = command.chars().take(120).collect();
    if outcome.is_err() {
        return Some(format!("panicked on {shown:?}"));
    }
    let limit = STEPS_PER_BYTE * (command.len() as u64 + 1);
    (steps > limit).then(|| {
        format!(
            "{steps} steps (limit {limit}) for {} bytes: {shown:?}",
            command.len()
        )
    })
}

#[test]
fn random_commands_never_panic_and_stay_linear() {
    let (_d, root) = fixture();
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let failures: Vec<String> = (0..4_000)
        .filter_map(|_| check(&random_command(&mut rng), &root))
        .take(10)
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn adversarial_commands_stay_linear() {
    let (_d, root) = fixture();
    let failures: Vec<String> = adversarial()
        .iter()
        .filter_map(|command| check(command, &root))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
