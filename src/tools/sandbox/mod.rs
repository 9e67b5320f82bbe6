//! Kernel confinement of the commands the agent runs: the floor that holds when the shell
//! analysis (`guard::shell`) is wrong. The analysis decides whether a command may run
//! without asking; this decides what any command can do once it runs:
//!
//! - writes only inside the workspace root, a private temporary directory and the folders
//!   the person lists in `[sandbox] write_paths` (Landlock);
//! - the protected paths inside the root (`.git`, `.linggen`, `linggen-agent.toml`,
//!   `agents`, `.agents`) read-only (bind mounts in a private mount namespace);
//! - the usual secret stores and `$LINGGEN_HOME` hidden behind empty mounts;
//! - no network unless `[sandbox] network = true` (a new network namespace with only
//!   loopback);
//! - no signals to, or abstract sockets of, processes outside the sandbox (Landlock ABI 6);
//! - secrets scrubbed from the environment ([`env`]).
//!
//! Why these mechanisms, and the platforms where the floor is weaker: doc/security.md.

mod child;
pub mod env;
mod landlock;
pub mod secrets;
mod traps;
pub mod walls;

pub use secrets::{HiddenKind, HiddenPath, Secrets};
// Its settings are the configuration's (`config::tools`), read here.
pub use crate::config::tools::{SandboxSettings, Unconfined};

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The paths inside the root that commands may read but never write: git executes what
/// `.git` says (hooks, `core.fsmonitor`), and the others grant the agent powers
/// (`.claude/commands`: custom commands' `allowed-tools`).
pub const PROTECTED: &[&str] = &[
    ".git",
    ".linggen",
    "linggen-agent.toml",
    "agents",
    ".agents",
    ".claude/commands",
];

/// Secret stores under the home directory, hidden from every command and file tool.
const SECRET_STORES: &[&str] = &[
    ".ssh",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".kube",
    ".docker",
    ".gnupg",
    ".password-store",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".vault-token",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".local/share/keyrings",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
];

/// Whether commands can be confined on this machine; probed once per process.
#[derive(Debug, Clone, PartialEq)]
pub enum Support {
    Available { landlock_abi: u32 },
    Unavailable(String),
}

pub fn support() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(probe)
}

fn probe() -> Support {
    if !cfg!(target_os = "linux") {
        return Support::Unavailable("commands can only be confined on Linux so far".into());
    }
    let abi = match landlock::abi() {
        Ok(abi) => abi,
        Err(why) => return Support::Unavailable(why),
    };
    if let Some(why) = user_namespaces_unavailable() {
        return Support::Unavailable(why);
    }
    Support::Available { landlock_abi: abi }
}

/// The read-only spots inside the root need a private mount namespace, which an ordinary
/// user gets through a user namespace. These switches turn that off; a real failure is
/// still caught when the first command starts.
fn user_namespaces_unavailable() -> Option<String> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return None;
    }
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return Some(
            "user namespaces are turned off (kernel.unprivileged_userns_clone = 0)".into(),
        );
    }
    if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return Some("user namespaces are turned off (user.max_user_namespaces = 0)".into());
    }
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return Some(
            "AppArmor restricts user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)"
                .into(),
        );
    }
    None
}

/// One session's sandbox: the settings, the paths they name, and the private temporary
/// directory (created on first use, removed with the sandbox).
#[derive(Debug)]
pub struct Sandbox {
    settings: SandboxSettings,
    root: PathBuf,
    /// The person's home, where the secret stores are.
    home: Option<PathBuf>,
    /// `$LINGGEN_HOME`: sessions, trust, settings. Hidden too.
    linggen_home: Option<PathBuf>,
    /// The models' `api_key_env` names: scrubbed whatever they are called.
    secret_env: Vec<String>,
    /// `--add-dir` folders: writable like the root, with the root's protected paths.
    added_roots: Vec<PathBuf>,
    temp: OnceLock<Result<PathBuf, String>>,
    /// The `.git` entries under the root, recorded before the first command (see [`traps`]).
    git_entries: std::sync::Mutex<Option<traps::Baseline>>,
}

impl Sandbox {
    pub fn new(root: &Path, settings: SandboxSettings) -> Sandbox {
        // Commands may write here: linggen never takes a program from these folders.
        let mut writable = vec![root];
        writable.extend(settings.write_paths.iter().map(PathBuf::as_path));
        super::launch::distrust(&writable);
        Sandbox {
            settings,
            root: root.to_path_buf(),
            home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
            linggen_home: None,
            secret_env: Vec::new(),
            added_roots: Vec::new(),
            temp: OnceLock::new(),
            git_entries: std::sync::Mutex::new(None),
        }
    }

    /// Opens `--add-dir` folders (canonical) like the root: writable, their `.git`,
    /// `.linggen` and the other protected paths read-only.
    pub fn with_added_roots(mut self, roots: &[PathBuf]) -> Sandbox {
        super::launch::distrust(&roots.iter().map(PathBuf::as_path).collect::<Vec<_>>());
        self.settings.write_paths.extend(roots.iter().cloned());
        self.added_roots = roots.to_vec();
        self
    }

    /// The person's home, where the secret stores are (`$HOME` unless set here).
    pub fn with_home(mut self, home: &Path) -> Sandbox {
        self.home = Some(home.to_path_buf());
        self
    }

    pub fn with_linggen_home(mut self, home: &Path) -> Sandbox {
        self.linggen_home = Some(home.to_path_buf());
        self
    }

    /// The same walls opened for one program: the machine's network shared when `network`,
    /// and `writes` writable besides. For an MCP server whose configuration says it needs the
    /// network, or that a package runner (`npx`, `uvx`) starts with its cache.
    pub fn widened(&self, network: bool, writes: &[PathBuf]) -> Sandbox {
        let mut settings = self.settings.clone();
        settings.network |= network;
        settings.write_paths.extend(writes.iter().cloned());
        let mut sandbox = Sandbox::new(&self.root, settings);
        sandbox.home = self.home.clone();
        sandbox.linggen_home = self.linggen_home.clone();
        sandbox.secret_env = self.secret_env.clone();
        sandbox.added_roots = self.added_roots.clone();
        sandbox
    }

    pub fn with_secret_env(mut self, names: Vec<String>) -> Sandbox {
        self.secret_env = names;
        self
    }

    pub fn settings(&self) -> &SandboxSettings {
        &self.settings
    }

    /// Why commands run unconfined, or `None` when they are confined.
    pub fn unconfined_reason(&self) -> Option<String> {
        if !self.settings.enabled {
            return Some("the sandbox is turned off ([sandbox] enabled = false)".into());
        }
        match support() {
            Support::Available { .. } => None,
            Support::Unavailable(why) => Some(why.clone()),
        }
    }

    /// Whether an unconfined command needs a person (`[sandbox] unconfined`).
    pub fn unconfined_asks(&self) -> bool {
        self.settings.unconfined == Unconfined::Ask
    }

    /// The protected paths of this root (existing or not).
    pub fn protected_paths(&self) -> Vec<PathBuf> {
        std::iter::once(&self.root)
            .chain(&self.added_roots)
            .flat_map(|root| PROTECTED.iter().map(move |p| root.join(p)))
            .collect()
    }

    /// Every hidden path and why: the secret stores (less those `allow_read` opens),
    /// `$LINGGEN_HOME`'s private part and `deny_read`. See [`secrets`].
    pub fn hidden(&self) -> Vec<HiddenPath> {
        let mut hidden: Vec<HiddenPath> = Vec::new();
        let entry = |kind| move |path| HiddenPath { path, kind };
        if let Some(home) = &self.home {
            let allowed = |p: &PathBuf| self.settings.allow_read.iter().any(|a| p.starts_with(a));
            hidden.extend(
                SECRET_STORES
                    .iter()
                    .map(|s| home.join(s))
                    .filter(|p| !allowed(p))
                    .map(entry(HiddenKind::SecretStore)),
            );
        }
        if let Some(linggen_home) = &self.linggen_home {
            hidden.extend(
                linggen_home_private(linggen_home)
                    .into_iter()
                    .map(entry(HiddenKind::LinggenHome)),
            );
        }
        hidden.extend(
            self.settings
                .deny_read
                .iter()
                .cloned()
                .map(entry(HiddenKind::DenyRead)),
        );
        hidden
    }

    /// Paths hidden from commands. One that contains the root is left visible: hiding it
    /// would hide the workspace itself.
    pub fn hidden_paths(&self) -> Vec<PathBuf> {
        self.hidden()
            .into_iter()
            .map(|h| h.path)
            .filter(|p| !self.root.starts_with(p))
            .collect()
    }

    /// The same paths as file tools check them (canonical; see [`Secrets`]). Lists
    /// `$LINGGEN_HOME` and canonicalizes each path: compute it once per call, not per file.
    pub fn secrets(&self) -> Secrets {
        Secrets::new(&self.root, self.hidden())
    }

    /// Paths commands may write: the root, the private temporary directory, `write_paths`.
    pub fn writable_paths(&self) -> Vec<PathBuf> {
        let mut paths = vec![self.root.clone()];
        if let Some(Ok(temp)) = self.temp.get() {
            paths.push(temp.clone());
        }
        paths.extend(self.settings.write_paths.iter().cloned());
        paths
    }

    /// The private temporary directory (mode 0700), made on first use.
    pub(in crate::tools) fn temp_dir(&self) -> Result<&Path, String> {
        let made = || {
            let dir = make_temp_dir()?;
            super::launch::distrust(&[&dir]);
            Ok(dir)
        };
        match self.temp.get_or_init(made) {
            Ok(path) => Ok(path),
            Err(e) => Err(e.clone()),
        }
    }

    /// Records the `.git` entries under the root, once, before the first command. Walks
    /// the tree: call from a blocking thread.
    pub fn watch_git_entries(&self) {
        let mut entries = match self.git_entries.lock() {
            Ok(entries) => entries,
            Err(poisoned) => poisoned.into_inner(),
        };
        if entries.is_none() {
            *entries = Some(traps::Baseline::take(&self.root));
        }
    }

    /// After a command: undoes each nested repository it left that would make the person's
    /// git run a program, one line each. Walks the tree: call from a blocking thread.
    pub fn sweep_git_traps(&self) -> Vec<String> {
        let mut entries = match self.git_entries.lock() {
            Ok(entries) => entries,
            Err(poisoned) => poisoned.into_inner(),
        };
        entries
            .get_or_insert_with(traps::Baseline::default)
            .sweep(&self.root)
    }

    /// Removes secrets from the command's environment (always, confined or not).
    pub fn scrub_env(&self, cmd: &mut std::process::Command) {
        for (name, _) in std::env::vars_os() {
            let Some(name) = name.to_str() else { continue };
            if env::is_secret(name, &self.secret_env)
                && !self.settings.env_allow.iter().any(|a| a == name)
            {
                cmd.env_remove(name);
            }
        }
    }

    /// Makes `cmd` start inside the sandbox, in a PID namespace of its own when `contain`
    /// (see `launch::lifetime`). An `Err` says why it could not be set up; the command must
    /// then not run. Called only by the launcher.
    pub(in crate::tools) fn confine(
        &self,
        cmd: &mut std::process::Command,
        contain: bool,
    ) -> Result<(), String> {
        use std::os::unix::process::CommandExt as _;
        let Support::Available { landlock_abi } = support() else {
            return Err(self.unconfined_reason().unwrap_or_default());
        };
        let temp = self.temp_dir()?.to_path_buf();
        let mut ruleset = landlock::Ruleset::new(*landlock_abi)
            .map_err(|e| format!("cannot create a Landlock ruleset: {e}"))?;
        grant_reads(&mut ruleset).map_err(|e| format!("Landlock rule: {e}"))?;
        let writable = self.writable_paths();
        for path in &writable {
            ruleset
                .allow(path, landlock::READ_WRITE)
                .map_err(|e| format!("Landlock rule for {}: {e}", path.display()))?;
        }
        let setup = child::ChildSetup::new(
            child::Walls {
                network: self.settings.network,
                contain,
                writable: &writable,
                read_only: &self.protected_paths(),
                hidden: &self.hidden_paths(),
            },
            ruleset,
        );
        cmd.env("TMPDIR", &temp);
        // SAFETY: `enter` only makes system calls on data prepared above (no allocation,
        // no locks), which is what is allowed between fork and exec.
        unsafe {
            cmd.pre_exec(move || setup.enter());
        }
        Ok(())
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Some(Ok(temp)) = self.temp.get() {
            let _ = std::fs::remove_dir_all(temp);
        }
    }
}

/// What to hide of `$LINGGEN_HOME`: everything (the session database, trust, settings)
/// except the skills, agents and themes the person installed there, which a skill's own
/// scripts may need to run. When the folder cannot be listed, all of it.
fn linggen_home_private(home: &Path) -> Vec<PathBuf> {
    const SHARED: &[&str] = &["skills", "agents", "themes"];
    let Ok(entries) = std::fs::read_dir(home) else {
        return vec![home.to_path_buf()];
    };
    let names: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
    if !names.iter().any(|n| SHARED.iter().any(|s| n == *s)) {
        return vec![home.to_path_buf()];
    }
    names
        .into_iter()
        .filter(|n| !SHARED.iter().any(|s| n == *s))
        .map(|n| home.join(n))
        .collect()
}

/// Reading is allowed everywhere except `/dev`, where only the harmless devices are
/// readable (for root, `/dev/sda` would otherwise be a way around the hidden files).
fn grant_reads(ruleset: &mut landlock::Ruleset) -> std::io::Result<()> {
    // Listing directories (not reading files) everywhere, `/` included.
    ruleset.allow(Path::new("/"), landlock::READ_DIR)?;
    for entry in std::fs::read_dir("/")?.flatten() {
        if entry.file_name() != "dev" {
            ruleset.allow(&entry.path(), landlock::READ)?;
        }
    }
    for dev in [
        "null", "zero", "full", "random", "urandom", "tty", "ptmx", "pts",
    ] {
        let access =
            landlock::READ | landlock::WRITE_FILE | landlock::TRUNCATE | landlock::IOCTL_DEV;
        let access = if matches!(dev, "random" | "urandom") {
            landlock::READ
        } else {
            access
        };
        ruleset.allow(&Path::new("/dev").join(dev), access)?;
    }
    Ok(())
}

fn make_temp_dir() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt as _;
    let mut bytes = [0u8; 8];
    getrandom::getrandom(&mut bytes).map_err(|e| format!("no randomness for a temp dir: {e}"))?;
    let name: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let dir = std::env::temp_dir().join(format!("linggen-{name}"));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // Landlock rules and the command's TMPDIR must name the real directory.
    dir.canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", dir.display()))
}

#[cfg(test)]
mod tests;
