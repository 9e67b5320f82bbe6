//! `---`-delimited YAML frontmatter, shared by `SKILL.md` and agent files. Errors carry the
//! 1-based line in the file, so a warning can point at it.

/// A frontmatter problem at a line of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontmatterError {
    pub line: usize,
    pub message: String,
}

/// The parsed frontmatter mapping and the body after it.
#[derive(Debug, Clone)]
pub struct Document {
    pub fields: serde_yaml::Mapping,
    pub body: String,
    /// The line (1-based) of each top-level key, for error messages.
    pub key_lines: Vec<(String, usize)>,
}

impl Document {
    /// The line of `key`, or 1.
    pub fn line_of(&self, key: &str) -> usize {
        self.key_lines
            .iter()
            .find(|(k, _)| k == key)
            .map_or(1, |(_, l)| *l)
    }
}

/// Splits and parses a document. A file without frontmatter is an error (line 1).
pub fn parse(_text: &str) -> Result<Document, FrontmatterError> {
    Err(FrontmatterError {
        line: 1,
        message: "not implemented".into(),
    })
}
