//! Colour themes: which colour each rendering role gets, and which syntect theme colours
//! fenced code. Built-ins are embedded; `$LINGGEN_HOME/themes/<name>.toml` overrides or
//! adds to them. Format: `doc/rendering.md`.

use std::path::{Path, PathBuf};

use crossterm::style::Color;
use serde::Deserialize;

/// The theme used when none is configured, and the fallback when one fails to load.
pub const DEFAULT_THEME: &str = "dark";

const BUILT_IN: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    ("solarized", include_str!("../../themes/solarized.toml")),
];

/// syntect's bundled themes. Checked at load time so a typo is reported with the theme
/// file, not silently replaced when the first code block is drawn.
pub const SYNTAX_THEMES: &[&str] = &[
    "base16-ocean.dark",
    "base16-eighties.dark",
    "base16-mocha.dark",
    "base16-ocean.light",
    "InspiredGitHub",
    "Solarized (dark)",
    "Solarized (light)",
];

/// How deep `extends` chains may go; deeper is almost surely a cycle.
const MAX_EXTENDS_DEPTH: usize = 8;

/// Declares the colour roles once, so the complete and the partial (file) form can't drift.
macro_rules! roles {
    ($($role:ident),* $(,)?) => {
        /// The colour of every rendering role.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct Colors {
            $(pub $role: Color,)*
        }

        /// Roles as a theme file sets them: any may be missing and comes from the base.
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct PartialColors {
            $($role: Option<ThemeColor>,)*
        }

        impl PartialColors {
            fn over(&self, base: Colors) -> Colors {
                Colors {
                    $($role: self.$role.map_or(base.$role, |c| c.0),)*
                }
            }

            fn complete(&self) -> Result<Colors, String> {
                Ok(Colors {
                    $($role: self.$role.map(|c| c.0).ok_or(concat!(
                        "missing colour `", stringify!($role), "`"
                    ))?,)*
                })
            }
        }

        impl Colors {
            /// Every role in the terminal's default colour: the last-resort theme.
            pub fn uncoloured() -> Self {
                Colors { $($role: Color::Reset,)* }
            }
        }
    };
}

roles!(
    heading,
    strong,
    emphasis,
    code_inline,
    quote,
    link,
    list_bullet,
    table_border,
    dim,
    thinking,
    tool,
    tool_ok,
    tool_error,
    warning,
    diff_add,
    diff_del,
    diff_hunk,
    diff_header,
    prompt,
);

/// A loaded, complete theme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Theme {
    pub name: String,
    /// A name from [`SYNTAX_THEMES`].
    pub syntax_theme: String,
    pub colors: Colors,
}

impl Theme {
    /// Needs no file and cannot fail: used only if even the built-in `dark` is unusable.
    pub fn uncoloured() -> Self {
        Theme {
            name: "uncoloured".to_string(),
            syntax_theme: SYNTAX_THEMES[0].to_string(),
            colors: Colors::uncoloured(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    extends: Option<String>,
    syntax_theme: Option<String>,
    #[serde(default)]
    colors: PartialColors,
}

/// A colour as written in a theme: validated while deserializing, so toml's error points
/// at the offending line.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(try_from = "ColorSpec")]
struct ThemeColor(Color);

#[derive(Deserialize)]
#[serde(untagged)]
enum ColorSpec {
    Index(i64),
    Text(String),
}

impl TryFrom<ColorSpec> for ThemeColor {
    type Error = String;

    fn try_from(spec: ColorSpec) -> Result<Self, String> {
        match spec {
            ColorSpec::Index(n) => u8::try_from(n)
                .map(|n| ThemeColor(Color::AnsiValue(n)))
                .map_err(|_| format!("colour index {n} is outside 0-255")),
            ColorSpec::Text(s) => parse_color(&s).map(ThemeColor),
        }
    }
}

/// Parses `"red"`, `"bright_blue"`, `"#rrggbb"`, `"default"` or `"42"`.
pub(in crate::repl) fn parse_color(s: &str) -> Result<Color, String> {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix('#') {
        return parse_hex(hex).ok_or_else(|| format!("`{s}` is not a #rrggbb colour"));
    }
    if let Ok(n) = s.parse::<u8>() {
        return Ok(Color::AnsiValue(n));
    }
    let name = s.to_ascii_lowercase().replace(['-', ' '], "_");
    let index = match name.as_str() {
        "default" | "reset" => return Ok(Color::Reset),
        "black" => 0,
        "red" => 1,
        "green" => 2,
        "yellow" => 3,
        "blue" => 4,
        "magenta" => 5,
        "cyan" => 6,
        "white" => 7,
        "bright_black" | "gray" | "grey" => 8,
        "bright_red" => 9,
        "bright_green" => 10,
        "bright_yellow" => 11,
        "bright_blue" => 12,
        "bright_magenta" => 13,
        "bright_cyan" => 14,
        "bright_white" => 15,
        _ => {
            return Err(format!(
                "unknown colour `{s}` (use a name like \"red\" or \"bright_blue\", \"#rrggbb\", or 0-255)"
            ));
        }
    };
    Ok(Color::AnsiValue(index))
}

fn parse_hex(hex: &str) -> Option<Color> {
    if hex.len() != 6 || !hex.is_ascii() {
        return None;
    }
    let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
    Some(Color::Rgb {
        r: byte(0)?,
        g: byte(2)?,
        b: byte(4)?,
    })
}

fn user_dir(linggen_home: &Path) -> PathBuf {
    linggen_home.join("themes")
}

fn built_in(name: &str) -> Option<&'static str> {
    BUILT_IN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

/// Why a theme cannot be used; callers fall back to [`DEFAULT_THEME`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThemeError {
    #[error("no theme `{name}` (available: {})", available.join(", "))]
    NotFound {
        name: String,
        available: Vec<String>,
    },
    /// A file that cannot be read or does not hold a theme: the message names the file and,
    /// for syntax errors, the line.
    #[error("{0}")]
    Invalid(String),
}

/// Loads theme `name`: the user's file if there is one, else the built-in.
pub fn load(name: &str, linggen_home: &Path) -> Result<Theme, ThemeError> {
    resolve(name, linggen_home, false, 0)
}

/// [`load`], falling back to `dark` (and, failing that, no colours). The second value is
/// the warning to show when the requested theme could not be used.
pub fn load_or_default(name: &str, linggen_home: &Path) -> (Theme, Option<String>) {
    match load(name, linggen_home) {
        Ok(theme) => (theme, None),
        Err(err) => {
            let fallback = load(DEFAULT_THEME, linggen_home)
                .or_else(|_| resolve(DEFAULT_THEME, linggen_home, true, 0))
                .unwrap_or_else(|_| Theme::uncoloured());
            let warning = format!("{err}; using theme `{}`", fallback.name);
            (fallback, Some(warning))
        }
    }
}

fn resolve(
    name: &str,
    home: &Path,
    built_in_only: bool,
    depth: usize,
) -> Result<Theme, ThemeError> {
    if depth > MAX_EXTENDS_DEPTH {
        return Err(ThemeError::Invalid(format!(
            "theme `{name}`: `extends` chain is too deep (a cycle?)"
        )));
    }
    let user_path = user_dir(home).join(format!("{name}.toml"));
    let (origin, text) = if !built_in_only && user_path.is_file() {
        let text = std::fs::read_to_string(&user_path).map_err(|e| {
            ThemeError::Invalid(format!("cannot read theme {}: {e}", user_path.display()))
        })?;
        (user_path.display().to_string(), text)
    } else if let Some(text) = built_in(name) {
        (format!("built-in theme {name}.toml"), text.to_string())
    } else {
        return Err(ThemeError::NotFound {
            name: name.to_string(),
            available: available(home),
        });
    };
    let file: ThemeFile =
        toml::from_str(&text).map_err(|e| ThemeError::Invalid(format!("{origin}: {e}")))?;
    let is_root = built_in_only_root(name, &origin, &file);
    let base = if is_root {
        None
    } else {
        let base_name = file.extends.as_deref().unwrap_or(DEFAULT_THEME);
        // A user theme extending its own name builds on the built-in it overrides.
        let only_built_in = built_in_only || base_name == name;
        Some(resolve(base_name, home, only_built_in, depth + 1)?)
    };
    let colors = match &base {
        Some(base) => file.colors.over(base.colors),
        None => file
            .colors
            .complete()
            .map_err(|e| ThemeError::Invalid(format!("{origin}: {e}")))?,
    };
    let syntax_theme = match (&file.syntax_theme, &base) {
        (Some(s), _) => s.clone(),
        (None, Some(base)) => base.syntax_theme.clone(),
        (None, None) => {
            return Err(ThemeError::Invalid(format!(
                "{origin}: missing `syntax_theme`"
            )));
        }
    };
    if !SYNTAX_THEMES.contains(&syntax_theme.as_str()) {
        return Err(ThemeError::Invalid(format!(
            "{origin}: unknown syntax_theme `{syntax_theme}` (one of: {})",
            SYNTAX_THEMES.join(", ")
        )));
    }
    Ok(Theme {
        name: name.to_string(),
        syntax_theme,
        colors,
    })
}

/// The built-in default without `extends` is the root every other theme builds on.
fn built_in_only_root(name: &str, origin: &str, file: &ThemeFile) -> bool {
    name == DEFAULT_THEME && origin.starts_with("built-in") && file.extends.is_none()
}

/// Names of all themes: built-ins and the user's, sorted, without duplicates.
pub fn available(linggen_home: &Path) -> Vec<String> {
    let mut names: Vec<String> = BUILT_IN.iter().map(|(n, _)| n.to_string()).collect();
    if let Ok(entries) = std::fs::read_dir(user_dir(linggen_home)) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "toml")
                && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
            {
                names.push(stem.to_string());
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("themes")).unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join("themes").join(name), text).unwrap();
        }
        dir
    }

    #[test]
    fn every_built_in_loads_completely() {
        let home = home_with(&[]);
        for (name, _) in BUILT_IN {
            let theme = load(name, home.path()).unwrap();
            assert_eq!(theme.name, *name);
        }
        assert_eq!(available(home.path()), vec!["dark", "light", "solarized"]);
    }

    #[test]
    fn colours_parse_from_names_hex_and_indices() {
        assert_eq!(parse_color("red"), Ok(Color::AnsiValue(1)));
        assert_eq!(parse_color("Bright-Blue"), Ok(Color::AnsiValue(12)));
        assert_eq!(parse_color("grey"), Ok(Color::AnsiValue(8)));
        assert_eq!(parse_color("default"), Ok(Color::Reset));
        assert_eq!(parse_color("208"), Ok(Color::AnsiValue(208)));
        assert_eq!(
            parse_color("#FF8000"),
            Ok(Color::Rgb {
                r: 255,
                g: 128,
                b: 0
            })
        );
        assert!(parse_color("#ff80").is_err());
        assert!(parse_color("ultraviolet").is_err());
    }

    #[test]
    fn a_user_theme_extends_a_built_in_and_is_listed() {
        let home = home_with(&[(
            "mine.toml",
            "extends = \"light\"\n[colors]\nheading = \"#ff0000\"\nprompt = 99\n",
        )]);
        let light = load("light", home.path()).unwrap();
        let mine = load("mine", home.path()).unwrap();
        assert_eq!(mine.colors.heading, Color::Rgb { r: 255, g: 0, b: 0 });
        assert_eq!(mine.colors.prompt, Color::AnsiValue(99));
        assert_eq!(mine.colors.link, light.colors.link);
        assert_eq!(mine.syntax_theme, "InspiredGitHub");
        assert!(available(home.path()).contains(&"mine".to_string()));
    }

    #[test]
    fn a_user_file_overrides_the_built_in_of_the_same_name() {
        let home = home_with(&[("dark.toml", "[colors]\nheading = \"red\"\n")]);
        let dark = load("dark", home.path()).unwrap();
        assert_eq!(dark.colors.heading, Color::AnsiValue(1));
        assert_eq!(dark.syntax_theme, "base16-ocean.dark");
    }

    #[test]
    fn a_broken_theme_names_file_and_line_and_falls_back_to_dark() {
        let home = home_with(&[("bad.toml", "[colors]\nheading = \"red\"\nlink = \"nope\"\n")]);
        let err = load("bad", home.path()).unwrap_err().to_string();
        assert!(err.contains("bad.toml"), "{err}");
        assert!(err.contains("line 3"), "{err}");
        assert!(err.contains("unknown colour `nope`"), "{err}");
        let (theme, warning) = load_or_default("bad", home.path());
        assert_eq!(theme.name, "dark");
        assert!(warning.unwrap().contains("bad.toml"));
    }

    #[test]
    fn typos_unknown_themes_and_cycles_are_errors() {
        let home = home_with(&[
            ("typo.toml", "[colors]\nheadnig = \"red\"\n"),
            ("syn.toml", "syntax_theme = \"Monokai\"\n"),
            ("a.toml", "extends = \"b\"\n"),
            ("b.toml", "extends = \"a\"\n"),
        ]);
        let error = |name: &str| load(name, home.path()).unwrap_err().to_string();
        assert!(error("typo").contains("headnig"));
        assert!(error("syn").contains("Monokai"));
        assert!(error("a").contains("cycle"));
        assert!(error("missing").contains("available: a, b, dark"));
    }
}
