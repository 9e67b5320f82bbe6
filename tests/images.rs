//! Images a person attaches — `@shot.png` in a line, `-p --image FILE` — reach a model that
//! takes images as image parts of the user message, are kept with the session, and are
//! refused with a clear line where the model takes none.

// Test code may unwrap: a failure there is a failed test, reported with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::pty::Repl;
use support::{PIXEL, Protocol, Reply, ScriptedServer, Step, Workspace, run, write_config_with};

/// `data:image/png;base64,…` of [`PIXEL`].
const PIXEL_URL: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg==";

fn workspace(script: Vec<Step>, vision: bool) -> (Workspace, ScriptedServer) {
    let server = ScriptedServer::start_background(Protocol::OpenAi, script);
    let ws = Workspace::new();
    let extra = if vision { "images = true\n" } else { "" };
    write_config_with(ws.home(), Protocol::OpenAi, &server.url(), extra);
    std::fs::write(ws.root().join("shot.png"), PIXEL).unwrap();
    (ws, server)
}

/// The image URLs of the user messages of a request.
fn image_urls(request: &serde_json::Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter_map(|part| part["image_url"]["url"].as_str().map(str::to_string))
        .collect()
}

/// Every window can show a message's image: the event names it (no data), and the mirror
/// hands over its data by that name.
fn shown_by_the_mirror(serve: &support::web_client::Serve, data: &str) {
    let session = serve.session();
    let sent = session["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "Message" && e["images"].is_array())
        .unwrap_or_else(|| panic!("the message with its image: {session:#}"));
    assert!(
        sent["images"][0].get("data").is_none(),
        "events carry no data"
    );
    let id = sent["images"][0]["id"].as_str().unwrap();
    let shown = serve.get(&format!("/api/image?id={id}")).json();
    assert_eq!(shown["media_type"], "image/png");
    assert_eq!(shown["data"], data);
    assert_eq!(serve.get("/api/image?id=0000").status, 404);
}

#[test]
fn an_image_mention_reaches_the_model_and_stays_with_the_session() {
    let (ws, server) = workspace(
        vec![
            Step::from(Reply::text("A pixel.")),
            Reply::text("Still a pixel.").into(),
        ],
        true,
    );
    let out = run(&ws, &["-p", "what is in @shot.png?"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(image_urls(&server.chat_requests()[0]), [PIXEL_URL]);
    // Resumed, the stored history carries the image again.
    let out = run(&ws, &["-p", "and now?", "--continue"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(image_urls(&server.chat_requests()[1]), [PIXEL_URL]);
}

#[test]
fn the_image_flag_sends_a_file_and_bad_ones_are_named() {
    let (ws, server) = workspace(vec![Step::from(Reply::text("A pixel."))], true);
    let out = run(&ws, &["-p", "describe it", "--image", "shot.png"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        image_urls(&server.last_chat_request().unwrap()),
        [PIXEL_URL]
    );

    let out = run(&ws, &["--image", "shot.png"]);
    assert_eq!(out.code, Some(2), "--image without -p: {}", out.stderr);
    let out = run(&ws, &["-p", "describe it", "--image", "missing.png"]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("--image: cannot read `missing.png`"),
        "{}",
        out.stderr
    );
    std::fs::write(ws.root().join("huge.png"), vec![0u8; 4_000_000]).unwrap();
    let out = run(&ws, &["-p", "what is @huge.png"]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("`") && out.stderr.contains("KB a model takes"),
        "{}",
        out.stderr
    );
    assert_eq!(server.chat_requests().len(), 1, "nothing else was sent");
}

#[test]
fn a_model_without_images_refuses_them_with_one_line() {
    let (ws, server) = workspace(vec![Step::from(Reply::text("never"))], false);
    let out = run(&ws, &["-p", "what is in @shot.png?"]);
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.contains("does not take images") && out.stderr.contains("images = true"),
        "{}",
        out.stderr
    );
    assert!(server.chat_requests().is_empty());
}

#[test]
fn an_image_mention_typed_in_the_shell_is_sent() {
    let (ws, server) = workspace(vec![Step::from(Reply::text("A pixel."))], true);
    let mut repl = Repl::start(&ws, &[]);
    repl.line("look at @shot.png");
    repl.expect("A pixel.");
    assert_eq!(
        image_urls(&server.last_chat_request().unwrap()),
        [PIXEL_URL]
    );
}

#[test]
fn an_image_mention_sent_from_the_page_is_sent() {
    let (ws, server) = workspace(vec![Step::from(Reply::text("A pixel."))], true);
    let serve = support::web_client::Serve::start(ws.cmd().arg("serve"));
    let sent = serve.post(
        "/api/messages",
        &serde_json::json!({"content": "see @shot.png"}),
    );
    assert!(sent.status < 300, "{}", sent.text());
    support::wait_until(
        "the page's message reaches the model",
        std::time::Duration::from_secs(10),
        || !server.chat_requests().is_empty(),
    );
    assert_eq!(image_urls(&server.chat_requests()[0]), [PIXEL_URL]);
    shown_by_the_mirror(
        &serve,
        PIXEL_URL.trim_start_matches("data:image/png;base64,"),
    );
    drop(serve);
}

#[test]
fn an_image_given_to_a_custom_command_goes_with_it() {
    let (ws, server) = workspace(vec![Step::from(Reply::text("A pixel."))], true);
    std::fs::create_dir_all(ws.home().join(".claude/commands")).unwrap();
    std::fs::write(
        ws.home().join(".claude/commands/look.md"),
        "Describe what $ARGUMENTS shows.\n",
    )
    .unwrap();
    let out = run(&ws, &["-p", "/look @shot.png"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        image_urls(&server.last_chat_request().unwrap()),
        [PIXEL_URL]
    );
}

#[test]
fn images_posted_by_the_page_are_checked() {
    let (ws, server) = workspace(vec![Step::from(Reply::text("A pixel."))], true);
    let serve = support::web_client::Serve::start(ws.cmd().arg("serve"));
    let image =
        |media_type: &str, data: &str| serde_json::json!({"media_type": media_type, "data": data});
    let bmp = serve.post(
        "/api/messages",
        &serde_json::json!({"content": "see", "images": [image("image/bmp", "AAAA")]}),
    );
    assert_eq!(bmp.status, 400, "{}", bmp.text());
    assert!(bmp.text().contains("image 1 is not sent"), "{}", bmp.text());
    let data = PIXEL_URL.trim_start_matches("data:image/png;base64,");
    let five = vec![image("image/png", data); 5];
    let many = serve.post(
        "/api/messages",
        &serde_json::json!({"content": "see", "images": five}),
    );
    assert_eq!(many.status, 400, "{}", many.text());
    assert!(many.text().contains("at most 4 images"), "{}", many.text());
    let one = serve.post(
        "/api/messages",
        &serde_json::json!({"content": "see", "images": [image("image/png", data)]}),
    );
    assert_eq!(one.status, 202, "{}", one.text());
    support::wait_until(
        "the message reaches the model",
        std::time::Duration::from_secs(10),
        || !server.chat_requests().is_empty(),
    );
    assert_eq!(image_urls(&server.chat_requests()[0]), [PIXEL_URL]);
    shown_by_the_mirror(&serve, data);
    drop(serve);
}

#[test]
fn an_image_file_dropped_on_the_terminal_is_sent_even_from_outside_the_workspace() {
    let (ws, server) = workspace(vec![Reply::text("A dropped pixel.").into()], true);
    // Dropping a file pastes its absolute path, its spaces escaped or the whole quoted.
    let outside = tempfile::tempdir().unwrap();
    let dropped = outside.path().join("my shot.png");
    std::fs::write(&dropped, PIXEL).unwrap();
    let mut repl = Repl::start(&ws, &[]);
    let pasted = dropped.display().to_string().replace(' ', "\\ ");
    repl.line(&format!("what is this? {pasted}"));
    repl.expect("my shot.png attached");
    repl.expect("A dropped pixel.");
    assert_eq!(image_urls(&server.chat_requests()[0]), [PIXEL_URL]);
}

#[test]
fn a_forked_skill_invoked_with_an_image_gets_the_image() {
    let (ws, server) = workspace(vec![Reply::text("A pixel, described.").into()], true);
    ws.write(
        ".linggen/skills/describe/SKILL.md",
        "---\nname: describe\ndescription: Describe an image\ncontext: fork\n---\nDescribe the image.\n",
    );
    let out = run(&ws, &["-p", "/describe", "--image", "shot.png"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    // The forked run's own first request carries it.
    assert_eq!(image_urls(&server.chat_requests()[0]), [PIXEL_URL]);
}
