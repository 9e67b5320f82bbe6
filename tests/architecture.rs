//! The shape DESIGN.md draws, checked over the source (`src/`), so it cannot erode
//! unnoticed:
//!
//! - imports point down the layers: frontends → app → session → the services (agents,
//!   skills, tools, mcp, hooks, llm, checkpoint) → store and config → the shared bottom
//!   (protocol, text, clock, shared_text, durable, sync); no frontend imports another, and no
//!   two modules of one layer import each other;
//! - no `pub` or `pub(crate)` function returns `Result<_, String>` (one another module
//!   can call has a typed error);
//! - no function outside tests is longer than 80 lines.
//!
//! What is known and not yet fixed is listed in `KNOWN_*` below, each entry a debt with
//! its place: a new one fails the test, and so does a listed one that is gone (take it off
//! the list), so the lists only shrink.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Imports that point up or sideways, as `from -> to`, not yet moved.
const KNOWN_LAYER_BREAKS: &[&str] = &[];

/// `path:function` of `pub` functions that still return `Result<_, String>`.
const KNOWN_STRING_ERRORS: &[&str] = &[];

/// `path:function` of functions over the limit, not yet split.
const KNOWN_LONG_FUNCTIONS: &[&str] = &[];

const MAX_FUNCTION_LINES: usize = 80;

/// Each top-level module's layer; a module may import its own layer's others (without a
/// cycle) and any lower one.
fn layer(module: &str) -> Option<u8> {
    Some(match module {
        "main" | "lib" | "cli" => 6,
        "repl" | "web" | "print" | "acp" => 5,
        "app" => 4,
        "session" => 3,
        "agents" | "skills" | "tools" | "mcp" | "hooks" | "llm" | "checkpoint" => 2,
        "store" | "config" => 1,
        "protocol" | "text" | "clock" | "shared_text" | "durable" | "sync" => 0,
        _ => return None,
    })
}

const FRONTENDS: [&str; 4] = ["repl", "web", "print", "acp"];

/// One source file: its top-level module and its code without comments, string contents
/// and test modules.
struct Source {
    path: String,
    module: String,
    code: String,
}

fn sources() -> Vec<Source> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|path| !is_test_file(path))
        .map(|path| {
            let relative = path.strip_prefix(&root).unwrap();
            let first = relative.components().next().unwrap().as_os_str();
            let module = first.to_string_lossy().trim_end_matches(".rs").to_string();
            let text = std::fs::read_to_string(&path).unwrap();
            Source {
                path: relative.display().to_string(),
                module,
                code: without_tests(&strip(&text)),
            }
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_test_file(path: &Path) -> bool {
    let name = path.file_stem().unwrap().to_string_lossy();
    name == "tests"
        || name.ends_with("_tests")
        || path.components().any(|c| c.as_os_str() == "tests")
}

/// The code with comments removed and string and character literals emptied (their
/// braces would count as blocks), lines kept where they were.
fn strip(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                if chars[i] == '\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 2;
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && raw_start(&chars, i) {
            i = skip_raw(&chars, i, &mut out);
        } else if c == '"' {
            i = skip_string(&chars, i, &mut out);
        } else if c == '\'' {
            i = skip_char(&chars, i, &mut out);
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Whether `r` at `i` starts a raw string (`r"`, `r#"`), not an identifier ending in r.
fn raw_start(chars: &[char], i: usize) -> bool {
    let before = i.checked_sub(1).map(|b| chars[b]);
    if before.is_some_and(|b| b.is_alphanumeric() || b == '_') {
        return false;
    }
    let mut j = i + 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    chars.get(j) == Some(&'"')
}

fn skip_raw(chars: &[char], i: usize, out: &mut String) -> usize {
    let mut j = i + 1;
    let mut hashes = 0;
    while chars[j] == '#' {
        hashes += 1;
        j += 1;
    }
    j += 1;
    out.push_str("\"\"");
    while j < chars.len() {
        if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
            return j + 1 + hashes;
        }
        if chars[j] == '\n' {
            out.push('\n');
        }
        j += 1;
    }
    j
}

fn skip_string(chars: &[char], i: usize, out: &mut String) -> usize {
    let mut j = i + 1;
    out.push_str("\"\"");
    while j < chars.len() && chars[j] != '"' {
        if chars[j] == '\\' {
            j += 1;
        }
        if chars.get(j) == Some(&'\n') {
            out.push('\n');
        }
        j += 1;
    }
    j + 1
}

/// A character literal (`'x'`, `'\n'`, `'{'`) is emptied; a lifetime (`'a`) is kept.
fn skip_char(chars: &[char], i: usize, out: &mut String) -> usize {
    let literal_end = if chars.get(i + 1) == Some(&'\\') {
        (i + 2..chars.len().min(i + 12)).find(|&j| chars[j] == '\'')
    } else if chars.get(i + 2) == Some(&'\'') {
        Some(i + 2)
    } else {
        None
    };
    match literal_end {
        Some(end) => {
            out.push_str("' '");
            end + 1
        }
        None => {
            out.push('\'');
            i + 1
        }
    }
}

/// The code before a trailing `#[cfg(test)] mod …` (tests sit at the end of a file).
fn without_tests(code: &str) -> String {
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]").map(|i| from + i) {
        let after = code[at + "#[cfg(test)]".len()..].trim_start();
        if after.starts_with("mod ") {
            return code[..at].to_string();
        }
        from = at + 1;
    }
    code.to_string()
}

/// The top-level modules `code` names through `crate::`.
fn imports(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            names.extend(group_heads(group));
        } else {
            names.insert(ident(rest));
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

/// The first identifier of each item of a `{a::b, c, d::{e}}` group.
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut at_item_start = true;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_item_start = true,
            c if at_item_start && !c.is_whitespace() => {
                heads.push(ident(&group[i..]));
                at_item_start = false;
            }
            _ => {}
        }
    }
    heads
}

fn ident(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// A module missing from the map would go unchecked: imports to it are not edges.
#[test]
fn every_top_level_module_has_a_layer() {
    let unmapped: BTreeSet<String> = sources()
        .into_iter()
        .map(|source| source.module)
        .filter(|module| layer(module).is_none())
        .collect();
    assert!(
        unmapped.is_empty(),
        "{unmapped:?} have no layer: add them to `layer` (and to DESIGN's map)"
    );
}

#[test]
fn imports_point_down_the_layers() {
    let mut edges: BTreeMap<(String, String), String> = BTreeMap::new();
    for source in sources() {
        for to in imports(&source.code) {
            if to != source.module && layer(&to).is_some() {
                edges
                    .entry((source.module.clone(), to))
                    .or_insert_with(|| source.path.clone());
            }
        }
    }
    let mut breaks = BTreeMap::new();
    for ((from, to), path) in &edges {
        let (Some(a), Some(b)) = (layer(from), layer(to)) else {
            panic!("{from} or {to} has no layer: add it to `layer` (and to DESIGN's map)");
        };
        let frontends = FRONTENDS.contains(&from.as_str()) && FRONTENDS.contains(&to.as_str());
        let cycle = a == b && edges.contains_key(&(to.clone(), from.clone()));
        if b > a || frontends || cycle {
            breaks.insert(format!("{from} -> {to}"), path.clone());
        }
    }
    ratchet(
        "imports that point up the layers",
        &breaks,
        KNOWN_LAYER_BREAKS,
    );
}

/// The `pub` and `pub(crate)` functions of `code` that return `Result<_, String>`: what
/// another module may call (`pub(super)` and private ones stay inside their module).
fn string_error_functions(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in code.match_indices("fn ") {
        let line_start = code[..at].rfind('\n').map_or(0, |i| i + 1);
        let head = code[line_start..at].trim_start();
        let visible = head.starts_with("pub ") || head.starts_with("pub(crate) ");
        if !visible {
            continue;
        }
        let rest = &code[at + 3..];
        let name = ident(rest);
        let signature_end = signature_end(rest);
        let signature: String = rest[..signature_end].split_whitespace().collect();
        if signature.contains("->Result<") && signature.ends_with(",String>") {
            names.push(name);
        }
    }
    names
}

/// Where a signature ends: its body's `{`, or the `;` of a declaration, outside `[…]` and
/// `(…)` (a `[u8; 4]` parameter does not end it).
fn signature_end(rest: &str) -> usize {
    let mut nested = 0usize;
    for (at, c) in rest.char_indices() {
        match c {
            '[' | '(' => nested += 1,
            ']' | ')' => nested = nested.saturating_sub(1),
            '{' | ';' if nested == 0 => return at,
            _ => {}
        }
    }
    rest.len()
}

#[test]
fn no_string_errors_cross_a_top_level_module() {
    let mut found = BTreeMap::new();
    for source in sources() {
        for name in string_error_functions(&source.code) {
            found.insert(format!("{}:{name}", source.path), String::new());
        }
    }
    ratchet(
        "pub functions that return Result<_, String> (return a typed error, or make them \
         private to their module)",
        &found,
        KNOWN_STRING_ERRORS,
    );
}

/// Each function's name, first line and length in lines, from its `fn` to its closing
/// brace.
fn function_lengths(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let Some(at) = fn_keyword(trimmed) else {
            continue;
        };
        let name = ident(&trimmed[at + 3..]);
        if let Some(end) = closing_line(&lines, start) {
            found.push((name, start + 1, end - start + 1));
        }
    }
    found
}

/// Where `fn ` starts an item on a line (after `pub`, `async`, `const`, `unsafe`, …).
fn fn_keyword(line: &str) -> Option<usize> {
    let mut rest = line;
    let mut at = 0;
    loop {
        if rest.starts_with("fn ") {
            return Some(at);
        }
        let word = [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "async ",
            "const ",
            "unsafe ",
            "extern \"C\" ",
        ]
        .into_iter()
        .find(|w| rest.starts_with(w))?;
        rest = &rest[word.len()..];
        at += word.len();
    }
}

/// The line of the brace closing the body that starts at or after `start`; `None` for a
/// declaration without a body.
fn closing_line(lines: &[&str], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut opened = false;
    // `[` and `(` before the body: a `;` inside them (`[u8; 4]`) does not end a declaration.
    let mut nested = 0usize;
    for (n, line) in lines.iter().enumerate().skip(start) {
        for c in line.chars() {
            match c {
                '[' | '(' if !opened => nested += 1,
                ']' | ')' if !opened => nested = nested.saturating_sub(1),
                ';' if !opened && depth == 0 && nested == 0 => return None,
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => {
                    depth = depth.saturating_sub(1);
                    if opened && depth == 0 {
                        return Some(n);
                    }
                }
                _ => {}
            }
        }
    }
    None
}

#[test]
fn functions_fit_on_a_screen() {
    let mut long = BTreeMap::new();
    for source in sources() {
        for (name, line, length) in function_lengths(&source.code) {
            if length > MAX_FUNCTION_LINES {
                long.insert(
                    format!("{}:{name}", source.path),
                    format!("line {line}, {length} lines"),
                );
            }
        }
    }
    ratchet(
        &format!("functions over {MAX_FUNCTION_LINES} lines (split them by responsibility)"),
        &long,
        KNOWN_LONG_FUNCTIONS,
    );
}

/// Fails on anything found that is not on the known list, and on a listed entry that is
/// no longer found.
fn ratchet(what: &str, found: &BTreeMap<String, String>, known: &[&str]) {
    let new: Vec<String> = found
        .iter()
        .filter(|(key, _)| !known.contains(&key.as_str()))
        .map(|(key, at)| match at.is_empty() {
            true => format!("    \"{key}\","),
            false => format!("    \"{key}\", // {at}"),
        })
        .collect();
    let gone: Vec<&&str> = known.iter().filter(|k| !found.contains_key(**k)).collect();
    assert!(new.is_empty(), "{what}:\n{}", new.join("\n"));
    assert!(
        gone.is_empty(),
        "fixed, so take them off the known list in tests/architecture.rs: {gone:?}"
    );
}

#[test]
fn the_scanner_sees_through_strings_comments_and_groups() {
    let code = strip("let s = \"{ crate::web }\"; // crate::repl\nlet c = '{'; fn f<'a>() {}\n");
    assert!(!code.contains("web") && !code.contains("repl"), "{code}");
    assert_eq!(
        code.matches('{').count(),
        code.matches('}').count(),
        "{code}"
    );
    let names = imports("use crate::{llm::ChatMessage, session::{self, Event}, text};");
    assert_eq!(names, ["llm", "session", "text"].map(String::from).into());
    let fns = string_error_functions(
        "pub fn a(x: u8) -> Result<u8, String> {\n}\nfn b() -> Result<(), String> {}\n\
         pub(super) fn c() -> Result<(), String> {}\npub fn d() -> Result<String, E> {}\n\
         pub fn e(b: [u8; 4]) -> Result<(), String> {}\n",
    );
    assert_eq!(fns, ["a", "e"]);
    let lengths =
        function_lengths("fn one() {\n    if x { y }\n}\nfn decl();\nfn two(a: [u8; 2]) {\n}\n");
    assert_eq!(
        lengths,
        [("one".to_string(), 1, 3), ("two".to_string(), 5, 2)]
    );
}
