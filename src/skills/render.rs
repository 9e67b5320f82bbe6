//! What the model sees of skills: a skill's body with its arguments substituted, and the
//! budgeted one-line-per-skill catalog (progressive disclosure: bodies load on use).

use super::{Skill, SkillSet};

impl Skill {
    /// The body with the person's or model's arguments substituted: `$ARGUMENTS` is the
    /// whole string, `$1`, `$2`… the whitespace-separated words (`$ARGUMENTS[0]`… too).
    /// When the body has no placeholder and `args` is not empty, the arguments are appended
    /// as a final `ARGUMENTS: …` line so they are never lost.
    ///
    /// Words are split on whitespace, with `"double quotes"` grouping a word that contains
    /// spaces. A missing word renders as nothing. `$0` and `$` before anything else are left
    /// as written: bodies often contain shell snippets (`$HOME`, `$?`).
    pub fn render(&self, args: &str) -> String {
        render_body(&self.body, args)
    }

    /// [`Skill::render`] inside a session: first Claude Code's variables are replaced,
    /// `${CLAUDE_SESSION_ID}` by `session_id` and `${CLAUDE_SKILL_DIR}` by the skill's
    /// folder (left as written where there is none: a built-in skill, a command), then the
    /// arguments — so an argument that spells a variable stays as typed.
    pub fn render_for(&self, args: &str, session_id: &str) -> String {
        let mut body = self.body.replace(SESSION_ID, session_id);
        if let Some(dir) = &self.dir {
            body = body.replace(SKILL_DIR, &dir.display().to_string());
        }
        render_body(&body, args)
    }
}

/// The session's id in a body, as Claude Code writes it.
const SESSION_ID: &str = "${CLAUDE_SESSION_ID}";
/// The skill's own folder in a body, as Claude Code writes it.
const SKILL_DIR: &str = "${CLAUDE_SKILL_DIR}";

/// `body` with the arguments substituted, as [`Skill::render`] says.
fn render_body(body: &str, args: &str) -> String {
    let args = args.trim();
    let words = split_words(args);
    let (mut out, substituted) = substitute(body, args, &words);
    if !substituted && !args.is_empty() {
        out.push_str("\n\nARGUMENTS: ");
        out.push_str(args);
    }
    out
}

/// Replaces the placeholders; the flag says whether there were any.
fn substitute(body: &str, args: &str, words: &[String]) -> (String, bool) {
    let word = |i: usize| words.get(i).map_or("", String::as_str);
    let mut out = String::with_capacity(body.len() + args.len());
    let mut substituted = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match placeholder(after) {
            Some((Placeholder::All, len)) => {
                out.push_str(args);
                rest = &after[len..];
                substituted = true;
            }
            Some((Placeholder::Word(i), len)) => {
                out.push_str(word(i));
                rest = &after[len..];
                substituted = true;
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    (out, substituted)
}

enum Placeholder {
    All,
    /// A 0-based word index.
    Word(usize),
}

/// Recognises the placeholder right after a `$`, with the length it spans.
fn placeholder(after: &str) -> Option<(Placeholder, usize)> {
    if let Some(tail) = after.strip_prefix("ARGUMENTS") {
        let name_len = "ARGUMENTS".len();
        if let Some(inner) = tail.strip_prefix('[') {
            let digits = leading_digits(inner);
            if !digits.is_empty() && inner[digits.len()..].starts_with(']') {
                let index = digits.parse().ok()?;
                return Some((Placeholder::Word(index), name_len + digits.len() + 2));
            }
        }
        // `$ARGUMENTS_DIR` is some other variable, not the placeholder.
        let continues = tail
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        return (!continues).then_some((Placeholder::All, name_len));
    }
    let digits = leading_digits(after);
    let n: usize = digits.parse().ok()?;
    // `$1` is the first word, as in Claude Code's commands and in shells.
    (n >= 1).then(|| (Placeholder::Word(n - 1), digits.len()))
}

fn leading_digits(s: &str) -> &str {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    &s[..end]
}

/// Whitespace-separated words; `"a b"` is one word `a b` (an unclosed quote runs to the end).
pub fn split_words(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut quoted = false;
    for c in args.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            c => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(current);
    }
    words
}

impl SkillSet {
    /// The catalog for the model: one `- name: description` line per model-visible skill,
    /// cut (with a final `… and N more`) to stay within `max_chars`. Empty when there are
    /// no model-visible skills.
    ///
    /// Only names and descriptions are listed, so many skills cost little context; a body is
    /// loaded when the skill is invoked. Descriptions are folded onto one line. When even the
    /// final `… and N more` line does not fit, the catalog is empty.
    pub fn catalog(&self, max_chars: usize) -> String {
        self.catalog_of(max_chars, |_| true)
    }

    /// [`SkillSet::catalog`] of the model-visible skills `keep` admits: an agent's
    /// `skills:` list narrows what its runs are offered.
    pub fn catalog_of(&self, max_chars: usize, keep: impl Fn(&Skill) -> bool) -> String {
        let mut visible: Vec<&Skill> = self.model_visible().filter(|s| keep(s)).collect();
        visible.sort_by(|a, b| a.name.cmp(&b.name));
        let lines: Vec<String> = visible
            .iter()
            .map(|s| {
                let description = s.description.split_whitespace().collect::<Vec<_>>();
                format!("- {}: {}", s.name, description.join(" "))
            })
            .collect();
        // Each line costs its characters plus a newline between lines.
        let cost = |line: &str| line.chars().count() + 1;
        let total: usize = lines
            .iter()
            .map(|l| cost(l))
            .sum::<usize>()
            .saturating_sub(1);
        if total <= max_chars {
            return lines.join("\n");
        }
        let more = |n: usize| format!("- … and {n} more (use the Skill tool with the exact name)");
        let mut used = 0;
        let mut kept = 0;
        for (i, line) in lines.iter().enumerate() {
            let remaining = lines.len() - i - 1;
            if used + cost(line) + more(remaining).chars().count() > max_chars {
                break;
            }
            used += cost(line);
            kept += 1;
        }
        let tail = more(lines.len() - kept);
        if used + tail.chars().count() > max_chars {
            return String::new();
        }
        let mut out: Vec<&str> = lines[..kept].iter().map(String::as_str).collect();
        out.push(&tail);
        out.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::SkillSource;
    use std::collections::BTreeMap;

    fn skill(name: &str, description: &str, body: &str) -> Skill {
        Skill {
            name: name.into(),
            description: description.into(),
            argument_hint: None,
            disable_model_invocation: false,
            user_invocable: true,
            allowed_tools: Vec::new(),
            model: None,
            fork: false,
            agent: None,
            trigger: None,
            body: body.into(),
            dir: None,
            path: format!("built-in skills/{name}/SKILL.md"),
            source: SkillSource::Builtin,
            kind: crate::skills::SkillKind::Skill,
            extra: BTreeMap::new(),
        }
    }

    fn render(body: &str, args: &str) -> String {
        skill("x", "d", body).render(args)
    }

    #[test]
    fn claude_codes_variables_before_the_arguments() {
        let body = "Run ${CLAUDE_SKILL_DIR}/x.sh $1 > /tmp/${CLAUDE_SESSION_ID}.log";
        let mut with_dir = skill("x", "d", body);
        with_dir.dir = Some("/home/me/.claude/skills/x".into());
        assert_eq!(
            with_dir.render_for("${CLAUDE_SESSION_ID}", "s-1"),
            "Run /home/me/.claude/skills/x/x.sh ${CLAUDE_SESSION_ID} > /tmp/s-1.log"
        );
        // Without a folder (a built-in skill, a command) the variable stays as written.
        assert_eq!(
            skill("x", "d", body).render_for("a", "s-1"),
            "Run ${CLAUDE_SKILL_DIR}/x.sh a > /tmp/s-1.log"
        );
    }

    #[test]
    fn whole_arguments() {
        assert_eq!(
            render("Review $ARGUMENTS now", " HEAD~1 src "),
            "Review HEAD~1 src now"
        );
        assert_eq!(render("Review $ARGUMENTS.", ""), "Review .");
    }

    #[test]
    fn positional_words() {
        let body = "a=$1 b=$2 c=$3 first=$ARGUMENTS[0] second=$ARGUMENTS[1]";
        assert_eq!(
            render(body, "one \"two words\""),
            "a=one b=two words c= first=one second=two words"
        );
        assert_eq!(render("$10", "1 2 3 4 5 6 7 8 9 ten"), "ten");
    }

    #[test]
    fn other_dollars_are_left_alone() {
        let body = "echo $HOME $? $0 $ $ARGUMENTS_DIR cost $";
        assert_eq!(render(body, ""), body);
        // Not an index, so `$ARGUMENTS` followed by the text `[x]`.
        assert_eq!(render("$ARGUMENTS[x]", "a"), "a[x]");
    }

    #[test]
    fn appends_arguments_without_placeholder() {
        assert_eq!(
            render("Do it.", "fast please"),
            "Do it.\n\nARGUMENTS: fast please"
        );
        assert_eq!(render("Do it.", "  "), "Do it.");
        // A placeholder that renders empty still counts as used.
        assert_eq!(render("Use $2.", "only"), "Use .");
    }

    #[test]
    fn words() {
        assert_eq!(
            split_words("  a  \"b c\" d\"e f\" \"\" "),
            vec!["a", "b c", "de f", ""]
        );
        assert_eq!(split_words("\"open"), vec!["open"]);
        assert!(split_words("").is_empty());
    }

    fn set(skills: Vec<Skill>) -> SkillSet {
        SkillSet {
            skills,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn catalog_lists_model_visible_sorted() {
        let mut hidden = skill("hidden", "h", "");
        hidden.disable_model_invocation = true;
        let s = set(vec![
            skill("zeta", "Last\n  one", ""),
            hidden,
            skill("alpha", "First", ""),
        ]);
        assert_eq!(s.catalog(1000), "- alpha: First\n- zeta: Last one");
        assert_eq!(set(Vec::new()).catalog(1000), "");
    }

    #[test]
    fn catalog_truncates_within_budget() {
        let skills: Vec<Skill> = (0..20)
            .map(|i| skill(&format!("skill-{i:02}"), "does a thing", ""))
            .collect();
        let s = set(skills);
        let full = s.catalog(10_000);
        assert_eq!(full.lines().count(), 20);
        let budget = 150;
        let cut = s.catalog(budget);
        assert!(
            cut.chars().count() <= budget,
            "{} > {budget}",
            cut.chars().count()
        );
        let lines: Vec<&str> = cut.lines().collect();
        let shown = lines.len() - 1;
        assert!(shown >= 1);
        assert_eq!(
            lines[shown],
            format!(
                "- … and {} more (use the Skill tool with the exact name)",
                20 - shown
            )
        );
        assert_eq!(lines[0], "- skill-00: does a thing");
        assert_eq!(s.catalog(10), "");
    }
}
