//! CEL rules (`x-kubernetes-validations`), matched by their rule text.

use serde_json::Value;

use super::{FieldCheck, Node};
use crate::cel::partial::{CannotFail, can_error, cannot_fail_given, reads_alike};
use crate::cel::rewrite::{canonical, guarded_rewrite};
use crate::compare::Severity;
use crate::compare::messages::{EVALUATION_ERRORS, TIGHTENED, TIGHTENED_FIX};
use crate::compare::witness;
use crate::json::json_eq;

impl Node<'_, '_> {
    pub(super) fn x_validations(&mut self, c: &FieldCheck) {
        if !self.changed("x-kubernetes-validations") {
            return;
        }
        let old_rules = rules(self.old.keyword("x-kubernetes-validations"));
        let new_rules = rules(self.new.keyword("x-kubernetes-validations"));
        let removed: Vec<&Rule> = old_rules
            .iter()
            .filter(|r| !new_rules.iter().any(|n| n.key == r.key))
            .collect();
        let added: Vec<&Rule> = new_rules
            .iter()
            .filter(|r| !old_rules.iter().any(|o| o.key == r.key))
            .collect();
        // One rule out and one in at the same node reads best as a change.
        let pair = removed.len() == 1 && added.len() == 1;
        // The old rules every stored object passed. Not between two served
        // versions: an object written through the other version passed its
        // rules as that version saw it, not as this one does. Transition
        // rules only ever ran on updates.
        let held: Vec<&str> = if self.ctx.cross_version {
            Vec::new()
        } else {
            old_rules
                .iter()
                .filter(|r| !r.uses_old_self())
                .map(|r| r.rule.as_str())
                .collect()
        };
        for rule in &added {
            let transition = rule.uses_old_self();
            // A rule no object valid under the old schema can fail cannot
            // break a stored object or its re-apply. Between two served
            // versions (conversion None) the "old" schema is the other
            // version's: an object written through it and read through this
            // one is pruned and defaulted by this one, as the evaluation
            // assumes (tests/live/scan.rs).
            let harmless = cannot_fail_given(
                &rule.rule,
                &held,
                self.old,
                self.new,
                self.field_path.segments().is_empty(),
            )
            .or_else(|| self.guarded_old_rule(&rule.rule, &held));
            let severity = Severity::info_if(harmless.is_some());
            // An error names a value that shows it, when one is found. Not
            // at the root, whose rules read the object's metadata.
            let witness =
                if harmless.is_none() && !transition && !self.field_path.segments().is_empty() {
                    witness::for_rule(self.old, self.new, &rule.raw)
                } else {
                    None
                };
            let kind = if let Some(why) = &harmless {
                format!(
                    "it cannot fail on any object valid under the old schema ({}), so stored objects and their \
re-applies keep passing; only new writes that use what is new are checked",
                    why.reason()
                )
            } else if transition {
                "transition rule (uses oldSelf): it is never ratcheted, so every update of an object that \
fails it is rejected"
                    .to_string()
            } else {
                // Only a rule that can raise an evaluation error on a
                // stored value gets the clause: most rules only compare
                // fields that every stored object has, and then an
                // unchanged update is ratcheted like any keyword.
                let errors = if can_error(
                    &rule.rule,
                    self.old,
                    self.new,
                    self.field_path.segments().is_empty(),
                ) {
                    format!("; {EVALUATION_ERRORS}")
                } else {
                    String::new()
                };
                // A rewrite of an old rule (one with the same message)
                // that no value shows wrong: say what would have to hold.
                let replaced = removed
                    .iter()
                    .copied()
                    .find(|r| r.message.is_some() && r.message == rule.message);
                let undecided = match replaced {
                    Some(r) if witness.is_none() && !r.uses_old_self() => format!(
                        "; it rewrites the old rule{}: stored objects passed that one and keep passing this one \
only if every object the old rule accepts passes it too, which the analysis could not decide",
                        if pair {
                            String::new()
                        } else {
                            format!(" `{}` (same message)", short_rule(&r.rule))
                        }
                    ),
                    _ => String::new(),
                };
                format!(
                    "objects that fail it {TIGHTENED}{}{errors}{undecided}",
                    self.ratcheting()
                )
            };
            let what = if pair {
                format!(
                    "CEL rule changed `{}` -> {}{}",
                    short_rule(&removed[0].rule),
                    rule.shown(),
                    witness::shown(witness.as_ref())
                )
            } else {
                format!(
                    "CEL rule added {}{}",
                    rule.shown(),
                    witness::shown(witness.as_ref())
                )
            };
            let old = if pair {
                Some(removed[0].raw.clone())
            } else {
                None
            };
            let fix = if harmless.is_some() {
                String::new()
            } else {
                format!("; {TIGHTENED_FIX}")
            };
            self.emit(
                c.check,
                severity,
                format!("{what}: {kind}{fix}"),
                old.as_ref(),
                Some(&rule.raw),
            );
            self.witnessed(witness);
        }
        if !pair && !self.ctx.options.x_validations_allow_removal {
            for rule in &removed {
                self.emit(
                    c.check,
                    Severity::Error,
                    format!(
                        "CEL rule removed {} (xValidations.allowRemoval is false)",
                        rule.shown()
                    ),
                    Some(&rule.raw),
                    None,
                );
            }
        }
        for new_rule in &new_rules {
            let Some(old_rule) = old_rules.iter().find(|o| o.key == new_rule.key) else {
                continue;
            };
            if old_rule.optional_old_self != new_rule.optional_old_self {
                self.emit(
                    c.check,
                    Severity::Error,
                    format!(
                        "optionalOldSelf changed on CEL rule `{}`: the rule now runs on {} too, which changes \
which writes it rejects",
                        short_rule(&new_rule.rule),
                        if new_rule.optional_old_self { "creates" } else { "updates only" }
                    ),
                    Some(&old_rule.raw),
                    Some(&new_rule.raw),
                );
            } else if old_rule.rule != new_rule.rule {
                self.emit(
                    c.check,
                    Severity::Info,
                    format!(
                        "CEL rule `{}` rewritten as `{}`: the same expression (only whitespace, comments, quotes or parentheses \
differ), so what it accepts is unchanged",
                        short_rule(&old_rule.rule),
                        short_rule(&new_rule.rule)
                    ),
                    Some(&old_rule.raw),
                    Some(&new_rule.raw),
                );
            } else if !json_eq(&old_rule.raw, &new_rule.raw) {
                self.emit(
                    c.check,
                    Severity::Info,
                    format!(
                        "message, reason or fieldPath of CEL rule `{}` changed (what it accepts is unchanged)",
                        short_rule(&new_rule.rule)
                    ),
                    Some(&old_rule.raw),
                    Some(&new_rule.raw),
                );
            }
        }
    }
}

/// One `x-kubernetes-validations` entry.
impl Node<'_, '_> {
    /// A rule that is an old rule of this node with `has()` guards added
    /// where the old rule could not evaluate without them: every stored
    /// object passed the old one, so it passes this one
    /// (`crate::cel::rewrite`).
    fn guarded_old_rule(&self, rule: &str, held: &[&str]) -> Option<CannotFail> {
        if !reads_alike(self.old, self.new) {
            return None;
        }
        held.iter().find_map(|old| {
            let guards = guarded_rewrite(rule, old)?;
            Some(CannotFail {
                facts: vec![format!(
                    "it is the old rule `{}` with {} added where the old rule already failed to evaluate \
without {}, so every object that passed it passes this one",
                    short_rule(old),
                    guards.join(", "),
                    if guards.len() == 1 { "it" } else { "them" }
                )],
            })
        })
    }
}

struct Rule {
    rule: String,
    /// The rule's tokens, for matching a rule across releases: the same
    /// expression reformatted is the same rule.
    key: String,
    /// The rule's own `message`: what its author says it enforces, which
    /// reads better in a report than the expression alone.
    message: Option<String>,
    optional_old_self: bool,
    raw: Value,
}

impl Rule {
    /// The rule as a report shows it: `` `expression` ("message") ``.
    fn shown(&self) -> String {
        let rule = short_rule(&self.rule);
        match &self.message {
            // JSON string syntax: the report's `: ` split skips quoted text,
            // escapes included.
            Some(m) => format!("`{rule}` ({})", Value::String(short_rule(m))),
            None => format!("`{rule}`"),
        }
    }

    fn uses_old_self(&self) -> bool {
        let bytes = self.rule.as_bytes();
        self.rule.match_indices("oldSelf").any(|(i, _)| {
            let before = i.checked_sub(1).map(|j| bytes[j]);
            let after = bytes.get(i + "oldSelf".len()).copied();
            let ident = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_');
            !ident(before) && !ident(after)
        })
    }
}

fn rules(v: Option<&Value>) -> Vec<Rule> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|r| {
                    let rule = r.get("rule").and_then(Value::as_str).unwrap_or("");
                    (rule, r)
                })
                .map(|(rule, r)| Rule {
                    // The expression tree where it parses: quotes, spacing
                    // and parentheses do not make another rule.
                    key: canonical(rule).unwrap_or_else(|| tokens(rule)),
                    rule: rule.to_string(),
                    message: r
                        .get("message")
                        .and_then(Value::as_str)
                        .filter(|m| !m.trim().is_empty())
                        .map(str::to_string),
                    optional_old_self: r
                        .get("optionalOldSelf")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    raw: r.clone(),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn short_rule(rule: &str) -> String {
    let one_line: String = rule.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 80 {
        format!("{}…", one_line.chars().take(79).collect::<String>())
    } else {
        one_line
    }
}

/// A rule's text as its tokens: whitespace and `//` comments dropped (one
/// space kept where two words or numbers would otherwise run together),
/// string literals spelled with double quotes. Two texts with the same
/// tokens are the same expression. Anything unusual inside a literal
/// (escapes of the quote character, raw or byte strings, triple quotes)
/// keeps the literal as written, so such rules match only when spelled
/// the same.
fn tokens(rule: &str) -> String {
    let chars: Vec<char> = rule.chars().collect();
    let mut out = String::with_capacity(rule.len());
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
    let mut pending_space = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            pending_space = true;
            i += 1;
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            pending_space = true;
            continue;
        }
        if pending_space && out.chars().last().is_some_and(word) && word(c) {
            out.push(' ');
        }
        pending_space = false;
        if c == '\'' || c == '"' {
            let prefixed = out
                .chars()
                .last()
                .is_some_and(|p| matches!(p, 'r' | 'R' | 'b' | 'B'));
            let triple = chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c);
            let mut j = i + 1;
            let mut body = String::new();
            let mut plain = !prefixed && !triple;
            while j < chars.len() && chars[j] != c {
                if chars[j] == '\\' {
                    plain = false;
                    body.push(chars[j]);
                    j += 1;
                }
                if let Some(&d) = chars.get(j) {
                    if d == '"' || d == '\'' {
                        plain = false;
                    }
                    body.push(d);
                }
                j += 1;
            }
            if plain && j < chars.len() {
                out.push('"');
                out.push_str(&body);
                out.push('"');
                i = j + 1;
            } else {
                // As written, up to the end of the text's plain reading.
                let end = if triple {
                    chars.len()
                } else {
                    (j + 1).min(chars.len())
                };
                out.extend(&chars[i..end]);
                i = end;
            }
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::tokens;

    #[test]
    fn the_same_expression_reformatted_has_the_same_tokens() {
        assert_eq!(tokens("self.a  ==  'x'"), tokens("self.a==\"x\""));
        assert_eq!(
            tokens("has(self.a) ||\n  // why\n  self.b > 0"),
            tokens("has(self.a) || self.b > 0")
        );
        // Words stay apart: `x in y` is not `xin y`.
        assert_ne!(tokens("x in y"), tokens("xin y"));
        assert_ne!(tokens("self.a == 'x'"), tokens("self.a == 'y'"));
        // Spaces inside a literal are part of it.
        assert_ne!(tokens("self.a == 'x y'"), tokens("self.a == 'xy'"));
        // An escaped quote keeps the literal as written.
        assert_ne!(tokens(r"self.a == 'it\'s'"), tokens(r#"self.a == "it's""#));
    }
}
