//! The output contract: every JSON report the tests see is held to
//! `docs/output.schema.json`, so a field changes only together with the
//! schema users read.

use std::sync::OnceLock;

use serde_json::Value;

/// Where `value` breaks the schema, one line each; empty when it holds.
pub fn violations(value: &Value) -> Vec<String> {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    let validator = VALIDATOR.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/output.schema.json");
        let text = std::fs::read_to_string(path).expect("docs/output.schema.json is readable");
        let schema: Value = serde_json::from_str(&text).expect("the output schema is JSON");
        jsonschema::validator_for(&schema).expect("the output schema compiles")
    });
    validator
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// Panics, naming each violation, unless `value` holds to the schema.
pub fn assert_holds(value: &Value) {
    let errors = violations(value);
    assert!(
        errors.is_empty(),
        "the output breaks docs/output.schema.json:\n{}\n{value:#}",
        errors.join("\n")
    );
}
