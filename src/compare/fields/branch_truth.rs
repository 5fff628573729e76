//! Whether every object the old schema allows meets a combinator (`oneOf`,
//! `anyOf`, `allOf`, `not`) added or changed at a node, decided from the
//! fields each object certainly has or certainly lacks.
//!
//! The branches of real combinators mostly say "this field is set":
//! Strimzi's `oneOf: [{required: [certificate]}, {required: [pattern]}]`
//! next to an old schema that required `certificate` and had no `pattern`.
//! Every stored object then matches the first branch and not the second,
//! so the new `oneOf` cannot fail on it, although a value that fits no
//! branch (or two) is rejected from now on. This is the difference between
//! a safe release and one whose stored objects cannot be re-applied and
//! whose updates of the field are refused.
//!
//! Three answers per branch: met by every old object, by none, or unknown.
//! Only `required`, property schemas without constraints, `type` equal to
//! the node's, documentation, and nested combinators are read; anything
//! else is unknown, and an unknown keeps the finding's severity.

use serde_json::Value;

use super::docs::DOC_KEYWORDS;
use crate::schema::Schema;

/// What a branch is over every object the old schema allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Truth {
    /// Every such object meets it.
    Always,
    /// No such object meets it.
    Never,
    /// Some may and some may not, or it could not be decided.
    Unknown,
}

/// The evaluation of branches over a node: its old and new schema, and
/// the facts used, for the message.
pub(super) struct Branches<'a> {
    old: &'a Schema,
    new: &'a Schema,
    /// Facts the answer rests on, in the order they were used.
    facts: Vec<String>,
    /// Fields the old schema does not have, which the answer took as absent.
    new_fields: Vec<String>,
}

impl<'a> Branches<'a> {
    /// `None` when the node's old values are not all objects (a null
    /// stored under `nullable` fits `required` branches vacuously).
    pub fn over(old: &'a Schema, new: &'a Schema) -> Option<Branches<'a>> {
        if old.flag("nullable") || old.type_name() != Some("object") {
            return None;
        }
        Some(Branches {
            old,
            new,
            facts: Vec::new(),
            new_fields: Vec::new(),
        })
    }

    /// The combinator `kw` with these `branches` (`not`: one schema).
    pub fn combinator(&mut self, kw: &str, branches: &Value) -> Truth {
        match kw {
            "not" => flip(self.branch(branches)),
            _ => {
                let Some(list) = branches.as_array() else {
                    return Truth::Unknown;
                };
                let truths: Vec<Truth> = list.iter().map(|b| self.branch(b)).collect();
                combine(kw, &truths)
            }
        }
    }

    fn branch(&mut self, branch: &Value) -> Truth {
        let Some(map) = branch.as_object() else {
            return Truth::Unknown;
        };
        let mut truth = Truth::Always;
        for (key, value) in map {
            let t = match key.as_str() {
                k if DOC_KEYWORDS.contains(&k) => Truth::Always,
                "type" if value.as_str().is_some() && value.as_str() == self.old.type_name() => {
                    Truth::Always
                }
                "required" => match value.as_array() {
                    Some(names) => {
                        let each: Vec<Truth> = names
                            .iter()
                            .map(|n| n.as_str().map_or(Truth::Unknown, |n| self.presence(n)))
                            .collect();
                        combine("allOf", &each)
                    }
                    None => Truth::Unknown,
                },
                "properties" => match value.as_object() {
                    Some(props) => {
                        let each: Vec<Truth> = props
                            .iter()
                            .map(|(name, s)| {
                                if unconstrained(s) || self.presence(name) == Truth::Never {
                                    // Nothing to meet, or no value to check.
                                    Truth::Always
                                } else {
                                    Truth::Unknown
                                }
                            })
                            .collect();
                        combine("allOf", &each)
                    }
                    None => Truth::Unknown,
                },
                "not" => flip(self.branch(value)),
                "allOf" | "anyOf" | "oneOf" => self.combinator(key, value),
                _ => Truth::Unknown,
            };
            truth = combine("allOf", &[truth, t]);
        }
        truth
    }

    /// Whether every old object has the field `name` as the new schema
    /// reads it (`Always`), none has (`Never`), or either.
    fn presence(&mut self, name: &str) -> Truth {
        // Every object has these whatever its schema says.
        if matches!(name, "apiVersion" | "kind" | "metadata") {
            return Truth::Unknown;
        }
        let kept_by_new =
            self.new.properties.contains_key(name) || self.new.preserves_unknown_fields();
        let defaulted = self
            .new
            .properties
            .get(name)
            .is_some_and(|p| p.keyword("default").is_some());
        // A null the old schema allowed is dropped by a new schema that
        // does not: the key is then gone.
        let null_dropped = self
            .old
            .properties
            .get(name)
            .is_some_and(|p| p.flag("nullable"))
            && !self
                .new
                .properties
                .get(name)
                .is_some_and(|p| p.flag("nullable"));
        if self.old.required().contains(&name) && kept_by_new && !null_dropped {
            self.fact(format!("the old schema requires {name}"));
            return Truth::Always;
        }
        let old_may_hold = self.old.properties.contains_key(name)
            || self.old.preserves_unknown_fields()
            || self.old.additional_properties.is_some();
        if !old_may_hold && !defaulted {
            if !self.new_fields.iter().any(|f| f == name) {
                self.new_fields.push(name.to_string());
            }
            return Truth::Never;
        }
        if !kept_by_new && !defaulted {
            self.fact(format!("the new schema prunes {name}"));
            return Truth::Never;
        }
        Truth::Unknown
    }

    /// What the answer rests on, as one clause for a message.
    pub fn reasons(&self) -> String {
        let mut out = self.facts.clone();
        match self.new_fields.as_slice() {
            [] => {}
            [one] => out.push(format!(
                "{one} is new: no stored object has it, unless an earlier release had the field and objects \
written then still hold it"
            )),
            many => out.push(format!(
                "{} are new: no stored object has them, unless an earlier release had the fields and objects \
written then still hold them",
                many.join(", ")
            )),
        }
        if out.is_empty() {
            "a branch it needs accepts every object".to_string()
        } else {
            out.join("; ")
        }
    }

    fn fact(&mut self, fact: String) {
        if !self.facts.contains(&fact) {
            self.facts.push(fact);
        }
    }
}

/// A property schema in a branch that constrains nothing (documentation
/// aside): `properties: {certificate: {}}`.
fn unconstrained(s: &Value) -> bool {
    s.as_object()
        .is_some_and(|m| m.keys().all(|k| DOC_KEYWORDS.contains(&k.as_str())))
}

fn flip(t: Truth) -> Truth {
    match t {
        Truth::Always => Truth::Never,
        Truth::Never => Truth::Always,
        Truth::Unknown => Truth::Unknown,
    }
}

/// `allOf`, `anyOf` or `oneOf` of branch truths over every object.
fn combine(kw: &str, truths: &[Truth]) -> Truth {
    let always = truths.iter().filter(|t| **t == Truth::Always).count();
    let never = truths.iter().filter(|t| **t == Truth::Never).count();
    let all = truths.len();
    match kw {
        "allOf" if never > 0 => Truth::Never,
        "allOf" if always == all => Truth::Always,
        "anyOf" if always > 0 => Truth::Always,
        "anyOf" if never == all => Truth::Never,
        // Exactly one: one certain match and every other branch certainly
        // missed; two certain matches fail every object.
        "oneOf" if always == 1 && never == all - 1 => Truth::Always,
        "oneOf" if always >= 2 || never == all => Truth::Never,
        _ => Truth::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> Schema {
        Schema::from_value(&v).unwrap()
    }

    fn judge(old: Value, new: Value, kw: &str, branches: Value) -> (Truth, String) {
        let (old, new) = (schema(old), schema(new));
        let mut b = Branches::over(&old, &new).unwrap();
        let t = b.combinator(kw, &branches);
        (t, b.reasons())
    }

    fn strimzi_old() -> Value {
        json!({"type": "object", "required": ["certificate", "secretName"],
               "properties": {"certificate": {"type": "string"}, "secretName": {"type": "string"}}})
    }

    fn strimzi_new() -> Value {
        json!({"type": "object", "required": ["secretName"],
               "properties": {"certificate": {"type": "string"}, "secretName": {"type": "string"},
                              "pattern": {"type": "string"}}})
    }

    fn certificate_or_pattern() -> Value {
        json!([{"properties": {"certificate": {}}, "required": ["certificate"]},
               {"properties": {"pattern": {}}, "required": ["pattern"]}])
    }

    #[test]
    fn an_old_required_field_selects_one_branch_and_a_new_field_misses_the_other() {
        let (t, facts) = judge(
            strimzi_old(),
            strimzi_new(),
            "oneOf",
            certificate_or_pattern(),
        );
        assert_eq!(t, Truth::Always);
        assert_eq!(
            facts,
            "the old schema requires certificate; pattern is new: no stored object has it, unless an \
earlier release had the field and objects written then still hold it"
        );
    }

    #[test]
    fn a_single_branch_that_constrains_nothing_always_matches() {
        // Strimzi's volumes: `oneOf: [{properties: {secret: {}, ...}}]`.
        let old = json!({"type": "object", "properties": {"secret": {"type": "object"}}});
        let branches = json!([{"properties": {"secret": {}, "image": {}}}]);
        let (t, facts) = judge(old.clone(), old, "oneOf", branches);
        assert_eq!(t, Truth::Always);
        assert_eq!(facts, "a branch it needs accepts every object");
    }

    #[test]
    fn istio_s_none_or_exactly_one_of_two_new_fields() {
        let old = json!({"type": "object", "properties": {"uri": {"type": "string"}}});
        let new = json!({"type": "object", "properties": {"uri": {"type": "string"},
                         "port": {"type": "integer"}, "derivePort": {"type": "string"}}});
        let branches = json!([{"not": {"anyOf": [{"required": ["port"]}, {"required": ["derivePort"]}]}},
                              {"required": ["port"]}, {"required": ["derivePort"]}]);
        let (t, facts) = judge(old, new, "oneOf", branches);
        assert_eq!(t, Truth::Always);
        assert!(
            facts.starts_with("port, derivePort are new: no stored object has them"),
            "{facts}"
        );
    }

    #[test]
    fn an_optional_old_field_leaves_the_choice_open() {
        // Strimzi's env entries: `value` was optional, so `{name: X}` fits
        // no branch of the new oneOf.
        let old = json!({"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "string"}}});
        let new = json!({"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "string"},
                                                          "valueFrom": {"type": "object"}}});
        let branches = json!([{"required": ["value"]}, {"required": ["valueFrom"]}]);
        assert_eq!(judge(old, new, "oneOf", branches).0, Truth::Unknown);
    }

    #[test]
    fn two_certain_matches_fail_a_one_of_and_pass_an_any_of() {
        let old = json!({"type": "object", "required": ["a", "b"],
                         "properties": {"a": {"type": "string"}, "b": {"type": "string"}}});
        let branches = json!([{"required": ["a"]}, {"required": ["b"]}]);
        assert_eq!(
            judge(old.clone(), old.clone(), "oneOf", branches.clone()).0,
            Truth::Never
        );
        assert_eq!(judge(old.clone(), old, "anyOf", branches).0, Truth::Always);
    }

    #[test]
    fn a_field_the_old_node_may_hold_unknown_is_never_certainly_absent() {
        let old = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                         "required": ["a"], "properties": {"a": {"type": "string"}}});
        let new = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                         "required": ["a"], "properties": {"a": {"type": "string"}, "b": {"type": "string"}}});
        let branches = json!([{"required": ["a"]}, {"required": ["b"]}]);
        assert_eq!(judge(old, new, "oneOf", branches).0, Truth::Unknown);
    }

    #[test]
    fn a_default_in_the_new_schema_makes_a_new_field_present_on_read() {
        let old =
            json!({"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}});
        let new = json!({"type": "object", "required": ["a"],
                         "properties": {"a": {"type": "string"}, "b": {"type": "string", "default": "x"}}});
        let branches = json!([{"required": ["a"]}, {"required": ["b"]}]);
        assert_eq!(judge(old, new, "oneOf", branches).0, Truth::Unknown);
    }

    #[test]
    fn a_required_field_the_new_schema_prunes_is_not_present() {
        let old =
            json!({"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}});
        let new = json!({"type": "object", "properties": {"b": {"type": "string"}}});
        assert_eq!(
            judge(old, new, "anyOf", json!([{"required": ["a"]}])).0,
            Truth::Never
        );
    }

    #[test]
    fn constraints_it_does_not_read_stay_unknown() {
        let old = strimzi_old();
        let branches = json!([{"required": ["certificate"], "properties": {"certificate": {"minLength": 1}}},
                              {"required": ["pattern"]}]);
        assert_eq!(
            judge(old, strimzi_new(), "oneOf", branches).0,
            Truth::Unknown
        );
    }

    #[test]
    fn not_flips_and_nullable_or_non_objects_are_not_judged() {
        let (t, _) = judge(
            strimzi_old(),
            strimzi_new(),
            "not",
            json!({"required": ["pattern"]}),
        );
        assert_eq!(t, Truth::Always);
        let nullable = schema(json!({"type": "object", "nullable": true}));
        assert!(Branches::over(&nullable, &nullable).is_none());
        let string = schema(json!({"type": "string"}));
        assert!(Branches::over(&string, &string).is_none());
    }
}
