//! Which environment variables are secrets. Every command inherits linggen's environment,
//! and linggen's environment holds the model API keys; a confused model that prints
//! `env` would hand them to whoever reads the transcript.

/// Names that always hold credentials, whatever their spelling suggests.
const EXACT: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AZURE_CLIENT_SECRET",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
];

/// Parts of a name that mark a credential: `OPENAI_API_KEY`, `GITHUB_TOKEN`,
/// `DB_PASSWORD`, `STRIPE_SECRET_KEY`, `NPM_AUTH_TOKEN`, `HF_TOKEN`…
const MARKS: &[&str] = &[
    "API_KEY",
    "APIKEY",
    "ACCESS_KEY",
    "PRIVATE_KEY",
    "SECRET",
    "TOKEN",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
];

/// Whether `name` must be scrubbed: an `api_key_env` of a configured model, a known
/// credential variable, a name ending in `_KEY`, or a name carrying one of the marks
/// (case-insensitive).
pub fn is_secret(name: &str, api_key_envs: &[String]) -> bool {
    if api_key_envs.iter().any(|k| k == name) {
        return true;
    }
    let upper = name.to_ascii_uppercase();
    EXACT.contains(&upper.as_str())
        || upper.ends_with("_KEY")
        || MARKS.iter().any(|m| upper.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_secret_and_ordinary_variables_are_not() {
        let keys = vec!["MY_LLM".to_string()];
        for name in [
            "ANTHROPIC_API_KEY",
            "openai_api_key",
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "DB_PASSWORD",
            "MY_LLM",
            "SSH_AUTH_SOCK",
            "NPM_CONFIG__AUTH",
            "LINGGEN_TEST_KEY",
            "STRIPE_KEY",
        ] {
            assert!(is_secret(name, &keys), "{name} should be scrubbed");
        }
        for name in [
            "PATH",
            "HOME",
            "LANG",
            "TERM",
            "CARGO_HOME",
            "RUST_LOG",
            "USER",
            "KEYMAP",
        ] {
            assert!(!is_secret(name, &keys), "{name} should be kept");
        }
    }
}
