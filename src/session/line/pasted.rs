//! Image files pasted into the terminal as paths. Dropping a file on a terminal window
//! pastes its absolute path — quoted (`'/tmp/my shot.png'`) or with its spaces escaped
//! (`/tmp/my\ shot.png`) — and a person means the image, as in Claude Code. Only the
//! shell reads these: a path in a message from the page or a script names a file on
//! another machine's behalf, and stays text.

use std::path::{Path, PathBuf};

/// The absolute (or `~/`) paths in `text` that name an existing PNG, JPEG, GIF or WebP
/// file, in order, each once; `linggen_home` is never read from.
pub fn pasted_image_paths(text: &str, home: Option<&Path>, linggen_home: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for word in words(text) {
        let expand = |word: &str| match (word.strip_prefix("~/"), home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => PathBuf::from(word),
        };
        // `see /tmp/a.png, then…`: the comma ends the sentence, not the name.
        let mut path = expand(&word);
        if !path.exists() {
            path = expand(word.trim_end_matches([',', ';', ')', ']']));
        }
        let wanted = path.is_absolute()
            && crate::llm::ImageFormat::from_path(&path).is_some()
            && path.is_file()
            && !inside(&path, linggen_home)
            && !found.contains(&path);
        if wanted {
            found.push(path);
        }
    }
    found
}

/// Whether `path` lies in `folder`, links resolved.
fn inside(path: &Path, folder: &Path) -> bool {
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    real(path).starts_with(real(folder))
}

/// The words of `text` as a shell splits them: quotes group, a backslash escapes.
fn words(text: &str) -> Vec<String> {
    let (mut words, mut word, mut quote) = (Vec::new(), String::new(), None);
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\\') => word.extend(chars.next()),
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            (_, c) => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_escaped_and_home_paths_to_images_that_exist_are_found_once() {
        let dir = tempfile::tempdir().unwrap();
        let spaced = dir.path().join("my shot.png");
        let plain = dir.path().join("b.jpg");
        std::fs::write(&spaced, b"x").unwrap();
        std::fs::write(&plain, b"x").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        let escaped = spaced.display().to_string().replace(' ', "\\ ");
        let text = format!(
            "look at '{}' and {escaped} then ~/b.jpg, {}/notes.txt, {}/gone.png",
            spaced.display(),
            dir.path().display(),
            dir.path().display()
        );
        let found = pasted_image_paths(&text, Some(dir.path()), Path::new("/nonexistent"));
        assert_eq!(found, [spaced, plain]);
    }

    #[test]
    fn relative_paths_and_linggen_home_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("a.png");
        std::fs::write(&image, b"x").unwrap();
        let text = format!("a.png {}", image.display());
        assert!(pasted_image_paths(&text, None, dir.path()).is_empty());
    }
}
