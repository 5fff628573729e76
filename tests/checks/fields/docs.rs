//! Documentation keywords: reported as info (`src/compare/fields/docs.rs`).

use super::*;

#[test]
fn a_description_change_is_only_info() {
    let findings = flagged(Check::Description);
    flags_foo(
        &findings,
        Check::Description,
        Severity::Info,
        &["description changed"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}
