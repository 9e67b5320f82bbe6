//! How the C allocator hands memory back. glibc raises its mmap threshold each time a large
//! block is freed (up to 32 MiB), so after a long answer the buffers of that size come from
//! the heap and their pages stay resident once freed. A fixed threshold keeps every block of
//! 128 KiB or more in its own mapping, returned to the system on free: a 10 MB answer in the
//! shell peaked 1.5–2 MB lower with it, at no cost in streaming time (doc/performance.md,
//! "Memory against answer size").

/// Blocks at least this large get a mapping of their own (glibc's starting default).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 128 * 1024;

/// Fixes the allocator's mmap threshold; called once, before any thread starts.
pub fn keep_large_blocks_separate() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tuning parameter; called before other threads exist.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}
