//! What the child does between `fork` and `exec`: a new user, mount and (unless the
//! network is allowed) network namespace; read-only bind mounts over the protected paths
//! inside the root; empty mounts over the secret stores; loopback up; then Landlock.
//!
//! Everything here runs in a forked copy of a multi-threaded process, so it may only make
//! system calls: every string and flag is prepared by [`ChildSetup::new`] in the parent.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use super::landlock;

/// A path to mount over, with the flags its current mount has (a remount inside a user
/// namespace must keep `nosuid`, `nodev`, `noexec` and the atime flags it inherited).
struct MountPoint {
    path: CString,
    kept_flags: libc::c_ulong,
}

pub struct ChildSetup {
    new_network: bool,
    uid_map: CString,
    gid_map: CString,
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
    pub fn new(
        network: bool,
        read_only: &[std::path::PathBuf],
        hidden: &[std::path::PathBuf],
        ruleset: landlock::Ruleset,
    ) -> ChildSetup {
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
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
            uid_map: CString::new(format!("{uid} {uid} 1\n")).unwrap_or_default(),
            gid_map: CString::new(format!("{gid} {gid} 1\n")).unwrap_or_default(),
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
        let net = if self.new_network {
            libc::CLONE_NEWNET
        } else {
            0
        };
        // SAFETY: from here on only system calls on prepared, NUL-terminated strings.
        unsafe {
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | net) == 0 {
                write_file(c"/proc/self/setgroups", c"deny")?;
                write_file(c"/proc/self/uid_map", &self.uid_map)?;
                write_file(c"/proc/self/gid_map", &self.gid_map)?;
            } else {
                // Root may be denied user namespaces (a sysctl) but can make the others.
                let denied = io::Error::last_os_error();
                if libc::geteuid() != 0 || libc::unshare(libc::CLONE_NEWNS | net) != 0 {
                    return Err(denied);
                }
            }
            // Our mounts must not propagate back to the person's mount namespace.
            check(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
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
        }
        landlock::restrict_self(self.ruleset.raw_fd())
    }
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

unsafe fn write_file(path: &std::ffi::CStr, text: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: open/write/close on a NUL-terminated path and a buffer we own.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let bytes = text.to_bytes();
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let err = io::Error::last_os_error();
        libc::close(fd);
        if written != bytes.len() as isize {
            return Err(err);
        }
    }
    Ok(())
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
