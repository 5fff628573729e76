use serde_json::json;

use super::*;
use crate::compare::ObjectsDetail;
use crate::compare::catalog::{DATA_LOSS, VALUE_RULES};
use crate::object_validation::Rule;

/// A complete scan of `scanned` objects in v1.
fn scan(scanned: u64) -> ScanSummary {
    let mut s = ScanSummary::new(34);
    s.versions.push("v1".into());
    s.scanned = scanned;
    s
}

fn schema_finding(check: Check, path: &str) -> Finding {
    Finding::new(
        check,
        Severity::Error,
        format!("{check} tightened at {path}."),
    )
    .in_version("v1")
    .at(path)
}

fn objects_finding(check: Check, path: &str, rule: &str, count: u64) -> Finding {
    Finding::new(
        check,
        check.default_severity(),
        format!("{count} of 3 objects fail {rule} at {path}"),
    )
    .in_version("v1")
    .at(path)
    .with_objects(ObjectsDetail {
        rule: rule.into(),
        count,
        scanned: 3,
        ratcheted: Some(true),
        examples: vec!["ns/a".into()],
    })
}

#[test]
fn a_tightened_bound_no_stored_object_fails_becomes_a_warning_that_says_so() {
    let out = grade_by_objects(
        vec![schema_finding(Check::MaxLength, "^.spec.name")],
        &scan(3),
        Vec::new(),
    );
    let f = &out.findings[0];
    assert_eq!(f.severity, Severity::Warning);
    let grade = f.grade.as_ref().expect("graded");
    assert_eq!(grade.outcome, GradeOutcome::NoStoredObjectAffected);
    assert_eq!(grade.schema_severity, Severity::Error);
    assert!(f.message.contains("0 of 3 in v1 scanned"), "{}", f.message);
    assert!(f.message.contains("refused from now on"), "{}", f.message);
    assert_eq!(
        (grade.objects_affected, grade.objects_scanned),
        (Some(0), Some(3))
    );
    assert!(
        f.objects.is_none(),
        "no object to list: it stays a schema finding"
    );
    assert_eq!(out.grading.reach_no_object, 1);
    assert_eq!(out.grading.objects_scanned, 3);
}

#[test]
fn stored_objects_that_fail_keep_the_error_and_the_scan_finding_folds_into_it() {
    let out = grade_by_objects(
        vec![schema_finding(Check::MaxLength, "^.spec.name")],
        &scan(3),
        vec![
            objects_finding(Check::InvalidObjects, "^.spec.name", "maxLength", 2),
            objects_finding(Check::InvalidObjects, "^.spec.other", "maxLength", 1),
        ],
    );
    let f = &out.findings[0];
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(
        f.grade.as_ref().map(|g| g.outcome),
        Some(GradeOutcome::StoredObjectsAffected)
    );
    assert_eq!(f.objects.as_ref().map(|o| o.count), Some(2));
    assert!(
        f.message.contains("2 of 3 objects fail maxLength"),
        "{}",
        f.message
    );
    assert_eq!(
        out.scan_findings.len(),
        1,
        "only the other node's finding stays"
    );
    assert_eq!(out.scan_findings[0].path.as_deref(), Some("^.spec.other"));
}

#[test]
fn a_failure_at_a_sibling_with_a_longer_name_or_of_another_rule_does_not_count() {
    let out = grade_by_objects(
        vec![schema_finding(Check::Pattern, "^.spec.name")],
        &scan(3),
        vec![
            objects_finding(Check::InvalidObjects, "^.spec.names", "pattern", 1),
            objects_finding(Check::InvalidObjects, "^.spec.name", "maxLength", 1),
        ],
    );
    assert_eq!(out.findings[0].severity, Severity::Warning);
    assert_eq!(out.scan_findings.len(), 2, "neither is this finding's");
}

#[test]
fn failures_below_the_node_count_for_a_change_that_reaches_them() {
    let out = grade_by_objects(
        vec![schema_finding(Check::AdditionalProperties, "^.spec.labels")],
        &scan(3),
        vec![objects_finding(
            Check::PrunedFields,
            "^.spec.labels{*}",
            "pruned",
            1,
        )],
    );
    assert_eq!(out.findings[0].severity, Severity::Error);
    assert!(out.scan_findings.is_empty());
}

#[test]
fn a_narrowed_scan_or_a_version_not_read_decides_nothing_and_says_why() {
    let mut narrowed = scan(3);
    narrowed.namespace = Some("team-a".into());
    let out = grade_by_objects(
        vec![schema_finding(Check::Enum, "^.spec.mode")],
        &narrowed,
        Vec::new(),
    );
    let f = &out.findings[0];
    assert_eq!(f.severity, Severity::Error);
    let grade = f.grade.as_ref().expect("graded");
    assert_eq!(grade.outcome, GradeOutcome::Undecided);
    assert!(
        grade.reason.contains("namespace team-a (-n)"),
        "{}",
        grade.reason
    );
    assert_eq!(out.grading.undecided, 1);

    let other_version = schema_finding(Check::Enum, "^.spec.mode").in_version("v2");
    let out = grade_by_objects(vec![other_version], &scan(3), Vec::new());
    assert_eq!(out.findings[0].severity, Severity::Error);
    assert!(
        out.findings[0]
            .grade
            .as_ref()
            .expect("graded")
            .reason
            .contains("not read through v2")
    );
}

#[test]
fn a_cel_rule_left_unevaluated_keeps_its_error() {
    let rule = schema_finding(Check::XValidations, "^.spec")
        .values(None, Some(json!({"rule": "self.a == self.b"})));
    let not_evaluated = objects_finding(Check::NotEvaluated, "^.spec", "self.a == self.b", 1);
    let out = grade_by_objects(vec![rule.clone()], &scan(3), vec![not_evaluated]);
    assert_eq!(out.findings[0].severity, Severity::Error);
    assert_eq!(
        out.findings[0].grade.as_ref().map(|g| g.outcome),
        Some(GradeOutcome::Undecided)
    );
    // Evaluated for every object and none fails: decided.
    let out = grade_by_objects(vec![rule], &scan(3), Vec::new());
    assert_eq!(out.findings[0].severity, Severity::Warning);
}

#[test]
fn a_version_the_scan_could_not_validate_decides_nothing() {
    let unscannable =
        Finding::new(Check::NotEvaluated, Severity::Warning, "not scanned").in_version("v1");
    let out = grade_by_objects(
        vec![schema_finding(Check::Minimum, "^.spec.size")],
        &scan(3),
        vec![unscannable],
    );
    assert_eq!(out.findings[0].severity, Severity::Error);
}

#[test]
fn transition_rules_and_checks_about_clients_are_not_the_objects_to_decide() {
    let transition = schema_finding(Check::XValidations, "^.spec")
        .values(None, Some(json!({"rule": "self == oldSelf"})));
    let type_change = schema_finding(Check::Type, "^.spec.size");
    let removal = Finding::new(Check::ServedVersionRemoval, Severity::Error, "v1 unserved");
    let out = grade_by_objects(vec![transition, type_change, removal], &scan(3), Vec::new());
    for f in &out.findings {
        assert_eq!(f.severity, Severity::Error, "{}", f.check);
        assert!(f.grade.is_none(), "{}", f.check);
    }
    assert_eq!(out.grading.not_object_dependent, 3);
}

#[test]
fn a_new_required_field_is_decided_by_the_objects_that_lack_that_field() {
    let required = || {
        Finding::new(
            Check::Required,
            Severity::Error,
            "new required field mode on ^.spec",
        )
        .in_version("v1")
        .at("^.spec")
        .values(None, Some(json!("mode")))
    };
    let lacking_other = objects_finding(Check::InvalidObjects, "^.spec.size", "required", 1);
    let out = grade_by_objects(vec![required()], &scan(3), vec![lacking_other]);
    assert_eq!(
        out.findings[0].severity,
        Severity::Warning,
        "another field's required"
    );
    let lacking = objects_finding(Check::InvalidObjects, "^.spec.mode", "required", 3);
    let out = grade_by_objects(vec![required()], &scan(3), vec![lacking]);
    assert_eq!(out.findings[0].severity, Severity::Error);
    assert!(out.scan_findings.is_empty());
}

#[test]
fn a_removed_field_and_a_new_default_are_decided_by_the_data_they_reach() {
    let removed = schema_finding(Check::ExistingFieldRemoval, "^.spec.legacy");
    let defaulted = schema_finding(Check::Default, "^.spec.replicas");
    let out = grade_by_objects(
        vec![removed.clone(), defaulted.clone()],
        &scan(3),
        Vec::new(),
    );
    assert!(out.findings.iter().all(|f| f.severity == Severity::Warning));
    assert!(
        out.findings[0].message.contains("pruned"),
        "{}",
        out.findings[0].message
    );
    let out = grade_by_objects(
        vec![removed, defaulted],
        &scan(3),
        vec![
            objects_finding(Check::PrunedFields, "^.spec.legacy", "pruned", 1),
            objects_finding(Check::DefaultedFields, "^.spec.replicas", "defaulted", 2),
        ],
    );
    assert!(out.findings.iter().all(|f| f.severity == Severity::Error));
    assert!(out.scan_findings.is_empty());
}

#[test]
fn info_findings_and_a_consumers_requirement_are_left_alone() {
    let mut info = schema_finding(Check::Pattern, "^.spec.name");
    info.severity = Severity::Info;
    let mut pinned = schema_finding(Check::Pattern, "^.spec.name");
    pinned.requirement = Some(crate::compare::RequirementRef {
        name: "team/app".into(),
        owner: None,
        source: "req.yaml:1".into(),
    });
    let out = grade_by_objects(vec![info, pinned], &scan(3), Vec::new());
    assert_eq!(out.findings[0].severity, Severity::Info);
    assert_eq!(out.findings[1].severity, Severity::Error);
    assert!(out.findings.iter().all(|f| f.grade.is_none()));
}

#[test]
fn the_rules_the_catalog_names_are_the_validators_and_the_scans() {
    let mut known: Vec<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
    assert_eq!(
        VALUE_RULES,
        known.as_slice(),
        "VALUE_RULES is every validator rule"
    );
    known.extend(DATA_LOSS);
    known.push("defaulted");
    for &check in Check::ALL {
        if let DecidedBy::Failing(rules) = check.decided_by() {
            for rule in rules {
                assert!(
                    known.contains(rule),
                    "{check}: {rule} is no rule the scan reports"
                );
            }
        }
    }
}

#[test]
fn under_respects_segment_boundaries() {
    assert!(under("^.spec", "^.spec"));
    assert!(under("^.spec.a", "^.spec"));
    assert!(under("^.spec[*]", "^.spec"));
    assert!(under("^.spec{*}", "^.spec"));
    assert!(under("^.spec[\"a.b\"]", "^.spec"));
    assert!(!under("^.specs", "^.spec"));
    assert!(!under("^.sp", "^.spec"));
}
