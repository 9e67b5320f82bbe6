//! Link choices for the `linggen` binary that `[profile.release]` cannot express.
//!
//! Relative relocations packed (DT_RELR): the binary is position-independent (ASLR), so
//! every pointer in its read-only data (vtables, string tables) needs a relocation at
//! start-up. Written out as RELA entries they are 24 bytes each, 0.47 MB of the file, all
//! read at every start; packed they are a bitmap of a few kilobytes, and the process maps
//! 1.5 MB less (doc/performance.md, "Packed relocations").
//!
//! The dynamic loader has to understand them: glibc does from 2.36, and the linker records
//! that need (`GLIBC_ABI_DT_RELR`), so an older glibc refuses the binary at load rather than
//! running it half relocated. They are asked for only when that cannot bite the person
//! building: a native build (the glibc found here is the one the binary will run with) for
//! x86-64 Linux with glibc 2.36 or newer (Rust links there with its own lld; GNU ld packs
//! them too from 2.38, as glibc 2.36 systems have). Anything else
//! (musl, other systems and architectures, cross builds, an older glibc) links as before.

use std::env;
use std::process::Command;

/// The first glibc whose dynamic loader applies DT_RELR.
const RELR_GLIBC: (u32, u32) = (2, 36);

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if packed_relocations_run_here() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

fn packed_relocations_run_here() -> bool {
    let var = |name: &str| env::var(name).unwrap_or_default();
    let native = !var("TARGET").is_empty() && var("TARGET") == var("HOST");
    native
        && var("CARGO_CFG_TARGET_ARCH") == "x86_64"
        && var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu"
        && host_glibc().is_some_and(|version| version >= RELR_GLIBC)
}

/// The glibc this build runs on, as `getconf GNU_LIBC_VERSION` reports it ("glibc 2.36").
fn host_glibc() -> Option<(u32, u32)> {
    let output = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let version = text.trim().strip_prefix("glibc ")?;
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}
