//! The names MCP tools are registered under: `mcp__SERVER__TOOL`, as in Claude Code, so
//! permission rules written for it (`mcp__github__create_issue`) mean the same here.

/// `mcp__SERVER__TOOL`: the name a server's tool is registered under.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
}

/// `("SERVER", "TOOL")` from `mcp__SERVER__TOOL`. Server names have no `__`
/// ([`check_server_name`]), so the first one after the prefix ends the server's name; the
/// tool's own name may hold more.
pub fn split_tool_name(name: &str) -> Option<(&str, &str)> {
    let (server, tool) = name.strip_prefix("mcp__")?.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

/// Why a server name cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("the name is empty")]
    Empty,
    #[error("`{0}` cannot be in a server's name: use letters, digits, `_` and `-`")]
    Character(char),
    #[error("`__` cannot be in a server's name: it separates server and tool in mcp__SERVER__TOOL")]
    DoubleUnderscore,
}

/// A server's name becomes part of its tools' names (`mcp__NAME__TOOL`), which model APIs
/// only accept in `[A-Za-z0-9_-]`.
pub fn check_server_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(NameError::Character(c));
    }
    if name.contains("__") {
        return Err(NameError::DoubleUnderscore);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_and_tool_names() {
        assert_eq!(check_server_name("git-hub_2"), Ok(()));
        assert_eq!(check_server_name(""), Err(NameError::Empty));
        assert_eq!(check_server_name("é"), Err(NameError::Character('é')));
        assert_eq!(check_server_name("a__b"), Err(NameError::DoubleUnderscore));

        assert_eq!(
            tool_name("github", "create_issue"),
            "mcp__github__create_issue"
        );
        assert_eq!(
            split_tool_name("mcp__github__create_issue"),
            Some(("github", "create_issue"))
        );
        // A tool's own name may hold `__`; a server's cannot.
        assert_eq!(split_tool_name("mcp__s__a__b"), Some(("s", "a__b")));
        for name in ["github__x", "mcp__github", "mcp____x", "mcp__s__", "Read"] {
            assert_eq!(split_tool_name(name), None, "{name}");
        }
    }
}
