//! What each model's tokenizer makes of characters, remembered between processes in
//! `$LINGGEN_HOME/tokenizers.json`: a `-p --continue` turn is a new process, and without it
//! every turn would start from four characters a token, half wrong for some models and
//! content, which is the difference between a request that fits a small window and one
//! the server rejects.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::Router;
use crate::config::ModelConfig;

const FILE: &str = "tokenizers.json";

/// A change smaller than this is not worth a write.
const WORTH_SAVING: f64 = 0.02;

/// The key of a model's tokenizer: the served model at its provider (the configured id may
/// be renamed; the model is what tokenizes).
fn key(config: &ModelConfig) -> String {
    format!("{:?}:{}", config.provider, config.model).to_ascii_lowercase()
}

fn path(home: &Path) -> PathBuf {
    home.join(FILE)
}

/// Characters per token by key; empty when the file is missing or unreadable (it is only a
/// head start: a broken file costs one cold estimate, never a failure).
fn read(home: &Path) -> BTreeMap<String, f64> {
    std::fs::read_to_string(path(home))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// Gives every model of `router` the ratio learned for it before. Reads a file: call it
/// off the async runtime.
pub fn load(home: &Path, router: &Router) {
    let known = read(home);
    if known.is_empty() {
        return;
    }
    for model in &router.models {
        if let Some(ratio) = known.get(&key(&model.config)) {
            model.seed_ratio(*ratio);
        }
    }
}

/// Saves the ratio `now` of `config`'s model when it moved away from the saved one. Writes
/// a file: call it off the async runtime.
pub fn save_if_moved(home: &Path, config: &ModelConfig, now: f64) {
    let mut known = read(home);
    if known
        .get(&key(config))
        .is_some_and(|saved| ((now - saved) / saved).abs() < WORTH_SAVING)
    {
        return;
    }
    known.insert(key(config), (now * 1000.0).round() / 1000.0);
    let Ok(text) = serde_json::to_string_pretty(&known) else {
        return;
    };
    // Durable, so a reader never sees half a file; a failure is not worth telling the
    // person about (the next process starts cold, that is all).
    let _ = crate::durable::replace(
        &path(home),
        text.as_bytes(),
        crate::durable::Options::default(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProviderKind;

    #[test]
    fn a_learned_ratio_is_there_for_the_next_process() {
        let home = tempfile::tempdir().unwrap();
        let config = ModelConfig::new("small", ProviderKind::Openai, "smollm2", "http://x/v1");
        save_if_moved(home.path(), &config, 2.0412);
        let router = Router::new(
            vec![super::super::Model::new(config.clone(), Vec::new())],
            None,
            0,
        );
        load(home.path(), &router);
        assert_eq!(router.model(0).chars_for(1000.0), 2041);
        // Too small a move is not written; a real one is.
        save_if_moved(home.path(), &config, 2.05);
        assert_eq!(read(home.path())["openai:smollm2"], 2.041);
        save_if_moved(home.path(), &config, 3.0);
        assert_eq!(read(home.path())["openai:smollm2"], 3.0);
        // A broken file is a cold start, not a failure.
        std::fs::write(home.path().join(FILE), "{oops").unwrap();
        load(home.path(), &router);
    }
}
