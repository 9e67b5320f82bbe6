//! Landlock, through its three system calls: which files a confined command may read and
//! write. The ruleset is built in the parent (allocations and directory reads are fine
//! there); the child only calls `landlock_restrict_self` on the inherited descriptor.
//!
//! Landlock grants by hierarchy: a rule on a directory covers everything beneath it, and
//! nothing can be carved out of a granted tree. Read-only spots inside the root and hidden
//! secret stores are therefore done with mounts (see `child.rs`), not here.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

// From <linux/landlock.h>.
const CREATE_RULESET_VERSION: u32 = 1 << 0;
const RULE_PATH_BENEATH: libc::c_int = 1;

pub const EXECUTE: u64 = 1 << 0;
pub const WRITE_FILE: u64 = 1 << 1;
pub const READ_FILE: u64 = 1 << 2;
pub const READ_DIR: u64 = 1 << 3;
const REMOVE_DIR: u64 = 1 << 4;
const REMOVE_FILE: u64 = 1 << 5;
const MAKE_CHAR: u64 = 1 << 6;
const MAKE_DIR: u64 = 1 << 7;
const MAKE_REG: u64 = 1 << 8;
const MAKE_SOCK: u64 = 1 << 9;
const MAKE_FIFO: u64 = 1 << 10;
const MAKE_BLOCK: u64 = 1 << 11;
const MAKE_SYM: u64 = 1 << 12;
const REFER: u64 = 1 << 13; // ABI 2
pub const TRUNCATE: u64 = 1 << 14; // ABI 3
pub const IOCTL_DEV: u64 = 1 << 15; // ABI 5

const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0; // ABI 6
const SCOPE_SIGNAL: u64 = 1 << 1; // ABI 6

/// Reading and running files.
pub const READ: u64 = EXECUTE | READ_FILE | READ_DIR;
/// Everything, in a writable tree.
pub const READ_WRITE: u64 = READ
    | WRITE_FILE
    | REMOVE_DIR
    | REMOVE_FILE
    | MAKE_CHAR
    | MAKE_DIR
    | MAKE_REG
    | MAKE_SOCK
    | MAKE_FIFO
    | MAKE_BLOCK
    | MAKE_SYM
    | REFER
    | TRUNCATE
    | IOCTL_DEV;
/// The rights that make sense on a file (not a directory); others make the rule invalid.
const FILE_RIGHTS: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The Landlock ABI version the kernel offers, or why there is none.
pub(in crate::tools) fn abi() -> Result<u32, String> {
    // SAFETY: with a null attribute and size 0 this only queries the version.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if v >= 1 {
        return Ok(v as u32);
    }
    let err = io::Error::last_os_error();
    Err(match err.raw_os_error() {
        Some(libc::ENOSYS) => "the kernel has no Landlock (Linux 5.13 or later is needed)".into(),
        Some(libc::EOPNOTSUPP) => {
            "Landlock is built into the kernel but turned off (add `landlock` to the `lsm=` boot \
             parameter)"
                .into()
        }
        _ => format!("Landlock is not usable: {err}"),
    })
}

/// The filesystem rights this ABI knows; a ruleset may only name these.
fn known_fs_rights(abi: u32) -> u64 {
    let mut rights = READ_WRITE & !(REFER | TRUNCATE | IOCTL_DEV);
    if abi >= 2 {
        rights |= REFER;
    }
    if abi >= 3 {
        rights |= TRUNCATE;
    }
    if abi >= 5 {
        rights |= IOCTL_DEV;
    }
    rights
}

/// A ruleset under construction: everything not granted by a rule is denied.
pub struct Ruleset {
    fd: OwnedFd,
    known: u64,
}

impl Ruleset {
    pub fn new(abi: u32) -> io::Result<Ruleset> {
        let known = known_fs_rights(abi);
        let attr = RulesetAttr {
            handled_access_fs: known,
            handled_access_net: 0,
            // Signals and abstract sockets only reach processes inside the sandbox: a
            // command cannot kill linggen or the person's editor, nor talk to a desktop
            // service over an abstract socket.
            scoped: if abi >= 6 {
                SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
            } else {
                0
            },
        };
        // Older kernels reject the `scoped` field: pass only the size they know.
        let size = if abi >= 6 {
            std::mem::size_of::<RulesetAttr>()
        } else {
            2 * std::mem::size_of::<u64>()
        };
        // SAFETY: `attr` is a valid, initialised struct of at least `size` bytes.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &attr as *const RulesetAttr,
                size,
                0u32,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel returned a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        Ok(Ruleset { fd, known })
    }

    /// Grants `access` on `path` and everything beneath it. A path that does not exist
    /// is skipped: there is nothing to grant.
    pub fn allow(&mut self, path: &Path, access: u64) -> io::Result<()> {
        let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
            return Ok(());
        };
        // SAFETY: a plain open of a NUL-terminated path; the descriptor is owned below.
        let raw = unsafe { libc::open(c_path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
        if raw < 0 {
            return Ok(());
        }
        // SAFETY: `raw` was just opened and is owned by nothing else.
        let target = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut access = access & self.known;
        if !is_dir(&target) {
            access &= FILE_RIGHTS;
        }
        if access == 0 {
            return Ok(());
        }
        let attr = PathBeneathAttr {
            allowed_access: access,
            parent_fd: target.as_raw_fd(),
        };
        // SAFETY: `attr` is a valid packed struct as the kernel expects; both descriptors
        // are open for the duration of the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                self.fd.as_raw_fd(),
                RULE_PATH_BENEATH,
                &attr as *const PathBeneathAttr,
                0u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }
}

fn is_dir(fd: &OwnedFd) -> bool {
    // SAFETY: fstat writes into a zeroed stat buffer we own.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd.as_raw_fd(), &mut st) == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFDIR
    }
}

/// In the child, between fork and exec: no allocation, only system calls.
pub fn restrict_self(ruleset_fd: i32) -> io::Result<()> {
    // SAFETY: prctl and landlock_restrict_self take plain integers.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, ruleset_fd, 0u32) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
