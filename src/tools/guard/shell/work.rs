//! A count of the analysis' steps, so a test can show that its cost grows linearly with
//! the command's length whatever the command (a trap such as `cd . && cd . && …` must not
//! make the analysis itself the denial of service). Always compiled in: one thread-local
//! add per step costs nothing next to the file system calls it counts.

use std::cell::Cell;

thread_local! {
    static STEPS: Cell<u64> = const { Cell::new(0) };
}

/// Records `n` steps of work (characters looked at, directory entries read, paths resolved).
pub fn tick(n: usize) {
    STEPS.with(|steps| steps.set(steps.get().saturating_add(n as u64)));
}

/// Steps recorded on this thread since the last [`reset`].
#[cfg(test)]
pub fn steps() -> u64 {
    STEPS.with(Cell::get)
}

#[cfg(test)]
pub fn reset() {
    STEPS.with(|steps| steps.set(0));
}
