//! `structuralschema.NewStructural`: keywords a structural schema cannot hold
//! at all.

use super::*;

/// The first error `structuralschema.NewStructural` returns, if any.
pub fn new_structural_error(s: &Obj) -> Option<String> {
    // One pass over the node's keys finds its children and whether it holds
    // anything refused; the refusals are then checked in the server's order,
    // which decides the message when there are several.
    let mut refused = false;
    let (mut items, mut props, mut additional, mut not) = (None, None, None, None);
    let mut junctors: [&[Value]; 3] = [&[], &[], &[]];
    for (key, v) in s {
        let Some(kw) = Kw::of(key) else { continue };
        refused |= kw.refused(v);
        match kw {
            Kw::Items => items = v.as_object(),
            Kw::Properties => props = v.as_object(),
            Kw::AdditionalProperties => additional = v.as_object(),
            Kw::Not => not = v.as_object(),
            Kw::AllOf => junctors[0] = v.as_array().map_or(&[], Vec::as_slice),
            Kw::AnyOf => junctors[1] = v.as_array().map_or(&[], Vec::as_slice),
            Kw::OneOf => junctors[2] = v.as_array().map_or(&[], Vec::as_slice),
            _ => {}
        }
    }
    if refused {
        let unsupported = [
            ("id", "'id'"),
            ("$schema", "'schema'"),
            ("$ref", "'$ref'"),
            ("patternProperties", "'patternProperties'"),
            ("dependencies", "'dependencies'"),
            ("additionalItems", "'additionalItems'"),
            ("definitions", "'definitions'"),
        ];
        for (key, name) in unsupported {
            if get(s, key).is_some_and(|v| !is_zero(v)) {
                return Some(format!("OpenAPIV3Schema {name} is not supported"));
            }
        }
        if let Some(Value::Bool(false)) = get(s, "x-kubernetes-preserve-unknown-fields") {
            return Some(
                "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
                    .into(),
            );
        }
        if get(s, "items").is_some_and(Value::is_array) {
            return Some("OpenAPIV3Schema 'items' must be a schema, but is an array".into());
        }
    }
    let children = items
        .into_iter()
        .chain(
            props
                .into_iter()
                .flatten()
                .filter_map(|(_, p)| p.as_object()),
        )
        .chain(additional)
        .chain(not)
        .chain(junctors.into_iter().flatten().filter_map(Value::as_object));
    for child in children {
        if let Some(e) = new_structural_error(child) {
            return Some(e);
        }
    }
    None
}
