//! linggen's approval choices as ACP permission options, and the editor's answer back as a
//! decision. The choices are the terminal's: once, always this session, always in this
//! project, deny; a call only "once" may answer offers just once and deny.

use serde_json::Value;

use super::model::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionResponse,
};
use crate::session::Decision;

const ONCE: &str = "allow_once";
const SESSION: &str = "allow_session";
const PROJECT: &str = "allow_project";
const DENY: &str = "deny";

/// The options for one question; `always` are the rules an "always" answer adds.
pub fn options(once_only: bool, always: &[String]) -> Vec<PermissionOption> {
    let covers = if always.is_empty() {
        "this call".to_string()
    } else {
        always.join(", ")
    };
    let option = |id: &str, name: String, kind| PermissionOption {
        option_id: id.to_string(),
        name,
        kind,
    };
    let mut options = vec![option(
        ONCE,
        "Allow once".into(),
        PermissionOptionKind::AllowOnce,
    )];
    if !once_only {
        options.push(option(
            SESSION,
            format!("Always allow this session: {covers}"),
            PermissionOptionKind::AllowAlways,
        ));
        options.push(option(
            PROJECT,
            format!("Always allow in this project: {covers}"),
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(option(
        DENY,
        "Deny".into(),
        PermissionOptionKind::RejectOnce,
    ));
    options
}

/// The decision an editor's answer makes. Anything but a chosen allow option denies: a
/// cancelled question, an unknown option, an answer that is not one.
pub fn decision(answer: Option<&Value>) -> Decision {
    let response =
        answer.and_then(|a| serde_json::from_value::<RequestPermissionResponse>(a.clone()).ok());
    let chosen = match response.map(|r| r.outcome) {
        Some(RequestPermissionOutcome::Selected { option_id }) => option_id,
        Some(RequestPermissionOutcome::Cancelled) => {
            return deny("the question was cancelled in the editor");
        }
        _ => return deny("the editor gave no answer"),
    };
    match chosen.as_str() {
        ONCE => Decision::AllowOnce,
        SESSION => Decision::AllowSession,
        PROJECT => Decision::AllowProject,
        _ => deny("the person said no in the editor"),
    }
}

fn deny(reason: &str) -> Decision {
    Decision::Deny {
        reason: Some(reason.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_choice_maps_to_its_decision() {
        let chose = |id: &str| json!({"outcome": {"outcome": "selected", "optionId": id}});
        assert_eq!(decision(Some(&chose("allow_once"))), Decision::AllowOnce);
        assert_eq!(
            decision(Some(&chose("allow_session"))),
            Decision::AllowSession
        );
        assert_eq!(
            decision(Some(&chose("allow_project"))),
            Decision::AllowProject
        );
        assert!(matches!(
            decision(Some(&chose("deny"))),
            Decision::Deny { .. }
        ));
        assert!(matches!(
            decision(Some(&chose("what"))),
            Decision::Deny { .. }
        ));
        let cancelled = json!({"outcome": {"outcome": "cancelled"}});
        assert!(matches!(decision(Some(&cancelled)), Decision::Deny { .. }));
        assert!(matches!(decision(None), Decision::Deny { .. }));
    }

    #[test]
    fn a_once_only_question_offers_no_always() {
        let ids = |o: Vec<PermissionOption>| -> Vec<String> {
            o.into_iter().map(|o| o.option_id).collect()
        };
        assert_eq!(ids(options(true, &[])), ["allow_once", "deny"]);
        let all = options(false, &["Bash(cargo*)".into()]);
        assert!(all[1].name.contains("Bash(cargo*)"));
        assert_eq!(
            ids(all),
            ["allow_once", "allow_session", "allow_project", "deny"]
        );
    }
}
