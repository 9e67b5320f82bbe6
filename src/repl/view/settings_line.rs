//! The hint line that answers a settings change.

use crate::session::view::Settings;

/// The line answering `SettingsUpdated`: what changed from `before` to `after` (agent and
/// turn mode go together, as `/agent` and `/mode` always showed them), or all of it when
/// nothing did (the person set a value it already had).
pub(super) fn changes(before: &Settings, after: &Settings) -> String {
    let agent_line = format!("agent {} · mode {}", after.agent_id, after.mode.as_str());
    let model = format!("model {}", after.model);
    let permission_mode = format!("permission mode {}", after.permission_mode.as_str());
    let max_iters = format!("max_iters = {}", after.max_iters);
    let mut parts = Vec::new();
    if after.agent_id != before.agent_id || after.mode != before.mode {
        parts.push(agent_line.clone());
    }
    if after.model != before.model {
        parts.push(model.clone());
    }
    if after.permission_mode != before.permission_mode {
        parts.push(permission_mode.clone());
    }
    if after.max_iters != before.max_iters {
        parts.push(max_iters.clone());
    }
    if parts.is_empty() {
        parts = vec![agent_line, model, permission_mode, max_iters];
    }
    parts.join(" · ")
}
