//! How the `linggen` binary is linked (build.rs): relative relocations packed (DT_RELR)
//! where the glibc it is built on can apply them, written out as before where not.

#![cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
// A test that cannot read its input should stop with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::process::Command;

const PT_DYNAMIC: u32 = 2;
const DT_NULL: i64 = 0;
const DT_RELR: i64 = 36;

#[test]
fn relative_relocations_are_packed_exactly_where_glibc_applies_them() {
    let binary = env!("CARGO_BIN_EXE_linggen");
    let tags = dynamic_tags(binary);
    let expected = host_glibc() >= (2, 36);
    assert_eq!(
        tags.contains(&DT_RELR),
        expected,
        "DT_RELR in {binary}: glibc here is {:?}, dynamic tags {tags:?}",
        host_glibc()
    );
    // Packed or not, the loader must accept it.
    let out = Command::new(binary).arg("--version").output().unwrap();
    assert!(out.status.success(), "{out:?}");
}

fn host_glibc() -> (u32, u32) {
    let out = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let version = text.trim().strip_prefix("glibc ").unwrap().to_string();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap());
    (parts.next().unwrap(), parts.next().unwrap())
}

/// The tags of the ELF64 little-endian file's dynamic section, read through its program
/// headers (the debug binary is large: only the headers and that segment are read).
fn dynamic_tags(path: &str) -> Vec<i64> {
    let mut file = File::open(path).unwrap();
    let header = read_at(&mut file, 0, 64);
    assert_eq!(&header[..4], b"\x7fELF", "{path} is not an ELF file");
    assert_eq!(header[4], 2, "{path} is not a 64-bit ELF file");
    let phoff = u64_at(&header, 0x20);
    let phentsize = u16::from_le_bytes([header[0x36], header[0x37]]) as u64;
    let phnum = u16::from_le_bytes([header[0x38], header[0x39]]) as u64;
    let headers = read_at(&mut file, phoff, (phentsize * phnum) as usize);
    let dynamic = headers
        .chunks(phentsize as usize)
        .find(|ph| u32::from_le_bytes([ph[0], ph[1], ph[2], ph[3]]) == PT_DYNAMIC)
        .expect("no dynamic segment: the binary is expected to be dynamically linked");
    let segment = read_at(
        &mut file,
        u64_at(dynamic, 0x08),
        u64_at(dynamic, 0x20) as usize,
    );
    segment
        .chunks(16)
        .map(|entry| u64_at(entry, 0) as i64)
        .take_while(|tag| *tag != DT_NULL)
        .collect()
}

fn read_at(file: &mut File, offset: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0; len];
    file.seek(SeekFrom::Start(offset)).unwrap();
    file.read_exact(&mut buf).unwrap();
    buf
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}
