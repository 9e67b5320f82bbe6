//! Tying a process's life to its call and to linggen's.
//!
//! Three mechanisms, chosen for what each covers:
//!
//! - a **parent-death signal** (`PR_SET_PDEATHSIG` = `SIGKILL`): the kernel kills the
//!   process when linggen dies, also by `kill -9`, where no handler of ours runs;
//! - a **process group** (set by the launcher): a timeout or cancellation kills the group;
//! - a **PID namespace** for [`Lifetime::Contained`]: the launched process is pid 1 of a
//!   namespace of its own, and when pid 1 ends the kernel kills every process in it,
//!   including those that left the group with `setsid` or double-forked. A subreaper
//!   could only collect such orphans while linggen lives; a cgroup needs a delegated
//!   hierarchy that ordinary users rarely have. A namespace needs only what the sandbox
//!   already uses (a user namespace, or root).
//!
//! The namespace's pid 1 cannot be the process linggen forked (a new PID namespace takes
//! effect for the caller's children), so the forked child stays behind as a *keeper*: it
//! forks the real process into the namespace, waits for it and exits as it did. The keeper
//! and the process both die with their parent, so linggen's death reaches pid 1, and with
//! it the whole namespace.

use std::io;
use std::os::unix::process::CommandExt as _;
use std::process::Command;

use super::Lifetime;

/// Adds what `lifetime` needs to an unconfined command (the sandbox does it for confined
/// ones, inside its own setup).
pub fn apply(cmd: &mut Command, lifetime: Lifetime) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: each closure only makes system calls (prctl, unshare, open/write, fork,
    // waitpid, _exit) on values prepared here, as is allowed between fork and exec.
    unsafe {
        match lifetime {
            Lifetime::Detached(_) => {}
            Lifetime::Tied => {
                cmd.pre_exec(move || die_with(parent));
            }
            Lifetime::Contained => {
                let maps = IdMaps::current();
                cmd.pre_exec(move || {
                    die_with(parent)?;
                    // Without a namespace (user namespaces denied to a non-root user) the
                    // process is still tied, which is what a process linggen trusts needs.
                    if enter_pid_namespace(&maps) {
                        keep()?;
                    }
                    Ok(())
                });
            }
        }
    }
}

/// The uid and gid maps of a user namespace that keeps the person's own ids.
pub struct IdMaps {
    pub uid: std::ffi::CString,
    pub gid: std::ffi::CString,
}

impl IdMaps {
    pub fn current() -> IdMaps {
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        // No interior NUL is possible in formatted numbers.
        IdMaps {
            uid: std::ffi::CString::new(format!("{uid} {uid} 1\n")).unwrap_or_default(),
            gid: std::ffi::CString::new(format!("{gid} {gid} 1\n")).unwrap_or_default(),
        }
    }

    /// Writes the maps of a user namespace just entered. Runs in the child.
    pub unsafe fn write(&self) -> io::Result<()> {
        // SAFETY: plain writes of prepared, NUL-terminated strings.
        unsafe {
            write_file(c"/proc/self/setgroups", c"deny")?;
            write_file(c"/proc/self/uid_map", &self.uid)?;
            write_file(c"/proc/self/gid_map", &self.gid)
        }
    }
}

/// Runs in the child: it is killed when linggen dies. A parent that died before the
/// signal was armed is seen as a changed parent pid, and the child gives up.
pub fn die_with(parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: prctl and getppid take and return plain integers.
    unsafe {
        if libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        if libc::getppid() != parent {
            return Err(io::Error::other("linggen ended before the process started"));
        }
    }
    Ok(())
}

/// A new PID namespace (with a user namespace for an ordinary user); false when the kernel
/// refuses one.
fn enter_pid_namespace(maps: &IdMaps) -> bool {
    // SAFETY: unshare takes flags; `write` runs only system calls on prepared strings.
    unsafe {
        if libc::geteuid() == 0 {
            return libc::unshare(libc::CLONE_NEWPID) == 0;
        }
        libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID) == 0 && maps.write().is_ok()
    }
}

/// Splits the child after `unshare(CLONE_NEWPID)`: the caller returns (and goes on to exec)
/// as pid 1 of the new namespace; the keeper left behind waits for it and exits as it did,
/// so whoever waits for the keeper sees the process's own exit status.
pub fn keep() -> io::Result<()> {
    // SAFETY: fork in a child that is about to exec; both sides only make system calls.
    unsafe {
        let pid = libc::fork();
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // The process: pid 1 of its namespace. Its parent (the keeper) is outside the
            // namespace, so `getppid` says 0 and cannot tell a dead keeper from a live
            // one; the keeper dies only with linggen, and then this signal follows.
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            return Ok(());
        }
        // The keeper holds nothing open: not the process's pipes (whoever reads them sees
        // their end when the process ends), and not the pipe on which the spawning side
        // waits to learn that exec succeeded (it would wait for the whole command).
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
            for fd in 0..4096 {
                libc::close(fd);
            }
        }
        let mut status: libc::c_int = 0;
        loop {
            if libc::waitpid(pid, &mut status, 0) == pid {
                break;
            }
            if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                libc::_exit(127);
            }
        }
        if libc::WIFSIGNALED(status) {
            // Die the same way, so the caller sees "killed by signal N".
            let signal = libc::WTERMSIG(status);
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(libc::getpid(), signal);
        }
        libc::_exit(if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            127
        });
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
