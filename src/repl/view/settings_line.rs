//! The hint line that answers a settings change.

use super::View;
use crate::config::PermissionMode;
use crate::session::TurnMode;

impl View {
    /// The line answering `SettingsUpdated`: what it changed (agent and turn mode go
    /// together, as `/agent` and `/mode` always showed them), or all of it when nothing did.
    pub(super) fn settings_changes(
        &self,
        agent: &str,
        mode: TurnMode,
        model: &str,
        permission_mode: PermissionMode,
        max_iters: u32,
    ) -> String {
        let agent_line = format!("agent {agent} · mode {}", mode.as_str());
        let mut parts = Vec::new();
        if agent != self.agent || mode != self.mode {
            parts.push(agent_line.clone());
        }
        if model != self.model {
            parts.push(format!("model {model}"));
        }
        if permission_mode != self.permission_mode {
            parts.push(format!("permission mode {}", permission_mode.as_str()));
        }
        if max_iters != self.max_iters {
            parts.push(format!("max_iters = {max_iters}"));
        }
        if parts.is_empty() {
            parts = vec![
                agent_line,
                format!("model {model}"),
                format!("permission mode {}", permission_mode.as_str()),
                format!("max_iters = {max_iters}"),
            ];
        }
        parts.join(" · ")
    }
}
