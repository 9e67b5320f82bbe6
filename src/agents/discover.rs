//! Finding agents: `*.md` directly in each agent folder (highest priority first), then the
//! built-ins compiled into the binary. `README.md` files are documentation, not agents.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{AgentDirs, AgentSet, AgentSource, AgentSpec};
// Agent files are discovered like skills: the same folder handling and file-size cap.
use crate::skills::discover::{MAX_FILE_BYTES, dedup_roots, read_capped, read_folder};

/// The shipped agents: (file name, text).
const BUILTIN: &[(&str, &str)] = &[
    ("coder.md", include_str!("../../agents/coder.md")),
    ("ling.md", include_str!("../../agents/ling.md")),
];

/// The on-disk agent folders, highest priority first, without duplicates.
pub(super) fn roots(dirs: &AgentDirs) -> Vec<(PathBuf, AgentSource)> {
    let mut roots = vec![
        (dirs.linggen_home.join("agents"), AgentSource::Personal),
        (
            dirs.root.join(".linggen").join("agents"),
            AgentSource::ProjectHidden,
        ),
        (dirs.root.join("agents"), AgentSource::Project),
    ];
    dedup_roots(&mut roots);
    roots
}

pub(super) fn discover(dirs: &AgentDirs) -> AgentSet {
    let mut by_name: BTreeMap<String, AgentSpec> = BTreeMap::new();
    let mut warnings = Vec::new();
    let mut files: Vec<(String, Result<String, String>, AgentSource)> = Vec::new();
    for (root, source) in roots(dirs) {
        for file in agent_files(&root, &mut warnings) {
            let path = file.display().to_string();
            match read_capped(&file, MAX_FILE_BYTES) {
                Ok(Some(text)) => files.push((path, Ok(text), source)),
                // Removed between listing and reading.
                Ok(None) => {}
                Err(warning) => files.push((path, Err(warning.to_string()), source)),
            }
        }
    }
    for (file, text) in BUILTIN {
        let path = format!("built-in agents/{file}");
        files.push((path, Ok((*text).to_string()), AgentSource::Builtin));
    }
    for (path, text, source) in files {
        let parsed = text.and_then(|t| AgentSpec::parse_with_warnings(&path, &t, source));
        match parsed {
            Ok((spec, spec_warnings)) => {
                warnings.extend(spec_warnings);
                match by_name.get(&spec.name) {
                    // Two files of one folder claiming one name is a mistake; an earlier
                    // folder overriding a later one (or a built-in) is the point.
                    Some(first) if first.source == spec.source => warnings.push(format!(
                        "{path}:1: agent `{}` is already defined in {}, so this file is \
                         ignored; give it another `name:`",
                        spec.name, first.path
                    )),
                    Some(_) => {}
                    None => {
                        by_name.insert(spec.name.clone(), spec);
                    }
                }
            }
            Err(warning) => warnings.push(warning),
        }
    }
    AgentSet {
        agents: by_name.into_values().collect(),
        warnings,
    }
}

/// `*.md` files directly in `root` (not `README.md`), sorted. A missing folder is normal;
/// an unreadable one is a warning.
fn agent_files(root: &Path, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let Some(entries) = read_folder(root, "agents", "`<name>.md` files", warnings) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| is_agent_file(path) && path.is_file())
        .collect();
    files.sort();
    files
}

fn is_agent_file(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let is_md = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("md"));
    is_md && !name.eq_ignore_ascii_case("readme.md") && !name.starts_with('.')
}

/// The shipped agent files: (file name, text).
pub fn builtin_sources() -> &'static [(&'static str, &'static str)] {
    BUILTIN
}
