//! The `[mcp_servers.NAME]` tables of a TOML file (linggen's and codex's share the
//! layout), each kept with its position so that a wrong value is reported on its own line
//! and only its own server is skipped.

use std::ops::Range;

use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::{DeTable, DeValue, ValueDeserializer};

use super::entry::{Context, EntryError, EntryResult, Found, line_of};
use super::{ServerConfig, Source};
use crate::mcp::check_server_name;

/// How one program's file is read: the keys it knows (with what each value must be), and
/// what becomes of the rest.
pub(super) struct Format<T> {
    pub keys: &'static [(&'static str, &'static str)],
    /// Whether a key not in `keys` is worth a warning: yes in linggen's own file, no in
    /// another program's, whose other keys are meant for that program.
    pub warn_unknown: bool,
    /// The server from an entry read as `T`, its name already checked.
    pub settings: fn(&str, T, &Source, &Context) -> EntryResult,
}

/// Reads the servers of one TOML file into `found`.
pub(super) fn read<T: DeserializeOwned>(
    source: Source,
    ctx: &Context,
    found: &mut Found,
    format: &Format<T>,
) {
    let path = source.path().to_path_buf();
    let Some(text) = super::entry::read_text(&path, &mut found.warnings) else {
        return;
    };
    let entries = match entries(&text) {
        Ok(entries) => entries,
        Err(why) => {
            found.warnings.push(format!(
                "{}:{why}; none of its MCP servers are loaded",
                path.display()
            ));
            return;
        }
    };
    for entry in entries {
        let name = entry.name.clone();
        if format.warn_unknown {
            found
                .warnings
                .extend(entry.unknown_keys(&text, format.keys, &source));
        }
        match entry.server(&text, &source, ctx, format) {
            Ok(server) => found.servers.push(server),
            Err((why, line)) => found.skip(&path, Some(line), &name, why),
        }
    }
}

/// One server's table, not yet read.
pub(super) struct Entry<'a> {
    pub name: String,
    /// The line naming the server (`[mcp_servers.NAME]` or `NAME = {…}`).
    pub line: usize,
    value: Spanned<DeValue<'a>>,
}

/// The entries under `mcp_servers`, or why the file cannot be read (with its line).
fn entries(text: &str) -> Result<Vec<Entry<'_>>, String> {
    let mut doc = DeTable::parse(text)
        .map_err(|e| {
            let line = e.span().map_or(1, |s| line_of(text, s.start));
            let message: Vec<&str> = e.message().lines().map(str::trim).collect();
            format!("{line}: {}", message.join("; "))
        })?
        .into_inner();
    let Some(servers) = doc.remove("mcp_servers") else {
        return Ok(Vec::new());
    };
    let line = line_of(text, servers.span().start);
    let DeValue::Table(table) = servers.into_inner() else {
        return Err(format!(
            "{line}: `mcp_servers` must be a table, one [mcp_servers.NAME] per server"
        ));
    };
    Ok(table
        .into_iter()
        .map(|(name, value)| Entry {
            line: line_of(text, name.span().start),
            name: name.into_inner().into_owned(),
            value,
        })
        .collect())
}

impl Entry<'_> {
    fn server<T: DeserializeOwned>(
        self,
        text: &str,
        source: &Source,
        ctx: &Context,
        format: &Format<T>,
    ) -> Result<ServerConfig, (EntryError, usize)> {
        let line = self.line;
        check_server_name(&self.name).map_err(|e| (e.into(), line))?;
        let name = self.name.clone();
        let key_lines = self.key_lines(text);
        let table: T = self.parse(text, format.keys)?;
        (format.settings)(&name, table, source, ctx).map_err(|why| {
            let at = why
                .key()
                .and_then(|key| key_lines.iter().find(|(k, _)| k == key))
                .map_or(line, |(_, line)| *line);
            (why, at)
        })
    }

    /// The entry's keys, each with its line.
    fn key_lines(&self, text: &str) -> Vec<(String, usize)> {
        match self.value.get_ref() {
            DeValue::Table(table) => table
                .iter()
                .map(|(k, _)| (k.get_ref().to_string(), line_of(text, k.span().start)))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// A warning for each key not in `keys`, with a near one if there is.
    fn unknown_keys(&self, text: &str, keys: &[(&str, &str)], source: &Source) -> Vec<String> {
        let known: Vec<&str> = keys.iter().map(|(k, _)| *k).collect();
        self.key_lines(text)
            .into_iter()
            .filter(|(key, _)| !known.contains(&key.as_str()))
            .map(|(key, line)| {
                let hint = crate::text::closest(&key, &known)
                    .map(|near| format!("; did you mean `{near}`?"))
                    .unwrap_or_default();
                format!(
                    "{}:{line}: unknown key `mcp_servers.{}.{key}` ignored{hint}",
                    source.path().display(),
                    self.name,
                )
            })
            .collect()
    }

    /// Reads the entry as `T`. A value of the wrong kind is reported by its key with what
    /// `keys` says it must be, not with the deserializer's message, which quotes the value
    /// (an `env` or `headers` value may be a secret); the line is the value's.
    fn parse<T: DeserializeOwned>(
        self,
        text: &str,
        keys: &[(&'static str, &'static str)],
    ) -> Result<T, (EntryError, usize)> {
        let DeValue::Table(table) = self.value.get_ref() else {
            return Err((EntryError::NotATable, self.line));
        };
        let spans: Vec<(String, Range<usize>)> = table
            .iter()
            .map(|(k, v)| (k.get_ref().to_string(), v.span()))
            .collect();
        let entry_line = self.line;
        T::deserialize(ValueDeserializer::from(self.value)).map_err(|e| {
            let Some(span) = e.span() else {
                return (EntryError::Shape(e.message().to_string()), entry_line);
            };
            let line = line_of(text, span.start);
            let key = spans
                .iter()
                .find(|(_, s)| s.contains(&span.start))
                .and_then(|(k, _)| keys.iter().find(|(known, _)| known == k));
            let why = match key {
                Some((key, expected)) => EntryError::Type { key, expected },
                None => EntryError::Shape(e.message().to_string()),
            };
            (why, line)
        })
    }
}
