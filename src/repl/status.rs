//! `/status` and `/cost`: what this session is and what it has used, read from the one
//! projection the view folds (settings, context, tokens per model) and the workspace's
//! configuration — no counts of the shell's own.

use super::shell::Shell;
use super::view::context;
use crate::config::model::ModelConfig;
use crate::session::view::ModelTokens;
use crate::text::thousands;

impl Shell {
    /// `/status`: one block saying what this session is and how it runs.
    pub(super) fn status(&mut self) {
        let c = &self.ws.config;
        let view = self.view.session();
        let settings = &view.settings;
        let row = |key: &str, value: &dyn std::fmt::Display| format!("{key:<16}{value}");
        let session = self
            .link
            .live
            .as_ref()
            .map_or("none yet (send a message to start one)", |l| {
                l.session_id.as_str()
            });
        let mut lines = vec![
            row("linggen", &env!("CARGO_PKG_VERSION")),
            row("session", &session),
            row("root", &self.ws.root.display()),
            row("agent", &settings.agent_id),
            row("mode", &settings.mode.as_str()),
            row("permissions", &settings.permission_mode.as_str()),
            row("model", &settings.model),
        ];
        if let Some(routing) = &c.routing {
            let fallback = if routing.auto_fallback {
                ", falls back on failure"
            } else {
                ""
            };
            lines.push(row(
                "routing",
                &format!("{}{fallback}", routing.default_policy),
            ));
        }
        let context = view.context.as_ref().map_or_else(
            || "nothing sent yet".to_string(),
            |c| context::footer(c).replacen("context ", "", 1),
        );
        lines.push(row("context", &context));
        lines.push(row("trust", &trust_state(&self.ws)));
        lines.push(row("sandbox", &sandbox_state(c)));
        if c.files.is_empty() {
            lines.push(row("config", &"no file (defaults and environment)"));
        }
        for file in &c.files {
            lines.push(row("config", &file.display()));
        }
        lines.push("/cost: tokens per model · /settings: each value's origin".into());
        self.view.lines(lines);
    }

    /// `/cost`: tokens per model this session, the context, and a price where configured.
    pub(super) fn cost(&mut self) {
        let view = self.view.session();
        let mut lines = cost_lines(&view.tokens, &self.ws.config.models);
        let context = view
            .context
            .as_ref()
            .map_or("context: nothing sent yet".to_string(), context::footer);
        lines.push(context);
        self.view.lines(lines);
    }
}

/// Whether the folder's own grants hold: none made, all trusted, or some ignored.
pub(super) fn trust_state(ws: &crate::app::Workspace) -> String {
    let untrusted = ws.trust.untrusted();
    if let Some(warning) = &ws.trust.warning {
        return format!("nothing trusted: {warning}");
    }
    match (ws.trust.grants.len(), untrusted.len()) {
        (0, _) => "nothing in this folder asks for trust".into(),
        (all, 0) => format!("trusted ({all} grant(s) of this folder apply)"),
        (all, ignored) => format!(
            "not trusted: {ignored} of {all} grant(s) ignored (`linggen trust` reviews them)"
        ),
    }
}

/// Whether commands run confined, and why not when they cannot.
pub(super) fn sandbox_state(config: &crate::config::Config) -> String {
    use crate::tools::sandbox::{Support, support};
    if !config.sandbox.enabled {
        return "off ([sandbox] enabled = false): commands run unconfined".into();
    }
    match support() {
        Support::Available { landlock_abi } => {
            format!("available (Landlock ABI {landlock_abi}, user namespaces)")
        }
        Support::Unavailable(why) => {
            format!("unavailable: {why}; every command needs your approval")
        }
    }
}

/// One line per model used: its tokens, and its cost where `price_input`/`price_output`
/// are configured; then the total when more than one model has a price.
pub(super) fn cost_lines(tokens: &[ModelTokens], models: &[ModelConfig]) -> Vec<String> {
    if tokens.is_empty() {
        return vec!["tokens: no model has answered in this session yet".into()];
    }
    let mut lines = Vec::new();
    let mut total = 0.0;
    let mut priced = 0;
    for used in tokens {
        let config = models.iter().find(|m| m.id == used.model_id);
        let mut line = format!(
            "{}  input {} · output {} tokens · {} response(s) · cached: not reported",
            used.model_id,
            thousands(used.input_tokens),
            thousands(used.output_tokens),
            used.calls,
        );
        match config.and_then(|m| price_of(used, m)) {
            Some(usd) => {
                total += usd;
                priced += 1;
                line.push_str(&format!(" · ${usd:.4}"));
            }
            None => line.push_str(&format!(
                " · no price configured for {} (set price_input/price_output in [[models]])",
                used.model_id
            )),
        }
        lines.push(line);
    }
    if priced > 1 {
        lines.push(format!("total: ${total:.4}"));
    }
    lines
}

/// US dollars for these tokens at the model's prices (per million); `None` without any
/// price. A missing half of the pair counts as 0 only when the other is set.
fn price_of(used: &ModelTokens, model: &ModelConfig) -> Option<f64> {
    if model.price_input.is_none() && model.price_output.is_none() {
        return None;
    }
    let per_token = |price: Option<f64>| price.unwrap_or(0.0) / 1_000_000.0;
    Some(
        used.input_tokens as f64 * per_token(model.price_input)
            + used.output_tokens as f64 * per_token(model.price_output),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::ProviderKind;

    fn used(id: &str, input: u64, output: u64) -> ModelTokens {
        ModelTokens {
            model_id: id.into(),
            input_tokens: input,
            output_tokens: output,
            calls: 1,
        }
    }

    #[test]
    fn a_priced_model_shows_its_cost_and_another_says_how_to_price_it() {
        let mut cloud = ModelConfig::new("cloud", ProviderKind::Openai, "m", "http://x/v1");
        cloud.price_input = Some(3.0);
        cloud.price_output = Some(15.0);
        let local = ModelConfig::new("local", ProviderKind::Ollama, "q", "http://127.0.0.1:1");
        let lines = cost_lines(
            &[used("cloud", 1_000_000, 100_000), used("local", 5, 6)],
            &[cloud, local],
        );
        assert!(
            lines[0].contains("input 1,000,000 · output 100,000"),
            "{lines:?}"
        );
        assert!(lines[0].ends_with("$4.5000"), "{lines:?}");
        assert!(
            lines[1].contains(
                "no price configured for local (set price_input/price_output in [[models]])"
            ),
            "{lines:?}"
        );
        assert_eq!(lines.len(), 2);
    }
}
