//! Across the served versions of the new CRD with conversion `None`
//! (`src/compare/cross_version.rs`): fields one version keeps and another
//! drops.

use crate::catalog::flagged;
use crate::fixtures::*;

#[test]
fn a_served_only_field_is_lost_at_storage_time() {
    let f = flags(
        &flagged(Check::ConversionDataLoss),
        Check::ConversionDataLoss,
        Severity::Error,
        Some("v1alpha1"),
        Some("^.spec.bar"),
        &["^.spec.bar exists in served version v1alpha1 but not in storage version v1"],
    );
    assert!(f.message.contains("silently dropped"), "{}", f.message);
}

#[test]
fn a_storage_only_field_is_lost_on_update_through_the_other_version() {
    let new = two_versions("v1", string_foo(), foo_and_bar());
    let findings = compare(&widget(), &new);
    flags(
        &findings,
        Check::ConversionDataLoss,
        Severity::Error,
        Some("v1alpha1"),
        Some("^.spec.bar"),
        &["^.spec.bar exists in storage version v1 but not in served version v1alpha1"],
    );
}

#[test]
fn fields_kept_by_preserve_unknown_fields_are_not_lost() {
    let kept = edit(&string_foo(), |s| {
        s["x-kubernetes-preserve-unknown-fields"] = json!(true)
    });
    let new = two_versions("v1", foo_and_bar(), kept);
    assert_no(&compare(&widget(), &new), Check::ConversionDataLoss);
}

#[test]
fn served_versions_with_differing_schemas_are_compared_with_each_other() {
    let new = two_versions(
        "v1",
        props(json!({"foo": {"type": "integer"}})),
        string_foo(),
    );
    let findings = compare(&widget(), &new);
    flags(
        &findings,
        Check::Type,
        Severity::Error,
        Some("v1alpha1 -> v1"),
        Some("^.spec.foo"),
        &[
            "between served versions v1alpha1 -> v1 (conversion None",
            "type changed \"integer\" -> \"string\"",
        ],
    );
    flags(
        &findings,
        Check::Conversion,
        Severity::Warning,
        None,
        None,
        &["conversion is None but the served versions' schemas differ"],
    );
}

#[test]
fn a_pair_whose_first_version_is_new_speaks_of_objects_written_after_the_update() {
    // Cluster API v0.3.25 -> v1.11.3: the old CRD served neither v1beta1
    // nor v1beta2, so no stored object came through v1beta1; the
    // disagreement is about the objects that will.
    let new = two_versions(
        "v1",
        props(json!({"foo": {"type": "integer"}})),
        string_foo(),
    );
    let f = flags(
        &compare(&widget(), &new),
        Check::Type,
        Severity::Error,
        Some("v1alpha1 -> v1"),
        Some("^.spec.foo"),
        &[
            "for objects written through v1alpha1 after the update",
            "the old CRD did not serve v1alpha1",
        ],
    );
    assert!(
        f.message
            .starts_with("between served versions v1alpha1 -> v1 (conversion None")
    );
    // When the old CRD served v1alpha1 already (here with a webhook, so the
    // pair is new), stored objects may have come through it.
    let old = with_conversion(
        &two_versions(
            "v1",
            props(json!({"foo": {"type": "integer"}})),
            string_foo(),
        ),
        webhook(Some("Q0E=")),
    );
    let f = flags(
        &compare(&old, &new),
        Check::Type,
        Severity::Error,
        Some("v1alpha1 -> v1"),
        Some("^.spec.foo"),
        &[
            "between served versions v1alpha1 -> v1 (conversion None, so objects are not converted): ",
        ],
    );
    assert!(!f.message.contains("after the update"), "{}", f.message);
}

#[test]
fn cross_version_problems_the_old_crd_already_had_are_not_reported_again() {
    let differing = two_versions(
        "v1",
        foo_and_bar(),
        props(json!({"foo": {"type": "integer"}})),
    );
    // Neither the pair's type mismatch, nor the data loss, nor the
    // conversion warning: the old CRD had all of them already.
    assert_clean(&compare(&differing, &differing));
}

#[test]
fn cross_version_problems_are_new_when_the_old_crd_converted_with_a_webhook() {
    let differing = two_versions("v1", foo_and_bar(), string_foo());
    let old = with_conversion(&differing, webhook(Some("Q0E=")));
    flags(
        &compare(&old, &differing),
        Check::ConversionDataLoss,
        Severity::Error,
        Some("v1alpha1"),
        Some("^.spec.bar"),
        &["^.spec.bar exists in served version v1alpha1 but not in storage version v1"],
    );
}

#[test]
fn a_new_cross_version_problem_is_reported_next_to_grandfathered_ones() {
    let old = two_versions("v1", foo_and_bar(), string_foo());
    let new = two_versions(
        "v1",
        props(
            json!({"foo": {"type": "string"}, "bar": {"type": "string"}, "baz": {"type": "string"}}),
        ),
        string_foo(),
    );
    let findings = compare(&old, &new);
    flags(
        &findings,
        Check::ConversionDataLoss,
        Severity::Error,
        Some("v1alpha1"),
        Some("^.spec.baz"),
        &["^.spec.baz exists in served version v1alpha1"],
    );
    let losses = findings
        .iter()
        .filter(|f| f.check == Check::ConversionDataLoss)
        .count();
    assert_eq!(losses, 1, "{}", dump(&findings));
}

#[test]
fn a_conversion_webhook_turns_the_cross_version_checks_off() {
    let new = with_conversion(
        &two_versions("v1", foo_and_bar(), string_foo()),
        webhook(Some("Q0E=")),
    );
    let old = with_conversion(&widget(), webhook(Some("Q0E=")));
    assert_clean(&compare(&old, &new));
}
