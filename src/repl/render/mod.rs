//! Markdown and tool-output rendering for the terminal.
