//! Configuration edited while the shell runs: before each line is handled, the shell looks
//! at the configuration files' modification times and, when one changed, reads them again
//! (quietly: a warning is a line above the prompt, never text under the editor). What the
//! shell itself decides follows at once (`/check`'s allow list, `show_thinking`, the model
//! list `/model` and `/doctor` see); what the running session was started with (models,
//! rules, MCP servers) applies from the next session, and the line says so. A file that no
//! longer parses is one error line naming it; the shell keeps what it had.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::shell::Shell;
use crate::config::CONFIG_FILE;

/// When each configuration file was last modified (`None`: absent), as last read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct ConfigStamp(Vec<(PathBuf, Option<SystemTime>)>);

impl ConfigStamp {
    pub fn of(home: &Path, root: &Path) -> ConfigStamp {
        let files = [home.join(CONFIG_FILE), root.join(CONFIG_FILE)];
        ConfigStamp(
            files
                .into_iter()
                .map(|path| {
                    let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
                    (path, modified)
                })
                .collect(),
        )
    }

    /// The files whose time differs from `before`'s, by name.
    fn changed_since(&self, before: &ConfigStamp) -> Vec<String> {
        self.0
            .iter()
            .filter(|entry| !before.0.contains(entry))
            .map(|(path, _)| path.display().to_string())
            .collect()
    }
}

impl Shell {
    /// The configuration files as they are now, read off the runtime and quietly (warnings
    /// come back in the config, for the caller to show as lines), with what the folder's
    /// trust lets through as at the start.
    pub(super) async fn read_config(&self) -> Result<crate::config::Config, String> {
        let (home, root) = (self.ws.home.clone(), self.ws.root.clone());
        let flags = self.start.overrides.clone();
        let accepted = self.ws.trust.trust.accepted().clone();
        tokio::task::spawn_blocking(move || {
            let env = |name: &str| std::env::var(name).ok();
            let mut config = crate::config::Config::load(&home, &root, &env, &flags)
                .map_err(|e| e.to_string())?;
            config.apply_trusted(&accepted);
            Ok(config)
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()))
    }

    /// Reads the configuration again if a file changed since it was last read.
    pub(super) async fn follow_config(&mut self) {
        let now = ConfigStamp::of(&self.ws.home, &self.ws.root);
        let changed = now.changed_since(&self.config_stamp);
        if changed.is_empty() {
            return;
        }
        self.config_stamp = now;
        match self.read_config().await {
            Ok(config) => {
                let warnings = config.warnings.clone();
                self.view.show_thinking = config.show_thinking;
                self.ws.config = config;
                self.view.hint(&format!(
                    "{} changed: read again · /check and show_thinking follow now; models, \
                     rules and MCP servers apply from the next session (/clear)",
                    changed.join(", ")
                ));
                for warning in warnings {
                    self.view.warning(&warning);
                }
            }
            Err(why) => self.view.error(&format!(
                "{why} — the shell keeps the configuration it had; the file is read again with your next line"
            )),
        }
    }
}
