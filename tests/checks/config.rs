//! Configuration (`src/config/`): levels, `ignore`, `failMode`, `mode`,
//! per-check options and exceptions.

use crate::catalog::unsafe_example;
use crate::fields::{combined, example_pair, flags_foo};
use crate::fixtures::*;

/// The report on the catalog's unsafe example of `check` under `config`.
fn run_example(check: Check, config: &str) -> Report {
    let (old, new) = example_pair(check);
    run_config(&old, &new, config)
}

#[test]
fn findings_fail_the_run_by_default() {
    let report = run_example(Check::Enum, "");
    assert_eq!(report.crds[0].status, CrdStatus::Unsafe);
    assert_eq!(report.exit_code(), 1);
}

#[test]
fn a_check_level_changes_the_severity() {
    for (check, level, severity) in [
        (Check::Enum, "warning", Severity::Warning),
        (Check::Type, "info", Severity::Info),
        (Check::Scope, "warning", Severity::Warning),
        (Check::Description, "error", Severity::Error),
    ] {
        let config = format!("checks:\n  {}: {level}\n", check.id());
        let report = run_example(check, &config);
        let findings = reported(&report);
        assert!(
            findings
                .iter()
                .all(|f| f.check != check || f.severity == severity),
            "{check}: {}",
            dump(findings)
        );
        assert!(
            findings.iter().any(|f| f.check == check),
            "{check}: {}",
            dump(findings)
        );
        assert_eq!(
            report.exit_code(),
            u8::from(severity == Severity::Error),
            "{check}"
        );
    }
}

#[test]
fn an_ignored_check_drops_its_findings_without_turning_them_into_unknown_changes() {
    for check in [
        Check::Default,
        Check::Description,
        Check::XValidations,
        Check::Enum,
        Check::PrinterColumns,
        Check::PreserveUnknownFields,
        Check::Minimum,
    ] {
        let config = format!("checks:\n  {}: ignore\n", check.id());
        let report = run_example(check, &config);
        assert_clean(reported(&report));
        assert!(report.crds[0].excepted.is_empty());
        assert_eq!(report.exit_code(), 0, "{check}");
    }
}

#[test]
fn fail_mode_open_makes_unknown_changes_warnings() {
    let (old, new) = example_pair(Check::UnknownChange);
    let closed = run_config(&old, &new, "failMode: closed\n");
    flags_foo(
        reported(&closed),
        Check::UnknownChange,
        Severity::Error,
        &[],
    );
    assert_eq!(closed.exit_code(), 1);
    let open = run_config(&old, &new, "failMode: open\n");
    flags_foo(
        reported(&open),
        Check::UnknownChange,
        Severity::Warning,
        &[],
    );
    assert_eq!(open.crds[0].status, CrdStatus::Warning);
    assert_eq!(open.exit_code(), 0);
}

#[test]
fn fail_mode_open_leaves_other_errors_alone() {
    let report = run_example(Check::Type, "failMode: open\n");
    flags_foo(reported(&report), Check::Type, Severity::Error, &[]);
    assert_eq!(report.exit_code(), 1);
}

#[test]
fn mode_warn_lists_the_errors_but_exits_zero() {
    let report = run_example(Check::Type, "mode: warn\n");
    flags_foo(reported(&report), Check::Type, Severity::Error, &[]);
    assert_eq!(report.crds[0].status, CrdStatus::Unsafe);
    assert_eq!(report.summary.errors, 1);
    assert!(!report.summary.failed);
    assert_eq!(report.exit_code(), 0);
    assert!(
        report.summary_line().contains("mode: warn, not failing"),
        "{}",
        report.summary_line()
    );
}

#[test]
fn per_check_options_flip_the_safe_direction_to_an_error() {
    let any_of = (combined("anyOf", &["a"]), combined("anyOf", &["a", "b"]));
    let cases = [
        (
            "enum: {allowAdditions: false}",
            Check::Enum,
            unsafe_example(Check::Enum),
            true,
        ),
        (
            "pattern: {allowRemoval: false}",
            Check::Pattern,
            unsafe_example(Check::Pattern),
            true,
        ),
        (
            "nullable: {allowAddition: false}",
            Check::Nullable,
            unsafe_example(Check::Nullable),
            true,
        ),
        (
            "xValidations: {allowRemoval: false}",
            Check::XValidations,
            unsafe_example(Check::XValidations),
            true,
        ),
        (
            "anyOf: {allowAdditions: false}",
            Check::AnyOf,
            (Some(any_of.0), Some(any_of.1)),
            false,
        ),
    ];
    for (option, check, (old, new), reverse) in cases {
        let (old, new) = (old.expect("fixture"), new.expect("fixture"));
        // The examples are the unsafe direction; the safe one is the reverse.
        let (old, new) = if reverse { (new, old) } else { (old, new) };
        let default = run_config(&old, &new, "");
        assert!(
            reported(&default)
                .iter()
                .all(|f| f.severity != Severity::Error),
            "{option}: {}",
            dump(reported(&default))
        );
        let strict = run_config(&old, &new, &format!("checks:\n  {option}\n"));
        flags_foo(reported(&strict), check, Severity::Error, &[]);
        assert_eq!(strict.exit_code(), 1, "{option}");
    }
}

#[test]
fn an_option_and_a_level_combine() {
    let (old, new) = unsafe_example(Check::Pattern);
    let report = run_config(
        &new.expect("fixture"),
        &old.expect("fixture"),
        "checks:\n  pattern: {level: warning, allowRemoval: false}\n",
    );
    flags_foo(
        reported(&report),
        Check::Pattern,
        Severity::Warning,
        &["pattern \"^a\" removed (pattern.allowRemoval is false)"],
    );
}

/// A config with one exception for `existingFieldRemoval` of `^.spec.bar`.
fn exception(crd: &str, version: Option<&str>, path: &str, check: &str) -> String {
    let version = version
        .map(|v| format!("    version: {v}\n"))
        .unwrap_or_default();
    format!(
        "exceptions:\n  - crd: \"{crd}\"\n{version}    path: \"{path}\"\n    check: {check}\n    reason: \"bar was never used\"\n"
    )
}

#[test]
fn an_exception_moves_a_matching_finding_into_excepted_with_its_reason() {
    let (old, new) = example_pair(Check::ExistingFieldRemoval);
    for config in [
        exception(
            "*.example.com",
            Some("v1"),
            "^.spec.*",
            "existingFieldRemoval",
        ),
        exception(NAME, None, "^.spec.bar", "existingFieldRemoval"),
        exception("widgets.*", None, "*", "existingFieldRemoval"),
    ] {
        let report = run_config(&old, &new, &config);
        assert_clean(reported(&report));
        let excepted = &report.crds[0].excepted;
        assert_eq!(excepted.len(), 1, "{config}");
        assert_eq!(excepted[0].reason, "bar was never used");
        assert_eq!(excepted[0].finding.check, Check::ExistingFieldRemoval);
        assert_eq!(excepted[0].finding.path.as_deref(), Some("^.spec.bar"));
        assert_eq!(report.crds[0].status, CrdStatus::Safe);
        assert_eq!(report.summary.excepted, 1);
        assert_eq!(report.exit_code(), 0);
    }
}

#[test]
fn an_exception_for_another_crd_version_path_or_check_does_not_apply() {
    let (old, new) = example_pair(Check::ExistingFieldRemoval);
    for config in [
        exception("gadgets.example.com", None, "*", "existingFieldRemoval"),
        exception(NAME, Some("v2"), "*", "existingFieldRemoval"),
        exception(NAME, None, "^.spec.foo", "existingFieldRemoval"),
        exception(NAME, None, "*", "type"),
    ] {
        let report = run_config(&old, &new, &config);
        assert!(report.crds[0].excepted.is_empty(), "{config}");
        flags(
            reported(&report),
            Check::ExistingFieldRemoval,
            Severity::Error,
            Some("v1"),
            Some("^.spec.bar"),
            &[],
        );
    }
}

#[test]
fn an_exception_without_a_path_covers_crd_wide_findings() {
    let config = "exceptions:\n  - crd: widgets.example.com\n    check: scope\n    reason: recreated on purpose\n";
    let report = run_example(Check::Scope, config);
    assert_clean(reported(&report));
    let excepted = &report.crds[0].excepted;
    assert_eq!(excepted.len(), 1);
    assert_eq!(excepted[0].finding.check, Check::Scope);
    assert_eq!(excepted[0].reason, "recreated on purpose");
}

#[test]
fn policy_apply_works_on_raw_findings_too() {
    let (old, new) = unsafe_example(Check::UnknownChange);
    let raw = compare(&old.expect("fixture"), &new.expect("fixture"));
    let config = Config::parse("failMode: open\n", "c.yaml").expect("fixture config");
    let (kept, excepted) = config.policy().apply(NAME, raw);
    assert!(excepted.is_empty());
    flags_foo(&kept, Check::UnknownChange, Severity::Warning, &[]);
}

#[test]
fn an_api_server_rejection_honours_levels_and_exceptions_like_any_check() {
    let rejection = Finding {
        check: Check::ApiServerRejects,
        severity: Severity::Error,
        version: None,
        path: None,
        message: "the API server refuses this update (server-side dry run): denied".to_string(),
        old: None,
        new: Some(json!("denied")),
        location: None,
        objects: None,
        requirement: None,
        witness: None,
        grade: None,
    };
    let apply = |config: &str| {
        let config = Config::parse(config, "c.yaml").expect("fixture config");
        config.policy().apply(NAME, vec![rejection.clone()])
    };
    let (kept, _) = apply("checks:\n  apiServerRejects: warning\n");
    flags(
        &kept,
        Check::ApiServerRejects,
        Severity::Warning,
        None,
        None,
        &["denied"],
    );
    let (kept, excepted) = apply(
        "exceptions:\n  - crd: \"*\"\n    check: apiServerRejects\n    reason: known webhook quirk\n",
    );
    assert_clean(&kept);
    assert_eq!(excepted.len(), 1);
    assert_eq!(excepted[0].reason, "known webhook quirk");
}

#[test]
fn date_time_and_datetime_are_the_same_format() {
    let f = |fmt: &str| foo(json!({"type": "string", "format": fmt}));
    assert_no(&compare(&f("date-time"), &f("datetime")), Check::Format);
}

#[test]
fn an_exception_with_a_non_string_version_is_refused_instead_of_matching_everything() {
    let err = Config::parse(
        "exceptions:\n- crd: a\n  version: 2\n  check: enum\n  reason: r\n",
        "c.yaml",
    )
    .expect_err("a numeric version is refused");
    assert_eq!(
        err.to_string(),
        "c.yaml: exceptions[0].version: expected a string, found 2"
    );
}

#[test]
fn webhook_to_none_is_explained_once() {
    let old = with_conversion(&same_two("v1"), webhook(Some("Y2E=")));
    let mut new = same_two("v1");
    new["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["extra"] =
        json!({"type": "string"});
    let conversions: Vec<Finding> = compare(&old, &new)
        .into_iter()
        .filter(|f| f.check == Check::Conversion)
        .collect();
    assert_eq!(conversions.len(), 1, "{}", dump(&conversions));
}

#[test]
fn a_version_served_in_neither_release_and_not_stored_cannot_break_anything() {
    let unserved = |alpha: Value| {
        edit(&two_versions("v1", alpha, string_foo()), |c| {
            c["spec"]["versions"][0]["served"] = json!(false)
        })
    };
    let (old, new) = (unserved(foo_and_bar()), unserved(string_foo()));
    // Stored versions known and without v1alpha1: the removal is info.
    let known = edit(&old, |c| c["status"] = json!({"storedVersions": ["v1"]}));
    let findings = compare(&known, &new);
    let f = findings
        .iter()
        .find(|f| f.check == Check::ExistingFieldRemoval)
        .expect("the removal is still reported");
    assert_eq!(f.severity, Severity::Info);
    assert_eq!(f.version.as_deref(), Some("v1alpha1"));
    assert!(
        f.message.contains("not served in either release"),
        "{}",
        f.message
    );
    // Only assumed: a warning that says what would make it safe.
    let findings = compare(&old, &new);
    let f = findings
        .iter()
        .find(|f| f.check == Check::ExistingFieldRemoval)
        .expect("reported");
    assert_eq!(f.severity, Severity::Warning);
    // Still stored: still an error.
    let stored = edit(&old, |c| {
        c["status"] = json!({"storedVersions": ["v1alpha1", "v1"]})
    });
    let findings = compare(&stored, &new);
    assert!(
        findings
            .iter()
            .any(|f| f.check == Check::ExistingFieldRemoval && f.severity == Severity::Error),
        "{}",
        dump(&findings)
    );
}
