//! CEL rules: added, changed, removed, transition rules and the cost budget
//! (`src/compare/fields/cel.rs`).

use super::*;

/// A CEL rule without extras.
pub(crate) fn rule(rule: &str) -> Value {
    json!({ "rule": rule })
}

/// `^.spec.foo` as a string with these CEL rules.
pub(crate) fn with_rules(rules: &[Value]) -> Value {
    json!({"type": "string", "x-kubernetes-validations": rules})
}

fn cel(rules: &[Value]) -> Value {
    foo(with_rules(rules))
}

/// `^.spec.foo` as up to `rows` rows of at most 400 integers, each row
/// checked by these rules. `self.all(x, self.all(y, ...))` over 400 items
/// costs 802,002 per row by the API server's estimate: under its per-call
/// limit of 1,000,000, and twelve rows under its per-rule limit of
/// 10,000,000.
pub(crate) fn rows(rows: u64, rules: &[&str]) -> Value {
    let rules: Vec<Value> = rules.iter().map(|r| rule(r)).collect();
    json!({"type": "array", "maxItems": rows, "items": {
        "type": "array", "maxItems": 400,
        "items": {"type": "integer", "minimum": 0},
        "x-kubernetes-validations": rules
    }})
}

pub(crate) const QUADRATIC: [&str; 2] = [
    "self.all(x, self.all(y, x >= 0))",
    "self.all(x, self.all(y, x >= 1))",
];

#[test]
fn a_rule_added_past_the_per_object_cost_budget_warns() {
    let f = flags(
        &flagged(Check::CelCostBudget),
        Check::CelCostBudget,
        Severity::Warning,
        Some("v1"),
        Some("^.spec.foo[*]"),
        &[
            "can cost up to 19,248,048 in one object, above the API server's runtime budget of 10,000,000 per object (the old rules at most 9,624,024)",
            "(^.spec.foo: 12 items, ^.spec.foo[*]: 400 items)",
            "\"validation failed due to running out of cost budget, no further validation rules will be run\"",
            "at ^.spec.foo[*] (9,624,024, 12 runs of 802,002)",
        ],
    );
    assert_eq!(f.old, Some(json!(9_624_024)));
    assert_eq!(f.new, Some(json!(19_248_048)));
}

/// The stored objects hold at most two rows: the new schema's twelve are
/// for objects written after the update, and two rows cost 3,208,008.
#[test]
fn a_rule_added_over_a_list_the_old_schema_keeps_short_is_within_the_budget() {
    let findings = compare(&foo(rows(2, &QUADRATIC[..1])), &foo(rows(12, &QUADRATIC)));
    assert!(
        findings.iter().all(|f| f.check != Check::CelCostBudget),
        "{}",
        dump(&findings)
    );
    // Unchanged rules cost what they did: nothing to report, whatever the total.
    assert_clean(&compare(
        &foo(rows(12, &QUADRATIC)),
        &foo(rows(12, &QUADRATIC)),
    ));
}

#[test]
fn a_cel_rule_added_is_unsafe() {
    let f = example_flags_foo(
        Check::XValidations,
        Severity::Error,
        &["CEL rule added `self.size() < 5`"],
    );
    assert!(!f.message.contains("oldSelf"), "{}", f.message);
}

/// The rule's own message says what it enforces in its author's words; the
/// table's change column keeps it whole even when it holds a colon.
#[test]
fn a_cel_finding_shows_the_rules_message() {
    let with_message = json!({"rule": "self.size() < 5", "message": "names: at most 4 \"chars\""});
    let f = flags_foo(
        &compare(&cel(&[]), &cel(&[with_message])),
        Check::XValidations,
        Severity::Error,
        &["CEL rule added `self.size() < 5` (\"names: at most 4 \\\"chars\\\"\")"],
    );
    // With the value that shows it failing, after the rule.
    assert_eq!(
        crd_safety::report::change_of(&f),
        "CEL rule added `self.size() < 5` (\"names: at most 4 \\\"chars\\\"\") (e.g. `\"aaaaa\"`, 5 characters, \
passes the old schema and fails it)"
    );
}

#[test]
fn a_cel_rule_changed_is_unsafe() {
    flags_foo(
        &compare(
            &cel(&[rule("self.size() < 5")]),
            &cel(&[rule("self.size() < 3")]),
        ),
        Check::XValidations,
        Severity::Error,
        &["CEL rule changed `self.size() < 5` -> `self.size() < 3`"],
    );
}

#[test]
fn a_cel_transition_rule_added_says_it_is_never_ratcheted() {
    flags_foo(
        &compare(&widget(), &cel(&[rule("self == oldSelf")])),
        Check::XValidations,
        Severity::Error,
        &[
            "CEL rule added `self == oldSelf`",
            "transition rule (uses oldSelf)",
            "never ratcheted",
        ],
    );
}

/// The message of the `xValidations` error on `^.spec.foo`.
fn rule_message(foo_schema: Value, rules: &[Value]) -> String {
    let mut with = foo_schema.clone();
    with["x-kubernetes-validations"] = json!(rules);
    let findings = compare(&foo(foo_schema), &foo(with));
    flags_foo(&findings, Check::XValidations, Severity::Error, &[]).message
}

#[test]
fn only_a_rule_that_can_fail_to_evaluate_says_evaluation_errors_fail_every_write() {
    let every_write = "every write fails, unchanged updates included";
    let string = json!({"type": "string"});
    // A size comparison always evaluates: ratcheted like a keyword.
    let sized = rule_message(string.clone(), &[rule("self.size() < 5")]);
    assert!(!sized.contains(every_write), "{sized}");
    assert!(
        sized.contains("updates that leave it unchanged still succeed"),
        "{sized}"
    );
    // `duration("abc")` is an error, not a `false`.
    let parsed = rule_message(string, &[rule("duration(self) > duration('1s')")]);
    assert!(parsed.contains(every_write), "{parsed}");
    // A field the stored object may lack is a missing key...
    let optional = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let missing = rule_message(optional.clone(), &[rule("self.a != 'x'")]);
    assert!(missing.contains(every_write), "{missing}");
    // ...unless the rule asks first, or the old schema requires it.
    let guarded = rule_message(optional, &[rule("!has(self.a) || self.a != 'x'")]);
    assert!(!guarded.contains(every_write), "{guarded}");
    let required = json!({"type": "object", "required": ["a"],
        "properties": {"a": {"type": "string"}}});
    let present = rule_message(required, &[rule("self.a != 'x'")]);
    assert!(!present.contains(every_write), "{present}");
}

/// `^.spec.foo` as a list of addresses (`type`, optional `value`) with
/// this rule (and its message) on the list.
fn addresses(rule: &str, message: &str) -> Value {
    foo(
        json!({"type": "array", "items": {"type": "object", "required": ["type"], "properties": {
        "type": {"type": "string"}, "value": {"type": "string"}}},
        "x-kubernetes-validations": [{"rule": rule, "message": message}]}),
    )
}

#[test]
fn a_rule_rewritten_with_guards_the_old_rule_needed_is_info() {
    // Gateway API v1.3.0 -> v1.4.1.
    let old = "self.all(a1, a1.type == 'IPAddress' ? self.exists_one(a2, a2.type == a1.type && \
a2.value == a1.value) : true)";
    let new = "self.all(a1, a1.type == 'IPAddress' && has(a1.value) ? self.exists_one(a2, \
a2.type == a1.type && has(a2.value) && a2.value == a1.value) : true)";
    let m = "IPAddress values must be unique";
    flags_foo(
        &compare(&addresses(old, m), &addresses(new, m)),
        Check::XValidations,
        Severity::Info,
        &[
            "with `has(a1.value)`, `has(a2.value)` added where the old rule already failed to evaluate without them",
        ],
    );
    // The same expression with other quotes and parentheses is the same
    // rule.
    let requoted = "(self.all(a1, (a1.type == \"IPAddress\") ? self.exists_one(a2, a2.type == a1.type && \
a2.value == a1.value) : true))";
    flags_foo(
        &compare(&addresses(old, m), &addresses(requoted, m)),
        Check::XValidations,
        Severity::Info,
        &["the same expression (only whitespace, comments, quotes or parentheses differ)"],
    );
}

#[test]
fn a_rewrite_the_analysis_cannot_decide_says_what_would_have_to_hold() {
    let m = "at most one address";
    let findings = compare(
        &addresses("self.size() <= 1", m),
        &addresses("self.all(a, a.type == 'IPAddress') || self.size() <= 1", m),
    );
    // Looser, but not shown so: the old rule is named as what stored
    // objects passed.
    let f = flags_foo(&findings, Check::XValidations, Severity::Error, &[]);
    assert!(
        f.message.contains("it rewrites the old rule: stored objects passed that one and keep passing this one only \
if every object the old rule accepts passes it too"),
        "{}",
        f.message
    );
    // A rule with another message is not called a rewrite.
    let other = compare(
        &addresses("self.size() <= 1", m),
        &addresses("self.all(a, a.type == 'IPAddress')", "addresses only"),
    );
    let f = flags_foo(&other, Check::XValidations, Severity::Error, &[]);
    assert!(!f.message.contains("rewrites"), "{}", f.message);
}

#[test]
fn optional_old_self_changed_is_unsafe() {
    let optional = json!({"rule": "self == oldSelf", "optionalOldSelf": true});
    flags_foo(
        &compare(&cel(&[rule("self == oldSelf")]), &cel(&[optional])),
        Check::XValidations,
        Severity::Error,
        &["optionalOldSelf changed on CEL rule `self == oldSelf`"],
    );
}

#[test]
fn a_cel_message_only_change_is_info() {
    let with_message = |m: &str| json!({"rule": "self.size() < 5", "message": m});
    let findings = compare(
        &cel(&[with_message("too long")]),
        &cel(&[with_message("at most 4")]),
    );
    flags_foo(
        &findings,
        Check::XValidations,
        Severity::Info,
        &["message, reason or fieldPath of CEL rule `self.size() < 5` changed"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn a_cel_rule_removed_is_safe() {
    let two = cel(&[rule("self.size() < 5"), rule("self != 'x'")]);
    assert_clean(&compare(&two, &cel(&[rule("self.size() < 5")])));
    assert_clean(&compare(&two, &widget()));
}
