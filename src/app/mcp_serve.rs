//! `linggen mcp serve`: linggen as an MCP server on stdin/stdout (issue 24, point 4).

use super::{Start, exit};

/// Serves until the client closes stdin.
pub async fn run(_start: Start) -> i32 {
    eprintln!("linggen: error: `linggen mcp serve` is not built yet");
    exit::FAILURE
}
