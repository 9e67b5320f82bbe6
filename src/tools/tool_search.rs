//! `tool_search`: when the registered tools' schemas would take too much of a small
//! window (`[mcp] eager_tools_chars`), they are not sent whole; the model gets this one tool
//! instead, finds the tools it needs by words, and the ones found are offered from its next
//! request on (as Claude Code's tool search does).

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::registry::{AccessClass, ToolEntry, ToolHints, ToolRegistry};
use super::{ToolHandler, ToolOutput};
use crate::protocol::ToolSpec;

pub const NAME: &str = "tool_search";

/// Tools a search loads at most.
const MAX_FOUND: usize = 8;

#[derive(Debug)]
struct ToolSearch {
    registry: Weak<ToolRegistry>,
}

/// The registry entry of the search tool over `registry`.
pub fn entry(registry: &Arc<ToolRegistry>) -> ToolEntry {
    ToolEntry {
        spec: ToolSpec {
            name: NAME.to_string(),
            description: "Find and load tools of the connected MCP servers (not listed here, \
                          to save context). Give words describing what you need; the tools \
                          found can be called from your next step."
                .to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "words, or select:NAME,NAME"}
                },
                "required": ["query"]
            }),
        },
        // It reads the registry only.
        class: AccessClass::Read,
        hints: ToolHints {
            read_only: true,
            ..ToolHints::default()
        },
        origin: "built-in".to_string(),
        handler: Arc::new(ToolSearch {
            registry: Arc::downgrade(registry),
        }),
    }
}

#[async_trait]
impl ToolHandler for ToolSearch {
    fn summarize(&self, name: &str, args: &Value) -> Result<String, ToolOutput> {
        let query = query(args)?;
        Ok(format!("{name} {}", crate::text::one_line(query, 60)))
    }

    async fn run(&self, _name: &str, args: &Value) -> ToolOutput {
        let query = match query(args) {
            Ok(q) => q,
            Err(e) => return e,
        };
        let Some(registry) = self.registry.upgrade() else {
            return ToolOutput::error("the session has ended");
        };
        let candidates: Vec<ToolEntry> = registry
            .registered()
            .into_iter()
            .filter(|e| e.spec.name != NAME)
            .collect();
        let found = find(&candidates, query);
        if found.is_empty() {
            return ToolOutput::ok(
                format!("no tool matches `{query}`; try other words"),
                "no tool found",
            );
        }
        registry.load(found.iter().map(|e| e.spec.name.clone()));
        let lines: Vec<String> = found
            .iter()
            .map(|e| {
                format!(
                    "{}: {}",
                    e.spec.name,
                    crate::text::one_line(&e.spec.description, 160)
                )
            })
            .collect();
        let summary = format!(
            "loaded {}",
            crate::text::plural(found.len(), "tool", "tools")
        );
        ToolOutput::ok(
            format!(
                "Loaded; call them from your next step:\n{}",
                lines.join("\n")
            ),
            summary,
        )
    }
}

fn query(args: &Value) -> Result<&str, ToolOutput> {
    args.get("query")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .ok_or_else(|| ToolOutput::error("tool_search needs `query`: words describing the tool"))
}

/// The best matches: `select:A,B` by exact name, else by words in names (weighted) and
/// descriptions.
fn find(candidates: &[ToolEntry], query: &str) -> Vec<ToolEntry> {
    if let Some(names) = query.strip_prefix("select:") {
        let wanted: Vec<&str> = names.split(',').map(str::trim).collect();
        return candidates
            .iter()
            .filter(|e| wanted.contains(&e.spec.name.as_str()))
            .cloned()
            .collect();
    }
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 1)
        .map(str::to_lowercase)
        .collect();
    let mut scored: Vec<(usize, &ToolEntry)> = candidates
        .iter()
        .map(|e| {
            let name = e.spec.name.to_lowercase();
            let description = e.spec.description.to_lowercase();
            let score = words
                .iter()
                .map(|w| {
                    3 * usize::from(name.contains(w.as_str()))
                        + usize::from(description.contains(w.as_str()))
                })
                .sum();
            (score, e)
        })
        .filter(|(score, _)| *score > 0)
        .collect();
    scored.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| a.1.spec.name.cmp(&b.1.spec.name))
    });
    scored
        .into_iter()
        .take(MAX_FOUND)
        .map(|(_, e)| e.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> ToolEntry {
        let registry = Arc::new(ToolRegistry::new());
        let mut e = entry(&registry);
        e.spec.name = name.into();
        e.spec.description = description.into();
        e
    }

    #[test]
    fn words_in_names_weigh_more_than_in_descriptions() {
        let tools = vec![
            tool("mcp__gh__create_issue", "Create an issue in a repository"),
            tool(
                "mcp__gh__list_pulls",
                "List pull requests; mentions an issue",
            ),
            tool("mcp__db__query", "Run SQL"),
        ];
        let found: Vec<String> = find(&tools, "create issue")
            .into_iter()
            .map(|e| e.spec.name)
            .collect();
        assert_eq!(found, ["mcp__gh__create_issue", "mcp__gh__list_pulls"]);
        let found = find(&tools, "select:mcp__db__query, nope");
        assert_eq!(found.len(), 1);
        assert!(find(&tools, "weather").is_empty());
    }
}
