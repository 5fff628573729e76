//! Wording shared by messages across the crate, so that the same thing is
//! always said the same way.

use serde_json::Value;

/// `1 CRD`, `2 CRDs`.
pub fn plural<N>(n: N, one: &str, many: &str) -> String
where
    N: std::fmt::Display + PartialEq + From<u8>,
{
    let word = if n == N::from(1) { one } else { many };
    format!("{n} {word}")
}

/// What a JSON value is, for "expected an object, found a list".
pub fn value_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_pick_the_word() {
        assert_eq!(plural(1usize, "CRD", "CRDs"), "1 CRD");
        assert_eq!(plural(0u64, "request", "requests"), "0 requests");
        assert_eq!(value_kind(&serde_json::json!([1])), "a list");
    }
}
