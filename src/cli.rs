//! Command-line arguments and dispatch.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser, Subcommand};
use clap_complete::Shell;

use crate::app::{Start, exit};
use crate::config::{self, ConfigError, FlagOverrides, PermissionMode};
use crate::print::run::{PrintOptions, Task};
use crate::print::{OutputFormat, StreamShape};

#[derive(Debug, Clone, Parser)]
#[command(
    name = "linggen",
    version,
    about = "A terminal-first coding agent for local and cloud models",
    after_help = "Examples:\n  linggen -p \"explain src/main.rs\"\n  git diff | linggen -p \"review this\"\n  linggen sessions"
)]
pub struct Cli {
    /// Run one task and print the answer (the task from PROMPT, else from stdin).
    #[arg(short = 'p', long = "print", value_name = "PROMPT", num_args = 0..=1)]
    pub print: Option<Option<String>>,

    /// The task (same as the value of -p).
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,

    /// Model id from [[models]] (overrides LINGGEN_MODEL and [agent] default_model).
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,

    /// Agent to talk to (ling, coder, or one from agents/*.md); default ling.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,

    /// Workspace root (default: nearest ancestor with .git, else the current directory).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// Upper bound on model calls in one task (Claude Code's `--max-turns`).
    #[arg(long, visible_alias = "max-turns", value_name = "N", value_parser = parse_max_iters)]
    pub max_iters: Option<u32>,

    /// default | accept-edits | plan | bypass (Claude Code's acceptEdits and
    /// bypassPermissions too).
    #[arg(long, value_name = "MODE", value_parser = parse_mode)]
    pub permission_mode: Option<PermissionMode>,

    /// Every call runs without asking: `--permission-mode bypass`, as Claude Code's flag.
    /// The sandbox and the rest of the floor stay (doc/security.md).
    #[arg(long, conflicts_with = "permission_mode")]
    pub dangerously_skip_permissions: bool,

    /// chat (tools, you in the loop) | auto (a JSON action loop until the task is
    /// finalized) | talk (no tools); default: the agent's own mode, else chat.
    #[arg(long, value_name = "MODE", value_parser = parse_turn_mode)]
    pub mode: Option<crate::config::TurnMode>,

    /// Rules that run without asking, e.g. "Bash(cargo test*),Write(src/**)".
    #[arg(long, visible_alias = "allowedTools", value_name = "RULES")]
    pub allowed_tools: Vec<String>,

    /// Rules that are always refused, e.g. "Bash(git push*)".
    #[arg(long, visible_alias = "disallowedTools", value_name = "RULES")]
    pub disallowed_tools: Vec<String>,

    /// Text added at the end of the system prompt of this session's runs.
    #[arg(long, value_name = "TEXT")]
    pub append_system_prompt: Option<String>,

    /// Text that replaces the agent's own instructions for this session's runs; the
    /// workspace facts, tool rules and project files (AGENTS.md, CLAUDE.md) stay.
    #[arg(long, value_name = "TEXT")]
    pub system_prompt: Option<String>,

    /// Continue this workspace's newest session.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    pub continue_session: bool,

    /// Resume a session by id (or unique prefix).
    #[arg(short = 'r', long, value_name = "ID")]
    pub resume: Option<String>,

    /// Attach to this workspace's running `linggen serve`: its current session (or the one
    /// --continue / --resume names), shared with its page.
    #[arg(long, conflicts_with_all = ["print", "worktree"])]
    pub attach: bool,

    /// -p only: run the task in a new git worktree on branch job/<id>, beside the
    /// repository; the result is committed there for you to merge.
    #[arg(long)]
    pub worktree: bool,

    /// -p only: `stream-json` reads the turns from stdin, one JSON message a line as
    /// Claude Code's SDK writes them, each answered in the same session (needs
    /// `--output-format stream-json`).
    #[arg(long, value_enum, default_value_t = InputFormat::Text)]
    pub input_format: InputFormat,

    /// How -p prints: text (the answer), json (one object), stream-json (events, one per line).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,

    /// With `--output-format stream-json`: `claude` prints Claude Code's message shapes
    /// (`system`, `assistant`, `user`, `result`) for tools that parse them.
    #[arg(long, value_enum, default_value_t = StreamShape::Linggen)]
    pub stream_shape: StreamShape,

    /// Colour theme of the interactive shell (dark, light, solarized, or one in
    /// $LINGGEN_HOME/themes).
    #[arg(long, value_name = "NAME")]
    pub theme: Option<String>,

    /// No progress on stderr (errors are still shown).
    #[arg(short, long)]
    pub quiet: bool,

    /// The only tools offered, as Claude Code's flag: "Bash,Read,Edit", "" for none,
    /// `default` for all (MCP tools by name or pattern: mcp__github__*).
    #[arg(long, value_name = "TOOLS", value_parser = parse_tools)]
    pub tools: Option<ToolList>,

    /// More folders the file tools may read and write and the sandbox opens (by absolute
    /// path), as Claude Code's flag: `--add-dir ../shared ../docs`.
    #[arg(long = "add-dir", value_name = "DIR", num_args = 1.., value_parser = parse_dir)]
    pub add_dir: Vec<PathBuf>,

    /// -p only: an image to send with the task (PNG, JPEG, GIF or WebP; repeatable), to a
    /// model that takes images.
    #[arg(long, value_name = "FILE", requires = "print")]
    pub image: Vec<PathBuf>,

    /// Progress on stderr, each tool call with its result: linggen's default, accepted for
    /// scripts written for Claude Code.
    #[arg(long, conflicts_with = "quiet")]
    pub verbose: bool,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// List this workspace's sessions, newest first.
    Sessions,
    /// List the configured models: provider, local or cloud, context window, whether each
    /// answers right now, and which one serves calls.
    Models,
    /// Serve the web UI without a terminal: the page lists this workspace's sessions, opens
    /// or starts one, and chats (see doc/web.md).
    Serve {
        /// Port on 127.0.0.1 (default: a random free one).
        #[arg(long, value_name = "N")]
        port: Option<u16>,
        /// Listen on every interface, so other machines can connect (anyone with the URL can
        /// drive the agent).
        #[arg(long)]
        lan: bool,
        /// Also print the long-lived tokens for scripts (full and read-only); they stay
        /// valid until the server stops.
        #[arg(long)]
        print_tokens: bool,
    },
    /// Show what this folder's own files grant (permission rules, a looser mode, skills'
    /// allowed-tools) and trust them; nothing they grant holds until then (see doc/trust.md).
    Trust {
        /// Trust every grant without asking (for scripts).
        #[arg(long, conflicts_with_all = ["revoke", "list"])]
        yes: bool,
        /// Forget this folder: none of its grants hold any more.
        #[arg(long, conflicts_with = "list")]
        revoke: bool,
        /// Only print the grants and which are trusted.
        #[arg(long)]
        list: bool,
    },
    /// Serve the Agent Client Protocol on stdin/stdout, for editors such as Zed (see
    /// doc/acp.md).
    Acp,
    /// MCP servers: list, inspect, add and remove them; `mcp serve` offers linggen to other
    /// agents as an MCP server.
    Mcp {
        #[command(subcommand)]
        action: McpAction,
    },
    /// The runs of this folder's newest session with their ids; `linggen runs show ID`
    /// prints one run's audit trail: every call, result, checkpoint and changed file, and
    /// the runs it delegated to.
    Runs {
        #[command(subcommand)]
        action: Option<RunsAction>,
    },
    /// Go back to a checkpoint: the files as they were before a prompt changed them, and the
    /// conversation as it was before that prompt (see doc/auto.md#rewind).
    Rewind {
        /// The checkpoint (or a unique prefix of its id); without one, the list.
        #[arg(value_name = "ID")]
        id: Option<String>,
        /// List the checkpoints of this folder's newest session, one a line, ID first.
        #[arg(long, conflicts_with = "id")]
        list: bool,
        /// Restore only the files (code) or only the conversation; default both.
        #[arg(long, value_name = "WHAT", value_parser = ["code", "conversation", "both"])]
        only: Option<String>,
        /// Overwrite files changed by hand since the checkpoint.
        #[arg(long)]
        force: bool,
    },
    /// Tasks that run on a schedule: `linggen serve` of this folder runs each at its
    /// time as a one-shot run (nothing asks; see doc/background.md).
    Schedule {
        #[command(subcommand)]
        action: ScheduleAction,
    },
    /// Print a shell completion script to stdout (see completions/README.md).
    Completions {
        /// bash | zsh | fish | elvish | powershell.
        #[arg(value_enum)]
        shell: Shell,
    },
}

#[derive(Debug, Clone, Subcommand)]
pub enum McpAction {
    /// Every MCP server configured for this folder, where each came from, and whether it
    /// starts here (see doc/mcp.md).
    List,
    /// One server's definition, and its tools once it is started and answers.
    Get {
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Add a server to linggen-agent.toml: `linggen mcp add NAME -- COMMAND [ARGS…]`, or
    /// `linggen mcp add NAME --url URL`.
    Add {
        #[arg(value_name = "NAME")]
        name: String,
        /// A streamable HTTP server's address instead of a command.
        #[arg(long, value_name = "URL", conflicts_with = "command")]
        url: Option<String>,
        /// `KEY=VALUE` for the server's environment (repeat it).
        #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// `Name: value` header for an HTTP server (repeat it).
        #[arg(long = "header", value_name = "HEADER")]
        headers: Vec<String>,
        /// The environment variable holding an HTTP server's bearer token.
        #[arg(long, value_name = "VAR")]
        bearer_token_env_var: Option<String>,
        /// Let a stdio server reach the network (it runs confined otherwise).
        #[arg(long)]
        network: bool,
        /// Write it to this folder's linggen-agent.toml instead of yours.
        #[arg(long)]
        project: bool,
        /// The program and its arguments, after `--`.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Remove a server from linggen-agent.toml (yours, or the folder's with --project).
    Remove {
        #[arg(value_name = "NAME")]
        name: String,
        #[arg(long)]
        project: bool,
    },
    /// Sign in to a remote (HTTP) server with OAuth in your browser; the tokens are kept
    /// owner-only in $LINGGEN_HOME/mcp-credentials.json.
    Login {
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Forget a server's sign-in.
    Logout {
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Run linggen as an MCP server on stdin/stdout, for other agents and editors: a `task`
    /// tool runs a task here as `-p` does, beside linggen's read-only tools.
    Serve,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ScheduleAction {
    /// Add a schedule: `linggen schedule add "0 9 * * 1-5" "run the tests and report"`.
    Add {
        /// Five-field cron expression in local time: minute hour day-of-month month
        /// day-of-week.
        #[arg(value_name = "CRON")]
        cron: String,
        /// What to do, as you would type it to `linggen -p`.
        #[arg(value_name = "TASK")]
        task: String,
        /// The agent that runs it (default: ling).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        /// The model that runs it: an id from [[models]], `local` or `cloud`.
        #[arg(long, value_name = "ID")]
        model: Option<String>,
    },
    /// This folder's schedules: when each runs next and how its last run went.
    List,
    /// Remove a schedule (its id, or a unique prefix).
    Remove {
        #[arg(value_name = "ID")]
        id: String,
    },
    /// Run a schedule now, here, as `linggen serve` would; its next time stays.
    RunNow {
        #[arg(value_name = "ID")]
        id: String,
    },
}

#[derive(Debug, Clone, Subcommand)]
pub enum RunsAction {
    /// Print the audit trail of one run.
    Show {
        #[arg(value_name = "ID")]
        id: String,
        /// Print every call's whole arguments, output and diff, not their summaries.
        #[arg(long)]
        full: bool,
    },
}

/// `linggen completions SHELL`: the script clap_complete generates from [`Cli`], so it can
/// never list a flag the parser does not know.
pub fn print_completions(shell: Shell) -> i32 {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "linggen", &mut script);
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(&script).and_then(|()| stdout.flush()) {
        Ok(()) => exit::SUCCESS,
        Err(e) => {
            eprintln!("linggen: error: cannot write the completion script: {e}");
            exit::FAILURE
        }
    }
}

fn parse_max_iters(v: &str) -> Result<u32, config::BadMaxIters> {
    config::parse_max_iters(v)
}

fn parse_turn_mode(v: &str) -> Result<crate::config::TurnMode, String> {
    crate::config::TurnMode::parse(v).ok_or_else(|| "expected chat, auto or talk".to_string())
}

/// How `-p` reads its task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum InputFormat {
    /// The prompt argument, else all of stdin (piped stdin beside a prompt is its material).
    #[default]
    Text,
    /// One turn a line on stdin, as JSON messages.
    StreamJson,
}

/// `--tools` parsed: `None` inside for `default` (a plain `Option<Option<…>>` would make
/// clap read the flag as taking an optional value).
#[derive(Debug, Clone)]
pub struct ToolList(Option<Vec<String>>);

fn parse_tools(v: &str) -> Result<ToolList, crate::session::run_flags::UnknownTool> {
    crate::session::run_flags::parse_tools(v).map(ToolList)
}

/// An existing folder, canonical (symlinks resolved), for `--add-dir`.
fn parse_dir(v: &str) -> Result<PathBuf, String> {
    let path = std::fs::canonicalize(v).map_err(|e| format!("no folder `{v}`: {e}"))?;
    if !path.is_dir() {
        return Err(format!("`{v}` is not a folder"));
    }
    if path == Path::new("/") {
        return Err("`/` would open every file on the machine; name a project folder".into());
    }
    Ok(path)
}

fn parse_mode(v: &str) -> Result<PermissionMode, String> {
    PermissionMode::parse(v).ok_or_else(|| format!("expected one of {}", PermissionMode::NAMES))
}

/// Splits `--allowed-tools` values on commas and spaces outside parentheses, so both
/// `"Read,Edit"` and `"Bash(git log:*) Edit"` work, as in Claude Code.
pub fn split_rules(values: &[String]) -> Vec<String> {
    let mut rules = Vec::new();
    for value in values {
        let mut depth = 0usize;
        let mut current = String::new();
        for c in value.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                ',' | ' ' if depth == 0 => {
                    if !current.trim().is_empty() {
                        rules.push(current.trim().to_string());
                    }
                    current.clear();
                    continue;
                }
                _ => {}
            }
            current.push(c);
        }
        if !current.trim().is_empty() {
            rules.push(current.trim().to_string());
        }
    }
    rules
}

impl Cli {
    /// What every frontend starts from, as these flags say.
    pub fn start(&self) -> Start {
        use crate::repl::commands::Command as Shell;
        Start {
            root: self.root.clone(),
            overrides: self.flag_overrides(),
            agent: self.agent.clone(),
            resume: self.resume.clone(),
            continue_session: self.continue_session,
            mode: self.mode,
            // Lines posted to `-p` and the page are read with the shell's commands known, so
            // that `/clear` there is refused with a hint instead of reaching the model.
            line: crate::session::line::message::<Shell>,
            // Skills and commands a built-in shadows are named at start, not silently lost.
            builtin_clashes: crate::session::line::builtin_clashes::<Shell>,
            cleared: false,
            attach: self.attach,
            editor_mcp: Vec::new(),
            editor_files: None,
        }
    }

    pub fn flag_overrides(&self) -> FlagOverrides {
        FlagOverrides {
            model: self.model.clone(),
            max_iters: self.max_iters,
            permission_mode: match self.dangerously_skip_permissions {
                true => Some(PermissionMode::Bypass),
                false => self.permission_mode,
            },
            system_prompt: self.system_prompt.clone(),
            append_system_prompt: self.append_system_prompt.clone(),
            tools: self.tools.clone().and_then(|t| t.0),
            allowed_tools: split_rules(&self.allowed_tools),
            disallowed_tools: split_rules(&self.disallowed_tools),
            add_dirs: self.add_dir.clone(),
            theme: self.theme.clone(),
        }
    }

    /// The `-p` task: the prompt argument and whatever was piped on stdin. With both, the
    /// prompt is the instruction and stdin its material (`git diff | linggen -p "/review"`).
    pub fn task(&self) -> Result<Task, ConfigError> {
        let arg = self
            .print
            .clone()
            .flatten()
            .or_else(|| self.prompt.clone())
            .filter(|p| !p.trim().is_empty());
        let piped = read_piped_stdin()?;
        match (arg, piped) {
            (Some(arg), Some(input)) => Ok(Task {
                prompt: arg,
                attached: format!("\n\n```\n{}\n```", input.trim_end()),
                images: self.image.clone(),
            }),
            (Some(prompt), None) | (None, Some(prompt)) => Ok(Task {
                prompt,
                attached: String::new(),
                images: self.image.clone(),
            }),
            (None, None) => Err(ConfigError::Usage(
                "no task given: pass it as `linggen -p \"task\"` or pipe it on stdin".into(),
            )),
        }
    }
}

/// Reads stdin only when it is a pipe or a file. A terminal would wait for typing, and a
/// socket or character device (such as a CI runner's) may never close.
fn read_piped_stdin() -> Result<Option<String>, ConfigError> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() || !stdin_is_pipe_or_file() {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    stdin
        .lock()
        .read_to_end(&mut bytes)
        .map_err(|e| ConfigError::Usage(format!("cannot read stdin: {e}")))?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Ok(Some(text).filter(|t| !t.trim().is_empty()))
}

fn stdin_is_pipe_or_file() -> bool {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::metadata("/dev/stdin") else {
        return false;
    };
    let kind = meta.file_type();
    kind.is_fifo() || kind.is_file()
}

/// Entry point: returns the process exit code.
pub fn main() -> i32 {
    crate::app::allocator::keep_large_blocks_separate();
    // `/share` in the terminal and the editor starts the web frontend's server through the
    // app layer (frontends do not import one another).
    crate::app::share::provide(Box::new(crate::web::share::WebShare));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                exit::USAGE
            } else {
                exit::SUCCESS
            };
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("linggen: error: cannot start the async runtime: {e}");
            return exit::FAILURE;
        }
    };
    let code = runtime.block_on(dispatch(cli));
    // Don't wait for stray blocking tasks (a stuck stdin read, say) on the way out.
    runtime.shutdown_background();
    code
}

async fn dispatch(cli: Cli) -> i32 {
    match &cli.command {
        Some(command) => subcommand(&cli, command).await,
        None => without_subcommand(cli).await,
    }
}

/// Runs a subcommand (`linggen sessions`, `linggen serve`, …); `-p` plays no part.
async fn subcommand(cli: &Cli, command: &Command) -> i32 {
    match command {
        Command::Sessions => crate::app::list_sessions(&cli.start()),
        Command::Models => crate::app::list_models(&cli.start()).await,
        Command::Completions { shell } => print_completions(*shell),
        Command::Runs { action } => match action {
            Some(RunsAction::Show { id, full }) => crate::app::show_run(&cli.start(), id, *full),
            None => crate::app::list_runs(&cli.start()),
        },
        Command::Rewind {
            id,
            list,
            only,
            force,
        } => {
            let what = only.as_deref().and_then(crate::app::rewind::What::parse);
            crate::app::rewind::command(
                &cli.start(),
                id.as_deref().filter(|_| !list),
                what.unwrap_or(crate::app::rewind::What::Both),
                *force,
            )
        }
        Command::Trust { yes, revoke, list } => {
            use crate::repl::trust::{self, TrustAction};
            let action = match (yes, revoke, list) {
                (true, _, _) => TrustAction::Yes,
                (_, true, _) => TrustAction::Revoke,
                (_, _, true) => TrustAction::List,
                _ => TrustAction::Ask,
            };
            trust::command(&cli.start(), action)
        }
        Command::Mcp { action } => mcp_command(cli, action).await,
        Command::Acp => crate::acp::run(cli.start()).await,
        Command::Schedule { action } => schedule_command(cli, action).await,
        Command::Serve {
            port,
            lan,
            print_tokens,
        } => {
            let options = crate::web::ServeOptions {
                port: port.unwrap_or(0),
                lan: *lan,
            };
            crate::web::serve::run(cli.start(), options, *print_tokens).await
        }
    }
}

/// Without a subcommand: a one-shot task (`-p`, a prompt argument, or piped input), or
/// the interactive shell.
async fn without_subcommand(cli: Cli) -> i32 {
    match cli.print.is_some() {
        false if cli.attach && (cli.prompt.is_some() || !std::io::stdin().is_terminal()) => {
            eprintln!(
                "linggen: error: --attach opens the interactive shell, which needs a terminal; \
                 a script can use linggen serve's HTTP API (doc/web.md)"
            );
            exit::USAGE
        }
        true => run_print(cli).await,
        false if cli.prompt.is_some() || !std::io::stdin().is_terminal() => {
            // `linggen "task"` or `echo task | linggen`: the one-shot path is what a
            // script means here.
            run_print(cli).await
        }
        false if cli.worktree => {
            eprintln!(
                "linggen: error: --worktree runs a -p task; use linggen -p --worktree \"task\""
            );
            exit::USAGE
        }
        false => crate::repl::run(cli.start()).await,
    }
}

/// `linggen schedule …`.
async fn schedule_command(cli: &Cli, action: &ScheduleAction) -> i32 {
    use crate::app::schedule::{self, ScheduleCommand};
    let command = match action.clone() {
        ScheduleAction::Add {
            cron,
            task,
            agent,
            model,
        } => ScheduleCommand::Add {
            cron,
            task,
            agent,
            model,
        },
        ScheduleAction::List => ScheduleCommand::List,
        ScheduleAction::Remove { id } => ScheduleCommand::Remove { id },
        ScheduleAction::RunNow { id } => ScheduleCommand::RunNow { id },
    };
    let start = cli.start();
    // Reads the database and waits for a run: off the runtime's threads.
    tokio::task::spawn_blocking(move || schedule::command(&start, command))
        .await
        .unwrap_or(exit::FAILURE)
}

async fn mcp_command(cli: &Cli, action: &McpAction) -> i32 {
    use crate::app::mcp;
    let start = cli.start();
    match action {
        McpAction::List => mcp::list(&start),
        McpAction::Get { name } => mcp::get(&start, name).await,
        McpAction::Add {
            name,
            url,
            env,
            headers,
            bearer_token_env_var,
            network,
            project,
            command,
        } => {
            let entry = mcp::NewServer {
                name: name.clone(),
                url: url.clone(),
                command: command.clone(),
                env: env.clone(),
                headers: headers.clone(),
                bearer_token_env_var: bearer_token_env_var.clone(),
                network: *network,
            };
            mcp::add(&start, &entry, *project)
        }
        McpAction::Remove { name, project } => mcp::remove(&start, name, *project),
        McpAction::Login { name } => crate::app::mcp_login::login(&start, name).await,
        McpAction::Logout { name } => crate::app::mcp_login::logout(&start, name),
        McpAction::Serve => crate::app::mcp_serve::run(start).await,
    }
}

async fn run_print(cli: Cli) -> i32 {
    let mut options = PrintOptions {
        start: cli.start(),
        format: cli.output_format,
        shape: cli.stream_shape,
        quiet: cli.quiet,
    };
    if cli.input_format == InputFormat::StreamJson {
        let first = cli.print.clone().flatten().or_else(|| cli.prompt.clone());
        return crate::print::stream_input::run(options, first).await;
    }
    if !cli.worktree {
        return crate::print::run::run(options, move || cli.task()).await;
    }
    // `--worktree`: the same run, in a worktree of its own (git calls block: off the runtime).
    let dir = match &cli.root {
        Some(root) => root.clone(),
        None => std::env::current_dir().unwrap_or_else(|_| ".".into()),
    };
    let made = tokio::task::spawn_blocking(move || crate::app::worktree::create(&dir)).await;
    let job = match made {
        Ok(Ok(job)) => job,
        Ok(Err(f)) => {
            eprintln!("linggen: error: {}", f.message);
            return f.code;
        }
        Err(e) => {
            eprintln!("linggen: error: {e}");
            return exit::FAILURE;
        }
    };
    eprintln!(
        "linggen: working in the worktree {} on branch {}",
        job.path.display(),
        job.branch
    );
    options.start.root = Some(job.root.clone());
    let label = cli
        .print
        .clone()
        .flatten()
        .or(cli.prompt.clone())
        .unwrap_or_default();
    let code = crate::print::run::run(options, move || cli.task()).await;
    let said = tokio::task::spawn_blocking(move || crate::app::worktree::finish(&job, &label));
    if let Ok(line) = said.await {
        eprintln!("linggen: {line}");
    }
    code
}
