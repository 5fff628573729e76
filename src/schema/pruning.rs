//! What pruning leaves whole.
//!
//! Turning pruning on (`spec.preserveUnknownFields: false`, or a removed
//! `x-kubernetes-preserve-unknown-fields`) loses data only where a stored
//! value holds a key the schema does not describe. Some schemas cannot
//! drop anything: a node that keeps unknown fields and describes nothing
//! below it (Tekton's and Knative's `type: object` roots), or a scalar
//! node, whose value has no keys. The API server's pruning
//! (`apiextensions-apiserver/pkg/apiserver/schema/pruning`) is the
//! reference: a kept node still prunes inside the children it describes,
//! and a scalar node prunes the keys of a map stored there, so a scalar is
//! safe only when every schema the value was written through said it is
//! one (the API server validated it then).

use super::{AdditionalProperties, Schema};

/// Whether pruning by `schema` drops nothing from any value that one of
/// `written` accepted: the schemas, at the same node, of the versions the
/// stored values were written through (`None` where a version did not
/// describe the node, so its values there were never checked).
pub fn drops_nothing(schema: &Schema, written: &[Option<&Schema>]) -> bool {
    drops_nothing_at(schema, written, 0)
}

fn drops_nothing_at(schema: &Schema, written: &[Option<&Schema>], depth: usize) -> bool {
    if depth > super::MAX_DEPTH {
        return false;
    }
    if is_scalar(schema) {
        return !written.is_empty() && written.iter().all(|w| w.is_some_and(is_scalar));
    }
    let keeps = schema.preserves_unknown_fields();
    // A node that does not keep unknown fields drops every key it does not
    // describe, and `additionalProperties: true` prunes inside each value
    // (its schema is empty); only a typed map keeps every key.
    if !keeps
        && (!schema.properties.is_empty()
            || matches!(
                schema.additional_properties,
                Some(AdditionalProperties::Allowed(true))
            ))
    {
        return false;
    }
    let below = |step: fn(&Schema) -> Option<&Schema>| -> Vec<Option<&Schema>> {
        written.iter().map(|w| w.and_then(step)).collect()
    };
    for (name, child) in schema.properties.iter() {
        let written: Vec<Option<&Schema>> = written
            .iter()
            .map(|w| w.and_then(|w| w.properties.get(name.as_str())))
            .collect();
        if !drops_nothing_at(child, &written, depth + 1) {
            return false;
        }
    }
    match (&schema.items, schema.map_values()) {
        (Some(items), _) => drops_nothing_at(items, &below(|w| w.items.as_deref()), depth + 1),
        (None, Some(values)) => drops_nothing_at(values, &below(Schema::map_values), depth + 1),
        // A kept node with nothing more described keeps the value as it is;
        // an array or object without a schema below it and without the
        // marker has its maps emptied.
        (None, None) => keeps,
    }
}

/// A node whose values are scalars: pruning never reaches into them.
fn is_scalar(schema: &Schema) -> bool {
    schema.flag("x-kubernetes-int-or-string")
        || matches!(
            schema.type_name(),
            Some("string" | "integer" | "number" | "boolean")
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: serde_json::Value) -> Schema {
        Schema::from_value(&v).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_kept_root_that_describes_nothing_drops_nothing() {
        let root = schema(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
        assert!(drops_nothing(&root, &[None]));
    }

    #[test]
    fn a_kept_root_still_prunes_inside_the_objects_it_describes() {
        let root = schema(json!({
            "type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}
        }));
        assert!(!drops_nothing(&root, &[Some(&root)]));
    }

    #[test]
    fn a_scalar_is_whole_only_where_every_writer_checked_it_was_one() {
        let string = schema(json!({"type": "string"}));
        let object =
            schema(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
        assert!(drops_nothing(&string, &[Some(&string)]));
        assert!(!drops_nothing(&string, &[Some(&object)]));
        assert!(!drops_nothing(&string, &[Some(&string), None]));
        let root = schema(json!({
            "type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"replicas": {"type": "integer"}}}}
        }));
        assert!(drops_nothing(&root, &[Some(&root)]));
        let untyped =
            schema(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
        assert!(!drops_nothing(&root, &[Some(&untyped)]));
    }

    #[test]
    fn a_typed_map_keeps_its_keys_and_a_plain_object_does_not() {
        let map = schema(json!({"type": "object", "additionalProperties": {"type": "string"}}));
        assert!(drops_nothing(&map, &[Some(&map)]));
        let plain = schema(json!({"type": "object", "properties": {"a": {"type": "string"}}}));
        assert!(!drops_nothing(&plain, &[Some(&plain)]));
        let bare = schema(json!({"type": "object"}));
        assert!(!drops_nothing(&bare, &[Some(&bare)]));
        let list = schema(json!({"type": "array", "items": {"type": "string"}}));
        assert!(drops_nothing(&list, &[Some(&list)]));
    }
}
