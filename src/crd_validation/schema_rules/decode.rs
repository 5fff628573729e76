//! Decoding: keyword values Go cannot put into `JSONSchemaProps`; the server
//! refuses the whole request before it validates anything.

use super::*;

/// A keyword's value the server cannot decode into `JSONSchemaProps`.
pub(super) fn undecodable(p: &FieldPath, v: &Value, what: &str, out: &mut Vec<FieldError>) {
    out.push(
        FieldError::invalid(p.clone(), v.clone(), format!("cannot be decoded: must be {what}"))
            .with_fix("the API server rejects the whole request before validating it; fix the keyword's value type"),
    )
}

/// What the decoding walk found: the keyword values of the wrong JSON type,
/// and whether any node holds a keyword [`new_structural_error`] refuses.
/// The walk reads every key anyway; noting refusals on the way spares a
/// second walk over the whole tree for the (usual) schema that has none.
#[derive(Default)]
pub(super) struct Decoded {
    pub(super) errs: Vec<FieldError>,
    pub(super) refused: bool,
}

/// Keyword values of the wrong JSON type, in the whole schema. `path` is
/// extended in place (and restored) as the walk descends.
///
/// The walk reaches every node `new_structural_error` reaches, and more:
/// the others sit under `definitions`, `patternProperties`, `dependencies`,
/// `additionalItems` or an `items` list, which that function refuses where
/// they are. So `refused` stays false exactly when it returns `None`.
pub(super) fn decode_errors(s: &Obj, path: &mut FieldPath, out: &mut Decoded) {
    for (key, v) in s {
        if v.is_null() {
            continue;
        }
        let Some(kw) = Kw::of(key) else { continue };
        out.refused |= kw.refused(v);
        let exp = match kw.expect() {
            Expect::Any => continue,
            exp => exp,
        };
        // Most keywords are scalars of the right type: only a value that
        // fails, or a schema to descend into, needs its path built.
        let scalar_ok = match exp {
            Expect::Str => Some(v.is_string()),
            Expect::Num => Some(v.is_number()),
            Expect::Int => Some(v.is_i64() || v.is_u64()),
            Expect::Bool => Some(v.is_boolean()),
            Expect::Array => Some(v.is_array()),
            Expect::Object => Some(v.is_object()),
            _ => None,
        };
        if scalar_ok == Some(true) {
            continue;
        }
        let mut p = path.push().child(key);
        let bad =
            |p: &FieldPath, what: &str, out: &mut Decoded| undecodable(p, v, what, &mut out.errs);
        match exp {
            Expect::Str if !v.is_string() => bad(&p, "a string", out),
            Expect::Num if !v.is_number() => bad(&p, "a number", out),
            Expect::Int if !(v.is_i64() || v.is_u64()) => bad(&p, "an integer", out),
            Expect::Bool if !v.is_boolean() => bad(&p, "a boolean", out),
            Expect::StrList
                if !v
                    .as_array()
                    .is_some_and(|a| a.iter().all(|x| x.is_string() || x.is_null())) =>
            {
                bad(&p, "a list of strings", out)
            }
            Expect::Array if !v.is_array() => bad(&p, "a list", out),
            Expect::Object if !v.is_object() => bad(&p, "an object", out),
            Expect::Schema => match v.as_object() {
                Some(o) => decode_errors(o, &mut p, out),
                None => bad(&p, "a schema object", out),
            },
            Expect::SchemaList => match v.as_array() {
                Some(a) => {
                    for (i, x) in a.iter().enumerate() {
                        match x.as_object() {
                            Some(o) => decode_errors(o, &mut p.push().index(i), out),
                            None if x.is_null() => {}
                            None => bad(&p, "a list of schema objects", out),
                        }
                    }
                }
                None => bad(&p, "a list of schema objects", out),
            },
            Expect::SchemaMap => match v.as_object() {
                Some(m) => {
                    for (k, x) in m {
                        match x.as_object() {
                            Some(o) => decode_errors(o, &mut p.push().key(k), out),
                            None if x.is_null() => {}
                            None => bad(&p, "a map of schema objects", out),
                        }
                    }
                }
                None => bad(&p, "a map of schema objects", out),
            },
            Expect::SchemaOrBool => match v {
                Value::Bool(_) => {}
                Value::Object(o) => decode_errors(o, &mut p, out),
                _ => bad(&p, "a boolean or a schema object", out),
            },
            Expect::SchemaOrSchemaList => match v {
                Value::Object(o) => decode_errors(o, &mut p, out),
                Value::Array(a) => {
                    for (i, x) in a.iter().enumerate() {
                        if let Some(o) = x.as_object() {
                            decode_errors(o, &mut p.push().index(i), out);
                        } else if !x.is_null() {
                            bad(&p, "a schema object or a list of them", out);
                        }
                    }
                }
                _ => bad(&p, "a schema object or a list of them", out),
            },
            Expect::Dependencies => match v.as_object() {
                Some(m) => {
                    for (k, x) in m {
                        match x {
                            Value::Object(o) => decode_errors(o, &mut p.push().key(k), out),
                            Value::Array(a) if a.iter().all(Value::is_string) => {}
                            Value::Null => {}
                            _ => bad(&p, "a map of schemas or string lists", out),
                        }
                    }
                }
                None => bad(&p, "a map of schemas or string lists", out),
            },
            Expect::Rules => match v.as_array() {
                Some(a) => {
                    for (i, rule) in a.iter().enumerate() {
                        let Some(r) = rule.as_object() else {
                            if !rule.is_null() {
                                bad(&p, "a list of rule objects", out);
                            }
                            continue;
                        };
                        for (rk, rv) in r {
                            let ok = match rk.as_str() {
                                "rule" | "message" | "messageExpression" | "reason"
                                | "fieldPath" => rv.is_string() || rv.is_null(),
                                "optionalOldSelf" => rv.is_boolean() || rv.is_null(),
                                _ => true,
                            };
                            if !ok {
                                out.errs.push(FieldError::invalid(
                                    FieldPath::index(&p, i).child(rk),
                                    rv.clone(),
                                    "cannot be decoded: wrong value type",
                                ));
                            }
                        }
                    }
                }
                None => bad(&p, "a list of rule objects", out),
            },
            _ => {}
        }
    }
}
