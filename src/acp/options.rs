//! The session's other settings as ACP config options: which model the next turns go to
//! (`/model`) and how turns work (`/mode chat|auto|talk`). The permission mode is ACP's own
//! mode selector (see `modes` in the parent module).

use super::model::{SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption};
use crate::config::{Config, TurnMode};
use crate::session::Input;

pub const MODEL: &str = "model";
pub const TURN_MODE: &str = "turn_mode";

/// The settings as they stand, as a session reports them (`SettingsUpdated`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Current {
    /// What the model setting says: a model's id, `auto`, `local` or `cloud`.
    pub model: String,
    pub mode: TurnMode,
}

impl Current {
    /// From a session's model label (`smol (smol @ http://…)`, `local (first …)`,
    /// `auto (local-first)`): the setting is the label's first word.
    pub fn new(model_label: &str, mode: TurnMode) -> Current {
        let model = model_label.split(" (").next().unwrap_or(model_label);
        Current {
            model: model.to_string(),
            mode,
        }
    }
}

/// Both options with their choices, as `config` offers them.
pub fn options(config: &Config, current: &Current) -> Vec<SessionConfigOption> {
    let mut models: Vec<SessionConfigSelectOption> = config
        .models
        .iter()
        .map(|m| {
            let kind = if m.is_local() { "local" } else { "cloud" };
            choice(&m.id, format!("{} ({kind})", m.model))
        })
        .collect();
    let has = |local: bool| config.models.iter().any(|m| m.is_local() == local);
    if config.routing.is_some() {
        models.push(choice(
            "auto",
            "chosen per call by the routing policy".into(),
        ));
    }
    for (hint, local) in [("local", true), ("cloud", false)] {
        if has(local) {
            models.push(choice(hint, format!("any {hint} model, tried in order")));
        }
    }
    let modes = TurnMode::ALL
        .iter()
        .map(|m| choice(m.as_str(), m.summary().to_string()))
        .collect();
    vec![
        SessionConfigOption {
            id: MODEL.into(),
            name: "Model".into(),
            category: Some(SessionConfigOptionCategory::Model),
            current_value: current.model.clone(),
            options: models,
            ..Default::default()
        },
        SessionConfigOption {
            id: TURN_MODE.into(),
            name: "Turn mode".into(),
            description: Some("how a turn works: chat, auto or talk".into()),
            current_value: current.mode.as_str().into(),
            options: modes,
            ..Default::default()
        },
    ]
}

/// A value to choose, named as it is set.
fn choice(value: &str, description: String) -> SessionConfigSelectOption {
    SessionConfigSelectOption {
        value: value.to_string(),
        name: value.to_string(),
        description: Some(description),
    }
}

/// The input that sets `option` to `value`, or what is wrong with them.
pub(in crate::acp) fn input(option: &str, value: &str) -> Result<Input, String> {
    match option {
        MODEL => Ok(Input::SetModel {
            model: value.to_string(),
        }),
        TURN_MODE => TurnMode::parse(value)
            .map(|mode| Input::SetMode { mode })
            .ok_or_else(|| format!("no turn mode `{value}`; turn modes: chat, auto, talk")),
        _ => Err(format!(
            "no config option `{option}`; options: {MODEL}, {TURN_MODE}"
        )),
    }
}

/// `current` after `option` was set to `value`.
pub fn after(current: &Current, option: &str, value: &str) -> Current {
    let mut next = current.clone();
    match option {
        MODEL => next.model = value.to_string(),
        _ => next.mode = TurnMode::parse(value).unwrap_or(current.mode),
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_is_the_labels_first_word() {
        let current = Current::new("smol (smol @ http://127.0.0.1:1/v1)", TurnMode::Chat);
        assert_eq!(current.model, "smol");
        assert_eq!(
            Current::new("local (first x (y @ z))", TurnMode::Chat).model,
            "local"
        );
    }

    #[test]
    fn inputs_name_what_they_set_and_refuse_what_is_not_an_option() {
        assert_eq!(
            input(TURN_MODE, "talk"),
            Ok(Input::SetMode {
                mode: TurnMode::Talk
            })
        );
        assert!(
            input(TURN_MODE, "sing")
                .unwrap_err()
                .contains("chat, auto, talk")
        );
        assert!(
            input("colour", "red")
                .unwrap_err()
                .contains("model, turn_mode")
        );
    }
}
