//! What the command line says about the session's own runs, as Claude Code's flags do:
//! `--system-prompt`, `--append-system-prompt` and `--tools`. They apply to the runs a
//! person's message starts (depth 0), not to the runs those delegate to: those are other
//! agents, with their own instructions and tools.

use crate::agents::{AgentSpec, ToolAllow};
use crate::tools::ToolName;
use crate::tools::registry::name_matches;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFlags {
    /// `--system-prompt`: replaces the agent's own instructions (its file's body). The
    /// workspace facts, tool rules and project files stay: they describe the tools and the
    /// project, which the model needs whatever it is told to be.
    pub system_prompt: Option<String>,
    /// `--append-system-prompt`: added at the end.
    pub append_system_prompt: Option<String>,
    /// `--tools`: the only tools offered (and usable); `Some(empty)` offers none.
    pub tools: Option<Vec<String>>,
}

impl RunFlags {
    /// `agent` as a session's own run gets it: its tools narrowed to `--tools`. A call of a
    /// tool left out is refused like any tool the agent does not have.
    pub fn narrow(&self, mut agent: AgentSpec) -> AgentSpec {
        let Some(only) = &self.tools else {
            return agent;
        };
        agent.tools = ToolAllow::Only(match &agent.tools {
            ToolAllow::All => only.clone(),
            ToolAllow::Only(own) => intersect(own, only),
        });
        agent
    }

    /// Which of `tools` `--tools` leaves (all of them without it): what the session's
    /// `SessionStarted` lists.
    pub fn offered(&self, tools: Vec<&'static str>) -> Vec<&'static str> {
        match &self.tools {
            None => tools,
            Some(only) => tools
                .into_iter()
                .filter(|t| only.iter().any(|o| name_matches(o, t)))
                .collect(),
        }
    }
}

/// The names and patterns both lists allow, each as the narrower of a matching pair.
fn intersect(own: &[String], only: &[String]) -> Vec<String> {
    let mut kept = Vec::new();
    for a in own {
        for b in only {
            if name_matches(a, b) {
                kept.push(b.clone());
            } else if name_matches(b, a) {
                kept.push(a.clone());
            }
        }
    }
    kept.sort();
    kept.dedup();
    kept
}

/// A `--tools` name that is no tool; the message lists the tools there are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--tools: no tool `{name}`; the tools are {} (and mcp__SERVER__TOOL), `default` for all, \
     \"\" for none",
    crate::tools::all_tool_names().join(", ")
)]
pub struct UnknownTool {
    name: String,
}

/// `--tools` as given: `default` (every tool: no narrowing), `""` (none), or names
/// separated by commas or spaces — linggen's, or the name another agent gives the same
/// tool (`bash`, `read_file`), or an MCP pattern (`mcp__github__*`). An unknown name is an
/// error that lists the known ones.
pub fn parse_tools(value: &str) -> Result<Option<Vec<String>>, UnknownTool> {
    let value = value.trim();
    if value == "default" {
        return Ok(None);
    }
    let mut names = Vec::new();
    for word in value
        .split([',', ' '])
        .map(str::trim)
        .filter(|w| !w.is_empty())
    {
        if word.starts_with("mcp__") {
            names.push(word.to_string());
            continue;
        }
        // `resolve` takes the canonical name in any case, and other agents' names.
        match ToolName::resolve(word) {
            Some(tool) => names.push(tool.name().to_string()),
            None => {
                return Err(UnknownTool {
                    name: word.to_string(),
                });
            }
        }
    }
    Ok(Some(names))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_read_as_claude_code_writes_them() {
        assert_eq!(parse_tools("default"), Ok(None));
        assert_eq!(parse_tools(""), Ok(Some(vec![])));
        assert_eq!(
            parse_tools("Bash,Read mcp__gh__*"),
            Ok(Some(vec![
                "Bash".into(),
                "Read".into(),
                "mcp__gh__*".into()
            ]))
        );
        assert!(
            parse_tools("Bash,WebSearch")
                .unwrap_err()
                .to_string()
                .contains("no tool `WebSearch`")
        );
    }

    #[test]
    fn narrowing_keeps_the_narrower_of_two_patterns() {
        let own = vec!["Read".to_string(), "mcp__gh__*".to_string()];
        let only = vec!["mcp__gh__create".to_string(), "Bash".to_string()];
        assert_eq!(intersect(&own, &only), vec!["mcp__gh__create".to_string()]);
    }
}
