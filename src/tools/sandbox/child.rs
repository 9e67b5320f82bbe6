//! What the child does between `fork` and `exec`: a parent-death signal; a new user, mount,
//! PID (when contained) and (unless the network is allowed) network namespace; a read-only
//! view of every mount, with the writable paths bound back writable; read-only bind mounts
//! over the protected paths inside the root; empty mounts over the secret stores; loopback
//! up; every capability dropped where no user namespace could be made; Landlock; and last
//! the split into keeper and pid 1 (`launch::lifetime`).
//!
//! Everything here runs in a forked copy of a multi-threaded process, so it may only make
//! system calls: every string and flag is prepared by [`ChildSetup::new`] in the parent.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use super::landlock;
use crate::tools::launch::lifetime::{self, IdMaps};

/// A path to mount over, with the flags its current mount has (a remount inside a user
/// namespace must keep `nosuid`, `nodev`, `noexec` and the atime flags it inherited).
struct MountPoint {
    path: CString,
    kept_flags: libc::c_ulong,
}

pub struct ChildSetup {
    new_network: bool,
    /// A PID namespace of its own, with a keeper outside it (`Lifetime::Contained`).
    contain: bool,
    /// linggen's pid: the child checks it is still its parent after arming the death signal.
    parent: libc::pid_t,
    maps: IdMaps,
    /// Bound back writable on top of the read-only view of everything.
    writable: Vec<CString>,
    /// Bound read-only onto themselves.
    read_only: Vec<MountPoint>,
    /// Directories covered by an empty read-only tmpfs.
    hidden_dirs: Vec<CString>,
    /// Files covered by `/dev/null`.
    hidden_files: Vec<MountPoint>,
    dev_null: CString,
    ruleset: landlock::Ruleset,
}

fn c_path(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

/// The flags a remount of a bind mount at `path` has to keep.
fn kept_flags(path: &CString) -> libc::c_ulong {
    // SAFETY: statvfs fills a zeroed buffer we own from a NUL-terminated path.
    let flags = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(path.as_ptr(), &mut st) != 0 {
            return 0;
        }
        st.f_flag
    };
    let mut kept = 0;
    for (st, ms) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if flags & st != 0 {
            kept |= ms;
        }
    }
    kept
}

impl ChildSetup {
    pub fn new(walls: Walls<'_>, ruleset: landlock::Ruleset) -> ChildSetup {
        let Walls {
            network,
            contain,
            writable,
            read_only,
            hidden,
        } = walls;
        let mount_point = |path: &Path| {
            c_path(path).map(|path| MountPoint {
                kept_flags: kept_flags(&path),
                path,
            })
        };
        let mut hidden_dirs = Vec::new();
        let mut hidden_files = Vec::new();
        for path in hidden {
            match std::fs::metadata(path) {
                Ok(m) if m.is_dir() => hidden_dirs.extend(c_path(path)),
                // The mount is a bind of /dev/null: its flags are those of /dev's mount.
                Ok(_) => hidden_files.extend(c_path(path).map(|path| MountPoint {
                    kept_flags: kept_flags(&CString::from(c"/dev/null")),
                    path,
                })),
                Err(_) => {}
            }
        }
        ChildSetup {
            new_network: !network,
            contain,
            parent: std::process::id() as libc::pid_t,
            maps: IdMaps::current(),
            writable: writable
                .iter()
                .filter(|p| p.exists())
                .filter_map(|p| c_path(p))
                .collect(),
            read_only: read_only
                .iter()
                .filter(|p| p.exists())
                .filter_map(|p| mount_point(p))
                .collect(),
            hidden_dirs,
            hidden_files,
            dev_null: CString::new("/dev/null").unwrap_or_default(),
            ruleset,
        }
    }

    /// Runs in the child. Any failure stops the command before it runs (fail closed).
    pub fn enter(&self) -> io::Result<()> {
        lifetime::die_with(self.parent)?;
        let net = if self.new_network {
            libc::CLONE_NEWNET
        } else {
            0
        };
        let pid = if self.contain { libc::CLONE_NEWPID } else { 0 };
        // SAFETY: from here on only system calls on prepared, NUL-terminated strings.
        unsafe {
            let mut privileged = false;
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | net | pid) == 0 {
                self.maps.write()?;
            } else {
                // Root may be denied user namespaces (a sysctl) but can make the others;
                // then it must give up its real capabilities below.
                let denied = io::Error::last_os_error();
                if libc::geteuid() != 0 || libc::unshare(libc::CLONE_NEWNS | net | pid) != 0 {
                    return Err(denied);
                }
                privileged = true;
            }
            // Our mounts must not propagate back to the person's mount namespace.
            check(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            self.read_only_view()?;
            // The working folder was entered before the writable paths were bound back:
            // enter it again by name, or it stays the read-only copy underneath.
            let mut cwd = [0u8; libc::PATH_MAX as usize];
            if !libc::getcwd(cwd.as_mut_ptr().cast(), cwd.len()).is_null() {
                check(libc::chdir(cwd.as_ptr().cast()))?;
            }
            for point in &self.read_only {
                bind_read_only(&point.path, point)?;
            }
            for dir in &self.hidden_dirs {
                check(libc::mount(
                    c"tmpfs".as_ptr(),
                    dir.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    c"size=4k,mode=000".as_ptr().cast(),
                ))?;
            }
            for file in &self.hidden_files {
                bind_read_only(&self.dev_null, file)?;
            }
            if self.new_network {
                loopback_up()?;
            }
            if privileged {
                drop_capabilities()?;
            }
        }
        landlock::restrict_self(self.ruleset.raw_fd())?;
        if self.contain {
            lifetime::keep()?;
        }
        Ok(())
    }

    /// Every mount read-only, then the writable paths bound back writable: outside them
    /// nothing changes, metadata included (`chmod`, `chown`, times, xattrs), which Landlock
    /// does not mediate. As bubblewrap does, by construction rather than by a list.
    unsafe fn read_only_view(&self) -> io::Result<()> {
        // SAFETY: mount and mount_setattr on prepared, NUL-terminated paths.
        unsafe {
            set_mount_attr(c"/", MOUNT_ATTR_RDONLY, 0)?;
            for path in &self.writable {
                check(libc::mount(
                    path.as_ptr(),
                    path.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ))?;
                // Mounts below it that were read-only before stay so: the kernel refuses to
                // clear a flag it locked, and then only the top mount is made writable.
                if set_mount_attr(path, 0, MOUNT_ATTR_RDONLY).is_err() {
                    let kept = kept_flags(path);
                    check(libc::mount(
                        std::ptr::null(),
                        path.as_ptr(),
                        std::ptr::null(),
                        libc::MS_REMOUNT | libc::MS_BIND | kept,
                        std::ptr::null(),
                    ))?;
                }
            }
        }
        Ok(())
    }
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const AT_RECURSIVE: libc::c_uint = 0x8000;

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Sets and clears mount attributes on `path` and every mount below it.
unsafe fn set_mount_attr(path: &std::ffi::CStr, set: u64, clear: u64) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: the syscall reads a NUL-terminated path and a struct we own, of the size given.
    let result = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Without a user namespace, root's capabilities are the machine's (the clock, kernel
/// modules, raw sockets, every file). All of them go: the bounding set (so `exec` cannot
/// give them back, not even to a root-owned program), the ambient set, then the effective,
/// permitted and inheritable sets. Any failure stops the command (fail closed).
unsafe fn drop_capabilities() -> io::Result<()> {
    // SAFETY: prctl and capset take integers and a header and data we own.
    unsafe {
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0
                && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
            {
                return Err(io::Error::last_os_error());
            }
        }
        check(libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        ))?;
        #[repr(C)]
        struct Header {
            version: u32,
            pid: libc::c_int,
        }
        #[repr(C)]
        #[derive(Clone, Copy)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        const VERSION_3: u32 = 0x2008_0522;
        let header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let data = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capset, &header as *const Header, data.as_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// What the child's walls are made of, prepared by the parent.
pub struct Walls<'a> {
    pub network: bool,
    pub contain: bool,
    pub writable: &'a [std::path::PathBuf],
    pub read_only: &'a [std::path::PathBuf],
    pub hidden: &'a [std::path::PathBuf],
}

fn check(result: libc::c_int) -> io::Result<()> {
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Binds `source` onto `target` and makes that mount read-only. A mount point cannot be
/// renamed or removed, so the command can neither edit `.git/config` nor move `.git` away
/// and put its own in place.
unsafe fn bind_read_only(source: &CString, target: &MountPoint) -> io::Result<()> {
    // SAFETY: the caller is the child; both strings are NUL-terminated.
    unsafe {
        check(libc::mount(
            source.as_ptr(),
            target.path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        ))?;
        check(libc::mount(
            std::ptr::null(),
            target.path.as_ptr(),
            std::ptr::null(),
            libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | target.kept_flags,
            std::ptr::null(),
        ))
    }
}

/// A new network namespace has only a loopback device, and it is down: bring it up so
/// tests that serve on 127.0.0.1 keep working. Nothing else is reachable.
unsafe fn loopback_up() -> io::Result<()> {
    // SAFETY: a socket and two ioctls on a zeroed `ifreq` we own.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (slot, byte) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = *byte as libc::c_char;
        }
        let mut result = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req);
        if result == 0 {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            result = libc::ioctl(fd, libc::SIOCSIFFLAGS, &req);
        }
        let err = io::Error::last_os_error();
        libc::close(fd);
        if result != 0 {
            return Err(err);
        }
    }
    Ok(())
}
