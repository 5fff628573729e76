//! Field-level checks (`src/compare/fields/`): one schema keyword of one
//! field at a time, one file per family as in `src/compare/fields/`; the
//! helpers the families and other files share are here.

use crate::catalog::{flagged, unsafe_example};
use crate::fixtures::*;

mod cel;
mod combinators;
mod docs;
mod lists;
mod presence;
mod shape;
mod unknown;
mod values;

/// [`flags`] at `^.spec.foo` of `v1`, the field most fixtures change.
#[track_caller]
pub(crate) fn flags_foo(
    findings: &[Finding],
    check: Check,
    severity: Severity,
    mentions: &[&str],
) -> Finding {
    flags(
        findings,
        check,
        severity,
        Some("v1"),
        Some("^.spec.foo"),
        mentions,
    )
}

/// [`flags_foo`] on the catalog's unsafe example of `check`.
#[track_caller]
fn example_flags_foo(check: Check, severity: Severity, mentions: &[&str]) -> Finding {
    flags_foo(&flagged(check), check, severity, mentions)
}

/// The catalog's unsafe example of `check` as (old, new), both present.
pub(crate) fn example_pair(check: Check) -> (Value, Value) {
    let (old, new) = unsafe_example(check);
    (old.expect("fixture"), new.expect("fixture"))
}

/// The findings on the catalog's unsafe example of `check` read backwards
/// (new to old), mostly the safe direction.
pub(crate) fn reversed(check: Check) -> Vec<Finding> {
    let (old, new) = example_pair(check);
    compare(&new, &old)
}

pub(crate) use cel::{QUADRATIC, rows, rule, with_rules};
pub(crate) use combinators::{combined, object_ab};
pub(crate) use values::{bound_of, bounded};
