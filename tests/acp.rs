//! `linggen acp` driven by a scripted ACP client: JSON-RPC lines written to the real
//! binary's stdin and read from its stdout, built here from the protocol's text (not from
//! linggen's code), against a scripted model. The flow an editor runs: initialize, a new
//! session, a prompt that reads a file and edits it after asking, the updates in order;
//! cancelling mid-stream; loading a stored session; modes; bad requests.

// Test code may unwrap: a failure is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::pty::workspace;
use support::{Reply, Step, Workspace, texts};

/// Long enough for a debug build on a busy machine; a hang fails instead of blocking.
const LIMIT: Duration = Duration::from_secs(60);

/// An editor's end of the connection.
struct Editor {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    next_id: i64,
    /// Every notification and request from linggen, in the order they came.
    seen: Vec<Value>,
    /// How to answer `session/request_permission`: the option id to choose (`None`:
    /// cancelled).
    choose: Option<&'static str>,
    /// Offered at `initialize` when set: the editor's unsaved buffers by absolute path,
    /// answered to `fs/read_text_file`; `fs/write_text_file` calls are kept in `written`.
    buffers: Option<std::collections::HashMap<String, String>>,
    written: Vec<(String, String)>,
}

impl Editor {
    fn start(ws: &Workspace) -> Editor {
        let mut child = ws
            .cmd()
            .arg("acp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn linggen acp");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("linggen wrote a line that is not JSON ({e}): {line}")
                });
                if tx.send(message).is_err() {
                    return;
                }
            }
        });
        Editor {
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 1,
            seen: Vec::new(),
            choose: Some("allow_once"),
            buffers: None,
            written: Vec::new(),
        }
    }

    fn write(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.write(&line.to_string());
        id
    }

    fn notify(&mut self, method: &str, params: Value) {
        let line = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.write(&line.to_string());
    }

    /// The next message from linggen; requests for permission are answered as `choose`
    /// says and kept in `seen` like notifications.
    fn next(&mut self) -> Value {
        let message = match self.lines.recv_timeout(LIMIT) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => panic!("no message from linggen within {LIMIT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("linggen closed stdout"),
        };
        if message["method"] == "session/request_permission" {
            let outcome = match self.choose {
                Some(option) => json!({"outcome": "selected", "optionId": option}),
                None => json!({"outcome": "cancelled"}),
            };
            let answer =
                json!({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}});
            self.write(&answer.to_string());
        }
        match message["method"].as_str() {
            Some("fs/read_text_file") => self.read_buffer(&message),
            Some("fs/write_text_file") => {
                let params = &message["params"];
                let path = params["path"].as_str().unwrap().to_string();
                let content = params["content"].as_str().unwrap().to_string();
                self.written.push((path, content));
                let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {}});
                self.write(&answer.to_string());
            }
            _ => {}
        }
        if message.get("method").is_some() {
            self.seen.push(message.clone());
        }
        message
    }

    /// Answers `fs/read_text_file` from `buffers`; a file not open is an error, as an editor
    /// that cannot read it would answer.
    fn read_buffer(&mut self, message: &Value) {
        let path = message["params"]["path"].as_str().unwrap();
        let open = self.buffers.as_ref().and_then(|b| b.get(path));
        let answer = match open {
            Some(text) => {
                json!({"jsonrpc": "2.0", "id": message["id"], "result": {"content": text}})
            }
            None => {
                json!({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32002, "message": "not open"}})
            }
        };
        self.write(&answer.to_string());
    }

    /// Reads until the response to `id`, which it returns.
    fn response(&mut self, id: i64) -> Value {
        loop {
            let message = self.next();
            if message.get("method").is_none() && message["id"] == id {
                return message;
            }
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        self.response(id)
    }

    fn initialize(&mut self) -> Value {
        let fs = self.buffers.is_some();
        let reply = self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": fs, "writeTextFile": fs}, "terminal": false}}),
        );
        reply["result"].clone()
    }

    fn new_session(&mut self, ws: &Workspace) -> String {
        let reply = self.call("session/new", json!({"cwd": ws.root(), "mcpServers": []}));
        reply["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id: {reply}"))
            .to_string()
    }

    fn prompt(&mut self, session: &str, text: &str) -> Value {
        self.call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
    }

    /// The `session/update`s seen so far, their `update` objects.
    fn updates(&self) -> Vec<Value> {
        self.seen
            .iter()
            .filter(|m| m["method"] == "session/update")
            .map(|m| m["params"]["update"].clone())
            .collect()
    }

    /// Closes stdin, as an editor does, and waits for linggen to exit.
    fn close(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let deadline = Instant::now() + LIMIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "linggen acp did not exit after stdin closed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Editor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of the agent's message chunks, joined.
fn answer_text(updates: &[Value]) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap_or_default())
        .collect()
}

/// The statuses one tool call went through, in order (`pending` when a message leaves it
/// out, as the protocol's default).
fn statuses(updates: &[Value], call_id: &str) -> Vec<String> {
    updates
        .iter()
        .filter(|u| u["toolCallId"] == call_id)
        .filter(|u| u["sessionUpdate"] == "tool_call" || u.get("status").is_some())
        .map(|u| u["status"].as_str().unwrap_or("pending").to_string())
        .collect()
}

fn tool_call_ids(updates: &[Value]) -> Vec<String> {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call")
        .map(|u| u["toolCallId"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_editor_reads_asks_edits_and_gets_the_answer_with_updates_in_order() {
    let (ws, server) = workspace(vec![
        Step::from(Reply::tool("Read", json!({"file_path": "notes.txt"}))),
        Reply::tool(
            "Edit",
            json!({"file_path": "notes.txt", "old_string": "old line", "new_string": "new line"}),
        )
        .into(),
        Reply::text("Changed the line.").into(),
    ]);
    ws.write("notes.txt", "first\nold line\nlast\n");
    let mut editor = Editor::start(&ws);

    let init = editor.initialize();
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(init["agentInfo"]["name"], "linggen", "{init}");
    assert_eq!(
        init["agentInfo"]["version"],
        env!("CARGO_PKG_VERSION"),
        "{init}"
    );
    assert_eq!(init["agentCapabilities"]["loadSession"], true, "{init}");
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["embeddedContext"],
        true
    );

    let session = editor.new_session(&ws);
    let reply = editor.prompt(&session, "change the old line in notes.txt");
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    assert_eq!(ws.read("notes.txt"), "first\nnew line\nlast\n");

    // The skills a prompt can start with `/` were offered once the session existed.
    let updates = editor.updates();
    let commands = &updates[0];
    assert_eq!(
        commands["sessionUpdate"], "available_commands_update",
        "{commands}"
    );
    assert!(
        commands["availableCommands"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "commit-message"),
        "{commands}"
    );

    let calls = tool_call_ids(&updates);
    assert_eq!(calls.len(), 2, "{updates:#?}");
    let (read, edit) = (&calls[0], &calls[1]);
    let read_call = updates.iter().find(|u| u["toolCallId"] == *read).unwrap();
    assert_eq!(read_call["kind"], "read", "{read_call}");
    assert!(
        read_call["locations"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("notes.txt")
    );
    assert_eq!(
        statuses(&updates, read),
        ["pending", "in_progress", "completed"]
    );

    // The edit asked first: the question names the call, offers linggen's four choices,
    // and came between the call's announcement and its run.
    let asked = editor
        .seen
        .iter()
        .position(|m| m["method"] == "session/request_permission")
        .expect("the edit was put to the editor");
    let question = &editor.seen[asked]["params"];
    assert_eq!(question["sessionId"], session.as_str());
    assert_eq!(
        question["toolCall"]["toolCallId"],
        edit.as_str(),
        "{question}"
    );
    let options: Vec<&str> = question["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(
        options,
        ["allow_once", "allow_session", "allow_project", "deny"]
    );
    let kinds: Vec<&str> = question["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["allow_once", "allow_always", "allow_always", "reject_once"]
    );
    let announced = editor
        .seen
        .iter()
        .position(|m| m["params"]["update"]["toolCallId"] == *edit)
        .unwrap();
    assert!(
        announced < asked,
        "the question came before the call was announced"
    );
    assert_eq!(
        statuses(&updates, edit),
        ["pending", "in_progress", "completed"]
    );

    // The finished edit carries the diff with both texts.
    let done = updates
        .iter()
        .find(|u| u["toolCallId"] == *edit && u["status"] == "completed")
        .unwrap();
    let diff = &done["content"][0];
    assert_eq!(diff["type"], "diff", "{done}");
    assert_eq!(diff["oldText"], "first\nold line\nlast\n");
    assert_eq!(diff["newText"], "first\nnew line\nlast\n");
    assert!(diff["path"].as_str().unwrap().ends_with("notes.txt"));

    // The answer streamed after the tool calls.
    let last_call = updates
        .iter()
        .rposition(|u| u["toolCallId"].is_string())
        .unwrap();
    assert_eq!(answer_text(&updates[last_call..]), "Changed the line.");
    assert_eq!(server.chat_requests().len(), 3);
    assert!(editor.close().success());
}

#[test]
fn a_denied_edit_is_not_made_and_the_model_hears_why() {
    let (ws, server) = workspace(vec![
        Step::from(Reply::tool(
            "Write",
            json!({"file_path": "new.txt", "content": "hello\n"}),
        )),
        Reply::text("I did not write it.").into(),
    ]);
    let mut editor = Editor::start(&ws);
    editor.initialize();
    let session = editor.new_session(&ws);
    editor.choose = Some("deny");
    let reply = editor.prompt(&session, "write new.txt");
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    assert!(!ws.root().join("new.txt").exists());
    let updates = editor.updates();
    let call = &tool_call_ids(&updates)[0];
    assert_eq!(statuses(&updates, call).last().unwrap(), "failed");
    let result = texts(&server.last_chat_request().unwrap(), "tool").join("\n");
    assert!(result.contains("said no in the editor"), "{result}");
}

#[test]
fn cancel_stops_a_streaming_answer() {
    let words: String = (0..400).map(|i| format!("word{i} ")).collect();
    let (ws, _server) = workspace(vec![Step::from(
        Reply::text(words).chunk_delay(Duration::from_millis(25)),
    )]);
    let mut editor = Editor::start(&ws);
    editor.initialize();
    let session = editor.new_session(&ws);
    let id = editor.send(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "talk for a while"}]}),
    );
    // Wait for the answer to be streaming, then cancel it.
    loop {
        let message = editor.next();
        if message["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
            break;
        }
    }
    let cancelled_at = Instant::now();
    editor.notify("session/cancel", json!({"sessionId": session}));
    let reply = editor.response(id);
    assert_eq!(reply["result"]["stopReason"], "cancelled", "{reply}");
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(5),
        "the turn took {:?} to stop",
        cancelled_at.elapsed()
    );
    let streamed = answer_text(&editor.updates());
    assert!(
        !streamed.contains("word399"),
        "the whole answer was streamed"
    );
    // The connection goes on: the same session answers the next prompt's errors and all.
    let next = editor.call(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "plan"}),
    );
    assert!(next.get("result").is_some(), "{next}");
}

#[test]
fn a_stored_session_is_loaded_and_replayed_then_continued() {
    let (ws, server) = workspace(vec![
        Step::from(Reply::tool("Read", json!({"file_path": "a.txt"}))),
        Reply::text("It says alpha.").into(),
        Reply::text("Still alpha.").into(),
    ]);
    ws.write("a.txt", "alpha\n");
    let mut first = Editor::start(&ws);
    first.initialize();
    let session = first.new_session(&ws);
    let reply = first.prompt(&session, "what does a.txt say?");
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    assert!(first.close().success());

    let mut second = Editor::start(&ws);
    second.initialize();
    let id = second.send(
        "session/load",
        json!({"sessionId": session, "cwd": ws.root(), "mcpServers": []}),
    );
    let loaded = second.response(id);
    assert!(loaded.get("result").is_some(), "{loaded}");
    // The history came before the response, in the order it happened.
    let replayed = second.updates();
    let kinds: Vec<&str> = replayed
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap())
        .filter(|k| *k != "available_commands_update")
        .collect();
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk"
        ],
        "{replayed:#?}"
    );
    assert_eq!(replayed[0]["content"]["text"], "what does a.txt say?");
    assert_eq!(replayed[1]["title"], "Read a.txt");
    assert!(
        replayed[2]["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("alpha")
    );
    assert_eq!(answer_text(&replayed), "It says alpha.");

    // It goes on where it was: the model sees the earlier turn.
    let reply = second.prompt(&session, "and now?");
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let users = texts(&server.last_chat_request().unwrap(), "user");
    assert!(
        users.iter().any(|u| u.contains("what does a.txt say?")),
        "{users:?}"
    );
    assert!(second.close().success());
}

#[test]
fn modes_are_offered_and_switched_and_refusals_are_errors() {
    let (ws, server) = workspace(vec![Step::from(Reply::text("ok"))]);
    let mut editor = Editor::start(&ws);
    editor.initialize();
    let reply = editor.call("session/new", json!({"cwd": ws.root(), "mcpServers": []}));
    let modes = &reply["result"]["modes"];
    assert_eq!(modes["currentModeId"], "default", "{reply}");
    let ids: Vec<&str> = modes["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["default", "accept-edits", "plan", "bypass"]);
    let session = reply["result"]["sessionId"].as_str().unwrap().to_string();

    let set = editor.call(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "plan"}),
    );
    assert!(set.get("result").is_some(), "{set}");
    // The session says so, as it tells every window (before or after the answer).
    let told = |editor: &Editor| {
        editor
            .updates()
            .iter()
            .any(|u| u["sessionUpdate"] == "current_mode_update" && u["currentModeId"] == "plan")
    };
    while !told(&editor) {
        editor.next();
    }
    let bad = editor.call(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "nonsense"}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("accept-edits")
    );

    // The model and the turn mode are config options, set as `/model` and `/mode` set them.
    let options = reply["result"]["configOptions"].as_array().unwrap();
    let model = options.iter().find(|o| o["id"] == "model").unwrap();
    assert_eq!(model["category"], "model", "{model}");
    assert_eq!(model["currentValue"], "test", "{model}");
    let turn = options.iter().find(|o| o["id"] == "turn_mode").unwrap();
    assert_eq!(turn["currentValue"], "chat", "{turn}");
    let set = editor.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "turn_mode", "value": "talk"}),
    );
    let now = set["result"]["configOptions"]
        .as_array()
        .unwrap_or_else(|| panic!("{set}"));
    let turn = now.iter().find(|o| o["id"] == "turn_mode").unwrap();
    assert_eq!(turn["currentValue"], "talk", "{set}");
    let unknown = editor.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "model", "value": "gpt-99"}),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("test"),
        "{unknown}"
    );
    // A talk turn offers the model no tools: the setting took, not only its label.
    let reply = editor.prompt(&session, "hello");
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let request = server.last_chat_request().unwrap();
    let tools = request
        .get("tools")
        .and_then(|t| t.as_array())
        .map_or(0, Vec::len);
    assert_eq!(tools, 0, "{request}");
}

#[test]
fn bad_requests_get_json_rpc_errors_and_the_connection_goes_on() {
    let (ws, _server) = workspace(vec![Step::from(Reply::text("still here"))]);
    let mut editor = Editor::start(&ws);
    editor.write("{not json");
    let parse_error = editor.next();
    assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");
    assert_eq!(parse_error["id"], Value::Null);

    let unknown = editor.call("session/teleport", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let bad_params = editor.call("initialize", json!({"protocolVersion": "one"}));
    assert_eq!(bad_params["error"]["code"], -32602, "{bad_params}");
    let no_session = editor.call(
        "session/prompt",
        json!({"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert!(no_session.get("error").is_some(), "{no_session}");
    let relative = editor.call(
        "session/new",
        json!({"cwd": "relative/dir", "mcpServers": []}),
    );
    assert_eq!(relative["error"]["code"], -32602, "{relative}");
    assert!(
        relative["error"]["message"]
            .as_str()
            .unwrap()
            .contains("absolute")
    );
    let missing = editor.call(
        "session/new",
        json!({"cwd": "/no/such/folder", "mcpServers": []}),
    );
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    let why = missing["error"]["message"].as_str().unwrap();
    assert!(
        why.contains("`cwd` /no/such/folder is not a folder"),
        "{why}"
    );
    let auth = editor.call("authenticate", json!({"methodId": "key"}));
    assert!(auth.get("error").is_some(), "{auth}");

    // After all that, the whole flow still works.
    editor.initialize();
    let session = editor.new_session(&ws);
    let reply = editor.prompt(&session, "are you there?");
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    assert_eq!(answer_text(&editor.updates()), "still here");
    assert!(editor.close().success());
}

#[test]
fn an_embedded_buffer_and_a_linked_file_reach_the_model() {
    let (ws, server) = workspace(vec![Step::from(Reply::text("Seen both."))]);
    ws.write("src/lib.rs", "pub fn on_disk() {}\n");
    let mut editor = Editor::start(&ws);
    editor.initialize();
    let session = editor.new_session(&ws);
    let uri = |rel: &str| format!("file://{}", ws.root().join(rel).display());
    let reply = editor.call(
        "session/prompt",
        json!({"sessionId": session, "prompt": [
            {"type": "text", "text": "compare these"},
            {"type": "resource_link", "uri": uri("src/lib.rs"), "name": "lib.rs"},
            {"type": "resource", "resource": {"uri": uri("src/unsaved.rs"), "text": "fn only_in_the_editor() {}"}},
        ]}),
    );
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let sent = texts(&server.last_chat_request().unwrap(), "user").join("\n");
    assert!(sent.contains("compare these"), "{sent}");
    assert!(sent.contains("pub fn on_disk() {}"), "{sent}");
    assert!(sent.contains("src/unsaved.rs"), "{sent}");
    assert!(sent.contains("fn only_in_the_editor() {}"), "{sent}");
}

#[test]
fn the_editors_mcp_server_starts_with_the_session_and_its_tool_is_asked_for() {
    let Some(entry) = support::mcp_everything() else {
        return;
    };
    let (ws, server) = workspace(vec![
        Step::from(Reply::tool(
            "mcp__everything__echo",
            json!({"message": "from the editor's server"}),
        )),
        Reply::text("It echoed.").into(),
    ]);
    let mut editor = Editor::start(&ws);
    let init = editor.initialize();
    assert_eq!(
        init["agentCapabilities"]["mcpCapabilities"]["http"], true,
        "{init}"
    );
    let reply = editor.call(
        "session/new",
        json!({"cwd": ws.root(), "mcpServers": [
            {"name": "everything", "command": "node", "args": [entry], "env": []}
        ]}),
    );
    let session = reply["result"]["sessionId"].as_str().unwrap().to_string();
    let reply = editor.prompt(&session, "echo something");
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let asked = editor
        .seen
        .iter()
        .find(|m| m["method"] == "session/request_permission")
        .expect("the server's tool was put to the editor");
    assert!(
        asked["params"]["toolCall"]["title"]
            .as_str()
            .unwrap()
            .contains("mcp__everything__echo"),
        "{asked}"
    );
    let result = texts(&server.last_chat_request().unwrap(), "tool").join("\n");
    assert!(
        result.contains("Echo: from the editor's server"),
        "{result}"
    );

    let bad = editor.call(
        "session/new",
        json!({"cwd": ws.root(), "mcpServers": [{"name": "no spaces", "command": "x", "args": [], "env": []}]}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no spaces"),
        "{bad}"
    );
}

#[test]
fn an_editor_that_offers_its_buffers_is_read_and_written_through() {
    let (ws, server) = workspace(vec![
        Step::from(Reply::tool("Read", json!({"file_path": "notes.txt"}))),
        Reply::tool(
            "Edit",
            json!({"file_path": "notes.txt", "old_string": "unsaved line", "new_string": "edited line"}),
        )
        .into(),
        Reply::tool("Read", json!({"file_path": "closed.txt"})).into(),
        Reply::text("Done.").into(),
    ]);
    ws.write("notes.txt", "saved line\n");
    ws.write("closed.txt", "on disk only\n");
    let notes = ws.root().join("notes.txt").display().to_string();
    let mut editor = Editor::start(&ws);
    editor.buffers = Some([(notes.clone(), "unsaved line\n".to_string())].into());
    editor.initialize();
    let session = editor.new_session(&ws);
    let reply = editor.prompt(&session, "edit the unsaved line");
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");

    // The model read the editor's buffer, not the disk.
    let results = texts(&server.chat_requests()[1], "tool").join("\n");
    assert!(results.contains("unsaved line"), "{results}");
    // The edit went to the editor, applied to the buffer's text (on the disk's text its
    // old_string is not there at all); the disk is the editor's to save.
    assert_eq!(editor.written, [(notes, "edited line\n".to_string())]);
    assert_eq!(ws.read("notes.txt"), "saved line\n");
    // A file the editor does not hold is read from disk.
    let last = texts(&server.last_chat_request().unwrap(), "tool").join("\n");
    assert!(last.contains("on disk only"), "{last}");
    // The approval came first, as for any write.
    let asked = editor
        .seen
        .iter()
        .position(|m| m["method"] == "session/request_permission");
    let wrote = editor
        .seen
        .iter()
        .position(|m| m["method"] == "fs/write_text_file");
    assert!(asked.unwrap() < wrote.unwrap());
}

#[test]
fn a_denied_write_never_reaches_the_editor() {
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool(
            "Write",
            json!({"file_path": "x.txt", "content": "hi\n"}),
        )),
        Reply::text("Not written.").into(),
    ]);
    let mut editor = Editor::start(&ws);
    editor.buffers = Some(Default::default());
    editor.initialize();
    let session = editor.new_session(&ws);
    editor.choose = Some("deny");
    let reply = editor.prompt(&session, "write x.txt");
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    assert!(editor.written.is_empty(), "{:?}", editor.written);
    assert!(!ws.root().join("x.txt").exists());
    // And outside the folder nothing is asked for, read or written through the editor.
    assert!(!editor.seen.iter().any(|m| {
        m["method"] == "fs/read_text_file"
            && !m["params"]["path"]
                .as_str()
                .unwrap()
                .starts_with(&ws.root().display().to_string())
    }));
}

#[test]
fn share_opens_the_editors_session_to_a_browser_that_can_drive_it() {
    use support::web_client::request;
    let (ws, server) = workspace(vec![
        Step::from(Reply::text("First answer.")),
        Reply::text("Answer to the page, which takes a while to stream.")
            .chunk_delay(Duration::from_millis(150))
            .into(),
        Reply::text("The editor's second answer.").into(),
    ]);
    let mut editor = Editor::start(&ws);
    editor.initialize();
    let session = editor.new_session(&ws);
    let reply = editor.prompt(&session, "the editor's question");
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");

    let before = editor.updates().len();
    let reply = editor.prompt(&session, "/share");
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let told = answer_text(&editor.updates()[before..]);
    let link = told
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no link in: {told}"));
    assert_eq!(
        server.chat_requests().len(),
        1,
        "/share is not a message for the model"
    );

    // The page trades the link's ticket for its credential, as a browser tab does.
    let (origin, ticket) = link.split_once("/?ticket=").unwrap();
    let addr: std::net::SocketAddr = origin.trim_start_matches("http://").parse().unwrap();
    let body = json!({ "ticket": ticket }).to_string();
    let traded = request(
        addr,
        "POST",
        "/api/ticket",
        &[("Origin", origin), ("Content-Type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(traded.status, 200, "{}", traded.text());
    let bearer = format!("Bearer {}", traded.json()["credential"].as_str().unwrap());
    let shown = request(
        addr,
        "GET",
        "/api/session",
        &[("Authorization", &bearer)],
        b"",
    );
    assert_eq!(shown.status, 200, "{}", shown.text());
    let state = shown.text();
    assert!(state.contains(&session), "{state}");
    assert!(state.contains("the editor's question"), "{state}");
    assert!(state.contains("First answer."), "{state}");

    // A message from the page runs in the same session, and the editor sees the answer.
    let posted = request(
        addr,
        "POST",
        "/api/messages",
        &[
            ("Authorization", &bearer),
            ("Origin", origin),
            ("Content-Type", "application/json"),
        ],
        json!({ "content": "from the browser" })
            .to_string()
            .as_bytes(),
    );
    assert_eq!(posted.status, 202, "{}", posted.text());
    // The editor asks while the page's turn streams: its prompt is answered by its own
    // turn, not by the end of the page's.
    while !answer_text(&editor.updates()).contains("Answer to the page") {
        editor.next();
    }
    let reply = editor.prompt(&session, "the editor's second question");
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let answers = answer_text(&editor.updates());
    assert!(
        answers.contains("which takes a while to stream."),
        "{answers}"
    );
    assert!(
        answers.ends_with("The editor's second answer."),
        "{answers}"
    );
    let users = texts(&server.last_chat_request().unwrap(), "user");
    assert!(
        users.iter().any(|u| u.contains("the editor's question")),
        "{users:?}"
    );
    assert!(
        users.iter().any(|u| u.contains("from the browser")),
        "{users:?}"
    );

    let stopped = editor.prompt(&session, "/share stop");
    assert_eq!(stopped["result"]["stopReason"], "end_turn", "{stopped}");
    assert!(answer_text(&editor.updates()).contains("Stopped sharing"));
    assert!(editor.close().success());
}

#[test]
fn a_session_another_editor_holds_is_refused_naming_the_process() {
    let (ws, _server) = workspace(vec![Step::from(Reply::text("ok"))]);
    let mut first = Editor::start(&ws);
    first.initialize();
    let session = first.new_session(&ws);
    let mut second = Editor::start(&ws);
    second.initialize();
    let refused = second.call(
        "session/load",
        json!({"sessionId": session, "cwd": ws.root(), "mcpServers": []}),
    );
    let message = refused["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{refused}"));
    assert!(
        message.contains("in use by another linggen (pid"),
        "{message}"
    );
    let unknown = second.call(
        "session/load",
        json!({"sessionId": "0123456789abcdef", "cwd": ws.root(), "mcpServers": []}),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(first.close().success());
    assert!(second.close().success());
}

#[test]
fn thoughts_and_the_todo_list_reach_the_editor_as_thought_chunks_and_a_plan() {
    let (ws, _server) = workspace(vec![
        Step::from(Reply::tool(
            "TodoWrite",
            json!({"todos": [
                {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
                {"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"},
            ]}),
        )),
        Reply::thinking("The list is written.", "Working on it.").into(),
    ]);
    let mut editor = Editor::start(&ws);
    editor.initialize();
    let session = editor.new_session(&ws);
    let reply = editor.prompt(&session, "plan the work");
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let updates = editor.updates();
    let plan = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "plan")
        .unwrap_or_else(|| panic!("no plan: {updates:#?}"));
    assert_eq!(
        plan["entries"],
        json!([
            {"content": "Read the code", "priority": "medium", "status": "completed"},
            {"content": "Run the tests", "priority": "medium", "status": "in_progress"},
        ])
    );
    let thought: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_thought_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(thought, "The list is written.");
    assert_eq!(answer_text(&updates), "Working on it.");
}

/// An editor that sends a line without end: linggen reads no more than 64 MiB of it, says
/// why in one line and exits 1 — the conversation was broken, not ended (closing stdin,
/// above, exits 0).
#[test]
fn an_editor_line_without_end_ends_acp_with_an_error() {
    let (ws, _server) = workspace(vec![]);
    let out = support::feed_endless_line(ws.cmd().arg("acp"), LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("reading from the editor: it sent a message over 64 MiB without ending it"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}
