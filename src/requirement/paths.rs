//! Field paths as requirements name them, and how they relate to the paths
//! of findings.
//!
//! A requirement may write a path in schema notation (`^.spec.rules[*].matches`,
//! as findings print it), without the root (`spec.rules[*].matches`), or
//! dot-separated as OpenShift's `excludedFields` do (`spec.rules.matches`,
//! where a step through a list applies to its items). All three read into
//! the same list of property names: list items (`[*]`) and map values
//! (`{*}`) are steps no consumer names, so they are left out, and the three
//! spellings of one field compare equal.

use std::fmt;

/// A field, as the property names from the object root down to it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FieldPattern(Vec<String>);

impl FieldPattern {
    /// Reads any of the three spellings; `Err` says what is wrong.
    pub fn parse(text: &str) -> Result<FieldPattern, String> {
        let text = text.trim();
        let rest = text.strip_prefix('^').unwrap_or(text);
        let chars: Vec<char> = rest.chars().collect();
        let mut names = Vec::new();
        let mut i = 0;
        // A name may open the path without its dot.
        let mut expect_name = !chars.is_empty() && !matches!(chars[0], '.' | '[' | '{');
        while i < chars.len() || expect_name {
            if expect_name {
                let start = i;
                while i < chars.len() && !matches!(chars[i], '.' | '[' | '{' | ']' | '}') {
                    i += 1;
                }
                let name: String = chars[start..i].iter().collect();
                if name.is_empty() || name.chars().any(char::is_whitespace) {
                    return Err(format!(
                        "{text:?}: expected a field name at character {}",
                        start + 1
                    ));
                }
                names.push(name);
                expect_name = false;
                continue;
            }
            match chars[i] {
                '.' => {
                    i += 1;
                    expect_name = true;
                }
                '[' if chars[i..].starts_with(&['[', '*', ']']) => i += 3,
                '{' if chars[i..].starts_with(&['{', '*', '}']) => i += 3,
                '[' if chars.get(i + 1) == Some(&'"') => {
                    // `["app.kubernetes.io/name"]`: a JSON string, as the
                    // schema paths quote names with dots in them.
                    let from = i + 1;
                    let mut j = from + 1;
                    let mut escaped = false;
                    while j < chars.len() && (escaped || chars[j] != '"') {
                        escaped = !escaped && chars[j] == '\\';
                        j += 1;
                    }
                    let quoted: String = chars[from..=j.min(chars.len() - 1)].iter().collect();
                    let name: String = serde_json::from_str(&quoted)
                        .map_err(|_| format!("{text:?}: unterminated quoted name"))?;
                    if chars.get(j + 1) != Some(&']') {
                        return Err(format!("{text:?}: expected ] after a quoted name"));
                    }
                    names.push(name);
                    i = j + 2;
                }
                c => {
                    return Err(format!(
                        "{text:?}: unexpected {c:?} at character {}; write spec.a.b, spec.list[*].c or ^.spec.a",
                        i + 1
                    ));
                }
            }
        }
        if names.is_empty() {
            return Err(format!("{text:?}: a field path names at least one field"));
        }
        Ok(FieldPattern(names))
    }

    /// Whether `other` is this field or lies below it.
    pub fn covers(&self, other: &FieldPattern) -> bool {
        other.0.starts_with(&self.0)
    }

    /// Whether one of the two lies on the other's way: a change to either
    /// reaches a consumer of the other (a field removed above the one they
    /// read, or a new rule inside the object they read).
    pub fn related(&self, other: &FieldPattern) -> bool {
        self.covers(other) || other.covers(self)
    }

    /// The property names, root first.
    pub fn names(&self) -> &[String] {
        &self.0
    }
}

/// Dot-separated, quoting a name that holds a dot as schema paths do.
impl fmt::Display for FieldPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, name) in self.0.iter().enumerate() {
            if name.contains(['.', '[', ']', '{', '}', '"', '^']) {
                write!(f, "[{name:?}]")?;
            } else {
                if i > 0 {
                    f.write_str(".")?;
                }
                f.write_str(name)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> FieldPattern {
        FieldPattern::parse(text).expect(text)
    }

    #[test]
    fn the_three_spellings_of_a_field_are_one_field() {
        let want = p("spec.rules.matches");
        assert_eq!(p("^.spec.rules[*].matches"), want);
        assert_eq!(p("spec.rules[*].matches"), want);
        assert_eq!(p(".spec.rules.matches"), want);
        assert_eq!(p("^.metadata.labels{*}"), p("metadata.labels"));
        assert_eq!(
            p("^.spec[\"app.kubernetes.io/name\"].x").names(),
            ["spec", "app.kubernetes.io/name", "x"]
        );
        assert_eq!(p("^.spec[\"a.b\"]").to_string(), "spec[\"a.b\"]");
    }

    #[test]
    fn malformed_paths_say_what_is_wrong() {
        for bad in ["", "^", "spec..x", "spec.[0]", "spec[\"x", "a b"] {
            assert!(FieldPattern::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ancestors_and_descendants_are_related_siblings_are_not() {
        let matches = p("spec.rules.matches");
        assert!(matches.related(&p("^.spec.rules")));
        assert!(matches.related(&p("^.spec.rules[*].matches[*].path")));
        assert!(!matches.related(&p("^.spec.rules[*].filters")));
        assert!(!matches.related(&p("^.spec.rulesExtra")));
        assert!(p("spec.rules").covers(&matches));
        assert!(!matches.covers(&p("spec.rules")));
    }
}
