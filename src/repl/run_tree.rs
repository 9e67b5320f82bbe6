//! Runs as a tree: a turn is a top-level run, each delegation (or forked skill) a child run
//! one level deeper. The view indents a run's output by its depth in the session's projection
//! (`SessionView::depth`); `/runs` lays out the session's stored runs the same way (see
//! [`crate::app::tree_lines`]).

/// Indentation per level of delegation.
const INDENT: &str = "  ";

/// The leading spaces for output of a run at `depth`.
pub fn indent(depth: usize) -> String {
    INDENT.repeat(depth)
}
