# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_linggen_global_optspecs
    string join \n p/print= model= agent= root= max-iters= permission-mode= dangerously-skip-permissions mode= allowed-tools= disallowed-tools= append-system-prompt= system-prompt= c/continue r/resume= attach worktree input-format= output-format= stream-shape= theme= q/quiet tools= add-dir= image= verbose h/help V/version
end

function __fish_linggen_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_linggen_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_linggen_using_subcommand
    set -l cmd (__fish_linggen_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c linggen -n "__fish_linggen_needs_command" -s p -l print -d 'Run one task and print the answer (the task from PROMPT, else from stdin)' -r
complete -c linggen -n "__fish_linggen_needs_command" -l model -d 'Model id from [[models]] (overrides LINGGEN_MODEL and [agent] default_model)' -r
complete -c linggen -n "__fish_linggen_needs_command" -l agent -d 'Agent to talk to (ling, coder, or one from agents/*.md); default ling' -r
complete -c linggen -n "__fish_linggen_needs_command" -l root -d 'Workspace root (default: nearest ancestor with .git, else the current directory)' -r -F
complete -c linggen -n "__fish_linggen_needs_command" -l max-iters -l max-turns -d 'Upper bound on model calls in one task (Claude Code\'s `--max-turns`)' -r
complete -c linggen -n "__fish_linggen_needs_command" -l permission-mode -d 'default | accept-edits | plan | bypass (Claude Code\'s acceptEdits and bypassPermissions too)' -r
complete -c linggen -n "__fish_linggen_needs_command" -l mode -d 'chat (tools, you in the loop) | auto (a JSON action loop until the task is finalized) | talk (no tools); default: the agent\'s own mode, else chat' -r
complete -c linggen -n "__fish_linggen_needs_command" -l allowed-tools -l allowedTools -d 'Rules that run without asking, e.g. "Bash(cargo test*),Write(src/**)"' -r
complete -c linggen -n "__fish_linggen_needs_command" -l disallowed-tools -l disallowedTools -d 'Rules that are always refused, e.g. "Bash(git push*)"' -r
complete -c linggen -n "__fish_linggen_needs_command" -l append-system-prompt -d 'Text added at the end of the system prompt of this session\'s runs' -r
complete -c linggen -n "__fish_linggen_needs_command" -l system-prompt -d 'Text that replaces the agent\'s own instructions for this session\'s runs; the workspace facts, tool rules and project files (AGENTS.md, CLAUDE.md) stay' -r
complete -c linggen -n "__fish_linggen_needs_command" -s r -l resume -d 'Resume a session by id (or unique prefix)' -r
complete -c linggen -n "__fish_linggen_needs_command" -l input-format -d '-p only: `stream-json` reads the turns from stdin, one JSON message a line as Claude Code\'s SDK writes them, each answered in the same session (needs `--output-format stream-json`)' -r -f -a "text\t'The prompt argument, else all of stdin (piped stdin beside a prompt is its material)'
stream-json\t'One turn a line on stdin, as JSON messages'"
complete -c linggen -n "__fish_linggen_needs_command" -l output-format -d 'How -p prints: text (the answer), json (one object), stream-json (events, one per line)' -r -f -a "text\t'The final answer only'
json\t'One JSON object when done'
stream-json\t'One JSON event per line as it happens, then a `result` line'"
complete -c linggen -n "__fish_linggen_needs_command" -l stream-shape -d 'With `--output-format stream-json`: `claude` prints Claude Code\'s message shapes (`system`, `assistant`, `user`, `result`) for tools that parse them' -r -f -a "linggen\t'linggen\'s events (doc/events.md), then the `result` line'
claude\t'Claude Code\'s `system` / `assistant` / `user` messages, then the `result` line'"
complete -c linggen -n "__fish_linggen_needs_command" -l theme -d 'Colour theme of the interactive shell (dark, light, solarized, or one in $LINGGEN_HOME/themes)' -r
complete -c linggen -n "__fish_linggen_needs_command" -l tools -d 'The only tools offered, as Claude Code\'s flag: "Bash,Read,Edit", "" for none, `default` for all (MCP tools by name or pattern: mcp__github__*)' -r
complete -c linggen -n "__fish_linggen_needs_command" -l add-dir -d 'More folders the file tools may read and write and the sandbox opens (by absolute path), as Claude Code\'s flag: `--add-dir ../shared ../docs`' -r -F
complete -c linggen -n "__fish_linggen_needs_command" -l image -d '-p only: an image to send with the task (PNG, JPEG, GIF or WebP; repeatable), to a model that takes images' -r -F
complete -c linggen -n "__fish_linggen_needs_command" -l dangerously-skip-permissions -d 'Every call runs without asking: `--permission-mode bypass`, as Claude Code\'s flag. The sandbox and the rest of the floor stay (doc/security.md)'
complete -c linggen -n "__fish_linggen_needs_command" -s c -l continue -d 'Continue this workspace\'s newest session'
complete -c linggen -n "__fish_linggen_needs_command" -l attach -d 'Attach to this workspace\'s running `linggen serve`: its current session (or the one --continue / --resume names), shared with its page'
complete -c linggen -n "__fish_linggen_needs_command" -l worktree -d '-p only: run the task in a new git worktree on branch job/<id>, beside the repository; the result is committed there for you to merge'
complete -c linggen -n "__fish_linggen_needs_command" -s q -l quiet -d 'No progress on stderr (errors are still shown)'
complete -c linggen -n "__fish_linggen_needs_command" -l verbose -d 'Progress on stderr, each tool call with its result: linggen\'s default, accepted for scripts written for Claude Code'
complete -c linggen -n "__fish_linggen_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c linggen -n "__fish_linggen_needs_command" -s V -l version -d 'Print version'
complete -c linggen -n "__fish_linggen_needs_command" -a "sessions" -d 'List this workspace\'s sessions, newest first'
complete -c linggen -n "__fish_linggen_needs_command" -a "models" -d 'List the configured models: provider, local or cloud, context window, whether each answers right now, and which one serves calls'
complete -c linggen -n "__fish_linggen_needs_command" -a "serve" -d 'Serve the web UI without a terminal: the page lists this workspace\'s sessions, opens or starts one, and chats (see doc/web.md)'
complete -c linggen -n "__fish_linggen_needs_command" -a "trust" -d 'Show what this folder\'s own files grant (permission rules, a looser mode, skills\' allowed-tools) and trust them; nothing they grant holds until then (see doc/trust.md)'
complete -c linggen -n "__fish_linggen_needs_command" -a "acp" -d 'Serve the Agent Client Protocol on stdin/stdout, for editors such as Zed (see doc/acp.md)'
complete -c linggen -n "__fish_linggen_needs_command" -a "mcp" -d 'MCP servers: list, inspect, add and remove them; `mcp serve` offers linggen to other agents as an MCP server'
complete -c linggen -n "__fish_linggen_needs_command" -a "runs" -d 'The runs of this folder\'s newest session with their ids; `linggen runs show ID` prints one run\'s audit trail: every call, result, checkpoint and changed file, and the runs it delegated to'
complete -c linggen -n "__fish_linggen_needs_command" -a "rewind" -d 'Go back to a checkpoint: the files as they were before a prompt changed them, and the conversation as it was before that prompt (see doc/auto.md#rewind)'
complete -c linggen -n "__fish_linggen_needs_command" -a "schedule" -d 'Tasks that run on a schedule: `linggen serve` of this folder runs each at its time as a one-shot run (nothing asks; see doc/background.md)'
complete -c linggen -n "__fish_linggen_needs_command" -a "completions" -d 'Print a shell completion script to stdout (see completions/README.md)'
complete -c linggen -n "__fish_linggen_needs_command" -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c linggen -n "__fish_linggen_using_subcommand sessions" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand models" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand serve" -l port -d 'Port on 127.0.0.1 (default: a random free one)' -r
complete -c linggen -n "__fish_linggen_using_subcommand serve" -l lan -d 'Listen on every interface, so other machines can connect (anyone with the URL can drive the agent)'
complete -c linggen -n "__fish_linggen_using_subcommand serve" -l print-tokens -d 'Also print the long-lived tokens for scripts (full and read-only); they stay valid until the server stops'
complete -c linggen -n "__fish_linggen_using_subcommand serve" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand trust" -l yes -d 'Trust every grant without asking (for scripts)'
complete -c linggen -n "__fish_linggen_using_subcommand trust" -l revoke -d 'Forget this folder: none of its grants hold any more'
complete -c linggen -n "__fish_linggen_using_subcommand trust" -l list -d 'Only print the grants and which are trusted'
complete -c linggen -n "__fish_linggen_using_subcommand trust" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand acp" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove login logout serve help" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove login logout serve help" -f -a "list" -d 'Every MCP server configured for this folder, where each came from, and whether it starts here (see doc/mcp.md)'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove login logout serve help" -f -a "get" -d 'One server\'s definition, and its tools once it is started and answers'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove login logout serve help" -f -a "add" -d 'Add a server to linggen-agent.toml: `linggen mcp add NAME -- COMMAND [ARGS…]`, or `linggen mcp add NAME --url URL`'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove login logout serve help" -f -a "remove" -d 'Remove a server from linggen-agent.toml (yours, or the folder\'s with --project)'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove login logout serve help" -f -a "login" -d 'Sign in to a remote (HTTP) server with OAuth in your browser; the tokens are kept owner-only in $LINGGEN_HOME/mcp-credentials.json'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove login logout serve help" -f -a "logout" -d 'Forget a server\'s sign-in'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove login logout serve help" -f -a "serve" -d 'Run linggen as an MCP server on stdin/stdout, for other agents and editors: a `task` tool runs a task here as `-p` does, beside linggen\'s read-only tools'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove login logout serve help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from get" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from add" -l url -d 'A streamable HTTP server\'s address instead of a command' -r
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from add" -s e -l env -d '`KEY=VALUE` for the server\'s environment (repeat it)' -r
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from add" -l header -d '`Name: value` header for an HTTP server (repeat it)' -r
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from add" -l bearer-token-env-var -d 'The environment variable holding an HTTP server\'s bearer token' -r
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from add" -l network -d 'Let a stdio server reach the network (it runs confined otherwise)'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from add" -l project -d 'Write it to this folder\'s linggen-agent.toml instead of yours'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from add" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from remove" -l project
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from remove" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from login" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from logout" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from serve" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from help" -f -a "list" -d 'Every MCP server configured for this folder, where each came from, and whether it starts here (see doc/mcp.md)'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from help" -f -a "get" -d 'One server\'s definition, and its tools once it is started and answers'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from help" -f -a "add" -d 'Add a server to linggen-agent.toml: `linggen mcp add NAME -- COMMAND [ARGS…]`, or `linggen mcp add NAME --url URL`'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from help" -f -a "remove" -d 'Remove a server from linggen-agent.toml (yours, or the folder\'s with --project)'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from help" -f -a "login" -d 'Sign in to a remote (HTTP) server with OAuth in your browser; the tokens are kept owner-only in $LINGGEN_HOME/mcp-credentials.json'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from help" -f -a "logout" -d 'Forget a server\'s sign-in'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from help" -f -a "serve" -d 'Run linggen as an MCP server on stdin/stdout, for other agents and editors: a `task` tool runs a task here as `-p` does, beside linggen\'s read-only tools'
complete -c linggen -n "__fish_linggen_using_subcommand mcp; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c linggen -n "__fish_linggen_using_subcommand runs; and not __fish_seen_subcommand_from show help" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand runs; and not __fish_seen_subcommand_from show help" -f -a "show" -d 'Print the audit trail of one run'
complete -c linggen -n "__fish_linggen_using_subcommand runs; and not __fish_seen_subcommand_from show help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c linggen -n "__fish_linggen_using_subcommand runs; and __fish_seen_subcommand_from show" -l full -d 'Print every call\'s whole arguments, output and diff, not their summaries'
complete -c linggen -n "__fish_linggen_using_subcommand runs; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand runs; and __fish_seen_subcommand_from help" -f -a "show" -d 'Print the audit trail of one run'
complete -c linggen -n "__fish_linggen_using_subcommand runs; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c linggen -n "__fish_linggen_using_subcommand rewind" -l only -d 'Restore only the files (code) or only the conversation; default both' -r -f -a "code\t''
conversation\t''
both\t''"
complete -c linggen -n "__fish_linggen_using_subcommand rewind" -l list -d 'List the checkpoints of this folder\'s newest session, one a line, ID first'
complete -c linggen -n "__fish_linggen_using_subcommand rewind" -l force -d 'Overwrite files changed by hand since the checkpoint'
complete -c linggen -n "__fish_linggen_using_subcommand rewind" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand schedule; and not __fish_seen_subcommand_from add list remove run-now help" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand schedule; and not __fish_seen_subcommand_from add list remove run-now help" -f -a "add" -d 'Add a schedule: `linggen schedule add "0 9 * * 1-5" "run the tests and report"`'
complete -c linggen -n "__fish_linggen_using_subcommand schedule; and not __fish_seen_subcommand_from add list remove run-now help" -f -a "list" -d 'This folder\'s schedules: when each runs next and how its last run went'
complete -c linggen -n "__fish_linggen_using_subcommand schedule; and not __fish_seen_subcommand_from add list remove run-now help" -f -a "remove" -d 'Remove a schedule (its id, or a unique prefix)'
complete -c linggen -n "__fish_linggen_using_subcommand schedule; and not __fish_seen_subcommand_from add list remove run-now help" -f -a "run-now" -d 'Run a schedule now, here, as `linggen serve` would; its next time stays'
complete -c linggen -n "__fish_linggen_using_subcommand schedule; and not __fish_seen_subcommand_from add list remove run-now help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c linggen -n "__fish_linggen_using_subcommand schedule; and __fish_seen_subcommand_from add" -l agent -d 'The agent that runs it (default: ling)' -r
complete -c linggen -n "__fish_linggen_using_subcommand schedule; and __fish_seen_subcommand_from add" -l model -d 'The model that runs it: an id from [[models]], `local` or `cloud`' -r
complete -c linggen -n "__fish_linggen_using_subcommand schedule; and __fish_seen_subcommand_from add" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand schedule; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand schedule; and __fish_seen_subcommand_from remove" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand schedule; and __fish_seen_subcommand_from run-now" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand schedule; and __fish_seen_subcommand_from help" -f -a "add" -d 'Add a schedule: `linggen schedule add "0 9 * * 1-5" "run the tests and report"`'
complete -c linggen -n "__fish_linggen_using_subcommand schedule; and __fish_seen_subcommand_from help" -f -a "list" -d 'This folder\'s schedules: when each runs next and how its last run went'
complete -c linggen -n "__fish_linggen_using_subcommand schedule; and __fish_seen_subcommand_from help" -f -a "remove" -d 'Remove a schedule (its id, or a unique prefix)'
complete -c linggen -n "__fish_linggen_using_subcommand schedule; and __fish_seen_subcommand_from help" -f -a "run-now" -d 'Run a schedule now, here, as `linggen serve` would; its next time stays'
complete -c linggen -n "__fish_linggen_using_subcommand schedule; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c linggen -n "__fish_linggen_using_subcommand completions" -s h -l help -d 'Print help'
complete -c linggen -n "__fish_linggen_using_subcommand help; and not __fish_seen_subcommand_from sessions models serve trust acp mcp runs rewind schedule completions help" -f -a "sessions" -d 'List this workspace\'s sessions, newest first'
complete -c linggen -n "__fish_linggen_using_subcommand help; and not __fish_seen_subcommand_from sessions models serve trust acp mcp runs rewind schedule completions help" -f -a "models" -d 'List the configured models: provider, local or cloud, context window, whether each answers right now, and which one serves calls'
complete -c linggen -n "__fish_linggen_using_subcommand help; and not __fish_seen_subcommand_from sessions models serve trust acp mcp runs rewind schedule completions help" -f -a "serve" -d 'Serve the web UI without a terminal: the page lists this workspace\'s sessions, opens or starts one, and chats (see doc/web.md)'
complete -c linggen -n "__fish_linggen_using_subcommand help; and not __fish_seen_subcommand_from sessions models serve trust acp mcp runs rewind schedule completions help" -f -a "trust" -d 'Show what this folder\'s own files grant (permission rules, a looser mode, skills\' allowed-tools) and trust them; nothing they grant holds until then (see doc/trust.md)'
complete -c linggen -n "__fish_linggen_using_subcommand help; and not __fish_seen_subcommand_from sessions models serve trust acp mcp runs rewind schedule completions help" -f -a "acp" -d 'Serve the Agent Client Protocol on stdin/stdout, for editors such as Zed (see doc/acp.md)'
complete -c linggen -n "__fish_linggen_using_subcommand help; and not __fish_seen_subcommand_from sessions models serve trust acp mcp runs rewind schedule completions help" -f -a "mcp" -d 'MCP servers: list, inspect, add and remove them; `mcp serve` offers linggen to other agents as an MCP server'
complete -c linggen -n "__fish_linggen_using_subcommand help; and not __fish_seen_subcommand_from sessions models serve trust acp mcp runs rewind schedule completions help" -f -a "runs" -d 'The runs of this folder\'s newest session with their ids; `linggen runs show ID` prints one run\'s audit trail: every call, result, checkpoint and changed file, and the runs it delegated to'
complete -c linggen -n "__fish_linggen_using_subcommand help; and not __fish_seen_subcommand_from sessions models serve trust acp mcp runs rewind schedule completions help" -f -a "rewind" -d 'Go back to a checkpoint: the files as they were before a prompt changed them, and the conversation as it was before that prompt (see doc/auto.md#rewind)'
complete -c linggen -n "__fish_linggen_using_subcommand help; and not __fish_seen_subcommand_from sessions models serve trust acp mcp runs rewind schedule completions help" -f -a "schedule" -d 'Tasks that run on a schedule: `linggen serve` of this folder runs each at its time as a one-shot run (nothing asks; see doc/background.md)'
complete -c linggen -n "__fish_linggen_using_subcommand help; and not __fish_seen_subcommand_from sessions models serve trust acp mcp runs rewind schedule completions help" -f -a "completions" -d 'Print a shell completion script to stdout (see completions/README.md)'
complete -c linggen -n "__fish_linggen_using_subcommand help; and not __fish_seen_subcommand_from sessions models serve trust acp mcp runs rewind schedule completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c linggen -n "__fish_linggen_using_subcommand help; and __fish_seen_subcommand_from mcp" -f -a "list" -d 'Every MCP server configured for this folder, where each came from, and whether it starts here (see doc/mcp.md)'
complete -c linggen -n "__fish_linggen_using_subcommand help; and __fish_seen_subcommand_from mcp" -f -a "get" -d 'One server\'s definition, and its tools once it is started and answers'
complete -c linggen -n "__fish_linggen_using_subcommand help; and __fish_seen_subcommand_from mcp" -f -a "add" -d 'Add a server to linggen-agent.toml: `linggen mcp add NAME -- COMMAND [ARGS…]`, or `linggen mcp add NAME --url URL`'
complete -c linggen -n "__fish_linggen_using_subcommand help; and __fish_seen_subcommand_from mcp" -f -a "remove" -d 'Remove a server from linggen-agent.toml (yours, or the folder\'s with --project)'
complete -c linggen -n "__fish_linggen_using_subcommand help; and __fish_seen_subcommand_from mcp" -f -a "login" -d 'Sign in to a remote (HTTP) server with OAuth in your browser; the tokens are kept owner-only in $LINGGEN_HOME/mcp-credentials.json'
complete -c linggen -n "__fish_linggen_using_subcommand help; and __fish_seen_subcommand_from mcp" -f -a "logout" -d 'Forget a server\'s sign-in'
complete -c linggen -n "__fish_linggen_using_subcommand help; and __fish_seen_subcommand_from mcp" -f -a "serve" -d 'Run linggen as an MCP server on stdin/stdout, for other agents and editors: a `task` tool runs a task here as `-p` does, beside linggen\'s read-only tools'
complete -c linggen -n "__fish_linggen_using_subcommand help; and __fish_seen_subcommand_from runs" -f -a "show" -d 'Print the audit trail of one run'
complete -c linggen -n "__fish_linggen_using_subcommand help; and __fish_seen_subcommand_from schedule" -f -a "add" -d 'Add a schedule: `linggen schedule add "0 9 * * 1-5" "run the tests and report"`'
complete -c linggen -n "__fish_linggen_using_subcommand help; and __fish_seen_subcommand_from schedule" -f -a "list" -d 'This folder\'s schedules: when each runs next and how its last run went'
complete -c linggen -n "__fish_linggen_using_subcommand help; and __fish_seen_subcommand_from schedule" -f -a "remove" -d 'Remove a schedule (its id, or a unique prefix)'
complete -c linggen -n "__fish_linggen_using_subcommand help; and __fish_seen_subcommand_from schedule" -f -a "run-now" -d 'Run a schedule now, here, as `linggen serve` would; its next time stays'
