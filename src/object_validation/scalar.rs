//! A shortcut for the question CRD validation asks most often: does this
//! scalar `default` satisfy the schema node that declares it? Over the
//! corpus, four in five defaults are a string, number or boolean on a leaf
//! that declares little more than a type, an enum, lengths or a pattern.
//! Building the model and a validator for each (and walking it) was about
//! half of checking defaults; reading the node as written answers them.

use serde_json::{Map, Value};

use super::walk::is_integer;
use crate::re2::{LazyPattern, check_go_cached};

/// Whether validating the scalar `v` against the schema node `s` (as
/// written) surely finds nothing. `true` only when every keyword of `s` is
/// one read here and `v` passes each as the validator checks it; `false`
/// means "not known here" (the caller validates the usual way), never
/// "invalid".
pub(crate) fn surely_valid(s: &Map<String, Value>, v: &Value) -> bool {
    if !matches!(v, Value::String(_) | Value::Bool(_) | Value::Number(_)) {
        return false;
    }
    let mut typed = false;
    for (key, kv) in s {
        let ok = match key.as_str() {
            // Words for people: no bearing on what is valid.
            "description" | "title" | "example" | "default" | "externalDocs" => true,
            // Only about `null`, which `v` is not.
            "nullable" => kv.is_boolean(),
            "type" => {
                typed = true;
                match (kv.as_str(), v) {
                    (Some("string"), Value::String(_))
                    | (Some("boolean"), Value::Bool(_))
                    | (Some("number"), Value::Number(_)) => true,
                    (Some("integer"), Value::Number(n)) => is_integer(n),
                    _ => false,
                }
            }
            "enum" => kv.as_array().is_some_and(|values| {
                values
                    .iter()
                    .any(|e| crate::openapi::numbers::enum_matches(v, e))
            }),
            "minLength" | "maxLength" => match (kv.as_u64(), v) {
                (Some(n), Value::String(s)) => {
                    let len = s.chars().count() as u64;
                    if key == "minLength" {
                        len >= n
                    } else {
                        len <= n
                    }
                }
                _ => false,
            },
            "pattern" => match (kv.as_str(), v) {
                (Some(p), Value::String(s)) => {
                    check_go_cached(p).is_ok()
                        && LazyPattern::new(p).is_ok_and(|re| re.is_match(s) == Ok(true))
                }
                _ => false,
            },
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    typed
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::surely_valid;
    use crate::object_validation::Validator;
    use crate::schema::Schema;

    /// What the validator itself finds wrong with `v` against `schema`.
    fn violations(schema: &serde_json::Value, v: &serde_json::Value) -> usize {
        let s = Schema::from_value(schema).expect("a schema");
        let validator = Validator::new(&s, 34).expect("a validator");
        super::super::validate_at(validator.root(), v)
            .violations
            .len()
    }

    /// The shortcut never calls valid what the validator refuses, and it
    /// answers the plain cases.
    #[test]
    fn the_shortcut_agrees_with_the_validator() {
        let cases = [
            (json!({"type": "string"}), json!("a"), true),
            (json!({"type": "string"}), json!(1), false),
            (json!({"type": "integer"}), json!(3), true),
            (json!({"type": "integer"}), json!(3.5), false),
            (json!({"type": "number"}), json!(3), true),
            (json!({"type": "boolean"}), json!(false), true),
            (json!({"type": "boolean"}), json!("false"), false),
            (
                json!({"type": "string", "enum": ["a", "b"]}),
                json!("b"),
                true,
            ),
            (
                json!({"type": "string", "enum": ["a", "b"]}),
                json!("c"),
                false,
            ),
            (json!({"type": "integer", "enum": [1, 2]}), json!(2), true),
            (
                json!({"type": "string", "maxLength": 3}),
                json!("héé"),
                true,
            ),
            (
                json!({"type": "string", "maxLength": 3}),
                json!("abcd"),
                false,
            ),
            (json!({"type": "string", "minLength": 2}), json!("a"), false),
            (
                json!({"type": "string", "pattern": "^[a-z]+$"}),
                json!("abc"),
                true,
            ),
            (
                json!({"type": "string", "pattern": "^[a-z]+$"}),
                json!("ab1"),
                false,
            ),
            (
                json!({"type": "string", "pattern": "^\\d+$"}),
                json!("١٢"),
                false,
            ),
            (
                json!({"type": "string", "nullable": true, "description": "d"}),
                json!("x"),
                true,
            ),
            // Read the usual way: keywords the shortcut leaves alone.
            (
                json!({"type": "string", "format": "date"}),
                json!("2024-01-01"),
                false,
            ),
            (json!({"type": "integer", "minimum": 1}), json!(2), false),
            (
                json!({"type": "string", "x-kubernetes-validations": [{"rule": "self != ''"}]}),
                json!("a"),
                false,
            ),
            (
                json!({"x-kubernetes-int-or-string": true}),
                json!("a"),
                false,
            ),
            (json!({"type": "object"}), json!({}), false),
            (json!({"description": "no type"}), json!("a"), false),
        ];
        for (schema, v, expected) in cases {
            let quick = surely_valid(schema.as_object().expect("an object"), &v);
            assert_eq!(quick, expected, "{schema} {v}");
            if quick {
                assert_eq!(violations(&schema, &v), 0, "{schema} {v}");
            }
        }
    }
}
