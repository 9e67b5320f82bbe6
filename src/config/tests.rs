use super::*;

fn no_env(_: &str) -> Option<String> {
    None
}

fn write(dir: &Path, text: &str) {
    std::fs::write(dir.join(CONFIG_FILE), text).unwrap();
}

#[test]
fn defaults_without_files() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let c = Config::load(home.path(), root.path(), &no_env, &FlagOverrides::default()).unwrap();
    assert_eq!(c.max_iters, 100);
    assert!(c.models.is_empty());
    assert_eq!(c.selected_model().unwrap(), None);
}

#[test]
fn layers_override_in_order() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(
        home.path(),
        r#"
[agent]
default_model = "a"
max_iters = 7

[[models]]
id = "a"
provider = "ollama"
model = "qwen"

[[models]]
id = "b"
provider = "openai"
model = "gpt"
url = "http://127.0.0.1:8080/v1/"
"#,
    );
    write(
        root.path(),
        r#"
[agent]
max_iters = 9
default_model = "b"

[[models]]
id = "a"
provider = "anthropic"
model = "claude"
url = "http://127.0.0.1:8082"
api_key_env = "KEY"
"#,
    );
    let c = Config::load(home.path(), root.path(), &no_env, &FlagOverrides::default()).unwrap();
    assert_eq!(c.max_iters, 9);
    let selected = c.selected_model().unwrap().unwrap();
    assert_eq!(selected.id, "b");
    assert_eq!(selected.url, "http://127.0.0.1:8080/v1");
    // The project's entry with the person's id is refused, even on this machine: the
    // person's model stays, and the person is told (see trust_tests).
    let a = c.models.iter().find(|m| m.id == "a").unwrap();
    assert_eq!(a.provider, ProviderKind::Ollama);
    assert_eq!(a.url, "http://127.0.0.1:11434");
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    assert!(
        c.warnings[0].contains("id = \"a\" ignored"),
        "{:?}",
        c.warnings
    );

    let env = |k: &str| (k == "LINGGEN_MODEL").then(|| "a".to_string());
    let c = Config::load(home.path(), root.path(), &env, &FlagOverrides::default()).unwrap();
    assert_eq!(c.selected_model().unwrap().unwrap().id, "a");

    let flags = FlagOverrides {
        model: Some("b".into()),
        max_iters: Some(3),
        ..Default::default()
    };
    let c = Config::load(home.path(), root.path(), &env, &flags).unwrap();
    assert_eq!(c.selected_model().unwrap().unwrap().id, "b");
    assert_eq!(c.max_iters, 3);
}

#[test]
fn bad_value_names_file_line_and_expectation() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(root.path(), "[agent]\n\nmax_iters = \"ten\"\n");
    let err = Config::load(home.path(), root.path(), &no_env, &FlagOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains(CONFIG_FILE), "{err}");
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("expected"), "{err}");
}

#[test]
fn unknown_provider_is_an_error_with_choices() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(
        root.path(),
        "[[models]]\nid = \"x\"\nprovider = \"olama\"\nmodel = \"m\"\n",
    );
    let err = Config::load(home.path(), root.path(), &no_env, &FlagOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("ollama"), "{err}");
}

#[test]
fn bad_url_and_zero_iters_name_the_line() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(
        root.path(),
        "[[models]]\nid = \"x\"\nprovider = \"openai\"\nmodel = \"m\"\nurl = \"localhost:8080\"\n",
    );
    let err = Config::load(home.path(), root.path(), &no_env, &FlagOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 5") && err.contains("http://"), "{err}");
    write(root.path(), "[agent]\nmax_iters = 0\n");
    let err = Config::load(home.path(), root.path(), &no_env, &FlagOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("line 2") && err.contains("at least 1"),
        "{err}"
    );
}

#[test]
fn unknown_keys_warn_with_line() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(root.path(), "[agent]\nmax_iters = 5\nmax_iter = 6\n");
    let c = Config::load(home.path(), root.path(), &no_env, &FlagOverrides::default()).unwrap();
    assert_eq!(c.max_iters, 5);
    assert_eq!(c.warnings.len(), 1);
    assert!(
        c.warnings[0]
            .contains(":3: unknown key `agent.max_iter` ignored; did you mean `max_iters`?"),
        "{:?}",
        c.warnings
    );
}

#[test]
fn unknown_model_choice_lists_configured_ids() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(
        root.path(),
        "[[models]]\nid = \"x\"\nprovider = \"ollama\"\nmodel = \"m\"\n",
    );
    let flags = FlagOverrides {
        model: Some("y".into()),
        ..Default::default()
    };
    let c = Config::load(home.path(), root.path(), &no_env, &flags).unwrap();
    let err = c.selected_model().unwrap_err().to_string();
    assert!(err.contains("`y`") && err.contains("x"), "{err}");
}

#[test]
fn bad_env_values_are_named() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let env = |k: &str| (k == "LINGGEN_PERMISSION_MODE").then(|| "yolo".to_string());
    let err = Config::load(home.path(), root.path(), &env, &FlagOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("LINGGEN_PERMISSION_MODE=yolo"), "{err}");
}

#[test]
fn unknown_default_model_names_file_and_line() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(
        root.path(),
        "[[models]]\nid = \"x\"\nprovider = \"ollama\"\nmodel = \"m\"\n\n[agent]\ndefault_model = \"y\"\n",
    );
    let c = Config::load(home.path(), root.path(), &no_env, &FlagOverrides::default()).unwrap();
    let err = c.selected_model().unwrap_err().to_string();
    assert!(
        err.contains(&format!("{CONFIG_FILE}:7: [agent] default_model")),
        "{err}"
    );
    assert!(
        err.contains("model `y` is not configured; configured models: x"),
        "{err}"
    );
}

#[test]
fn ui_settings_and_their_origins() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(
        root.path(),
        "[ui]\ntheme = \"light\"\nshow_thinking = false\n",
    );
    let c = Config::load(home.path(), root.path(), &no_env, &FlagOverrides::default()).unwrap();
    assert_eq!(c.theme, "light");
    assert!(!c.show_thinking);
    assert!(c.origin("theme").ends_with(CONFIG_FILE));
    assert_eq!(c.origin("max_iters"), "default");
    let flags = FlagOverrides {
        theme: Some("solarized".into()),
        max_iters: Some(4),
        ..Default::default()
    };
    let c = Config::load(home.path(), root.path(), &no_env, &flags).unwrap();
    assert_eq!(c.theme, "solarized");
    assert_eq!(c.origin("theme"), "--theme");
    assert_eq!(c.origin("max_iters"), "--max-iters");
}

#[test]
fn tools_section_layers_chromium_and_adds_hosts() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(
        home.path(),
        "[tools]\nchromium = \"/opt/chrome/chrome\"\nscreenshot_hosts = [\"MyApp.test\"]\n",
    );
    write(
        root.path(),
        "[tools]\nchromium = \"chromium-browser\"\nscreenshot_hosts = [\"myapp.test\", \"fd00::1\"]\nfrobnicate = 1\n",
    );
    let mut c = Config::load(home.path(), root.path(), &no_env, &FlagOverrides::default()).unwrap();
    // The project's browser and hosts are grants: withheld until the folder is trusted.
    assert_eq!(c.screenshot.chromium.as_deref(), Some("/opt/chrome/chrome"));
    assert_eq!(c.screenshot.hosts, ["myapp.test"]);
    c.apply_trusted(&c.withheld.grants().into_iter().collect());
    assert_eq!(c.screenshot.chromium.as_deref(), Some("chromium-browser"));
    assert_eq!(c.screenshot.hosts, ["myapp.test", "[fd00::1]"]);
    assert_eq!(c.origin("chromium"), format!("{CONFIG_FILE} (trusted)"));
    assert_eq!(c.warnings.len(), 1);
    assert!(
        c.warnings[0].ends_with(":4: unknown key `tools.frobnicate` ignored"),
        "{:?}",
        c.warnings
    );
}

#[test]
fn a_bad_screenshot_host_names_the_line() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(
        root.path(),
        "[tools]\nscreenshot_hosts = [\n  \"ok.test\",\n  \"http://evil.example/\",\n]\n",
    );
    let err = Config::load(home.path(), root.path(), &no_env, &FlagOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("line 4: screenshot_hosts entry \"http://evil.example/\""),
        "{err}"
    );
}

#[test]
fn a_session_takes_its_own_choices_over_the_start_up_flags() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let start = FlagOverrides {
        permission_mode: Some(PermissionMode::Bypass),
        max_iters: Some(9),
        allowed_tools: vec!["Read".into()],
        ..Default::default()
    };
    let loaded = Config::load(home.path(), root.path(), &no_env, &start).unwrap();
    let later = FlagOverrides {
        permission_mode: Some(PermissionMode::Default),
        max_iters: Some(1),
        model: Some("b".into()),
        ..start.clone()
    };
    let session = loaded.for_session(&later);
    assert_eq!(session.permission_mode, PermissionMode::Default);
    assert_eq!(session.max_iters, 1);
    assert_eq!(session.model_choice.as_deref(), Some("b"));
    // Rules from the command line were applied once, at load.
    assert_eq!(session.allow, vec!["Read".to_string()]);
    // Without a choice the loaded value stands.
    let same = loaded.for_session(&FlagOverrides::default());
    assert_eq!(same.permission_mode, PermissionMode::Bypass);
}

/// `allow_read` opens a secret store: only from `$LINGGEN_HOME`'s file; a workspace's own
/// file cannot (it would hand the agent the person's keys), and says so.
#[test]
fn allow_read_comes_from_the_persons_file_only() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(
        home.path(),
        "[sandbox]\nallow_read = [\"/srv/keys/.aws\"]\n",
    );
    write(
        root.path(),
        "[sandbox]\nallow_read = [\"/srv/keys/.ssh\"]\n",
    );
    let c = Config::load(home.path(), root.path(), &no_env, &FlagOverrides::default()).unwrap();
    assert_eq!(c.sandbox.allow_read, [PathBuf::from("/srv/keys/.aws")]);
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("[sandbox] allow_read ignored")),
        "{:?}",
        c.warnings
    );
}

#[test]
fn llm_stall_secs_is_read_and_checked() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let load = || Config::load(home.path(), root.path(), &no_env, &FlagOverrides::default());
    assert_eq!(load().unwrap().stall_secs, 60);
    write(home.path(), "[llm]\nstall_secs = 5\n");
    let c = load().unwrap();
    assert_eq!(c.stall_secs, 5);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    write(home.path(), "[llm]\nstall_secs = 0\n");
    let err = load().unwrap_err().to_string();
    assert!(err.contains("line 2: stall_secs = 0"), "{err}");
}

#[test]
fn images_follow_the_models_key_else_only_the_providers_own_clouds_take_them() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(
        home.path(),
        r#"
[[models]]
id = "claude"
provider = "anthropic"
model = "claude-sonnet-4-5"

[[models]]
id = "gpt"
provider = "openai"
model = "gpt-4o"
url = "https://api.openai.com/v1"

[[models]]
id = "nova"
provider = "bedrock"
model = "amazon.nova-pro-v1:0"
region = "us-east-1"

[[models]]
id = "llama-cpp"
provider = "openai"
model = "qwen"

[[models]]
id = "llava"
provider = "ollama"
model = "llava"
images = true

[[models]]
id = "qwen"
provider = "ollama"
model = "qwen"

[[models]]
id = "gateway"
provider = "anthropic"
model = "claude-sonnet-4-5"
url = "https://llm-gateway.example.com"

[[models]]
id = "gpt-text"
provider = "openai"
model = "gpt-3.5-turbo"
url = "https://api.openai.com/v1"
images = false
"#,
    );
    let c = Config::load(home.path(), root.path(), &no_env, &FlagOverrides::default()).unwrap();
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let takes: Vec<(&str, bool)> = c
        .models
        .iter()
        .map(|m| (m.id.as_str(), m.accepts_images()))
        .collect();
    assert_eq!(
        takes,
        [
            ("claude", true),
            ("gpt", true),
            ("nova", true),
            ("llama-cpp", false),
            ("llava", true),
            ("qwen", false),
            ("gateway", false),
            ("gpt-text", false),
        ]
    );
}

fn load_model(entry_keys: &str) -> Result<Config, ConfigError> {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(
        home.path(),
        &format!("[[models]]\nid = \"x\"\nprovider = \"ollama\"\nmodel = \"m\"\n{entry_keys}"),
    );
    Config::load(home.path(), root.path(), &no_env, &FlagOverrides::default())
}

#[test]
fn prices_are_read_per_model_integers_included() {
    let c = load_model("price_input = 3\nprice_output = 15.5\n").unwrap();
    assert_eq!(c.models[0].price_input, Some(3.0));
    assert_eq!(c.models[0].price_output, Some(15.5));
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let c = load_model("").unwrap();
    assert_eq!(c.models[0].price_input, None);
    assert_eq!(c.models[0].price_output, None);
    let c = load_model("price_input = 0\n").unwrap();
    assert_eq!(c.models[0].price_input, Some(0.0));
}

#[test]
fn a_negative_price_names_the_file_the_line_and_the_key() {
    let err = load_model("price_output = -1.5\n").unwrap_err().to_string();
    assert!(err.contains(CONFIG_FILE), "{err}");
    assert!(err.contains("line 5"), "{err}");
    assert!(err.contains("price_output = -1.5"), "{err}");
    assert!(err.contains("0 or more"), "{err}");
}

#[test]
fn a_price_that_is_not_a_number_names_the_file_and_the_key() {
    let err = load_model("price_input = \"3 dollars\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains(CONFIG_FILE), "{err}");
    assert!(err.contains("price_input"), "{err}");
    assert!(err.contains("line 5"), "{err}");
}

/// Issue 28's keys are known (no warning) and read: the heartbeat from the person's own
/// file, curated reads from either.
#[test]
fn heartbeat_and_curated_reads_are_read_without_warnings() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(
        home.path(),
        "[heartbeat]\nevery = \"1h30m\"\nagent = \"coder\"\n\n[context]\ncurate_reads = true\ncurate_min_lines = 150\ncurator_model = \"local\"\n",
    );
    let c = Config::load(home.path(), root.path(), &no_env, &FlagOverrides::default()).unwrap();
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let beat = c.heartbeat.unwrap();
    assert_eq!(
        (beat.every.as_secs(), beat.agent.as_deref()),
        (5400, Some("coder"))
    );
    assert!(c.curate.enabled);
    assert_eq!(
        (c.curate.min_lines, c.curate.model.as_deref()),
        (150, Some("local"))
    );
}
