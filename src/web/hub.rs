//! The sessions a server serves. Under `/share` that is the shell's session (replaced when
//! the shell switches sessions); under `linggen serve` the browser opens and starts them.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use super::mirror::Mirror;
use crate::agents::AgentSet;
use crate::app::{LineReader, Workspace};
use crate::session::{UserMessage, lock};
use crate::skills::SkillSet;
use crate::skills::live::Live;

/// Opens sessions for the browser (`linggen serve`).
pub trait SessionOpener: Send + Sync {
    /// Resumes `session_id`, or starts a new session when it is `None`.
    fn open(
        &self,
        session_id: Option<String>,
    ) -> Pin<Box<dyn Future<Output = Result<Arc<Mirror>, String>> + Send + '_>>;
}

/// What the routes work with.
pub struct Hub {
    pub home: PathBuf,
    pub root: PathBuf,
    skills: Arc<Live<SkillSet>>,
    agents: Arc<Live<AgentSet>>,
    line: LineReader,
    /// The configured models, `(id, "provider model")`, for the page's model menu.
    model_list: Vec<(String, String)>,
    /// Open sessions, the current one last.
    open: Mutex<Vec<Arc<Mirror>>>,
    opener: Option<Box<dyn SessionOpener>>,
    /// What a model picker offers (`GET /api/models`), from the configuration at start.
    models: serde_json::Value,
}

impl Hub {
    pub fn new(ws: &Workspace) -> Hub {
        Hub {
            home: ws.home.clone(),
            root: ws.root.clone(),
            skills: Arc::clone(&ws.skills),
            agents: Arc::clone(&ws.agents),
            line: ws.line,
            model_list: ws
                .config
                .models
                .iter()
                .map(|m| (m.id.clone(), format!("{} {}", m.provider.as_str(), m.model)))
                .collect(),
            open: Mutex::new(Vec::new()),
            opener: None,
            models: super::agents::model_choices(&ws.config),
        }
    }

    /// The workspace's agents, followed live (the Agents panel reads and writes them).
    pub fn agents(&self) -> &Arc<Live<AgentSet>> {
        &self.agents
    }

    /// The workspace's skills, followed live.
    pub fn skills(&self) -> &Arc<Live<SkillSet>> {
        &self.skills
    }

    /// See [`super::agents::model_choices`].
    pub fn models(&self) -> &serde_json::Value {
        &self.models
    }

    /// The `/` commands the page offers: the skills and custom commands a person may
    /// invoke, each with its description and argument hint. (The shell's own commands are
    /// not here: the page refuses them.)
    pub fn slash_commands(&self) -> Vec<serde_json::Value> {
        let skills = self.skills.get();
        let mut listed: Vec<serde_json::Value> = skills
            .user_visible()
            .map(|s| {
                serde_json::json!({
                    "name": s.name,
                    "description": s.description,
                    "argument_hint": s.argument_hint,
                    "kind": match s.kind {
                        crate::skills::SkillKind::Command => "command",
                        crate::skills::SkillKind::Skill => "skill",
                    },
                })
            })
            .collect();
        listed.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        listed
    }

    /// The agents a session may switch to, `(name, description)`, as the files say now.
    pub fn agent_choices(&self) -> Vec<(String, String)> {
        let agents = self.agents.get();
        let names = agents.names();
        names
            .into_iter()
            .map(|name| {
                let description = agents
                    .get(&name)
                    .map(|a| a.description.clone())
                    .unwrap_or_default();
                (name, description)
            })
            .collect()
    }

    /// The configured models, `(id, "provider model")`.
    pub fn model_list(&self) -> &[(String, String)] {
        &self.model_list
    }

    /// Lets the browser open and start sessions.
    pub fn with_opener(mut self, opener: Box<dyn SessionOpener>) -> Hub {
        self.opener = Some(opener);
        self
    }

    pub fn can_open(&self) -> bool {
        self.opener.is_some()
    }

    /// Makes `mirror` the shared session. Under `/share` it replaces the previous one (the
    /// shell moved to another session); under `serve` the others stay open.
    pub fn share(&self, mirror: Arc<Mirror>) {
        let mut open = lock(&self.open);
        if self.opener.is_none() {
            open.clear();
        }
        open.retain(|m| m.session_id != mirror.session_id);
        open.push(mirror);
    }

    /// The session `id`, or the current one.
    pub(in crate::web) fn mirror(&self, id: Option<&str>) -> Result<Arc<Mirror>, String> {
        let open = lock(&self.open);
        match id {
            None => open
                .last()
                .cloned()
                .ok_or_else(|| "no session is open yet; open or start one first".to_string()),
            Some(id) => open
                .iter()
                .find(|m| m.session_id == id)
                .cloned()
                .ok_or_else(|| {
                    format!("session {id} is not open here; open it first (POST /api/sessions)")
                }),
        }
    }

    /// Every open session, the current one last.
    pub fn open_mirrors(&self) -> Vec<Arc<Mirror>> {
        lock(&self.open).clone()
    }

    /// Stops serving session `id` (`linggen serve` closes idle ones); whoever runs it stops it.
    pub fn close(&self, id: &str) {
        lock(&self.open).retain(|m| m.session_id != id);
    }

    /// Whether `id` is open (live) in this process.
    pub fn is_open(&self, id: &str) -> bool {
        lock(&self.open).iter().any(|m| m.session_id == id)
    }

    pub fn current_id(&self) -> Option<String> {
        lock(&self.open).last().map(|m| m.session_id.clone())
    }

    /// Opens (or starts) a session and makes it current (`linggen serve` only).
    pub(in crate::web) async fn open_session(&self, id: Option<String>) -> Result<String, String> {
        let Some(opener) = &self.opener else {
            return Err(
                "this server shares the terminal's session; use `linggen serve` to open others"
                    .into(),
            );
        };
        if let Some(open) = id.as_deref().and_then(|id| self.mirror(Some(id)).ok()) {
            self.share(open.clone());
            return Ok(open.session_id.clone());
        }
        let mirror = opener.open(id).await?;
        let id = mirror.session_id.clone();
        self.share(mirror);
        Ok(id)
    }

    /// A line from the browser as the message it means: `/skill args`, `@agent …` and
    /// custom triggers and `@file` mentions work as in the terminal; the shell's own commands
    /// do not.
    pub(in crate::web) fn message(&self, line: &str) -> Result<UserMessage, String> {
        // The one line grammar of the core, with the shell's commands (which a page line
        // is refused as, like in the terminal) and `@path` attachments.
        let agents = self.agents.get().names();
        (self.line)(line, "web", &self.skills.get(), agents, &self.root).map_err(|e| e.to_string())
    }
}
