//! Where Bedrock's authentication comes from, in the order the AWS SDKs look: a Bedrock API
//! key (bearer), the `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`
//! variables, then the `AWS_PROFILE` (or `default`) profile of the shared credentials file.

use std::path::PathBuf;

use super::sigv4::Credentials;

/// How one request is authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    Bearer(String),
    SigV4(Credentials),
}

/// The environment, passed in so tests need not touch the process's.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// No credentials in any place Bedrock's clients look; says what was looked at and how to
/// provide them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no AWS credentials: set {key_env} (a Bedrock API key), or AWS_ACCESS_KEY_ID and \
     AWS_SECRET_ACCESS_KEY, or add a [{profile}] profile to {looked}"
)]
pub struct NoCredentials {
    key_env: String,
    profile: String,
    looked: String,
}

/// Finds credentials; `Err` says what was looked at and how to provide them.
pub fn find(bearer_env: Option<&str>, env: Env<'_>) -> Result<Auth, NoCredentials> {
    let get = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    if let Some(token) = bearer_env.and_then(get) {
        return Ok(Auth::Bearer(token.trim().to_string()));
    }
    if let (Some(id), Some(secret)) = (get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY")) {
        return Ok(Auth::SigV4(Credentials {
            access_key_id: id.trim().to_string(),
            secret_access_key: secret.trim().to_string(),
            session_token: get("AWS_SESSION_TOKEN").map(|t| t.trim().to_string()),
        }));
    }
    let profile = get("AWS_PROFILE").unwrap_or_else(|| "default".to_string());
    let file = get("AWS_SHARED_CREDENTIALS_FILE")
        .map(PathBuf::from)
        .or_else(|| get("HOME").map(|h| PathBuf::from(h).join(".aws/credentials")));
    if let Some(file) = &file
        && let Ok(text) = std::fs::read_to_string(file)
        && let Some(creds) = from_profile(&text, &profile)
    {
        return Ok(Auth::SigV4(creds));
    }
    let looked = file.map_or_else(
        || "~/.aws/credentials".to_string(),
        |f| f.display().to_string(),
    );
    Err(NoCredentials {
        key_env: bearer_env
            .unwrap_or(crate::config::model::BEDROCK_KEY_ENV)
            .to_string(),
        profile,
        looked,
    })
}

/// The keys of `[profile]` in the shared credentials file (an INI file).
fn from_profile(text: &str, profile: &str) -> Option<Credentials> {
    let mut in_profile = false;
    let (mut id, mut secret, mut token) = (None, None, None);
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_profile = name.trim() == profile;
            continue;
        }
        if !in_profile {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = Some(value.trim().to_string());
        match key.trim() {
            "aws_access_key_id" => id = value,
            "aws_secret_access_key" => secret = value,
            "aws_session_token" => token = value,
            _ => {}
        }
    }
    Some(Credentials {
        access_key_id: id.filter(|v| !v.is_empty())?,
        secret_access_key: secret.filter(|v| !v.is_empty())?,
        session_token: token.filter(|v| !v.is_empty()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn bearer_then_variables_then_the_profile() {
        let bearer = "AWS_BEARER_TOKEN_BEDROCK";
        let all = [
            (bearer, "bedrock-key"),
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_SESSION_TOKEN", "token"),
        ];
        assert_eq!(
            find(Some(bearer), &env(&all)),
            Ok(Auth::Bearer("bedrock-key".into()))
        );
        let Ok(Auth::SigV4(creds)) = find(Some(bearer), &env(&all[1..])) else {
            panic!("the variables must be used")
        };
        assert_eq!(creds.session_token.as_deref(), Some("token"));

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("credentials");
        std::fs::write(
            &file,
            "[default]\naws_access_key_id = DEF\naws_secret_access_key = s1\n\n\
             [work]\n# comment\naws_access_key_id=WORK\naws_secret_access_key=s2\naws_session_token=t2\n",
        )
        .unwrap();
        let path = file.display().to_string();
        let vars = [
            ("AWS_SHARED_CREDENTIALS_FILE", path.as_str()),
            ("AWS_PROFILE", "work"),
        ];
        let Ok(Auth::SigV4(creds)) = find(Some(bearer), &env(&vars)) else {
            panic!("the profile must be used")
        };
        assert_eq!(
            (creds.access_key_id.as_str(), creds.session_token.as_deref()),
            ("WORK", Some("t2"))
        );
        let Ok(Auth::SigV4(creds)) = find(Some(bearer), &env(&vars[..1])) else {
            panic!("the default profile must be used")
        };
        assert_eq!(creds.access_key_id, "DEF");
        let missing = [
            ("AWS_SHARED_CREDENTIALS_FILE", path.as_str()),
            ("AWS_PROFILE", "nope"),
        ];
        let err = find(Some(bearer), &env(&missing)).unwrap_err().to_string();
        assert!(err.contains("[nope] profile"), "{err}");
        assert!(err.contains("AWS_BEARER_TOKEN_BEDROCK"), "{err}");
    }
}
