//! `@` mentions: `@agent message` at the start routes the message; `@path` anywhere names a
//! file to attach.

use std::path::Path;

use super::{Parsed, TriggerContext};

/// Characters that may open a mention besides whitespace: `(see @src/x.rs)`, `"@a.md"`.
const OPENERS: &[char] = &['(', '[', '{', '<', '"', '\'', '`', '（'];

/// Punctuation that ends a sentence or a bracket rather than a path: `see @a.rs, then`.
/// Full-width forms included, since Chinese text puts them right after the path.
const CLOSERS: &[char] = &[
    ',', ';', ':', '!', '?', ')', ']', '}', '>', '"', '\'', '`', '。', '，', '；', '：', '！',
    '？', '）', '、',
];

/// `@name rest` at the start of the input, when `name` is an agent (first) or a skill's
/// target. Anything else starting with `@` is left to the later rules (usually a file).
pub(super) fn parse_agent_mention<C>(text: &str, ctx: &TriggerContext<'_>) -> Option<Parsed<C>> {
    let after_at = text.strip_prefix('@')?;
    let name_end = after_at.find(char::is_whitespace).unwrap_or(after_at.len());
    // `@coder: fix this` and `@coder, fix this` address the agent just like `@coder fix`.
    let name = after_at[..name_end].trim_end_matches([',', ':']);
    if name.is_empty() {
        return None;
    }
    let rest = after_at[name_end..].trim();
    if ctx.agents.iter().any(|agent| agent == name) {
        return Some(Parsed::AgentMessage {
            agent: name.to_string(),
            message: rest.to_string(),
            attachments: attachment_candidates(rest),
        });
    }
    let target = ctx.skill_targets.iter().find(|t| t.target == name)?;
    Some(Parsed::Skill {
        name: target.skill.clone(),
        args: rest.to_string(),
    })
}

/// Every `@word` that starts a word (after whitespace, the start, or an opening bracket or
/// quote), with trailing punctuation removed, deduplicated in order of appearance. An `@`
/// inside a word (`a@b.com`), a bare `@` and `@@x` are not mentions. Existence is not
/// checked here: the caller attaches the candidates that name a file in the workspace and
/// leaves the rest as text, so `@Makefile` works and `ask @ling` costs one failed lookup.
pub fn attachment_candidates(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut previous: Option<char> = None;
    for (index, ch) in text.char_indices() {
        let at_word_start = previous.is_none_or(|p| p.is_whitespace() || OPENERS.contains(&p));
        previous = Some(ch);
        if ch != '@' || !at_word_start {
            continue;
        }
        let after_at = &text[index + 1..];
        let token_end = after_at.find(char::is_whitespace).unwrap_or(after_at.len());
        let Some(path) = clean_path_token(&after_at[..token_end]) else {
            continue;
        };
        if !found.iter().any(|f| f == path) {
            found.push(path.to_string());
        }
    }
    found
}

/// The path part of a token after `@`, or `None` when nothing path-like is left.
fn clean_path_token(token: &str) -> Option<&str> {
    let mut path = token;
    loop {
        let before = path;
        path = path.trim_end_matches(CLOSERS);
        // A sentence's full stop (`see @README.md.`) is not part of the name, but `@..`
        // and `@src/.` are paths in their own right.
        if let Some(stripped) = path.strip_suffix('.')
            && stripped
                .chars()
                .last()
                .is_some_and(|c| c != '.' && c != '/')
        {
            path = stripped;
        }
        if path == before {
            break;
        }
    }
    if path.is_empty() || path.contains('@') {
        return None;
    }
    Some(path)
}

/// Attached files larger than this are cut, so one `@file` cannot fill the context.
pub const ATTACHMENT_MAX_BYTES: usize = 100_000;

/// The mentioned files that exist inside the workspace, as fenced blocks. A mention that
/// names no readable text file inside the root (missing, outside, a folder, binary) stays
/// plain text: `ask @ling` is not an error. Reads files: call it off the async runtime
/// (see [`super::attach`]).
pub fn attached_files(root: &Path, candidates: &[String]) -> String {
    attached_and_noted(root, candidates).0
}

/// [`attached_files`], and one line per mention for the person who wrote it: what was
/// attached (`src/main.rs · 42 lines, 2 KB`, an image's type and size) or, for a mention
/// that reads as a path (it holds a `/` or a `.`), why it was not and stays text. A mention
/// like `@ling` says nothing. Each file is read once. Reads files: call it off the async
/// runtime.
pub fn attached_and_noted(root: &Path, candidates: &[String]) -> (String, Vec<String>) {
    let mut blocks = String::new();
    let mut notes = Vec::new();
    for raw in candidates {
        let mention = own_mention(root, raw);
        blocks.extend(mention.block);
        notes.extend(mention.note);
    }
    (blocks, notes)
}

/// A person's own `@path`, inside `root`: theirs to attach, a secret store included; a
/// FIFO or a device is still refused (reading one could wait for ever).
fn resolve_own(
    root: &Path,
    raw: &str,
) -> Result<crate::tools::guard::paths::ResolvedPath, crate::tools::guard::paths::PathRefused> {
    crate::tools::guard::paths::resolve(
        root,
        None,
        &crate::tools::sandbox::Secrets::none(),
        raw,
        crate::tools::guard::paths::PathUse::Read,
    )
}

/// The mentioned image files inside the workspace (`@shot.png`), for models that take
/// images: a mention of an image that is not there stays plain text, like any mention; one
/// that cannot be sent (too large) is an error naming it. Reads files: call it off the
/// async runtime.
pub fn attached_images(
    root: &Path,
    candidates: &[String],
) -> Result<Vec<crate::llm::Image>, crate::protocol::ImageFileError> {
    let mut images = Vec::new();
    for raw in candidates {
        if crate::llm::ImageFormat::from_path(Path::new(raw)).is_none() {
            continue;
        }
        match resolve_own(root, raw) {
            Ok(path) if path.abs.is_file() => images.push(crate::llm::Image::from_file(&path.abs)?),
            _ => {}
        }
    }
    Ok(images)
}

/// A person's own `@raw`, read once: the block to attach, and the line telling them.
struct Mention {
    block: Option<String>,
    note: Option<String>,
}

impl Mention {
    fn note(note: impl Into<Option<String>>) -> Mention {
        Mention {
            block: None,
            note: note.into(),
        }
    }
}

fn own_mention(root: &Path, raw: &str) -> Mention {
    let looks_like_path = raw.contains('/') || raw.contains('.');
    let path = match resolve_own(root, raw) {
        Ok(path) => path,
        Err(why) if looks_like_path => return Mention::note(format!("@{raw} not attached: {why}")),
        Err(_) => return Mention::note(None),
    };
    let kb = |bytes: usize| bytes.div_ceil(1024);
    if path.abs.is_dir() {
        return Mention::note(format!(
            "@{raw} is a folder, not attached (name a file in it)"
        ));
    }
    if !path.abs.is_file() {
        return Mention::note(
            looks_like_path.then(|| format!("@{raw}: no such file, sent as text")),
        );
    }
    // Images go to the model as images (see `attached_images`), not as text.
    if crate::llm::ImageFormat::from_path(Path::new(raw)).is_some() {
        let size = std::fs::metadata(&path.abs).map_or(0, |m| m.len() as usize);
        return Mention::note(format!("{} · image, {} KB", path.rel, kb(size)));
    }
    let Ok(bytes) = std::fs::read(&path.abs) else {
        return Mention::note(format!("@{raw} cannot be read, sent as text"));
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Mention::note(format!("@{raw} is not text, not attached"));
    };
    let lines = crate::text::plural(text.lines().count(), "line", "lines");
    let cut = match text.chars().count() > ATTACHMENT_MAX_BYTES {
        true => format!(" (cut to the first {} KB)", ATTACHMENT_MAX_BYTES / 1000),
        false => String::new(),
    };
    Mention {
        note: Some(format!(
            "{} · {lines}, {} KB{cut}",
            path.rel,
            kb(text.len())
        )),
        block: Some(fenced(&path.rel, &text)),
    }
}

/// [`attached_files`] for mentions the person did not write (a project command's body):
/// only what the model's own `Read` may read is attached, so secret stores and
/// `$LINGGEN_HOME` stay out of the prompt. Reads files: call it off the async runtime.
pub fn attached_files_as_tools(tools: &crate::tools::ToolContext, candidates: &[String]) -> String {
    let resolve = |raw: &str| tools.resolve(raw, crate::tools::guard::paths::PathUse::Read);
    candidates
        .iter()
        .filter_map(|path| attachment(&resolve, path))
        .collect()
}

/// `@path` → the file's text as a fenced block, when `resolve` finds a file for it.
fn attachment(
    resolve: &dyn Fn(
        &str,
    ) -> Result<
        crate::tools::guard::paths::ResolvedPath,
        crate::tools::guard::paths::PathRefused,
    >,
    raw: &str,
) -> Option<String> {
    let path = resolve(raw).ok()?;
    let bytes = std::fs::read(&path.abs).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    Some(fenced(&path.rel, &text))
}

/// A file's text as the message carries it: its path, then the text (cut to
/// [`ATTACHMENT_MAX_BYTES`] characters) in a fence.
fn fenced(rel: &str, text: &str) -> String {
    let cut: String = text.chars().take(ATTACHMENT_MAX_BYTES).collect();
    format!("\n\n{rel}:\n```\n{}\n```", cut.trim_end())
}
