//! Findings on a version the new CRD does not serve are graded by what they
//! can reach (`grade_unserved_versions` in `src/compare/mod.rs`, the API
//! server's behaviour in `tests/live/unserved_stored.rs`): request-only
//! changes are info; changes to what stored objects read as keep their
//! severity while objects are stored in that version.

use crate::fixtures::*;

/// v1alpha1 (with `alpha` as its spec, unserved, status subresource) and v1.
fn unserved(alpha: Value, stored: &[&str]) -> Value {
    edit(&two_versions("v1", alpha, string_foo()), |c| {
        c["spec"]["versions"][0]["served"] = json!(false);
        c["spec"]["versions"][0]["subresources"] = json!({"status": {}});
        if !stored.is_empty() {
            c["status"] = json!({ "storedVersions": stored });
        }
    })
}

fn on_alpha(findings: &[Finding], check: Check) -> &Finding {
    findings
        .iter()
        .find(|f| f.check == check && f.version.as_deref() == Some("v1alpha1"))
        .unwrap_or_else(|| panic!("no {check} on v1alpha1:\n{}", dump(findings)))
}

/// The old spec and a new one that removes `bar`, defaults `foo`, and
/// tightens `foo` with an enum; the new CRD also drops the status
/// subresource of v1alpha1.
fn changed(stored: &[&str]) -> Vec<Finding> {
    let old = unserved(foo_and_bar(), stored);
    let mut new = unserved(
        props(json!({"foo": {"type": "string", "default": "x", "enum": ["x"]}})),
        stored,
    );
    if let Some(v) = new["spec"]["versions"][0].as_object_mut() {
        v.remove("subresources");
    }
    compare(&old, &new)
}

#[test]
fn request_only_changes_to_an_unserved_version_are_info_even_while_it_is_stored() {
    for stored in [&["v1alpha1", "v1"][..], &["v1"], &[]] {
        let findings = changed(stored);
        for check in [Check::Enum, Check::Subresources] {
            let f = on_alpha(&findings, check);
            assert_eq!(f.severity, Severity::Info, "{stored:?}: {}", f.message);
            assert!(
                f.message.contains("not served in either release"),
                "{}",
                f.message
            );
        }
    }
}

#[test]
fn data_changes_to_an_unserved_version_still_stored_stay_errors_and_say_why() {
    let findings = changed(&["v1alpha1", "v1"]);
    let removal = on_alpha(&findings, Check::ExistingFieldRemoval);
    assert_eq!(removal.severity, Severity::Error);
    for phrase in [
        "still in status.storedVersions",
        "pruned",
        "whenever they are read",
        "migrate",
    ] {
        assert!(
            removal.message.contains(phrase),
            "{phrase}: {}",
            removal.message
        );
    }
    let default = on_alpha(&findings, Check::Default);
    assert_eq!(default.severity, Severity::Error);
    assert!(
        default
            .message
            .contains("defaulted by this version's schema"),
        "{}",
        default.message
    );
}

#[test]
fn data_changes_to_an_unserved_version_not_stored_are_info_or_warnings_when_assumed() {
    let known = changed(&["v1"]);
    for check in [Check::ExistingFieldRemoval, Check::Default] {
        let f = on_alpha(&known, check);
        assert_eq!(f.severity, Severity::Info, "{}", f.message);
        assert!(
            f.message
                .contains("not served in either release and is not in status.storedVersions"),
            "{}",
            f.message
        );
    }
    let assumed = changed(&[]);
    for check in [Check::ExistingFieldRemoval, Check::Default] {
        let f = on_alpha(&assumed, check);
        assert_eq!(f.severity, Severity::Warning, "{}", f.message);
        assert!(f.message.contains("ASSUMED"), "{}", f.message);
    }
}

/// A version the old CRD served and the new one does not: after the update
/// no request goes through it, so what only matters to requests is info
/// (its removal from service is `servedVersionRemoval`'s to report).
#[test]
fn request_only_changes_to_a_version_no_longer_served_are_info() {
    let served_before = |alpha: Value| {
        edit(&unserved(alpha, &["v1"]), |c| {
            c["spec"]["versions"][0]["served"] = json!(true);
        })
    };
    let old = served_before(foo_and_bar());
    let new = unserved(
        props(json!({"foo": {"type": "string", "enum": ["x"]}, "bar": {"type": "string"}})),
        &["v1"],
    );
    let findings = compare(&old, &new);
    let f = on_alpha(&findings, Check::Enum);
    assert_eq!(f.severity, Severity::Info, "{}", f.message);
    assert!(
        f.message.contains("version v1alpha1 is no longer served"),
        "{}",
        f.message
    );
    assert!(
        findings
            .iter()
            .any(|f| f.check == Check::ServedVersionRemoval),
        "{}",
        dump(&findings)
    );
}
