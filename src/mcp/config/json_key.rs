//! Where a key sits in a JSON text, for warnings that name a line. `serde_json::Value`
//! keeps no positions, and `~/.claude.json` names a server in several places (user scope,
//! each project's local scope), so a plain text search could point at the wrong one: this
//! follows the nesting instead.

/// The 1-based line of the key at `path` (object keys from the top), if the text has it.
pub(super) fn line_of_key(text: &str, path: &[&str]) -> Option<usize> {
    let offset = offset_of_key(text, path)?;
    Some(text[..offset].matches('\n').count() + 1)
}

/// One open `{` or `[`: for an object, the key whose value is being read.
struct Open {
    object: bool,
    key: Option<String>,
}

fn offset_of_key(text: &str, path: &[&str]) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut open: Vec<Open> = Vec::new();
    let mut expecting_key = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let end = string_end(bytes, i)?;
                if expecting_key && open.last().is_some_and(|o| o.object) {
                    let key = unescape(&text[i..=end]);
                    let at_depth = open.len() == path.len();
                    if at_depth
                        && path.last() == Some(&key.as_str())
                        && opened_along(&open[..open.len() - 1], path)
                    {
                        return Some(i);
                    }
                    if let Some(top) = open.last_mut() {
                        top.key = Some(key);
                    }
                }
                i = end;
            }
            b'{' => {
                open.push(Open {
                    object: true,
                    key: None,
                });
                expecting_key = true;
            }
            b'[' => {
                open.push(Open {
                    object: false,
                    key: None,
                });
                expecting_key = false;
            }
            b'}' | b']' => {
                open.pop();
                expecting_key = false;
            }
            b',' => expecting_key = open.last().is_some_and(|o| o.object),
            b':' => expecting_key = false,
            _ => {}
        }
        i += 1;
    }
    None
}

/// Whether the enclosing objects were entered through `path`'s keys, in order.
fn opened_along(open: &[Open], path: &[&str]) -> bool {
    open.iter()
        .zip(path)
        .all(|(o, key)| o.object && o.key.as_deref() == Some(*key))
}

/// The index of the `"` closing the string that opens at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// A quoted JSON string's text; escapes are rare in keys, so only then is it decoded.
fn unescape(quoted: &str) -> String {
    let raw = &quoted[1..quoted.len() - 1];
    if raw.contains('\\') {
        serde_json::from_str(quoted).unwrap_or_else(|_| raw.to_string())
    } else {
        raw.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::line_of_key;

    const CLAUDE: &str = r#"{
  "numStartups": 3,
  "projects": {
    "/home/a/other": {
      "mcpServers": { "db": {} }
    },
    "/home/a/proj": {
      "allowedTools": ["x", "{\"db\": 1}"],
      "mcpServers": {
        "db": { "command": "pg" }
      }
    }
  },
  "mcpServers": {
    "db": { "command": "pg" }
  }
}"#;

    #[test]
    fn the_same_name_is_found_where_the_path_leads() {
        assert_eq!(line_of_key(CLAUDE, &["mcpServers", "db"]), Some(15));
        let local = ["projects", "/home/a/proj", "mcpServers", "db"];
        assert_eq!(line_of_key(CLAUDE, &local), Some(10));
        let other = ["projects", "/home/a/other", "mcpServers", "db"];
        assert_eq!(line_of_key(CLAUDE, &other), Some(5));
        assert_eq!(line_of_key(CLAUDE, &["mcpServers", "nope"]), None);
    }

    #[test]
    fn escaped_keys_and_broken_text_do_not_confuse_it() {
        let text = "{\"mcpServers\": {\"a\\\"b\": {}}}";
        assert_eq!(line_of_key(text, &["mcpServers", "a\"b"]), Some(1));
        assert_eq!(
            line_of_key("{\"mcpServers\": {\"a", &["mcpServers", "a"]),
            None
        );
    }
}
