//! Package runners: most servers in people's `.mcp.json` are `npx -y PACKAGE` or
//! `uvx PACKAGE`, which download the server before running it. Confined without the network
//! and without their cache they cannot start at all, so a server started by one gets both:
//! the network, and write access to that runner's cache folders under the person's home
//! (nothing else of the home; secret stores stay hidden).

use std::path::{Path, PathBuf};

/// A package runner and the cache folders it writes, relative to the home.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Runner {
    pub name: &'static str,
    caches: &'static [&'static str],
}

const RUNNERS: &[Runner] = &[
    Runner {
        name: "npx",
        caches: &[".npm"],
    },
    Runner {
        name: "npm",
        caches: &[".npm"],
    },
    Runner {
        name: "pnpm",
        caches: &[".cache/pnpm", ".local/share/pnpm"],
    },
    Runner {
        name: "yarn",
        caches: &[".cache/yarn", ".yarn"],
    },
    Runner {
        name: "bunx",
        caches: &[".bun"],
    },
    Runner {
        name: "bun",
        caches: &[".bun"],
    },
    Runner {
        name: "uvx",
        caches: &[".cache/uv", ".local/share/uv"],
    },
    Runner {
        name: "uv",
        caches: &[".cache/uv", ".local/share/uv"],
    },
    Runner {
        name: "pipx",
        caches: &[".cache/pipx", ".local/pipx"],
    },
    Runner {
        name: "deno",
        caches: &[".cache/deno"],
    },
];

/// The runner `command` is (by its file name), if it is one.
pub fn needs(command: &str) -> Option<Runner> {
    let name = Path::new(command).file_name()?.to_str()?;
    RUNNERS.iter().copied().find(|r| r.name == name)
}

impl Runner {
    /// Its cache folders under `$HOME`, made if missing (the sandbox opens folders that
    /// exist). None without a home.
    pub fn writable(&self) -> Vec<PathBuf> {
        let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) else {
            return Vec::new();
        };
        self.caches
            .iter()
            .map(|c| Path::new(&home).join(c))
            .filter(|dir| std::fs::create_dir_all(dir).is_ok())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::needs;

    #[test]
    fn runners_are_known_by_file_name() {
        assert_eq!(needs("npx").map(|r| r.name), Some("npx"));
        assert_eq!(needs("/usr/local/bin/uvx").map(|r| r.name), Some("uvx"));
        assert!(needs("node").is_none());
        assert!(needs("my-npx-wrapper").is_none());
    }
}
