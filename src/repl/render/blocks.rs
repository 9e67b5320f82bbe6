//! Recognising the block a source line belongs to: fences, rules, headings, quotes and
//! list items. Each check looks at one line only, as the stream renders line by line.

/// Columns of leading whitespace (a tab counts four, as in CommonMark).
pub(crate) fn indent_of(line: &str) -> usize {
    line.chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

/// An opening fence: its character, its length and the language word.
pub(crate) fn opens_fence(line: &str) -> Option<(char, usize, &str)> {
    let trimmed = line.trim_start();
    let fence = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = trimmed.len() - trimmed.trim_start_matches(fence).len();
    if len < 3 {
        return None;
    }
    let info = trimmed[len..].trim();
    // A backtick fence's info string may not contain backticks (that's inline code).
    if fence == '`' && info.contains('`') {
        return None;
    }
    let lang = info
        .split(|c: char| c.is_whitespace() || c == ',' || c == '{' || c == '}')
        .find(|w| !w.is_empty())
        .unwrap_or("");
    Some((fence, len, lang))
}

/// Whether `line` closes a fence opened with `len` times `fence`.
pub(crate) fn closes_fence(line: &str, fence: char, len: usize) -> bool {
    let trimmed = line.trim();
    trimmed.len() >= len && trimmed.chars().all(|c| c == fence)
}

/// `---`, `***`, `___`, spaces allowed between. (After a paragraph line CommonMark would
/// make `---` a heading underline; the line above is already printed, so it is a rule.)
pub(crate) fn is_rule(line: &str) -> bool {
    let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(first) = compact.chars().next() else {
        return false;
    };
    indent_of(line) < 4
        && matches!(first, '-' | '*' | '_')
        && compact.len() >= 3
        && compact.chars().all(|c| c == first)
}

/// `## Title ##` → (2, "Title").
pub(crate) fn heading(line: &str) -> Option<(usize, &str)> {
    if indent_of(line) >= 4 {
        return None;
    }
    let trimmed = line.trim_start();
    let level = trimmed.len() - trimmed.trim_start_matches('#').len();
    let rest = &trimmed[level..];
    if !(1..=6).contains(&level) || !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let text = rest.trim();
    // A closing run of `#` is decoration, unless it is the whole text.
    let stripped = text.trim_end_matches('#');
    let text = if stripped.is_empty() || stripped.ends_with(' ') {
        stripped.trim_end()
    } else {
        text
    };
    Some((level, text))
}

/// `> > text` → (2, "text").
pub(crate) fn quote(line: &str) -> Option<(usize, &str)> {
    let mut rest = line.trim_start();
    let mut depth = 0;
    while let Some(after) = rest.strip_prefix('>') {
        depth += 1;
        rest = after
            .strip_prefix(' ')
            .unwrap_or(after)
            .trim_start_matches(' ');
    }
    (depth > 0).then_some((depth, rest))
}

/// A bullet (`-`, `*`, `+`) or numbered (`1.`, `2)`) list item.
pub(crate) struct ListItem<'a> {
    pub indent: usize,
    /// The number as written (`3.`), or `None` for a bullet.
    pub number: Option<String>,
    /// The item's text; a task box (`[ ]`, `[x]`) is already drawn as ☐ or ☑.
    pub text: std::borrow::Cow<'a, str>,
}

pub(crate) fn list_item(line: &str) -> Option<ListItem<'_>> {
    let indent = indent_of(line);
    let trimmed = line.trim_start();
    let digits = trimmed.len()
        - trimmed
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .len();
    let (number, marker_len) = if digits == 0 {
        trimmed.starts_with(['-', '*', '+']).then_some(())?;
        (None, 1)
    } else {
        let delimiter = trimmed[digits..].chars().next()?;
        if digits > 9 || !matches!(delimiter, '.' | ')') {
            return None;
        }
        (Some(trimmed[..=digits].to_string()), digits + 1)
    };
    let after = &trimmed[marker_len..];
    if !(after.is_empty() || after.starts_with([' ', '\t'])) {
        return None;
    }
    let text = after.trim_start();
    let text = if let Some(rest) = text.strip_prefix("[ ] ") {
        format!("☐ {rest}").into()
    } else if let Some(rest) = text
        .strip_prefix("[x] ")
        .or_else(|| text.strip_prefix("[X] "))
    {
        format!("☑ {rest}").into()
    } else {
        text.into()
    };
    Some(ListItem {
        indent,
        number,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_headings_rules_quotes() {
        assert_eq!(opens_fence("```rust"), Some(('`', 3, "rust")));
        assert_eq!(opens_fence("  ~~~~ python title"), Some(('~', 4, "python")));
        assert_eq!(opens_fence("```"), Some(('`', 3, "")));
        assert_eq!(opens_fence("``inline``"), None);
        assert!(closes_fence("```", '`', 3));
        assert!(!closes_fence("```rust", '`', 3));
        assert!(!closes_fence("``", '`', 3));
        assert_eq!(heading("## Title ##"), Some((2, "Title")));
        assert_eq!(heading("# C#"), Some((1, "C#")));
        assert_eq!(heading("#hashtag"), None);
        assert_eq!(heading("####### seven"), None);
        assert!(is_rule("* * *"));
        assert!(is_rule("---"));
        assert!(!is_rule("--"));
        assert!(!is_rule("- item"));
        assert_eq!(quote("> > deep"), Some((2, "deep")));
        assert_eq!(quote("plain"), None);
    }

    #[test]
    fn list_items() {
        let item = list_item("  - [x] done").unwrap();
        assert_eq!((item.indent, item.number, &*item.text), (2, None, "☑ done"));
        let item = list_item("10. ten").unwrap();
        assert_eq!((item.number.as_deref(), &*item.text), (Some("10."), "ten"));
        assert!(list_item("**bold** text").is_none());
        assert!(list_item("2024 was a year").is_none());
        assert!(list_item("-1 degrees").is_none());
    }
}
