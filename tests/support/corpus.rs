//! Realistic markdown of any size, for streaming and rendering benchmarks.

/// One section of the kind a coding agent writes: prose with inline markup, lists, a
/// table, a quote and a fenced code block, with non-ASCII text so byte-level splits land
/// inside multi-byte characters.
fn section(n: usize) -> String {
    format!(
        r#"## Step {n}: refactor the `parser` module

The **tokenizer** now returns `Result<Token, LexError>` instead of panicking, so callers
can report *where* the input went wrong. See [the design notes](https://example.com/design/{n})
and the café-style naïve benchmark — 速度 matters 🚀.

- keep `Span` cheap to copy
- move `peek()` into the cursor
  - nested: no allocation on the hot path
1. run `cargo test -p parser`
2. compare with step {n}

| file | lines | change |
|------|------:|--------|
| `src/lexer.rs` | {lines} | split `next_token` |
| `src/parser.rs` | {lines2} | ~~unwrap~~ `?` |

> Note: a quoted remark with `inline code` and **bold** text.

```rust
fn next_token(&mut self) -> Result<Token, LexError> {{
    let start = self.pos; // step {n}
    while let Some(c) = self.peek() {{
        if !c.is_alphanumeric() {{ break; }}
        self.pos += c.len_utf8();
    }}
    Ok(Token::new(start, self.pos))
}}
```

"#,
        lines = 100 + n % 400,
        lines2 = 250 + n % 700,
    )
}

/// Markdown of at least `min_bytes` bytes, made of whole sections (so every code fence is
/// closed). Deterministic: the same size gives the same text.
pub fn markdown_corpus(min_bytes: usize) -> String {
    let mut text = String::from("# Refactoring report\n\n");
    let mut n = 1;
    while text.len() < min_bytes {
        text.push_str(&section(n));
        n += 1;
    }
    text
}
