//! How lists and maps are merged and kept unique: uniqueItems, list and map types
//! (`src/compare/fields/lists.rs`).

use super::*;

#[test]
fn unique_items_turned_on_is_unsafe_and_off_safe() {
    example_flags_foo(
        Check::UniqueItems,
        Severity::Error,
        &["uniqueItems turned on"],
    );
    assert_clean(&reversed(Check::UniqueItems));
}

fn list(extra: Value) -> Value {
    let mut s = json!({"type": "array", "items": {"type": "object", "required": ["name"],
        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}});
    if let (Some(s), Value::Object(extra)) = (s.as_object_mut(), extra) {
        s.extend(extra);
    }
    foo(s)
}

#[test]
fn a_list_becoming_a_set_is_unsafe_and_becoming_atomic_a_warning() {
    example_flags_foo(
        Check::ListType,
        Severity::Error,
        &[
            "x-kubernetes-list-type <none> -> \"set\"",
            "cannot be created again",
            "updates of a stored object that already holds them still succeed, even those that change the list",
        ],
    );
    flags_foo(
        &reversed(Check::ListType),
        Check::ListType,
        Severity::Warning,
        &[
            "x-kubernetes-list-type \"set\" -> <none>",
            "replaces the whole list",
        ],
    );
    assert_clean(&compare(
        &list(json!({})),
        &list(json!({"x-kubernetes-list-type": "atomic"})),
    ));
}

#[test]
fn list_map_keys_changed_is_unsafe() {
    let map = |keys: Value| {
        list(json!({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": keys}))
    };
    flags_foo(
        &compare(&map(json!(["name"])), &map(json!(["port"]))),
        Check::ListType,
        Severity::Error,
        &[
            "x-kubernetes-list-map-keys [\"name\"] -> [\"port\"]",
            "already holds them still succeed",
        ],
    );
}

#[test]
fn a_bound_tightened_in_a_list_that_is_not_a_map_says_a_change_to_any_item_is_rejected() {
    let names = |max: u64, extra: Value| {
        let mut s = json!({"type": "array", "items": {"type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"}, "value": {"type": "string", "maxLength": max}}}});
        if let (Some(s), Value::Object(extra)) = (s.as_object_mut(), extra) {
            s.extend(extra);
        }
        foo(s)
    };
    let path = Some("^.spec.foo[*].value");
    let atomic = flags(
        &compare(&names(10, json!({})), &names(3, json!({}))),
        Check::MaxLength,
        Severity::Error,
        Some("v1"),
        path,
        &["an update that changes any item of ^.spec.foo is rejected too"],
    );
    assert!(
        atomic.message.contains("not listType: map"),
        "{}",
        atomic.message
    );
    let map = json!({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]});
    let keyed = flags(
        &compare(&names(10, map.clone()), &names(3, map)),
        Check::MaxLength,
        Severity::Error,
        Some("v1"),
        path,
        &["updates that leave it unchanged still succeed"],
    );
    assert!(!keyed.message.contains("rejected too"), "{}", keyed.message);
}

#[test]
fn a_map_becoming_atomic_is_a_warning_and_spelling_out_granular_safe() {
    example_flags_foo(
        Check::MapType,
        Severity::Warning,
        &[
            "x-kubernetes-map-type <none> -> \"atomic\"",
            "replaces this object as a whole",
        ],
    );
    let (old, _) = unsafe_example(Check::MapType);
    let old = old.expect("fixture");
    let granular = edit(&old, |c| {
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["foo"]["x-kubernetes-map-type"] = json!("granular");
    });
    assert_clean(&compare(&old, &granular));
}
