//! The manual pages in `man/` must be exactly what clap_mangen makes of the command line
//! (`linggen::cli::Cli`), so a flag added, renamed or removed without them fails here.
//! After changing `src/cli.rs`, regenerate them with
//! `LINGGEN_UPDATE_MAN=1 cargo test --locked --test man_page`.
//!
//! They are generated here, not by the binary: a person installs the checked-in files
//! (`man/README.md`), and the binary carries no roff writer it would never use.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clap::CommandFactory;

fn man_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("man")
}

/// Every `*.1` file in `dir`, by name.
fn pages(dir: &Path) -> BTreeMap<String, String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "1"))
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

/// The pages clap_mangen writes: `linggen.1` and one per subcommand (`linggen-serve.1`,
/// `linggen-mcp-serve.1`, …), as git's.
fn generated() -> BTreeMap<String, String> {
    let out = tempfile::tempdir().unwrap();
    clap_mangen::generate_to(linggen::cli::Cli::command(), out.path()).unwrap();
    pages(out.path())
}

#[test]
fn checked_in_man_pages_match_the_cli() {
    let fresh = generated();
    let main = fresh.get("linggen.1").expect("the main page is generated");
    // A page that lost the flags would still "match" a page regenerated from it (roff
    // writes a hyphen as `\-`).
    let plain = main.replace("\\-", "-");
    for flag in [
        "--permission-mode",
        "--dangerously-skip-permissions",
        "--print",
    ] {
        assert!(
            plain.contains(flag),
            "linggen.1 does not document {flag}:\n{main}"
        );
    }
    assert!(fresh.contains_key("linggen-serve.1"), "{:?}", fresh.keys());
    if std::env::var_os("LINGGEN_UPDATE_MAN").is_some() {
        for name in pages(&man_dir()).keys() {
            std::fs::remove_file(man_dir().join(name)).unwrap();
        }
        for (name, text) in &fresh {
            std::fs::write(man_dir().join(name), text).unwrap();
        }
        return;
    }
    let checked_in = pages(&man_dir());
    let stale: BTreeSet<&String> = fresh
        .keys()
        .chain(checked_in.keys())
        .filter(|name| fresh.get(*name) != checked_in.get(*name))
        .collect();
    assert!(
        stale.is_empty(),
        "the manual pages in man/ are out of date with the CLI: {stale:?}.\nRegenerate them \
         with `LINGGEN_UPDATE_MAN=1 cargo test --locked --test man_page`."
    );
}
