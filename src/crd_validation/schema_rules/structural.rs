//! `apiserver/schema.ValidateStructural`: the structural-schema invariants and
//! the completeness of value validations.

use super::*;

/// What the server's version changes in the nested (junctor) schemas.
#[derive(Clone, Copy)]
pub(super) struct Nested {
    /// 1.30: `additionalProperties: false` under `allOf`/`anyOf`/`oneOf`/
    /// `not` is refused too.
    pub(super) forbids_false_additional_properties: bool,
}

impl Nested {
    pub(super) fn of(kube: crate::crd_validation::KubeVersion) -> Nested {
        Nested {
            forbids_false_additional_properties: kube.minor < 31,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    Root,
    Item,
    Field,
}

/// `structuralschema.ValidateStructural`'s list for `root`, from the
/// invariants the walk found: with the completeness of the root's value
/// validations, sorted like the server's list.
pub(super) fn structural_errors(
    root: &Obj,
    path: &FieldPath,
    mut invariants: Vec<FieldError>,
) -> Vec<FieldError> {
    completeness_of_value_validation(root, Some(root), path, path, &mut invariants);
    // Formatted once per error: a non-structural schema has thousands.
    invariants.sort_by_cached_key(ToString::to_string);
    invariants
}

/// For a root schema whose [`new_structural_error`] is `None`: the errors
/// of `structuralschema.ValidateStructural` (`Err`), or when there are none
/// those of its defaults, as [`validate_validation`] judges them. What the
/// server's update rules ask of the stored CRD.
pub fn structural_then_defaults(
    root: &Obj,
    path: &FieldPath,
    opts: &SchemaOptions,
) -> Result<Vec<FieldError>, Vec<FieldError>> {
    let opts = SchemaOptions {
        require_structural: true,
        ..*opts
    };
    let (found, _, _) = walk_schema(root, path, &opts, true);
    let structural = structural_errors(root, path, found.structural);
    if structural.is_empty() {
        Ok(defaults::validate_sites(&found.defaults, &opts))
    } else {
        Err(structural)
    }
}

pub(super) fn type_of(s: &Obj) -> &str {
    str_of(s, "type")
}

/// `[{type: integer}, {type: string}]`: the int-or-string pattern, written
/// out (exactly these, nothing else in the branches).
pub(super) fn is_int_or_string_any_of(branches: &[Value]) -> bool {
    let only_type = |v: &Value, t: &str| {
        v.as_object().is_some_and(|o| {
            o.iter()
                .filter(|(_, x)| !is_zero(x))
                .all(|(k, x)| k == "type" && x.as_str() == Some(t))
                && str_of(o, "type") == t
        })
    };
    branches.len() == 2 && only_type(&branches[0], "integer") && only_type(&branches[1], "string")
}

/// One node's structural invariants (its children are checked by
/// [`Walker::walk`] on its way down). The errors are sorted in the end, so the order in which
/// nodes are visited does not matter.
pub(super) fn invariants_node(
    kws: &Keywords,
    lvl: Level,
    nested: Nested,
    path: &mut FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let ty = kws.ty();
    if ty == "array" && kws.items().is_none() {
        errs.push(FieldError::required(
            path.child("items"),
            "must be specified",
        ));
    }
    let ap = kws.additional_properties();
    if lvl == Level::Root && !matches!(ap, AdditionalProperties::Absent) {
        errs.push(FieldError::forbidden(
            path.child("additionalProperties"),
            "must not be used at the root",
        ));
    }
    let int_or_string = kws.bool(Kw::IntOrString);
    let preserve = kws.bool(Kw::PreserveUnknownFields);
    let embedded = kws.bool(Kw::EmbeddedResource);
    if int_or_string && preserve {
        errs.push(FieldError::invalid(
            path.child("x-kubernetes-preserve-unknown-fields"),
            Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errs.push(FieldError::invalid(
            path.child("x-kubernetes-embedded-resource"),
            Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = is_int_or_string_any_of(kws.arr(Kw::AnyOf));
    let skip_first_all_of_any_of = kws
        .arr(Kw::AllOf)
        .first()
        .and_then(Value::as_object)
        .is_some_and(|a| is_int_or_string_any_of(arr_of(a, "anyOf")));
    value_validation(
        kws,
        skip_any_of,
        skip_first_all_of_any_of,
        lvl,
        nested,
        path,
        errs,
    );

    let check_metadata = lvl == Level::Root || embedded;
    if embedded && ty != "object" {
        if ty.is_empty() {
            errs.push(FieldError::required(
                path.child("type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            errs.push(FieldError::invalid(
                path.child("type"),
                Value::from(ty),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if ty.is_empty() && !int_or_string && !preserve {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(
            FieldError::required(path.child("type"), detail)
                .with_fix("declare the node's type (e.g. type: object for a node with properties); every node of a structural schema has one"),
        );
    }
    if embedded && !matches!(ap, AdditionalProperties::Absent) {
        errs.push(FieldError::forbidden(
            path.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(FieldError::invalid(
            path.child("type"),
            Value::from(ty),
            "must be object at the root",
        ));
    }
    if check_metadata {
        for field in ["kind", "apiVersion"] {
            if let Some(p) = kws.property(field)
                && type_of(p) != "string"
            {
                errs.push(FieldError::invalid(
                    path.child("properties").key(field).child("type"),
                    Value::from(type_of(p)),
                    "must be string",
                ));
            }
        }
    }
    // Only a resource root or an embedded resource has anything to check in
    // `metadata`: other nodes skip the lookup (a hash of the name).
    if check_metadata && let Some(meta) = kws.property("metadata") {
        let mpath = path.child("properties").key("metadata");
        if type_of(meta) != "object" {
            errs.push(FieldError::invalid(
                mpath.child("type"),
                Value::from(type_of(meta)),
                "must be object",
            ));
        }
        if lvl == Level::Root && !root_metadata_is_implicit(meta) {
            errs.push(
                FieldError::forbidden(
                    mpath,
                    "must not specify anything other than name and generateName, but metadata is implicitly specified",
                )
                .with_fix("describe metadata as just `type: object` (optionally with name/generateName rules): the server supplies ObjectMeta itself"),
            );
        }
    }
    if embedded && !preserve && !kws.has_properties() {
        errs.push(FieldError::required(
            path.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// Root `metadata` may only be `type` (any), `default` (checked elsewhere)
/// and `properties` limited to `name` and `generateName`.
pub(super) fn root_metadata_is_implicit(meta: &Obj) -> bool {
    for (k, v) in meta {
        if is_zero(v) {
            continue;
        }
        match k.as_str() {
            "type" | "default" => {}
            "properties" => {
                let Some(p) = v.as_object() else { return false };
                if !p.keys().all(|n| n == "name" || n == "generateName") {
                    return false;
                }
            }
            // Keys Go drops on decoding never reach the check.
            _ if Kw::of(k).is_none() => {}
            _ => return false,
        }
    }
    true
}

/// `type` is not `want` though `keyword` needs it: missing (`Required`)
/// or another type (`Invalid`), as the API server words it.
pub(super) fn type_must_be(ty: &str, want: &str, keyword: &str, path: &FieldPath) -> FieldError {
    let detail = format!("must be {want} if {keyword} is specified");
    if ty.is_empty() {
        FieldError::required(path.child("type"), detail)
    } else {
        FieldError::invalid(path.child("type"), Value::from(ty), detail)
    }
}

pub(super) fn value_validation(
    kws: &Keywords,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    nested: Nested,
    path: &mut FieldPath,
    errs: &mut Vec<FieldError>,
) {
    for (kw, name) in [
        (Kw::AnyOf, "anyOf"),
        (Kw::AllOf, "allOf"),
        (Kw::OneOf, "oneOf"),
    ] {
        if kw == Kw::AnyOf && skip_any_of {
            continue;
        }
        for (i, b) in kws.arr(kw).iter().enumerate() {
            if let Some(b) = b.as_object() {
                let skip = kw == Kw::AllOf && skip_first_all_of_any_of && i == 0;
                let at = &mut path.push().child(name).index(i);
                nested_value_validation(b, skip, lvl, nested, at, errs);
            }
        }
    }
    if let Some(n) = kws.obj(Kw::Not) {
        nested_value_validation(n, false, lvl, nested, &mut path.push().child("not"), errs);
    }
    let pattern = kws.str(Kw::Pattern);
    if !pattern.is_empty()
        && let Some(e) = crate::crd_validation::go_regex_error(pattern)
    {
        errs.push(
            FieldError::invalid(
                path.child("pattern"),
                Value::from(pattern),
                format!("must be a valid regular expression, but isn't: {e}"),
            )
            .with_fix("the server compiles patterns with Go's RE2: no lookaround, no backreferences, no possessive quantifiers"),
        );
    }
}

pub(super) fn nested_value_validation(
    v: &Obj,
    skip_any_of: bool,
    lvl: Level,
    nested: Nested,
    path: &mut FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let kws = Keywords::of(v);
    value_validation(&kws, skip_any_of, false, lvl, nested, path, errs);
    if let Some(i) = kws.items() {
        nested_value_validation(i, false, lvl, nested, &mut path.push().child("items"), errs);
    }
    for (k, p) in kws.properties() {
        nested_value_validation(
            p,
            false,
            Level::Field,
            nested,
            &mut path.push().child("properties").key(k),
            errs,
        );
    }
    let fix = "keep type, default, nullable, descriptions and x-kubernetes-* in the structural part of the schema; allOf/anyOf/oneOf/not may only add value validations";
    let forbid = |key: &str, detail: &str, errs: &mut Vec<FieldError>| {
        errs.push(FieldError::forbidden(path.child(key), detail).with_fix(fix));
    };
    if !kws.ty().is_empty() {
        forbid("type", "must be empty to be structural", errs);
    }
    // From 1.31 additionalProperties: false decodes to nothing in a nested
    // validation; 1.30 kept it, and refused it like any other value.
    match kws.additional_properties() {
        AdditionalProperties::Schema(_) | AdditionalProperties::Bool(true) => forbid(
            "additionalProperties",
            "must be undefined to be structural",
            errs,
        ),
        AdditionalProperties::Bool(false) if nested.forbids_false_additional_properties => forbid(
            "additionalProperties",
            "must be undefined to be structural",
            errs,
        ),
        _ => {}
    }
    if kws.has(Kw::Default) {
        forbid("default", "must be undefined to be structural", errs);
    }
    if !kws.str(Kw::Title).is_empty() {
        forbid("title", "must be empty to be structural", errs);
    }
    if !kws.str(Kw::Description).is_empty() {
        forbid("description", "must be empty to be structural", errs);
    }
    if kws.bool(Kw::Nullable) {
        forbid("nullable", "must be false to be structural", errs);
    }
    for (kw, key) in [
        (
            Kw::PreserveUnknownFields,
            "x-kubernetes-preserve-unknown-fields",
        ),
        (Kw::EmbeddedResource, "x-kubernetes-embedded-resource"),
        (Kw::IntOrString, "x-kubernetes-int-or-string"),
    ] {
        if kws.bool(kw) {
            forbid(key, "must be false to be structural", errs);
        }
    }
    if !kws.arr(Kw::ListMapKeys).is_empty() {
        forbid(
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
            errs,
        );
    }
    if kws.has(Kw::ListType) {
        forbid(
            "x-kubernetes-list-type",
            "must be undefined to be structural",
            errs,
        );
    }
    if kws.has(Kw::MapType) {
        forbid(
            "x-kubernetes-map-type",
            "must be undefined to be structural",
            errs,
        );
    }
    if !kws.arr(Kw::Validations).is_empty() {
        forbid(
            "x-kubernetes-validations",
            "must be empty to be structural",
            errs,
        );
    }
    if kws.property("metadata").is_some() {
        errs.push(FieldError::forbidden(
            path.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// Completeness: every property an `allOf`/`anyOf`/`oneOf`/`not` of the
/// root names must exist in the structural part. The server checks this
/// from the root's value validations only.
pub(super) fn completeness_of_value_validation(
    v: &Obj,
    s: Option<&Obj>,
    s_path: &FieldPath,
    v_path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(FieldError::required(
            s_path.clone(),
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    if let Some(n) = obj_of(v, "not") {
        completeness_of_nested(n, Some(s), s_path, &v_path.child("not"), errs);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, b) in arr_of(v, key).iter().enumerate() {
            if let Some(b) = b.as_object() {
                completeness_of_nested(b, Some(s), s_path, &v_path.child(key).index(i), errs);
            }
        }
    }
}

pub(super) fn completeness_of_nested(
    v: &Obj,
    s: Option<&Obj>,
    s_path: &FieldPath,
    v_path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(
            FieldError::required(s_path.clone(), format!("because it is defined in {v_path}"))
                .with_fix("declare the field in the structural part (properties/items) too, with its type"),
        );
        return;
    };
    completeness_of_value_validation(v, Some(s), s_path, v_path, errs);
    if let Some(vi) = items(v) {
        completeness_of_nested(
            vi,
            items(s),
            &s_path.child("items"),
            &v_path.child("items"),
            errs,
        );
    }
    for (k, vp) in properties(v) {
        let sp = property(s, k);
        if sp.is_none() {
            errs.push(
                FieldError::required(
                    s_path.child("properties").key(k),
                    format!("because it is defined in {}", v_path.child("properties").key(k)),
                )
                .with_fix("declare the field in the structural part (properties/items) too, with its type"),
            );
        } else {
            completeness_of_nested(
                vp,
                sp,
                &s_path.child("properties").key(k),
                &v_path.child("properties").key(k),
                errs,
            );
        }
    }
}
