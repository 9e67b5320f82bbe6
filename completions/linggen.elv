
use builtin;
use str;

set edit:completion:arg-completer[linggen] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'linggen'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'linggen'= {
            cand -p 'Run one task and print the answer (the task from PROMPT, else from stdin)'
            cand --print 'Run one task and print the answer (the task from PROMPT, else from stdin)'
            cand --model 'Model id from [[models]] (overrides LINGGEN_MODEL and [agent] default_model)'
            cand --agent 'Agent to talk to (ling, coder, or one from agents/*.md); default ling'
            cand --root 'Workspace root (default: nearest ancestor with .git, else the current directory)'
            cand --max-iters 'Upper bound on model calls in one task (Claude Code''s `--max-turns`)'
            cand --max-turns 'Upper bound on model calls in one task (Claude Code''s `--max-turns`)'
            cand --permission-mode 'default | accept-edits | plan | bypass (Claude Code''s acceptEdits and bypassPermissions too)'
            cand --mode 'chat (tools, you in the loop) | auto (a JSON action loop until the task is finalized) | talk (no tools); default: the agent''s own mode, else chat'
            cand --allowed-tools 'Rules that run without asking, e.g. "Bash(cargo test*),Write(src/**)"'
            cand --allowedTools 'Rules that run without asking, e.g. "Bash(cargo test*),Write(src/**)"'
            cand --disallowed-tools 'Rules that are always refused, e.g. "Bash(git push*)"'
            cand --disallowedTools 'Rules that are always refused, e.g. "Bash(git push*)"'
            cand --append-system-prompt 'Text added at the end of the system prompt of this session''s runs'
            cand --system-prompt 'Text that replaces the agent''s own instructions for this session''s runs; the workspace facts, tool rules and project files (AGENTS.md, CLAUDE.md) stay'
            cand -r 'Resume a session by id (or unique prefix)'
            cand --resume 'Resume a session by id (or unique prefix)'
            cand --input-format '-p only: `stream-json` reads the turns from stdin, one JSON message a line as Claude Code''s SDK writes them, each answered in the same session (needs `--output-format stream-json`)'
            cand --output-format 'How -p prints: text (the answer), json (one object), stream-json (events, one per line)'
            cand --stream-shape 'With `--output-format stream-json`: `claude` prints Claude Code''s message shapes (`system`, `assistant`, `user`, `result`) for tools that parse them'
            cand --theme 'Colour theme of the interactive shell (dark, light, solarized, or one in $LINGGEN_HOME/themes)'
            cand --tools 'The only tools offered, as Claude Code''s flag: "Bash,Read,Edit", "" for none, `default` for all (MCP tools by name or pattern: mcp__github__*)'
            cand --add-dir 'More folders the file tools may read and write and the sandbox opens (by absolute path), as Claude Code''s flag: `--add-dir ../shared ../docs`'
            cand --image '-p only: an image to send with the task (PNG, JPEG, GIF or WebP; repeatable), to a model that takes images'
            cand --dangerously-skip-permissions 'Every call runs without asking: `--permission-mode bypass`, as Claude Code''s flag. The sandbox and the rest of the floor stay (doc/security.md)'
            cand -c 'Continue this workspace''s newest session'
            cand --continue 'Continue this workspace''s newest session'
            cand --attach 'Attach to this workspace''s running `linggen serve`: its current session (or the one --continue / --resume names), shared with its page'
            cand --worktree '-p only: run the task in a new git worktree on branch job/<id>, beside the repository; the result is committed there for you to merge'
            cand -q 'No progress on stderr (errors are still shown)'
            cand --quiet 'No progress on stderr (errors are still shown)'
            cand --verbose 'Progress on stderr, each tool call with its result: linggen''s default, accepted for scripts written for Claude Code'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand sessions 'List this workspace''s sessions, newest first'
            cand models 'List the configured models: provider, local or cloud, context window, whether each answers right now, and which one serves calls'
            cand serve 'Serve the web UI without a terminal: the page lists this workspace''s sessions, opens or starts one, and chats (see doc/web.md)'
            cand trust 'Show what this folder''s own files grant (permission rules, a looser mode, skills'' allowed-tools) and trust them; nothing they grant holds until then (see doc/trust.md)'
            cand acp 'Serve the Agent Client Protocol on stdin/stdout, for editors such as Zed (see doc/acp.md)'
            cand mcp 'MCP servers: list, inspect, add and remove them; `mcp serve` offers linggen to other agents as an MCP server'
            cand runs 'The runs of this folder''s newest session with their ids; `linggen runs show ID` prints one run''s audit trail: every call, result, checkpoint and changed file, and the runs it delegated to'
            cand rewind 'Go back to a checkpoint: the files as they were before a prompt changed them, and the conversation as it was before that prompt (see doc/auto.md#rewind)'
            cand schedule 'Tasks that run on a schedule: `linggen serve` of this folder runs each at its time as a one-shot run (nothing asks; see doc/background.md)'
            cand completions 'Print a shell completion script to stdout (see completions/README.md)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'linggen;sessions'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;models'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;serve'= {
            cand --port 'Port on 127.0.0.1 (default: a random free one)'
            cand --lan 'Listen on every interface, so other machines can connect (anyone with the URL can drive the agent)'
            cand --print-tokens 'Also print the long-lived tokens for scripts (full and read-only); they stay valid until the server stops'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;trust'= {
            cand --yes 'Trust every grant without asking (for scripts)'
            cand --revoke 'Forget this folder: none of its grants hold any more'
            cand --list 'Only print the grants and which are trusted'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;acp'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;mcp'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand list 'Every MCP server configured for this folder, where each came from, and whether it starts here (see doc/mcp.md)'
            cand get 'One server''s definition, and its tools once it is started and answers'
            cand add 'Add a server to linggen-agent.toml: `linggen mcp add NAME -- COMMAND [ARGS…]`, or `linggen mcp add NAME --url URL`'
            cand remove 'Remove a server from linggen-agent.toml (yours, or the folder''s with --project)'
            cand login 'Sign in to a remote (HTTP) server with OAuth in your browser; the tokens are kept owner-only in $LINGGEN_HOME/mcp-credentials.json'
            cand logout 'Forget a server''s sign-in'
            cand serve 'Run linggen as an MCP server on stdin/stdout, for other agents and editors: a `task` tool runs a task here as `-p` does, beside linggen''s read-only tools'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'linggen;mcp;list'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;mcp;get'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;mcp;add'= {
            cand --url 'A streamable HTTP server''s address instead of a command'
            cand -e '`KEY=VALUE` for the server''s environment (repeat it)'
            cand --env '`KEY=VALUE` for the server''s environment (repeat it)'
            cand --header '`Name: value` header for an HTTP server (repeat it)'
            cand --bearer-token-env-var 'The environment variable holding an HTTP server''s bearer token'
            cand --network 'Let a stdio server reach the network (it runs confined otherwise)'
            cand --project 'Write it to this folder''s linggen-agent.toml instead of yours'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;mcp;remove'= {
            cand --project 'project'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;mcp;login'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;mcp;logout'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;mcp;serve'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;mcp;help'= {
            cand list 'Every MCP server configured for this folder, where each came from, and whether it starts here (see doc/mcp.md)'
            cand get 'One server''s definition, and its tools once it is started and answers'
            cand add 'Add a server to linggen-agent.toml: `linggen mcp add NAME -- COMMAND [ARGS…]`, or `linggen mcp add NAME --url URL`'
            cand remove 'Remove a server from linggen-agent.toml (yours, or the folder''s with --project)'
            cand login 'Sign in to a remote (HTTP) server with OAuth in your browser; the tokens are kept owner-only in $LINGGEN_HOME/mcp-credentials.json'
            cand logout 'Forget a server''s sign-in'
            cand serve 'Run linggen as an MCP server on stdin/stdout, for other agents and editors: a `task` tool runs a task here as `-p` does, beside linggen''s read-only tools'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'linggen;mcp;help;list'= {
        }
        &'linggen;mcp;help;get'= {
        }
        &'linggen;mcp;help;add'= {
        }
        &'linggen;mcp;help;remove'= {
        }
        &'linggen;mcp;help;login'= {
        }
        &'linggen;mcp;help;logout'= {
        }
        &'linggen;mcp;help;serve'= {
        }
        &'linggen;mcp;help;help'= {
        }
        &'linggen;runs'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand show 'Print the audit trail of one run'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'linggen;runs;show'= {
            cand --full 'Print every call''s whole arguments, output and diff, not their summaries'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;runs;help'= {
            cand show 'Print the audit trail of one run'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'linggen;runs;help;show'= {
        }
        &'linggen;runs;help;help'= {
        }
        &'linggen;rewind'= {
            cand --only 'Restore only the files (code) or only the conversation; default both'
            cand --list 'List the checkpoints of this folder''s newest session, one a line, ID first'
            cand --force 'Overwrite files changed by hand since the checkpoint'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;schedule'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand add 'Add a schedule: `linggen schedule add "0 9 * * 1-5" "run the tests and report"`'
            cand list 'This folder''s schedules: when each runs next and how its last run went'
            cand remove 'Remove a schedule (its id, or a unique prefix)'
            cand run-now 'Run a schedule now, here, as `linggen serve` would; its next time stays'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'linggen;schedule;add'= {
            cand --agent 'The agent that runs it (default: ling)'
            cand --model 'The model that runs it: an id from [[models]], `local` or `cloud`'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;schedule;list'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;schedule;remove'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;schedule;run-now'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;schedule;help'= {
            cand add 'Add a schedule: `linggen schedule add "0 9 * * 1-5" "run the tests and report"`'
            cand list 'This folder''s schedules: when each runs next and how its last run went'
            cand remove 'Remove a schedule (its id, or a unique prefix)'
            cand run-now 'Run a schedule now, here, as `linggen serve` would; its next time stays'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'linggen;schedule;help;add'= {
        }
        &'linggen;schedule;help;list'= {
        }
        &'linggen;schedule;help;remove'= {
        }
        &'linggen;schedule;help;run-now'= {
        }
        &'linggen;schedule;help;help'= {
        }
        &'linggen;completions'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'linggen;help'= {
            cand sessions 'List this workspace''s sessions, newest first'
            cand models 'List the configured models: provider, local or cloud, context window, whether each answers right now, and which one serves calls'
            cand serve 'Serve the web UI without a terminal: the page lists this workspace''s sessions, opens or starts one, and chats (see doc/web.md)'
            cand trust 'Show what this folder''s own files grant (permission rules, a looser mode, skills'' allowed-tools) and trust them; nothing they grant holds until then (see doc/trust.md)'
            cand acp 'Serve the Agent Client Protocol on stdin/stdout, for editors such as Zed (see doc/acp.md)'
            cand mcp 'MCP servers: list, inspect, add and remove them; `mcp serve` offers linggen to other agents as an MCP server'
            cand runs 'The runs of this folder''s newest session with their ids; `linggen runs show ID` prints one run''s audit trail: every call, result, checkpoint and changed file, and the runs it delegated to'
            cand rewind 'Go back to a checkpoint: the files as they were before a prompt changed them, and the conversation as it was before that prompt (see doc/auto.md#rewind)'
            cand schedule 'Tasks that run on a schedule: `linggen serve` of this folder runs each at its time as a one-shot run (nothing asks; see doc/background.md)'
            cand completions 'Print a shell completion script to stdout (see completions/README.md)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'linggen;help;sessions'= {
        }
        &'linggen;help;models'= {
        }
        &'linggen;help;serve'= {
        }
        &'linggen;help;trust'= {
        }
        &'linggen;help;acp'= {
        }
        &'linggen;help;mcp'= {
            cand list 'Every MCP server configured for this folder, where each came from, and whether it starts here (see doc/mcp.md)'
            cand get 'One server''s definition, and its tools once it is started and answers'
            cand add 'Add a server to linggen-agent.toml: `linggen mcp add NAME -- COMMAND [ARGS…]`, or `linggen mcp add NAME --url URL`'
            cand remove 'Remove a server from linggen-agent.toml (yours, or the folder''s with --project)'
            cand login 'Sign in to a remote (HTTP) server with OAuth in your browser; the tokens are kept owner-only in $LINGGEN_HOME/mcp-credentials.json'
            cand logout 'Forget a server''s sign-in'
            cand serve 'Run linggen as an MCP server on stdin/stdout, for other agents and editors: a `task` tool runs a task here as `-p` does, beside linggen''s read-only tools'
        }
        &'linggen;help;mcp;list'= {
        }
        &'linggen;help;mcp;get'= {
        }
        &'linggen;help;mcp;add'= {
        }
        &'linggen;help;mcp;remove'= {
        }
        &'linggen;help;mcp;login'= {
        }
        &'linggen;help;mcp;logout'= {
        }
        &'linggen;help;mcp;serve'= {
        }
        &'linggen;help;runs'= {
            cand show 'Print the audit trail of one run'
        }
        &'linggen;help;runs;show'= {
        }
        &'linggen;help;rewind'= {
        }
        &'linggen;help;schedule'= {
            cand add 'Add a schedule: `linggen schedule add "0 9 * * 1-5" "run the tests and report"`'
            cand list 'This folder''s schedules: when each runs next and how its last run went'
            cand remove 'Remove a schedule (its id, or a unique prefix)'
            cand run-now 'Run a schedule now, here, as `linggen serve` would; its next time stays'
        }
        &'linggen;help;schedule;add'= {
        }
        &'linggen;help;schedule;list'= {
        }
        &'linggen;help;schedule;remove'= {
        }
        &'linggen;help;schedule;run-now'= {
        }
        &'linggen;help;completions'= {
        }
        &'linggen;help;help'= {
        }
    ]
    $completions[$command]
}
