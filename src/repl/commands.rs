//! The built-in slash commands as one typed table. Dispatch, `/help` and completion all
//! read it, so a command cannot exist in one place and be missing from another. Every
//! per-command fact is an exhaustive `match`: adding a variant does not compile until each
//! decision (summary, argument, busy state, completion source) has been made.

/// A built-in command. The declaration order is the order `/help` and completion show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    Help,
    Clear,
    Settings,
    Agent,
    Skills,
    Model,
    Mode,
    Permissions,
    Sessions,
    Runs,
    Tasks,
    Resume,
    Rewind,
    Context,
    Compact,
    Check,
    Memory,
    Theme,
    Share,
    Mcp,
    Hooks,
    Status,
    Cost,
    Doctor,
    Export,
    Init,
    Quit,
    Exit,
}

/// What the first argument of a command is, so completion knows which list to offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgumentKind {
    /// The command takes no argument (or a free-form one nothing can complete).
    None,
    /// A setting key (`/settings key value`).
    SettingKey,
    AgentName,
    ModelId,
    /// `chat`, `auto` or `talk`.
    TurnMode,
    /// `default`, `accept-edits`, `plan` or `bypass`.
    PermissionMode,
    SessionId,
    ThemeName,
    /// `stop`, `--read-only`, `--open`, `--lan`.
    ShareOption,
}

/// What `/share` takes, in completion order.
pub const SHARE_OPTIONS: &[&str] = &["--read-only", "--open", "--lan", "token", "stop"];

/// The turn modes `/mode` accepts, in completion order.
pub const TURN_MODES: &[&str] = &["chat", "auto", "talk"];

impl Command {
    /// Every command in display order.
    pub const ALL: &'static [Command] = &[
        Command::Help,
        Command::Clear,
        Command::Settings,
        Command::Agent,
        Command::Skills,
        Command::Model,
        Command::Mode,
        Command::Permissions,
        Command::Sessions,
        Command::Runs,
        Command::Tasks,
        Command::Resume,
        Command::Rewind,
        Command::Context,
        Command::Compact,
        Command::Check,
        Command::Memory,
        Command::Theme,
        Command::Share,
        Command::Mcp,
        Command::Hooks,
        Command::Status,
        Command::Cost,
        Command::Doctor,
        Command::Export,
        Command::Init,
        Command::Quit,
        Command::Exit,
    ];

    /// The name typed after the slash.
    pub fn name(self) -> &'static str {
        match self {
            Command::Help => "help",
            Command::Clear => "clear",
            Command::Settings => "settings",
            Command::Agent => "agent",
            Command::Skills => "skills",
            Command::Model => "model",
            Command::Mode => "mode",
            Command::Permissions => "permissions",
            Command::Sessions => "sessions",
            Command::Runs => "runs",
            Command::Tasks => "tasks",
            Command::Resume => "resume",
            Command::Rewind => "rewind",
            Command::Check => "check",
            Command::Context => "context",
            Command::Compact => "compact",
            Command::Memory => "memory",
            Command::Theme => "theme",
            Command::Share => "share",
            Command::Mcp => "mcp",
            Command::Hooks => "hooks",
            Command::Status => "status",
            Command::Cost => "cost",
            Command::Doctor => "doctor",
            Command::Export => "export",
            Command::Init => "init",
            Command::Quit => "quit",
            Command::Exit => "exit",
        }
    }

    /// Whether it works on a session this process runs (restarting, rewinding or sharing
    /// it), which a terminal attached to `linggen serve` does not have.
    pub fn needs_own_session(self) -> bool {
        matches!(
            self,
            Command::Clear
                | Command::Resume
                | Command::Rewind
                | Command::Share
                | Command::Mcp
                | Command::Export
        )
    }

    /// One line for `/help` and the completion menu.
    pub fn summary(self) -> &'static str {
        match self {
            Command::Help => "list commands, skills, agents and triggers",
            Command::Clear => "start a new session",
            Command::Settings => {
                "show effective settings and their source; set one for this session"
            }
            Command::Agent => "show the agents; switch the active one",
            Command::Skills => "list skills (with where each comes from) and skipped files",
            Command::Model => "switch the model",
            Command::Mode => {
                "chat (tools, you in the loop), auto (works until the task is finalized) or talk (no tools)"
            }
            Command::Permissions => "show or change the permission mode and saved rules",
            Command::Sessions => "list recent sessions",
            Command::Runs => "the runs of this session as a tree (delegations nested)",
            Command::Tasks => "background commands: state, age, last lines; stop one",
            Command::Resume => "continue a previous session",
            Command::Rewind => "go back to a checkpoint: files, conversation or both",
            Command::Check => {
                "run a verification command (cargo test…); the agent explains failures"
            }
            Command::Context => "token usage of this session",
            Command::Compact => "summarise the older conversation now to free the context",
            Command::Memory => "what linggen remembers in this project (`# text` adds a line)",
            Command::Theme => "show or switch the colour theme",
            Command::Share => {
                "let a browser watch and join this session (a local URL with a token)"
            }
            Command::Mcp => "MCP servers: where each comes from, its state, tools and last error",
            Command::Hooks => {
                "hooks: each event's commands, where they come from, whether they run"
            }
            Command::Status => {
                "version, session, agent, modes, model, context, trust, sandbox, config files"
            }
            Command::Cost => "tokens per model this session, the context, and the price if set",
            Command::Doctor => {
                "check config, model servers, sandbox, trust, MCP, hooks and terminal, with fixes"
            }
            Command::Export => "write this session's transcript as markdown",
            Command::Init => "have the agent look at the repository and write AGENTS.md",
            Command::Quit => "leave linggen",
            Command::Exit => "leave linggen",
        }
    }

    /// The argument shape shown as a dim hint: `<x>` required, `[x]` optional.
    pub fn argument_hint(self) -> Option<&'static str> {
        match self {
            Command::Settings => Some("[key value]"),
            Command::Agent => Some("[name]"),
            Command::Model => Some("<id>"),
            Command::Mode => Some("[chat|auto|talk]"),
            Command::Permissions => Some("[mode]"),
            Command::Resume => Some("[id]"),
            Command::Rewind => Some("[id] [code|conversation|both]"),
            Command::Check => Some("<command>"),
            Command::Theme => Some("[name]"),
            Command::Memory => Some("[forget N]"),
            Command::Compact => Some("[what to keep]"),
            Command::Share => Some("[--read-only|--open|--lan|stop]"),
            Command::Export => Some("[file]"),
            Command::Tasks => Some("[stop ID]"),
            Command::Help
            | Command::Clear
            | Command::Skills
            | Command::Sessions
            | Command::Runs
            | Command::Context
            | Command::Mcp
            | Command::Hooks
            | Command::Status
            | Command::Cost
            | Command::Doctor
            | Command::Init
            | Command::Quit
            | Command::Exit => None,
        }
    }

    /// Whether the command may run while a turn is in flight. Commands that only read
    /// state or only touch the terminal are safe; commands that swap what the running turn
    /// depends on (session, agent, model, mode, permissions, settings) wait until the turn
    /// ends, so a turn never changes its rules halfway through.
    pub fn available_while_busy(self) -> bool {
        match self {
            Command::Help
            | Command::Skills
            | Command::Sessions
            | Command::Runs
            | Command::Tasks
            | Command::Context
            | Command::Memory
            | Command::Theme
            | Command::Share
            | Command::Mcp
            | Command::Hooks
            | Command::Status
            | Command::Cost
            | Command::Doctor
            | Command::Export
            | Command::Quit
            | Command::Exit => true,
            // It sends the agent a message (and may first ask a question of its own).
            Command::Init
            | Command::Clear
            | Command::Settings
            | Command::Agent
            | Command::Model
            | Command::Mode
            | Command::Permissions
            | Command::Compact
            | Command::Check
            | Command::Rewind
            | Command::Resume => false,
        }
    }

    /// Which list completion offers for the first argument.
    pub fn argument_kind(self) -> ArgumentKind {
        match self {
            Command::Settings => ArgumentKind::SettingKey,
            Command::Agent => ArgumentKind::AgentName,
            Command::Model => ArgumentKind::ModelId,
            Command::Mode => ArgumentKind::TurnMode,
            Command::Permissions => ArgumentKind::PermissionMode,
            Command::Resume => ArgumentKind::SessionId,
            Command::Theme => ArgumentKind::ThemeName,
            Command::Share => ArgumentKind::ShareOption,
            Command::Help
            | Command::Clear
            | Command::Skills
            | Command::Sessions
            | Command::Runs
            | Command::Tasks
            | Command::Context
            | Command::Compact
            | Command::Check
            | Command::Rewind
            | Command::Memory
            | Command::Mcp
            | Command::Hooks
            | Command::Status
            | Command::Cost
            | Command::Doctor
            | Command::Export
            | Command::Init
            | Command::Quit
            | Command::Exit => ArgumentKind::None,
        }
    }

    /// `/quit` and `/exit` are two spellings of one action.
    pub fn quits(self) -> bool {
        matches!(self, Command::Quit | Command::Exit)
    }

    /// The command with this exact name (without the slash). Names are case-sensitive, like
    /// skill names, so `/Help` is an unknown command whose suggestion is `/help`.
    pub fn from_name(name: &str) -> Option<Command> {
        Command::ALL.iter().copied().find(|c| c.name() == name)
    }

    /// The commands completion offers in the given state.
    pub fn available(busy: bool) -> impl Iterator<Item = Command> + Clone {
        Command::ALL
            .iter()
            .copied()
            .filter(move |c| !busy || c.available_while_busy())
    }
}

/// Split `/name args` into a built-in command and its arguments (trimmed; they may span
/// several lines). Leading whitespace is ignored. Returns `None` for anything that is not a
/// built-in, including skills and unknown names: [`super::triggers::parse`] decides those.
pub fn parse(input: &str) -> Option<(Command, &str)> {
    let rest = input.trim_start().strip_prefix('/')?;
    let name_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let command = Command::from_name(&rest[..name_end])?;
    Some((command, rest[name_end..].trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_lists_every_variant_once_in_display_order() {
        let names: Vec<&str> = Command::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(
            names,
            [
                "help",
                "clear",
                "settings",
                "agent",
                "skills",
                "model",
                "mode",
                "permissions",
                "sessions",
                "runs",
                "tasks",
                "resume",
                "rewind",
                "context",
                "compact",
                "check",
                "memory",
                "theme",
                "share",
                "mcp",
                "hooks",
                "status",
                "cost",
                "doctor",
                "export",
                "init",
                "quit",
                "exit"
            ]
        );
        for command in Command::ALL {
            assert_eq!(Command::from_name(command.name()), Some(*command));
        }
    }

    /// Adding a variant forces a new arm here, which asks for its place in `ALL`; the test
    /// checks the two agree.
    fn display_position(command: Command) -> usize {
        match command {
            Command::Help => 0,
            Command::Clear => 1,
            Command::Settings => 2,
            Command::Agent => 3,
            Command::Skills => 4,
            Command::Model => 5,
            Command::Mode => 6,
            Command::Permissions => 7,
            Command::Sessions => 8,
            Command::Runs => 9,
            Command::Tasks => 10,
            Command::Resume => 11,
            Command::Rewind => 12,
            Command::Context => 13,
            Command::Compact => 14,
            Command::Check => 15,
            Command::Memory => 16,
            Command::Theme => 17,
            Command::Share => 18,
            Command::Mcp => 19,
            Command::Hooks => 20,
            Command::Status => 21,
            Command::Cost => 22,
            Command::Doctor => 23,
            Command::Export => 24,
            Command::Init => 25,
            Command::Quit => 26,
            Command::Exit => 27,
        }
    }

    #[test]
    fn all_agrees_with_each_variants_position() {
        for (index, command) in Command::ALL.iter().enumerate() {
            assert_eq!(display_position(*command), index, "{command:?}");
        }
    }

    #[test]
    fn parse_splits_name_and_trimmed_arguments() {
        assert_eq!(parse("/help"), Some((Command::Help, "")));
        assert_eq!(parse("/help   extra  "), Some((Command::Help, "extra")));
        assert_eq!(
            parse("  /model qwen3:8b"),
            Some((Command::Model, "qwen3:8b"))
        );
        assert_eq!(
            parse("/settings ui.theme light\nmore"),
            Some((Command::Settings, "ui.theme light\nmore"))
        );
        assert_eq!(parse("/mode\tauto"), Some((Command::Mode, "auto")));
    }

    #[test]
    fn parse_rejects_what_is_not_a_builtin() {
        assert_eq!(parse("help"), None);
        assert_eq!(parse("/"), None);
        assert_eq!(parse("/hlep"), None);
        assert_eq!(parse("/Help"), None);
        assert_eq!(parse("/helpme"), None);
        assert_eq!(parse("//help"), None);
        assert_eq!(parse("/deploy staging"), None);
    }

    #[test]
    fn quit_and_exit_both_quit() {
        assert_eq!(parse("/exit"), Some((Command::Exit, "")));
        assert!(Command::Quit.quits());
        assert!(Command::Exit.quits());
        assert!(!Command::Clear.quits());
    }

    #[test]
    fn busy_state_keeps_reading_commands_and_holds_back_switches() {
        let busy: Vec<Command> = Command::available(true).collect();
        assert!(busy.contains(&Command::Help));
        assert!(busy.contains(&Command::Context));
        assert!(busy.contains(&Command::Quit));
        assert!(busy.contains(&Command::Skills));
        assert!(busy.contains(&Command::Runs));
        assert!(!busy.contains(&Command::Clear));
        assert!(!busy.contains(&Command::Model));
        assert!(!busy.contains(&Command::Agent));
        assert_eq!(Command::available(false).count(), Command::ALL.len());
    }

    #[test]
    fn commands_with_a_completable_argument_declare_a_hint() {
        for command in Command::ALL {
            if command.argument_kind() != ArgumentKind::None {
                assert!(command.argument_hint().is_some(), "{command:?}");
            }
        }
    }
}
