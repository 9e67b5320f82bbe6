
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'linggen' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'linggen'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'linggen' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Run one task and print the answer (the task from PROMPT, else from stdin)')
            [CompletionResult]::new('--print', '--print', [CompletionResultType]::ParameterName, 'Run one task and print the answer (the task from PROMPT, else from stdin)')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Model id from [[models]] (overrides LINGGEN_MODEL and [agent] default_model)')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Agent to talk to (ling, coder, or one from agents/*.md); default ling')
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'Workspace root (default: nearest ancestor with .git, else the current directory)')
            [CompletionResult]::new('--max-iters', '--max-iters', [CompletionResultType]::ParameterName, 'Upper bound on model calls in one task (Claude Code''s `--max-turns`)')
            [CompletionResult]::new('--max-turns', '--max-turns', [CompletionResultType]::ParameterName, 'Upper bound on model calls in one task (Claude Code''s `--max-turns`)')
            [CompletionResult]::new('--permission-mode', '--permission-mode', [CompletionResultType]::ParameterName, 'default | accept-edits | plan | bypass (Claude Code''s acceptEdits and bypassPermissions too)')
            [CompletionResult]::new('--mode', '--mode', [CompletionResultType]::ParameterName, 'chat (tools, you in the loop) | auto (a JSON action loop until the task is finalized) | talk (no tools); default: the agent''s own mode, else chat')
            [CompletionResult]::new('--allowed-tools', '--allowed-tools', [CompletionResultType]::ParameterName, 'Rules that run without asking, e.g. "Bash(cargo test*),Write(src/**)"')
            [CompletionResult]::new('--allowedTools', '--allowedTools', [CompletionResultType]::ParameterName, 'Rules that run without asking, e.g. "Bash(cargo test*),Write(src/**)"')
            [CompletionResult]::new('--disallowed-tools', '--disallowed-tools', [CompletionResultType]::ParameterName, 'Rules that are always refused, e.g. "Bash(git push*)"')
            [CompletionResult]::new('--disallowedTools', '--disallowedTools', [CompletionResultType]::ParameterName, 'Rules that are always refused, e.g. "Bash(git push*)"')
            [CompletionResult]::new('--append-system-prompt', '--append-system-prompt', [CompletionResultType]::ParameterName, 'Text added at the end of the system prompt of this session''s runs')
            [CompletionResult]::new('--system-prompt', '--system-prompt', [CompletionResultType]::ParameterName, 'Text that replaces the agent''s own instructions for this session''s runs; the workspace facts, tool rules and project files (AGENTS.md, CLAUDE.md) stay')
            [CompletionResult]::new('-r', '-r', [CompletionResultType]::ParameterName, 'Resume a session by id (or unique prefix)')
            [CompletionResult]::new('--resume', '--resume', [CompletionResultType]::ParameterName, 'Resume a session by id (or unique prefix)')
            [CompletionResult]::new('--input-format', '--input-format', [CompletionResultType]::ParameterName, '-p only: `stream-json` reads the turns from stdin, one JSON message a line as Claude Code''s SDK writes them, each answered in the same session (needs `--output-format stream-json`)')
            [CompletionResult]::new('--output-format', '--output-format', [CompletionResultType]::ParameterName, 'How -p prints: text (the answer), json (one object), stream-json (events, one per line)')
            [CompletionResult]::new('--stream-shape', '--stream-shape', [CompletionResultType]::ParameterName, 'With `--output-format stream-json`: `claude` prints Claude Code''s message shapes (`system`, `assistant`, `user`, `result`) for tools that parse them')
            [CompletionResult]::new('--theme', '--theme', [CompletionResultType]::ParameterName, 'Colour theme of the interactive shell (dark, light, solarized, or one in $LINGGEN_HOME/themes)')
            [CompletionResult]::new('--tools', '--tools', [CompletionResultType]::ParameterName, 'The only tools offered, as Claude Code''s flag: "Bash,Read,Edit", "" for none, `default` for all (MCP tools by name or pattern: mcp__github__*)')
            [CompletionResult]::new('--add-dir', '--add-dir', [CompletionResultType]::ParameterName, 'More folders the file tools may read and write and the sandbox opens (by absolute path), as Claude Code''s flag: `--add-dir ../shared ../docs`')
            [CompletionResult]::new('--image', '--image', [CompletionResultType]::ParameterName, '-p only: an image to send with the task (PNG, JPEG, GIF or WebP; repeatable), to a model that takes images')
            [CompletionResult]::new('--dangerously-skip-permissions', '--dangerously-skip-permissions', [CompletionResultType]::ParameterName, 'Every call runs without asking: `--permission-mode bypass`, as Claude Code''s flag. The sandbox and the rest of the floor stay (doc/security.md)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Continue this workspace''s newest session')
            [CompletionResult]::new('--continue', '--continue', [CompletionResultType]::ParameterName, 'Continue this workspace''s newest session')
            [CompletionResult]::new('--attach', '--attach', [CompletionResultType]::ParameterName, 'Attach to this workspace''s running `linggen serve`: its current session (or the one --continue / --resume names), shared with its page')
            [CompletionResult]::new('--worktree', '--worktree', [CompletionResultType]::ParameterName, '-p only: run the task in a new git worktree on branch job/<id>, beside the repository; the result is committed there for you to merge')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No progress on stderr (errors are still shown)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No progress on stderr (errors are still shown)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Progress on stderr, each tool call with its result: linggen''s default, accepted for scripts written for Claude Code')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('sessions', 'sessions', [CompletionResultType]::ParameterValue, 'List this workspace''s sessions, newest first')
            [CompletionResult]::new('models', 'models', [CompletionResultType]::ParameterValue, 'List the configured models: provider, local or cloud, context window, whether each answers right now, and which one serves calls')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Serve the web UI without a terminal: the page lists this workspace''s sessions, opens or starts one, and chats (see doc/web.md)')
            [CompletionResult]::new('trust', 'trust', [CompletionResultType]::ParameterValue, 'Show what this folder''s own files grant (permission rules, a looser mode, skills'' allowed-tools) and trust them; nothing they grant holds until then (see doc/trust.md)')
            [CompletionResult]::new('acp', 'acp', [CompletionResultType]::ParameterValue, 'Serve the Agent Client Protocol on stdin/stdout, for editors such as Zed (see doc/acp.md)')
            [CompletionResult]::new('mcp', 'mcp', [CompletionResultType]::ParameterValue, 'MCP servers: list, inspect, add and remove them; `mcp serve` offers linggen to other agents as an MCP server')
            [CompletionResult]::new('runs', 'runs', [CompletionResultType]::ParameterValue, 'The runs of this folder''s newest session with their ids; `linggen runs show ID` prints one run''s audit trail: every call, result, checkpoint and changed file, and the runs it delegated to')
            [CompletionResult]::new('rewind', 'rewind', [CompletionResultType]::ParameterValue, 'Go back to a checkpoint: the files as they were before a prompt changed them, and the conversation as it was before that prompt (see doc/auto.md#rewind)')
            [CompletionResult]::new('schedule', 'schedule', [CompletionResultType]::ParameterValue, 'Tasks that run on a schedule: `linggen serve` of this folder runs each at its time as a one-shot run (nothing asks; see doc/background.md)')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script to stdout (see completions/README.md)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'linggen;sessions' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;models' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;serve' {
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'Port on 127.0.0.1 (default: a random free one)')
            [CompletionResult]::new('--lan', '--lan', [CompletionResultType]::ParameterName, 'Listen on every interface, so other machines can connect (anyone with the URL can drive the agent)')
            [CompletionResult]::new('--print-tokens', '--print-tokens', [CompletionResultType]::ParameterName, 'Also print the long-lived tokens for scripts (full and read-only); they stay valid until the server stops')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;trust' {
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Trust every grant without asking (for scripts)')
            [CompletionResult]::new('--revoke', '--revoke', [CompletionResultType]::ParameterName, 'Forget this folder: none of its grants hold any more')
            [CompletionResult]::new('--list', '--list', [CompletionResultType]::ParameterName, 'Only print the grants and which are trusted')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;acp' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;mcp' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'Every MCP server configured for this folder, where each came from, and whether it starts here (see doc/mcp.md)')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'One server''s definition, and its tools once it is started and answers')
            [CompletionResult]::new('add', 'add', [CompletionResultType]::ParameterValue, 'Add a server to linggen-agent.toml: `linggen mcp add NAME -- COMMAND [ARGS…]`, or `linggen mcp add NAME --url URL`')
            [CompletionResult]::new('remove', 'remove', [CompletionResultType]::ParameterValue, 'Remove a server from linggen-agent.toml (yours, or the folder''s with --project)')
            [CompletionResult]::new('login', 'login', [CompletionResultType]::ParameterValue, 'Sign in to a remote (HTTP) server with OAuth in your browser; the tokens are kept owner-only in $LINGGEN_HOME/mcp-credentials.json')
            [CompletionResult]::new('logout', 'logout', [CompletionResultType]::ParameterValue, 'Forget a server''s sign-in')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Run linggen as an MCP server on stdin/stdout, for other agents and editors: a `task` tool runs a task here as `-p` does, beside linggen''s read-only tools')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'linggen;mcp;list' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;mcp;get' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;mcp;add' {
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'A streamable HTTP server''s address instead of a command')
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, '`KEY=VALUE` for the server''s environment (repeat it)')
            [CompletionResult]::new('--env', '--env', [CompletionResultType]::ParameterName, '`KEY=VALUE` for the server''s environment (repeat it)')
            [CompletionResult]::new('--header', '--header', [CompletionResultType]::ParameterName, '`Name: value` header for an HTTP server (repeat it)')
            [CompletionResult]::new('--bearer-token-env-var', '--bearer-token-env-var', [CompletionResultType]::ParameterName, 'The environment variable holding an HTTP server''s bearer token')
            [CompletionResult]::new('--network', '--network', [CompletionResultType]::ParameterName, 'Let a stdio server reach the network (it runs confined otherwise)')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Write it to this folder''s linggen-agent.toml instead of yours')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;mcp;remove' {
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'project')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;mcp;login' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;mcp;logout' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;mcp;serve' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;mcp;help' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'Every MCP server configured for this folder, where each came from, and whether it starts here (see doc/mcp.md)')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'One server''s definition, and its tools once it is started and answers')
            [CompletionResult]::new('add', 'add', [CompletionResultType]::ParameterValue, 'Add a server to linggen-agent.toml: `linggen mcp add NAME -- COMMAND [ARGS…]`, or `linggen mcp add NAME --url URL`')
            [CompletionResult]::new('remove', 'remove', [CompletionResultType]::ParameterValue, 'Remove a server from linggen-agent.toml (yours, or the folder''s with --project)')
            [CompletionResult]::new('login', 'login', [CompletionResultType]::ParameterValue, 'Sign in to a remote (HTTP) server with OAuth in your browser; the tokens are kept owner-only in $LINGGEN_HOME/mcp-credentials.json')
            [CompletionResult]::new('logout', 'logout', [CompletionResultType]::ParameterValue, 'Forget a server''s sign-in')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Run linggen as an MCP server on stdin/stdout, for other agents and editors: a `task` tool runs a task here as `-p` does, beside linggen''s read-only tools')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'linggen;mcp;help;list' {
            break
        }
        'linggen;mcp;help;get' {
            break
        }
        'linggen;mcp;help;add' {
            break
        }
        'linggen;mcp;help;remove' {
            break
        }
        'linggen;mcp;help;login' {
            break
        }
        'linggen;mcp;help;logout' {
            break
        }
        'linggen;mcp;help;serve' {
            break
        }
        'linggen;mcp;help;help' {
            break
        }
        'linggen;runs' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print the audit trail of one run')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'linggen;runs;show' {
            [CompletionResult]::new('--full', '--full', [CompletionResultType]::ParameterName, 'Print every call''s whole arguments, output and diff, not their summaries')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;runs;help' {
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print the audit trail of one run')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'linggen;runs;help;show' {
            break
        }
        'linggen;runs;help;help' {
            break
        }
        'linggen;rewind' {
            [CompletionResult]::new('--only', '--only', [CompletionResultType]::ParameterName, 'Restore only the files (code) or only the conversation; default both')
            [CompletionResult]::new('--list', '--list', [CompletionResultType]::ParameterName, 'List the checkpoints of this folder''s newest session, one a line, ID first')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Overwrite files changed by hand since the checkpoint')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;schedule' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('add', 'add', [CompletionResultType]::ParameterValue, 'Add a schedule: `linggen schedule add "0 9 * * 1-5" "run the tests and report"`')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'This folder''s schedules: when each runs next and how its last run went')
            [CompletionResult]::new('remove', 'remove', [CompletionResultType]::ParameterValue, 'Remove a schedule (its id, or a unique prefix)')
            [CompletionResult]::new('run-now', 'run-now', [CompletionResultType]::ParameterValue, 'Run a schedule now, here, as `linggen serve` would; its next time stays')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'linggen;schedule;add' {
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'The agent that runs it (default: ling)')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The model that runs it: an id from [[models]], `local` or `cloud`')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;schedule;list' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;schedule;remove' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;schedule;run-now' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;schedule;help' {
            [CompletionResult]::new('add', 'add', [CompletionResultType]::ParameterValue, 'Add a schedule: `linggen schedule add "0 9 * * 1-5" "run the tests and report"`')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'This folder''s schedules: when each runs next and how its last run went')
            [CompletionResult]::new('remove', 'remove', [CompletionResultType]::ParameterValue, 'Remove a schedule (its id, or a unique prefix)')
            [CompletionResult]::new('run-now', 'run-now', [CompletionResultType]::ParameterValue, 'Run a schedule now, here, as `linggen serve` would; its next time stays')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'linggen;schedule;help;add' {
            break
        }
        'linggen;schedule;help;list' {
            break
        }
        'linggen;schedule;help;remove' {
            break
        }
        'linggen;schedule;help;run-now' {
            break
        }
        'linggen;schedule;help;help' {
            break
        }
        'linggen;completions' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'linggen;help' {
            [CompletionResult]::new('sessions', 'sessions', [CompletionResultType]::ParameterValue, 'List this workspace''s sessions, newest first')
            [CompletionResult]::new('models', 'models', [CompletionResultType]::ParameterValue, 'List the configured models: provider, local or cloud, context window, whether each answers right now, and which one serves calls')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Serve the web UI without a terminal: the page lists this workspace''s sessions, opens or starts one, and chats (see doc/web.md)')
            [CompletionResult]::new('trust', 'trust', [CompletionResultType]::ParameterValue, 'Show what this folder''s own files grant (permission rules, a looser mode, skills'' allowed-tools) and trust them; nothing they grant holds until then (see doc/trust.md)')
            [CompletionResult]::new('acp', 'acp', [CompletionResultType]::ParameterValue, 'Serve the Agent Client Protocol on stdin/stdout, for editors such as Zed (see doc/acp.md)')
            [CompletionResult]::new('mcp', 'mcp', [CompletionResultType]::ParameterValue, 'MCP servers: list, inspect, add and remove them; `mcp serve` offers linggen to other agents as an MCP server')
            [CompletionResult]::new('runs', 'runs', [CompletionResultType]::ParameterValue, 'The runs of this folder''s newest session with their ids; `linggen runs show ID` prints one run''s audit trail: every call, result, checkpoint and changed file, and the runs it delegated to')
            [CompletionResult]::new('rewind', 'rewind', [CompletionResultType]::ParameterValue, 'Go back to a checkpoint: the files as they were before a prompt changed them, and the conversation as it was before that prompt (see doc/auto.md#rewind)')
            [CompletionResult]::new('schedule', 'schedule', [CompletionResultType]::ParameterValue, 'Tasks that run on a schedule: `linggen serve` of this folder runs each at its time as a one-shot run (nothing asks; see doc/background.md)')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script to stdout (see completions/README.md)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'linggen;help;sessions' {
            break
        }
        'linggen;help;models' {
            break
        }
        'linggen;help;serve' {
            break
        }
        'linggen;help;trust' {
            break
        }
        'linggen;help;acp' {
            break
        }
        'linggen;help;mcp' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'Every MCP server configured for this folder, where each came from, and whether it starts here (see doc/mcp.md)')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'One server''s definition, and its tools once it is started and answers')
            [CompletionResult]::new('add', 'add', [CompletionResultType]::ParameterValue, 'Add a server to linggen-agent.toml: `linggen mcp add NAME -- COMMAND [ARGS…]`, or `linggen mcp add NAME --url URL`')
            [CompletionResult]::new('remove', 'remove', [CompletionResultType]::ParameterValue, 'Remove a server from linggen-agent.toml (yours, or the folder''s with --project)')
            [CompletionResult]::new('login', 'login', [CompletionResultType]::ParameterValue, 'Sign in to a remote (HTTP) server with OAuth in your browser; the tokens are kept owner-only in $LINGGEN_HOME/mcp-credentials.json')
            [CompletionResult]::new('logout', 'logout', [CompletionResultType]::ParameterValue, 'Forget a server''s sign-in')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Run linggen as an MCP server on stdin/stdout, for other agents and editors: a `task` tool runs a task here as `-p` does, beside linggen''s read-only tools')
            break
        }
        'linggen;help;mcp;list' {
            break
        }
        'linggen;help;mcp;get' {
            break
        }
        'linggen;help;mcp;add' {
            break
        }
        'linggen;help;mcp;remove' {
            break
        }
        'linggen;help;mcp;login' {
            break
        }
        'linggen;help;mcp;logout' {
            break
        }
        'linggen;help;mcp;serve' {
            break
        }
        'linggen;help;runs' {
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print the audit trail of one run')
            break
        }
        'linggen;help;runs;show' {
            break
        }
        'linggen;help;rewind' {
            break
        }
        'linggen;help;schedule' {
            [CompletionResult]::new('add', 'add', [CompletionResultType]::ParameterValue, 'Add a schedule: `linggen schedule add "0 9 * * 1-5" "run the tests and report"`')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'This folder''s schedules: when each runs next and how its last run went')
            [CompletionResult]::new('remove', 'remove', [CompletionResultType]::ParameterValue, 'Remove a schedule (its id, or a unique prefix)')
            [CompletionResult]::new('run-now', 'run-now', [CompletionResultType]::ParameterValue, 'Run a schedule now, here, as `linggen serve` would; its next time stays')
            break
        }
        'linggen;help;schedule;add' {
            break
        }
        'linggen;help;schedule;list' {
            break
        }
        'linggen;help;schedule;remove' {
            break
        }
        'linggen;help;schedule;run-now' {
            break
        }
        'linggen;help;completions' {
            break
        }
        'linggen;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
