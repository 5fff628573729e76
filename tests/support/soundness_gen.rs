//! The generator of the differential soundness test (`live/soundness.rs`):
//! seeded, deterministic triples of an OLD schema fragment, a NEW change on
//! it, and objects the OLD fragment allows, biased to the boundaries.
//!
//! A triple's changes lean two ways on purpose: towards constraints a
//! careful engine proves "cannot fail" (a rule implied by the old bounds,
//! an enum, a guarded optional field), and towards subtle breakers (a
//! non-integral `multipleOf` on an integer, a number enum meeting a new
//! bound, a new default a new rule rejects, `+ 1` at 2^63-1, the decoded
//! size of a `format: byte` string). Which objects the OLD fragment really
//! allows is the API server's call: the values here are candidates.

#![allow(dead_code)]

use serde_json::{Map, Value, json};

/// SplitMix64: small, seedable, the same sequence everywhere.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    pub fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }

    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as usize) as i64
    }
}

/// One generated case: the property `spec.tN` of a CRD before and after,
/// and `spec.tN` of objects the old schema should allow.
#[derive(Clone, Debug)]
pub struct Triple {
    /// The family of the changed value (`int`, `num`, `numenum` (a number
    /// with an enum), `str`, `bytes`, `datetime`, `bool`, `ios`).
    pub family: &'static str,
    /// Where the change sits: `direct`, `item` (of a list), `list`,
    /// `value` (of a map), `map`, `prop` (of an object), `object`, and
    /// `prop-in-list`, `object-in-list` (an object that is a list's item).
    pub site: &'static str,
    /// What changed, a stable name per class (`rule:le-max`,
    /// `kw:multipleOf-halved-nonintegral`...).
    pub change: String,
    pub old: Value,
    pub new: Value,
    pub objects: Vec<Value>,
}

impl Triple {
    /// `family/site/change`, what `KNOWN_UNSOUND` matches.
    pub fn kind(&self) -> String {
        format!("{}/{}/{}", self.family, self.site, self.change)
    }
}

/// `count` triples from `seed`.
pub fn triples(seed: u64, count: usize) -> Vec<Triple> {
    let mut rng = Rng::new(seed);
    (0..count).map(|_| triple(&mut rng)).collect()
}

const I64_MAX: i64 = i64::MAX;
const INT32_MAX: i64 = i32::MAX as i64;

/// What an old scalar allows, as far as the changes need to know.
#[derive(Clone, Debug)]
struct Scalar {
    family: &'static str,
    schema: Map<String, Value>,
    /// Inclusive effective bounds of numbers (after exclusivity).
    lo: Option<f64>,
    hi: Option<f64>,
    /// The bounds as written.
    min: Option<Value>,
    max: Option<Value>,
    mult: Option<Value>,
    enum_: Option<Vec<Value>>,
    min_len: Option<usize>,
    max_len: Option<usize>,
    pattern: Option<&'static str>,
    nullable: bool,
    values: Vec<Value>,
}

impl Scalar {
    fn new(family: &'static str, ty: Option<&str>) -> Scalar {
        let mut schema = Map::new();
        if let Some(t) = ty {
            schema.insert("type".into(), json!(t));
        }
        Scalar {
            family,
            schema,
            lo: None,
            hi: None,
            min: None,
            max: None,
            mult: None,
            enum_: None,
            min_len: None,
            max_len: None,
            pattern: None,
            nullable: false,
            values: Vec::new(),
        }
    }

    fn set(&mut self, key: &str, v: Value) {
        self.schema.insert(key.into(), v);
    }

    fn schema(&self) -> Value {
        Value::Object(self.schema.clone())
    }

    /// A value the old schema allows, boundaries first.
    fn some_value(&self, rng: &mut Rng) -> Value {
        let non_null: Vec<&Value> = self.values.iter().filter(|v| !v.is_null()).collect();
        if non_null.is_empty() {
            return self.values.first().cloned().unwrap_or(Value::Null);
        }
        non_null[rng.below(non_null.len())].clone()
    }
}

/// Keeps the first occurrence of each value.
fn dedup(values: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

fn int_scalar(rng: &mut Rng) -> Scalar {
    let mut s = Scalar::new("int", Some("integer"));
    let format = rng.pick(&[None, None, Some("int32"), Some("int64")]);
    if let Some(f) = format {
        s.set("format", json!(f));
    }
    let use_enum = rng.chance(20);
    if use_enum {
        let pool: &[&[i64]] = &[&[1, 2], &[0, 5, 10], &[3], &[-1, 1], &[1, 2, 3, 7]];
        let e: Vec<Value> = rng.pick(pool).iter().map(|v| json!(v)).collect();
        s.enum_ = Some(e.clone());
        s.set("enum", Value::Array(e));
    } else {
        if rng.chance(60) {
            let lo = rng.pick(&[0, 1, -5, 2]);
            let excl = rng.chance(25);
            s.min = Some(json!(lo));
            s.set("minimum", json!(lo));
            if excl {
                s.set("exclusiveMinimum", json!(true));
            }
            s.lo = Some(lo as f64 + if excl { 1.0 } else { 0.0 });
        }
        if rng.chance(65) {
            // 2^62, not 2^63-1: the server reads bounds as float64, and
            // 2^63 converted back to int64 overflows (every value fails).
            let hi = rng.pick(&[10, 12, 100, 3, INT32_MAX, 1 << 62]);
            let excl = rng.chance(25);
            s.max = Some(json!(hi));
            s.set("maximum", json!(hi));
            if excl {
                s.set("exclusiveMaximum", json!(true));
            }
            s.hi = Some(if excl { hi as f64 - 1.0 } else { hi as f64 });
        }
        if rng.chance(35) {
            let k = rng.pick(&[2, 3, 5, 10]);
            s.mult = Some(json!(k));
            s.set("multipleOf", json!(k));
        }
    }
    let mut cands: Vec<i64> = vec![0, 1, -1, 2, 3, 5, 7, 10, 11, 12, 15, 100, 101];
    cands.extend([
        INT32_MAX,
        INT32_MAX + 1,
        I64_MAX,
        I64_MAX - 1,
        i64::MIN,
        -6,
        -5,
    ]);
    for b in [&s.min, &s.max].into_iter().flatten() {
        if let Some(b) = b.as_i64() {
            cands.extend([b, b.saturating_sub(1), b.saturating_add(1)]);
            if let Some(k) = s.mult.as_ref().and_then(Value::as_i64) {
                let q = b / k;
                cands.extend([q, q - 1, q + 1].map(|q| q.saturating_mul(k)));
            }
        }
    }
    let ok = |v: i64| -> bool {
        if let Some(e) = &s.enum_ {
            return e.contains(&json!(v));
        }
        let lo_ok = match (&s.min, s.schema.contains_key("exclusiveMinimum")) {
            (Some(m), excl) => {
                let m = m.as_i64().unwrap_or(0);
                if excl { v > m } else { v >= m }
            }
            (None, _) => true,
        };
        let hi_ok = match (&s.max, s.schema.contains_key("exclusiveMaximum")) {
            (Some(m), excl) => {
                let m = m.as_i64().unwrap_or(0);
                if excl { v < m } else { v <= m }
            }
            (None, _) => true,
        };
        let mult_ok = s
            .mult
            .as_ref()
            .and_then(Value::as_i64)
            .is_none_or(|k| v % k == 0);
        let fmt_ok = format != Some("int32") || (i32::MIN as i64..=INT32_MAX).contains(&v);
        lo_ok && hi_ok && mult_ok && fmt_ok
    };
    let mut valid: Vec<i64> = cands.into_iter().filter(|v| ok(*v)).collect();
    valid.sort_unstable();
    valid.dedup();
    // The extremes always, then a few from the middle.
    let mut chosen = Vec::new();
    if let (Some(first), Some(last)) = (valid.first(), valid.last()) {
        chosen.extend([*first, *last]);
    }
    for _ in 0..3 {
        if !valid.is_empty() {
            chosen.push(valid[rng.below(valid.len())]);
        }
    }
    s.values = dedup(chosen.into_iter().map(|v| json!(v)).collect());
    s
}

fn num_scalar(rng: &mut Rng) -> Scalar {
    let mut s = Scalar::new("num", Some("number"));
    if rng.chance(30) {
        let pool: &[&[f64]] = &[&[1.0, 2.0], &[1.5, 2.5], &[0.0, 1.0, 2.5], &[2.0]];
        // Integral members written as JSON integers: the server compares
        // a value with them after converting it to the member's type.
        let e: Vec<Value> = rng
            .pick(pool)
            .iter()
            .map(|v| {
                if v.fract() == 0.0 {
                    json!(*v as i64)
                } else {
                    json!(v)
                }
            })
            .collect();
        s.family = "numenum";
        s.enum_ = Some(e.clone());
        s.set("enum", Value::Array(e.clone()));
        let mut vals = e.clone();
        // Values the old enum allows only through that conversion.
        for v in &e {
            if let Some(i) = v.as_i64() {
                vals.push(json!(i as f64 + 0.5));
            }
        }
        s.values = dedup(vals);
        return s;
    }
    if rng.chance(60) {
        let lo = rng.pick(&[0.0, 0.5, -1.5, 1.0]);
        let excl = rng.chance(25);
        s.min = Some(json!(lo));
        s.set("minimum", json!(lo));
        if excl {
            s.set("exclusiveMinimum", json!(true));
        }
        s.lo = Some(lo);
    }
    if rng.chance(65) {
        let hi = rng.pick(&[10.0, 2.5, 100.0, 1.5]);
        let excl = rng.chance(25);
        s.max = Some(json!(hi));
        s.set("maximum", json!(hi));
        if excl {
            s.set("exclusiveMaximum", json!(true));
        }
        s.hi = Some(hi);
    }
    if rng.chance(35) {
        let k = rng.pick(&[0.5, 0.1, 2.5, 5.0, 0.25]);
        s.mult = Some(json!(k));
        s.set("multipleOf", json!(k));
    }
    let cands = [
        0.0, 0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 5.0, 7.5, 9.5, 10.0, 10.5, 100.0, 99.5, -1.5,
        -1.0, 0.3, 1e300,
    ];
    let excl_min = s.schema.contains_key("exclusiveMinimum");
    let excl_max = s.schema.contains_key("exclusiveMaximum");
    let ok = |v: f64| -> bool {
        let lo_ok = s.lo.is_none_or(|m| if excl_min { v > m } else { v >= m });
        let hi_ok = s.hi.is_none_or(|m| if excl_max { v < m } else { v <= m });
        // The server's quotient must also be an integer JSON keeps
        // exact (below 2^53).
        let mult_ok = s.mult.as_ref().and_then(Value::as_f64).is_none_or(|k| {
            let q = v / k;
            (q - q.round()).abs() < 1e-9 && q.abs() < 9.0e15
        });
        lo_ok && hi_ok && mult_ok
    };
    let valid: Vec<f64> = cands.into_iter().filter(|v| ok(*v)).collect();
    let mut chosen = Vec::new();
    if let (Some(first), Some(last)) = (valid.first(), valid.last()) {
        chosen.extend([*first, *last]);
    }
    for _ in 0..3 {
        if !valid.is_empty() {
            chosen.push(valid[rng.below(valid.len())]);
        }
    }
    // Odd integral values written as JSON integers: the server checks an
    // integer against `multipleOf` with the factor truncated to an integer
    // (5 is no multiple of 2.5 there).
    let odd = match s.mult.as_ref().and_then(Value::as_f64) {
        Some(k) if k >= 1.0 && k.fract() == 0.0 => vec![k, 3.0 * k],
        Some(_) => vec![],
        None => vec![5.0, 3.0],
    };
    let odd: Vec<i64> = odd
        .into_iter()
        .filter(|v| ok(*v))
        .map(|v| v as i64)
        .collect();
    // Integral values as integers, some of the time: JSON has one number.
    s.values = dedup(
        chosen
            .into_iter()
            .map(|v| {
                if v.fract() == 0.0 && v.abs() < 1e15 && rng.chance(50) {
                    json!(v as i64)
                } else {
                    json!(v)
                }
            })
            .chain(odd.into_iter().map(|v| json!(v)))
            .collect(),
    );
    s
}

/// Patterns and strings each matches (and one that some do not).
const PATTERNS: &[(&str, &[&str])] = &[
    ("^[a-z]+$", &["a", "abc", "zz"]),
    ("^[a-z0-9-]*$", &["", "a-1", "abc"]),
    ("^(Always|Never)$", &["Always", "Never"]),
    ("^(Always|Never)", &["Always", "Never", "Neverland"]),
    ("^a", &["a", "ab", "a\nb", "aé"]),
    ("^[^\\n]*$", &["", "abc", "日本"]),
    ("^.{0,3}$", &["", "日本", "abc", "ééé"]),
];

fn str_scalar(rng: &mut Rng) -> Scalar {
    let mut s = Scalar::new("str", Some("string"));
    match rng.below(4) {
        0 => {
            let pool: &[&[&str]] = &[
                &["a", "b"],
                &["Always", "Never"],
                &["", "x"],
                &["é", "日本"],
            ];
            let e: Vec<Value> = rng.pick(pool).iter().map(|v| json!(v)).collect();
            s.enum_ = Some(e.clone());
            s.set("enum", Value::Array(e.clone()));
            s.values = e;
        }
        1 => {
            let (p, matching) = rng.pick(PATTERNS);
            s.pattern = Some(p);
            s.set("pattern", json!(p));
            s.values = matching.iter().map(|v| json!(v)).collect();
            if rng.chance(40) {
                let longest = matching
                    .iter()
                    .map(|m| m.chars().count())
                    .max()
                    .unwrap_or(0);
                s.max_len = Some(longest);
                s.set("maxLength", json!(longest));
            }
        }
        _ => {
            if rng.chance(40) {
                let lo = rng.pick(&[1usize, 2]);
                s.min_len = Some(lo);
                s.set("minLength", json!(lo));
            }
            if rng.chance(75) {
                let hi = rng.pick(&[3usize, 5, 8]);
                s.max_len = Some(hi);
                s.set("maxLength", json!(hi));
            }
            let lo = s.min_len.unwrap_or(0);
            let hi = s.max_len.unwrap_or(10);
            let mut vals = vec![
                json!("a".repeat(lo)),
                json!("x".repeat(hi)),
                json!("é".repeat(hi)),
                json!("日".repeat(lo.max(1))),
            ];
            if hi >= 3 {
                vals.push(json!("a\nb"));
                vals.push(json!("日本"));
            }
            if lo == 0 {
                vals.push(json!(""));
            }
            s.values = dedup(vals);
        }
    }
    s
}

fn bytes_scalar(rng: &mut Rng) -> Scalar {
    let mut s = Scalar::new("bytes", Some("string"));
    s.set("format", json!("byte"));
    let mut vals = vec![json!("aGk="), json!("AAAA"), json!("aGVsbG8=")];
    if rng.chance(60) {
        s.min_len = Some(4);
        s.set("minLength", json!(4));
    }
    if rng.chance(60) {
        s.max_len = Some(8);
        s.set("maxLength", json!(8));
    } else {
        vals.push(json!("aGVsbG8gd29ybGQ="));
    }
    s.values = vals;
    s
}

fn datetime_scalar(_rng: &mut Rng) -> Scalar {
    let mut s = Scalar::new("datetime", Some("string"));
    s.set("format", json!("date-time"));
    s.values = vec![
        json!("2024-01-02T03:04:05Z"),
        json!("0001-01-01T00:00:00Z"),
        json!("1999-12-31T23:59:59.999+02:00"),
    ];
    s
}

fn bool_scalar(rng: &mut Rng) -> Scalar {
    let mut s = Scalar::new("bool", Some("boolean"));
    if rng.chance(30) {
        s.enum_ = Some(vec![json!(true)]);
        s.set("enum", json!([true]));
        s.values = vec![json!(true)];
    } else {
        s.values = vec![json!(true), json!(false)];
    }
    s
}

fn ios_scalar(rng: &mut Rng) -> Scalar {
    let mut s = Scalar::new("ios", None);
    s.set("x-kubernetes-int-or-string", json!(true));
    s.values = vec![json!(0), json!(3), json!("50%"), json!("x")];
    if rng.chance(20) {
        // An enum of two JSON types.
        let e = vec![json!(3), json!("50%")];
        s.enum_ = Some(e.clone());
        s.set("enum", Value::Array(e.clone()));
        s.values = e;
    } else if rng.chance(30) {
        s.set("maximum", json!(10));
        s.max = Some(json!(10));
        s.values.push(json!(10));
    } else {
        s.values.push(json!(I64_MAX));
    }
    s
}

/// An old scalar with at least one value it allows.
fn scalar(rng: &mut Rng) -> Scalar {
    loop {
        let s = any_scalar(rng);
        if !s.values.is_empty() {
            return s;
        }
    }
}

fn any_scalar(rng: &mut Rng) -> Scalar {
    let mut s = match rng.below(20) {
        0..=5 => int_scalar(rng),
        6..=9 => num_scalar(rng),
        10..=14 => str_scalar(rng),
        15 => bytes_scalar(rng),
        16 => datetime_scalar(rng),
        17 => bool_scalar(rng),
        _ => ios_scalar(rng),
    };
    if s.family != "ios" && rng.chance(12) {
        s.nullable = true;
        s.set("nullable", json!(true));
        s.values.push(Value::Null);
    }
    s
}

/// A CEL number literal of the value's family.
fn lit(family: &str, v: f64) -> String {
    if family.starts_with("num") {
        format!("{v:?}")
    } else {
        format!("{}", v as i64)
    }
}

/// A CEL literal for a JSON value.
fn cel_value(family: &str, v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        Value::Number(n) if family.starts_with("num") => match n.as_i64() {
            Some(i) => format!("{i}.0"),
            None => format!("{:?}", n.as_f64().unwrap_or_default()),
        },
        other => other.to_string(),
    }
}

/// A predicate on `e`, a value of `s`: `(name, rule)`. Biased to rules
/// the old schema implies and to ones that just miss.
fn predicate(s: &Scalar, e: &str, rng: &mut Rng) -> (String, String) {
    let f = s.family;
    let mut options: Vec<(String, String)> = Vec::new();
    let mut add = |name: &str, rule: String| options.push((name.to_string(), rule));
    match f {
        "int" | "num" | "numenum" => {
            if let Some(max) = &s.max {
                let m = max.as_f64().unwrap_or_default();
                let excl = s.schema.contains_key("exclusiveMaximum");
                let op = if excl { "<" } else { "<=" };
                add("le-max", format!("{e} {op} {}", lit_of(s, m)));
                add("lt-max", format!("{e} < {}", lit_of(s, m)));
                if let Some(m) = max.as_i64().filter(|_| f == "int") {
                    add("lt-max-plus-1", format!("{e} < {}", m.saturating_add(1)));
                    add("le-max-minus-1", format!("{e} <= {}", m - 1));
                } else {
                    add("le-max-minus-1", format!("{e} <= {}", lit(f, m - 1.0)));
                }
            }
            if let Some(m) = &s.min {
                let m = m.as_f64().unwrap_or_default();
                add("ge-min", format!("{e} >= {}", lit_of(s, m)));
                add("gt-min", format!("{e} > {}", lit_of(s, m)));
            }
            if let Some(en) = &s.enum_ {
                let all: Vec<String> = en.iter().map(|v| cel_value(f, v)).collect();
                add("in-enum", format!("{e} in [{}]", all.join(", ")));
                if let Some(top) = en.iter().filter_map(Value::as_f64).reduce(f64::max) {
                    add("le-enum-max", format!("{e} <= {}", lit(f, top)));
                }
                if all.len() > 1 {
                    add(
                        "in-enum-minus-one",
                        format!("{e} in [{}]", all[1..].join(", ")),
                    );
                }
                add("ne-outside-enum", format!("{e} != {}", lit(f, 42.0)));
            }
            if f == "int" {
                if let Some(k) = s.mult.as_ref().and_then(Value::as_i64) {
                    add("mod-mult", format!("{e} % {k} == 0"));
                    add("mod-double-mult", format!("{e} % {} == 0", k * 2));
                }
                add("plus-one-overflow", format!("{e} + 1 > {e}"));
                add("minus-one-overflow", format!("{e} - 1 < {e}"));
                add("ge-zero", format!("{e} >= 0"));
                if s.schema.get("format") == Some(&json!("int32")) {
                    add("le-int32", format!("{e} <= 2147483647"));
                }
            } else {
                add("ge-zero", format!("{e} >= 0.0"));
                add("int-literal", format!("{e} <= 10"));
                add("not-nan", format!("{e} == {e}"));
            }
        }
        "str" => {
            if let Some(m) = s.max_len {
                add("size-le-max", format!("{e}.size() <= {m}"));
                add("size-lt-max", format!("{e}.size() < {m}"));
                add("ne-too-long", format!("{e} != '{}'", "z".repeat(m + 1)));
            }
            if let Some(m) = s.min_len {
                add("size-ge-min", format!("{e}.size() >= {m}"));
                add("size-gt-min", format!("{e}.size() > {m}"));
            }
            if let Some(en) = &s.enum_ {
                let all: Vec<String> = en.iter().map(|v| cel_value(f, v)).collect();
                add("in-enum", format!("{e} in [{}]", all.join(", ")));
                add("ne-outside-enum", format!("{e} != 'zzz'"));
                if all.len() > 1 {
                    add(
                        "in-enum-minus-one",
                        format!("{e} in [{}]", all[1..].join(", ")),
                    );
                }
                let longest = en
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|v| v.chars().count())
                    .max()
                    .unwrap_or(0);
                add("size-le-enum", format!("{e}.size() <= {longest}"));
                add("size-lt-enum", format!("{e}.size() < {longest}"));
            }
            if let Some(p) = s.pattern {
                add(
                    "matches-pattern",
                    format!("{e}.matches('{}')", p.replace('\\', "\\\\")),
                );
            }
            add("matches-lower", format!("{e}.matches('^[a-z]*$')"));
            add("no-newline", format!("!{e}.contains('\\n')"));
            add("size-ge-zero", format!("{e}.size() >= 0"));
        }
        "bytes" => {
            if let Some(m) = s.max_len {
                add("bytes-size-le-max", format!("{e}.size() <= {m}"));
            }
            if let Some(m) = s.min_len {
                add("bytes-size-ge-min", format!("{e}.size() >= {m}"));
            }
            add("bytes-size-le-5", format!("size({e}) <= 5"));
            add("bytes-nonempty", format!("{e}.size() > 0"));
        }
        "datetime" => {
            add(
                "after-epoch",
                format!("{e} > timestamp('1970-01-01T00:00:00Z')"),
            );
            add(
                "after-year-1",
                format!("{e} >= timestamp('0001-01-01T00:00:00Z')"),
            );
        }
        "bool" => {
            add("is-true", format!("{e} == true"));
            add("tautology", format!("{e} || !{e}"));
        }
        _ => {
            add(
                "type-int-or-string",
                format!("type({e}) == int || type({e}) == string"),
            );
            add("type-string", format!("type({e}) == string"));
            add("int-le-10", format!("type({e}) == string || {e} <= 10"));
        }
    }
    // Half the time one the old schema implies (or seems to): those are
    // the verdicts that can be wrongly downgraded.
    let implied: Vec<(String, String)> = options
        .iter()
        .filter(|(name, _)| IMPLIED.contains(&name.as_str()))
        .cloned()
        .collect();
    if !implied.is_empty() && rng.chance(60) {
        return rng.pick(&implied);
    }
    rng.pick(&options)
}

/// Predicates the old schema implies, or that a careless reading of it
/// would say it implies (`bytes-size-ge-min`: `size()` of a `format: byte`
/// string counts decoded bytes, `minLength` characters).
const IMPLIED: &[&str] = &[
    "le-max",
    "lt-max-plus-1",
    "ge-min",
    "in-enum",
    "le-enum-max",
    "ne-outside-enum",
    "mod-mult",
    "le-int32",
    "plus-one-overflow",
    "not-nan",
    "size-le-max",
    "ne-too-long",
    "size-ge-min",
    "size-le-enum",
    "matches-pattern",
    "size-ge-zero",
    "bytes-size-le-max",
    "bytes-size-ge-min",
    "after-year-1",
    "tautology",
    "type-int-or-string",
];

/// A literal for a bound as written (a JSON integer bound of a number
/// field stays a double literal).
fn lit_of(s: &Scalar, v: f64) -> String {
    if s.family == "int" && v >= 9.2e18 {
        return I64_MAX.to_string();
    }
    lit(s.family, v)
}

/// A keyword change on `s`: `(name, new schema)`.
fn keyword_change(s: &Scalar, rng: &mut Rng) -> (String, Map<String, Value>) {
    let mut n = s.schema.clone();
    let f = s.family;
    let mut options: Vec<&str> = vec!["default-added"];
    match f {
        "int" | "num" | "numenum" => {
            options.extend([
                "maximum-added-at-top",
                "minimum-added-at-bottom",
                "multipleOf-added",
            ]);
            if s.max.is_some() {
                options.extend(["maximum-lowered", "maximum-raised", "exclusiveMaximum-on"]);
            }
            if s.min.is_some() {
                options.extend(["minimum-raised", "exclusiveMinimum-on"]);
            }
            if s.mult.is_some() {
                options.extend([
                    "multipleOf-halved",
                    "multipleOf-doubled",
                    "multipleOf-divided",
                ]);
            }
            if s.enum_.is_some() {
                options.extend([
                    "enum-value-removed",
                    "enum-value-added",
                    "maximum-at-enum-max",
                    "multipleOf-1",
                ]);
            } else {
                options.push("enum-added");
            }
            if f == "int" {
                options.push("format-int32-added");
            }
        }
        "str" | "bytes" => {
            options.extend(["maxLength-added-at-longest", "pattern-added"]);
            if s.max_len.is_some() {
                options.extend(["maxLength-lowered", "maxLength-raised"]);
            }
            options.push("minLength-raised");
            if s.enum_.is_some() {
                options.extend(["enum-value-removed", "enum-value-added"]);
            } else {
                options.push("enum-added");
            }
            if s.pattern.is_some() {
                options.extend(["pattern-widened", "pattern-removed"]);
            }
        }
        "bool" => options.push("enum-added"),
        "datetime" => options.extend(["pattern-added", "maxLength-added-at-longest"]),
        _ => options.extend(["maximum-added-at-top", "pattern-added"]),
    }
    let change = rng.pick(&options);
    let numbers: Vec<f64> = s.values.iter().filter_map(Value::as_f64).collect();
    let top = numbers.iter().copied().reduce(f64::max);
    let bottom = numbers.iter().copied().reduce(f64::min);
    let num = |v: f64| -> Value {
        if f.starts_with("num") && v.fract() != 0.0 {
            json!(v)
        } else if v >= 9.2e18 {
            json!(I64_MAX)
        } else {
            json!(v as i64)
        }
    };
    let strings: Vec<&str> = s.values.iter().filter_map(Value::as_str).collect();
    let longest = strings.iter().map(|v| v.chars().count()).max().unwrap_or(0);
    match change {
        "default-added" => {
            n.insert(
                "default".into(),
                s.values.first().cloned().unwrap_or(json!(0)),
            );
        }
        "maximum-added-at-top" => {
            n.insert("maximum".into(), num(top.unwrap_or(10.0)));
        }
        "minimum-added-at-bottom" => {
            n.insert("minimum".into(), num(bottom.unwrap_or(0.0)));
        }
        "multipleOf-added" => {
            n.insert(
                "multipleOf".into(),
                rng.pick(&[json!(1), json!(0.5), json!(2), json!(2.5)]),
            );
        }
        "maximum-lowered" | "maximum-raised" => {
            let m = s.max.as_ref().and_then(Value::as_f64).unwrap_or(10.0);
            let step = if f.starts_with("num") { 0.5 } else { 1.0 };
            let v = if change == "maximum-lowered" {
                m - step
            } else {
                m + step
            };
            n.insert("maximum".into(), num(v));
        }
        "exclusiveMaximum-on" => {
            n.insert("exclusiveMaximum".into(), json!(true));
        }
        "minimum-raised" => {
            let m = s.min.as_ref().and_then(Value::as_f64).unwrap_or(0.0);
            n.insert(
                "minimum".into(),
                num(m + if f.starts_with("num") { 0.5 } else { 1.0 }),
            );
        }
        "exclusiveMinimum-on" => {
            n.insert("exclusiveMinimum".into(), json!(true));
        }
        "multipleOf-halved" => {
            let k = s.mult.as_ref().and_then(Value::as_f64).unwrap_or(5.0);
            n.insert("multipleOf".into(), json!(k / 2.0));
        }
        "multipleOf-doubled" => {
            let k = s.mult.as_ref().and_then(Value::as_f64).unwrap_or(5.0);
            n.insert("multipleOf".into(), num(k * 2.0));
        }
        "multipleOf-divided" => {
            let k = s.mult.as_ref().and_then(Value::as_f64).unwrap_or(5.0);
            let d = if f == "int" && k as i64 % 5 == 0 {
                k / 5.0
            } else {
                k / 2.0
            };
            n.insert("multipleOf".into(), num(d));
        }
        "multipleOf-1" => {
            n.insert("multipleOf".into(), json!(1));
        }
        "enum-value-removed" => {
            let mut e = s.enum_.clone().unwrap_or_default();
            if e.len() > 1 {
                e.remove(0);
            } else {
                e = vec![if f == "str" {
                    json!("other")
                } else {
                    json!(99)
                }];
            }
            n.insert("enum".into(), Value::Array(e));
        }
        "enum-value-added" => {
            let mut e = s.enum_.clone().unwrap_or_default();
            e.push(match f {
                "str" | "bytes" => json!("zz"),
                _ => json!(99),
            });
            n.insert("enum".into(), Value::Array(e));
        }
        "maximum-at-enum-max" => {
            // The enum's largest member, not the largest value: a number
            // enum admits more than its members.
            let enum_top = s
                .enum_
                .iter()
                .flatten()
                .filter_map(Value::as_f64)
                .reduce(f64::max);
            n.insert("maximum".into(), num(enum_top.unwrap_or(2.0)));
        }
        "enum-added" => {
            // Exactly the candidate values, or all but one.
            let mut e: Vec<Value> = s.values.iter().filter(|v| !v.is_null()).cloned().collect();
            if rng.chance(40) && e.len() > 1 {
                e.pop();
            }
            if e.is_empty() {
                e.push(json!(true));
            }
            n.insert("enum".into(), Value::Array(e));
        }
        "format-int32-added" => {
            n.insert("format".into(), json!("int32"));
        }
        "maxLength-added-at-longest" => {
            n.insert("maxLength".into(), json!(longest));
        }
        "maxLength-lowered" => {
            n.insert(
                "maxLength".into(),
                json!(s.max_len.unwrap_or(1).saturating_sub(1)),
            );
        }
        "maxLength-raised" => {
            n.insert("maxLength".into(), json!(s.max_len.unwrap_or(1) + 1));
        }
        "minLength-raised" => {
            n.insert("minLength".into(), json!(s.min_len.unwrap_or(0) + 1));
        }
        "pattern-added" => {
            let p = rng.pick(&[
                "^[a-z]*$",
                "^[^\\n]*$",
                "^(Always|Never)$",
                "^.*$",
                "^[A-Za-z]+",
            ]);
            n.insert("pattern".into(), json!(p));
        }
        "pattern-widened" => {
            let p = s.pattern.unwrap_or("^a");
            let widened = match p {
                "^[a-z]+$" => "^[a-z0-9]+$".to_string(),
                "^(Always|Never)$" => "^(Always|Never|Sometimes)$".to_string(),
                other => format!("({other})|^z"),
            };
            n.insert("pattern".into(), json!(widened));
        }
        _ => {
            n.remove("pattern");
        }
    }
    // Whether the new factor is integral matters: on an integer value the
    // server truncates it (multipleOf 2.5 checks multiples of 2).
    let factor = n.get("multipleOf").and_then(Value::as_f64).unwrap_or(1.0);
    if change.starts_with("multipleOf") {
        let integral = if factor.fract() == 0.0 {
            "integral"
        } else {
            "nonintegral"
        };
        return (format!("kw:{change}-{integral}"), n);
    }
    (format!("kw:{change}"), n)
}

fn with_rule(schema: &mut Map<String, Value>, rule: &str, message: &str) {
    let rules = schema
        .entry("x-kubernetes-validations")
        .or_insert_with(|| json!([]));
    if let Some(list) = rules.as_array_mut() {
        list.push(json!({"rule": rule, "message": message}));
    }
}

/// A scalar-level change: a rule with `self` the scalar, or a keyword.
fn scalar_change(s: &Scalar, rng: &mut Rng) -> (String, Map<String, Value>) {
    if rng.chance(55) {
        let (name, rule) = predicate(s, "self", rng);
        let mut n = s.schema.clone();
        with_rule(&mut n, &rule, &name);
        (format!("rule:{name}"), n)
    } else {
        keyword_change(s, rng)
    }
}

fn triple(rng: &mut Rng) -> Triple {
    let s = scalar(rng);
    match rng.below(20) {
        0..=6 => direct(s, rng),
        7..=10 => list(s, rng),
        11..=13 => map(s, rng),
        14..=17 => object(s, rng),
        _ => object_in_list(s, rng),
    }
}

/// An object triple as the items of a list: rules and defaults of items.
fn object_in_list(s: Scalar, rng: &mut Rng) -> Triple {
    let t = object(s, rng);
    let max_items = rng.range(1, 3) as usize;
    let list = |items: &Value| json!({"type": "array", "maxItems": max_items, "items": items});
    let mut objects = vec![json!([])];
    for i in 0..t.objects.len() {
        let n = rng.range(1, max_items as i64) as usize;
        objects.push(Value::Array(
            (0..n)
                .map(|j| t.objects[(i + j) % t.objects.len()].clone())
                .collect(),
        ));
    }
    Triple {
        family: t.family,
        site: match t.site {
            "prop" => "prop-in-list",
            _ => "object-in-list",
        },
        change: t.change,
        old: list(&t.old),
        new: list(&t.new),
        objects,
    }
}

fn direct(s: Scalar, rng: &mut Rng) -> Triple {
    let (change, new) = scalar_change(&s, rng);
    Triple {
        family: s.family,
        site: "direct",
        change,
        old: s.schema(),
        new: Value::Object(new),
        objects: s.values.clone(),
    }
}

fn list(s: Scalar, rng: &mut Rng) -> Triple {
    let max_items = rng.range(1, 4) as usize;
    let mut old = json!({"type": "array", "maxItems": max_items, "items": s.schema()});
    let mut objects = vec![json!([])];
    for _ in 0..3 {
        let n = rng.range(1, max_items as i64) as usize;
        objects.push(Value::Array((0..n).map(|_| s.some_value(rng)).collect()));
    }
    objects.push(Value::Array(
        (0..max_items)
            .map(|i| s.values[i % s.values.len()].clone())
            .collect(),
    ));
    let mut new = old.clone();
    let (site, change) = if rng.chance(45) {
        let (change, items) = scalar_change(&s, rng);
        new["items"] = Value::Object(items);
        ("item", change)
    } else {
        let outside = match s.family {
            "str" => "'zz'",
            "int" => "42",
            _ => "42.0",
        };
        let pick = if s.enum_.is_some() && s.family != "ios" && rng.chance(40) {
            7 + rng.below(2)
        } else {
            rng.below(7)
        };
        let (name, rule, kw): (&str, String, Option<(&str, Value)>) = match pick {
            // A value the old enum does not allow is in no stored list.
            7 => (
                "filter-outside-enum-empty",
                format!("self.filter(x, x == {outside}).size() == 0"),
                None,
            ),
            8 => (
                "not-exists-outside-enum",
                format!("!self.exists(x, x == {outside})"),
                None,
            ),
            0 | 1 => {
                let (name, pred) = predicate(&s, "x", rng);
                (
                    leak(format!("all-{name}")),
                    format!("self.all(x, {pred})"),
                    None,
                )
            }
            2 => (
                "size-le-maxItems",
                format!("self.size() <= {max_items}"),
                None,
            ),
            3 => (
                "size-lt-maxItems",
                format!("self.size() < {max_items}"),
                None,
            ),
            4 => {
                let (name, pred) = predicate(&s, "x", rng);
                (
                    leak(format!("exists-{name}")),
                    format!("self.exists(x, {pred})"),
                    None,
                )
            }
            5 => (
                "kw:maxItems-lowered",
                String::new(),
                Some(("maxItems", json!(max_items - 1))),
            ),
            _ => (
                "kw:minItems-added",
                String::new(),
                Some(("minItems", json!(1))),
            ),
        };
        let change = match kw {
            Some((k, v)) => {
                new[k] = v;
                name.to_string()
            }
            None => {
                if let Some(m) = new.as_object_mut() {
                    with_rule(m, &rule, name);
                }
                format!("rule:{name}")
            }
        };
        ("list", change)
    };
    if s.nullable && rng.chance(30) {
        old["nullable"] = json!(true);
        new["nullable"] = json!(true);
        objects.push(Value::Null);
    }
    Triple {
        family: s.family,
        site,
        change,
        old,
        new,
        objects,
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn map(s: Scalar, rng: &mut Rng) -> Triple {
    let max_props = rng.range(1, 3) as usize;
    let old =
        json!({"type": "object", "maxProperties": max_props, "additionalProperties": s.schema()});
    let keys = ["a", "é", "日本", "x-y", "abc"];
    let mut objects = vec![json!({})];
    for _ in 0..3 {
        let n = rng.range(1, max_props as i64) as usize;
        let mut m = Map::new();
        for _ in 0..n {
            m.insert(rng.pick(&keys).to_string(), s.some_value(rng));
        }
        objects.push(Value::Object(m));
    }
    let mut new = old.clone();
    let (site, change) = if rng.chance(45) {
        let (change, values) = scalar_change(&s, rng);
        new["additionalProperties"] = Value::Object(values);
        ("value", change)
    } else {
        let (name, rule, kw): (&str, String, Option<(&str, Value)>) = match rng.below(6) {
            0 | 1 => {
                let (name, pred) = predicate(&s, "self[k]", rng);
                (
                    leak(format!("all-{name}")),
                    format!("self.all(k, {pred})"),
                    None,
                )
            }
            2 => (
                "size-le-maxProperties",
                format!("self.size() <= {max_props}"),
                None,
            ),
            3 => ("keys-short", "self.all(k, k.size() <= 2)".to_string(), None),
            4 => (
                "kw:maxProperties-lowered",
                String::new(),
                Some(("maxProperties", json!(max_props - 1))),
            ),
            _ => (
                "kw:minProperties-added",
                String::new(),
                Some(("minProperties", json!(1))),
            ),
        };
        let change = match kw {
            Some((k, v)) => {
                new[k] = v;
                name.to_string()
            }
            None => {
                if let Some(m) = new.as_object_mut() {
                    with_rule(m, &rule, name);
                }
                format!("rule:{name}")
            }
        };
        ("map", change)
    };
    Triple {
        family: s.family,
        site,
        change,
        old,
        new,
        objects,
    }
}

fn object(a: Scalar, rng: &mut Rng) -> Triple {
    let b = scalar(rng);
    let mut b_schema = b.schema.clone();
    let old_default = rng.chance(15);
    if old_default {
        b_schema.insert("default".into(), b.values[0].clone());
    }
    let mut old = json!({"type": "object", "required": ["a"],
                     "properties": {"a": a.schema(), "b": Value::Object(b_schema.clone())}});
    // Unknown fields kept: the old schema does not prune `c`.
    let preserves = rng.chance(15);
    if preserves {
        old["x-kubernetes-preserve-unknown-fields"] = json!(true);
    }
    let mut objects = Vec::new();
    for _ in 0..2 {
        objects.push(json!({"a": a.some_value(rng)}));
    }
    if a.nullable {
        // Required, and null.
        objects.push(json!({"a": null}));
    }
    for v in b.values.iter().take(4) {
        objects.push(json!({"a": a.some_value(rng), "b": v}));
    }
    let c = scalar(rng);
    if preserves {
        for v in [json!("junk"), json!(7), json!({"x": 1}), c.some_value(rng)] {
            objects.push(json!({"a": a.some_value(rng), "c": v}));
        }
    }
    // A required field that is nullable may hold null.
    let required = if a.nullable {
        "nullable-required"
    } else {
        "required"
    };
    let mut new = old.clone();
    let pick = if preserves && rng.chance(60) {
        10
    } else {
        rng.below(11)
    };
    let (family, site, change) = match pick {
        10 => {
            // A new field `c`: absent from every old object, unless the old
            // schema kept unknown fields or the new one defaults it.
            new["properties"]["c"] = c.schema();
            let defaulted = rng.chance(35);
            let d = c.values.iter().find(|v| !v.is_null()).cloned();
            if let (true, Some(d)) = (defaulted, &d) {
                new["properties"]["c"]["default"] = d.clone();
            }
            let what = match (preserves, defaulted) {
                (true, _) => "new-field-over-kept-unknown",
                (false, true) => "new-field-defaulted",
                (false, false) => "new-field",
            };
            let (name, rule) = match rng.below(4) {
                0 => ("typed".to_string(), None),
                1 => ("absent".to_string(), Some("!has(self.c)".to_string())),
                2 if defaulted => (
                    "ne-default".to_string(),
                    d.map(|d| format!("!has(self.c) || self.c != {}", cel_value(c.family, &d))),
                ),
                _ => {
                    let (name, pred) = predicate(&c, "self.c", rng);
                    (name, Some(format!("!has(self.c) || {pred}")))
                }
            };
            match rule {
                Some(rule) => {
                    if let Some(m) = new.as_object_mut() {
                        with_rule(m, &rule, &name);
                    }
                    (c.family, "object", format!("rule:{what}-{name}"))
                }
                None => (c.family, "object", format!("kw:{what}-{name}")),
            }
        }
        0 => {
            let (change, n) = scalar_change(&a, rng);
            new["properties"]["a"] = Value::Object(n);
            (a.family, "prop", change)
        }
        1 => {
            let (change, mut n) = scalar_change(&b, rng);
            if old_default {
                n.insert("default".into(), b.values[0].clone());
            }
            new["properties"]["b"] = Value::Object(n);
            (b.family, "prop", change)
        }
        2 | 3 => {
            let (name, pred) = predicate(&b, "self.b", rng);
            let rule = format!("!has(self.b) || {pred}");
            if let Some(m) = new.as_object_mut() {
                with_rule(m, &rule, &name);
            }
            (b.family, "object", format!("rule:guarded-{name}"))
        }
        4 => {
            let (name, pred) = predicate(&a, "self.a", rng);
            if let Some(m) = new.as_object_mut() {
                with_rule(m, &pred, &name);
            }
            (a.family, "object", format!("rule:{required}-{name}"))
        }
        5 => {
            let rule = rng.pick(&["has(self.b)", "has(self.a)", "!has(self.b) || has(self.a)"]);
            if let Some(m) = new.as_object_mut() {
                with_rule(m, rule, "presence");
            }
            if rule.contains("self.a") {
                (a.family, "object", format!("rule:{required}-{rule}"))
            } else {
                (b.family, "object", format!("rule:{rule}"))
            }
        }
        6 => {
            // A field made required, sometimes with a default to fill it.
            new["required"] = json!(["a", "b"]);
            let defaulted = rng.chance(50);
            if defaulted {
                new["properties"]["b"]["default"] = b.values[0].clone();
            }
            let name = if defaulted || old_default {
                "required-added-defaulted"
            } else {
                "required-added"
            };
            (b.family, "object", format!("kw:{name}"))
        }
        7 if widened_default(&b).is_some() => {
            // The old bound of `b` widened, a new default beyond it, and a
            // rule on the object the old bound implies: objects without
            // `b` read the default and fail it.
            let (name, keywords, default, pred) = widened_default(&b).unwrap_or_default();
            for (k, v) in keywords {
                if v.is_null() {
                    if let Some(m) = new["properties"]["b"].as_object_mut() {
                        m.remove(&k);
                    }
                } else {
                    new["properties"]["b"][k.as_str()] = v;
                }
            }
            new["properties"]["b"]["default"] = default;
            if let Some(m) = new.as_object_mut() {
                with_rule(m, &format!("!has(self.b) || {pred}"), &name);
            }
            (b.family, "object", format!("rule:{name}"))
        }
        _ => {
            // A new default on the optional field, and a new rule on the
            // object that the default may fail.
            let d = b
                .values
                .iter()
                .find(|v| !v.is_null())
                .cloned()
                .unwrap_or(json!(0));
            new["properties"]["b"]["default"] = d.clone();
            let (name, rule) = if rng.chance(50) {
                (
                    "default-rejected-by-guarded-rule",
                    format!("!has(self.b) || self.b != {}", cel_value(b.family, &d)),
                )
            } else {
                let (name, pred) = predicate(&b, "self.b", rng);
                (
                    leak(format!("default-then-guarded-{name}")),
                    format!("!has(self.b) || {pred}"),
                )
            };
            if let Some(m) = new.as_object_mut() {
                with_rule(m, &rule, name);
            }
            (b.family, "object", format!("rule:{name}"))
        }
    };
    Triple {
        family,
        site,
        change,
        old,
        new,
        objects,
    }
}

/// For an optional field `b`: `(name, keywords to set (null: remove), a
/// default just beyond the old bound, a predicate on self.b the old bound
/// implies)`.
#[allow(clippy::type_complexity)]
fn widened_default(b: &Scalar) -> Option<(String, Vec<(String, Value)>, Value, String)> {
    if let Some(en) = &b.enum_ {
        let extra = match b.family {
            "str" => json!("zz"),
            "num" | "numenum" => json!(7.5),
            "bool" => return None,
            _ => json!(99),
        };
        let mut wider = en.clone();
        wider.push(extra.clone());
        let all: Vec<String> = en.iter().map(|v| cel_value(b.family, v)).collect();
        return Some((
            "default-outside-old-enum".into(),
            vec![("enum".into(), Value::Array(wider))],
            extra,
            format!("self.b in [{}]", all.join(", ")),
        ));
    }
    if b.family == "int"
        && let Some(m) = b
            .max
            .as_ref()
            .and_then(Value::as_i64)
            .filter(|m| *m < 1 << 40)
    {
        let step = b.mult.as_ref().and_then(Value::as_i64).unwrap_or(1);
        let op = if b.schema.contains_key("exclusiveMaximum") {
            "<"
        } else {
            "<="
        };
        return Some((
            "default-outside-old-maximum".into(),
            vec![
                ("maximum".into(), json!(m + 2 * step)),
                ("exclusiveMaximum".into(), Value::Null),
            ],
            json!((m / step + 1) * step),
            format!("self.b {op} {m}"),
        ));
    }
    if b.family == "str"
        && b.pattern.is_none()
        && let Some(l) = b.max_len
    {
        return Some((
            "default-outside-old-maxLength".into(),
            vec![("maxLength".into(), json!(l + 1))],
            json!("z".repeat(l + 1)),
            format!("self.b.size() <= {l}"),
        ));
    }
    None
}
