//! `/doctor`: what stands between the person and a working session, one line a check
//! (`✓` fine, `!` worth a look, `✗` broken), each not-fine line with its fix. The checks
//! that read only what the shell holds print at once; the model servers are asked in the
//! background, all at once and bounded, and their lines arrive through [`Reports`] while
//! the prompt stays live.

use std::io::IsTerminal as _;
use std::time::Duration;

use tokio::sync::mpsc;

use super::shell::Shell;
use crate::config::model::ModelConfig;

/// The most `/doctor` waits for all the model servers together.
const PROBE_LIMIT: Duration = Duration::from_secs(3);

/// Lines a background command finished with, for the shell's loop to print.
pub(super) struct Reports {
    sender: mpsc::UnboundedSender<Vec<String>>,
    receiver: mpsc::UnboundedReceiver<Vec<String>>,
}

impl Default for Reports {
    fn default() -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        Reports { sender, receiver }
    }
}

impl Reports {
    /// The next finished report (never, while none is due: the sender lives here too).
    pub async fn next(&mut self) -> Vec<String> {
        self.receiver.recv().await.unwrap_or_default()
    }
}

fn ok(what: &str) -> String {
    format!("✓ {what}")
}

fn warn(what: &str, fix: &str) -> String {
    format!("! {what} — {fix}")
}

fn fail(what: &str, fix: &str) -> String {
    format!("✗ {what} — {fix}")
}

impl Shell {
    /// `/doctor`: the local checks now; the model servers' lines when they have answered
    /// (or after [`PROBE_LIMIT`]).
    pub(super) async fn doctor(&mut self) {
        let mut lines = vec!["doctor:".to_string()];
        // The files as they are now (edited since the start?), quietly: a warning is a line
        // here, never text under the editor.
        let models = match self.read_config().await {
            Ok(config) => {
                lines.extend(config_lines(&config));
                config.models
            }
            Err(why) => {
                lines.push(fail(
                    &format!("config: {}", without_snippet(&why)),
                    "fix that line; linggen reads the file again at its next start",
                ));
                self.ws.config.models.clone()
            }
        };
        // Claude Code's settings files and the MCP definitions, as read at the start.
        for warning in self.ws.hooks.warnings.iter().chain(&self.ws.mcp.warnings) {
            lines.push(warn(
                warning,
                "fix the file it names; linggen reads it at its next start",
            ));
        }
        lines.push(sandbox_line(&self.ws.config));
        lines.push(trust_line(&self.ws));
        lines.push(self.mcp_line());
        lines.push(hooks_line(&self.ws));
        lines.extend(terminal_lines(super::tty::terminal_width()));
        if models.is_empty() {
            lines.push(fail(
                "models: none configured",
                "add a [[models]] entry to linggen-agent.toml (`linggen models` lists what it finds)",
            ));
            return self.view.lines(lines);
        }
        lines.push(format!(
            "… asking {} model server(s) (at most {} s)",
            models.iter().map(|m| m.servers().len()).sum::<usize>(),
            PROBE_LIMIT.as_secs()
        ));
        self.view.lines(lines);
        let report = self.reports.sender.clone();
        tokio::spawn(async move {
            let _ = report.send(model_lines(&models).await);
        });
    }

    fn mcp_line(&self) -> String {
        let Some(live) = self.link.live.as_ref() else {
            return ok(&format!(
                "MCP: {} server(s) configured",
                self.ws.mcp.servers.len()
            ));
        };
        let servers = live.mcp.lines();
        if servers.is_empty() {
            return ok("MCP: no servers configured");
        }
        let failed: Vec<String> = servers
            .iter()
            .filter(|s| matches!(s.status, crate::mcp::server::Status::Failed(_)))
            .map(|s| format!("{} ({})", s.name, s.status))
            .collect();
        let states: Vec<String> = servers
            .iter()
            .map(|s| format!("{} {}", s.name, s.status))
            .collect();
        let what = format!("MCP: {}", crate::text::one_line(&states.join("; "), 160));
        if failed.is_empty() {
            ok(&what)
        } else {
            fail(
                &format!("MCP: {}", crate::text::one_line(&failed.join("; "), 160)),
                "/mcp shows each server's last error; `linggen mcp get NAME` its definition",
            )
        }
    }
}

/// A parser's error on one line: its source excerpt (`2 | key = …`, `  |   ^^^`) left out,
/// the rest joined.
fn without_snippet(error: &str) -> String {
    error
        .lines()
        .map(str::trim)
        .filter(|l| {
            let quoted = l
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .trim_start();
            !l.is_empty() && !quoted.starts_with('|')
        })
        .collect::<Vec<_>>()
        .join(": ")
}

/// The files in effect and the warnings reading them gave.
fn config_lines(config: &crate::config::Config) -> Vec<String> {
    let files: Vec<String> = config
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    let mut lines = vec![match files.is_empty() {
        true => ok("config: no file (defaults and environment)"),
        false => ok(&format!("config parses: {}", files.join(", "))),
    }];
    for warning in &config.warnings {
        lines.push(warn(
            &format!("config: {warning}"),
            "fix or remove it (see doc/config.md)",
        ));
    }
    lines
}

fn sandbox_line(config: &crate::config::Config) -> String {
    use crate::tools::sandbox::{Support, support};
    let state = super::status::sandbox_state(config);
    if !config.sandbox.enabled {
        return warn(
            &format!("sandbox: {state}"),
            "remove `enabled = false` from [sandbox] to confine commands again",
        );
    }
    match support() {
        Support::Available { .. } => ok(&format!("sandbox: {state}")),
        Support::Unavailable(_) => fail(
            &format!("sandbox: {state}"),
            "use a Linux kernel with Landlock (5.13+) and unprivileged user namespaces \
             (sysctl kernel.unprivileged_userns_clone=1)",
        ),
    }
}

fn trust_line(ws: &crate::app::Workspace) -> String {
    let state = super::status::trust_state(ws);
    if ws.trust.warning.is_some() {
        return fail(
            &format!("trust: {state}"),
            "fix or remove the trust file, then `linggen trust`",
        );
    }
    match ws.trust.untrusted().is_empty() {
        true => ok(&format!("trust: {state}")),
        false => warn(
            &format!("trust: {state}"),
            "run `linggen trust` to review and accept them",
        ),
    }
}

fn hooks_line(ws: &crate::app::Workspace) -> String {
    use crate::hooks::{HookSet, Scope};
    let hooks = &ws.hooks;
    let all = hooks.handlers().count();
    let waiting = hooks
        .handlers()
        .filter(|(g, h)| {
            h.scope == Scope::Project
                && !ws.trust.trust.is_accepted(&HookSet::grant(g, h, &ws.root))
        })
        .count();
    match (all, waiting) {
        (0, _) => ok("hooks: none"),
        (all, 0) => ok(&format!(
            "hooks: {all} handler(s), all run (/hooks lists them)"
        )),
        (all, waiting) => warn(
            &format!("hooks: {waiting} of {all} handler(s) wait for trust"),
            "run `linggen trust` to let them run (/hooks lists them)",
        ),
    }
}

/// TERM, colours, width, whether output is a terminal.
fn terminal_lines(width: u16) -> Vec<String> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let term = var("TERM");
    let no_color = var("NO_COLOR").is_some();
    let colours = match (no_color, var("COLORTERM")) {
        (true, _) => "no colours (NO_COLOR is set)".to_string(),
        (false, Some(c)) if c == "truecolor" || c == "24bit" => "24-bit colours".into(),
        (false, _) if term.as_deref().is_some_and(|t| t.contains("256")) => "256 colours".into(),
        (false, _) => "basic colours".into(),
    };
    let tty = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    let what = format!(
        "terminal: TERM={} · {colours} · {width} columns · {}",
        term.as_deref().unwrap_or("(unset)"),
        if tty { "a tty" } else { "not a tty" }
    );
    let mut lines = Vec::new();
    match term.as_deref() {
        None | Some("dumb") => lines.push(warn(
            &what,
            "plain lines without editing or colour; set TERM (e.g. xterm-256color) for the full shell",
        )),
        Some(_) if !tty => lines.push(warn(&what, "run linggen in a terminal for the shell")),
        Some(_) if width < 60 => lines.push(warn(
            &what,
            "answers wrap tightly; a window of 80 columns or more reads better",
        )),
        Some(_) => lines.push(ok(&what)),
    }
    lines
}

/// Every configured model's servers, asked at once, the whole bounded by [`PROBE_LIMIT`]:
/// a dead server is one line, never a wait.
async fn model_lines(models: &[ModelConfig]) -> Vec<String> {
    let http = match crate::llm::router::http_client() {
        Ok(http) => http,
        Err(e) => return vec![fail(&format!("models: {e}"), "cannot make HTTP requests")],
    };
    let probes = models.iter().map(|model| {
        let http = http.clone();
        async move {
            let asked = model.servers().into_iter().map(|url| async {
                let answer = crate::app::model_answers(model, url, &http);
                let answer = tokio::time::timeout(PROBE_LIMIT, answer).await;
                (
                    url.to_string(),
                    answer.unwrap_or("no answer (timeout)".into()),
                )
            });
            model_line(model, futures_util::future::join_all(asked).await)
        }
    });
    futures_util::future::join_all(probes).await
}

fn model_line(model: &ModelConfig, answers: Vec<(String, String)>) -> String {
    let what = |answers: &[(String, String)]| {
        let each: Vec<String> = answers.iter().map(|(u, a)| format!("{a} at {u}")).collect();
        format!("model {} ({}): {}", model.id, model.model, each.join(", "))
    };
    let down = answers.iter().any(|(_, a)| a.starts_with("no answer"));
    let refused = answers.iter().any(|(_, a)| a.contains("key refused"));
    let no_key = model
        .api_key_env
        .as_deref()
        .filter(|env| std::env::var(env).map_or(true, |v| v.is_empty()));
    if down {
        fail(
            &what(&answers),
            "start the server, or fix `url` in its [[models]] entry (`linggen models` checks again)",
        )
    } else if let Some(env) = no_key {
        fail(
            &what(&answers),
            &format!("set {env} to the API key (its `api_key_env`)"),
        )
    } else if refused {
        fail(
            &what(&answers),
            "the server refused the key: check the variable its `api_key_env` names",
        )
    } else {
        ok(&what(&answers))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_toml_error_becomes_one_line_without_its_excerpt() {
        let error = "/h/linggen-agent.toml: TOML parse error at line 2, column 13\n  |\n2 | max_iters = \"many\"\n  |             ^^^^^^\ninvalid type: string \"many\", expected u32\n";
        assert_eq!(
            without_snippet(error),
            "/h/linggen-agent.toml: TOML parse error at line 2, column 13: invalid type: string \"many\", expected u32"
        );
    }
}
