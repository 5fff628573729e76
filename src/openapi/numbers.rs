//! Numbers as the API server compares them.
//!
//! kube-openapi decodes a JSON number into a Go `int64` when its literal is
//! an integer that fits, into a `float64` otherwise, and its checks depend
//! on which: an `enum` value matches after converting the data to the enum
//! value's Go type (so `2.5` matches `2`), `multipleOf`, `minimum` and
//! `maximum` truncate a bound to an integer for `int64` data, and from 1.36
//! a bound that is not a value of an `integer` node's type fails every
//! value there. The object validator, the comparison and the abstract
//! evaluation of CEL rules all read numbers through this module, so the
//! three agree with the server and with each other.

use serde_json::{Number, Value};

/// A JSON number as the server decodes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum GoNum {
    Int(i64),
    Float(f64),
}

impl GoNum {
    pub(crate) fn of(n: &Number) -> GoNum {
        match n.as_i64() {
            Some(i) => GoNum::Int(i),
            None => GoNum::Float(n.as_f64().unwrap_or(f64::NAN)),
        }
    }

    pub(crate) fn as_f64(self) -> f64 {
        match self {
            GoNum::Int(i) => i as f64,
            GoNum::Float(f) => f,
        }
    }
}

/// Go's `int64(f)`: truncation towards zero; `None` where Go's result is
/// platform-defined (NaN, out of range).
pub(crate) fn go_trunc(f: f64) -> Option<i64> {
    let t = f.trunc();
    // 2^63 is exactly representable; every smaller f64 integer fits.
    (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0)
        .contains(&t)
        .then_some(t as i64)
}

/// Go's `int64(f)` as amd64 computes it, where most API servers run: out
/// of range (or NaN) it is the smallest int64. So a `maximum` of 2^63-1,
/// read as the float 2^63, rejects every integer (arm64 saturates
/// instead; docs/api-server-rules.md).
fn go_trunc_amd64(f: f64) -> i64 {
    go_trunc(f).unwrap_or(i64::MIN)
}

/// The server's enum check for one enum value: equal, or equal after
/// converting the data to the enum value's type (kube-openapi `Enum`, with
/// reflect's conversions: float to int truncates, int to float widens, an
/// int converts to the string of that code point).
pub(crate) fn enum_matches(data: &Value, allowed: &Value) -> bool {
    if crate::json::json_eq(data, allowed) {
        return true;
    }
    match (data, allowed) {
        (Value::Number(d), Value::Number(e)) => match (GoNum::of(d), enum_number(e)) {
            (GoNum::Float(f), GoNum::Int(e)) => go_trunc(f) == Some(e),
            (GoNum::Int(i), GoNum::Float(e)) => i as f64 == e,
            _ => false,
        },
        (Value::Number(d), Value::String(e)) => match GoNum::of(d) {
            GoNum::Int(i) => code_point(i) == *e,
            GoNum::Float(_) => false,
        },
        _ => false,
    }
}

/// An enum value as the server holds it. A manifest's `2.0` reaches the
/// server as `2` through kubectl's YAML reader (an `int64`) and as `2.0`
/// when sent as JSON (a `float64`); the integer reading accepts more data
/// (`2.5` matches it), so that is the one assumed.
fn enum_number(e: &Number) -> GoNum {
    match GoNum::of(e) {
        GoNum::Float(f) if f.fract() == 0.0 => go_trunc(f).map_or(GoNum::Float(f), GoNum::Int),
        n => n,
    }
}

/// Go's `string(rune(i))` as reflect converts an int to a string.
fn code_point(i: i64) -> String {
    u32::try_from(i)
        .ok()
        .and_then(char::from_u32)
        .unwrap_or('\u{FFFD}')
        .to_string()
}

/// The largest integer a JSON number holds exactly, as swag bounds it.
const MAX_JSON_FLOAT: f64 = 9_007_199_254_740_991.0;

/// swag's `IsFloat64AJSONInteger`: an integer within 2^53, up to a relative
/// error of 1e-9.
pub(crate) fn is_json_integer(f: f64) -> bool {
    if !f.is_finite() || f.abs() > MAX_JSON_FLOAT {
        return false;
    }
    let rounded = f.round();
    if f == rounded {
        return true;
    }
    if rounded == 0.0 {
        return false;
    }
    (f - rounded).abs() < 1e-9 * rounded.abs()
}

/// kube-openapi's `MultipleOf` on a float64: `1/factor*data` for factors
/// below one, `data/factor` otherwise, then an approximate integer test.
pub(crate) fn float_multiple_of(data: f64, factor: f64) -> bool {
    if factor <= 0.0 {
        return false;
    }
    let mult = if factor < 1.0 {
        1.0 / factor * data
    } else {
        data / factor
    };
    is_json_integer(mult)
}

/// The server minor from which an `integer` node's bounds must be integers
/// (kube-openapi passes the node's type to its number validator).
pub(crate) const TYPED_BOUNDS_SINCE: u32 = 36;

/// Whether a bound of `b` is a value of an `integer` node of the default
/// format: what `IsValueValidAgainstRange` checks from 1.36 (the bound
/// printed as Go prints a float, then parsed as an int64).
pub(crate) fn integer_bound(b: f64) -> bool {
    b.fract() == 0.0 && go_trunc(b).is_some()
}

/// `multipleOf` as the server applies it to `data`: natively (the factor
/// truncated) for int64 data when `native` (the factor is a value of the
/// node's type), as a float otherwise.
pub(crate) fn multiple_of(data: GoNum, factor: f64, native: bool) -> bool {
    match data {
        GoNum::Int(i) if native => {
            let f = go_trunc_amd64(factor);
            f > 0 && i % f == 0
        }
        _ => float_multiple_of(data.as_f64(), factor),
    }
}

/// `maximum` (`upper`) or `minimum` as the server applies it to `data`:
/// natively for int64 data (the bound truncated), as floats otherwise.
pub(crate) fn within(data: GoNum, bound: f64, exclusive: bool, upper: bool, native: bool) -> bool {
    let ord = match data {
        GoNum::Int(i) if native => i.cmp(&go_trunc_amd64(bound)),
        _ => match data.as_f64().partial_cmp(&bound) {
            Some(o) => o,
            None => return false,
        },
    };
    match (upper, exclusive) {
        (true, false) => ord.is_le(),
        (true, true) => ord.is_lt(),
        (false, false) => ord.is_ge(),
        (false, true) => ord.is_gt(),
    }
}

/// Whether an `enum` on a node of type `ty` is the exact set of values the
/// server accepts there. It is not on a `number` (or untyped) node with an
/// integer enum value: the data is converted to the enum value's type
/// first, so `2.5` matches `2`; nor on an untyped node with one-character
/// strings, which an integer matches by its code point.
pub(crate) fn exact_enum(ty: Option<&str>, values: &Value) -> bool {
    let Some(values) = values.as_array() else {
        return false;
    };
    let integral = |v: &Value| v.as_f64().is_some_and(|f| f.fract() == 0.0);
    match ty {
        Some("string" | "integer" | "boolean" | "object" | "array") => true,
        Some("number") => !values.iter().any(integral),
        _ => !values
            .iter()
            .any(|v| integral(v) || v.as_str().is_some_and(|s| s.chars().count() == 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_enum_matches_after_converting_to_the_enum_values_type() {
        // {type: number, enum: [1, 2]}: the server stores 2.5 and 1.5.
        assert!(enum_matches(&json!(2.5), &json!(2)));
        assert!(enum_matches(&json!(1.5), &json!(1)));
        assert!(enum_matches(&json!(-0.5), &json!(0)));
        assert!(!enum_matches(&json!(3.5), &json!(2)));
        // An enum value written 2.0 is read as the integer 2.
        assert!(enum_matches(&json!(2.9), &json!(2.0)));
        // An integer never matches a fraction.
        assert!(!enum_matches(&json!(2), &json!(2.5)));
        assert!(enum_matches(&json!(2.5), &json!(2.5)));
        // An int converts to the string of its code point.
        assert!(enum_matches(&json!(65), &json!("A")));
        assert!(!enum_matches(&json!(65.0), &json!("A")));
        assert!(!enum_matches(&json!("2"), &json!(2)));
        // Integers compare exactly, beyond 2^53 too.
        assert!(!enum_matches(
            &json!(9_007_199_254_740_993_i64),
            &json!(9_007_199_254_740_992_i64)
        ));
    }

    #[test]
    fn multiple_of_follows_the_server() {
        // An integer against a truncated factor: 5 is not a multiple of 2.
        assert!(!multiple_of(GoNum::Int(5), 2.5, true));
        assert!(multiple_of(GoNum::Int(5), 2.5, false));
        assert!(!multiple_of(GoNum::Int(5), 0.5, true));
        // Floats up to a relative 1e-9, factors below one inverted first.
        assert!(multiple_of(GoNum::Float(0.3), 0.1, true));
        assert!(multiple_of(GoNum::Float(0.7), 0.1, true));
        assert!(!multiple_of(GoNum::Float(0.35), 0.1, true));
        // Beyond 2^53 nothing is a multiple as a float.
        assert!(!float_multiple_of(1e17, 1.0));
    }

    #[test]
    fn bounds_truncate_for_integers() {
        // A maximum of 2^63-1 is the float 2^63, which amd64 converts to
        // the smallest int64: nothing is below it.
        assert!(!within(
            GoNum::Int(5),
            9_223_372_036_854_775_807_i64 as f64,
            false,
            true,
            true
        ));
        // maximum -2.5 on int64 data is -2 natively.
        assert!(within(GoNum::Int(-2), -2.5, false, true, true));
        assert!(!within(GoNum::Int(-2), -2.5, false, true, false));
        // 2^53 + 1 is above a maximum of 2^53, exactly.
        assert!(!within(
            GoNum::Int(9_007_199_254_740_993),
            9_007_199_254_740_992.0,
            false,
            true,
            true
        ));
        assert!(within(GoNum::Float(2.5), 2.5, false, true, true));
        assert!(!within(GoNum::Float(2.5), 2.5, true, true, true));
    }
}
