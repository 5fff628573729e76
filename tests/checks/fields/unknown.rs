//! The catch-all: a keyword or version field no check claims is still reported
//! (`src/compare/fields/mod.rs`).

use super::*;

#[test]
fn an_unknown_keyword_change_is_reported_readably() {
    let findings = flagged(Check::UnknownChange);
    let f = flags_foo(&findings, Check::UnknownChange, Severity::Error, &[]);
    assert!(
        f.message
            .starts_with("^.spec.foo: x-acme-owner \"a\" -> \"b\""),
        "{}",
        f.message
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn an_unknown_version_field_change_is_reported() {
    let old = widget_v1("x-extra", json!("a"));
    let new = widget_v1("x-extra", json!("b"));
    flags(
        &compare(&old, &new),
        Check::UnknownChange,
        Severity::Error,
        Some("v1"),
        None,
        &["versions[v1].x-extra: \"a\" -> \"b\""],
    );
}
