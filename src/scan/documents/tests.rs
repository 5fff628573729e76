use serde_json::{Value, json};

use super::*;
use crate::manifest::Location;

fn crd(spec_props: Value, served: bool) -> Crd {
    Crd::from_manifest(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": served, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": spec_props}
                }}}
            }]
        }
    }))
    .expect("a valid CRD")
}

fn object(name: &str, line: usize, spec: Value) -> Resource {
    Resource {
        value: json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "demo"}, "spec": spec
        }),
        location: Location {
            file: "config/samples/widgets.yaml".into(),
            line,
        },
    }
}

#[test]
fn an_object_old_accepts_and_new_refuses_is_an_error_at_its_file_and_line() {
    let old = crd(json!({"name": {"type": "string"}}), true);
    let new = crd(json!({"name": {"type": "string", "maxLength": 3}}), true);
    let objects = [
        object("short", 1, json!({"name": "abc"})),
        object("long", 9, json!({"name": "abcdef"})),
    ];
    let found = judge_documents(Some(&old), &new, &objects, 34, 5);
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!(
        (f.check, f.severity),
        (Check::ManifestObjects, crate::compare::Severity::Error)
    );
    assert_eq!(f.path.as_deref(), Some("^.spec.name"));
    let o = f.objects.as_ref().expect("objects");
    assert_eq!((o.rule.as_str(), o.count, o.scanned), ("maxLength", 1, 2));
    assert_eq!(o.examples, ["config/samples/widgets.yaml:9 demo/long"]);
    assert!(f.message.contains("applying them fails"), "{}", f.message);
    let at = f.location.as_ref().expect("the object's place");
    assert_eq!((&*at.file, at.line), ("config/samples/widgets.yaml", 9));
}

#[test]
fn a_field_the_new_schema_drops_is_data_loss_and_an_object_old_refused_is_not_news() {
    let old = crd(
        json!({"legacy": {"type": "string"}, "size": {"type": "integer", "maximum": 5}}),
        true,
    );
    let new = crd(json!({"size": {"type": "integer", "maximum": 5}}), true);
    let objects = [
        object("legacy", 1, json!({"legacy": "on"})),
        object("already-bad", 5, json!({"legacy": "on", "size": 9})),
    ];
    let found = judge_documents(Some(&old), &new, &objects, 34, 5);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].objects.as_ref().map(|o| o.rule.as_str()),
        Some("pruned")
    );
    assert_eq!(
        found[0].objects.as_ref().map(|o| o.examples.clone()),
        Some(vec![
            "config/samples/widgets.yaml:1 demo/legacy".to_string()
        ])
    );
}

#[test]
fn objects_of_a_version_the_new_crd_does_not_serve_cannot_be_applied() {
    let old = crd(json!({}), true);
    let new = crd(json!({}), false);
    let found = judge_documents(Some(&old), &new, &[object("a", 3, json!({}))], 34, 5);
    assert_eq!(found.len(), 1);
    assert!(
        found[0].message.contains("does not serve"),
        "{}",
        found[0].message
    );
    assert!(
        found[0].message.contains("widgets.yaml:3 demo/a"),
        "{}",
        found[0].message
    );
}

#[test]
fn objects_of_other_kinds_are_left_alone_and_a_new_crd_judges_every_object() {
    let new = crd(json!({"size": {"type": "integer", "minimum": 1}}), true);
    let mut other = object("x", 1, json!({"size": 0}));
    other.value["kind"] = json!("Gadget");
    let zero = object("zero", 2, json!({"size": 0}));
    let found = judge_documents(None, &new, &[other, zero], 34, 5);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].objects.as_ref().map(|o| o.count), Some(1));
}
