//! v1beta1 input: normalized to v1 before comparing, so only real
//! differences are reported.

use crate::fixtures::*;

/// `widget()` with a status subresource and a printer column, as v1beta1
/// wrote it; the root schema leaves `type: object` implied.
fn v1beta1_widget(preserve_unknown_fields: Option<bool>) -> Value {
    let mut doc = json!({
        "apiVersion": "apiextensions.k8s.io/v1beta1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "version": "v1",
            "names": {"kind": "Widget", "plural": "widgets"},
            "validation": {"openAPIV3Schema": {"properties": {"spec": string_foo()}}},
            "subresources": {"status": {}},
            "additionalPrinterColumns": [{"name": "Foo", "type": "string", "JSONPath": ".spec.foo"}]
        }
    });
    if let Some(p) = preserve_unknown_fields {
        doc["spec"]["preserveUnknownFields"] = json!(p);
    }
    doc
}

/// The v1 spelling of [`v1beta1_widget`].
fn v1_widget() -> Value {
    edit(&widget(), |c| {
        c["spec"]["versions"][0]["subresources"] = json!({"status": {}});
        c["spec"]["versions"][0]["additionalPrinterColumns"] =
            json!([{"name": "Foo", "type": "string", "jsonPath": ".spec.foo"}]);
    })
}

#[test]
fn a_v1beta1_crd_against_its_v1_equivalent_only_reports_the_dropped_preserve_unknown_fields() {
    let findings = compare(&v1beta1_widget(None), &v1_widget());
    flags(
        &findings,
        Check::PreserveUnknownFields,
        Severity::Error,
        None,
        None,
        &["spec.preserveUnknownFields true -> false"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn a_v1beta1_crd_without_preserve_unknown_fields_matches_its_v1_equivalent() {
    assert_clean(&compare(&v1beta1_widget(Some(false)), &v1_widget()));
    let report = run_config(&v1beta1_widget(Some(false)), &v1_widget(), "");
    assert_eq!(report.crds[0].status, CrdStatus::Safe);
}
