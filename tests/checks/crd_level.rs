//! CRD-level checks (`src/compare/crd_level.rs`): scope, versions and
//! stored versions, names, subresources, columns, conversion.

use crate::catalog::flagged;
use crate::fields::reversed;
use crate::fixtures::*;

/// [`flags`] of a CRD-wide finding (no version, no path).
#[track_caller]
fn flags_crd_wide(
    findings: &[Finding],
    check: Check,
    severity: Severity,
    mentions: &[&str],
) -> Finding {
    flags(findings, check, severity, None, None, mentions)
}

/// [`flags_crd_wide`] on the catalog's unsafe example of `check`.
#[track_caller]
fn example_flags_crd_wide(check: Check, severity: Severity, mentions: &[&str]) -> Finding {
    flags_crd_wide(&flagged(check), check, severity, mentions)
}

/// [`flags`] of a finding on version `v1` as a whole (no path).
#[track_caller]
fn flags_v1(findings: &[Finding], check: Check, severity: Severity, mentions: &[&str]) -> Finding {
    flags(findings, check, severity, Some("v1"), None, mentions)
}

/// [`flags_v1`] on the catalog's unsafe example of `check`.
#[track_caller]
fn example_flags_v1(check: Check, severity: Severity, mentions: &[&str]) -> Finding {
    flags_v1(&flagged(check), check, severity, mentions)
}

/// [`flags`] of a finding on version `v1alpha1` as a whole (no path).
#[track_caller]
fn flags_v1alpha1(
    findings: &[Finding],
    check: Check,
    severity: Severity,
    mentions: &[&str],
) -> Finding {
    flags(findings, check, severity, Some("v1alpha1"), None, mentions)
}

#[test]
fn scope_change_is_unsafe() {
    let f = example_flags_crd_wide(
        Check::Scope,
        Severity::Error,
        &["scope changed Namespaced -> Cluster", "Widget"],
    );
    assert_eq!(
        (f.old.clone(), f.new.clone()),
        (Some(json!("Namespaced")), Some(json!("Cluster")))
    );
}

/// `v1alpha1` (not storage) and `v1` (storage), with `status.storedVersions`.
fn stored_in(versions: &[&str]) -> Value {
    edit(&same_two("v1"), |c| {
        c["status"] = json!({ "storedVersions": versions })
    })
}

#[test]
fn removing_a_version_listed_in_status_stored_versions_is_unsafe() {
    let findings = compare(&stored_in(&["v1alpha1", "v1"]), &widget());
    flags_v1alpha1(
        &findings,
        Check::StoredVersionRemoval,
        Severity::Error,
        &[
            "stored version v1alpha1 removed",
            "status.storedVersions lists it",
        ],
    );
}

#[test]
fn removing_a_version_not_in_status_stored_versions_is_not_a_stored_version_removal() {
    let findings = compare(&stored_in(&["v1"]), &widget());
    assert_no(&findings, Check::StoredVersionRemoval);
}

#[test]
fn removing_a_version_named_by_the_stored_versions_flag_is_unsafe() {
    let mut stored = StoredVersionsArg::default();
    stored.add("v1alpha1,v1").expect("fixture flag value");
    let report = run(Some(&same_two("v1")), Some(&widget()), "", &stored);
    flags_v1alpha1(
        reported(&report),
        Check::StoredVersionRemoval,
        Severity::Error,
        &["--stored-versions lists it"],
    );
    let source = report.crds[0].stored_versions.as_ref().map(|s| s.source);
    assert_eq!(source, Some(StoredVersionsSource::Flag));
}

#[test]
fn removing_the_assumed_storage_version_is_an_error() {
    let findings = flagged(Check::StoredVersionRemoval);
    flags_v1alpha1(
        &findings,
        Check::StoredVersionRemoval,
        Severity::Error,
        &["stored version v1alpha1 removed", "assumed"],
    );
}

#[test]
fn removing_another_version_when_stored_versions_are_assumed_is_a_warning() {
    let findings = compare(&same_two("v1"), &widget());
    flags_v1alpha1(
        &findings,
        Check::StoredVersionRemoval,
        Severity::Warning,
        &["version v1alpha1 removed", "--stored-versions"],
    );
    assert!(
        !findings
            .iter()
            .any(|f| f.check == Check::StoredVersionRemoval && f.severity == Severity::Error)
    );
}

#[test]
fn removing_a_served_version_is_a_warning() {
    flags_v1alpha1(
        &flagged(Check::ServedVersionRemoval),
        Check::ServedVersionRemoval,
        Severity::Warning,
        &["served version v1alpha1 removed", "example.com/v1alpha1"],
    );
}

#[test]
fn no_longer_serving_a_version_is_a_warning() {
    let new = edit(&same_two("v1"), |c| {
        c["spec"]["versions"][0]["served"] = json!(false)
    });
    let findings = compare(&same_two("v1"), &new);
    flags_v1alpha1(
        &findings,
        Check::ServedVersionRemoval,
        Severity::Warning,
        &["version v1alpha1 no longer served"],
    );
}

/// Unserving every version hides the stored objects from every reader,
/// and a CRD in that state could be deleted past the webhook's deletion
/// guard, which could no longer count them.
#[test]
fn no_longer_serving_any_version_is_an_error() {
    let new = edit(&same_two("v1"), |c| {
        c["spec"]["versions"][0]["served"] = json!(false);
        c["spec"]["versions"][1]["served"] = json!(false);
    });
    let findings = compare(&same_two("v1"), &new);
    let errors: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.check == Check::ServedVersionRemoval)
        .collect();
    let versions: Vec<Option<&str>> = errors.iter().map(|f| f.version.as_deref()).collect();
    assert_eq!(versions, [Some("v1alpha1"), Some("v1")], "{errors:#?}");
    for f in errors {
        assert_eq!(f.severity, Severity::Error, "{f:#?}");
        assert!(
            f.message
                .contains("no version of widgets.example.com is served any more")
                && f.message
                    .contains("can no longer be read, written, listed or counted"),
            "{}",
            f.message
        );
    }
}

#[test]
fn serving_a_version_again_or_adding_a_version_is_safe() {
    let unserved = edit(&same_two("v1"), |c| {
        c["spec"]["versions"][0]["served"] = json!(false)
    });
    assert_clean(&compare(&unserved, &same_two("v1")));
    assert_clean(&compare(&widget(), &same_two("v1")));
}

#[test]
fn moving_the_storage_version_is_info() {
    let f = example_flags_crd_wide(
        Check::StorageVersionChange,
        Severity::Info,
        &["storage version v1alpha1 -> v1"],
    );
    assert!(!f.message.contains("conversionDataLoss"), "{}", f.message);
}

#[test]
fn moving_the_storage_version_between_differing_schemas_mentions_the_data_loss() {
    let old = two_versions("v1alpha1", foo_and_bar(), string_foo());
    let new = two_versions("v1", foo_and_bar(), string_foo());
    flags_crd_wide(
        &compare(&old, &new),
        Check::StorageVersionChange,
        Severity::Info,
        &["storage version v1alpha1 -> v1", "conversionDataLoss"],
    );
}

#[test]
fn renaming_the_plural_is_unsafe() {
    example_flags_crd_wide(
        Check::Names,
        Severity::Error,
        &["names.plural changed widgets -> gizmos"],
    );
}

#[test]
fn removing_a_short_name_is_a_warning() {
    let old = edit(&widget(), |c| {
        c["spec"]["names"]["shortNames"] = json!(["wd", "wdg"])
    });
    let new = edit(&widget(), |c| {
        c["spec"]["names"]["shortNames"] = json!(["wdg"])
    });
    flags_crd_wide(
        &compare(&old, &new),
        Check::Names,
        Severity::Warning,
        &["names.shortNames removed: wd", "kubectl get wd"],
    );
}

#[test]
fn adding_short_names_or_spelling_out_default_names_is_safe() {
    let new = edit(&widget(), |c| {
        c["spec"]["names"]["shortNames"] = json!(["wd"]);
        c["spec"]["names"]["categories"] = json!(["all"]);
        c["spec"]["names"]["singular"] = json!("widget");
        c["spec"]["names"]["listKind"] = json!("WidgetList");
    });
    assert_clean(&compare(&widget(), &new));
}

#[test]
fn removing_the_status_subresource_is_unsafe() {
    example_flags_v1(
        Check::Subresources,
        Severity::Error,
        &["status subresource removed"],
    );
}

#[test]
fn adding_the_status_subresource_is_a_warning() {
    let findings = compare(&widget(), &widget_v1("subresources", json!({"status": {}})));
    flags_v1(
        &findings,
        Check::Subresources,
        Severity::Warning,
        &["status subresource added"],
    );
}

#[test]
fn removing_the_scale_subresource_is_unsafe_and_adding_it_is_info() {
    let scaled = widget_v1(
        "subresources",
        json!({"scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}),
    );
    flags_v1(
        &compare(&scaled, &widget()),
        Check::Subresources,
        Severity::Error,
        &["scale subresource removed"],
    );
    let added = compare(&widget(), &scaled);
    flags_v1(
        &added,
        Check::Subresources,
        Severity::Info,
        &["scale subresource added"],
    );
    assert_eq!(added.len(), 1, "{}", dump(&added));
}

#[test]
fn printer_column_changes_are_info() {
    let columns = |cols: Value| widget_v1("additionalPrinterColumns", cols);
    let foo_col = json!({"name": "Foo", "type": "string", "jsonPath": ".spec.foo"});
    let foo_moved = json!({"name": "Foo", "type": "string", "jsonPath": ".spec.bar"});
    example_flags_v1(
        Check::PrinterColumns,
        Severity::Info,
        &["printer column \"Foo\" added"],
    );
    flags_v1(
        &compare(&columns(json!([foo_col])), &widget()),
        Check::PrinterColumns,
        Severity::Info,
        &["printer column \"Foo\" removed"],
    );
    flags_v1(
        &compare(&columns(json!([foo_col])), &columns(json!([foo_moved]))),
        Check::PrinterColumns,
        Severity::Info,
        &["printer column \"Foo\" changed"],
    );
}

#[test]
fn conversion_webhook_to_none_with_differing_served_schemas_is_unsafe() {
    let findings = flagged(Check::Conversion);
    flags_crd_wide(
        &findings,
        Check::Conversion,
        Severity::Error,
        &["conversion Webhook -> None", "lose or misread"],
    );
}

#[test]
fn conversion_webhook_to_none_with_one_schema_is_a_warning() {
    let old = with_conversion(&same_two("v1"), webhook(Some("Q0E=")));
    let findings = compare(&old, &same_two("v1"));
    flags_crd_wide(
        &findings,
        Check::Conversion,
        Severity::Warning,
        &["conversion Webhook -> None", "share one schema"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn dropping_the_conversion_webhook_ca_bundle_is_a_warning() {
    let old = with_conversion(&same_two("v1"), webhook(Some("Q0E=")));
    let new = with_conversion(&same_two("v1"), webhook(None));
    let findings = compare(&old, &new);
    flags_crd_wide(
        &findings,
        Check::Conversion,
        Severity::Warning,
        &["caBundle is missing"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn a_new_ca_bundle_is_safe_and_switching_to_a_webhook_is_info() {
    let old = with_conversion(&same_two("v1"), webhook(Some("Q0E=")));
    let new = with_conversion(&same_two("v1"), webhook(Some("Q0I=")));
    assert_clean(&compare(&old, &new));
    let findings = compare(&same_two("v1"), &old);
    flags_crd_wide(
        &findings,
        Check::Conversion,
        Severity::Info,
        &["conversion None -> Webhook"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn dropping_the_crd_level_preserve_unknown_fields_is_unsafe() {
    example_flags_crd_wide(
        Check::PreserveUnknownFields,
        Severity::Error,
        &["spec.preserveUnknownFields true -> false"],
    );
}

#[test]
fn turning_off_the_crd_level_preserve_unknown_fields_is_info_where_every_schema_keeps_everything() {
    // Tekton v0.11 -> v0.30 and Knative v0.10 -> v0.18: a root that keeps
    // unknown fields and describes nothing below it prunes nothing.
    let kept = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let legacy = edit(&crd(vec![version("v1", true, kept.clone())]), |c| {
        c["spec"]["preserveUnknownFields"] = json!(true)
    });
    let structural = crd(vec![version("v1", true, kept.clone())]);
    flags_crd_wide(
        &compare(&legacy, &structural),
        Check::PreserveUnknownFields,
        Severity::Info,
        &["true -> false", "it drops nothing stored"],
    );
    // A described object below the kept root is pruned: still an error.
    let described = crd(vec![version(
        "v1",
        true,
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
               "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}),
    )]);
    flags_crd_wide(
        &compare(&legacy, &described),
        Check::PreserveUnknownFields,
        Severity::Error,
        &["spec.preserveUnknownFields true -> false", "prunes fields"],
    );
}

#[test]
fn turning_on_the_crd_level_preserve_unknown_fields_is_not_flagged() {
    assert_clean(&reversed(Check::PreserveUnknownFields));
}

#[test]
fn deprecating_a_version_is_info() {
    example_flags_v1(
        Check::Deprecation,
        Severity::Info,
        &["version v1 marked deprecated"],
    );
    let deprecated = |warning: &str| {
        edit(&widget(), |c| {
            c["spec"]["versions"][0]["deprecated"] = json!(true);
            c["spec"]["versions"][0]["deprecationWarning"] = json!(warning);
        })
    };
    flags_v1(
        &compare(&widget(), &deprecated("use v2")),
        Check::Deprecation,
        Severity::Info,
        &["marked deprecated", "use v2"],
    );
    flags_v1(
        &compare(&deprecated("use v2"), &deprecated("use v3")),
        Check::Deprecation,
        Severity::Info,
        &["deprecationWarning text changed"],
    );
    flags_v1(
        &compare(&deprecated("use v2"), &widget()),
        Check::Deprecation,
        Severity::Info,
        &["no longer deprecated"],
    );
}

#[test]
fn removing_a_selectable_field_is_a_warning_and_adding_one_is_safe() {
    example_flags_v1(
        Check::SelectableFields,
        Severity::Warning,
        &["selectable field .spec.foo removed"],
    );
    assert_clean(&reversed(Check::SelectableFields));
}

#[test]
fn a_crd_only_in_the_new_manifests_is_new() {
    let report = run(
        None,
        Some(&same_two("v1")),
        "",
        &StoredVersionsArg::default(),
    );
    assert_eq!(report.crds[0].status, CrdStatus::New);
    let findings = reported(&report);
    flags_crd_wide(
        findings,
        Check::NewCrd,
        Severity::Info,
        &["new CRD (kind Widget, versions v1alpha1, v1)"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(findings));
}

#[test]
fn a_new_crd_whose_served_versions_lose_data_gets_warnings_not_errors() {
    let new = two_versions("v1", foo_and_bar(), string_foo());
    let report = run(None, Some(&new), "", &StoredVersionsArg::default());
    assert_eq!(report.crds[0].status, CrdStatus::New);
    flags(
        reported(&report),
        Check::ConversionDataLoss,
        Severity::Warning,
        Some("v1alpha1"),
        Some("^.spec.bar"),
        &["exists in served version v1alpha1 but not in storage version v1"],
    );
}

#[test]
fn a_crd_only_in_the_old_manifests_is_absent() {
    let report = run(Some(&widget()), None, "", &StoredVersionsArg::default());
    assert_eq!(report.crds[0].status, CrdStatus::Absent);
    assert_eq!(report.exit_code(), 0);
    flags_crd_wide(
        reported(&report),
        Check::AbsentCrd,
        Severity::Info,
        &["leaves widgets.example.com in place", "every Widget object"],
    );
}
